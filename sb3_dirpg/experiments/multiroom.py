"""``python -m sb3_dirpg.experiments.multiroom``: learning MultiRoom-N6 at the paper's scale, DirPG against REINFORCE.

Every method sees the same maps budget: ``MiniGrid-MultiRoom-N6-v0`` with ``max_steps=100``, the authors' shaped
reward and image+direction observations, the paper's CNN (``net_arch=[]``), γ = 0.999, Adam 1e-3, one map per update
and at most 3000 interactions per map (DirPG: ``a_opt`` + a search budget of 2900; REINFORCE/CEM: 30 rollouts).
Every ``--eval-every`` interactions the greedy policy (deterministic, no search) plays the 200 held-out maps (seeds
10000-10199, 100 steps); success means reaching the goal (``info["is_success"]``), not a return threshold: on N6 the
five doors alone give 150.

Each (method, seed) is one process with one torch thread; ``--procs`` of them run at once. A run saves its model and
its curve after every evaluation in ``--runs-dir``, so ``--resume`` carries on where it stopped. At the end (or with
``--report``) the curves are gathered into ``multiroom_n6.json`` (per method and seed, the list of
``[interactions, greedy_success, sampled_return]``) and ``multiroom_n6.png`` (success against interactions, mean and
min-max over seeds). ``sampled_return`` is ``rollout/ep_rew_mean``: the return of the on-policy samples (``a_opt``
for DirPG, the rollouts for the baselines) over the last 100 of them.

Default: the shipped DirPG setting and action-level REINFORCE, 3 seeds, 3M interactions each. On the 2-core VM of the
results page a REINFORCE run took about 20 minutes and a DirPG run about an hour (several runs shared the cores; DirPG
searches one map per update, so its per-map overhead is not amortised over a batch). Other methods (``--methods``)
are the variants measured while choosing the shipped setting.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from sb3_dirpg.experiments.common import DEFAULT_OUT, mean_and_spread, plot_band

ENV_ID = "MiniGrid-MultiRoom-N6-v0"
MAX_STEPS = 100
GAMMA = 0.999
HELD_OUT_SEEDS = range(10_000, 10_200)
POLICY_KWARGS = dict(net_arch=[], normalize_images=False)  # features_extractor_class=MiniGridCNN is added on use
COMMON = dict(learning_rate=1e-3, batch_episodes=1, gamma=GAMMA)
DIRPG_PAPER = dict(epsilon=1.0, search_budget=2900, priority="astar", alpha=0.2, prune=True, early_stop=False)

# method name -> (algorithm, constructor arguments, MultiRoomBound arguments or None)
METHODS: dict[str, tuple[str, dict[str, Any], dict[str, Any] | None]] = {
    # the shipped setting (zoo_hyperparams/dirpg.yml): the authors' horizon-free bound, best-first, break on goal
    "dirpg": ("DirPG", dict(DIRPG_PAPER, stop_on_success=True), {}),
    "dirpg-df-stop": ("DirPG", dict(DIRPG_PAPER, depth_first=True, stop_on_success=True), {}),
    # the setting shipped before: the bound that drops terms beyond the steps left; it never completes a 2nd trajectory
    "dirpg-paper-tight": ("DirPG", dict(DIRPG_PAPER), dict(step_limit=True)),
    # the authors' bound (no step limit), best-first
    "dirpg-free": ("DirPG", dict(DIRPG_PAPER), {}),
    "dirpg-df": ("DirPG", dict(DIRPG_PAPER, depth_first=True), {}),
    "dirpg-df-early": ("DirPG", dict(DIRPG_PAPER, depth_first=True, stop_on_success=True, early_stop=True), {}),
    "dirpg-gumbel-stop": ("DirPG", dict(DIRPG_PAPER, priority="gumbel", alpha=0.0, stop_on_success=True), None),
    "reinforce": ("Reinforce", dict(n_rollouts=30, variant="action"), None),
    "cem": ("CEM", dict(n_rollouts=30, n_elite=2), None),
}
DEFAULT_METHODS = ("dirpg", "reinforce")


def make_env() -> Any:
    """:return: MultiRoom-N6 with 100 steps, the shaped reward and image+direction observations"""
    from sb3_dirpg.envs import make_minigrid_env

    return make_minigrid_env(ENV_ID, max_steps=MAX_STEPS)


def make_model(method: str, seed: int) -> Any:
    """Build one learner.

    :param method: a key of :data:`METHODS`
    :param seed: the run's seed
    :return: the model (device ``cpu``)
    """
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv

    from sb3_dirpg import DirPG
    from sb3_dirpg.baselines import CEM, Reinforce
    from sb3_dirpg.envs.minigrid import MiniGridCNN, MultiRoomBound

    algo, kwargs, bound = METHODS[method]
    kwargs = dict(COMMON, **kwargs)
    if bound is not None:
        kwargs["heuristic"] = MultiRoomBound(GAMMA, **bound)
    venv = make_vec_env(make_env, n_envs=1, vec_env_cls=DummyVecEnv)
    policy_kwargs = dict(POLICY_KWARGS, features_extractor_class=MiniGridCNN)
    cls = {"DirPG": DirPG, "Reinforce": Reinforce, "CEM": CEM}[algo]
    return cls("MultiInputPolicy", venv, seed=seed, device="cpu", policy_kwargs=policy_kwargs, **kwargs)


def greedy_success(model: Any, envs: list[Any], seeds: Sequence[int] = HELD_OUT_SEEDS) -> float:
    """Play the deterministic policy (no search) on held-out maps, all maps stepped together.

    :param model: a model with ``policy_logits(obs, masks)``
    :param envs: one env per map (reused between evaluations)
    :param seeds: the maps' seeds
    :return: the fraction of maps on which the agent reaches the goal within the env's step limit
    """
    obs = [env.reset(seed=int(seed))[0] for env, seed in zip(envs, seeds)]
    live = list(range(len(envs)))
    success = np.zeros(len(envs), dtype=bool)
    n_actions = int(envs[0].action_space.n)
    while live:
        logits = model.policy_logits([obs[i] for i in live], np.ones((len(live), n_actions), dtype=bool))
        still = []
        for i, action in zip(live, np.argmax(logits, axis=1).tolist()):
            obs[i], _, terminated, truncated, info = envs[i].step(action)
            if terminated or truncated:
                success[i] = bool(info.get("is_success", False))
            else:
                still.append(i)
        live = still
    return float(success.mean())


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


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
    :return: the run's record (``points``: ``[interactions, greedy_success, sampled_return]``)
    """
    import torch as th

    from sb3_dirpg import DirPG
    from sb3_dirpg.baselines import CEM, Reinforce

    th.set_num_threads(1)
    folder = runs_dir / f"{method}-s{seed}"
    folder.mkdir(parents=True, exist_ok=True)
    record_path, model_path = folder / "curve.json", folder / "model.zip"
    envs = [make_env() for _ in HELD_OUT_SEEDS[:eval_maps]]
    if resume and record_path.exists() and model_path.exists():
        record = json.loads(record_path.read_text())
        cls = {"DirPG": DirPG, "Reinforce": Reinforce, "CEM": CEM}[METHODS[method][0]]
        model = cls.load(model_path, env=make_model(method, seed).get_env(), device="cpu")
        print(f"{method} seed {seed}: resumed at {model.num_timesteps}", flush=True)
    else:
        model = make_model(method, seed)
        record = {"method": method, "seed": seed, "points": [[0, greedy_success(model, envs), 0.0]], "wall_s": 0.0}
    while model.num_timesteps < interactions:
        started = time.perf_counter()
        target = min(interactions, (model.num_timesteps // eval_every + 1) * eval_every)
        model.learn(target - model.num_timesteps, reset_num_timesteps=False)
        sampled = float(np.mean([ep["r"] for ep in model.ep_info_buffer])) if model.ep_info_buffer else 0.0
        record["points"].append([int(model.num_timesteps), greedy_success(model, envs), round(sampled, 2)])
        record["wall_s"] = round(record["wall_s"] + time.perf_counter() - started, 1)
        model.save(model_path)
        _write_json(record_path, record)
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
    import torch as th

    th.set_num_threads(1)
    out = {}
    for method in methods:
        if METHODS[method][0] != "DirPG":
            continue
        episodes = make_model(method, seed).search(list(range(100, 100 + n_maps))).episodes
        out[method] = {key: float(np.mean([getattr(ep, attr) for ep in episodes]))
                       for key, attr in (("trajectories", "trajectories"), ("improved", "improved"),
                                         ("return_opt", "return_opt"), ("return_dir", "return_dir"),
                                         ("interactions", "interactions"))}  # fmt: skip
        print(f"{method:18s} " + "  ".join(f"{k} {v:7.2f}" for k, v in out[method].items()), flush=True)
    return out


def interactions_to(points: Sequence[Sequence[float]], level: float) -> int | None:
    """:param points: ``[interactions, success, return]`` in order
    :param level: a success level
    :return: the first interaction count at which greedy success reached ``level``, or None"""
    for t, success, _ in points:
        if success >= level:
            return int(t)
    return None


def report(runs_dir: Path, out: Path, methods: Sequence[str]) -> dict[str, Any]:
    """Gather the run folders into ``multiroom_n6.json`` and ``multiroom_n6.png``.

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
            seed: {"to_0.5": interactions_to(p, 0.5), "to_0.9": interactions_to(p, 0.9), "final": p[-1][1],
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
    figure = plot(runs)
    figure.savefig(out / "multiroom_n6.png", dpi=90, bbox_inches="tight")
    table = markdown_table(summary)
    (out / "multiroom_n6_table.md").write_text(table)
    print(table)
    print(f"wrote {path}, {out / 'multiroom_n6.png'} and {out / 'multiroom_n6_table.md'}")
    return data


def markdown_table(summary: dict[str, Any]) -> str:
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


def plot(runs: dict[str, dict[str, list]]) -> Any:
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


def build_parser() -> argparse.ArgumentParser:
    """:return: the command line"""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--methods", nargs="+", default=list(DEFAULT_METHODS), choices=sorted(METHODS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="run seeds")
    parser.add_argument("--interactions", type=float, default=3e6, help="interactions per run")
    parser.add_argument("--eval-every", dest="eval_every", type=float, default=1e5, help="interactions between evaluations")
    parser.add_argument("--eval-maps", dest="eval_maps", type=int, default=200, help="held-out maps evaluated (at most 200)")
    parser.add_argument("--procs", type=int, default=2, help="runs in parallel (one process and one torch thread each)")
    parser.add_argument("--runs-dir", dest="runs_dir", type=Path, default=Path("runs") / "multiroom")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder of multiroom_n6.json and .png")
    parser.add_argument("--resume", action="store_true", help="carry on from the runs' checkpoints")
    parser.add_argument("--report", action="store_true", help="only gather the existing runs into the JSON and figure")
    parser.add_argument("--probe", action="store_true",
                        help="only search 8 maps with an untrained policy per DirPG method and print what the search did")
    return parser


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run (or resume) every (method, seed) and write the report.

    :param argv: command line (None: ``sys.argv``)
    :return: the JSON data
    """
    args = build_parser().parse_args(argv)
    if args.procs < 1:
        raise ValueError(f"--procs must be at least 1, got {args.procs}")
    if args.probe:
        return probe_search(args.methods)
    if not args.report:
        jobs = [(m, s, int(args.interactions), int(args.eval_every), args.runs_dir, args.resume, args.eval_maps)
                for s in args.seeds for m in args.methods]  # fmt: skip
        if args.procs == 1:  # in this process: stopping it stops the run
            for job in jobs:
                run_one(*job)
        else:
            with ProcessPoolExecutor(max_workers=args.procs, mp_context=get_context("spawn")) as pool:
                for future in [pool.submit(run_one, *job) for job in jobs]:
                    future.result()
    return report(args.runs_dir, args.out, args.methods)


if __name__ == "__main__":
    main()
