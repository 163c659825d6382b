"""Search at test time: the best trajectory that a search with the trained policy finds on each instance."""

from __future__ import annotations

from dataclasses import dataclass

from sb3_dirpg.search import SearchResult


@dataclass(frozen=True)
class Solution:
    """The best trajectory a search found for one episode (one instance).

    :param seed: the episode's seed (the instance)
    :param actions: the trajectory's actions
    :param reward_sum: its undiscounted sum of rewards (the objective's value on a combinatorial problem)
    :param sample_reward_sum: the same for ``a_opt``, the policy's own sample, the first trajectory found
    :param interactions: environment interactions the search spent, ``a_opt`` included
    :param trajectories: complete trajectories found
    """

    seed: int
    actions: list[int]
    reward_sum: float
    sample_reward_sum: float
    interactions: int
    trajectories: int


def best_solutions(result: SearchResult, seeds: list[int]) -> list[Solution]:
    """:param result: a search run with ``record_trajectories=True``
    :param seeds: the seeds of its episodes
    :return: per episode, the recorded trajectory with the largest undiscounted sum of rewards (the first on ties)"""
    solutions = []
    for seed, episode in zip(seeds, result.episodes):
        sums = [result.tree.undiscounted_return(t.leaf) for t in episode.recorded]
        best = max(range(len(sums)), key=sums.__getitem__)
        solutions.append(
            Solution(
                seed=seed, actions=result.actions(episode.recorded[best].leaf), reward_sum=sums[best],
                sample_reward_sum=episode.reward_sum_opt, interactions=episode.interactions,
                trajectories=episode.trajectories,
            )
        )  # fmt: skip
    return solutions
