"""``python -m benchmarks.navix_ppo``: DirPG against NAVIX-PPO, the fastest PPO a CPU user can pick, side by side.

NAVIX is MiniGrid rewritten in JAX; its authors train PPO on it with ``rejax``, compiled end to end and vectorised over
16 to 64 envs. This benchmark trains, on DoorKey-5x5, DoorKey-8x8 and MultiRoom-N2-S4, one core per process:

* ``dirpg``: the one MiniGrid setting (:func:`~sb3_dirpg.envs.minigrid.setting.minigrid_setting`, what the zoo bridge
  trains for a MiniGrid id), ``device="cpu"``, one torch thread, on MiniGrid itself;
* ``ppo-published``: rejax's PPO with the NAVIX authors' DoorKey-8x8 configuration (``baselines/rejax/configs/
  navix_doorkey_8x8_1m.yaml`` in NAVIX's repository: 16 envs, 128 steps, no observation normalization) at its own
  budget of 1,048,576 steps, on the env the registry gives;
* ``ppo-peer``: the same with observation normalization and 64 envs, a setting that solves the registry's DoorKey-8x8
  (about 6.5M steps).

NAVIX's published DoorKey-8x8 figure (0.96 at 1M) was made on its paper branch, whose walkability check (``jnp.any``
where releases use ``jnp.all``) lets the agent walk through walls; ``ppo-published`` shows what those settings reach
on the release's dynamics, and ``ppo-peer`` is the PPO that DirPG is compared with.

Each run is evaluated on 200 held-out maps (sampled and greedy actions, no search) every ``eval_every`` interactions,
and stops at the first evaluation where both reach 0.9. Reported per run: the interactions and the training wall time
to 0.9 (sampled, greedy, both; evaluations excluded), the compile time apart (JAX: lowering and compiling the training
chunk and the evaluation; DirPG: a throw-away model's first ``learn``, which loads or compiles the numba kernels), and
the whole process's wall time. Runs go side by side, one process pinned to each core (JAX single-threaded with
``XLA_FLAGS``), all in one invocation; the table gives medians over seeds and the ratio of NAVIX-PPO's training wall
time to DirPG's.

Differences that stay: NAVIX observes the whole grid (``observations.symbolic``) where MiniGrid gives DirPG its 7x7
view; NAVIX's DoorKey starts the agent at a fixed pose; NAVIX's step limits are its own (DoorKey-5x5: 100 steps where
MiniGrid allows 250); the held-out maps are NAVIX reset keys 10000.. on one side and MiniGrid reset seeds 10000.. on
the other, the same count but not the same maps.

NAVIX and JAX are an optional extra that needs Python 3.12 or later (``pip install -e ".[navix]"`` in a separate
virtual environment, whose Python goes to ``--navix-python``); nothing else in the project imports them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS, ROOT

#: how to install the NAVIX side (printed where it is missing)
INSTALL_HINT = (
    "NAVIX-PPO needs navix, rejax and jax, which need Python 3.12 or later. Install them in a separate virtual "
    'environment, e.g. `python3.12 -m venv navix-venv && navix-venv/bin/pip install -e ".[navix]"` from the checkout, '
    "and pass its Python: `python -m benchmarks.navix_ppo --navix-python navix-venv/bin/python`"
)
#: success level, and the held-out maps: first seed (MiniGrid reset seed, or NAVIX reset key) and count
LEVEL = 0.9
HELD_OUT = (10_000, 200)
#: seed of the sampled actions in NAVIX's evaluation
EVAL_ACTION_SEED = 12345
#: environment of a JAX process: one thread for XLA's CPU backend
XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
#: rejax's PPO as NAVIX's authors ran it on DoorKey-8x8 (their ``navix_doorkey_8x8_1m.yaml``); budget and evaluation
#: schedule are set per run
PUBLISHED_PPO: dict[str, Any] = {
    "agent_kwargs": {"activation": "tanh"},
    "num_envs": 16,
    "num_steps": 128,
    "num_epochs": 2,
    "num_minibatches": 1,
    "learning_rate": 0.0003,
    "max_grad_norm": 1.0,
    "gamma": 0.95,
    "gae_lambda": 0.9,
    "clip_eps": 0.2,
    "ent_coef": 0.01,
    "vf_coef": 0.5,
    "normalize_observations": False,
}
#: the published budget (1M steps, as the published figure)
PUBLISHED_BUDGET = 1_048_576
#: the PPO that solves the release's dynamics: the published one with observation normalization and 64 envs
PEER_PPO: dict[str, Any] = {**PUBLISHED_PPO, "num_envs": 64, "normalize_observations": True}
PPO_SETTINGS = {"ppo-published": PUBLISHED_PPO, "ppo-peer": PEER_PPO}
METHODS = ("dirpg", *PPO_SETTINGS)


@dataclass(frozen=True)
class BenchmarkEnv:
    """One env of the benchmark, on both sides.

    :param minigrid_id: the MiniGrid id DirPG trains on
    :param navix_id: the NAVIX id PPO trains on
    :param dirpg_budget: DirPG's interactions at most
    :param dirpg_eval_every: interactions between DirPG's evaluations
    :param ppo_budget: the peer PPO's steps at most (the published one stops at :data:`PUBLISHED_BUDGET`)
    :param ppo_eval_every: steps between PPO's evaluations (rounded up to whole PPO iterations)
    """

    minigrid_id: str
    navix_id: str
    dirpg_budget: int
    dirpg_eval_every: int
    ppo_budget: int
    ppo_eval_every: int


ENVS = {
    "DoorKey-5x5": BenchmarkEnv("MiniGrid-DoorKey-5x5-v0", "Navix-DoorKey-5x5-v0", 200_000, 2_500, 4_000_000, 65_536),
    "DoorKey-8x8": BenchmarkEnv("MiniGrid-DoorKey-8x8-v0", "Navix-DoorKey-8x8-v0", 1_000_000, 10_000, 16_000_000, 262_144),
    "MultiRoom-N2-S4": BenchmarkEnv(
        "MiniGrid-MultiRoom-N2-S4-v0", "Navix-MultiRoom-N2-S4-v0", 300_000, 2_500, 4_000_000, 65_536
    ),
    "MultiRoom-N6": BenchmarkEnv("MiniGrid-MultiRoom-N6-v0", "Navix-MultiRoom-N6-v0", 2_000_000, 25_000, 20_000_000, 262_144),
}
DEFAULT_ENVS = ("DoorKey-5x5", "DoorKey-8x8", "MultiRoom-N2-S4")
#: ``--quick``: budgets and evaluations that exercise the whole pipeline in about a minute
QUICK = {"dirpg_budget": 2_000, "dirpg_eval_every": 1_000, "ppo_budget": 16_384, "ppo_eval_every": 8_192, "maps": 20}


def first_at(points: Sequence[dict[str, Any]], mode: str, level: float = LEVEL) -> dict[str, Any] | None:
    """:param points: evaluations, each with ``interactions``, ``wall_s``, and ``sampled`` / ``greedy`` success
    :param mode: ``sampled``, ``greedy`` or ``both``
    :param level: the success to reach
    :return: the first point at ``level`` or above (``both``: sampled and greedy), as ``interactions`` and ``wall_s``,
        or None"""
    for point in points:
        success = min(point["sampled"], point["greedy"]) if mode == "both" else point[mode]
        if success >= level:
            return {"interactions": int(point["interactions"]), "wall_s": float(point["wall_s"])}
    return None


# ---------------------------------------------------------------------------------------------------------------------
# workers: one training run each, in its own process pinned to one core; the last line they print is their result
# ---------------------------------------------------------------------------------------------------------------------


def dirpg_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Train the one MiniGrid setting with DirPG until both success rates reach the level or the budget is spent.

    :param spec: ``env_id``, ``seed``, ``budget``, ``eval_every``, ``maps`` (held-out maps), ``level``
    :return: the run: its evaluations (``points``), ``compile_s``, ``setup_s`` and the package versions
    """
    import torch as th

    th.set_num_threads(1)
    started = time.perf_counter()
    from importlib.metadata import version

    from experiments.held_out import HeldOutEvaluation
    from sb3_dirpg import DirPG
    from sb3_dirpg.envs.minigrid.setting import minigrid_setting

    setting = minigrid_setting(spec["env_id"])

    def model() -> DirPG:
        return DirPG(setting.policy, setting.make_env(), device="cpu", seed=spec["seed"], **setting.algorithm_kwargs())

    setup_s = time.perf_counter() - started
    warm = time.perf_counter()
    model().learn(1)  # loads (or compiles, on a cold cache) the numba kernels and the compiled simulator
    compile_s = time.perf_counter() - warm
    with tempfile.TemporaryDirectory() as folder:
        budget, every = int(spec["budget"]), int(spec["eval_every"])
        evaluation = HeldOutEvaluation(
            str(Path(folder) / "record.json"), spec["env_id"], budget, env_kwargs=setting.env_kwargs,
            env_wrapper=setting.env_wrapper, points=max(1, -(-budget // every)), seeds=(HELD_OUT[0], int(spec["maps"])),
            stop_level=float(spec["level"]), stop_after=1, verbose=0,
        )  # fmt: skip
        trained = model()
        trained.learn(budget, callback=evaluation)
        record = json.loads((Path(folder) / "record.json").read_text())
    points = [{"interactions": p["interactions"], "wall_s": p["wall_s"], "sampled": p["sampled"]["success"],
               "greedy": p["greedy"]["success"]} for p in record["points"]]  # fmt: skip
    return {"points": points, "compile_s": compile_s, "setup_s": setup_s, "interactions": int(trained.num_timesteps),
            "versions": {name: version(name) for name in ("torch", "minigrid", "stable-baselines3")}}  # fmt: skip


def navix_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Train rejax's PPO on a NAVIX env in chunks of ``eval_every`` steps (one compiled call each), evaluating between
    chunks, until both success rates reach the level or the budget is spent.

    :param spec: ``env_id`` (NAVIX), ``seed``, ``budget``, ``eval_every``, ``maps``, ``level``, ``ppo`` (rejax's PPO
        settings)
    :return: the run: its evaluations (``points``), ``compile_s``, ``setup_s``, the env's step limit and the versions
    """
    started = time.perf_counter()
    try:
        import jax
        import jax.numpy as jnp
        import navix as nx
        from rejax import PPO
    except ImportError as error:
        raise SystemExit(f"{error}\n{INSTALL_HINT}") from error
    from importlib.metadata import version

    ppo = dict(spec["ppo"])
    per_iteration = int(ppo["num_envs"]) * int(ppo["num_steps"])
    chunk = per_iteration * max(1, -(-int(spec["eval_every"]) // per_iteration))
    algo = PPO.create(env=f"navix/{spec['env_id']}", total_timesteps=chunk, eval_freq=chunk, skip_initial_evaluation=True,
                      **ppo)  # fmt: skip
    algo = algo.replace(eval_callback=lambda algo, ts, rng: jnp.zeros(()))  # evaluation happens between chunks
    env = nx.make(spec["env_id"]).replace(disable_autoreset=True)
    maps = int(spec["maps"])
    map_keys = jax.vmap(jax.random.PRNGKey)(jnp.arange(HELD_OUT[0], HELD_OUT[0] + maps))

    def evaluate(ts: Any, greedy: bool) -> Any:
        """:param ts: rejax's train state
        :param greedy: greedy actions, else sampled ones
        :return: the success rate on the held-out maps"""
        first = jax.vmap(env.reset)(map_keys)

        def act(timestep: Any, key: Any) -> Any:
            obs = timestep.observation.astype(jnp.float32)
            if algo.normalize_observations:
                obs = algo.normalize_obs(ts.obs_rms_state, obs)
            logits = algo.actor.apply(ts.actor_ts.params, obs, method="_action_dist").logits
            return jnp.argmax(logits, axis=-1) if greedy else jax.random.categorical(key, logits, axis=-1)

        def step(carry: Any) -> Any:
            timestep, done, success, key, t = carry
            key, sub = jax.random.split(key)
            after = jax.vmap(env.step)(timestep, act(timestep, sub))
            success = success | (~done & (after.step_type == 2) & (after.reward > 0))
            return after, done | (after.step_type > 0), success, key, t + 1

        def going(carry: Any) -> Any:
            return jnp.logical_and(~jnp.all(carry[1]), carry[4] < env.max_steps)

        start = (first, jnp.zeros(maps, bool), jnp.zeros(maps, bool), jax.random.PRNGKey(EVAL_ACTION_SEED), 0)
        return jax.lax.while_loop(going, step, start)[2].mean()

    setup_s = time.perf_counter() - started
    compiling = time.perf_counter()
    ts = jax.jit(algo.init_state)(jax.random.PRNGKey(int(spec["seed"])))
    train = jax.jit(lambda ts: algo.train(train_state=ts)[0]).lower(ts).compile()
    sampled_fn = jax.jit(lambda ts: evaluate(ts, False)).lower(ts).compile()
    greedy_fn = jax.jit(lambda ts: evaluate(ts, True)).lower(ts).compile()
    jax.block_until_ready(ts)
    compile_s = time.perf_counter() - compiling

    points: list[dict[str, Any]] = []
    wall = 0.0
    budget, level = int(spec["budget"]), float(spec["level"])
    while True:
        steps = int(ts.global_step)
        point = {"interactions": steps, "wall_s": round(wall, 3), "sampled": float(sampled_fn(ts)),
                 "greedy": float(greedy_fn(ts))}  # fmt: skip
        points.append(point)
        if min(point["sampled"], point["greedy"]) >= level or steps >= budget:
            break
        tick = time.perf_counter()
        ts = jax.block_until_ready(train(ts))
        wall += time.perf_counter() - tick
    return {"points": points, "compile_s": compile_s, "setup_s": setup_s, "interactions": int(ts.global_step),
            "chunk": chunk, "max_steps": int(env.max_steps),
            "versions": {name: version(name) for name in ("navix", "rejax", "jax", "jaxlib")}}  # fmt: skip


WORKERS = {"dirpg": dirpg_worker, "navix": navix_worker}


# ---------------------------------------------------------------------------------------------------------------------
# the runner: jobs side by side, one per core
# ---------------------------------------------------------------------------------------------------------------------


@dataclass
class Job:
    """One training run.

    :param env: the benchmark env's name (a key of :data:`ENVS`)
    :param method: ``dirpg`` or a key of :data:`PPO_SETTINGS`
    :param seed: the training seed
    :param spec: what its worker gets
    """

    env: str
    method: str
    seed: int
    spec: dict[str, Any]

    @property
    def worker(self) -> str:
        """:return: the worker that runs it"""
        return "dirpg" if self.method == "dirpg" else "navix"


def make_jobs(envs: Sequence[str], methods: Sequence[str], seeds: Sequence[int], quick: bool = False,
              maps: int = HELD_OUT[1]) -> list[Job]:  # fmt: skip
    """:param envs: benchmark envs (keys of :data:`ENVS`)
    :param methods: ``dirpg`` and keys of :data:`PPO_SETTINGS`
    :param seeds: training seeds
    :param quick: the tiny budgets of :data:`QUICK`
    :param maps: held-out maps per evaluation (``quick`` uses its own)
    :return: the jobs, those of one env and seed next to each other (so that they run side by side)"""
    jobs = []
    for name in envs:
        env = ENVS[name]
        for seed in seeds:
            for method in methods:
                if method == "dirpg":
                    budget, every = (QUICK["dirpg_budget"], QUICK["dirpg_eval_every"]) if quick else \
                        (env.dirpg_budget, env.dirpg_eval_every)  # fmt: skip
                    spec = {"env_id": env.minigrid_id, "budget": budget, "eval_every": every}
                else:
                    budget = QUICK["ppo_budget"] if quick else env.ppo_budget
                    if method == "ppo-published":
                        budget = min(budget, PUBLISHED_BUDGET)
                    every = QUICK["ppo_eval_every"] if quick else env.ppo_eval_every
                    spec = {"env_id": env.navix_id, "budget": budget, "eval_every": every, "ppo": PPO_SETTINGS[method]}
                spec.update(seed=seed, maps=QUICK["maps"] if quick else maps, level=LEVEL)
                jobs.append(Job(name, method, seed, spec))
    return jobs


def _launch(job: Job, python: str, cpu: int | None, log: Path) -> subprocess.Popen:
    """:param job: the run
    :param python: the interpreter
    :param cpu: the core to pin it to, or None
    :param log: where its standard error goes
    :return: the running process"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
               OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", JAX_PLATFORMS="cpu",
               XLA_FLAGS=f"{os.environ.get('XLA_FLAGS', '')} {XLA_ONE_THREAD}".strip())  # fmt: skip
    command = [python, "-m", "benchmarks.navix_ppo", "--worker", job.worker, json.dumps(job.spec)]
    with open(log, "w") as err:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
    if cpu is not None:  # pinned while it is still importing, long before it trains
        os.sched_setaffinity(process.pid, {cpu})
    return process


def check_navix(python: str) -> str | None:
    """:param python: the interpreter of the NAVIX side
    :return: None where it imports navix, rejax and jax, else why not (with the install hint)"""
    try:
        result = subprocess.run([python, "-c", "import navix, rejax, jax"], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{python} cannot run: {error}\n{INSTALL_HINT}"
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no error printed"])[-1]
        return f"{python} cannot import navix, rejax and jax ({last})\n{INSTALL_HINT}"
    return None


def run_jobs(jobs: Sequence[Job], navix_python: str, cores: Sequence[int | None], logs: Path,
             verbose: bool = True) -> list[dict[str, Any]]:  # fmt: skip
    """Run the jobs, as many at a time as there are cores, each pinned to its own.

    :param jobs: the runs, in order
    :param navix_python: the interpreter of the NAVIX runs (DirPG's is this one)
    :param cores: the cores to use (``[None]``: one at a time, unpinned)
    :param logs: folder of each run's standard error
    :param verbose: print each run as it ends
    :return: per job, its description, ``process_s`` (the process's wall time) and the worker's result, or ``error``
    """
    logs.mkdir(parents=True, exist_ok=True)
    pending = list(enumerate(jobs))
    running: dict[int | None, tuple[int, subprocess.Popen, float, Path]] = {}
    results: list[dict[str, Any]] = [{} for _ in jobs]
    free = list(cores)
    while pending or running:
        while pending and free:
            index, job = pending.pop(0)
            cpu = free.pop(0)
            log = logs / f"{job.env}-{job.method}-s{job.seed}.log"
            python = sys.executable if job.worker == "dirpg" else navix_python
            running[cpu] = (index, _launch(job, python, cpu, log), time.perf_counter(), log)
        time.sleep(0.2)
        for cpu, (index, process, began, log) in list(running.items()):
            if process.poll() is None:
                continue
            out = process.stdout.read() if process.stdout else ""
            job = jobs[index]
            entry: dict[str, Any] = {"env": job.env, "method": job.method, "seed": job.seed, "spec": job.spec,
                                     "process_s": time.perf_counter() - began}  # fmt: skip
            lines = out.strip().splitlines()
            if process.returncode != 0 or not lines:
                tail = log.read_text().strip().splitlines()[-5:] if log.exists() else []
                entry["error"] = f"exit code {process.returncode}: " + " | ".join(tail)
            else:
                entry.update(json.loads(lines[-1]))
            results[index] = entry
            del running[cpu]
            free.append(cpu)
            if verbose:
                print(_one_line(entry), flush=True)
    return results


def _one_line(entry: dict[str, Any]) -> str:
    """:param entry: a finished run
    :return: one line about it"""
    head = f"{entry['env']} {entry['method']} seed {entry['seed']}:"
    if "error" in entry:
        return f"{head} FAILED ({entry['error']})"
    both = first_at(entry["points"], "both")
    last = entry["points"][-1]
    reached = "not reached" if both is None else f"0.9 at {both['interactions']:,} ({both['wall_s']:.1f} s training)"
    return (f"{head} {reached}; last {last['sampled']:.2f}/{last['greedy']:.2f} at {last['interactions']:,}; "
            f"compile {entry['compile_s']:.1f} s, process {entry['process_s']:.1f} s")  # fmt: skip


# ---------------------------------------------------------------------------------------------------------------------
# summary
# ---------------------------------------------------------------------------------------------------------------------


def _median(values: Sequence[float | None]) -> float | None:
    """:return: the median, a run that never reached counted as infinite (None where that is the median)"""
    finite = sorted(float("inf") if v is None else float(v) for v in values)
    middle = statistics.median(finite) if finite else float("inf")
    return None if middle == float("inf") else middle


def summarize(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """:param results: :func:`run_jobs`'s output
    :return: one row per env and method: seeds run and reached, median interactions and training wall time to 0.9
        (sampled, greedy, both), median compile and process time, and NAVIX-PPO's training wall time to 0.9 (both) over
        DirPG's"""
    rows: list[dict[str, Any]] = []
    keys = list(dict.fromkeys((r["env"], r["method"]) for r in results))
    for env, method in keys:
        runs = [r for r in results if (r["env"], r["method"]) == (env, method) and "error" not in r]
        failed = sum(1 for r in results if (r["env"], r["method"]) == (env, method) and "error" in r)
        row: dict[str, Any] = {"env": env, "method": method, "seeds": len(runs), "failed": failed}
        for mode in ("sampled", "greedy", "both"):
            firsts = [first_at(r["points"], mode) for r in runs]
            row[f"{mode}_interactions"] = _median([None if f is None else f["interactions"] for f in firsts])
            row[f"{mode}_wall_s"] = _median([None if f is None else f["wall_s"] for f in firsts])
        row["reached"] = sum(first_at(r["points"], "both") is not None for r in runs)
        row["end"] = [[r["points"][-1]["interactions"], r["points"][-1]["sampled"], r["points"][-1]["greedy"]] for r in runs]
        for key in ("compile_s", "process_s"):
            row[key] = statistics.median(r[key] for r in runs) if runs else None
        rows.append(row)
    for row in rows:
        dirpg = next((r for r in rows if r["env"] == row["env"] and r["method"] == "dirpg"), None)
        mine, theirs = row["both_wall_s"], None if dirpg is None else dirpg["both_wall_s"]
        row["wall_over_dirpg"] = None if mine is None or not theirs else mine / theirs
    return rows


def table(rows: Sequence[dict[str, Any]]) -> str:
    """:param rows: :func:`summarize`'s output
    :return: a Markdown table"""

    def count(value: float | None) -> str:
        return "not reached" if value is None else f"{value / 1000:,.1f}k"

    def seconds(value: float | None) -> str:
        return "–" if value is None else f"{value:.1f} s"

    lines = ["| env | method | seeds (reached) | to 0.9 sampled | greedy | both | training wall to 0.9 (both) | compile | "
             "whole process | wall / DirPG's |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for row in rows:
        ratio = "–" if row["wall_over_dirpg"] is None else f"{row['wall_over_dirpg']:.2f}"
        lines.append(
            f"| {row['env']} | {row['method']} | {row['seeds']} ({row['reached']}) | {count(row['sampled_interactions'])} | "
            f"{count(row['greedy_interactions'])} | {count(row['both_interactions'])} | {seconds(row['both_wall_s'])} | "
            f"{seconds(row['compile_s'])} | {seconds(row['process_s'])} | {ratio} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, print its table and write its JSON.

    :param argv: command-line arguments (default: ``sys.argv``)
    :return: the runs, the summary rows and the settings
    """
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=list(DEFAULT_ENVS), choices=sorted(ENVS), help="benchmark envs")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS, help="methods to train")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="training seeds")
    parser.add_argument("--maps", type=int, default=HELD_OUT[1], help="held-out maps per evaluation")
    parser.add_argument(
        "--navix-python",
        default=sys.executable,
        help="the Python of the virtual environment with the [navix] extra (default: this one)",
    )
    parser.add_argument(
        "--cores",
        type=int,
        default=None,
        help="runs at a time, one pinned to each core (default: every core this process may use)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny budgets, one seed and 20 maps: checks the pipeline in a minute or two, measures nothing",
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "navix_ppo.json", help="the JSON results file")
    parser.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    parser.add_argument("spec", nargs="?", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:  # one run, in this process: its result is the last line printed
        result = WORKERS[args.worker](json.loads(args.spec))
        print(json.dumps(result), flush=True)
        return result

    if args.maps < 1:
        parser.error(f"--maps must be positive, got {args.maps}")
    if any(method != "dirpg" for method in args.methods):
        problem = check_navix(args.navix_python)
        if problem is not None:
            parser.exit(2, f"{problem}\n")
    seeds = args.seeds[:1] if args.quick else args.seeds
    jobs = make_jobs(args.envs, args.methods, seeds, quick=args.quick, maps=args.maps)
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    cores: list[int | None] = list(affinity[: args.cores] if args.cores else affinity) or [None]
    print(f"{len(jobs)} runs on {len(cores)} core(s): {', '.join(args.envs)}; {', '.join(args.methods)}; seeds "
          f"{' '.join(map(str, seeds))}", flush=True)  # fmt: skip
    started = time.perf_counter()
    logs = Path(tempfile.mkdtemp(prefix="navix_ppo_logs_"))
    results = run_jobs(jobs, args.navix_python, cores, logs)
    rows = summarize(results)
    print()
    print(table(rows))
    versions: dict[str, str] = {}
    for result in results:
        versions.update(result.get("versions", {}))
    print("\nversions: " + ", ".join(f"{name} {value}" for name, value in sorted(versions.items())))
    print(f"logs: {logs}; whole benchmark {time.perf_counter() - started:.0f} s")
    summary = {
        "envs": {name: asdict(ENVS[name]) for name in args.envs}, "methods": list(args.methods), "seeds": list(seeds),
        "quick": args.quick, "level": LEVEL, "held_out": [HELD_OUT[0], QUICK["maps"] if args.quick else args.maps],
        "ppo_settings": PPO_SETTINGS, "published_budget": PUBLISHED_BUDGET, "cores": len(cores), "versions": versions,
        "rows": rows, "runs": results, "wall_s": time.perf_counter() - started,
    }  # fmt: skip
    from experiments.common import write_json

    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, summary, announce=True)
    return summary


if __name__ == "__main__":
    main()
