"""SB3's ``evaluate_policy`` that cannot play a masked action: it passes the env's action masks wherever it has them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.type_aliases import GymEnv


def evaluate_policy(
    model: BaseAlgorithm,
    env: GymEnv,
    n_eval_episodes: int = 10,
    deterministic: bool = True,
    render: bool = False,
    callback: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
    reward_threshold: float | None = None,
    return_episode_rewards: bool = False,
    warn: bool = True,
) -> tuple[float, float] | tuple[list[float], list[int]]:
    """Evaluate a model as ``stable_baselines3.common.evaluation.evaluate_policy`` does, with one difference: where the
    env provides ``action_masks()`` (sb3-contrib's convention, e.g.
    :class:`~sb3_dirpg.envs.minigrid.MiniGridNoOpMask`), every ``predict`` gets them, so the policy plays only legal
    actions, as it did in training. SB3's own function passes none: on a masked env it can report a mean reward of 0
    where the policy earns 100. This runs sb3-contrib's maskable ``evaluate_policy`` with masking switched on exactly
    where the env masks.

    :param model: a model whose ``predict`` takes ``action_masks`` (DirPG, the baselines, ``MaskablePPO``)
    :param env: the env (a gymnasium env or a VecEnv)
    :param n_eval_episodes: episodes to play
    :param deterministic: the most likely legal action (else sampled)
    :param render: render the env
    :param callback: called after each step with ``locals()`` and ``globals()``
    :param reward_threshold: raise if the mean reward is below it
    :param return_episode_rewards: return each episode's reward and length instead of the mean and standard deviation
    :param warn: warn where the env has no ``Monitor``
    :return: the mean and standard deviation of the episode rewards, or the lists of rewards and lengths
    """
    from sb3_contrib.common.maskable.evaluation import evaluate_policy as maskable_evaluate_policy
    from sb3_contrib.common.maskable.utils import is_masking_supported

    return maskable_evaluate_policy(
        model,  # type: ignore[arg-type]
        env,
        n_eval_episodes=n_eval_episodes,
        deterministic=deterministic,
        render=render,
        callback=callback,
        reward_threshold=reward_threshold,
        return_episode_rewards=return_episode_rewards,
        warn=warn,
        use_masking=is_masking_supported(env),
    )
