"""``python -m benchmarks.search_core``: what the search costs by itself, without a simulator or a network.

The top-down search runs on a free simulator (a state is a pair of ints; a step builds a few small arrays) and a
constant policy, with MultiRoom-N6's search setting (horizon 100, budget 2900, A* with α = 0.2, early stop) and sparse
rewards, so that some episodes improve early and others spend their whole budget, as on N6. The simulator's and the
policy's own time is measured and taken off, which leaves the search core: queues, tree columns, Gumbel and
bookkeeping. It prints, per lockstep batch size, µs per interaction of the core, the mean number of episodes still
searching per iteration, and µs per iteration. The core is mostly a fixed cost per lockstep iteration (three compiled
kernel calls, the noise refills and the Python around the simulator and the policy) shared by the episodes still
searching, and the longest episode of a batch sets the number of iterations.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from experiments.common import write_json
from sb3_dirpg.search import SearchConfig, TopDownSearch, Transitions

N_ACTIONS = 3
HORIZON = 100
REWARD_PERIOD = 7  # a step is rewarded when 7·depth + 3·action + seed is a multiple of this: at batch 32 about 19 of
# the 32 episodes are still searching per iteration on average (15 on MultiRoom-N6 with the shipped setting)


class FreeSimulator:
    """A batch simulator whose state is ``(seed, depth)``: rewards are a fixed function of the state and the action,
    the upper bound (steps left) is admissible, and a trajectory ends at :data:`HORIZON`. Its own time is counted."""

    n_actions = N_ACTIONS

    def __init__(self) -> None:
        self.seconds = 0.0

    def reset(self, seeds: Sequence[int]) -> Transitions:
        """:param seeds: one seed per episode
        :return: the root states"""
        start = time.process_time()
        n = len(seeds)
        roots = [(int(seed), 0) for seed in seeds]
        trans = Transitions(
            obs=roots, rewards=np.zeros(n), terminal=np.zeros(n, bool), masks=np.ones((n, N_ACTIONS), bool),
            snapshots=roots, lower=np.zeros(n), upper=np.full(n, float(HORIZON)), success=np.zeros(n, bool),
        )  # fmt: skip
        self.seconds += time.process_time() - start
        return trans

    def step(self, snapshots: Sequence[Any], actions: np.ndarray, episodes: np.ndarray) -> Transitions:
        """:param snapshots: ``(seed, depth)`` states
        :param actions: one action per state
        :param episodes: the episode of each state (unused)
        :return: the states reached"""
        start = time.process_time()
        reached = [(seed, depth + 1) for seed, depth in snapshots]
        pairs = zip(snapshots, actions.tolist())
        rewards = [float((7 * depth + 3 * action + seed) % REWARD_PERIOD == 0) for (seed, depth), action in pairs]
        n = len(reached)
        depth = np.array([d for _, d in reached])
        trans = Transitions(
            obs=reached, rewards=np.asarray(rewards), terminal=depth >= HORIZON, masks=np.ones((n, N_ACTIONS), bool),
            snapshots=reached, lower=np.zeros(n), upper=(HORIZON - depth).astype(np.float64), success=np.zeros(n, bool),
        )  # fmt: skip
        self.seconds += time.process_time() - start
        return trans


class ConstantPolicy:
    """Uniform logits for every state; its own time is counted."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def __call__(self, obs: list[Any], masks: np.ndarray) -> np.ndarray:
        """:param obs: observations
        :param masks: legal actions
        :return: zeros, shape (len(obs), n_actions)"""
        start = time.process_time()
        logits = np.zeros((len(obs), N_ACTIONS))
        self.seconds += time.process_time() - start
        return logits


def measure(batch: int, seed: int) -> dict[str, float]:
    """Search one batch of episodes on the free simulator.

    :param batch: episodes searched in lockstep
    :param seed: seeds the episodes and the search noise
    :return: interactions, iterations, mean episodes per iteration, and µs per interaction (total, simulator, policy,
        core) and per iteration (core)
    """
    simulator, policy = FreeSimulator(), ConstantPolicy()
    config = SearchConfig(epsilon=1.0, budget=2900, priority="astar", alpha=0.2, horizon=HORIZON)
    active: list[int] = []
    start = time.process_time()
    result = TopDownSearch(simulator, policy, config).run(
        [seed * 1000 + i for i in range(batch)], np.random.default_rng(seed), on_iteration=lambda k: active.append(k) or True
    )
    total = time.process_time() - start
    n = sum(ep.interactions for ep in result.episodes)
    core = total - simulator.seconds - policy.seconds
    return {
        "interactions": n, "iterations": len(active), "mean_active": float(np.mean(active)),
        "total_us": total / n * 1e6, "simulator_us": simulator.seconds / n * 1e6, "policy_us": policy.seconds / n * 1e6,
        "core_us": core / n * 1e6, "core_us_per_iteration": core / len(active) * 1e6,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> dict[int, dict[str, float]]:
    """Print the table and optionally write it as JSON.

    :param argv: command-line arguments (default: ``sys.argv``)
    :return: per batch size, the median over repeats of each figure
    """
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, nargs="+", default=[8, 32, 64], help="lockstep batch sizes")
    parser.add_argument("--repeats", type=int, default=3, help="batches searched per size (the median is reported)")
    parser.add_argument("--json", default=None, help="where to write the results")
    args = parser.parse_args(argv)
    results: dict[int, dict[str, float]] = {}
    print(f"{'batch':>5s} {'interactions':>12s} {'iterations':>10s} {'active':>7s} {'core µs/int':>11s} "
          f"{'core µs/iter':>12s} {'sim+policy µs/int':>17s}")  # fmt: skip
    for batch in args.batches:
        runs = [measure(batch, seed) for seed in range(args.repeats)]
        median = {key: float(np.median([run[key] for run in runs])) for key in runs[0]}
        results[batch] = median
        print(f"{batch:5d} {median['interactions']:12,.0f} {median['iterations']:10,.0f} {median['mean_active']:7.1f} "
              f"{median['core_us']:11.1f} {median['core_us_per_iteration']:12.0f} "
              f"{median['simulator_us'] + median['policy_us']:17.1f}")  # fmt: skip
    if args.json:
        write_json(args.json, {str(b): r for b, r in results.items()}, announce=True)
    return results


if __name__ == "__main__":
    main()
