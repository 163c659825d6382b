"""Search at test time: the best trajectory that the trained policy and a search find on each instance."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sb3_dirpg.search import SearchResult
from sb3_dirpg.search.protocols import BatchSimulator, PolicyFunction


@dataclass(frozen=True)
class Solution:
    """The best trajectory found for one episode (one instance).

    :param seed: the episode's seed (the instance)
    :param actions: the trajectory's actions
    :param reward_sum: its undiscounted sum of rewards (the objective's value on a combinatorial problem)
    :param greedy_reward_sum: the same for the policy's greedy trajectory (its most likely legal action at every step)
    :param interactions: environment interactions spent, the greedy trajectory's included
    :param trajectories: complete trajectories compared, the greedy one included
    """

    seed: int
    actions: list[int]
    reward_sum: float
    greedy_reward_sum: float
    interactions: int
    trajectories: int


@dataclass(frozen=True)
class Trajectory:
    """:param actions: the actions
    :param reward_sum: the undiscounted sum of their rewards
    :param rewards: the reward of each step, float64, shape (len(actions),), when recorded
    :param obs: the observation of the state each action was taken in, when recorded
    :param masks: the legal actions of those states, bool, shape (len(actions), n_actions), when recorded
    :param success: whether the last step ended the episode in success (False when the simulator does not report it)"""

    actions: list[int]
    reward_sum: float
    rewards: np.ndarray | None = None
    obs: list | None = None
    masks: np.ndarray | None = None
    success: bool = False


def greedy_trajectories(
    simulator: BatchSimulator, policy_fn: PolicyFunction, seeds: list[int], horizon: int | None, record: bool = False
) -> list[Trajectory]:
    """Play every episode with the policy's most likely legal action, all episodes in lockstep.

    :param simulator: the batch simulator
    :param policy_fn: observations and masks to logits
    :param seeds: one seed per episode
    :param horizon: the step limit, or None to rely on the simulator's ends
    :param record: keep each step's reward, observation and mask in the trajectories
    :return: one trajectory per seed
    """
    state = simulator.reset(seeds)
    obs, masks, snapshots = list(state.obs), np.asarray(state.masks, dtype=bool), list(state.snapshots)
    actions: list[list[int]] = [[] for _ in seeds]
    seen: list[list[tuple[Any, np.ndarray, float]]] = [[] for _ in seeds]  # (obs, mask, reward) per step, when recorded
    sums = np.zeros(len(seeds))
    success = np.zeros(len(seeds), dtype=bool)
    active = np.arange(len(seeds))
    while active.size:
        logits = np.where(masks, policy_fn(obs, masks), -np.inf)
        chosen = logits.argmax(axis=1)
        state = simulator.step(snapshots, chosen, active)
        rewards = np.asarray(state.rewards, dtype=np.float64)
        for k, (e, action) in enumerate(zip(active.tolist(), chosen.tolist())):
            actions[e].append(action)
            if record:
                seen[e].append((obs[k], masks[k], float(rewards[k])))
        sums[active] += rewards
        if state.success is not None:
            success[active] = np.asarray(state.success, dtype=bool)
        steps = np.array([len(actions[e]) for e in active.tolist()])
        going = ~np.asarray(state.terminal, dtype=bool) & (steps < horizon if horizon is not None else True)
        active = active[going]
        obs = [o for o, g in zip(state.obs, going) if g]
        snapshots = [s for s, g in zip(state.snapshots, going) if g]
        masks = np.asarray(state.masks, dtype=bool)[going]
    if not record:
        return [Trajectory(a, float(s), success=bool(ok)) for a, s, ok in zip(actions, sums, success)]
    return [
        Trajectory(a, float(s), np.array([r for _, _, r in steps]), [o for o, _, _ in steps],
                   np.array([m for _, m, _ in steps], dtype=bool).reshape(len(steps), -1), bool(ok))
        for a, s, steps, ok in zip(actions, sums, seen, success)
    ]  # fmt: skip


def best_solutions(greedy: list[Trajectory], result: SearchResult | None, seeds: list[int]) -> list[Solution]:
    """:param greedy: the greedy trajectory of each episode
    :param result: a search of the same episodes run with ``record_trajectories=True``, or None
    :param seeds: the seeds of the episodes
    :return: per episode, the greedy trajectory or a recorded one, whichever has the largest undiscounted sum of
        rewards (the greedy one on ties)"""
    solutions = []
    for i, (seed, start) in enumerate(zip(seeds, greedy)):
        best, interactions, trajectories = start, len(start.actions), 1
        if result is not None:
            episode = result.episodes[i]
            interactions, trajectories = interactions + episode.interactions, trajectories + episode.trajectories
            for found in episode.recorded:
                reward_sum = result.tree.undiscounted_return(found.leaf)
                if reward_sum > best.reward_sum:
                    best = Trajectory(result.actions(found.leaf), reward_sum)
        solutions.append(Solution(seed, best.actions, best.reward_sum, start.reward_sum, interactions, trajectories))
    return solutions
