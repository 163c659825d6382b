"""Snapshot and restore of MiniGrid envs; importing this module registers the cloner for every ``MiniGridEnv``."""

from __future__ import annotations

import weakref
from typing import Any

import gymnasium as gym
import numpy as np
from minigrid.minigrid_env import MiniGridEnv

from sb3_dirpg.simulator.registry import register_cloner


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


register_cloner(MiniGridEnv, MiniGridCloner())
