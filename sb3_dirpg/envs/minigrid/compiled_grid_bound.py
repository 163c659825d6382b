""":class:`~sb3_dirpg.envs.minigrid.MiniGridBound`'s shortest paths, steps to success and bounds on array-held grids,
compiled with numba: what :class:`~sb3_dirpg.envs.minigrid.MiniGridProgressReward` and
:class:`~sb3_dirpg.envs.minigrid.MiniGridProgressBound` compute on the env, for the compiled simulator.

It follows :mod:`~sb3_dirpg.envs.minigrid.grid_bound` without ``count_key_actions`` (the compiled simulator refuses
that setting), with the success targets of the families the compiled step runs: goal cells (slack 1), or the object
whose pickup is the success (KeyCorridor: slack 1, 0 while the agent carries something else). ``grid_bound`` finds
each distance by a breadth-first search from the target; walls and lava block both ways alike and every target,
door and object stands on a cell a way may cross, so one search from the agent gives the same lengths to all of them.
Terms are added in ``grid_bound``'s order, so the sums are the same floats.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from sb3_dirpg.envs.minigrid.compiled_constants import BALL, BOX, DIR_X, DIR_Y, DOOR, KEY, LAVA, LOCKED, OPEN, WALL

UNREACHABLE = np.iinfo(np.int32).max  # as grid_bound's


class Paths(NamedTuple):
    """Scratch arrays for the searches of one grid, ``C = H * W`` cells, cell (x, y) at ``y * W + x``.

    :param from_agent: path lengths from the agent, int64, shape (C,)
    :param avoiding_locked: path lengths from the agent with the locked doors as walls, int64, shape (C,)
    :param from_target: path lengths from a success target, int64, shape (C,)
    :param queue: the search's queue, int64, shape (C,)
    """

    from_agent: np.ndarray
    avoiding_locked: np.ndarray
    from_target: np.ndarray
    queue: np.ndarray


def new_paths(cells: int) -> Paths:
    """:param cells: the grid's number of cells
    :return: scratch arrays for :func:`steps_to_success`"""
    return Paths(*(np.empty(cells, dtype=np.int64) for _ in range(4)))


@njit(cache=True)
def _passable(kind: int, state: int, locked_blocks: bool) -> bool:
    """:return: whether a way may cross a cell: not a wall, not lava (nor a locked door, with ``locked_blocks``)"""
    if kind == WALL or kind == LAVA:
        return False
    return not (locked_blocks and kind == DOOR and state == LOCKED)


@njit(cache=True)
def path_lengths(grid: np.ndarray, x: int, y: int, locked_blocks: bool, lengths: np.ndarray, queue: np.ndarray) -> None:
    """Shortest-path lengths (4-neighbour moves through passable cells) from ``(x, y)`` to every cell.

    :param grid: the grid as MiniGrid encodes it, cell (x, y) at ``[y, x]``, uint8, shape (H, W, 3)
    :param x: the start's column
    :param y: the start's row
    :param locked_blocks: whether locked doors block the way
    :param lengths: out: the lengths, :data:`UNREACHABLE` where no way leads, int64, shape (H * W,)
    :param queue: scratch, int64, shape (H * W,)
    """
    height, width = grid.shape[0], grid.shape[1]
    lengths[:] = UNREACHABLE
    lengths[y * width + x] = 0
    queue[0] = y * width + x
    head, tail = 0, 1
    while head < tail:
        cell = queue[head]
        head += 1
        cx, cy = cell % width, cell // width
        step = lengths[cell] + 1
        for k in range(4):
            nx, ny = cx + DIR_X[k], cy + DIR_Y[k]
            if 0 <= nx < width and 0 <= ny < height:
                near = ny * width + nx
                if lengths[near] > step and _passable(grid[ny, nx, 0], grid[ny, nx, 2], locked_blocks):
                    lengths[near] = step
                    queue[tail] = near
                    tail += 1


@njit(cache=True)
def steps_to_success(
    grid: np.ndarray, x: int, y: int, carried: int, targets: np.ndarray, pickup_success: bool, paths: tuple
) -> int:  # fmt: skip
    """:meth:`~sb3_dirpg.envs.minigrid.MiniGridBound.steps_to_success` of a state: ``max(d - slack, 0)`` for the
    nearest target, ``d`` its path length through a key where locked doors stand in every way and the agent carries
    no key or box. It leaves the lengths from the agent in ``paths.from_agent``.

    :param grid: the state's grid, uint8, shape (H, W, 3)
    :param x: the agent's column
    :param y: the agent's row
    :param carried: the type of the carried object (0: nothing)
    :param targets: the success cells (``y * W + x``), int64, shape (targets,)
    :param pickup_success: whether the success is the pickup of the target (else entering it)
    :param paths: :class:`Paths`, as a plain tuple
    :return: the steps, :data:`UNREACHABLE` when no target is reachable
    """
    from_agent, avoiding_locked, from_target, queue = paths
    height, width = grid.shape[0], grid.shape[1]
    if not _passable(grid[y, x, 0], grid[y, x, 2], False):  # the agent stands in lava: the episode has ended
        from_agent[:] = UNREACHABLE
        return UNREACHABLE
    path_lengths(grid, x, y, False, from_agent, queue)
    any_locked = False
    for cell in range(height * width):
        if grid[cell // width, cell % width, 0] == DOOR and grid[cell // width, cell % width, 2] == LOCKED:
            any_locked = True
            break
    slack = 0 if pickup_success and carried != 0 else 1  # a pickup needs empty hands: the drop comes first
    avoided = False
    first = UNREACHABLE
    for q in range(targets.shape[0]):
        target = targets[q]
        tx, ty = target % width, target // width
        length = from_agent[target]
        if length != UNREACHABLE and any_locked and carried != KEY and carried != BOX:
            if grid[ty, tx, 0] == DOOR and grid[ty, tx, 2] == LOCKED:
                free = UNREACHABLE
            else:
                if not avoided:
                    path_lengths(grid, x, y, True, avoiding_locked, queue)
                    avoided = True
                free = avoiding_locked[target]
            if free != length:
                path_lengths(grid, tx, ty, False, from_target, queue)
                through_key = UNREACHABLE
                for cell in range(height * width):
                    kind = grid[cell // width, cell % width, 0]
                    if (kind == KEY or kind == BOX) and from_agent[cell] != UNREACHABLE and from_target[cell] != UNREACHABLE:
                        through_key = min(through_key, from_agent[cell] + from_target[cell] - 1)
                length = max(length, min(free, through_key))
        index = UNREACHABLE if length == UNREACHABLE else length - slack
        first = min(first, max(index, 0))
    return first


@njit(cache=True)
def grid_bound(
    grid: np.ndarray, carried: int, first: int, from_agent: np.ndarray, gamma: float, door_reward: float,
    goal_reward: float, pickup_reward: float, progress_reward: float,
) -> tuple[float, float]:  # fmt: skip
    """:class:`~sb3_dirpg.envs.minigrid.MiniGridBound`'s bounds of a state that has not ended, with
    :class:`~sb3_dirpg.envs.minigrid.MiniGridProgressBound`'s terms when ``progress_reward`` is positive.

    :param grid: the state's grid, uint8, shape (H, W, 3)
    :param carried: the type of the carried object (0: nothing)
    :param first: :func:`steps_to_success` of the state
    :param from_agent: the path lengths from the agent it left, int64, shape (H * W,)
    :param gamma: the bound's discount
    :param door_reward: its door reward
    :param goal_reward: its goal reward
    :param pickup_reward: its pickup reward
    :param progress_reward: its progress reward (0: a ``MiniGridBound``)
    :return: (lower, upper)
    """
    height, width = grid.shape[0], grid.shape[1]
    upper = 0.0 if first == UNREACHABLE else goal_reward * gamma ** np.float64(first)
    lower = 0.0
    nearest = UNREACHABLE
    for cell in range(height * width):
        kind = grid[cell // width, cell % width, 0]
        if kind == DOOR:
            length = from_agent[cell]
            if length == UNREACHABLE:
                continue
            term = door_reward * gamma ** np.float64(max(length - 1, 0))
            if grid[cell // width, cell % width, 2] == OPEN:
                lower -= term
            else:
                upper += term
        elif carried == 0 and (kind == KEY or kind == BALL or kind == BOX):
            nearest = min(nearest, from_agent[cell])
    if carried != 0:
        lower -= pickup_reward
    elif nearest != UNREACHABLE:
        upper += pickup_reward * gamma ** np.float64(max(nearest - 1, 0))
    if progress_reward > 0:
        cap = height * width
        steps = cap if first == UNREACHABLE else min(first, cap)
        lower += progress_reward * np.float64(steps - cap)
        upper += progress_reward * np.float64(steps)
    return lower, upper
