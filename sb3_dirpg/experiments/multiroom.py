"""``python -m sb3_dirpg.experiments.multiroom``: DirPG against REINFORCE (and CEM) on MiniGrid's MultiRoom.

Two runs share this module's learners (:func:`make_model`), its greedy evaluation (:func:`greedy_eval`: the
deterministic policy, no search, on held-out maps) and its one definition of success, reaching the goal
(:func:`reached_goal`), never a return threshold: on N6 the five doors alone give 150.

**Learning at scale** (the default). Every method sees the same maps budget: ``MiniGrid-MultiRoom-N6-v0`` with
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

Default: the shipped DirPG setting and action-level REINFORCE, 3 seeds, 3M interactions each. On the 2-core VM of the
results page a REINFORCE run took about 20 minutes and a DirPG run about an hour (several runs shared the cores; DirPG
searches one map per update, so its per-map overhead is not amortised over a batch). Other methods (``--methods``)
are the variants measured while choosing the shipped setting.

**The paper's figure 3** (``--figure``; section 6, appendix D.3), in one process, written to ``minigrid.json`` and
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
every priority finds the best possible return within a few trajectories. ``--figure --full``: MultiRoom-N6, 100-step
trajectories, 3000 interactions per map (100 + 2900 of search; 30 rollouts), 5 seeds, 9M interactions, one map per
update, quality vs quantity on 50 N6 maps, as in the paper.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_dirpg import DirPG
from sb3_dirpg.baselines import CEM, Reinforce
from sb3_dirpg.common.simulator_algorithm import SimulatorAlgorithm
from sb3_dirpg.envs import make_minigrid_env
from sb3_dirpg.envs.minigrid import MiniGridCNN, MultiRoomBound
from sb3_dirpg.experiments.common import (
    default_out,
    mean_and_spread,
    plot_band,
    save_results,
    scaled_settings,
    setup_run,
    write_json,
)  # fmt: skip

ENV_ID = "MiniGrid-MultiRoom-N6-v0"
MAX_STEPS = 100
GAMMA = 0.999
HELD_OUT_SEEDS = range(10_000, 10_200)  # the learning runs' held-out maps
HELD_OUT_SEED = 1_000_000_007  # the figure's (and vs_ppo's) held-out maps use seeds from here on; training seeds are random
POLICY_KWARGS = dict(features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False)
ALGORITHMS = {"DirPG": DirPG, "Reinforce": Reinforce, "CEM": CEM}
COMMON = dict(learning_rate=1e-3, batch_episodes=1, gamma=GAMMA)
DIRPG_PAPER = dict(epsilon=1.0, search_budget=2900, priority="astar", alpha=0.2, prune=True, early_stop=False)

SWEEP_ALPHAS = (0.0, 0.1, 0.2, 0.3, 1.0)  # the paper's MiniGrid figure; sweep-a0.2 is the shipped setting
FROZEN_AT = 1_200_000  # the paper freezes its model here for the quality/quantity search; runs keep a copy

# a learner: (algorithm, constructor arguments, MultiRoomBound arguments or None for no heuristic)
Method = tuple[str, dict[str, Any], dict[str, Any] | None]

# the learning runs' methods, by name
METHODS: dict[str, Method] = {
    # the shipped setting (zoo_hyperparams/dirpg.yml): the authors' horizon-free bound, best-first, break on goal
    "dirpg": ("DirPG", dict(DIRPG_PAPER, stop_on_success=True), {}),
    "dirpg-df-stop": ("DirPG", dict(DIRPG_PAPER, depth_first=True, stop_on_success=True), {}),
    # the shipped setting with 8 maps searched in lockstep and one update per map, in order (issue 22)
    "dirpg-lockstep8": ("DirPG", dict(DIRPG_PAPER, stop_on_success=True, batch_episodes=8, update_per_episode=True), {}),
    # the shipped setting with up to 16 maps searched ahead and committed one at a time: the same learning, faster
    "dirpg-lookahead16": ("DirPG", dict(DIRPG_PAPER, stop_on_success=True, lookahead=16), {}),
    # the same with one Python round trip per search iteration instead of the compiled loop: the same learning, slower
    "dirpg-python-loop": ("DirPG", dict(DIRPG_PAPER, stop_on_success=True, lookahead=16, compiled_loop=False), {}),
    # the setting shipped before: the bound that drops terms beyond the steps left; it never completes a 2nd trajectory
    "dirpg-paper-tight": ("DirPG", dict(DIRPG_PAPER), dict(step_limit=True)),
    # the authors' bound (no step limit), best-first
    "dirpg-free": ("DirPG", dict(DIRPG_PAPER), {}),
    "dirpg-df": ("DirPG", dict(DIRPG_PAPER, depth_first=True), {}),
    "dirpg-df-early": ("DirPG", dict(DIRPG_PAPER, depth_first=True, stop_on_success=True, early_stop=True), {}),
    "dirpg-gumbel-stop": ("DirPG", dict(DIRPG_PAPER, priority="gumbel", alpha=0.0, stop_on_success=True), None),
    **{  # the paper's priority sweep (issue 22) in the shipped setting: A* with each alpha, and the Gumbel priority
        f"sweep-a{alpha:g}": ("DirPG", dict(DIRPG_PAPER, stop_on_success=True, lookahead=16, alpha=alpha), {})
        for alpha in SWEEP_ALPHAS
    },
    "sweep-gumbel": ("DirPG", dict(DIRPG_PAPER, stop_on_success=True, lookahead=16, priority="gumbel", alpha=0.0), None),
    "reinforce": ("Reinforce", dict(n_rollouts=30, variant="action"), None),
    "cem": ("CEM", dict(n_rollouts=30, n_elite=2), None),
}
DEFAULT_METHODS = ("dirpg", "reinforce")
FIGURE_ALPHAS = (0.0, 0.1, 0.3, 0.5, 1.0)

# options of one run only: a parse error with the other (``dest`` names)
LEARNING_ONLY = ("methods", "eval_every", "procs", "runs_dir", "resume", "report", "probe")
FIGURE_ONLY = ("full", "threads", "env_id", "horizon", "search_budget", "n_rollouts", "batch_episodes", "hist_maps",
               "hist_env", "hist_horizon", "hist_budget", "bins", "alphas", "d_alpha", "no_baselines")  # fmt: skip


# -- learners, success and the greedy evaluation -----------------------------------------------------------------


def make_env(env_id: str = ENV_ID, max_steps: int | None = MAX_STEPS) -> gym.Env:
    """:param env_id: a MiniGrid id
    :param max_steps: the env's step limit, or None for MiniGrid's own
    :return: the env with the paper's shaped reward and image+direction observations"""
    return make_minigrid_env(env_id) if max_steps is None else make_minigrid_env(env_id, max_steps=max_steps)


def make_model(
    method: Method, seed: int, env_id: str = ENV_ID, max_steps: int | None = MAX_STEPS, common: dict[str, Any] = COMMON
) -> SimulatorAlgorithm:
    """Build one learner with the paper's CNN on one env (device ``cpu``).

    :param method: ``(algorithm, arguments, MultiRoomBound arguments or None)``, e.g. ``METHODS["dirpg"]`` or
        :func:`figure_method`'s
    :param seed: the run's seed
    :param env_id: the MiniGrid id
    :param max_steps: the env's step limit, or None for MiniGrid's own
    :param common: the arguments every method of the run shares, ``gamma`` among them (the bound's discount too)
    :return: the model
    """
    algo, kwargs, bound = method
    kwargs = dict(common, **kwargs)
    if bound is not None:
        kwargs["heuristic"] = MultiRoomBound(kwargs["gamma"], **bound)
    venv = make_vec_env(partial(make_env, env_id, max_steps), n_envs=1, vec_env_cls=DummyVecEnv)
    return ALGORITHMS[algo]("MultiInputPolicy", venv, seed=seed, device="cpu", policy_kwargs=dict(POLICY_KWARGS), **kwargs)


def reached_goal(reward: float, terminated: bool, info: dict[str, Any]) -> bool:
    """Success on MiniGrid: the step entered the goal, a terminal step with a positive MiniGrid reward.
    :class:`~sb3_dirpg.envs.minigrid.MiniGridShapedReward` says so in ``info["is_success"]`` (its reward is the shaped
    one); a plain MiniGrid env's reward is MiniGrid's own.

    :param reward: the step's reward
    :param terminated: whether the step ended the episode
    :param info: the step's info
    :return: whether the step reached the goal
    """
    if "is_success" in info:
        return bool(info["is_success"])
    return bool(terminated and reward > 0)


def greedy_actions(model: SimulatorAlgorithm) -> Callable[[list[Any]], list[int]]:
    """:param model: a model with ``policy_logits(obs, masks)``
    :return: observations -> the policy's most likely actions, in one batched forward (no search)"""
    n_actions = int(model.action_space.n)

    def act(obs: list[Any]) -> list[int]:
        logits = model.policy_logits(obs, np.ones((len(obs), n_actions), dtype=bool))
        return np.argmax(logits, axis=1).tolist()

    return act


def greedy_eval(
    act: Callable[[list[Any]], Sequence[int]], envs: Sequence[gym.Env], seeds: Sequence[int], max_steps: int | None = None
) -> dict[str, float]:
    """Play a deterministic policy on held-out maps, all maps stepped together.

    :param act: observations of the maps still playing -> their actions (e.g. :func:`greedy_actions`)
    :param envs: one env per map (they may be reused between evaluations)
    :param seeds: the maps' seeds, one per env
    :param max_steps: cut the episodes after this many steps, or None for the envs' own limit
    :return: the mean ``return`` and the ``success`` rate (:func:`reached_goal` on the last step)
    """
    if len(seeds) != len(envs):
        raise ValueError(f"{len(envs)} envs but {len(seeds)} seeds")
    obs = [env.reset(seed=int(seed))[0] for env, seed in zip(envs, seeds)]
    returns = np.zeros(len(envs))
    success = np.zeros(len(envs), dtype=bool)
    live, steps = list(range(len(envs))), 0
    while live:
        actions = act([obs[i] for i in live])
        steps += 1
        still = []
        for i, action in zip(live, actions):
            obs[i], reward, terminated, truncated, info = envs[i].step(int(action))
            returns[i] += float(reward)
            if terminated or truncated or (max_steps is not None and steps >= max_steps):
                success[i] = reached_goal(float(reward), terminated, info)
            else:
                still.append(i)
        live = still
    return {"return": float(returns.mean()), "success": float(success.mean())}


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


# -- the paper's figure 3 ----------------------------------------------------------------------------------------


def figure_method(name: str, settings: dict[str, Any]) -> Method:
    """A learner of the figure's settings.

    :param name: ``"dirpg-<alpha>"``, ``"reinforce-trajectory"``, ``"reinforce-action"`` or ``"cem"``
    :param settings: ``search_budget``, ``n_rollouts``, ``early_stop``
    :return: the method (DirPG with ε = 1, the A* priority and ``MultiRoomBound``)
    """
    if name.startswith("dirpg-"):
        alpha = float(name.split("-", 1)[1])
        kwargs = dict(epsilon=1.0, search_budget=settings["search_budget"], priority="astar", alpha=alpha,
                      early_stop=settings["early_stop"])  # fmt: skip
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


class EpisodeRecorder(BaseCallback):
    """Record every on-policy episode (with the interaction count at which it was collected) and, for DirPG, every
    searched episode's ``D(a_opt)``, ``D(a_dir)`` and whether the search improved on ``a_opt``.

    ``log`` holds lists ``t``, ``ret``, ``success`` (one entry per sampled trajectory; success is reaching the goal:
    the episode's ``is_success``, which the algorithm takes from its last step's info, as :func:`reached_goal` does)
    and ``d_t``, ``d_opt``, ``d_dir``, ``improved`` (one entry per searched episode).
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
            priority=priority, alpha=alpha, early_stop=False, prune=False, stop_on_success=False,
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


def count(text: str) -> int:
    """:param text: a number of interactions, such as ``3000`` or ``3e6``
    :return: it as an int"""
    return int(float(text))


def build_parser() -> argparse.ArgumentParser:
    """:return: the command line of both runs"""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    both = parser.add_argument_group("both runs")
    both.add_argument("--figure", action="store_true", help="run the paper's figure 3 instead of the learning runs")
    both.add_argument("--seeds", type=int, nargs="+", help="run seeds (default: 0 1 2; --figure: 0 1, 0-4 --full)")
    both.add_argument("--interactions", type=count, default=None, help="interactions per run (default: 3e6; --figure: 60k)")
    both.add_argument("--eval-maps", dest="eval_maps", type=int, default=None,
                      help="held-out maps of the greedy evaluation (default: 200, at most 200; --figure: 50)")  # fmt: skip
    both.add_argument("--out", type=Path, default=default_out(),
                      help="folder of multiroom_n6.json, .png and _table.md, or of minigrid.json and .png with --figure "
                           "(default: %(default)s)")  # fmt: skip
    learning = parser.add_argument_group("the learning runs (without --figure)")
    learning.add_argument("--methods", nargs="+", default=None, choices=sorted(METHODS),
                          help=f"default: {' '.join(DEFAULT_METHODS)}")  # fmt: skip
    learning.add_argument("--eval-every", dest="eval_every", type=count, default=None,
                          help="interactions between evaluations (default: 1e5)")  # fmt: skip
    learning.add_argument("--procs", type=int, default=None, help="runs in parallel, one process and one torch thread each "
                          "(default: 2)")  # fmt: skip
    learning.add_argument("--runs-dir", dest="runs_dir", type=Path, default=None, help="default: runs/multiroom")
    learning.add_argument("--resume", action="store_true", help="carry on from the runs' checkpoints")
    learning.add_argument("--report", action="store_true", help="only gather the existing runs into the JSON and figure")
    learning.add_argument("--probe", action="store_true",
                          help="only search 8 maps with an untrained policy per DirPG method and print what the search did")
    figure = parser.add_argument_group("the paper's figure 3 (with --figure)")
    figure.add_argument("--full", action="store_true", help="run at the paper's scale (hours) instead of the quick default")
    figure.add_argument("--threads", type=int, default=None, help="torch threads (default: 1)")
    figure.add_argument("--env-id", dest="env_id", default=None, help="MiniGrid MultiRoom id")
    figure.add_argument("--horizon", type=int, default=None, help="trajectory length (max_episode_steps)")
    figure.add_argument("--search-budget", dest="search_budget", type=int, default=None, help="DirPG a_dir budget per map")
    figure.add_argument("--n-rollouts", dest="n_rollouts", type=int, default=None, help="baseline rollouts per map")
    figure.add_argument("--batch-episodes", dest="batch_episodes", type=int, default=None, help="maps per update")
    figure.add_argument("--hist-maps", dest="hist_maps", type=int, default=None, help="maps of the quality/quantity search")
    figure.add_argument("--hist-env", dest="hist_env", default=None, help="MiniGrid id of the quality/quantity maps")
    figure.add_argument("--hist-horizon", dest="hist_horizon", type=int, default=None, help="its trajectory length")
    figure.add_argument("--hist-budget", dest="hist_budget", type=int, default=None, help="its a_dir budget per map")
    figure.add_argument("--bins", type=int, default=None, help="points of the curves")
    figure.add_argument("--alphas", type=float, nargs="+", default=None,
                        help=f"DirPG α values (default: {' '.join(f'{a:g}' for a in FIGURE_ALPHAS)})")  # fmt: skip
    figure.add_argument("--d-alpha", dest="d_alpha", type=float, default=None, help="α of the D(a_dir)/D(a_opt) panel (0.3)")
    figure.add_argument("--no-baselines", dest="no_baselines", action="store_true", help="DirPG only")
    return parser


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the learning runs (or, with ``--figure``, the paper's figure 3).

    :param argv: command line (None: ``sys.argv``)
    :return: the JSON data written
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    other = LEARNING_ONLY if args.figure else FIGURE_ONLY
    given = ["--" + name.replace("_", "-") for name in other if getattr(args, name) not in (None, False)]
    if given:
        parser.error(f"{', '.join(given)}: only for {'the learning runs (without --figure)' if args.figure else '--figure'}")
    return run_figure(args) if args.figure else run_learning(args)


if __name__ == "__main__":
    main()
