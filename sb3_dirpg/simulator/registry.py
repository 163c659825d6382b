"""Registry of cloners: how to snapshot and restore the base (unwrapped) env of a given class."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import gymnasium as gym


@runtime_checkable
class Cloner(Protocol):
    """Copies the mutable state of an *unwrapped* env and puts it back.

    The RNG state of ``env.np_random`` and the state of wrappers are handled by
    :class:`~sb3_dirpg.simulator.SimulatorWrapper`; a cloner only covers the env's own fields.
    """

    def snapshot(self, env: gym.Env) -> Any:
        """:param env: the unwrapped env
        :return: an opaque state that ``restore`` accepts; it must not alias mutable env data"""

    def restore(self, env: gym.Env, state: Any) -> None:
        """:param env: the unwrapped env
        :param state: a value returned by ``snapshot`` on an env of the same class"""


_REGISTRY: dict[type, Cloner] = {}


def register_cloner(env_class: type, cloner: Cloner) -> None:
    """Use ``cloner`` for every unwrapped env that is an instance of ``env_class`` (the most derived match wins).

    :param env_class: the class of the unwrapped env
    :param cloner: an object with ``snapshot(env)`` and ``restore(env, state)``
    """
    if not isinstance(env_class, type):
        raise TypeError(f"register_cloner: env_class must be a class, got {env_class!r}")
    if not isinstance(cloner, Cloner):
        raise TypeError(f"register_cloner: cloner must have snapshot(env) and restore(env, state) methods, got {cloner!r}")
    _REGISTRY[env_class] = cloner


def find_cloner(env: gym.Env) -> Cloner | None:
    """Return the registered cloner for ``env.unwrapped``, following its class MRO, or None.

    :param env: any env (wrapped or not)
    :return: the cloner, or None when no class in the MRO is registered
    """
    for cls in type(env.unwrapped).__mro__:
        if cls in _REGISTRY:
            return _REGISTRY[cls]
    return None
