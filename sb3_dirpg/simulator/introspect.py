"""What ``SimulatorWrapper`` reads off an env chain: its ``action_masks`` method, the all-legal mask of its action
space, its horizon."""

from __future__ import annotations

from collections.abc import Callable

import gymnasium as gym
import gymnasium.wrappers.common
import numpy as np


def gymnasium_time_limit() -> type[gym.Wrapper]:
    """:return: gymnasium's own ``TimeLimit`` class, also after rl-zoo3's import replaced the name by a subclass of it
        (``rl_zoo3.gym_patches``); an env built before that import still holds the original class"""
    named = gymnasium.wrappers.common.TimeLimit
    return next(cls for cls in named.__mro__ if cls.__module__ == "gymnasium.wrappers.common" and cls.__name__ == "TimeLimit")


def find_action_masks(env: gym.Env, layers: list[gym.Wrapper]) -> Callable[[], np.ndarray] | None:
    """:param env: the env chain
    :param layers: its wrapper layers
    :return: the bound ``action_masks`` method of the outermost layer (or the unwrapped env) that defines one, or None"""
    for layer in [*layers, env.unwrapped]:
        if "action_masks" in vars(layer) or hasattr(type(layer), "action_masks"):
            return layer.action_masks
    return None


def all_legal_mask(space: gym.Space) -> np.ndarray | None:
    """:param space: the action space
    :return: a read-only all-True mask in sb3-contrib's layout, or None for spaces that have no masks"""
    if isinstance(space, gym.spaces.Discrete):
        mask = np.ones(int(space.n), dtype=bool)
    elif isinstance(space, gym.spaces.MultiDiscrete):
        mask = np.ones(int(np.sum(space.nvec)), dtype=bool)
    else:
        return None
    mask.flags.writeable = False
    return mask


def find_horizon(layers: list[gym.Wrapper], base: gym.Env) -> int | None:
    """:param layers: the wrapper layers of an env chain
    :param base: its unwrapped env
    :return: the smallest ``max_episode_steps`` of the ``TimeLimit`` layers, else the env's own ``max_steps`` (MiniGrid
        truncates internally) or ``horizon`` (envs that always end after a fixed number of steps, such as the
        spanning-tree bandit and DeepSea), else None"""
    found = describe_horizon(layers, base)
    return None if found is None else found[0]


def describe_horizon(layers: list[gym.Wrapper], base: gym.Env) -> tuple[int, str] | None:
    """:param layers: the wrapper layers of an env chain
    :param base: its unwrapped env
    :return: the horizon of :func:`find_horizon` and what sets it (``"its TimeLimit"``, ``"its max_steps"``, ...), or
        None"""
    time_limit = gymnasium_time_limit()
    limits = [int(layer._max_episode_steps) for layer in layers if isinstance(layer, time_limit)]
    if limits:
        return min(limits), "its TimeLimit"
    for name in ("max_steps", "horizon"):
        value = getattr(base, name, None)
        if isinstance(value, (int, np.integer)):
            return int(value), f"its {name}"
    return None
