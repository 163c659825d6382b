"""Per-step and per-clone cost of the package's environments.

``python -m benchmarks.env_speed [--steps N]`` prints, for each env, microseconds per ``step`` (random
legal actions), per ``action_masks()`` call, per cloner ``snapshot`` / ``restore`` (the registered cloner of the
unwrapped env; the RNG and wrapper state handled by the simulator wrapper are not included), per
``copy.deepcopy(env)`` for comparison and, for MiniGrid, per call of the :class:`~sb3_dirpg.envs.minigrid.MultiRoomBound`.
"""

from __future__ import annotations

import argparse
import copy
import time
import timeit
from collections.abc import Callable

import gymnasium as gym
import numpy as np

import sb3_dirpg.envs  # noqa: F401  (registers the envs)
import sb3_dirpg.simulator  # noqa: F401  (registers the built-in cloners, MiniGrid's among them)
from sb3_dirpg.envs import make_minigrid_env
from sb3_dirpg.envs.minigrid import MultiRoomBound
from sb3_dirpg.simulator.registry import find_cloner


def per_call_us(fn: Callable[[], object], min_time: float = 0.2) -> float:
    """Best of 3 timings of ``fn``, each repeated until it takes at least ``min_time`` seconds.

    :param fn: the call to time
    :param min_time: seconds per timing
    :return: microseconds per call
    """
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    number = max(number, int(number * min_time / 0.2))
    return min(timer.repeat(repeat=3, number=number)) / number * 1e6


def step_us(env: gym.Env, n_steps: int, seed: int = 0) -> float:
    """Mean time of ``env.step`` over ``n_steps`` random legal actions (resets are not timed).

    :param env: the env (wrapped or not)
    :param n_steps: number of timed steps
    :param seed: seed of the first reset and of the action choice
    :return: microseconds per step
    """
    rng = np.random.default_rng(seed)
    masks = getattr(env.unwrapped, "action_masks", None)
    n_actions = env.action_space.n
    env.reset(seed=seed)
    total = 0
    for k in range(n_steps):
        legal = np.flatnonzero(masks()) if masks is not None else np.arange(n_actions)
        action = int(legal[rng.integers(len(legal))])
        start = time.perf_counter_ns()
        _, _, terminated, truncated, _ = env.step(action)
        total += time.perf_counter_ns() - start
        if terminated or truncated:
            env.reset(seed=seed + k + 1)
    return total / n_steps / 1e3


def mid_episode(env: gym.Env, n_steps: int, seed: int = 0) -> None:
    """Reset and take up to ``n_steps`` random steps, stopping before the episode ends.

    :param env: the env
    :param n_steps: number of steps
    :param seed: seed of the reset and of the actions
    """
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    for _ in range(n_steps):
        probe = copy.deepcopy(env)
        _, _, terminated, truncated, _ = probe.step(int(rng.integers(env.action_space.n)))
        if terminated or truncated:
            return
        env.step(int(rng.integers(env.action_space.n)))


def bench(name: str, env: gym.Env, n_steps: int, heuristic: Callable | None = None) -> dict[str, float | str]:
    """:param name: label of the row
    :param env: the env to measure
    :param n_steps: timed steps
    :param heuristic: optional ``heuristic(env)`` to time in a mid-episode state
    :return: the measurements in microseconds (``nan`` where not applicable)"""
    row: dict[str, float | str] = {"env": name, "step": step_us(env, n_steps)}
    base = env.unwrapped
    mid_episode(env, 3)
    masks = getattr(base, "action_masks", None)
    row["masks"] = per_call_us(masks) if masks is not None else float("nan")
    cloner = find_cloner(base)
    if cloner is None:
        row["snapshot"] = row["restore"] = float("nan")
    else:
        state = cloner.snapshot(base)
        row["snapshot"] = per_call_us(lambda: cloner.snapshot(base))
        row["restore"] = per_call_us(lambda: cloner.restore(base, state))
    row["deepcopy"] = per_call_us(lambda: copy.deepcopy(env), min_time=0.1)
    row["heuristic"] = per_call_us(lambda: heuristic(env)) if heuristic is not None else float("nan")
    return row


def main() -> None:
    """Measure every env and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000, help="timed steps per env")
    args = parser.parse_args()
    cases: list[tuple[str, Callable[[], gym.Env], Callable | None]] = [
        ("SpanningTreeBandit (6 nodes, 8 edges)", lambda: gym.make("sb3_dirpg/SpanningTreeBandit-v0").unwrapped, None),
        (
            "SpanningTreeBandit (10 nodes, 25 edges)",
            lambda: gym.make("sb3_dirpg/SpanningTreeBandit-v0", n_nodes=10, n_edges=25).unwrapped,
            None,
        ),
        ("DeepSeaRisk (5x5)", lambda: gym.make("sb3_dirpg/DeepSeaRisk-v0").unwrapped, None),
        (
            "MiniGrid-MultiRoom-N6 (shaped, dict obs)",
            lambda: make_minigrid_env("MiniGrid-MultiRoom-N6-v0"),
            MultiRoomBound(0.999),
        ),
        (
            "MiniGrid-DoorKey-8x8 (shaped, dict obs)",
            lambda: make_minigrid_env("MiniGrid-DoorKey-8x8-v0"),
            MultiRoomBound(0.999),
        ),
    ]
    columns = ["step", "masks", "snapshot", "restore", "deepcopy", "heuristic"]
    print(f"{'env (microseconds per call)':44s}" + "".join(f"{c:>10s}" for c in columns))
    for name, make, heuristic in cases:
        env = make()
        n_steps = args.steps if "MiniGrid" not in name else max(args.steps // 10, 100)
        row = bench(name, env, n_steps, heuristic)
        print(f"{name:44s}" + "".join(f"{row[c]:10.2f}" for c in columns))
        env.close()


if __name__ == "__main__":
    main()
