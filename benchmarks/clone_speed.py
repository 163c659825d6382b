"""Cost of a step, a snapshot, a restore and a ``copy.deepcopy`` of the env, in µs.

Usage: ``python -m benchmarks.clone_speed [--number N] [--repeat R]`` (the minimum over R runs is shown).
"""

from __future__ import annotations

import argparse
import copy
import timeit
from collections.abc import Callable

import gymnasium as gym

from sb3_dirpg.simulator import SimulatorWrapper

ENVS = ("MiniGrid-MultiRoom-N6-v0", "MiniGrid-DoorKey-5x5-v0", "CartPole-v1", "FrozenLake-v1", "Taxi-v3")


def _make(env_id: str) -> gym.Env:
    """:param env_id: a gymnasium id (Taxi-v3 falls back to Taxi-v4 where v3 is deprecated)
    :return: the env"""
    if env_id.startswith("MiniGrid"):
        import minigrid  # noqa: F401  (registers the MiniGrid envs)
    if env_id == "Taxi-v3" and "Taxi-v4" in gym.registry:
        env_id = "Taxi-v4"
    return gym.make(env_id)


def _microseconds(fn: Callable[[], object], number: int, repeat: int) -> float:
    """:param fn: the operation to time
    :param number: calls per run
    :param repeat: runs
    :return: the best time per call in µs"""
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def measure(env_id: str, number: int = 2000, repeat: int = 5) -> dict[str, float | str]:
    """:param env_id: the env to measure
    :param number: calls per timing run (deepcopy uses a tenth)
    :param repeat: timing runs (the minimum is kept)
    :return: µs per step, snapshot, restore and deepcopy of the wrapped chain, and the cloner's name"""
    sim = SimulatorWrapper(_make(env_id))
    sim.reset(seed=0)
    action = 2 if env_id.startswith("MiniGrid") else 0  # MiniGrid: forward
    snap = sim.snapshot()
    restore = _microseconds(lambda: sim.restore(snap), number, repeat)

    def restore_and_step() -> None:
        sim.restore(snap)
        sim.step(action)

    return {
        "cloner": type(sim.cloner).__name__,
        "step": _microseconds(restore_and_step, number, repeat) - restore,
        "snapshot": _microseconds(sim.snapshot, number, repeat),
        "restore": restore,
        "deepcopy": _microseconds(lambda: copy.deepcopy(sim.env), max(1, number // 10), repeat),
    }


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--number", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'env':28s} {'cloner':16s} {'step':>9s} {'snapshot':>9s} {'restore':>9s} {'deepcopy':>9s}  (µs)")
    for env_id in ENVS:
        r = measure(env_id, args.number, args.repeat)
        print(
            f"{env_id:28s} {r['cloner']:16s} {r['step']:9.1f} {r['snapshot']:9.2f} {r['restore']:9.2f} {r['deepcopy']:9.1f}"
        )


if __name__ == "__main__":
    main()
