"""Walking env chains: list their wrapper layers, refuse or remove SB3's ``Monitor``."""

from __future__ import annotations

import copy

import gymnasium as gym
from stable_baselines3.common.monitor import Monitor

from sb3_dirpg.simulator.cloners import env_name


def wrapper_layers(env: gym.Env) -> list[gym.Wrapper]:
    """:param env: an env chain
    :return: its wrapper layers, outermost first (the unwrapped env excluded)"""
    layers = []
    while isinstance(env, gym.Wrapper):
        layers.append(env)
        env = env.env
    return layers


def refuse_monitor(env: gym.Env, layers: list[gym.Wrapper]) -> None:
    """:param env: the env chain
    :param layers: its wrapper layers
    :raises ValueError: when a layer is SB3's ``Monitor``"""
    if any(isinstance(layer, Monitor) for layer in layers):
        raise ValueError(
            f"{env_name(env)}: the env chain contains stable_baselines3's Monitor. Search steps must not be recorded as "
            "episodes: wrap sb3_dirpg.simulator.strip_monitor(env) instead (it returns the same chain without Monitor)."
        )


def strip_monitor(env: gym.Env) -> gym.Env:
    """Return an env chain equal to ``env`` but without any ``stable_baselines3.common.monitor.Monitor`` layer.

    Layers below the deepest Monitor and the unwrapped env are shared with ``env``; layers above a Monitor are shallow
    copies (``copy.copy``) re-pointed at the layer below, so ``env`` itself is not modified. The copies share mutable
    attribute values (lists, dicts) with the originals.

    :param env: an env, possibly wrapped
    :return: ``env`` itself when it contains no Monitor, else the new chain
    """
    chain = wrapper_layers(env)
    monitors = [i for i, layer in enumerate(chain) if isinstance(layer, Monitor)]
    if not monitors:
        return env
    deepest = monitors[-1]
    below = chain[deepest].env
    for layer in reversed(chain[:deepest]):
        if isinstance(layer, Monitor):
            continue
        layer = copy.copy(layer)
        layer.env = below
        if "_cached_spec" in vars(layer):
            layer._cached_spec = None  # the cached spec may list the removed Monitor
        below = layer
    return below
