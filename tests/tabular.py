"""A small finite-horizon tabular MDP that implements the search's BatchSimulator protocol, plus exact enumeration.

The episode's noise S is one of ``n_realisations`` fixed tables, chosen by ``seed % n_realisations``: each table
fixes the next state and the reward of every (t, s, a). Observations are integers ``t * n_states + s``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from sb3_dirpg.search import Transitions


class TabularMDP:
    """Finite-horizon MDP with noise tables; stateless stepping from ``(t, s, realisation)`` snapshots.

    :param n_states: number of states
    :param n_actions: number of actions
    :param horizon: trajectory length
    :param n_realisations: number of equally likely noise tables (1 means deterministic)
    :param mask_fn: ``(t, s) -> bool array`` of legal actions, or None for all legal
    :param seed: seed of the tables
    :param bounds: report exact bounds on the return-to-go (best and worst continuation)
    :param success_states: final states that count as success (reported in ``Transitions.success``), or None
    """

    def __init__(
        self,
        n_states: int,
        n_actions: int,
        horizon: int,
        n_realisations: int = 1,
        mask_fn: Callable[[int, int], np.ndarray] | None = None,
        seed: int = 0,
        bounds: bool = False,
        success_states: set[int] | None = None,
    ) -> None:
        rng = np.random.default_rng(seed)
        self.n_states, self.n_actions, self.horizon, self.n_realisations = n_states, n_actions, horizon, n_realisations
        shape = (n_realisations, horizon, n_states, n_actions)
        self.next_state = rng.integers(n_states, size=shape)
        self.reward = rng.normal(size=shape).round(2)
        self.mask_fn = mask_fn
        self.n_obs = (horizon + 1) * n_states
        self.steps = 0
        self.bounds = bounds
        self.success_states = success_states
        if bounds:
            self._best = np.zeros((n_realisations, horizon + 1, n_states))
            self._worst = np.zeros((n_realisations, horizon + 1, n_states))
            for k in range(n_realisations):
                for t in range(horizon - 1, -1, -1):
                    for s in range(n_states):
                        legal = np.flatnonzero(self.mask(t, s))
                        nxt = self.next_state[k, t, s, legal]
                        q_best = self.reward[k, t, s, legal] + self._best[k, t + 1, nxt]
                        q_worst = self.reward[k, t, s, legal] + self._worst[k, t + 1, nxt]
                        self._best[k, t, s], self._worst[k, t, s] = q_best.max(), q_worst.min()

    def mask(self, t: int, s: int) -> np.ndarray:
        return np.ones(self.n_actions, bool) if self.mask_fn is None else np.asarray(self.mask_fn(t, s), bool)

    def reset(self, seeds: Sequence[int]) -> Transitions:
        n = len(seeds)
        snaps = [(0, 0, int(seed) % self.n_realisations) for seed in seeds]
        return self._with_bounds(Transitions(
            obs=[0] * n, rewards=np.zeros(n), terminal=np.zeros(n, bool),
            masks=np.stack([self.mask(0, 0)] * n), snapshots=snaps,
        ))  # fmt: skip

    def _with_bounds(self, trans: Transitions) -> Transitions:
        if self.bounds:
            trans.lower = np.array([self._worst[k, t, s] for t, s, k in trans.snapshots])
            trans.upper = np.array([self._best[k, t, s] for t, s, k in trans.snapshots])
        return trans

    def step(self, snapshots: Sequence[tuple[int, int, int]], actions: np.ndarray, episodes: np.ndarray) -> Transitions:
        obs, rewards, terminal, masks, snaps = [], [], [], [], []
        for (t, s, k), a in zip(snapshots, actions.tolist()):
            s2 = int(self.next_state[k, t, s, a])
            rewards.append(self.reward[k, t, s, a])
            obs.append((t + 1) * self.n_states + s2)
            terminal.append(t + 1 >= self.horizon)
            masks.append(self.mask(t + 1, s2))
            snaps.append((t + 1, s2, k))
        self.steps += len(actions)
        trans = Transitions(obs, np.asarray(rewards), np.asarray(terminal), np.stack(masks), snaps)
        if self.success_states is not None:
            trans.success = np.array([t + 1 >= self.horizon and s in self.success_states for t, s, _ in snaps])
        return self._with_bounds(trans)

    def trajectories(self, realisation: int) -> list[tuple[tuple[int, ...], list[int], float]]:
        """Enumerate every legal trajectory of one noise table.

        :return: a list of (actions, observations where each action was taken, return)
        """
        out = []

        def walk(t: int, s: int, acts: tuple[int, ...], obs: list[int], ret: float) -> None:
            if t == self.horizon:
                out.append((acts, obs, ret))
                return
            for a in np.flatnonzero(self.mask(t, s)).tolist():
                walk(t + 1, int(self.next_state[realisation, t, s, a]), acts + (a,), obs + [t * self.n_states + s],
                     ret + float(self.reward[realisation, t, s, a]))  # fmt: skip

        walk(0, 0, (), [], 0.0)
        return out

    def mask_table(self) -> np.ndarray:
        """:return: legal actions per observation id, shape (n_obs, n_actions)"""
        table = np.ones((self.n_obs, self.n_actions), bool)
        for t in range(self.horizon + 1):
            for s in range(self.n_states):
                table[t * self.n_states + s] = self.mask(t, s)
        return table


def tabular_policy(theta: np.ndarray) -> Callable[[list, np.ndarray], np.ndarray]:
    """:param theta: logits per observation id
    :return: a search policy function"""

    def policy_fn(obs: list, masks: np.ndarray) -> np.ndarray:
        return theta[np.asarray(obs, dtype=np.int64)]

    return policy_fn


def log_prob_torch(theta: torch.Tensor, mask_table: torch.Tensor, obs: Sequence[int], actions: Sequence[int]) -> torch.Tensor:
    """Masked log-probability of a trajectory under a tabular softmax policy (differentiable)."""
    logits = theta[list(obs)].masked_fill(~mask_table[list(obs)], float("-inf"))
    return torch.log_softmax(logits, dim=-1)[torch.arange(len(actions)), list(actions)].sum()
