"""Lockstep sampling of independent trajectories from seeded, snapshot-able simulators (REINFORCE and CEM).

Every episode is reset once (its seed fixes the episode's noise); ``n_rollouts`` trajectories then start from the
episode's root snapshot. All rollouts of all episodes step together: one batched policy forward and one simulator
call per iteration.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from sb3_dirpg.search.gumbel import masked_log_softmax
from sb3_dirpg.search.protocols import BatchSimulator, PolicyFunction


@dataclass
class Rollouts:
    """Trajectories sampled from the policy, ``n_rollouts`` per episode; every step is one row, in collection order.

    Rollout ``j`` belongs to episode ``j // n_rollouts``; all rollouts of an episode start from that episode's root.

    :param obs: observation of the state each action was taken in, one per step
    :param masks: legal actions of each step, bool, shape (n_steps, n_actions)
    :param actions: action index of each step (0-based), shape (n_steps,)
    :param rewards: reward of each step, shape (n_steps,)
    :param rollout: rollout index of each step, shape (n_steps,)
    :param time: position of each step in its rollout (0-based), shape (n_steps,)
    :param lengths: number of steps of each rollout, shape (n_episodes * n_rollouts,)
    :param n_episodes: number of episodes
    :param n_rollouts: rollouts per episode
    :param success: whether each rollout ended in success (the simulator's flag; all False when it reports none),
        shape (n_episodes * n_rollouts,)
    """

    obs: list
    masks: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    rollout: np.ndarray
    time: np.ndarray
    lengths: np.ndarray
    n_episodes: int
    n_rollouts: int
    success: np.ndarray

    @property
    def n_interactions(self) -> int:
        """:return: the environment interactions spent (one per step)"""
        return len(self.actions)

    def returns(self, gamma: float = 1.0) -> np.ndarray:
        """:param gamma: discount factor
        :return: the discounted return ``sum_t gamma^t r_t`` of each rollout, shape (n_episodes * n_rollouts,)"""
        weights = self.rewards * np.power(gamma, self.time)
        return np.bincount(self.rollout, weights=weights, minlength=len(self.lengths))

    def rewards_to_go(self, gamma: float = 1.0) -> np.ndarray:
        """:param gamma: discount factor
        :return: ``sum_{i >= t} gamma^(i - t) r_i`` of each step's rollout from that step on, shape (n_steps,)"""
        n_total, max_len = len(self.lengths), int(self.lengths.max(initial=0))
        table = np.zeros((n_total, max_len + 1))
        table[self.rollout, self.time] = self.rewards
        for t in range(max_len - 1, -1, -1):
            table[:, t] += gamma * table[:, t + 1]
        return table[self.rollout, self.time]


def collect_rollouts(
    simulator: BatchSimulator,
    policy: PolicyFunction,
    seeds: Sequence[int],
    n_rollouts: int,
    rng: np.random.Generator,
    horizon: int | None = None,
    on_iteration: Callable[[int], bool] | None = None,
) -> Rollouts | None:
    """Sample ``n_rollouts`` independent trajectories of the policy from the root of every episode, in lockstep.

    :param simulator: batch simulator (reset by seed, step from snapshots)
    :param policy: ``policy(obs, masks) -> logits``, evaluated once per iteration on every live rollout
    :param seeds: one seed per episode
    :param n_rollouts: trajectories per episode
    :param rng: generator of the action samples
    :param horizon: cut every trajectory after this many steps, or None to rely on the simulator's terminal flags
    :param on_iteration: called after each iteration with its number of interactions; returning False stops
    :return: the rollouts, or None when ``on_iteration`` asked to stop
    """
    if n_rollouts < 1:
        raise ValueError(f"n_rollouts must be a positive integer, got {n_rollouts!r}")
    if len(seeds) == 0:
        raise ValueError("collect_rollouts needs at least one episode seed")
    root = simulator.reset(seeds)
    n_episodes = len(seeds)
    n_total = n_episodes * n_rollouts
    episode = np.repeat(np.arange(n_episodes), n_rollouts)
    obs = [root.obs[e] for e in episode]
    snapshots = [root.snapshots[e] for e in episode]
    masks = root.masks[episode]
    lengths = np.zeros(n_total, dtype=np.int64)
    success = np.zeros(n_total, dtype=bool)
    steps: dict[str, list] = {"obs": [], "masks": [], "actions": [], "rewards": [], "rollout": [], "time": []}
    live = np.arange(n_total)
    while live.size:
        live_masks = masks[live]
        if not live_masks.any(axis=1).all():
            raise ValueError("all-false action mask: every state needs at least one legal action")
        live_obs = [obs[j] for j in live]
        log_probs = masked_log_softmax(policy(live_obs, live_masks), live_masks)
        actions = np.argmax(log_probs + rng.gumbel(size=log_probs.shape), axis=1)  # Gumbel-max sample
        reached = simulator.step([snapshots[j] for j in live], actions, episode[live])
        steps["obs"].extend(live_obs)
        steps["masks"].append(live_masks)
        steps["actions"].append(actions)
        steps["rewards"].append(reached.rewards)
        steps["rollout"].append(live)
        steps["time"].append(lengths[live])
        lengths[live] += 1
        if reached.success is not None:
            success[live] |= reached.success
        done = reached.terminal if horizon is None else reached.terminal | (lengths[live] >= horizon)
        for row in np.flatnonzero(~done).tolist():
            j = live[row]
            obs[j], snapshots[j] = reached.obs[row], reached.snapshots[row]
        masks[live] = reached.masks
        if on_iteration is not None and not on_iteration(len(live)):
            return None
        live = live[~done]
    return Rollouts(
        obs=steps["obs"],
        masks=np.concatenate(steps["masks"]),
        actions=np.concatenate(steps["actions"]),
        rewards=np.concatenate(steps["rewards"]),
        rollout=np.concatenate(steps["rollout"]),
        time=np.concatenate(steps["time"]),
        lengths=lengths,
        n_episodes=n_episodes,
        n_rollouts=n_rollouts,
        success=success,
    )
