"""REINFORCE on the DirPG simulator budget: independent trajectories from the same seeded start (paper, section 6)."""

from __future__ import annotations

from typing import Any, TypeVar

import torch as th
from stable_baselines3.common.type_aliases import GymEnv, Schedule

from sb3_dirpg.baselines.rollout_algorithm import RolloutAlgorithm
from sb3_dirpg.common.policies import DirPGPolicy

SelfReinforce = TypeVar("SelfReinforce", bound="Reinforce")

VARIANTS = ("trajectory", "action")


class Reinforce(RolloutAlgorithm):
    """REINFORCE with ``n_rollouts`` independent trajectories per episode, all started from the episode's seeded reset.

    The update is the score-function gradient averaged over the rollouts of all episodes of a batch (one optimizer
    step per batch), as in the paper's baselines (appendix "Additional Experimental Details", MiniGrid):

    * ``variant="trajectory"``: ``sum_t grad log pi(a_t|s_t) * R``, ``R = sum_t gamma^t r_t`` the rollout's return.
    * ``variant="action"``: ``sum_t grad log pi(a_t|s_t) * (sum_{i>=t} gamma^(i-t) r_i - b)``, reward-to-go minus the
      paper's baseline ``b``, the mean reward over all time steps of the batch.

    :param policy: policy class or alias (``MlpPolicy``, ``CnnPolicy``, ``MultiInputPolicy``)
    :param env: env, DummyVecEnv or registered env id
    :param learning_rate: learning rate or schedule
    :param n_rollouts: trajectories sampled per episode (the paper uses 30)
    :param variant: ``"trajectory"`` (whole return) or ``"action"`` (reward-to-go minus the mean-reward baseline)
    :param kwargs: the other arguments of :class:`~sb3_dirpg.baselines.rollout_algorithm.RolloutAlgorithm`
        (``batch_episodes``, ``max_episode_steps``, ``gamma``, ``max_grad_norm``, ``policy_kwargs``, ``seed``, ...)
    """

    def __init__(
        self,
        policy: str | type[DirPGPolicy],
        env: GymEnv | str | None,
        learning_rate: float | Schedule = 1e-3,
        n_rollouts: int = 30,
        variant: str = "trajectory",
        **kwargs: Any,
    ) -> None:
        if variant not in VARIANTS:
            raise ValueError(f"Reinforce: variant must be one of {VARIANTS}, got {variant!r}")
        self.variant = variant
        super().__init__(policy, env, n_rollouts, learning_rate=learning_rate, **kwargs)

    def train(self) -> None:
        """One REINFORCE update, averaged over every rollout of the batch in :attr:`rollouts`."""
        rollouts = self.collected_rollouts()
        if self.variant == "trajectory":
            weights = rollouts.returns(self.gamma)[rollouts.rollout]
        else:
            baseline = float(rollouts.rewards.mean())
            weights = rollouts.rewards_to_go(self.gamma) - baseline
            self.logger.record_mean("train/baseline", baseline)
        log_prob = self._log_prob(rollouts)
        weights_t = th.as_tensor(weights, dtype=log_prob.dtype, device=self.device)
        loss = -(weights_t * log_prob).sum() / len(rollouts.lengths)
        self._update(loss)
