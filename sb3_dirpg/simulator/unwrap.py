"""Remove SB3's ``Monitor`` from an env chain without touching the user's env objects."""

from __future__ import annotations

import copy

import gymnasium as gym
from stable_baselines3.common.monitor import Monitor


def strip_monitor(env: gym.Env) -> gym.Env:
    """Return an env chain equal to ``env`` but without any ``stable_baselines3.common.monitor.Monitor`` layer.

    Layers below the deepest Monitor and the unwrapped env are shared with ``env``; layers above a Monitor are shallow
    copies (``copy.copy``) re-pointed at the layer below, so ``env`` itself is not modified. The copies share mutable
    attribute values (lists, dicts) with the originals.

    :param env: an env, possibly wrapped
    :return: ``env`` itself when it contains no Monitor, else the new chain
    """
    chain = []
    layer = env
    while isinstance(layer, gym.Wrapper):
        chain.append(layer)
        layer = layer.env
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
