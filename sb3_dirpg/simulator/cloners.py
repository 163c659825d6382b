"""Built-in cloners (classic control, toy text) and the generic deepcopy fallback.

Importing this module registers the built-in cloners. A cloner only copies the unwrapped env's own fields:
the RNG state and the wrapper layers are handled by :class:`~sb3_dirpg.simulator.SimulatorWrapper`.
"""

from __future__ import annotations

import copy
import types
from collections.abc import Iterable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import EnvSpec

from sb3_dirpg.simulator.copy_utils import MISSING, copy1
from sb3_dirpg.simulator.registry import NotClonableError, register_cloner

# Field values copied (one level) when saved and when restored; everything else is kept by reference. Narrower than
# copy_utils.CONTAINER_TYPES (no deque): FieldsCloner documents this set, and a deque field stays shared as before.
_FIELD_COPY_TYPES: tuple[type, ...] = (np.ndarray, list, dict, set)


def env_name(env: gym.Env) -> str:
    """:param env: any env
    :return: the spec id when the env was made with ``gym.make``, else the class name of the unwrapped env"""
    spec = getattr(env.unwrapped, "spec", None)
    return spec.id if spec is not None else type(env.unwrapped).__name__


class FieldsCloner:
    """Copies a fixed list of instance attributes (numpy arrays, lists, dicts and sets are copied one level deep).

    :param fields: the names of the attributes that make up the env's state
    """

    def __init__(self, fields: Iterable[str]) -> None:
        self.fields = tuple(fields)

    def snapshot(self, env: gym.Env) -> tuple[Any, ...]:
        """:param env: the unwrapped env
        :return: the attribute values (``MISSING`` for an attribute not set yet)"""
        d = env.__dict__
        return tuple(copy1(d.get(name, MISSING), _FIELD_COPY_TYPES) for name in self.fields)

    def restore(self, env: gym.Env, state: tuple[Any, ...]) -> None:
        """:param env: the unwrapped env
        :param state: a value returned by :meth:`snapshot`"""
        d = env.__dict__
        for name, value in zip(self.fields, state):
            if value is MISSING:
                d.pop(name, None)
            else:
                d[name] = copy1(value, _FIELD_COPY_TYPES)

    def __repr__(self) -> str:
        return f"FieldsCloner({self.fields!r})"


class DeepcopyCloner:
    """Generic fallback: ``copy.deepcopy`` of the unwrapped env's ``__dict__``.

    Static objects (spaces, spec, metadata, transition tables ``P``, the RNG, whose state the wrapper saves,
    render windows and surfaces, classes, functions, modules) are kept by reference instead of being copied,
    also where other attributes refer to them.
    """

    static_names = frozenset(
        {
            "action_space",
            "observation_space",
            "single_action_space",
            "single_observation_space",
            "spec",
            "metadata",
            "reward_range",
            "P",
            "_np_random",
            "np_random",
            "render_mode",
            "window",
            "clock",
            "screen",
            "surf",
            "viewer",
            "renderer",
            "_renderer",
            "mujoco_renderer",
        }
    )
    static_types: tuple[type, ...] = (
        gym.spaces.Space,
        EnvSpec,
        np.random.Generator,
        np.random.BitGenerator,
        types.ModuleType,
        types.FunctionType,
        types.BuiltinFunctionType,
        type,
    )

    def _static_memo(self, d: dict[str, Any]) -> dict[int, Any]:
        """:param d: an env's ``__dict__``
        :return: a deepcopy memo mapping the ids of its static objects to themselves"""
        names, kinds = self.static_names, self.static_types
        return {id(v): v for k, v in d.items() if k in names or isinstance(v, kinds)}

    def snapshot(self, env: gym.Env) -> tuple[dict[str, Any], dict[int, Any]]:
        """:param env: the unwrapped env
        :return: a deep copy of its ``__dict__`` and the memo of static objects
        :raises NotClonableError: when deepcopy fails (locks, sockets, open files, ...)"""
        d = env.__dict__
        memo = self._static_memo(d)
        template = dict(memo)
        try:
            copied = copy.deepcopy(d, memo)
        except Exception as e:
            raise NotClonableError(
                f"{env_name(env)}: cannot snapshot the env with copy.deepcopy ({type(e).__name__}: {e}). "
                "Pass cloner='replay' to SimulatorWrapper (reset with the seed and replay the actions), "
                "or register a cloner for this env class with sb3_dirpg.register_cloner."
            ) from e
        return copied, template

    def restore(self, env: gym.Env, state: tuple[dict[str, Any], dict[int, Any]]) -> None:
        """:param env: the unwrapped env
        :param state: a value returned by :meth:`snapshot`"""
        copied, template = state
        fresh = copy.deepcopy(copied, dict(template))
        d = env.__dict__
        d.clear()
        d.update(fresh)

    def __repr__(self) -> str:
        return "DeepcopyCloner()"


def _register_builtin_cloners() -> None:
    """Register the cloners for gymnasium's classic control and toy text envs."""
    from gymnasium.envs.classic_control import AcrobotEnv, CartPoleEnv, Continuous_MountainCarEnv, MountainCarEnv, PendulumEnv
    from gymnasium.envs.toy_text import BlackjackEnv, CliffWalkingEnv, FrozenLakeEnv, TaxiEnv

    register_cloner(CartPoleEnv, FieldsCloner(("state", "steps_beyond_terminated")))
    register_cloner(MountainCarEnv, FieldsCloner(("state",)))
    register_cloner(Continuous_MountainCarEnv, FieldsCloner(("state",)))
    register_cloner(AcrobotEnv, FieldsCloner(("state",)))
    register_cloner(PendulumEnv, FieldsCloner(("state", "last_u")))
    register_cloner(FrozenLakeEnv, FieldsCloner(("s", "lastaction")))
    register_cloner(CliffWalkingEnv, FieldsCloner(("s", "lastaction")))
    # fickle_step / taxi_orientation exist in gymnasium >= 1.0; a missing field is simply skipped.
    register_cloner(TaxiEnv, FieldsCloner(("s", "lastaction", "fickle_step", "taxi_orientation")))
    register_cloner(BlackjackEnv, FieldsCloner(("dealer", "player", "dealer_top_card_suit", "dealer_top_card_value_str")))


_register_builtin_cloners()
