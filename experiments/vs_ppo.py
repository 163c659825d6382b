"""``python -m experiments.vs_ppo``: DirPG against SB3's PPO with rl-zoo3's MiniGrid settings (beyond the paper).

Both learners get the same number of environment interactions on the same env ids. Every ``--eval-every``
interactions the deterministic policy (no search) is run on held-out maps and its success rate (reaching the goal) is
recorded; the result is the number of interactions at which the success rate first reaches ``--target`` (0.9), or
the best success rate reached.

* PPO: rl-zoo3's ``hyperparams/ppo.yml`` entry for the env, read from the installed rl_zoo3 (envs without an entry,
  such as MultiRoom-N2-S4, get the shared MiniGrid defaults of ``MiniGrid-Empty-Random-5x5-v0``):
  ``FlatObsWrapper`` (cast to float32, see :func:`~sb3_dirpg.integrations.ppo.check_normalized_storage`),
  ``VecNormalize``, 8 envs, ``n_steps=128``, ``batch_size=64``, ``n_epochs=10``, ``gamma=0.99``,
  ``gae_lambda=0.95``, ``lr=2.5e-4``, ``clip_range=0.2``, ``ent_coef=0``, MiniGrid's own sparse reward.
* DirPG: the paper's MiniGrid setup (image + direction, :class:`~sb3_dirpg.envs.minigrid.MiniGridCNN`, shaped reward
  +100 goal / +30 door / ±5 pickup, weighted-A* priority with :class:`~sb3_dirpg.envs.minigrid.MultiRoomBound`,
  α = 0.3, ε = 1, Adam 1e-3), trajectories cut at ``min(max_steps, 100)`` steps, 10 trajectories' worth of
  interactions per map (``a_opt`` plus ``9·horizon`` of search), 2 maps per update.

Evaluation runs each env with its own step limit (``max_steps``) and the seeds ``HELD_OUT_SEED + i``
(:data:`experiments.multiroom_setup.HELD_OUT_SEED`); success is reaching the goal, as in that module.

Default (about 10 minutes): MultiRoom-N2-S4, MultiRoom-N4-S5 and DoorKey-5x5, 48k interactions per run, 2 seeds,
evaluation every 8k interactions on 20 maps. ``--full``: 2M interactions, 5 seeds, every 50k on 100 maps.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import yaml
from gymnasium.wrappers import DtypeObservation
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from experiments.common import (
    experiment_parser,
    mean_and_spread,
    plot_band,
    positive_int,
    save_results,
    scaled_settings,
    setup_run,
)
from experiments.multiroom_figure import figure_common, figure_method
from experiments.multiroom_setup import HELD_OUT_SEED, greedy_actions, greedy_eval, make_env, make_model
from sb3_dirpg.integrations.ppo import check_normalized_storage
from sb3_dirpg.integrations.zoo import import_object

ENVS = ("MiniGrid-MultiRoom-N2-S4-v0", "MiniGrid-MultiRoom-N4-S5-v0", "MiniGrid-DoorKey-5x5-v0")
ZOO_DEFAULT_ENTRY = "MiniGrid-Empty-Random-5x5-v0"


def zoo_ppo_hyperparams(env_id: str) -> dict[str, Any]:
    """rl-zoo3's PPO hyperparameters for a MiniGrid env, from the installed package's ``hyperparams/ppo.yml``.

    :param env_id: the env id (falls back to the shared MiniGrid defaults when the file has no entry for it)
    :return: the entry, with ``entry`` naming the one used
    """
    import rl_zoo3

    path = Path(rl_zoo3.__file__).parent / "hyperparams" / "ppo.yml"
    table = yaml.safe_load(path.read_text())
    entry = env_id if env_id in table else ZOO_DEFAULT_ENTRY
    return dict(table[entry], entry=entry)


def make_ppo(env_id: str, seed: int) -> tuple[PPO, Callable[[Any], int], Callable[[], gym.Env], dict[str, Any]]:
    """PPO with rl-zoo3's settings.

    :param env_id: the env id
    :param seed: the run's seed
    :return: the model, a deterministic predictor on raw (wrapped, unnormalised) observations, the evaluation env
        constructor and the hyperparameters used
    """
    import minigrid  # noqa: F401  (registers the ids)

    hp = zoo_ppo_hyperparams(env_id)
    flat = import_object(hp["env_wrapper"]) if "env_wrapper" in hp else None

    def wrapper(env: gym.Env) -> gym.Env:  # the float32 cast that lets PPO learn (check_normalized_storage)
        return DtypeObservation(flat(env), np.float32) if flat is not None else env

    venv = make_vec_env(env_id, n_envs=int(hp["n_envs"]), seed=seed, wrapper_class=wrapper, vec_env_cls=DummyVecEnv)
    if hp.get("normalize", False):
        venv = VecNormalize(venv, gamma=float(hp["gamma"]))
    check_normalized_storage(venv)
    kwargs = {
        k: hp[k] for k in ("n_steps", "batch_size", "gae_lambda", "gamma", "n_epochs", "ent_coef", "clip_range") if k in hp
    }
    model = PPO(hp["policy"], venv, learning_rate=float(hp["learning_rate"]), seed=seed, **kwargs)

    def predict(obs: Any) -> int:
        batch = np.asarray(obs)[None]
        if isinstance(venv, VecNormalize):
            batch = venv.normalize_obs(batch)
        action, _ = model.predict(batch, deterministic=True)
        return int(action[0])

    def make_eval_env() -> gym.Env:
        return wrapper(gym.make(env_id))

    return model, predict, make_eval_env, hp


def dirpg_settings(env_id: str) -> dict[str, Any]:
    """:param env_id: the env id
    :return: the DirPG settings for it (see the module docstring)"""
    env = make_env(env_id, None)
    max_steps = int(env.unwrapped.max_steps)
    env.close()
    horizon = min(max_steps, 100)
    return dict(horizon=horizon, search_budget=9 * horizon, batch_episodes=2, learning_rate=1e-3, early_stop=False,
                n_rollouts=10)  # fmt: skip


def first_reaching(x: Sequence[int], success: Sequence[float], target: float) -> int | None:
    """:param x: interaction counts of the evaluations
    :param success: success rates
    :param target: the success rate to reach
    :return: the first interaction count whose success rate is at least ``target``, or None"""
    for xi, s in zip(x, success):
        if s >= target:
            return int(xi)
    return None


def run_one(method: str, env_id: str, seed: int, total: int, eval_every: int, eval_maps: int, alpha: float) -> dict[str, Any]:
    """Train one learner and evaluate it periodically.

    :param method: ``"dirpg"`` or ``"ppo"``
    :param env_id: the env id
    :param seed: the run's seed
    :param total: training interactions
    :param eval_every: interactions between evaluations
    :param eval_maps: held-out maps per evaluation
    :param alpha: DirPG's α
    :return: ``x`` (interactions at each evaluation, starting at 0), ``success``, ``return`` and ``wall_s``
    """
    start = time.perf_counter()
    if method == "ppo":
        model, predict, make_eval, _ = make_ppo(env_id, seed)

        def act(obs: list[Any]) -> list[int]:
            return [predict(o) for o in obs]

    else:
        settings = dirpg_settings(env_id)
        model = make_model(figure_method(f"dirpg-{alpha:g}", settings), seed, env_id, None, figure_common(settings))
        act, make_eval = greedy_actions(model), partial(make_env, env_id, None)
    seeds = [HELD_OUT_SEED + i for i in range(eval_maps)]
    envs = [make_eval() for _ in seeds]
    xs, succ, rets = [], [], []
    for target in range(0, total + 1, eval_every):
        if target > model.num_timesteps:
            model.learn(target - model.num_timesteps, reset_num_timesteps=False)
        result = greedy_eval(act, envs, seeds)
        xs.append(int(model.num_timesteps))
        succ.append(result["success"])
        rets.append(result["return"])
    return {"x": xs, "success": succ, "return": rets, "wall_s": round(time.perf_counter() - start, 1)}


def build_parser() -> argparse.ArgumentParser:
    """:return: the command line of this experiment"""
    parser = experiment_parser(__doc__)
    parser.add_argument("--envs", nargs="+", default=list(ENVS), help="env ids")
    parser.add_argument("--interactions", type=positive_int, default=None, help="training interactions per run")
    parser.add_argument("--eval-every", dest="eval_every", type=positive_int, default=None,
                        help="interactions between evaluations")
    parser.add_argument("--eval-maps", dest="eval_maps", type=positive_int, default=None, help="held-out maps per evaluation")
    parser.add_argument("--target", type=float, default=0.9, help="success rate to reach")
    parser.add_argument("--alpha", type=float, default=0.3, help="DirPG's α")
    return parser


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the experiment.

    :param argv: command line (None: ``sys.argv``)
    :return: the results written to JSON
    """
    args = build_parser().parse_args(argv)
    started = setup_run(args)
    full = dict(interactions=2_000_000, seeds=5, eval_every=50_000, eval_maps=100)
    quick = dict(interactions=48_000, seeds=2, eval_every=8_000, eval_maps=20)
    settings = scaled_settings(args, quick, full)
    results: dict[str, dict[str, Any]] = {}
    for env_id in args.envs:
        results[env_id] = {}
        for method in ("dirpg", "ppo"):
            runs = []
            for seed in range(settings["seeds"]):
                run = run_one(method, env_id, seed, settings["interactions"], settings["eval_every"], settings["eval_maps"],
                              args.alpha)  # fmt: skip
                run["interactions_to_target"] = first_reaching(run["x"], run["success"], args.target)
                runs.append(run)
                print(f"{env_id} {method} seed {seed}: success {run['success']} -> to {args.target}: "
                      f"{run['interactions_to_target']} ({run['wall_s']} s)", flush=True)  # fmt: skip
            reached = [r["interactions_to_target"] for r in runs]
            results[env_id][method] = {
                "runs": runs,
                "success": mean_and_spread([r["success"] for r in runs], band="minmax"),
                "x_nominal": list(range(0, settings["interactions"] + 1, settings["eval_every"])),
                "seeds_reaching_target": sum(r is not None for r in reached),
                "interactions_to_target": reached,
                "median_interactions_to_target": float(np.median([r for r in reached if r is not None]))
                if any(r is not None for r in reached) else None,
                "best_success_mean": float(np.max(np.mean([r["success"] for r in runs], axis=0))),
                "final_success_mean": float(np.mean([r["success"][-1] for r in runs])),
            }  # fmt: skip
    figure = plot(results, args.target)
    data = {
        "settings": dict(
            settings,
            target=args.target,
            alpha=args.alpha,
            threads=args.threads,
            ppo={e: zoo_ppo_hyperparams(e) for e in args.envs},
            dirpg={e: dirpg_settings(e) for e in args.envs},
        ),  # fmt: skip
        "results": results,
    }
    save_results(args.out, "vs_ppo", data, figure, started)
    return data


def plot(results: dict[str, dict[str, Any]], target: float) -> Any:
    """:return: one panel per env: success rate of the greedy policy against interactions, DirPG and PPO"""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 3.8), squeeze=False)
    for ax, (env_id, methods) in zip(axes[0], results.items()):
        for method, res in methods.items():
            plot_band(ax, res["x_nominal"], res["success"], "DirPG (α=0.3)" if method == "dirpg" else "PPO (rl-zoo3)")
        ax.axhline(target, color="gray", linewidth=0.8, linestyle=":")
        ax.set(title=env_id.replace("MiniGrid-", ""), xlabel="interactions", ylabel="greedy success rate (held-out)",
               ylim=(-0.02, 1.02))  # fmt: skip
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    main()
