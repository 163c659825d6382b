"""Cross-entropy method on the DirPG simulator budget: imitate the best rollouts of each seeded episode (paper, section 6)."""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np
from stable_baselines3.common.type_aliases import GymEnv, Schedule

from sb3_dirpg.baselines.rollout_algorithm import RolloutAlgorithm, check_positive_int
from sb3_dirpg.baselines.rollouts import Rollouts
from sb3_dirpg.common.policies import DirPGPolicy

SelfCEM = TypeVar("SelfCEM", bound="CEM")


class CEM(RolloutAlgorithm):
    """Cross-entropy method: per episode, maximise the log-likelihood of the ``n_elite`` best of ``n_rollouts`` rollouts.

    All rollouts of an episode start from its seeded reset. The update ascends the mean of ``log P(a|S)`` over the elite
    trajectories of all episodes of a batch (one optimizer step per batch). Ties in the return are broken by sampling
    order, which is random since the rollouts are independent.

    :param policy: policy class or alias (``MlpPolicy``, ``CnnPolicy``, ``MultiInputPolicy``)
    :param env: env, DummyVecEnv or registered env id
    :param learning_rate: learning rate or schedule
    :param n_rollouts: trajectories sampled per episode (the paper uses 30)
    :param n_elite: best trajectories per episode that the policy imitates, ``1 <= n_elite <= n_rollouts`` (paper: 2)
    :param kwargs: the other arguments of :class:`~sb3_dirpg.baselines.rollout_algorithm.RolloutAlgorithm`
        (``batch_episodes``, ``max_episode_steps``, ``gamma``, ``max_grad_norm``, ``policy_kwargs``, ``seed``, ...)
    """

    def __init__(
        self,
        policy: str | type[DirPGPolicy],
        env: GymEnv | str | None,
        learning_rate: float | Schedule = 1e-3,
        n_rollouts: int = 30,
        n_elite: int = 2,
        **kwargs: Any,
    ) -> None:
        check_positive_int("CEM", "n_rollouts", n_rollouts)
        check_positive_int("CEM", "n_elite", n_elite)
        if n_elite > n_rollouts:
            raise ValueError(f"CEM: n_elite must be at most n_rollouts ({n_rollouts}), got {n_elite!r}")
        self.n_elite = int(n_elite)
        super().__init__(policy, env, n_rollouts, learning_rate=learning_rate, **kwargs)

    def elite(self, rollouts: Rollouts) -> np.ndarray:
        """:param rollouts: the sampled trajectories
        :return: indices of the ``n_elite`` rollouts with the highest return of each episode, shape (n_episodes, n_elite)"""
        returns = rollouts.returns(self.gamma).reshape(rollouts.n_episodes, rollouts.n_rollouts)
        best = np.argsort(-returns, axis=1, kind="stable")[:, : self.n_elite]
        return best + rollouts.n_rollouts * np.arange(rollouts.n_episodes)[:, None]

    def train(self) -> None:
        """One CEM update: ascend the mean log-likelihood of the elite rollouts of the batch in :attr:`rollouts`."""
        rollouts = self.collected_rollouts()
        elite = self.elite(rollouts).ravel()
        is_elite = np.zeros(len(rollouts.lengths), dtype=bool)
        is_elite[elite] = True
        rows = np.flatnonzero(is_elite[rollouts.rollout])
        loss = -self._log_prob(rollouts, rows).sum() / len(elite)
        self.logger.record_mean("train/elite_return_mean", float(rollouts.returns(self.gamma)[elite].mean()))
        self._update(loss)
