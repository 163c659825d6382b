"""Snapshot of an env chain by copying its state: the unwrapped env (through a cloner), its RNG, its wrapper layers."""

from __future__ import annotations

import operator
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec
from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker

from sb3_dirpg.simulator.cloners import DeepcopyCloner
from sb3_dirpg.simulator.copy_utils import MISSING, copy1, restore_rng, save_rng
from sb3_dirpg.simulator.introspect import gymnasium_time_limit
from sb3_dirpg.simulator.registry import Cloner, find_wrapper_attrs, register_wrapper_attrs
from sb3_dirpg.simulator.unwrap import wrapper_layers

# Attributes of wrapper layers that never hold episode state.
_LAYER_STATIC_NAMES = frozenset(
    {
        "env",
        "_action_space",
        "_observation_space",
        "_metadata",
        "_cached_spec",
        "_saved_kwargs",
        "_reward_range",
        "_max_episode_steps",
        "_disable_render_order_enforcing",
        "_action_mask_fn",
    }
)
_LAYER_STATIC_TYPES = (gym.Env, gym.spaces.Space, EnvSpec, type)


class LayerSaver:
    """Saves and restores the state attributes of one wrapper layer.

    Declared attributes (see :func:`~sb3_dirpg.simulator.register_wrapper_attrs`) are read with one ``itemgetter``
    call and kept by reference (they should hold immutable values); the attributes of undeclared layers are found
    by inspection and containers among them are copied one level deep.

    :param layer: the wrapper layer
    """

    __slots__ = ("layer", "names", "generic", "n_keys", "getter")

    def __init__(self, layer: gym.Wrapper) -> None:
        self.layer = layer
        declared = find_wrapper_attrs(layer)
        self.generic = declared is None
        self.names: tuple[str, ...] = self._generic_names() if declared is None else declared
        self.n_keys = len(layer.__dict__)
        # itemgetter with one name returns the value itself: always ask for a tuple
        self.getter = operator.itemgetter(*self.names, *self.names[:1]) if self.names and not self.generic else None

    def _generic_names(self) -> tuple[str, ...]:
        """:return: the instance attributes of an undeclared layer that may hold state"""
        return tuple(
            k
            for k, v in vars(self.layer).items()
            if k not in _LAYER_STATIC_NAMES and not isinstance(v, _LAYER_STATIC_TYPES) and not callable(v)
        )

    def save(self) -> tuple[tuple[str, ...], tuple[Any, ...]]:
        """:return: the attribute names and their values"""
        d = self.layer.__dict__
        if self.getter is not None:
            try:
                return self.names, self.getter(d)
            except KeyError:  # a declared attribute is not set (yet)
                return self.names, tuple([d.get(name, MISSING) for name in self.names])
        if self.generic and len(d) != self.n_keys:  # attributes were added since the names were computed
            self.names = self._generic_names()
            self.n_keys = len(d)
        names = self.names
        return names, tuple([copy1(d.get(name, MISSING)) for name in names])

    def restore(self, saved: tuple[tuple[str, ...], tuple[Any, ...]]) -> None:
        """:param saved: a value returned by :meth:`save`"""
        d = self.layer.__dict__
        copy_values = self.generic
        for name, value in zip(*saved):
            if value is MISSING:
                d.pop(name, None)
            else:
                d[name] = copy1(value) if copy_values else value


class CopyingChainCloner:
    """Snapshot of an env chain by copying: the unwrapped env through a :class:`~sb3_dirpg.simulator.Cloner`, the
    env's RNG state and the state attributes of every wrapper layer (``TimeLimit`` elapsed steps, ...).

    :class:`~sb3_dirpg.simulator.SimulatorWrapper` builds one around every cloner that is not a
    :class:`~sb3_dirpg.simulator.ChainCloner`. It follows that protocol, with nothing to do on reset and step.

    :param cloner: copies the unwrapped env
    :param chain: the env chain to snapshot (the env inside the SimulatorWrapper)
    :raises NotClonableError: when ``cloner`` is a :class:`~sb3_dirpg.simulator.DeepcopyCloner` and the env cannot be
        deep-copied (found now rather than in the middle of a search)
    """

    snapshot_label = "clone"
    __slots__ = ("cloner", "base", "savers", "last_rng")  # faster attribute reads on the snapshot/restore path

    def __init__(self, cloner: Cloner, chain: gym.Env) -> None:
        self.cloner = cloner
        self.base = chain.unwrapped
        if isinstance(cloner, DeepcopyCloner):
            cloner.snapshot(self.base)  # raises NotClonableError
        self.savers = tuple(saver for saver in map(LayerSaver, wrapper_layers(chain)) if saver.generic or saver.names)
        self.last_rng: Any = None

    def for_chain(self, chain: gym.Env) -> CopyingChainCloner:
        """:param chain: an env chain
        :return: a copying cloner of that chain with the same cloner of the unwrapped env"""
        return CopyingChainCloner(self.cloner, chain)

    def before_reset(self, chain: gym.Env, seed: int | None, options: dict[str, Any] | None) -> int | None:
        """:param chain: the env chain
        :param seed: the reset seed
        :param options: the reset options
        :return: ``seed`` unchanged (the state is copied when snapshotted, nothing to record)"""
        return seed

    def after_step(self, action: Any) -> None:
        """:param action: the action taken (not needed: the state is copied when snapshotted)"""

    def snapshot(self, chain: gym.Env) -> tuple[Any, Any, tuple[Any, ...]]:
        """:param chain: the env chain this cloner was built for (its unwrapped env and layers were found then)
        :return: the unwrapped env's state, its RNG state and the state of each stateful layer"""
        base = self.base
        rng = save_rng(base)
        try:
            unchanged = rng == self.last_rng  # most steps draw nothing: share the saved state with the previous snapshot
        except ValueError:  # a bit generator whose state holds arrays (MT19937)
            unchanged = False
        if unchanged:
            rng = self.last_rng
        else:
            self.last_rng = rng
        return self.cloner.snapshot(base), rng, tuple([saver.save() for saver in self.savers])

    def restore(self, chain: gym.Env, state: tuple[Any, Any, tuple[Any, ...]]) -> None:
        """:param chain: the env chain this cloner was built for
        :param state: a value returned by :meth:`snapshot`"""
        base = self.base
        base_state, rng_state, layer_states = state
        self.cloner.restore(base, base_state)
        restore_rng(base, rng_state)
        for saver, saved in zip(self.savers, layer_states):
            saver.restore(saved)

    def __repr__(self) -> str:
        return f"CopyingChainCloner({self.cloner!r})"


def _register_builtin_wrappers() -> None:
    """Declare the state attributes of gymnasium's and sb3-contrib's common wrappers."""
    register_wrapper_attrs(gymnasium_time_limit(), ("_elapsed_steps",))
    register_wrapper_attrs(OrderEnforcing, ("_has_reset",))
    register_wrapper_attrs(
        PassiveEnvChecker, ("checked_reset", "checked_step", "checked_render", "checked_data_reuse", "_previous_data")
    )
    try:
        from sb3_contrib.common.wrappers import ActionMasker
    except ImportError:  # pragma: no cover - sb3-contrib is a dependency
        return
    register_wrapper_attrs(ActionMasker, ())


_register_builtin_wrappers()
