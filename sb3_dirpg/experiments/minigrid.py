"""``python -m sb3_dirpg.experiments.minigrid``: the paper's MiniGrid experiment (section 6, figure 3, appendix D.3).

DirPG with the weighted-A* priority ``G + ε·(L + α·U)`` (``U`` = :class:`~sb3_dirpg.envs.minigrid.MultiRoomBound`) for
several α, against REINFORCE (trajectory- and action-level) and the cross-entropy method, all spending the same
number of simulator interactions per map: DirPG one trajectory for ``a_opt`` plus ``search_budget`` of search, the
baselines ``n_rollouts`` trajectories of ``horizon`` steps. Outputs:

* (a) the on-policy return (of ``a_opt`` for DirPG, of the rollouts for the baselines) against interactions, and the
  same as a success rate; at the end the greedy policy (no search) is evaluated on held-out maps;
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
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_dirpg import DirPG
from sb3_dirpg.baselines import CEM, Reinforce
from sb3_dirpg.common.simulator_algorithm import SimulatorAlgorithm
from sb3_dirpg.envs import make_minigrid_env
from sb3_dirpg.envs.minigrid import MiniGridCNN, MultiRoomBound
from sb3_dirpg.experiments.common import (
    experiment_parser,
    mean_and_spread,
    plot_band,
    save_results,
    scaled_settings,
    setup_run,
)

POLICY_KWARGS = dict(features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False)
HELD_OUT_SEED = 1_000_000_007  # evaluation maps use seeds from here on; training seeds are random 31-bit integers


def make_env_fn(env_id: str) -> Callable[[], gym.Env]:
    """:param env_id: a MiniGrid id
    :return: a constructor of the env with the paper's shaped reward and image+direction observations"""

    def make() -> gym.Env:
        return make_minigrid_env(env_id)

    return make


def make_model(method: str, env_id: str, seed: int, settings: dict[str, Any]) -> SimulatorAlgorithm:
    """Build one learner on one env.

    :param method: ``"dirpg-<alpha>"``, ``"reinforce-trajectory"``, ``"reinforce-action"`` or ``"cem"``
    :param env_id: the MiniGrid id
    :param seed: the run's seed
    :param settings: ``horizon``, ``search_budget``, ``n_rollouts``, ``batch_episodes``, ``learning_rate``,
        ``early_stop``
    :return: the model
    """
    make = make_env_fn(env_id)
    venv = make_vec_env(make, n_envs=1, vec_env_cls=DummyVecEnv)
    common = dict(
        learning_rate=settings["learning_rate"], batch_episodes=settings["batch_episodes"],
        max_episode_steps=settings["horizon"], seed=seed, policy_kwargs=dict(POLICY_KWARGS),
    )  # fmt: skip
    if method.startswith("dirpg"):
        alpha = float(method.split("-", 1)[1])
        return DirPG(
            "MultiInputPolicy", venv, epsilon=1.0, search_budget=settings["search_budget"], priority="astar",
            alpha=alpha, heuristic=MultiRoomBound.for_env(make()), early_stop=settings["early_stop"], **common,
        )  # fmt: skip
    if method.startswith("reinforce"):
        return Reinforce(
            "MultiInputPolicy", venv, n_rollouts=settings["n_rollouts"], variant=method.split("-", 1)[1], **common
        )
    if method == "cem":
        return CEM("MultiInputPolicy", venv, n_rollouts=settings["n_rollouts"], n_elite=2, **common)
    raise ValueError(f"unknown method {method!r}")


class EpisodeRecorder(BaseCallback):
    """Record every on-policy episode (with the interaction count at which it was collected) and, for DirPG, every
    searched episode's ``D(a_opt)``, ``D(a_dir)`` and whether the search improved on ``a_opt``.

    ``log`` holds lists ``t``, ``ret``, ``success`` (one entry per sampled trajectory; success is reaching the goal,
    ``info["is_success"]``) and ``d_t``, ``d_opt``, ``d_dir``, ``improved`` (one entry per searched episode).
    """

    def __init__(self) -> None:
        super().__init__()
        self.log: dict[str, list[float]] = {k: [] for k in ("t", "ret", "success", "d_t", "d_opt", "d_dir", "improved")}

    def _on_step(self) -> bool:
        """:return: True (never stops training)"""
        return True

    def _on_rollout_end(self) -> None:
        """Read the batch that the algorithm hands its callbacks at the end of a collection."""
        log = self.log
        for info in self.locals["episode_infos"]:
            log["t"].append(self.model.num_timesteps)
            log["ret"].append(float(info["r"]))
            log["success"].append(float(info.get("is_success", False)))
        for ep in self.locals.get("search", ()):
            if ep.opt_leaf >= 0:
                log["d_t"].append(self.model.num_timesteps)
                log["d_opt"].append(float(ep.d_opt))
                log["d_dir"].append(float(ep.d_dir))
                log["improved"].append(float(ep.improved))


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


def evaluate_greedy(
    predict: Callable[[Any], int], make_env: Callable[[], gym.Env], n_maps: int, max_steps: int | None = None
) -> dict[str, float]:
    """Run a policy's deterministic actions (no search) on held-out maps.

    :param predict: observation -> action
    :param make_env: env constructor; success is a terminal step with ``info["minigrid_reward"] > 0`` (shaped envs)
        or, without that key, a terminal step with a positive reward
    :param n_maps: number of maps (seeds ``HELD_OUT_SEED + i``)
    :param max_steps: cut episodes after this many steps, or None for the env's own limit
    :return: mean ``return`` and ``success`` rate
    """
    env = make_env()
    returns, successes = [], []
    for i in range(n_maps):
        obs, _ = env.reset(seed=HELD_OUT_SEED + i)
        total, success, steps = 0.0, False, 0
        while True:
            obs, reward, terminated, truncated, info = env.step(predict(obs))
            total += float(reward)
            steps += 1
            if terminated:
                success = float(info.get("minigrid_reward", reward)) > 0
            if terminated or truncated or (max_steps is not None and steps >= max_steps):
                break
        returns.append(total)
        successes.append(float(success))
    env.close()
    return {"return": float(np.mean(returns)), "success": float(np.mean(successes))}


def model_predictor(model: Any) -> Callable[[Any], int]:
    """:param model: an SB3-style model with ``predict``
    :return: observation -> deterministic action"""

    def predict(obs: Any) -> int:
        action, _ = model.predict(obs, deterministic=True)
        return int(action)

    return predict


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
    """Search the same held-out maps with a frozen policy and each priority, all for the same budget: no early stop
    and no pruning, so that every search spends its whole budget (pruning would end the search once ``a_dir`` is
    provably optimal, which on small maps happens after a couple of trajectories).

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
    model.set_env(make_vec_env(make_env_fn(env_id), n_envs=1, vec_env_cls=DummyVecEnv))
    for priority, alpha in priorities:
        label = "gumbel" if priority == "gumbel" else f"astar α={alpha:g}"
        config = model.search_config(
            priority=priority, alpha=alpha, early_stop=False, prune=False, record_trajectories=True, budget=budget,
            horizon=horizon,
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


def scale_settings(args: argparse.Namespace) -> dict[str, Any]:
    """:param args: parsed arguments
    :return: the settings of this run (paper scale with ``--full``, else the quick default, then explicit overrides)"""
    full = dict(env_id="MiniGrid-MultiRoom-N6-v0", horizon=100, search_budget=2900, n_rollouts=30, batch_episodes=1,
                interactions=9_000_000, seeds=5, eval_maps=200, hist_maps=50, bins=60,
                hist_env="MiniGrid-MultiRoom-N6-v0", hist_horizon=100, hist_budget=2900)  # fmt: skip
    quick = dict(env_id="MiniGrid-MultiRoom-N2-S4-v0", horizon=40, search_budget=360, n_rollouts=10, batch_episodes=2,
                 interactions=60_000, seeds=2, eval_maps=50, hist_maps=12, bins=12,
                 hist_env="MiniGrid-MultiRoom-N4-S5-v0", hist_horizon=80, hist_budget=2900)  # fmt: skip
    return dict(scaled_settings(args, quick, full), learning_rate=1e-3, early_stop=False)


def build_parser() -> argparse.ArgumentParser:
    """:return: the command line of this experiment"""
    parser = experiment_parser(__doc__)
    parser.add_argument("--env-id", dest="env_id", default=None, help="MiniGrid MultiRoom id")
    parser.add_argument("--interactions", type=int, default=None, help="interactions per run")
    parser.add_argument("--horizon", type=int, default=None, help="trajectory length (max_episode_steps)")
    parser.add_argument("--search-budget", dest="search_budget", type=int, default=None, help="DirPG a_dir budget per map")
    parser.add_argument("--n-rollouts", dest="n_rollouts", type=int, default=None, help="baseline rollouts per map")
    parser.add_argument("--batch-episodes", dest="batch_episodes", type=int, default=None, help="maps per update")
    parser.add_argument("--eval-maps", dest="eval_maps", type=int, default=None, help="held-out maps for the greedy policy")
    parser.add_argument("--hist-maps", dest="hist_maps", type=int, default=None, help="maps of the quality/quantity search")
    parser.add_argument("--hist-env", dest="hist_env", default=None, help="MiniGrid id of the quality/quantity maps")
    parser.add_argument("--hist-horizon", dest="hist_horizon", type=int, default=None, help="its trajectory length")
    parser.add_argument("--hist-budget", dest="hist_budget", type=int, default=None, help="its a_dir budget per map")
    parser.add_argument("--bins", type=int, default=None, help="points of the curves")
    parser.add_argument("--alphas", type=float, nargs="+", default=[0.0, 0.1, 0.3, 0.5, 1.0], help="DirPG α values")
    parser.add_argument("--d-alpha", dest="d_alpha", type=float, default=0.3, help="α of the D(a_dir)/D(a_opt) panel")
    parser.add_argument("--no-baselines", dest="baselines", action="store_false", help="DirPG only")
    return parser


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the experiment.

    :param argv: command line (None: ``sys.argv``)
    :return: the results written to JSON
    """
    args = build_parser().parse_args(argv)
    started = setup_run(args)
    settings = scale_settings(args)
    n_seeds = args.seeds or settings["seeds"]
    methods = [f"dirpg-{a:g}" for a in args.alphas]
    if args.baselines:
        methods += ["reinforce-trajectory", "reinforce-action", "cem"]
    d_method = f"dirpg-{args.d_alpha:g}" if f"dirpg-{args.d_alpha:g}" in methods else methods[0]
    edges = np.linspace(0, settings["interactions"], settings["bins"] + 1)
    x = edges[1:].tolist()
    fields = ("ret", "success", "d_opt", "d_dir", "improved", "greedy_return", "greedy_success", "wall_s")
    runs: dict[str, dict[str, list]] = {m: {k: [] for k in fields} for m in methods}
    frozen: DirPG | None = None
    make = make_env_fn(settings["env_id"])
    for seed in range(n_seeds):
        for method in methods:
            run_start = time.perf_counter()
            model = make_model(method, settings["env_id"], seed, settings)
            recorder = EpisodeRecorder()
            model.learn(settings["interactions"], callback=recorder)
            log = recorder.log
            run = runs[method]
            run["ret"].append(binned(log["t"], log["ret"], edges))
            run["success"].append(binned(log["t"], log["success"], edges))
            if log["d_t"]:
                run["d_opt"].append(binned(log["d_t"], log["d_opt"], edges))
                run["d_dir"].append(binned(log["d_t"], log["d_dir"], edges))
                run["improved"].append(binned(log["d_t"], log["improved"], edges))
            greedy = evaluate_greedy(model_predictor(model), make, settings["eval_maps"], settings["horizon"])
            run["greedy_return"].append(greedy["return"])
            run["greedy_success"].append(greedy["success"])
            run["wall_s"].append(round(time.perf_counter() - run_start, 1))
            print(f"seed {seed} {method:22s} final return {run['ret'][-1][-1]:7.1f}  greedy return {greedy['return']:6.1f} "
                  f"success {greedy['success']:.2f}  ({run['wall_s'][-1]} s)", flush=True)  # fmt: skip
            if method == d_method and seed == 0:
                frozen = model
    priorities = [("gumbel", 0.0)] + [("astar", a) for a in args.alphas]
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
    figure = plot(x, curves, summary, hist, d_method, settings)
    data = {
        "settings": dict(
            settings,
            seeds=n_seeds,
            alphas=args.alphas,
            epsilon=1.0,
            priority="astar",
            heuristic="MultiRoomBound",
            early_stop=settings["early_stop"],
            threads=args.threads,
            frozen_policy=f"{d_method}, seed 0, after {settings['interactions']} interactions",
        ),  # fmt: skip
        "x_interactions": x,
        "curves": curves,
        "summary": summary,
        "quality_vs_quantity": {"summary": hist_summary, "raw": hist},
        "d_method": d_method,
    }
    save_results(args.out, "minigrid", data, figure, started)
    return data


def plot(
    x: list[float],
    curves: dict[str, dict[str, dict[str, list[float]]]],
    summary: dict[str, dict[str, Any]],
    hist: dict[str, dict[str, list[float]]],
    d_method: str,
    settings: dict[str, Any],
) -> Any:
    """Draw the six panels.

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


if __name__ == "__main__":
    main()
