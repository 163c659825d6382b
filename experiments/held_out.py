"""Evaluation of any SB3 model on held-out env seeds, with sampled and greedy actions, as a callback that plugs into
rl-zoo3's ``callback`` hyperparameter (so every method of an experiment is trained by rl-zoo3's own entry point).

The callback evaluates at fixed fractions of a budget counted in environment interactions (``model.num_timesteps``),
saves a checkpoint that rl-zoo3's ``--trained-agent`` can resume from (the model, and beside it the ``VecNormalize``
statistics where the model has them), and appends the point to a JSON record. Evaluation draws its sampled actions
from its own seeded torch generator state, so it does not change the training run's random stream.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback

from experiments.common import write_json

EVAL_SEED = 12345  # torch seed of the sampled-action evaluation


def build_env(env_id: str, env_kwargs: dict[str, Any] | None = None, env_wrapper: Any = None) -> gym.Env:
    """Make an env the way rl-zoo3 does for one hyperparameter entry, without its ``Monitor``.

    :param env_id: a registered env id
    :param env_kwargs: the entry's ``env_kwargs``
    :param env_wrapper: the entry's ``env_wrapper`` (an import path, a list of them, or dicts with keyword arguments)
    :return: the wrapped env
    """
    import minigrid  # noqa: F401  (registers MiniGrid's ids)
    from rl_zoo3.utils import get_wrapper_class

    import sb3_dirpg  # noqa: F401  (registers the project's ids)

    env = gym.make(env_id, **(env_kwargs or {}))
    wrap = get_wrapper_class({"env_wrapper": env_wrapper}) if env_wrapper else None
    return wrap(env) if wrap is not None else env


def is_success(reward: float, terminated: bool, info: dict[str, Any]) -> bool:
    """Success on MiniGrid: the goal reached or the mission completed, a terminal step with positive MiniGrid reward.

    :param reward: the step's reward (MiniGrid's own, unless a wrapper says otherwise in ``info``)
    :param terminated: whether the step ended the episode
    :param info: the step's info; ``is_success`` wins where a wrapper sets it
    :return: whether the episode succeeded on this step
    """
    if "is_success" in info:
        return bool(info["is_success"])
    return bool(terminated and reward > 0)


def _stack(observations: Sequence[Any]) -> Any:
    """:param observations: single observations (arrays, ints or dicts of them)
    :return: one batch"""
    if isinstance(observations[0], dict):
        return {key: np.stack([np.asarray(obs[key]) for obs in observations]) for key in observations[0]}
    return np.stack([np.asarray(obs) for obs in observations])


def action_masks_of(env: gym.Env) -> np.ndarray | None:
    """:param env: an env, possibly wrapped
    :return: its legal actions (sb3-contrib's ``action_masks()``, from the outermost layer that has one), or None when
        no layer has one"""
    try:
        masks = env.get_wrapper_attr("action_masks")
    except AttributeError:
        return None
    return np.asarray(masks(), dtype=bool)


def predict_action(model: BaseAlgorithm, obs: Any, env: gym.Env, deterministic: bool) -> int:
    """One action of the model's policy, among the env's legal actions where it gives masks (as the table evaluates).

    :param model: a trained model (one whose ``predict`` takes ``action_masks`` where the env has masks)
    :param obs: the env's current observation
    :param env: the env, wrapped as the model saw it in training
    :param deterministic: greedy action, else a sampled one
    :return: the action
    :raises ValueError: when the model reads the observation as a batch (it was trained on other observations)
    """
    masks = action_masks_of(env)
    extra = {} if masks is None else {"action_masks": masks}
    action = np.asarray(model.predict(obs, deterministic=deterministic, **extra)[0]).reshape(-1)
    if action.size != 1:  # SB3 read the observation as a batch: the model was trained on other observations
        raise ValueError(
            f"the model gave {action.size} actions for one observation of {env.observation_space}: it was trained on "
            "other observations (a variant's model needs the variant's --params, with its env_wrapper)"
        )
    return int(action[0])


def evaluate_held_out(
    model: BaseAlgorithm, envs: Sequence[gym.Env], seeds: Sequence[int], deterministic: bool, trained: bool = False
) -> dict[str, float]:
    """Play the model's policy (no search) on one episode per seed, all episodes stepped together.

    Observations go through the model's ``VecNormalize`` statistics where it has them (without updating them). Where
    the envs give action masks (sb3-contrib's ``action_masks()``), the policy's actions are drawn among the legal ones.

    :param model: a trained or training model
    :param envs: one env per seed (reused between evaluations)
    :param seeds: the episodes' reset seeds
    :param deterministic: greedy actions, else sampled ones
    :param trained: act with the model's trained policy (``model.policy``) instead of ``model.predict``, which acts with
        the weights' moving average where the model keeps one (``ema_decay``)
    :return: ``success`` rate, mean ``return`` (the env's reward) and mean ``minigrid_return`` (MiniGrid's own reward)
    """
    if len(envs) != len(seeds):
        raise ValueError(f"{len(envs)} envs but {len(seeds)} seeds")
    normalizer = model.get_vec_normalize_env()
    predict = model.policy.predict if trained else model.predict
    obs = [env.reset(seed=int(seed))[0] for env, seed in zip(envs, seeds)]
    returns, minigrid_returns = np.zeros(len(envs)), np.zeros(len(envs))
    success = np.zeros(len(envs), dtype=bool)
    live = list(range(len(envs)))
    while live:
        batch = _stack([obs[i] for i in live])
        if normalizer is not None:
            batch = normalizer.normalize_obs(batch)
        masks = [action_masks_of(envs[i]) for i in live]
        if masks[0] is None:
            actions, _ = predict(batch, deterministic=deterministic)
        else:
            actions, _ = predict(batch, deterministic=deterministic, action_masks=np.stack(masks))
        still = []
        for i, action in zip(live, np.asarray(actions).reshape(len(live))):
            obs[i], reward, terminated, truncated, info = envs[i].step(int(action))
            returns[i] += float(reward)
            minigrid_returns[i] += float(info.get("minigrid_reward", reward))
            if terminated or truncated:
                success[i] = is_success(float(reward), terminated, info)
            else:
                still.append(i)
        live = still
    return {
        "success": float(success.mean()),
        "return": float(returns.mean()),
        "minigrid_return": float(minigrid_returns.mean()),
    }


class HeldOutEvaluation(BaseCallback):
    """Evaluate on held-out seeds at ``0, budget/points, 2 budget/points, ..., budget`` interactions, checkpoint, and
    record.

    The record (``record`` path, JSON) holds ``points``: one dict per evaluation with ``interactions``, ``wall_s``
    (training time so far, evaluations excluded), and ``sampled`` and ``greedy`` results of
    :func:`evaluate_held_out`. A resumed run passes the interactions already made as ``offset`` and appends to the
    same record. The checkpoint is ``<folder>/model.zip`` and, for a model with ``VecNormalize``,
    ``<folder>/<env_id>/vecnormalize.pkl``, where rl-zoo3's ``--trained-agent <folder>/model.zip`` finds it.

    :param record: path of the JSON record (its folder holds the checkpoint)
    :param env_id: the env id
    :param budget: the run's total interactions
    :param env_kwargs: the hyperparameter entry's ``env_kwargs`` (the evaluation env is built like the training one)
    :param env_wrapper: the hyperparameter entry's ``env_wrapper``
    :param points: evaluations after the first (every ``budget / points`` interactions)
    :param seeds: first held-out seed and number of seeds
    :param offset: interactions made before this process (a resumed run)
    :param stop_level: stop training once sampled and greedy success are both at least this at ``stop_after``
        evaluations in a row (the record then holds ``stopped_early``: the interactions where it stopped); None: never
    :param stop_after: evaluations in a row for ``stop_level``
    :param verbose: print each point
    """

    def __init__(
        self,
        record: str,
        env_id: str,
        budget: int,
        env_kwargs: dict[str, Any] | None = None,
        env_wrapper: Any = None,
        points: int = 20,
        seeds: tuple[int, int] = (10_000, 200),
        offset: int = 0,
        stop_level: float | None = None,
        stop_after: int = 3,
        verbose: int = 1,
    ) -> None:
        super().__init__(verbose)
        if budget <= 0 or points <= 0:
            raise ValueError(f"budget and points must be positive, got {budget} and {points}")
        if (stop_level is not None and not 0 < stop_level <= 1) or int(stop_after) < 1:
            raise ValueError(f"stop_level must be in (0, 1] or None and stop_after positive, got {stop_level}, {stop_after}")
        self.stop_level = stop_level
        self.stop_after = int(stop_after)
        self.record_path = Path(record)
        self.env_id = env_id
        self.budget = int(budget)
        self.env_kwargs = dict(env_kwargs or {})
        self.env_wrapper = env_wrapper
        self.every = self.budget / int(points)
        self.seeds = list(range(int(seeds[0]), int(seeds[0]) + int(seeds[1])))
        self.offset = int(offset)
        self._envs: list[gym.Env] = []
        self._record: dict[str, Any] = {}
        self._next = 0
        self._started = 0.0
        self._eval_s = 0.0

    @property
    def interactions(self) -> int:
        """:return: interactions made by the whole run, this process and the ones it resumes"""
        return self.offset + int(self.model.num_timesteps)

    def _init_callback(self) -> None:
        self.record_path.parent.mkdir(parents=True, exist_ok=True)
        if self.record_path.exists():
            self._record = json.loads(self.record_path.read_text())
            # a resumed run: drop points made after the checkpoint it resumes from
            self._record["points"] = [p for p in self._record["points"] if p["interactions"] <= self.offset]
            self._record["budget"] = self.budget  # a run may be resumed to a larger budget than it first had
        else:
            self._record = {"env_id": self.env_id, "budget": self.budget, "points": []}
        done = [p["interactions"] for p in self._record["points"]]
        self._next = 0 if not done else int(np.floor(max(done) / self.every + 1e-9)) + 1
        self._envs = [build_env(self.env_id, self.env_kwargs, self.env_wrapper) for _ in self.seeds]

    def _on_training_start(self) -> None:
        self._started = time.perf_counter()
        self._eval_s = 0.0
        if self._next == 0:
            self._evaluate()

    def _on_step(self) -> bool:
        if self.interactions >= self._next * self.every - 1e-9 and self._next * self.every <= self.budget + 1e-9:
            self._evaluate()
            if self.reached_stop_level():
                self._record["stopped_early"] = self._record["points"][-1]["interactions"]
                write_json(self.record_path, self._record)
                return False
        return True

    def reached_stop_level(self) -> bool:
        """:return: whether the last ``stop_after`` evaluations all have sampled and greedy success of at least
            ``stop_level``"""
        last = self._record["points"][-self.stop_after :]
        return (
            self.stop_level is not None
            and len(last) == self.stop_after
            and all(min(p["sampled"]["success"], p["greedy"]["success"]) >= self.stop_level for p in last)
        )

    def _on_training_end(self) -> None:
        done = self._record["points"][-1]["interactions"] if self._record["points"] else -1
        if self.interactions >= self.budget and done < self.budget:
            self._evaluate()

    def _evaluate(self) -> None:
        started = time.perf_counter()
        points = self._record["points"]
        train_s = started - self._started - self._eval_s
        with th.random.fork_rng(devices=[]):
            th.manual_seed(EVAL_SEED)
            sampled = evaluate_held_out(self.model, self._envs, self.seeds, deterministic=False)
        greedy = evaluate_held_out(self.model, self._envs, self.seeds, deterministic=True)
        point = {
            "interactions": self.interactions,
            "wall_s": round(self._base_wall() + train_s, 2),
            "sampled": sampled,
            "greedy": greedy,
        }
        points.append(point)
        self._save_checkpoint()
        write_json(self.record_path, self._record)
        self._next = int(np.floor(self.interactions / self.every + 1e-9)) + 1
        self._eval_s += time.perf_counter() - started
        if self.verbose:
            print(
                f"{self.env_id}: {point['interactions']:>9d} interactions, success sampled {sampled['success']:.3f} "
                f"greedy {greedy['success']:.3f} ({point['wall_s']:.0f} s training)",
                flush=True,
            )

    def _base_wall(self) -> float:
        """:return: the training wall time of the runs this process resumes"""
        earlier = [p for p in self._record["points"] if p["interactions"] <= self.offset]
        return float(earlier[-1]["wall_s"]) if earlier else 0.0

    def _save_checkpoint(self) -> None:
        folder = self.record_path.parent
        self.model.save(folder / "model.zip")
        normalizer = self.model.get_vec_normalize_env()
        if normalizer is not None:
            (folder / self.env_id).mkdir(exist_ok=True)
            normalizer.save(str(folder / self.env_id / "vecnormalize.pkl"))
