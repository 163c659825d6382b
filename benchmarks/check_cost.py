"""What the misuse checks of issue 23 cost, with one torch thread, in alternating rounds with and without the checks:

* ``overhead``, ``micro``, ``n6-rows``: ``VecSimulator.step`` alone (each row restores, steps, snapshots and calls the
  heuristic), with its input checks on and off (``VecSimulator.input_checks``), on a nearly free env, on CartPole and
  on MultiRoom-N6 with the shipped ``MultiRoomBound``;
* ``n6``, ``n6-env``, ``cartpole``: ``DirPG.learn`` for a fixed number of interactions on fresh seeded models (the
  paper's N6 setting, the N6 entry until N6 took the one MiniGrid setting, on the compiled simulator and on the env,
  CartPole with DirPG's defaults), and
  the construction of each model with and without the construction-time checks; both runs must reach the same
  parameters.

Run from a source checkout: ``OMP_NUM_THREADS=1 python -m benchmarks.check_cost --rounds 12``.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from experiments.multiroom_setup import MAX_STEPS, paper_model_kwargs
from sb3_dirpg import DirPG
from sb3_dirpg.common import simulator_algorithm
from sb3_dirpg.common.vec_simulator import VecSimulator
from sb3_dirpg.envs import make_minigrid_env
from sb3_dirpg.simulator.wrapper import SimulatorWrapper

N6 = "MiniGrid-MultiRoom-N6-v0"


# -- the per-step checks off: VecSimulator's public switch (the wrapper's own per-step checks end with its first-use probe)

PER_STEP = [(VecSimulator, "input_checks", False)]


def construction_patches() -> list[tuple[Any, str, Any]]:
    """:return: (owner, name, replacement) that switch the construction-time checks off"""

    def inspected(self: SimulatorWrapper, result: Any, check: Any) -> Any:
        return result

    return [
        (SimulatorWrapper, "_inspected", inspected),
        (SimulatorWrapper, "_check_reset", lambda self, depth: None),
        (VecSimulator, "check_heuristic", lambda self, depth=8, seed=0: None),
        (simulator_algorithm, "check_observation_space", lambda env, algo: None),
        (simulator_algorithm, "check_learning_rate", lambda lr, algo: None),
    ]


class Patched:
    """Swap attributes for the duration of a ``with`` block."""

    def __init__(self, patches: list[tuple[Any, str, Any]]) -> None:
        self.patches = patches
        self.saved: list[tuple[Any, str, Any]] = []

    def __enter__(self) -> None:
        self.saved = [(owner, name, getattr(owner, name)) for owner, name, _ in self.patches]
        for owner, name, value in self.patches:
            setattr(owner, name, value)

    def __exit__(self, *exc: Any) -> None:
        for owner, name, value in self.saved:
            setattr(owner, name, value)


# -- the settings ---------------------------------------------------------------------------------------------------


def paper_n6(backend: str) -> Callable[[], DirPG]:
    """:param backend: ``simulator_backend``
    :return: a maker of DirPG with the paper's N6 setting (:data:`~experiments.multiroom_setup.DIRPG_PAPER_SHIPPED`, the
        N6 entry of zoo_hyperparams/dirpg.yml until N6 took the one MiniGrid setting)"""
    kwargs = paper_model_kwargs()

    def make() -> DirPG:
        venv = make_vec_env(lambda: make_minigrid_env(N6, max_steps=MAX_STEPS), n_envs=1, vec_env_cls=DummyVecEnv)
        return DirPG("MultiInputPolicy", venv, seed=0, device="cpu", simulator_backend=backend, **kwargs)

    return make


def cartpole() -> DirPG:
    """:return: DirPG on CartPole with its defaults"""
    return DirPG("MlpPolicy", "CartPole-v1", seed=0, device="cpu")


def measure(name: str, make: Callable[[], DirPG], interactions: int, rounds: int) -> dict[str, Any]:
    """Alternate rounds with and without the per-step checks (and with and without the construction checks).

    :return: the times per round"""
    times: dict[str, list[float]] = {"learn on": [], "learn off": [], "build on": [], "build off": []}
    results: dict[str, Any] = {}
    make().learn(interactions // 4)  # warm-up (compilation, imports, caches)
    for r in range(rounds):
        order = ("on", "off") if r % 2 == 0 else ("off", "on")
        for variant in order:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with Patched(construction_patches() if variant == "off" else []):
                    start = time.perf_counter()
                    model = make()
                    times[f"build {variant}"].append(time.perf_counter() - start)
                with Patched(PER_STEP if variant == "off" else []):
                    start = time.perf_counter()
                    model.learn(interactions)
                    times[f"learn {variant}"].append(time.perf_counter() - start)
            params = th.nn.utils.parameters_to_vector(model.policy.parameters()).detach()
            results.setdefault(variant, (params, model.num_timesteps))
    same = th.equal(results["on"][0], results["off"][0]) and results["on"][1] == results["off"][1]
    return {"name": name, "times": times, "same": same, "interactions": results["on"][1]}


def print_row(row: dict[str, Any]) -> None:
    """Print one setting's medians, spreads and the relative cost."""
    t = row["times"]

    def stat(key: str) -> str:
        values = t[key]
        return f"{statistics.median(values):.3f} s (min {min(values):.3f}, max {max(values):.3f})"

    paired = [on / off - 1 for on, off in zip(t["learn on"], t["learn off"])]
    build = [on - off for on, off in zip(t["build on"], t["build off"])]
    print(f"{row['name']}: {row['interactions']} interactions, same parameters with and without checks: {row['same']}")
    print(f"  learn  on  {stat('learn on')}")
    print(f"  learn  off {stat('learn off')}")
    print(
        f"  per-step checks: median paired cost {100 * statistics.median(paired):+.2f} % "
        f"(rounds: {', '.join(f'{100 * p:+.1f}' for p in paired)})"
    )
    print(f"  build  on  {stat('build on')}")
    print(f"  build  off {stat('build off')}")
    print(f"  construction checks: median {1000 * statistics.median(build):+.1f} ms per model")


def cartpole_bound(env: Any) -> tuple[float, float]:
    """docs/heuristics.md's CartPole bound."""
    steps_left = env.get_wrapper_attr("_max_episode_steps") - env.get_wrapper_attr("_elapsed_steps")
    return 1.0, float(steps_left)


def trivial_env() -> Any:
    """:return: a gymnasium env with a 1-element observation, two actions and episodes of 1000 steps, nearly free"""
    import gymnasium as gym
    from gymnasium import spaces

    class Trivial(gym.Env):
        def __init__(self) -> None:
            self.observation_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
            self.action_space = spaces.Discrete(2)
            self.t = 0

        def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
            super().reset(seed=seed)
            self.t = 0
            return np.zeros(1, np.float32), {}

        def step(self, action: int) -> Any:
            self.t += 1
            return np.zeros(1, np.float32), 0.0, False, self.t >= 1000, {}

    return Trivial()


def time_rows(
    vec: VecSimulator, snapshots: Any, actions: np.ndarray, episodes: np.ndarray, rounds: int, reps: int, unit: float
) -> dict[str, list[float]]:
    """Time ``vec.step`` on the same rows with the checks (``on``) and without (``off``), in alternating rounds.

    :param vec: the batch simulator
    :param snapshots: the rows' states
    :param actions: one action per row
    :param episodes: one episode per row
    :param rounds: rounds of each variant
    :param reps: steps of all rows per round
    :param unit: 1e9 for nanoseconds, 1e6 for microseconds
    :return: per variant, the time per row of each round
    """
    times: dict[str, list[float]] = {"on": [], "off": []}
    for r in range(2 * rounds):
        variant = ("on", "off")[(r + r // 2) % 2]
        with Patched(PER_STEP if variant == "off" else []):
            start = time.perf_counter()
            for _ in range(reps):
                vec.step(snapshots, actions, episodes)
            times[variant].append((time.perf_counter() - start) / (reps * len(actions)) * unit)
    return times


def overhead(rounds: int, reps: int = 2000) -> None:
    """The checks' own cost per row of VecSimulator.step, on an env whose step is nearly free (best of the rounds)."""
    for heuristic in (None, lambda env: (0.0, 1.0)):
        vec = VecSimulator([SimulatorWrapper(trivial_env()) for _ in range(8)], heuristic)
        roots = vec.reset(list(range(8)))
        actions, episodes = np.arange(8) % 2, np.arange(8)
        times = time_rows(vec, roots.snapshots, actions, episodes, rounds, reps, 1e9)
        on, off = min(times["on"]), min(times["off"])
        print(
            f"VecSimulator.step on a nearly free env, heuristic={'none' if heuristic is None else 'constant'}: best round "
            f"{on:.0f} ns per row with the checks, {off:.0f} without ({on - off:+.0f} ns); medians "
            f"{statistics.median(times['on']):.0f} and {statistics.median(times['off']):.0f} ns"
        )


def n6_rows(rounds: int, reps: int = 300) -> None:
    """The per-step path alone on MultiRoom-N6 (the env backend, with the shipped MultiRoomBound): VecSimulator.step of
    8 states one step after reset, with and without the checks; microseconds per row (best and median round)."""
    model = paper_n6("env")()
    vec = VecSimulator([SimulatorWrapper(make_minigrid_env(N6, max_steps=100)) for _ in range(8)], model.heuristic)
    roots = vec.reset(list(range(8)))
    actions, episodes = np.full(8, 2), np.arange(8)  # forward: a step that changes the state
    times = time_rows(vec, roots.snapshots, actions, episodes, rounds, reps, 1e6)
    on, off = min(times["on"]), min(times["off"])
    print(
        f"VecSimulator.step on MultiRoom-N6 with MultiRoomBound: best round {on:.2f} us per row with the checks, "
        f"{off:.2f} without ({1000 * (on - off):+.0f} ns); medians {statistics.median(times['on']):.2f} and "
        f"{statistics.median(times['off']):.2f} us"
    )


def micro(rounds: int, reps: int = 400) -> None:
    """The per-step path alone: VecSimulator.step of 8 CartPole states (each row restores, steps, snapshots), with and
    without the checks, with and without a heuristic; microseconds per row."""
    import gymnasium as gym

    for heuristic in (None, cartpole_bound):
        sims = [SimulatorWrapper(gym.make("CartPole-v1")) for _ in range(8)]
        vec = VecSimulator(sims, heuristic)
        roots = vec.reset(list(range(8)))
        actions, episodes = np.arange(8) % 2, np.arange(8)
        times = time_rows(vec, roots.snapshots, actions, episodes, rounds, reps, 1e6)
        on, off = statistics.median(times["on"]), statistics.median(times["off"])
        print(
            f"VecSimulator.step on CartPole, heuristic={getattr(heuristic, '__name__', None)}: median "
            f"{on:.2f} us per row with the checks, {off:.2f} without ({1000 * (on - off):+.0f} ns); best round "
            f"{min(times['on']):.2f} vs {min(times['off']):.2f} ({1000 * (min(times['on']) - min(times['off'])):+.0f} ns); "
            f"spread on {min(times['on']):.2f}-{max(times['on']):.2f}, off {min(times['off']):.2f}-{max(times['off']):.2f}"
        )


def main() -> None:
    """Measure the settings named on the command line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--settings", nargs="+", default=["overhead", "micro", "n6-rows", "n6", "n6-env", "cartpole"])
    args = parser.parse_args()
    th.set_num_threads(1)
    print(f"torch threads: {th.get_num_threads()}, rounds per variant: {args.rounds}")
    settings = {
        "n6": ("MultiRoom-N6, the paper's setting (compiled simulator)", paper_n6("auto"), 30000),
        "n6-env": ("MultiRoom-N6, the paper's setting, simulator_backend='env'", paper_n6("env"), 30000),
        "cartpole": ("CartPole-v1, DirPG defaults", cartpole, 50000),
    }
    for key in args.settings:
        if key == "micro":
            micro(args.rounds)
            continue
        if key == "overhead":
            overhead(args.rounds)
            continue
        if key == "n6-rows":
            n6_rows(args.rounds)
            continue
        name, make, interactions = settings[key]
        print_row(measure(name, make, interactions, args.rounds))


if __name__ == "__main__":
    main()
