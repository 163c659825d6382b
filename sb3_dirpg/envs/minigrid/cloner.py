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

    Saves the env's ``__dict__`` (agent position and direction, ``carrying``, ``step_count``, the grid object itself,
    the mission, ...) as a tuple of its values (``agent_pos`` copied if it is an array) beside a tuple of its keys, a
    copy of the grid's cell list and the attribute dicts of every world object whose state can change (doors
    ``is_open``/``is_locked``, keys, balls and boxes ``cur_pos``, boxes ``contains``): doors are mutated in place, so
    copying the cell list alone is not enough. Walls, goals, floors and lava never change and are skipped. The objects
    to track are found once per grid (per episode): those on the grid, the carried one and the contents of boxes;
    picked-up objects stay tracked while they are carried. Consecutive snapshots share the key tuple, the cell list and
    the attribute dicts while these are unchanged, which keeps the snapshots of a search tree small.
    """

    _skip_keys = ("window", "clock", "render_size", "_np_random")

    def __init__(self) -> None:
        from minigrid.core.world_object import Floor, Goal, Lava, Wall

        self._static_types = (Wall, Goal, Floor, Lava)
        # per env: [grid, tracked objects, last saved cell list, last saved env dict keys, last saved object attributes];
        # snapshots share these while they are unchanged
        self._cache: weakref.WeakKeyDictionary[gym.Env, list[Any]] = weakref.WeakKeyDictionary()

    def _grid_entry(self, env: gym.Env, grid: Any) -> list[Any]:
        """:param env: the unwrapped MiniGrid env
        :param grid: its current ``Grid``
        :return: [grid, the world objects whose attributes may change on this grid, the last saved cell list, the env
            dict at the grid's first snapshot, the last saved object attributes], the last three None before the first
            snapshot"""
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
        entry = [grid, tuple(objects), None, None, None]
        try:
            self._cache[env] = entry
        except TypeError:
            pass
        return entry

    def snapshot(self, env: gym.Env) -> tuple[Any, ...]:
        """:param env: the unwrapped MiniGrid env
        :return: (the env dict's keys, its values, a copy of ``agent_pos`` if it is an array, grid, cell list copy,
            tracked objects, their attribute dict copies); the key tuple, the cell list and the attribute dicts are
            shared with the previous snapshot while unchanged"""
        d = env.__dict__
        grid = d["grid"]
        entry = self._grid_entry(env, grid)
        keys = tuple(d)
        if keys != entry[3]:  # the same strings in the same order: compared by identity, item by item
            entry[3] = keys
        keys = entry[3]
        values = tuple(d.values())
        agent_pos = d.get("agent_pos")  # the one array MiniGrid may change in place
        agent_pos = agent_pos.copy() if type(agent_pos) is np.ndarray else None
        cells = entry[2]
        if cells is None or cells != grid.grid:  # comparing is 4x cheaper than copying; cells change rarely
            cells = entry[2] = grid.grid.copy()
        tracked = entry[1]
        attrs = entry[4]
        if attrs is None or not _same_attrs(tracked, attrs):
            attrs = entry[4] = tuple([obj.__dict__.copy() for obj in tracked])
        return keys, values, agent_pos, grid, cells, tracked, attrs

    def restore(self, env: gym.Env, state: tuple[Any, ...]) -> None:
        """:param env: the unwrapped MiniGrid env
        :param state: a value returned by :meth:`snapshot`"""
        keys, values, agent_pos, grid, cells, tracked, attrs = state
        d = env.__dict__
        kept = [(key, d[key]) for key in self._skip_keys if key in d]  # the renderer and the RNG (restored apart)
        d.update(zip(keys, values))
        d.update(kept)
        if agent_pos is not None:
            d["agent_pos"] = agent_pos.copy()
        if grid.grid != cells:
            grid.grid[:] = cells
        for obj, obj_attrs in zip(tracked, attrs):
            obj.__dict__.update(obj_attrs)

    def __repr__(self) -> str:
        return "MiniGridCloner()"


def _same_attrs(objects: tuple[Any, ...], saved: tuple[dict[str, Any], ...]) -> bool:
    """:param objects: world objects
    :param saved: attribute dicts saved earlier, one per object
    :return: whether every object's attributes still equal the saved ones"""
    try:
        return all(obj.__dict__ == attrs for obj, attrs in zip(objects, saved))
    except ValueError:  # an array attribute: compare by copying instead
        return False


register_cloner(MiniGridEnv, MiniGridCloner())
