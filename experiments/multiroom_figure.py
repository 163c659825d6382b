"""``python -m experiments.multiroom_figure``: the paper's figure 3 on MiniGrid's MultiRoom, with the learners,
the greedy evaluation and the definition of success of :mod:`~experiments.multiroom_setup`.

**The paper's figure 3** (section 6, appendix D.3), in one process, written to ``minigrid.json`` and
``minigrid.png``. DirPG with the weighted-A* priority ``G + ε·(L + α·U)`` (``U`` =
:class:`~sb3_dirpg.envs.minigrid.MultiRoomBound`) for several α, against REINFORCE (trajectory- and action-level) and
the cross-entropy method, all spending the same number of simulator interactions per map: DirPG one trajectory for
``a_opt`` plus ``search_budget`` of search, the baselines ``n_rollouts`` trajectories of ``horizon`` steps. Outputs:

* (a) the on-policy return (of ``a_opt`` for DirPG, of the rollouts for the baselines) against interactions, and the
  same as a success rate; at the end the greedy policy is evaluated on held-out maps (seeds from
  :data:`HELD_OUT_SEED`);
* (b) ``D(a_dir)`` and ``D(a_opt)`` over training (one α);
* (c) quality vs quantity: a frozen, partly trained policy (the last model of one DirPG run) searches the same maps
  with each priority for the same budget, without early stop; histograms of the number of trajectories completed per
  map and of their returns.

Default (about 10 minutes on 2 cores): MultiRoom-N2-S4 (its own step limit is 40), 40-step trajectories, 400
interactions per map (DirPG: ``a_opt`` + 360 of search; baselines: 10 rollouts), 2 seeds, 60k interactions per run,
2 maps per update; the quality-vs-quantity searches run on 12 MultiRoom-N4-S5 maps (80-step trajectories, 2900
interactions of search; the policy trained on N2-S4 transfers, since it only sees the 7x7 view), because on N2-S4
every priority finds the best possible return within a few trajectories. ``--full``: MultiRoom-N6, 100-step
trajectories, 3000 interactions per map (100 + 2900 of search; 30 rollouts), 5 seeds, 9M interactions, one map per
update, quality vs quantity on 50 N6 maps, as in the paper.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from experiments.common import (
    default_out,
    mean_and_spread,
    nonnegative_int,
    plot_band,
    positive_int,
    save_results,
    scaled_settings,
    setup_run,
)
from experiments.multiroom_setup import (
    HELD_OUT_SEED,
    EpisodeRecorder,
    Method,
    greedy_actions,
    greedy_eval,
    make_env,
    make_model,
)  # fmt: skip
from sb3_dirpg import DirPG

FIGURE_ALPHAS = (0.0, 0.1, 0.3, 0.5, 1.0)


# -- the paper's figure 3 ----------------------------------------------------------------------------------------


def figure_method(name: str, settings: dict[str, Any]) -> Method:
    """A learner of the figure's settings.

    :param name: ``"dirpg-<alpha>"``, ``"reinforce-trajectory"``, ``"reinforce-action"`` or ``"cem"``
    :param settings: ``search_budget``, ``n_rollouts``, ``early_stop``
    :return: the method (DirPG with ε = 1, the A* priority and ``MultiRoomBound``)
    """
    if name.startswith("dirpg-"):
        alpha = float(name.split("-", 1)[1])
        kwargs = dict(epsilon=1.0, search_budget=settings["search_budget"], priority={"astar": {"alpha": alpha}},
                      stop="improvement" if settings["early_stop"] else "budget")  # fmt: skip
        return ("DirPG", kwargs, {})
    if name in ("reinforce-trajectory", "reinforce-action"):
        return ("Reinforce", dict(n_rollouts=settings["n_rollouts"], variant=name.split("-", 1)[1]), None)
    if name == "cem":
        return ("CEM", dict(n_rollouts=settings["n_rollouts"], n_elite=2), None)
    raise ValueError(f"unknown method {name!r}")


def figure_common(settings: dict[str, Any]) -> dict[str, Any]:
    """:param settings: ``learning_rate``, ``batch_episodes``, ``horizon``
    :return: the arguments every learner of the figure's settings shares (trajectories cut at ``horizon``, γ = 1)"""
    return dict(learning_rate=settings["learning_rate"], batch_episodes=settings["batch_episodes"],
                max_episode_steps=settings["horizon"], gamma=1.0)  # fmt: skip


def binned(t: Sequence[float], values: Sequence[float], edges: np.ndarray) -> list[float]:
    """Mean of ``values`` whose time falls in each bin ``(edges[i], edges[i+1]]``; empty bins repeat the previous mean.

    :param t: interaction counts of the values
    :param values: the values
    :param edges: bin edges (increasing)
    :return: one mean per bin
    """
    t_arr, v_arr = np.asarray(t, dtype=np.float64), np.asarray(values, dtype=np.float64)
    out: list[float] = []
    last = float(v_arr[0]) if len(v_arr) else 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        inside = v_arr[(t_arr > lo) & (t_arr <= hi)]
        if len(inside):
            last = float(inside.mean())
        out.append(last)
    return out


def quality_vs_quantity(
    model: DirPG,
    priorities: Sequence[tuple[str, float]],
    n_maps: int,
    env_id: str,
    horizon: int,
    budget: int,
    batch: int = 4,
    seed: int = 0,
) -> dict[str, dict[str, list[float]]]:
    """Search the same held-out maps with a frozen policy and each priority, all for the same budget: no early stop,
    no stop on success and no pruning, so that every search spends its whole budget (pruning would end the search once
    ``a_dir`` is provably optimal, which on small maps happens after a couple of trajectories).

    :param model: a (partly) trained DirPG model; its env is replaced by ``env_id`` (same observation space)
    :param priorities: ``(priority, alpha)`` pairs, e.g. ``("gumbel", 0.0)``, ``("astar", 0.3)``
    :param n_maps: maps searched per priority
    :param env_id: the MiniGrid id of the maps
    :param horizon: trajectory length
    :param budget: interactions of the ``a_dir`` search per map
    :param batch: maps searched in lockstep
    :param seed: seed of the search noise (the same for every priority)
    :return: per priority label: ``trajectories`` (completed per map, ``a_opt`` included), ``returns`` (of every
        completed trajectory), ``best_return`` (of ``a_dir`` per map)
    """
    out: dict[str, dict[str, list[float]]] = {}
    seeds = [HELD_OUT_SEED + 10_000 + i for i in range(n_maps)]
    model.set_env(make_vec_env(partial(make_env, env_id, None), n_envs=1, vec_env_cls=DummyVecEnv))
    for priority, alpha in priorities:
        label = "gumbel" if priority == "gumbel" else f"astar α={alpha:g}"
        config = model.search_config(
            priority=priority, alpha=alpha, stop="budget", prune=False,
            record_trajectories=True, budget=budget, horizon=horizon,
        )  # fmt: skip
        rng = np.random.default_rng(seed)
        counts, returns, best = [], [], []
        for start in range(0, n_maps, batch):
            result = model.search(seeds[start : start + batch], config=config, rng=rng)
            for ep in result.episodes:
                counts.append(float(ep.trajectories))
                returns.extend(float(tr.ret) for tr in ep.recorded)
                best.append(float(ep.return_dir))
        out[label] = {"trajectories": counts, "returns": returns, "best_return": best}
    return out


def figure_settings(args: argparse.Namespace) -> dict[str, Any]:
    """:param args: parsed arguments
    :return: the settings of the figure's run (paper scale with ``--full``, else the quick default, then explicit
        overrides)"""
    full = dict(env_id="MiniGrid-MultiRoom-N6-v0", horizon=100, search_budget=2900, n_rollouts=30, batch_episodes=1,
                interactions=9_000_000, eval_maps=200, hist_maps=50, bins=60,
                hist_env="MiniGrid-MultiRoom-N6-v0", hist_horizon=100, hist_budget=2900)  # fmt: skip
    quick = dict(env_id="MiniGrid-MultiRoom-N2-S4-v0", horizon=40, search_budget=360, n_rollouts=10, batch_episodes=2,
                 interactions=60_000, eval_maps=50, hist_maps=12, bins=12,
                 hist_env="MiniGrid-MultiRoom-N4-S5-v0", hist_horizon=80, hist_budget=2900)  # fmt: skip
    return dict(scaled_settings(args, quick, full), learning_rate=1e-3, early_stop=False)


def run_figure(args: argparse.Namespace) -> dict[str, Any]:
    """Train every method on every seed, evaluate, search with the frozen policy, and write ``minigrid.json`` and
    ``minigrid.png``.

    :param args: parsed arguments
    :return: the results written to JSON
    """
    args.threads = 1 if args.threads is None else args.threads
    started = setup_run(args)
    settings = figure_settings(args)
    seeds = args.seeds if args.seeds is not None else list(range(5 if args.full else 2))
    alphas = list(FIGURE_ALPHAS) if args.alphas is None else args.alphas
    d_alpha = 0.3 if args.d_alpha is None else args.d_alpha
    names = [f"dirpg-{a:g}" for a in alphas]
    if not args.no_baselines:
        names += ["reinforce-trajectory", "reinforce-action", "cem"]
    d_method = f"dirpg-{d_alpha:g}" if f"dirpg-{d_alpha:g}" in names else names[0]
    edges = np.linspace(0, settings["interactions"], settings["bins"] + 1)
    x = edges[1:].tolist()
    fields = ("ret", "success", "d_opt", "d_dir", "improved", "greedy_return", "greedy_success", "wall_s")
    runs: dict[str, dict[str, list]] = {m: {k: [] for k in fields} for m in names}
    frozen: DirPG | None = None
    common = figure_common(settings)
    eval_seeds = [HELD_OUT_SEED + i for i in range(settings["eval_maps"])]
    eval_envs = [make_env(settings["env_id"], None) for _ in eval_seeds]
    for seed in seeds:
        for name in names:
            run_start = time.perf_counter()
            model = make_model(figure_method(name, settings), seed, settings["env_id"], None, common)
            recorder = EpisodeRecorder()
            model.learn(settings["interactions"], callback=recorder)
            log = recorder.log
            run = runs[name]
            run["ret"].append(binned(log["t"], log["ret"], edges))
            run["success"].append(binned(log["t"], log["success"], edges))
            if log["d_t"]:
                run["d_opt"].append(binned(log["d_t"], log["d_opt"], edges))
                run["d_dir"].append(binned(log["d_t"], log["d_dir"], edges))
                run["improved"].append(binned(log["d_t"], log["improved"], edges))
            greedy = greedy_eval(greedy_actions(model), eval_envs, eval_seeds, settings["horizon"])
            run["greedy_return"].append(greedy["return"])
            run["greedy_success"].append(greedy["success"])
            run["wall_s"].append(round(time.perf_counter() - run_start, 1))
            print(f"seed {seed} {name:22s} final return {run['ret'][-1][-1]:7.1f}  greedy return {greedy['return']:6.1f} "
                  f"success {greedy['success']:.2f}  ({run['wall_s'][-1]} s)", flush=True)  # fmt: skip
            if name == d_method and seed == seeds[0]:
                frozen = model
    priorities = [("gumbel", 0.0)] + [("astar", a) for a in alphas]
    hist = {}
    if frozen is not None:
        hist = quality_vs_quantity(frozen, priorities, settings["hist_maps"], settings["hist_env"],
                                   settings["hist_horizon"], settings["hist_budget"])  # fmt: skip

    curves = {m: {k: mean_and_spread(r[k]) for k in ("ret", "success", "d_opt", "d_dir", "improved") if r[k]}
              for m, r in runs.items()}  # fmt: skip
    summary = {
        m: {
            "final_return": float(np.mean([c[-1] for c in r["ret"]])),
            "mean_return": float(np.mean(r["ret"])),
            "greedy_return": float(np.mean(r["greedy_return"])),
            "greedy_success": float(np.mean(r["greedy_success"])),
            "greedy_success_per_seed": r["greedy_success"],
            "wall_s_per_run": r["wall_s"],
        }
        for m, r in runs.items()
    }
    hist_summary = {k: {"mean_trajectories": float(np.mean(v["trajectories"])),
                        "mean_return": float(np.mean(v["returns"])) if v["returns"] else float("nan"),
                        "mean_best_return": float(np.mean(v["best_return"]))} for k, v in hist.items()}  # fmt: skip
    figure = plot_figure(x, curves, summary, hist, d_method, settings)
    data = {
        "settings": dict(
            settings,
            seeds=seeds,
            alphas=alphas,
            epsilon=1.0,
            priority="astar",
            heuristic="MultiRoomBound",
            early_stop=settings["early_stop"],
            threads=args.threads,
            frozen_policy=f"{d_method}, seed {seeds[0]}, after {settings['interactions']} interactions",
        ),  # fmt: skip
        "x_interactions": x,
        "curves": curves,
        "summary": summary,
        "quality_vs_quantity": {"summary": hist_summary, "raw": hist},
        "d_method": d_method,
    }
    save_results(args.out, "minigrid", data, figure, started)
    return data


def plot_figure(
    x: list[float],
    curves: dict[str, dict[str, dict[str, list[float]]]],
    summary: dict[str, dict[str, Any]],
    hist: dict[str, dict[str, list[float]]],
    d_method: str,
    settings: dict[str, Any],
) -> Any:
    """Draw the figure's six panels.

    :param x: interactions at the end of each bin
    :param curves: per method, the mean and spread of each curve
    :param summary: per method, the greedy evaluation
    :param hist: per priority, what the frozen policy's searches completed
    :param d_method: the method of the D panel
    :param settings: the run's settings
    :return: the matplotlib figure
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"axes.titlesize": 9, "axes.labelsize": 8, "xtick.labelsize": 7, "ytick.labelsize": 7})
    fig, axes = plt.subplots(2, 3, figsize=(10, 5.8))
    ax_ret, ax_succ, ax_greedy, ax_d, ax_count, ax_hret = axes.ravel()
    for method, stats in curves.items():
        style = {"linestyle": "--"} if not method.startswith("dirpg") else {}
        label = method.replace("dirpg-", "DirPG α=")
        plot_band(ax_ret, x, stats["ret"], label, **style)
        plot_band(ax_succ, x, stats["success"], label, **style)
    env_name = settings["env_id"].replace("MiniGrid-", "").replace("-v0", "")
    ax_ret.set(title=f"(a) on-policy return, {env_name}", xlabel="interactions", ylabel="return of a_opt / rollouts")
    ax_succ.set(title="(a') on-policy success rate", xlabel="interactions", ylabel="fraction reaching the goal")
    ax_ret.legend(fontsize=7)
    names = list(summary)
    ax_greedy.bar(range(len(names)), [summary[m]["greedy_success"] for m in names], color="tab:gray")
    for i, m in enumerate(names):
        ax_greedy.plot([i] * len(summary[m]["greedy_success_per_seed"]), summary[m]["greedy_success_per_seed"], "k.")
    ax_greedy.set_xticks(range(len(names)), [m.replace("dirpg-", "α=").replace("reinforce-", "RF-") for m in names],
                         rotation=45, fontsize=7)  # fmt: skip
    ax_greedy.set(title="greedy policy (no search), held-out maps", ylabel="success (bar: mean, dot: seed)")
    if d_method in curves and "d_opt" in curves[d_method]:
        plot_band(ax_d, x, curves[d_method]["d_dir"], "D(a_dir)")
        plot_band(ax_d, x, curves[d_method]["d_opt"], "D(a_opt)")
        ax_d.legend(fontsize=8)
    ax_d.set(title=f"(b) D over training, {d_method.replace('dirpg-', 'DirPG α=')}", xlabel="interactions", ylabel="D")
    if hist:
        counts = [v["trajectories"] for v in hist.values()]
        top = max(max(c) for c in counts)
        ax_count.hist(counts, bins=np.geomspace(1, max(2.0, top) * 1.01, 13), label=list(hist), histtype="step", linewidth=1.5)
        ax_count.set_xscale("log")
        rets = [v["returns"] if v["returns"] else [0.0] for v in hist.values()]
        ax_hret.hist(rets, bins=12, label=list(hist), histtype="step", linewidth=1.5, density=True)
        ax_count.legend(fontsize=7)
    where = settings["hist_env"].replace("MiniGrid-", "").replace("-v0", "")
    ax_count.set(title=f"(c) trajectories per map, {where}", xlabel="trajectories", ylabel="maps")
    ax_hret.set(title=f"(c) their returns, {where}", xlabel="return", ylabel="density")
    fig.tight_layout()
    return fig


# -- command line ------------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """:return: the command line of the figure"""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=nonnegative_int, nargs="+", help="run seeds (default: 0 1; 0-4 with --full)")
    parser.add_argument("--interactions", type=positive_int, default=None, help="interactions per run (default: 60k)")
    parser.add_argument("--eval-maps", dest="eval_maps", type=positive_int, default=None,
                        help="held-out maps of the greedy evaluation (default: 50)")  # fmt: skip
    parser.add_argument("--out", type=Path, default=default_out(),
                        help="folder of minigrid.json and .png (default: %(default)s)")  # fmt: skip
    parser.add_argument("--full", action="store_true", help="run at the paper's scale (hours) instead of the quick default")
    parser.add_argument("--threads", type=positive_int, default=None, help="torch threads (default: 1)")
    parser.add_argument("--env-id", dest="env_id", default=None, help="MiniGrid MultiRoom id")
    parser.add_argument("--horizon", type=positive_int, default=None, help="trajectory length (max_episode_steps)")
    parser.add_argument("--search-budget", dest="search_budget", type=positive_int, default=None,
                        help="DirPG a_dir budget per map")
    parser.add_argument("--n-rollouts", dest="n_rollouts", type=positive_int, default=None, help="baseline rollouts per map")
    parser.add_argument("--batch-episodes", dest="batch_episodes", type=positive_int, default=None, help="maps per update")
    parser.add_argument("--hist-maps", dest="hist_maps", type=positive_int, default=None,
                        help="maps of the quality/quantity search")
    parser.add_argument("--hist-env", dest="hist_env", default=None, help="MiniGrid id of the quality/quantity maps")
    parser.add_argument("--hist-horizon", dest="hist_horizon", type=positive_int, default=None, help="its trajectory length")
    parser.add_argument("--hist-budget", dest="hist_budget", type=positive_int, default=None, help="its a_dir budget per map")
    parser.add_argument("--bins", type=positive_int, default=None, help="points of the curves")
    parser.add_argument("--alphas", type=float, nargs="+", default=None,
                        help=f"DirPG α values (default: {' '.join(f'{a:g}' for a in FIGURE_ALPHAS)})")  # fmt: skip
    parser.add_argument("--d-alpha", dest="d_alpha", type=float, default=None, help="α of the D(a_dir)/D(a_opt) panel (0.3)")
    parser.add_argument("--no-baselines", dest="no_baselines", action="store_true", help="DirPG only")
    return parser


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the paper's figure 3.

    :param argv: command line (None: ``sys.argv``)
    :return: the JSON data written
    """
    return run_figure(build_parser().parse_args(argv))


if __name__ == "__main__":
    main()
