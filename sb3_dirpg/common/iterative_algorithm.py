"""The learn loop shared by every algorithm of the package: collect, update, until enough interactions; log."""

from __future__ import annotations

import sys
import time
from abc import abstractmethod
from typing import TypeVar

from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.type_aliases import MaybeCallback
from stable_baselines3.common.utils import safe_mean

SelfIterativeAlgorithm = TypeVar("SelfIterativeAlgorithm", bound="IterativeAlgorithm")


class IterativeAlgorithm(BaseAlgorithm):
    """A ``BaseAlgorithm`` whose ``learn`` repeats :meth:`collect_rollouts` then :meth:`train` until ``total_timesteps``
    interactions have been made, and dumps the ``time/`` and ``rollout/`` statistics (plus the subclass's own,
    :meth:`record_logs`) every ``log_interval`` iterations. The two methods have SB3's names and contracts: the
    collection keeps what the update needs on the model (as SB3's ``rollout_buffer``) and says whether to go on; the
    update takes no argument. Unlike SB3's on-policy loop, the update comes before its iteration's progress update and
    log dump, so the ``train/`` values are dumped with their iteration.
    """

    def check_can_learn(self) -> None:
        """Raise a clear error when ``learn`` cannot run (e.g. there is no env); called before any work."""
        if self.env is None:
            raise ValueError(f"{type(self).__name__}.learn() needs an env: pass one to the constructor or call set_env()")

    @abstractmethod
    def collect_rollouts(self, callback: BaseCallback) -> bool:
        """Collect what one update needs and keep it on the model for :meth:`train`, calling the callback as the
        interactions are made.

        :param callback: the training callback
        :return: False when the callback asked to stop (no update is made then)
        """

    @abstractmethod
    def train(self) -> None:
        """Make one update from what :meth:`collect_rollouts` collected."""

    def learn(
        self: SelfIterativeAlgorithm,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int = 1,
        tb_log_name: str | None = None,
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> SelfIterativeAlgorithm:
        """Train for at least ``total_timesteps`` environment interactions.

        :param total_timesteps: interactions to train for (every simulator step counts)
        :param callback: callback(s), called once per lockstep iteration of the collection
        :param log_interval: dump the logs every this many iterations
        :param tb_log_name: name of the tensorboard run (default: the algorithm's class name)
        :param reset_num_timesteps: reset ``num_timesteps`` (False to continue a previous run)
        :param progress_bar: show a progress bar (needs ``tqdm`` and ``rich``: ``pip install sb3-dirpg[extra]``)
        :return: the trained model
        """
        self.check_can_learn()
        tb_log_name = type(self).__name__ if tb_log_name is None else tb_log_name
        total_timesteps, callback = self._setup_learn(
            total_timesteps, callback, reset_num_timesteps, tb_log_name, progress_bar
        )
        callback.on_training_start(locals(), globals())
        iteration = 0
        while self.num_timesteps < total_timesteps:
            if not self.collect_rollouts(callback):
                break
            self.train()
            iteration += 1
            self._update_current_progress_remaining(self.num_timesteps, total_timesteps)
            if log_interval is not None and iteration % log_interval == 0:
                self.dump_logs(iteration)
        callback.on_training_end()
        return self

    def record_logs(self) -> None:
        """Record the subclass's own statistics before each dump (none by default)."""

    def dump_logs(self, iteration: int = 0) -> None:
        """Write the ``time/`` and ``rollout/`` statistics and the subclass's own, then dump every recorded value.

        :param iteration: number of iterations in this ``learn`` call
        """
        elapsed = max((time.time_ns() - self.start_time) / 1e9, sys.float_info.epsilon)
        fps = int((self.num_timesteps - self._num_timesteps_at_start) / elapsed)
        self.logger.record("time/iterations", iteration, exclude="tensorboard")
        if self.ep_info_buffer:
            self.logger.record("rollout/ep_rew_mean", safe_mean([ep["r"] for ep in self.ep_info_buffer]))
            self.logger.record("rollout/ep_len_mean", safe_mean([ep["l"] for ep in self.ep_info_buffer]))
        if self.ep_success_buffer:
            self.logger.record("rollout/success_rate", safe_mean(self.ep_success_buffer))
        self.record_logs()
        self.logger.record("time/fps", fps)
        self.logger.record("time/time_elapsed", int(elapsed), exclude="tensorboard")
        self.logger.record("time/total_timesteps", self.num_timesteps, exclude="tensorboard")
        self.logger.record("time/episodes", self._episode_num, exclude="tensorboard")
        self.logger.dump(step=self.num_timesteps)
