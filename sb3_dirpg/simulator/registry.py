"""Registry of cloners: how to snapshot and restore the base (unwrapped) env of a given class."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import gymnasium as gym


@runtime_checkable
class Cloner(Protocol):
    """Copies the mutable state of an *unwrapped* env and puts it back.

    The RNG state of ``env.np_random`` and the state of wrappers are handled by
    :class:`~sb3_dirpg.simulator.SimulatorWrapper`; a cloner only covers the env's own fields
    (a :class:`ChainCloner` covers the whole chain instead).
    """

    def snapshot(self, env: gym.Env) -> Any:
        """:param env: the unwrapped env
        :return: an opaque state that ``restore`` accepts; it must not alias mutable env data"""

    def restore(self, env: gym.Env, state: Any) -> None:
        """:param env: the unwrapped env
        :param state: a value returned by ``snapshot`` on an env of the same class"""


@runtime_checkable
class ChainCloner(Cloner, Protocol):
    """A cloner of the whole env chain that is told about resets and steps, for strategies such as
    :class:`~sb3_dirpg.simulator.ReplayCloner` that rebuild a state rather than copy it.

    Unlike a plain :class:`Cloner`, ``snapshot`` and ``restore`` receive the *chain* (the env inside the
    :class:`~sb3_dirpg.simulator.SimulatorWrapper`), not the unwrapped env, and cover all of it: the wrapper saves no
    RNG or wrapper-layer state beside them. The wrapper calls :meth:`for_chain` once when it is built and keeps the
    cloner it returns, then :meth:`before_reset` before every reset of the chain and :meth:`after_step` after every
    step it forwards. The cloner kept may hold the episode of its chain, so a wrapper never shares it with another.
    """

    snapshot_label: str  # a word naming the kind of snapshot, shown in the snapshot's repr

    def for_chain(self, chain: gym.Env) -> ChainCloner:
        """:param chain: the env inside the SimulatorWrapper
        :return: the cloner to use for this chain (a new one when it records per-chain state)"""

    def before_reset(self, chain: gym.Env, seed: int | None, options: dict[str, Any] | None) -> int | None:
        """:param chain: the env inside the SimulatorWrapper
        :param seed: the seed the wrapper's ``reset`` was called with
        :param options: the reset options
        :return: the seed to reset the chain with"""

    def after_step(self, action: Any) -> None:
        """:param action: the action the chain just took"""


class NondeterministicEnvError(ValueError):
    """Stepping again from a restored snapshot gave a different result: the snapshot does not capture the whole env state."""


class NotClonableError(ValueError):
    """The env's state cannot be copied (for example it holds a lock, a socket or an external process)."""


_REGISTRY: dict[type, Cloner] = {}
_WRAPPER_ATTRS: dict[type, tuple[str, ...]] = {}


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


def register_wrapper_attrs(wrapper_class: type, attrs: tuple[str, ...] | list[str]) -> None:
    """Declare which instance attributes of a wrapper class hold its state (an empty tuple: the wrapper is stateless).

    :class:`~sb3_dirpg.simulator.SimulatorWrapper` saves exactly these attributes for layers of exactly this class;
    layers of an undeclared class get a shallow copy of all their instance attributes except ``env`` and static objects.

    :param wrapper_class: a ``gymnasium.Wrapper`` subclass (matched exactly, not its subclasses)
    :param attrs: the names of the attributes to save and restore
    """
    if not (isinstance(wrapper_class, type) and issubclass(wrapper_class, gym.Wrapper)):
        raise TypeError(f"register_wrapper_attrs: expected a gymnasium.Wrapper subclass, got {wrapper_class!r}")
    _WRAPPER_ATTRS[wrapper_class] = tuple(attrs)


def find_wrapper_attrs(wrapper: gym.Wrapper) -> tuple[str, ...] | None:
    """Return the declared state attributes of a wrapper layer, or None when its class was not declared.

    :param wrapper: a wrapper layer
    :return: the attribute names, or None
    """
    return _WRAPPER_ATTRS.get(type(wrapper))
