"""Shared part of the sampling baselines (REINFORCE, CEM): ``n_rollouts`` trajectories per seeded episode, one update."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.type_aliases import GymEnv, Schedule

from sb3_dirpg.baselines.rollouts import Rollouts, collect_rollouts
from sb3_dirpg.common.policies import DirPGPolicy
from sb3_dirpg.common.simulator_algorithm import SimulatorAlgorithm


def check_positive_int(algo: str, name: str, value: Any) -> None:
    """Raise a ValueError naming the argument unless ``value`` is a positive integer.

    :param algo: name of the algorithm, for the message
    :param name: name of the argument
    :param value: its value
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{algo}: {name} must be a positive integer, got {value!r}")


class RolloutAlgorithm(SimulatorAlgorithm):
    """Base of the baselines that sample ``n_rollouts`` independent trajectories from the root of every episode.

    Each iteration draws ``batch_episodes`` episode seeds, samples all rollouts of all episodes in lockstep
    (:meth:`collect_rollouts`, with :func:`~sb3_dirpg.baselines.rollouts.collect_rollouts`) and makes one update
    (:meth:`train`). Every rollout is an on-policy sample, so every rollout's undiscounted return goes into
    ``rollout/ep_rew_mean`` (``time/episodes`` counts rollouts). ``num_timesteps`` counts every simulator step;
    ``callback.on_step()`` is called once per lockstep iteration and a False return stops training before the update.

    The sampled batch waits in :attr:`rollouts` (not saved with the model) for :meth:`train`, as SB3's rollout buffer.

    :param n_rollouts: trajectories sampled per episode
    :param kwargs: the arguments of :class:`~sb3_dirpg.common.simulator_algorithm.SimulatorAlgorithm` (without ``heuristic``)
    """

    def __init__(
        self,
        policy: str | type[DirPGPolicy],
        env: GymEnv | str | None,
        n_rollouts: int,
        learning_rate: float | Schedule = 1e-3,
        batch_episodes: int | None = None,
        max_episode_steps: int | None = None,
        gamma: float = 1.0,
        max_grad_norm: float | None = None,
        policy_kwargs: dict[str, Any] | None = None,
        stats_window_size: int = 100,
        tensorboard_log: str | None = None,
        seed: int | None = None,
        verbose: int = 0,
        device: th.device | str = "auto",
        _init_setup_model: bool = True,
        simulator_backend: str = "auto",
    ) -> None:
        check_positive_int(type(self).__name__, "n_rollouts", n_rollouts)
        self.n_rollouts = int(n_rollouts)
        self.rollouts: Rollouts | None = None  # the batch that :meth:`collect_rollouts` sampled for :meth:`train`
        super().__init__(
            policy,
            env,
            learning_rate=learning_rate,
            batch_episodes=batch_episodes,
            max_episode_steps=max_episode_steps,
            gamma=gamma,
            heuristic=None,
            max_grad_norm=max_grad_norm,
            policy_kwargs=policy_kwargs,
            stats_window_size=stats_window_size,
            tensorboard_log=tensorboard_log,
            seed=seed,
            verbose=verbose,
            device=device,
            _init_setup_model=_init_setup_model,
            simulator_backend=simulator_backend,
        )

    def collect(self, seeds: list[int], callback: BaseCallback | None = None) -> Rollouts | None:
        """Sample ``n_rollouts`` trajectories of the current policy per episode (no update).

        :param seeds: episode seeds
        :param callback: called once per lockstep iteration (counts ``num_timesteps``), or None
        :return: the rollouts, or None when the callback asked to stop
        """
        if self.simulator is None:
            raise ValueError(f"{type(self).__name__}.collect() needs an env: pass one to the constructor or call set_env()")
        hook = self._iteration_hook(callback) if callback is not None else None
        return collect_rollouts(
            self.simulator, self.policy_logits, seeds, self.n_rollouts, self._search_rng, self.horizon, on_iteration=hook
        )

    def collect_rollouts(self, callback: BaseCallback) -> bool:
        """Sample the rollouts of the next batch of episodes into :attr:`rollouts` and record them in the ``rollout/``
        statistics.

        :param callback: the training callback
        :return: False when the callback asked to stop
        """
        self._start_collection(callback)
        self.rollouts = rollouts = self.collect(self.episode_seeds(), callback)
        if rollouts is None:
            return False
        for ret, length, success in zip(rollouts.returns().tolist(), rollouts.lengths.tolist(), rollouts.success.tolist()):
            self._record_episode(ret, length, success)
        self._end_collection(callback, rollouts=rollouts)
        return True

    @abstractmethod
    def train(self) -> None:
        """One update from the batch of rollouts in :attr:`rollouts`."""

    def _log_prob(self, rollouts: Rollouts, rows: np.ndarray | None = None) -> th.Tensor:
        """Differentiable masked log-probabilities of the sampled actions, in one batched forward.

        :param rollouts: the sampled trajectories
        :param rows: the steps to evaluate, or None for all
        :return: ``log pi(a_t | s_t)`` of those steps
        """
        obs = rollouts.obs if rows is None else [rollouts.obs[i] for i in rows.tolist()]
        masks = rollouts.masks if rows is None else rollouts.masks[rows]
        actions = rollouts.actions if rows is None else rollouts.actions[rows]
        dist = self.policy.get_distribution(self.obs_to_policy_tensor(obs), action_masks=masks)
        return dist.log_prob(th.as_tensor(actions, device=self.device))

    def _update(self, loss: th.Tensor) -> None:
        """Step the optimizer on ``loss`` and log the update.

        :param loss: the scalar loss
        """
        self.logger.record("train/learning_rate", self.lr_schedule(self._current_progress_remaining))
        grad_norm = self._optimizer_step(loss)
        self.logger.record_mean("train/loss", float(loss.detach()))
        self.logger.record_mean("train/grad_norm", grad_norm)
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")

    def collected_rollouts(self) -> Rollouts:
        """:return: the batch that :meth:`collect_rollouts` sampled, for :meth:`train`"""
        if self.rollouts is None:
            raise RuntimeError(f"{type(self).__name__}.train() needs a batch: call collect_rollouts() (or learn()) first")
        return self.rollouts

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "rollouts"]
