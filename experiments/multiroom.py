"""``python -m experiments.multiroom``: DirPG against REINFORCE (and CEM) on MiniGrid's MultiRoom.

Learning at scale, with the learners, the greedy evaluation and the definition of success of
:mod:`~experiments.multiroom_setup` (the paper's figure 3 is :mod:`~experiments.multiroom_figure`).
Every method sees the same maps budget: ``MiniGrid-MultiRoom-N6-v0`` with
``max_steps=100``, the authors' shaped reward and image+direction observations, the paper's CNN (``net_arch=[]``),
γ = 0.999, Adam 1e-3, one map per update and at most 3000 interactions per map (DirPG: ``a_opt`` + a search budget of
2900; REINFORCE/CEM: 30 rollouts). Every ``--eval-every`` interactions the greedy policy plays the 200 held-out maps
(seeds 10000-10199, 100 steps).

Each (method, seed) is one process with one torch thread; ``--procs`` of them run at once. A run saves its model and
its curve after every evaluation in ``--runs-dir``, so ``--resume`` carries on where it stopped. At the end (or with
``--report``) the curves are gathered into ``multiroom_n6.json`` (per method and seed, the list of
``[interactions, greedy_success, sampled_return]``), ``multiroom_n6.png`` (success against interactions, mean and
min-max over seeds) and ``multiroom_n6_table.md``. ``sampled_return`` is ``rollout/ep_rew_mean``: the return of the
on-policy samples (``a_opt`` for DirPG, the rollouts for the baselines) over the last 100 of them. ``--probe`` only
searches 8 maps with an untrained policy per DirPG method and prints what the search did.

Default: the paper's DirPG setting (the zoo's N6 entry until N6 took the one MiniGrid setting) and action-level
REINFORCE, 3 seeds, 3M interactions each. On the 2-core VM of the results page a REINFORCE run took about 20 minutes and
a DirPG run about an hour (several runs shared the cores; DirPG searches one map per update, so its per-map overhead is
not amortised over a batch). Other methods (``--methods``) are the variants measured while choosing that setting.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np
import torch as th

from experiments.common import default_out, mean_and_spread, nonnegative_int, plot_band, positive_int, write_json
from experiments.multiroom_setup import (
    ALGORITHMS,
    COMMON,
    DIRPG_PAPER,
    DIRPG_PAPER_SHIPPED,
    ENV_ID,
    GAMMA,
    HELD_OUT_SEEDS,
    MAX_STEPS,
    EpisodeRecorder,
    Method,
    greedy_actions,
    greedy_eval,
    make_env,
    make_model,
)  # fmt: skip

SWEEP_ALPHAS = (0.0, 0.1, 0.2, 0.3, 1.0)  # the paper's MiniGrid figure; sweep-a0.2 is DIRPG_PAPER_SHIPPED
FROZEN_AT = 1_200_000  # the paper freezes its model here for the quality/quantity search; runs keep a copy

#: the paper's priority, each popped region followed to the end of a trajectory
DEPTH_FIRST = {"astar": {"alpha": 0.2, "depth_first": True}}
# the learning runs' methods, by name
METHODS: dict[str, Method] = {
    # the paper's setting: the authors' horizon-free bound, best-first, break on goal
    "dirpg": ("DirPG", dict(DIRPG_PAPER, stop="success"), {}),
    "dirpg-df-stop": ("DirPG", dict(DIRPG_PAPER, priority=DEPTH_FIRST, stop="success"), {}),
    # the paper's setting with up to 16 maps searched ahead and committed one at a time: the same learning, faster
    "dirpg-lookahead16": ("DirPG", dict(DIRPG_PAPER_SHIPPED), {}),
    # the setting shipped before: the bound that drops terms beyond the steps left; it never completes a 2nd trajectory
    "dirpg-paper-tight": ("DirPG", dict(DIRPG_PAPER), dict(step_limit=True)),
    # the authors' bound (no step limit), best-first
    "dirpg-free": ("DirPG", dict(DIRPG_PAPER), {}),
    "dirpg-df": ("DirPG", dict(DIRPG_PAPER, priority=DEPTH_FIRST), {}),
    "dirpg-df-early": ("DirPG", dict(DIRPG_PAPER, priority=DEPTH_FIRST, stop={"success": {"improvement": True}}), {}),
    "dirpg-gumbel-stop": ("DirPG", dict(DIRPG_PAPER, priority="gumbel", stop="success"), None),
    **{  # the paper's priority sweep (issue 22) in DIRPG_PAPER_SHIPPED: A* with each alpha, and the Gumbel priority
        f"sweep-a{alpha:g}": ("DirPG", dict(DIRPG_PAPER, stop="success", lookahead=16, priority={"astar": {"alpha": alpha}}),
                              {})
        for alpha in SWEEP_ALPHAS
    },
    "sweep-gumbel": ("DirPG", dict(DIRPG_PAPER, stop="success", lookahead=16, priority="gumbel"), None),
    "reinforce": ("Reinforce", dict(n_rollouts=30, variant="action"), None),
    "cem": ("CEM", dict(n_rollouts=30, n_elite=2), None),
}
DEFAULT_METHODS = ("dirpg", "reinforce")


# -- learning at scale -------------------------------------------------------------------------------------------


def run_one(
    method: str, seed: int, interactions: int, eval_every: int, runs_dir: Path, resume: bool, eval_maps: int = 200
) -> dict[str, Any]:
    """Train one (method, seed) to ``interactions``, evaluating and checkpointing every ``eval_every``.

    :param method: a key of :data:`METHODS`
    :param seed: the run's seed
    :param interactions: interactions to train for
    :param eval_every: interactions between evaluations (and checkpoints)
    :param runs_dir: folder of the run folders
    :param resume: carry on from the run's checkpoint if there is one
    :param eval_maps: how many of the held-out maps to evaluate on
    :return: the run's record (``wall_s``: the seconds of training and evaluations, ``learn_s``: of training alone;
        ``points``: ``[interactions, greedy_success, sampled_return]``; ``search``, for DirPG:
        ``[interactions, mean D(a_opt), mean D(a_dir), share of maps improved, sampled success]`` over each interval)
    """
    th.set_num_threads(1)
    folder = runs_dir / f"{method}-s{seed}"
    folder.mkdir(parents=True, exist_ok=True)
    record_path, model_path = folder / "curve.json", folder / "model.zip"
    recorder = EpisodeRecorder()
    seeds = HELD_OUT_SEEDS[:eval_maps]
    envs = [make_env() for _ in seeds]
    if resume and record_path.exists() and model_path.exists():
        record = json.loads(record_path.read_text())
        model = ALGORITHMS[METHODS[method][0]].load(model_path, env=make_model(METHODS[method], seed).get_env(), device="cpu")
        print(f"{method} seed {seed}: resumed at {model.num_timesteps}", flush=True)
    else:
        model = make_model(METHODS[method], seed)
        first = greedy_eval(greedy_actions(model), envs, seeds)["success"]
        record = {"method": method, "seed": seed, "points": [[0, first, 0.0]], "wall_s": 0.0, "learn_s": 0.0}
    while model.num_timesteps < interactions:
        started = time.perf_counter()
        target = min(interactions, (model.num_timesteps // eval_every + 1) * eval_every)
        recorder.log, before = {key: [] for key in recorder.log}, model.num_timesteps
        model.learn(target - model.num_timesteps, callback=recorder, reset_num_timesteps=False)
        record["learn_s"] = round(record.get("learn_s", 0.0) + time.perf_counter() - started, 1)
        sampled = float(np.mean([ep["r"] for ep in model.ep_info_buffer])) if model.ep_info_buffer else 0.0
        success = greedy_eval(greedy_actions(model), envs, seeds)["success"]
        record["points"].append([int(model.num_timesteps), success, round(sampled, 2)])
        log = recorder.log
        if log["d_t"]:
            record.setdefault("search", []).append([int(model.num_timesteps)] + [
                round(float(np.mean(log[key])), 3) for key in ("d_opt", "d_dir", "improved", "success")])  # fmt: skip
        record["wall_s"] = round(record["wall_s"] + time.perf_counter() - started, 1)
        model.save(model_path)
        if before < FROZEN_AT <= model.num_timesteps:
            model.save(folder / f"model_{FROZEN_AT}.zip")
        write_json(record_path, record)
        point = record["points"][-1]
        print(f"{method} seed {seed}: {point[0]:>9d} interactions, greedy success {point[1]:.3f}, sampled return "
              f"{point[2]:7.1f} ({record['wall_s']:.0f} s)", flush=True)  # fmt: skip
    return record


def probe_search(methods: Sequence[str], n_maps: int = 8, seed: int = 0) -> dict[str, dict[str, float]]:
    """What each DirPG setting's search does with an untrained policy (no learning): trajectories completed per map,
    the fraction of maps where ``a_dir`` improves on ``a_opt``, their returns, and the interactions spent.

    :param methods: keys of :data:`METHODS` (non-DirPG ones are skipped)
    :param n_maps: maps searched (seeds 100, 101, ...)
    :param seed: seed of the policy initialisation and the search noise
    :return: per method, the means over the maps
    """
    th.set_num_threads(1)
    out = {}
    for method in methods:
        if METHODS[method][0] != "DirPG":
            continue
        episodes = make_model(METHODS[method], seed).search(list(range(100, 100 + n_maps))).episodes
        out[method] = {key: float(np.mean([getattr(ep, attr) for ep in episodes]))
                       for key, attr in (("trajectories", "trajectories"), ("improved", "improved"),
                                         ("return_opt", "return_opt"), ("return_dir", "return_dir"),
                                         ("interactions", "interactions"))}  # fmt: skip
        print(f"{method:18s} " + "  ".join(f"{k} {v:7.2f}" for k, v in out[method].items()), flush=True)
    return out


def greedy_interactions_to(points: Sequence[Sequence[float]], level: float) -> int | None:
    """:param points: ``[interactions, success, return]`` in order
    :param level: a success level
    :return: the first interaction count at which greedy success reached ``level``, or None"""
    for t, success, _ in points:
        if success >= level:
            return int(t)
    return None


def report_learning(runs_dir: Path, out: Path, methods: Sequence[str]) -> dict[str, Any]:
    """Gather the run folders into ``multiroom_n6.json``, ``multiroom_n6.png`` and ``multiroom_n6_table.md``.

    :param runs_dir: folder of the run folders
    :param out: output folder
    :param methods: methods to include (in this order)
    :return: the JSON data
    """
    runs: dict[str, dict[str, list]] = {}
    for path in sorted(runs_dir.glob("*/curve.json")):
        record = json.loads(path.read_text())
        if record["method"] in methods:
            runs.setdefault(record["method"], {})[str(record["seed"])] = record["points"]
    runs = {method: dict(sorted(runs[method].items(), key=lambda kv: int(kv[0]))) for method in methods if method in runs}
    summary: dict[str, Any] = {}
    for method, by_seed in runs.items():
        per_seed = {
            seed: {"to_0.5": greedy_interactions_to(p, 0.5), "to_0.9": greedy_interactions_to(p, 0.9), "final": p[-1][1],
                   "interactions": p[-1][0]}
            for seed, p in by_seed.items()
        }  # fmt: skip
        to_09 = [s["to_0.9"] if s["to_0.9"] is not None else float("inf") for s in per_seed.values()]
        median = float(np.median(to_09)) if to_09 else float("inf")
        summary[method] = {"per_seed": per_seed, "median_to_0.9": None if not np.isfinite(median) else median}
    settings = dict(env_id=ENV_ID, max_steps=MAX_STEPS, gamma=GAMMA, held_out_maps=f"{HELD_OUT_SEEDS[0]}-{HELD_OUT_SEEDS[-1]}",
                    methods={m: {"algo": METHODS[m][0], **METHODS[m][1], "bound": METHODS[m][2]} for m in runs},
                    common=COMMON)  # fmt: skip
    data = {"settings": settings, "runs": runs, "summary": summary}
    out.mkdir(parents=True, exist_ok=True)
    path = out / "multiroom_n6.json"
    path.write_text(json.dumps(data, indent=1))
    figure = plot_learning(runs)
    figure.savefig(out / "multiroom_n6.png", dpi=90, bbox_inches="tight")
    table = learning_table(summary)
    (out / "multiroom_n6_table.md").write_text(table)
    print(table)
    print(f"wrote {path}, {out / 'multiroom_n6.png'} and {out / 'multiroom_n6_table.md'}")
    return data


def learning_table(summary: dict[str, Any]) -> str:
    """:param summary: per method, ``per_seed`` figures and ``median_to_0.9``
    :return: a markdown table: interactions to 0.5 and 0.9 greedy success and the final success, per method and seed"""
    rows = ["| method | seed | to 0.5 | to 0.9 | final success | at |", "| --- | --- | --- | --- | --- | --- |"]
    for method, info in summary.items():
        for seed, s in info["per_seed"].items():
            cells = (method, seed, _m(s["to_0.5"]), _m(s["to_0.9"]), f"{s['final']:.3f}", _m(s["interactions"]))
            rows.append("| " + " | ".join(cells) + " |")
        rows.append(f"| **{method}** | median | | **{_m(info['median_to_0.9'])}** | | |")
    return "\n".join(rows) + "\n"


def _m(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e6:.2f}M"


def plot_learning(runs: dict[str, dict[str, list]]) -> Any:
    """:param runs: per method and seed, the ``[interactions, success, return]`` points
    :return: a figure of greedy success and sampled return against interactions (mean, min-max over seeds)"""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_s, ax_r) = plt.subplots(1, 2, figsize=(10, 3.6))
    for method, by_seed in runs.items():
        end = min(p[-1][0] for p in by_seed.values())
        grid = [q[0] for q in next(iter(by_seed.values())) if q[0] <= end]  # the evaluation points of one seed
        for ax, column in ((ax_s, 1), (ax_r, 2)):
            curves = [np.interp(grid, [q[0] for q in p], [q[column] for q in p]) for p in by_seed.values()]
            plot_band(ax, grid, mean_and_spread(curves, band="minmax"), f"{method} ({len(curves)} seeds)")
    ax_s.axhline(0.9, color="gray", linewidth=0.8, linestyle=":")
    ax_s.set(title="greedy success on 200 held-out N6 maps", xlabel="interactions", ylabel="success")
    ax_r.set(title="return of the on-policy samples", xlabel="interactions", ylabel="rollout/ep_rew_mean")
    ax_s.legend(fontsize=7)
    fig.tight_layout()
    return fig


def run_learning(args: argparse.Namespace) -> dict[str, Any]:
    """Run (or resume) every (method, seed) and write the report, or only probe the searches.

    :param args: parsed arguments
    :return: the JSON data of the report (with ``--probe``: what :func:`probe_search` returned)
    """
    methods = args.methods or list(DEFAULT_METHODS)
    procs = 2 if args.procs is None else args.procs
    if procs < 1:
        raise ValueError(f"--procs must be at least 1, got {procs}")
    if args.probe:
        return probe_search(methods)
    runs_dir = args.runs_dir or Path("runs") / "multiroom"
    if not args.report:
        interactions = 3_000_000 if args.interactions is None else args.interactions
        eval_every = 100_000 if args.eval_every is None else args.eval_every
        eval_maps = 200 if args.eval_maps is None else args.eval_maps
        jobs = [(m, s, interactions, eval_every, runs_dir, args.resume, eval_maps)
                for s in (args.seeds or [0, 1, 2]) for m in methods]  # fmt: skip
        if procs == 1:  # in this process: stopping it stops the run
            for job in jobs:
                run_one(*job)
        else:
            with ProcessPoolExecutor(max_workers=procs, mp_context=get_context("spawn")) as pool:
                for future in [pool.submit(run_one, *job) for job in jobs]:
                    future.result()
    return report_learning(runs_dir, args.out, methods)


# -- command line ------------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """:return: the command line of the learning runs"""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--methods", nargs="+", default=None, choices=sorted(METHODS),
                        help=f"default: {' '.join(DEFAULT_METHODS)}")  # fmt: skip
    parser.add_argument("--seeds", type=nonnegative_int, nargs="+", help="run seeds (default: 0 1 2)")
    parser.add_argument("--interactions", type=positive_int, default=None, help="interactions per run (default: 3e6)")
    parser.add_argument("--eval-every", dest="eval_every", type=positive_int, default=None,
                        help="interactions between evaluations (default: 1e5)")  # fmt: skip
    parser.add_argument("--eval-maps", dest="eval_maps", type=positive_int, default=None,
                        help="held-out maps of the greedy evaluation (default: 200, at most 200)")  # fmt: skip
    parser.add_argument("--procs", type=positive_int, default=None,
                        help="runs in parallel, one process and one torch thread each "
                        "(default: 2)")  # fmt: skip
    parser.add_argument("--runs-dir", dest="runs_dir", type=Path, default=None, help="default: runs/multiroom")
    parser.add_argument("--resume", action="store_true", help="carry on from the runs' checkpoints")
    parser.add_argument("--report", action="store_true", help="only gather the existing runs into the JSON and figure")
    parser.add_argument("--probe", action="store_true",
                        help="only search 8 maps with an untrained policy per DirPG method and print what the search did")
    parser.add_argument("--out", type=Path, default=default_out(),
                        help="folder of multiroom_n6.json, .png and _table.md (default: %(default)s)")  # fmt: skip
    return parser


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the learning runs.

    :param argv: command line (None: ``sys.argv``)
    :return: the JSON data written
    """
    return run_learning(build_parser().parse_args(argv))


if __name__ == "__main__":
    main()
