"""MiniGrid's egocentric observation computed without building, rotating and encoding ``Grid`` objects.

MiniGrid computes each observation by slicing the grid into a new ``Grid``, rotating it cell by cell, walking it for
visibility and encoding it, all through Python method calls: about two thirds of a MultiRoom step. Here the cells of
the square that MiniGrid slices are encoded once, and the compiled simulator's own
:func:`~sb3_dirpg.envs.minigrid.compiled_kernels.encode_view` rotates, occludes and finishes the image, so the env and
the compiled simulator share one observation. The image is the same, cell for cell (``tests/test_fast_obs.py``
compares the two on thousands of states of several MiniGrid envs).
"""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np
from minigrid.core.world_object import Ball, Box, Door, Floor, Goal, Key, Lava, Wall
from minigrid.minigrid_env import MiniGridEnv

from sb3_dirpg.envs.minigrid import compiled_kernels as kernels
from sb3_dirpg.simulator.registry import register_wrapper_attrs

_EMPTY = bytes((kernels.EMPTY, 0, 0))
_OUTSIDE = bytes((kernels.WALL, kernels.GREY, 0))  # MiniGrid shows cells outside the grid as grey walls
_NOTHING = np.zeros(3, dtype=np.uint8)  # the encoding of "carries nothing"
_DIRECTIONS = ((1, 0), (0, 1), (-1, 0), (0, -1))  # MiniGrid's DIR_TO_VEC: right, down, left, up
# MiniGrid's objects, whose see_behind follows from their encoding (a wall, a door that is not open): the kernel's rule
_KNOWN_OBJECTS = frozenset({Wall, Door, Key, Ball, Box, Goal, Floor, Lava})
_CONSTANT_CODES = frozenset({Wall, Key, Ball, Goal, Floor, Lava})  # their encode() depends on the type and colour only


@functools.cache
def _window_offset(size: int, direction: int) -> tuple[int, int]:
    """:param size: the view's side
    :param direction: the agent's direction (0 right, 1 down, 2 left, 3 up)
    :return: the top left cell of the square the agent sees, relative to the agent (MiniGrid's ``get_view_exts``)"""
    half = size // 2
    return ((0, -half), (-half, 0), (1 - size, -half), (-half, 1 - size))[direction]


def _window(env: MiniGridEnv, left: int, top: int, size: int) -> np.ndarray | None:
    """:param env: an unwrapped MiniGrid env after ``reset``
    :param left: the square's first column
    :param top: its first row
    :param size: its side
    :return: the square's cells as MiniGrid encodes them, cell (x, y) at ``[y - top, x - left]``, uint8, shape
        (size, size, 3); None if it holds an object that is not one of MiniGrid's own"""
    grid = env.grid
    width, height, cells = grid.width, grid.height, grid.grid
    first, end = max(left, 0), min(left + size, width)
    before, after = _OUTSIDE * (first - left), _OUTSIDE * (left + size - end)
    codes = bytearray()
    for y in range(top, top + size):
        if not 0 <= y < height:
            codes += _OUTSIDE * size
            continue
        codes += before
        for obj in cells[y * width + first : y * width + end]:
            if obj is None:
                codes += _EMPTY
            elif type(obj) in _KNOWN_OBJECTS:
                codes += bytes(obj.encode())
            else:
                return None
        codes += after
    return np.frombuffer(codes, dtype=np.uint8).reshape(size, size, 3)


def encode_cells(grid: Any) -> np.ndarray:
    """MiniGrid's ``grid.encode()`` of a whole grid, transposed: the same codes, in a fraction of the time (objects
    whose code never changes are encoded once per type and colour).

    :param grid: a MiniGrid ``Grid``
    :return: its cells, cell (x, y) at ``[y, x]``, uint8, shape (height, width, 3)
    """
    constant: dict[tuple[type, str], bytes] = {}
    codes = bytearray()
    for obj in grid.grid:
        if obj is None:
            codes += _EMPTY
        elif type(obj) in _CONSTANT_CODES:
            key = (type(obj), obj.color)
            code = constant.get(key)
            if code is None:
                code = constant[key] = bytes(obj.encode())
            codes += code
        else:
            codes += bytes(obj.encode())
    return np.frombuffer(codes, dtype=np.uint8).reshape(grid.height, grid.width, 3).copy()


def encode_view(env: MiniGridEnv) -> np.ndarray:
    """The ``image`` of MiniGrid's observation: the agent's view, rotated so that it looks up, occluded, encoded.

    Cell (i, j) of the view is ``size - 1 - j`` cells ahead of the agent and ``i - size // 2`` cells to its right.
    A view that holds an object of a class other than MiniGrid's own (its ``see_behind`` may differ), or is wider than
    :data:`~sb3_dirpg.envs.minigrid.compiled_kernels.MAX_VIEW`, is computed by MiniGrid itself.

    :param env: an unwrapped MiniGrid env after ``reset``
    :return: ``(agent_view_size, agent_view_size, 3)`` uint8, equal to ``env.grid.encode``-ing ``env.gen_obs_grid()``
    """
    size, direction = env.agent_view_size, env.agent_dir
    x, y = int(env.agent_pos[0]), int(env.agent_pos[1])
    dx, dy = _window_offset(size, direction)
    window = _window(env, x + dx, y + dy, size) if size <= kernels.MAX_VIEW else None
    if window is None:
        grid, seen = MiniGridEnv.gen_obs_grid(env)
        return grid.encode(seen)
    carried = _NOTHING if env.carrying is None else np.array(env.carrying.encode(), dtype=np.uint8)
    image = np.empty((size, size, 3), dtype=np.uint8)
    kernels.encode_view(window, -dx, -dy, direction, carried, bool(env.see_through_walls), image)
    return image


def front_cell(env: MiniGridEnv) -> Any:
    """The object in the cell the agent faces: ``env.grid.get(*env.front_pos)`` without MiniGrid's array arithmetic.

    :param env: an unwrapped MiniGrid env after ``reset``
    :return: the world object in that cell, or None for an empty cell or one outside the grid
    """
    dx, dy = _DIRECTIONS[env.agent_dir]
    x, y = env.agent_pos[0] + dx, env.agent_pos[1] + dy
    grid = env.grid
    if 0 <= x < grid.width and 0 <= y < grid.height:
        return grid.grid[y * grid.width + x]
    return None


def fast_gen_obs(env: MiniGridEnv) -> dict[str, Any]:
    """``MiniGridEnv.gen_obs`` with the image from :func:`encode_view`.

    :param env: an unwrapped MiniGrid env after ``reset``
    :return: MiniGrid's observation dict (``image``, ``direction``, ``mission``)
    """
    return {"image": encode_view(env), "direction": env.agent_dir, "mission": env.mission}


@functools.cache
def fast_observation_class(env_class: type[MiniGridEnv]) -> type[MiniGridEnv]:
    """:param env_class: a MiniGrid env class
    :return: its subclass with the fast observation, or ``env_class`` itself if that class computes its observation its
        own way (it overrides ``gen_obs`` or ``gen_obs_grid``): then its own code is kept"""
    if env_class.gen_obs is not MiniGridEnv.gen_obs or env_class.gen_obs_grid is not MiniGridEnv.gen_obs_grid:
        return env_class
    return type(env_class.__name__, (env_class,), {"__module__": env_class.__module__, "gen_obs": fast_gen_obs})


class FastObservation(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Makes a MiniGrid env compute its observations with :func:`encode_view` (same values; MultiRoom steps 6x faster).

    The unwrapped env becomes an instance of :func:`fast_observation_class` of its class: a subclass that changes
    nothing but ``gen_obs``, so ``isinstance`` checks, cloners and renderers are unaffected. Use it as the innermost
    wrapper (``make_minigrid_env`` does), or in a zoo file's ``env_wrapper`` list.

    :param env: a MiniGrid env (possibly wrapped)
    """

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        base = env.unwrapped
        if not isinstance(base, MiniGridEnv):
            raise ValueError(f"FastObservation needs a MiniGrid env, got {type(base).__name__}; leave the wrapper out")
        base.__class__ = fast_observation_class(type(base))


register_wrapper_attrs(FastObservation, ())
