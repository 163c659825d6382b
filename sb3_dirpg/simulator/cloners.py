"""Built-in cloners (MiniGrid, classic control, toy text) and the generic deepcopy fallback.

Importing this module registers the built-in cloners. A cloner only copies the unwrapped env's own fields:
the RNG state and the wrapper layers are handled by :class:`~sb3_dirpg.simulator.SimulatorWrapper`.
"""

from __future__ import annotations

import copy
import types
import weakref
from collections.abc import Iterable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import EnvSpec

from sb3_dirpg.simulator.registry import NotClonableError, register_cloner

_MISSING = object()
# Types whose instances are copied (one level) when saved and when restored; everything else is kept by reference.
_SHALLOW_COPY_TYPES = (np.ndarray, list, dict, set)


def _copy1(value: Any) -> Any:
    """:param value: an attribute value
    :return: a one-level copy of lists, dicts, sets and numpy arrays, the value itself otherwise"""
    return value.copy() if type(value) in _SHALLOW_COPY_TYPES else value


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
        :return: the attribute values (``_MISSING`` for an attribute not set yet)"""
        d = env.__dict__
        return tuple(_copy1(d.get(name, _MISSING)) for name in self.fields)

    def restore(self, env: gym.Env, state: tuple[Any, ...]) -> None:
        """:param env: the unwrapped env
        :param state: a value returned by :meth:`snapshot`"""
        d = env.__dict__
        for name, value in zip(self.fields, state):
            if value is _MISSING:
                d.pop(name, None)
            else:
                d[name] = _copy1(value)

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


class MiniGridCloner:
    """Cloner for ``minigrid.minigrid_env.MiniGridEnv`` and its subclasses.

    Saves a shallow copy of the env's ``__dict__`` (agent position and direction, ``carrying``, ``step_count``, the
    grid object itself, the mission, ...), a copy of the grid's cell list and the attribute dicts of every world object
    whose state can change (doors ``is_open``/``is_locked``, keys, balls and boxes ``cur_pos``, boxes ``contains``):
    doors are mutated in place, so copying the cell list alone is not enough. Walls, goals, floors and lava never
    change and are skipped. The objects to track are found once per grid (per episode): those on the grid, the carried
    one and the contents of boxes; picked-up objects stay tracked while they are carried.
    """

    _skip_keys = ("window", "clock", "render_size", "_np_random")

    def __init__(self) -> None:
        from minigrid.core.world_object import Floor, Goal, Lava, Wall

        self._static_types = (Wall, Goal, Floor, Lava)
        # per env: [grid, tracked objects, last saved cell list]; snapshots share the cell list while it is unchanged
        self._cache: weakref.WeakKeyDictionary[gym.Env, list[Any]] = weakref.WeakKeyDictionary()

    def _grid_entry(self, env: gym.Env, grid: Any) -> list[Any]:
        """:param env: the unwrapped MiniGrid env
        :param grid: its current ``Grid``
        :return: [grid, the world objects whose attributes may change on this grid, the last saved cell list or None]"""
        try:
            entry = self._cache.get(env)
        except TypeError:  # unhashable env class: no cache
            entry = None
        if entry is not None and entry[0] is grid:
            return entry
        static = self._static_types
        pending = [cell for cell in grid.grid if cell is not None and type(cell) not in static]
        pending.append(env.__dict__.get("carrying"))
        seen: set[int] = set()
        objects = []
        while pending:
            obj = pending.pop()
            if obj is None or id(obj) in seen:
                continue
            seen.add(id(obj))
            objects.append(obj)
            pending.append(getattr(obj, "contains", None))
        entry = [grid, tuple(objects), None]
        try:
            self._cache[env] = entry
        except TypeError:
            pass
        return entry

    def snapshot(self, env: gym.Env) -> tuple[Any, ...]:
        """:param env: the unwrapped MiniGrid env
        :return: (env dict copy, grid, cell list copy, tracked objects, their attribute dict copies)"""
        top = env.__dict__.copy()
        for key in self._skip_keys:
            top.pop(key, None)
        agent_pos = top.get("agent_pos")
        if type(agent_pos) is np.ndarray:
            top["agent_pos"] = agent_pos.copy()
        grid = top["grid"]
        entry = self._grid_entry(env, grid)
        cells = entry[2]
        if cells is None or cells != grid.grid:  # comparing is 4x cheaper than copying; cells change rarely
            cells = entry[2] = grid.grid.copy()
        tracked = entry[1]
        return top, grid, cells, tracked, tuple([obj.__dict__.copy() for obj in tracked])

    def restore(self, env: gym.Env, state: tuple[Any, ...]) -> None:
        """:param env: the unwrapped MiniGrid env
        :param state: a value returned by :meth:`snapshot`"""
        top, grid, cells, tracked, attrs = state
        d = env.__dict__
        d.update(top)
        agent_pos = top.get("agent_pos")
        if type(agent_pos) is np.ndarray:
            d["agent_pos"] = agent_pos.copy()
        if grid.grid != cells:
            grid.grid[:] = cells
        for obj, obj_attrs in zip(tracked, attrs):
            obj.__dict__.update(obj_attrs)

    def __repr__(self) -> str:
        return "MiniGridCloner()"


def _register_builtin_cloners() -> None:
    """Register the cloners for gymnasium's classic control and toy text envs and for MiniGrid (when installed)."""
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
    try:
        from minigrid.minigrid_env import MiniGridEnv
    except ImportError:  # pragma: no cover - minigrid is a dependency, but keep the simulator usable without it
        return
    register_cloner(MiniGridEnv, MiniGridCloner())


_register_builtin_cloners()
