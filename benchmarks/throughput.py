"""``python -m benchmarks.throughput``: how close DirPG runs to the simulator's own step rate.

Rows, measured side by side and interleaved over rounds so that machine drift hits all of them alike:

* (a) raw ``env.step`` with random actions (resets not timed): the limit; on MultiRoom also (a0), the same env with
  MiniGrid's own (pure Python) observation instead of :class:`~sb3_dirpg.envs.minigrid.FastObservation`, and (ac), the
  compiled simulator's own step (``CompiledMiniGridSimulator.step`` on batches of random actions, resets not timed);
* (b) ``DirPG.learn`` interactions per second (search, update and logging), in one process, with the lockstep batch size
  chosen by measurement and the default ``simulator_backend="auto"``; (b2) the same with search worker processes;
  (benv) the same as (b) with ``simulator_backend="env"`` (snapshot, restore and step the env itself);
* (c) the naive reference search (deepcopy per expansion, one unbatched policy call per expansion) inside the same
  learn loop;
* (d) SB3 ``PPO.learn`` fps with the same policy network and ``n_envs``;
* (e) ``Reinforce`` fps.

It prints a table with the ratios (b)/(a), (b2)/(a), (b)/(c), (b)/(d), (b)/(benv) and, on MultiRoom, (b)/(a0),
(b)/(ac) and (b) against the authors' reported 945 interactions/s, a profile of where one interaction's time goes (for
each simulator backend), and the peak memory of one batch of searches, and writes everything to JSON.
"""

from __future__ import annotations

import argparse
import collections
import json
import platform
import statistics
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_dirpg import DirPG
from sb3_dirpg.baselines import Reinforce
from sb3_dirpg.common.batched_policy import BatchedPolicy
from sb3_dirpg.envs import make_minigrid_env
from sb3_dirpg.envs.minigrid import CompiledMiniGridSimulator, MiniGridCNN, MultiRoomBound, compiled_kernels
from sb3_dirpg.search import SearchConfig

try:  # the naive reference lives with the tests: row (c) needs a source checkout as the working directory
    from tests.reference.naive_search import NaiveDirPG
except ImportError:
    NaiveDirPG = None


AUTHORS_MULTIROOM_RATE = 945.0  # the authors' code, run unmodified on MultiRoom-N6 (DESIGN.md §5, reference figures)


@dataclass
class Workload:
    """One benchmark environment and the settings of every row on it."""

    name: str
    make_env: Callable[[], gym.Env]
    dirpg_kwargs: dict[str, Any]
    policy: str
    policy_kwargs: dict[str, Any]
    interactions: dict[str, int]  # per row and round
    n_envs: int = 8
    batch_candidates: tuple[int, ...] = (8, 16, 32, 64)
    ppo_kwargs: dict[str, Any] = field(default_factory=dict)
    reference_env: Callable[[], gym.Env] | None = None  # row (a0): the env as it steps without this package's speed-ups
    authors_rate: float | None = None  # interactions/s of the paper authors' code on this workload, as they report it


def multiroom_workload(scale: float) -> Workload:
    """MultiRoom-N6 with the paper's CNN, 3000 interactions per episode (100 for a_opt, 2900 of search)."""

    def make_env() -> gym.Env:
        return make_minigrid_env("MiniGrid-MultiRoom-N6-v0")

    bound = MultiRoomBound.for_env(make_env(), gamma=1.0)
    return Workload(
        name="MiniGrid-MultiRoom-N6-v0",
        make_env=make_env,
        dirpg_kwargs=dict(search_budget=2900, max_episode_steps=100, priority={"astar": {"alpha": 0.2}}, heuristic=bound),
        policy="MultiInputPolicy",
        policy_kwargs=dict(features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False),
        interactions={k: int(v * scale) for k, v in dict(raw=20_000, dirpg=60_000, workers=60_000, naive=8_000,
                                                         ppo=16_384, reinforce=24_000).items()},  # fmt: skip
        ppo_kwargs=dict(n_steps=128, batch_size=64, n_epochs=10),  # rl-zoo3's MiniGrid settings
        reference_env=lambda: make_minigrid_env("MiniGrid-MultiRoom-N6-v0", fast_observation=False),
        authors_rate=AUTHORS_MULTIROOM_RATE,
    )


def cartpole_workload(scale: float) -> Workload:
    """CartPole-v1 with SB3's default MLP."""
    return Workload(
        name="CartPole-v1",
        make_env=lambda: gym.make("CartPole-v1"),
        dirpg_kwargs=dict(search_budget=200, learning_rate=1e-2, epsilon=5.0),
        policy="MlpPolicy",
        policy_kwargs=dict(net_arch=[64, 64]),
        interactions={k: int(v * scale) for k, v in dict(raw=100_000, dirpg=100_000, workers=100_000, naive=20_000,
                                                         ppo=32_768, reinforce=60_000).items()},  # fmt: skip
        ppo_kwargs=dict(n_steps=256),
    )


def doorkey_workload(scale: float) -> Workload:
    """DoorKey-5x5 with the one MiniGrid setting (issue 79): one map per update and four optimizer steps on it, so the
    update, not the search, sets the rate (issue 82)."""
    from sb3_dirpg.envs.minigrid.setting import minigrid_setting

    setting = minigrid_setting("MiniGrid-DoorKey-5x5-v0")
    kwargs = setting.algorithm_kwargs()
    policy_kwargs = kwargs.pop("policy_kwargs")
    kwargs.pop("batch_episodes")  # the benchmark's batch size (1 in the setting)
    return Workload(
        name="MiniGrid-DoorKey-5x5-v0",
        make_env=setting.make_env,
        dirpg_kwargs=kwargs,
        policy=setting.policy,
        policy_kwargs=policy_kwargs,
        interactions={k: int(v * scale) for k, v in dict(raw=20_000, dirpg=30_000, workers=30_000, naive=8_000,
                                                         ppo=16_384, reinforce=24_000).items()},  # fmt: skip
        n_envs=1,
        batch_candidates=(1, 4, 8),
    )


WORKLOADS = {"multiroom": multiroom_workload, "cartpole": cartpole_workload, "doorkey": doorkey_workload}


def raw_step_rate(make_env: Callable[[], gym.Env], n_steps: int, seed: int = 0) -> float:
    """:return: env steps per second with uniformly random actions, resets not timed"""
    env = make_env()
    rng = np.random.default_rng(seed)
    n_actions = int(env.action_space.n)
    env.reset(seed=seed)
    actions = rng.integers(n_actions, size=n_steps).tolist()
    elapsed = 0.0
    for action in actions:
        start = time.perf_counter()
        _, _, terminated, truncated, _ = env.step(action)
        elapsed += time.perf_counter() - start
        if terminated or truncated:
            env.reset(seed=int(rng.integers(2**31)))
    return n_steps / elapsed


def compiled_step_rate(model: DirPG, n_steps: int, batch: int, seed: int = 0) -> float:
    """:return: states per second that the model's compiled simulator steps with uniformly random actions, ``batch``
        episodes at a time (a batch goes on from the states it reached; resets not timed)"""
    simulator = model.simulator
    rng = np.random.default_rng(seed)
    done, elapsed, episode_seed = 0, 0.0, 0
    while done < n_steps:
        snapshots = simulator.reset(list(range(episode_seed, episode_seed + batch))).snapshots
        episodes = np.arange(batch)
        episode_seed += batch
        while snapshots and done < n_steps:
            actions = rng.integers(simulator.n_actions, size=len(snapshots))
            start = time.perf_counter()
            trans = simulator.step(snapshots, actions, episodes)
            elapsed += time.perf_counter() - start
            done += len(snapshots)
            live = [i for i, snapshot in enumerate(trans.snapshots) if snapshot is not None]
            snapshots, episodes = [trans.snapshots[i] for i in live], episodes[live]
    return done / elapsed


def learn_rate(model: Any, n: int) -> float:
    """:return: interactions (or env steps) per second of ``model.learn`` for at least ``n`` more of them"""
    before = model.num_timesteps
    start = time.perf_counter()
    model.learn(n, reset_num_timesteps=False)
    return (model.num_timesteps - before) / (time.perf_counter() - start)


def make_dirpg(work: Workload, batch: int, seed: int = 0, cls: type[DirPG] = DirPG, **extra: Any) -> DirPG:
    """:return: a DirPG (or subclass) model for the workload"""
    venv = make_vec_env(work.make_env, n_envs=work.n_envs, vec_env_cls=DummyVecEnv)
    kwargs = dict(work.dirpg_kwargs, **extra)
    return cls(work.policy, venv, batch_episodes=batch, seed=seed, policy_kwargs=dict(work.policy_kwargs), **kwargs)


def choose_batch(work: Workload, rounds: int) -> tuple[int, dict[int, float]]:
    """Measure DirPG's single-process rate for every candidate batch size (interleaved) and pick the fastest.

    :return: the chosen batch size and the median rate of each candidate
    """
    models = {b: make_dirpg(work, b) for b in work.batch_candidates}
    rates: dict[int, list[float]] = collections.defaultdict(list)
    for _ in range(rounds):
        for b, model in models.items():
            rates[b].append(learn_rate(model, work.interactions["dirpg"] // 2))
    medians = {b: statistics.median(r) for b, r in rates.items()}
    return max(medians, key=medians.get), medians


def profile_interaction(work: Workload, batch: int, n: int, backend: str = "auto") -> dict[str, float]:
    """Where one interaction's time goes, in µs: simulator step, clone, heuristic, policy forward, update, the rest.

    With the compiled simulator, "compiled step" is the one compiled call that steps, observes, stores the states
    reached (the snapshot) and bounds them, and "simulator glue" the Python around it. The profile runs the search's
    Python loop with torch forwards (``compiled_loop=False``, no compiled forward), whose parts can be timed apart; the
    compiled loop runs them in one call.

    :param backend: the ``simulator_backend``
    :return: µs per interaction for each part
    """
    totals: collections.Counter = collections.Counter()

    class TimedBatchedPolicy(BatchedPolicy):
        def compiled_forward(self) -> None:
            """:return: None: the forwards run in torch, where they can be timed"""
            return None

        def logits(self, obs: list[Any], masks: np.ndarray, device: Any = None) -> np.ndarray:
            """:return: the logits, timing the forward"""
            start = time.perf_counter()
            out = super().logits(obs, masks, device)
            totals["policy forward"] += time.perf_counter() - start
            return out

    class ProfiledDirPG(DirPG):  # not benchmarks.common.PythonLoop: this module also runs in trees without it
        batched_policy_class = TimedBatchedPolicy

        def search_config(self, **overrides: Any) -> SearchConfig:
            return super().search_config(**{"compiled_loop": False, **overrides})

    model = make_dirpg(work, batch, cls=ProfiledDirPG, simulator_backend=backend)
    model.simulator.ensure_simulators(batch)

    def timed(obj: Any, name: str, key: str) -> None:
        inner = getattr(obj, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            out = inner(*args, **kwargs)
            totals[key] += time.perf_counter() - start
            return out

        setattr(obj, name, wrapper)

    compiled = isinstance(model.simulator, CompiledMiniGridSimulator)
    for sim in model.simulator.simulators:
        timed(sim, "reset", "episode reset")
        if not compiled:
            timed(sim, "snapshot", "clone (snapshot+restore)")
            timed(sim, "restore", "clone (snapshot+restore)")
            timed(sim.env, "step", "simulator step")
    if model.simulator.heuristic is not None:
        timed(model.simulator, "heuristic", "heuristic")
    kernel_key = "compiled step (step, observation, snapshot, bound)"
    kernel = compiled_kernels.step_states
    if compiled:  # the simulator looks the kernel up in its module at every step; put back below
        timed(model.simulator, "step", "simulator glue")
        timed(compiled_kernels, "step_states", kernel_key)
    timed(model, "train", "update")
    start = time.perf_counter()
    try:
        model.learn(n)
    finally:
        compiled_kernels.step_states = kernel
    total = time.perf_counter() - start
    if compiled:
        totals["simulator glue"] -= totals[kernel_key]  # the glue's time includes the kernel's
    per = {k: v / model.num_timesteps * 1e6 for k, v in totals.items()}
    per["search bookkeeping and logging"] = total / model.num_timesteps * 1e6 - sum(per.values())
    per["total"] = total / model.num_timesteps * 1e6
    return per


def peak_search_memory(work: Workload, batch: int) -> dict[str, float]:
    """:return: peak Python heap of one batch of searches (tracemalloc), in MB, total and per episode, and in bytes per
        node of the search tree (one node per interaction, plus the roots)"""
    model = make_dirpg(work, batch)
    model.simulator.ensure_simulators(batch)
    tracemalloc.start()
    result = model.search(list(range(batch)))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    nodes = result.tree.nodes.size
    return {"batch_mb": peak / 2**20, "per_episode_mb": peak / 2**20 / batch, "bytes_per_node": peak / nodes, "nodes": nodes}


def run_workload(work: Workload, rounds: int, n_workers: int, batch: int | None = None) -> dict[str, Any]:
    """Measure every row of one workload, interleaved over ``rounds``.

    :param work: the workload
    :param rounds: interleaved rounds
    :param n_workers: extra search processes for row (b2), 0 to skip it
    :param batch: the lockstep batch size, or None to choose it by measurement
    :return: rates, ratios, profile and memory
    """
    batch_rates: dict[int, float] = {}
    if batch is None:
        print(f"\n== {work.name}: choosing the lockstep batch size ...", flush=True)
        batch, batch_rates = choose_batch(work, max(1, rounds - 1))
        print("   " + ", ".join(f"batch {b}: {r:,.0f}/s" for b, r in batch_rates.items()) + f" -> {batch}", flush=True)
    venv_ppo = make_vec_env(work.make_env, n_envs=work.n_envs, vec_env_cls=DummyVecEnv)
    rows: dict[str, Callable[[], float]] = {}
    rows["(a) raw env.step"] = lambda: raw_step_rate(work.make_env, work.interactions["raw"])
    if work.reference_env is not None:
        reference_env = work.reference_env
        rows["(a0) raw env.step, MiniGrid's observation"] = lambda: raw_step_rate(reference_env, work.interactions["raw"])
    dirpg = make_dirpg(work, batch)
    compiled = isinstance(dirpg.simulator, CompiledMiniGridSimulator)
    if compiled:
        stepper = make_dirpg(work, batch)
        rows["(ac) compiled simulator step"] = lambda: compiled_step_rate(stepper, work.interactions["raw"], batch)
    rows["(b) DirPG learn, 1 process"] = lambda: learn_rate(dirpg, work.interactions["dirpg"])
    if compiled:
        on_env = make_dirpg(work, batch, simulator_backend="env")
        rows["(benv) DirPG learn, simulator_backend='env'"] = lambda: learn_rate(on_env, work.interactions["dirpg"])
    if n_workers > 0:
        workers = make_dirpg(work, batch, n_workers=n_workers)
        rows[f"(b2) DirPG learn, {n_workers + 1} processes"] = lambda: learn_rate(workers, work.interactions["workers"])
    # the reference searches one episode after the other; small batches keep its per-node env copies within memory
    naive = make_dirpg(work, 2, cls=NaiveDirPG) if NaiveDirPG is not None else None
    if naive is not None:
        rows["(c) naive reference search"] = lambda: learn_rate(naive, work.interactions["naive"])
    else:
        print("   row (c) skipped: tests/reference/naive_search.py is importable only from a source checkout", flush=True)
    ppo = PPO(work.policy, venv_ppo, policy_kwargs=dict(work.policy_kwargs), seed=0, **work.ppo_kwargs)
    rows["(d) SB3 PPO learn"] = lambda: learn_rate(ppo, work.interactions["ppo"])
    reinforce_env = make_vec_env(work.make_env, n_envs=work.n_envs, vec_env_cls=DummyVecEnv)
    reinforce_kwargs = {k: v for k, v in work.dirpg_kwargs.items() if k in ("max_episode_steps", "learning_rate")}
    reinforce = Reinforce(work.policy, reinforce_env, n_rollouts=30, batch_episodes=1, seed=0,
                          policy_kwargs=dict(work.policy_kwargs), **reinforce_kwargs)  # fmt: skip
    rows["(e) Reinforce learn"] = lambda: learn_rate(reinforce, work.interactions["reinforce"])

    warm = (dirpg, *([on_env] if compiled else []), *([naive] if naive is not None else []), ppo, reinforce)
    for model in (*warm, *([workers] if n_workers > 0 else [])):
        model.learn(work.interactions["naive"] // 4, reset_num_timesteps=False)  # warm-up: worker start, first allocations
    samples: dict[str, list[float]] = collections.defaultdict(list)
    for r in range(rounds):
        for name, measure in rows.items():
            samples[name].append(measure())
        latest = ", ".join(f"{k.split()[0]} {v[-1]:,.0f}" for k, v in samples.items())
        print(f"   round {r + 1}/{rounds}: {latest}", flush=True)
    if n_workers > 0:
        workers.close_workers()
    rates = {name: statistics.median(values) for name, values in samples.items()}
    raw = rates["(a) raw env.step"]
    single = rates["(b) DirPG learn, 1 process"]
    ratios = {
        "(b)/(a)": single / raw,
        "(b)/(d)": single / rates["(d) SB3 PPO learn"],
    }
    if work.reference_env is not None:
        ratios["(b)/(a0)"] = single / rates["(a0) raw env.step, MiniGrid's observation"]
    if compiled:
        ratios["(b)/(ac)"] = single / rates["(ac) compiled simulator step"]
        ratios["(b)/(benv): compiled simulator speedup"] = single / rates["(benv) DirPG learn, simulator_backend='env'"]
    if work.authors_rate is not None:
        ratios[f"(b)/authors' {work.authors_rate:.0f}/s"] = single / work.authors_rate
    if naive is not None:
        ratios["(b)/(c)"] = single / rates["(c) naive reference search"]
    if n_workers > 0:
        multi = rates[f"(b2) DirPG learn, {n_workers + 1} processes"]
        ratios["(b2)/(a)"] = multi / raw
        ratios["(b2)/(b): worker speedup"] = multi / single
    print("   profiling one interaction ...", flush=True)
    profile = {"auto": profile_interaction(work, batch, work.interactions["dirpg"])}
    if compiled:
        profile["env"] = profile_interaction(work, batch, work.interactions["dirpg"], backend="env")
    memory = peak_search_memory(work, batch)
    return dict(env=work.name, batch_episodes=batch, batch_rates=batch_rates, rates=rates, samples=samples,
                ratios=ratios, profile_us=profile, memory=memory, n_envs=work.n_envs)  # fmt: skip


def print_report(result: dict[str, Any]) -> None:
    """Print one workload's table, ratios, profile and memory."""
    print(f"\n{result['env']}  (batch_episodes={result['batch_episodes']}, n_envs={result['n_envs']}, median of rounds)")
    for name, rate in result["rates"].items():
        spread = f"{min(result['samples'][name]):,.0f}-{max(result['samples'][name]):,.0f}"
        print(f"  {name:44s} {rate:10,.0f} /s   (rounds: {spread})")
    for name, value in result["ratios"].items():
        print(f"  {name:44s} {value:10.2f}")
    for backend, profile in result["profile_us"].items():
        print(f"  profile with simulator_backend={backend!r}, µs per interaction:")
        for name, value in profile.items():
            print(f"    {name:50s} {value:8.1f}")
    print(f"  peak memory of one batch of searches: {result['memory']['batch_mb']:.1f} MB "
          f"({result['memory']['per_episode_mb']:.2f} MB per episode, {result['memory']['bytes_per_node']:,.0f} B per node "
          f"of {result['memory']['nodes']:,})")  # fmt: skip


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark.

    :param argv: command-line arguments
    :return: the results
    """
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=["multiroom", "cartpole"], choices=sorted(WORKLOADS))
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per row (the median is reported)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the interactions of every row")
    parser.add_argument("--workers", type=int, default=1, help="extra search processes for row (b2); 0 skips it")
    parser.add_argument("--batch", type=int, default=None, help="lockstep batch size (default: chosen by measurement)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (reported; 1 is best for small forwards)")
    parser.add_argument("--json", default="throughput.json", help="where to write the results")
    args = parser.parse_args(argv)
    th.set_num_threads(args.threads)
    results = dict(
        torch_threads=args.threads, rounds=args.rounds, scale=args.scale, python=platform.python_version(),
        torch=th.__version__, machine=platform.machine(), cpus=__import__("os").cpu_count(), workloads=[],
    )  # fmt: skip
    for name in args.envs:
        result = run_workload(WORKLOADS[name](args.scale), args.rounds, args.workers, args.batch)
        print_report(result)
        results["workloads"].append(result)
    with open(args.json, "w") as f:
        json.dump(results, f, indent=2)
    print(f"\nwrote {args.json} (torch threads: {args.threads})")
    return results


if __name__ == "__main__":
    main()
