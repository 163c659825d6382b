"""MiniGrid's step, observation and return-to-go bound on array-held states, compiled with numba: one call per batch.

These kernels follow ``MiniGridEnv.step`` (the base class's dynamics: turn, forward, pickup, drop, toggle, done; a
toggled box leaves its contents; and KeyCorridor's and ObstructedMaze's success, their object picked up),
:class:`~sb3_dirpg.envs.minigrid.MiniGridShapedReward`, :class:`~sb3_dirpg.envs.minigrid.MiniGridProgressReward`,
MiniGrid's egocentric observation and the bounds (:class:`~sb3_dirpg.envs.minigrid.MultiRoomBound` here,
:class:`~sb3_dirpg.envs.minigrid.MiniGridBound` and :class:`~sb3_dirpg.envs.minigrid.MiniGridProgressBound` in
:mod:`~sb3_dirpg.envs.minigrid.compiled_grid_bound`) on a grid held as MiniGrid's own encoding, one ``(type, color,
state)`` triple per cell. :func:`encode_view` and :func:`visibility` also compute the observation of the env itself
(:mod:`~sb3_dirpg.envs.minigrid.fast_obs`), so both simulator backends share one observation.
:class:`~sb3_dirpg.envs.minigrid.compiled.CompiledMiniGridSimulator` checks that an env uses nothing else and
compares itself with the env on every supported MiniGrid family in ``tests/test_compiled_minigrid.py``.

The arrays travel in small records (named tuples, which numba compiles to structs): the state store
(:class:`Store`), what every episode shares (:class:`Rules`), the episodes of the last reset (:class:`Episodes`),
the bound's settings (:class:`BoundParams`) and a batch of rows with their outputs (:class:`Batch`). The simulator
builds each record once and rebuilds it only when it replaces one of its arrays. At a call, numba types a named tuple
in Python, field by field (about 3 us for the five records of :func:`step_states`), and a plain tuple in C, so the
simulator passes ``tuple(record)`` and :func:`step_states` names the fields again.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from sb3_dirpg.envs.minigrid.compiled_constants import (  # noqa: F401 (re-exported)
    BALL,
    BOX,
    CLOSED,
    DIR_X,
    DIR_Y,
    DOOR,
    DROP,
    EMPTY,
    FLOOR,
    FORWARD,
    GOAL,
    GREY,
    KEY,
    LAVA,
    LEFT,
    LOCKED,
    OPEN,
    PICKUP,
    RIGHT,
    TOGGLE,
    WALL,
)
from sb3_dirpg.envs.minigrid.compiled_grid_bound import UNREACHABLE, grid_bound, steps_to_success
from sb3_dirpg.envs.minigrid.move_window import count_visit, push_move, remember_drop

MAX_VIEW = 62  # the widest view whose rows fit the bits of an int64
GENERATION_SHIFT = 32  # a snapshot is (generation << 32) | row


class Store(NamedTuple):
    """Every state reached since the last reset, one row each; a state shares its parent's grid row unless its step
    changed a cell. ``S`` and ``G`` are the capacities.

    :param agent: x, y, direction, step count, the recent moves (packed by
        :func:`~sb3_dirpg.envs.minigrid.move_window.push_move`) and the cell of the last drop
        (:func:`~sb3_dirpg.envs.minigrid.move_window.remember_drop`), int64, shape (S, 6)
    :param carry: the carried object's encoding (type 0: nothing; a box's state as in ``grids``), uint8, shape (S, 3)
    :param grid_of: the state's row in ``grids``, int32, shape (S,)
    :param grids: grids as MiniGrid encodes them, cell (x, y) at ``[y, x]``, uint8, shape (G, H, W, 3); a box's
        state (0 in MiniGrid's encoding) holds its row in :class:`Episodes` ``box_contents`` instead
    :param used: the rows in use (states, grids), int64, shape (2,)
    :param to_success: the grid bound's steps to success of each state (see :class:`Rules` ``uses_paths``), int64,
        shape (S,)
    :param visits: the times each pose was left since the last change
        (:func:`~sb3_dirpg.envs.minigrid.move_window.count_visit`), uint8, shape (S, poses); 0 poses where no mask reads
        them
    """

    agent: np.ndarray
    carry: np.ndarray
    grid_of: np.ndarray
    grids: np.ndarray
    used: np.ndarray
    to_success: np.ndarray
    visits: np.ndarray


class Rules(NamedTuple):
    """What the step, the observation and the shaped reward of every episode share.

    :param width: the grid's width W
    :param height: the grid's height H
    :param see_through_walls: MiniGrid's ``see_through_walls``
    :param action_start: the action space's ``start`` (added to the actions)
    :param door_reward: the shaped reward's ``door_reward``
    :param goal_reward: its ``goal_reward``
    :param pickup_reward: its ``pickup_reward``
    :param progress_reward: :class:`~sb3_dirpg.envs.minigrid.MiniGridProgressReward`'s ``progress_reward`` (0: none)
    :param uses_paths: whether the steps find the grid bound's steps to success (for the progress reward or the bound)
    """

    width: int
    height: int
    see_through_walls: bool
    action_start: int
    door_reward: float
    goal_reward: float
    pickup_reward: float
    progress_reward: float
    uses_paths: bool


class BoundParams(NamedTuple):
    """The settings of the bound: :class:`~sb3_dirpg.envs.minigrid.MultiRoomBound`, or with ``grid``
    :class:`~sb3_dirpg.envs.minigrid.MiniGridBound` (:mod:`~sb3_dirpg.envs.minigrid.compiled_grid_bound`).

    :param on: whether to compute bounds (False: ``lower`` and ``upper`` are 0)
    :param gamma: the bound's discount
    :param door_reward: the bound's door reward
    :param goal_reward: its goal reward
    :param pickup_reward: its pickup reward
    :param step_limit: the bound's ``step_limit`` (``MultiRoomBound``)
    :param grid: whether the bound is a ``MiniGridBound``
    :param progress_reward: the progress reward of a :class:`~sb3_dirpg.envs.minigrid.MiniGridProgressBound` (0: none)
    """

    on: bool
    gamma: float
    door_reward: float
    goal_reward: float
    pickup_reward: float
    step_limit: bool
    grid: bool
    progress_reward: float


class Episodes(NamedTuple):
    """The episodes of the last reset. ``E`` is their number, ``D`` and ``Q`` the most doors and goals of any.

    :param generation: the reset's number: the snapshots of this reset are ``(generation << 32) | row``
    :param max_steps: MiniGrid's ``max_steps``, int64, shape (E,)
    :param doors: the bound's door cells (``y * W + x``) in the order it adds them, int64, shape (E, D)
    :param n_doors: doors used per episode, int64, shape (E,)
    :param goals: the goal cells, int64, shape (E, Q)
    :param n_goals: goals used per episode (at least 1 with a bound), int64, shape (E,)
    :param scan_pickables: whether the bound looks for pickable objects (False on MultiRoom, as the bound's layout
        path), bool, shape (E,)
    :param pickup_target: the cell of the object whose pickup is the success (KeyCorridor's ``obj``), -1 where the
        success is entering a goal, int64, shape (E,)
    :param targets: the success cells of the grid bound (the goals, or the pickup target), int64, shape (E, T)
    :param n_targets: targets used per episode, int64, shape (E,)
    :param box_contents: what toggling each box leaves in its cell (MiniGrid's encoding, ``EMPTY`` for an empty box),
        by the box's state in the store, uint8, shape (E, B, 3)
    """

    generation: int
    max_steps: np.ndarray
    doors: np.ndarray
    n_doors: np.ndarray
    goals: np.ndarray
    n_goals: np.ndarray
    scan_pickables: np.ndarray
    pickup_target: np.ndarray
    targets: np.ndarray
    n_targets: np.ndarray
    box_contents: np.ndarray


class Batch(NamedTuple):
    """The rows of one step: what to step and, written by :func:`step_states`, what came of it. ``k`` is the number of
    rows and ``V`` the view's side.

    :param ids: the snapshots to step from, ``(generation << 32) | row``, int64, shape (k,)
    :param actions: actions (without the action space's ``start``), int64, shape (k,)
    :param episodes: the episode of each row, int64, shape (k,)
    :param images: out: observations, uint8, shape (k, V, V, 3)
    :param directions: out: the agent's direction, int64, shape (k,)
    :param rewards: out: shaped rewards, float64, shape (k,)
    :param terminal: out: terminated or truncated, bool, shape (k,)
    :param success: out: the step entered a goal, bool, shape (k,)
    :param lower: out: lower bounds (0 for terminal rows), float64, shape (k,)
    :param upper: out: upper bounds (0 for terminal rows), float64, shape (k,)
    :param reached: out: the store row of each state reached, -1 for terminal rows, int64, shape (k,)
    """

    ids: np.ndarray
    actions: np.ndarray
    episodes: np.ndarray
    images: np.ndarray
    directions: np.ndarray
    rewards: np.ndarray
    terminal: np.ndarray
    success: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    reached: np.ndarray


@njit(cache=True)
def _sees_through(kind: int, state: int) -> bool:
    """:return: MiniGrid's ``see_behind`` of a cell: not a wall, not a closed or locked door"""
    return kind != WALL and not (kind == DOOR and state != OPEN)


@njit(cache=True)
def visibility(see_rows: np.ndarray, rows: np.ndarray) -> None:
    """MiniGrid's ``Grid.process_vis`` on a square view of side ``V``, one row of the view per integer (bit i is
    column i).

    Each row is walked left to right (sight passes from a visible cell to its right neighbour if the cell lets it
    through), then right to left, and a visible see-through cell shows the cells above it and above its neighbour on
    the side it passed to, as in MiniGrid.

    :param see_rows: bit i of ``see_rows[j]``: whether the cell in column i, row j of the rotated view lets sight through
        (the agent is at column ``V // 2`` of the last row), int64, shape (V,) with V at most :data:`MAX_VIEW`
    :param rows: out: bit i of ``rows[j]``: whether the agent sees that cell, int64, shape (V,)
    """
    size = see_rows.shape[0]
    full = (1 << size) - 1
    rows[:] = 0
    rows[size - 1] = 1 << (size // 2)
    for j in range(size - 1, -1, -1):
        through = see_rows[j]
        mask = rows[j]
        grown = mask | (((mask & through) << 1) & full)
        while grown != mask:
            mask = grown
            grown = mask | (((mask & through) << 1) & full)
        rightward = mask
        grown = mask | ((mask & through) >> 1)
        while grown != mask:
            mask = grown
            grown = mask | ((mask & through) >> 1)
        rows[j] = mask
        if j > 0:
            to_right = rightward & through & (full >> 1)
            to_left = mask & through & (full ^ 1)
            rows[j - 1] = to_right | (to_right << 1) | to_left | (to_left >> 1)


@njit(cache=True)
def encode_view(
    grid: np.ndarray, x: int, y: int, direction: int, carry: np.ndarray, see_through_walls: bool, image: np.ndarray
) -> None:
    """Write MiniGrid's egocentric image: the agent's view, rotated so that it looks up, occluded, encoded.

    Cell (i, j) of the view is ``V - 1 - j`` cells ahead of the agent and ``i - V // 2`` cells to its right; cells
    outside the grid show as grey walls, as in MiniGrid.

    :param grid: the grid as MiniGrid encodes it, cell (x, y) at ``[y, x]``, uint8, shape (H, W, 3)
    :param x: the agent's column
    :param y: the agent's row
    :param direction: the agent's direction (0 right, 1 down, 2 left, 3 up)
    :param carry: the carried object's encoding (type 0: nothing), uint8, shape (3,)
    :param see_through_walls: MiniGrid's ``see_through_walls``
    :param image: out: the image, uint8, shape (V, V, 3) with V at most :data:`MAX_VIEW`
    """
    size = image.shape[0]
    height, width = grid.shape[0], grid.shape[1]
    half = size // 2
    ahead_x, ahead_y = DIR_X[direction], DIR_Y[direction]
    right_x, right_y = -ahead_y, ahead_x
    see_rows = np.zeros(size, dtype=np.int64)
    for i in range(size):
        for j in range(size):
            cx = x + (size - 1 - j) * ahead_x + (i - half) * right_x
            cy = y + (size - 1 - j) * ahead_y + (i - half) * right_y
            if 0 <= cx < width and 0 <= cy < height:
                kind, state = grid[cy, cx, 0], grid[cy, cx, 2]
                image[i, j, 0], image[i, j, 1], image[i, j, 2] = kind, grid[cy, cx, 1], 0 if kind == BOX else state
                if _sees_through(kind, state):
                    see_rows[j] |= 1 << i
            else:
                image[i, j, 0], image[i, j, 1], image[i, j, 2] = WALL, GREY, 0
    if not see_through_walls:
        rows = np.empty(size, dtype=np.int64)
        visibility(see_rows, rows)
        for i in range(size):
            for j in range(size):
                if not rows[j] & (1 << i):
                    image[i, j, 0], image[i, j, 1], image[i, j, 2] = 0, 0, 0
    if carry[0] != 0:
        shown = 0 if carry[0] == BOX else carry[2]  # a box's state in the store is its contents' row
        image[half, size - 1, 0], image[half, size - 1, 1], image[half, size - 1, 2] = carry[0], carry[1], shown
    else:
        image[half, size - 1, 0], image[half, size - 1, 1], image[half, size - 1, 2] = EMPTY, 0, 0


@njit(cache=True)
def bound_state(
    grid: np.ndarray, x: int, y: int, steps_left: int, carrying: bool, doors: np.ndarray, goals: np.ndarray,
    scan_pickables: bool, bound: BoundParams,
) -> tuple[float, float]:  # fmt: skip
    """:class:`~sb3_dirpg.envs.minigrid.MultiRoomBound` of one state, with its terms added in its order.

    :param grid: the state's grid, uint8, shape (H, W, 3)
    :param x: the agent's column
    :param y: the agent's row
    :param steps_left: ``max_steps - step_count``
    :param carrying: whether the agent carries an object
    :param doors: the episode's door cells (``y * W + x``) in the bound's order, int64, shape (doors,)
    :param goals: the episode's goal cells, int64, shape (goals,)
    :param scan_pickables: whether the bound looks for pickable objects
    :param bound: the bound's settings
    :return: (lower, upper)
    """
    if steps_left <= 0:
        return 0.0, 0.0
    height, width = grid.shape[0], grid.shape[1]
    gamma = bound.gamma
    reach = steps_left if bound.step_limit else 1 << 62
    m_goal = 1 << 62
    for q in range(goals.shape[0]):
        m = abs(x - goals[q] % width) + abs(y - goals[q] // width)
        m_goal = min(m_goal, m)
    if m_goal == 0:
        return 0.0, 0.0
    upper = bound.goal_reward * gamma ** np.float64(m_goal - 1) if m_goal <= reach else 0.0
    lower = 0.0
    for q in range(doors.shape[0]):
        dx, dy = doors[q] % width, doors[q] // width
        first = max(abs(x - dx) + abs(y - dy) - 1, 0)
        if first >= reach:
            continue
        if grid[dy, dx, 2] == OPEN:
            lower -= bound.door_reward * gamma ** np.float64(first)
        else:
            upper += bound.door_reward * gamma ** np.float64(first)
    if carrying:
        lower -= bound.pickup_reward
    elif scan_pickables:
        nearest = -1
        for cy in range(height):
            for cx in range(width):
                kind = grid[cy, cx, 0]
                if kind == KEY or kind == BALL or kind == BOX:
                    m = abs(x - cx) + abs(y - cy)
                    if nearest < 0 or m < nearest:
                        nearest = m
        if nearest >= 0 and nearest - 1 < reach:
            upper += bound.pickup_reward * gamma ** np.float64(nearest - 1)
    return lower, upper


@njit(cache=True)
def step_states(batch: Batch, store: Store, rules: Rules, episodes: Episodes, bound: BoundParams) -> int:
    """Step a batch of states, writing the states reached into the store (rows from ``store.used``, which it
    advances; the store must have room for one more state and grid per row) and the outputs into ``batch``. Each
    record may also be passed as the plain tuple of its fields, which numba types faster.

    :param batch: the rows to step, and their outputs
    :param store: the state store
    :param rules: the rules
    :param episodes: the episodes of the last reset
    :param bound: the bound's settings
    :return: the number of rows that ended the episode, or -1 (and nothing stepped) if a snapshot is not of the last
        reset
    """
    batch, store, rules = Batch(*batch), Store(*store), Rules(*rules)  # from plain tuples too (see the module docstring)
    episodes, bound = Episodes(*episodes), BoundParams(*bound)
    width, height, mask = rules.width, rules.height, (1 << GENERATION_SHIFT) - 1
    ids, actions, rows_episode, images = batch.ids, batch.actions, batch.episodes, batch.images
    rewards, terminal, success, lower, upper = batch.rewards, batch.terminal, batch.success, batch.lower, batch.upper
    directions, reached = batch.directions, batch.reached
    agent, carry, grid_of, grids, to_success = store.agent, store.carry, store.grid_of, store.grids, store.to_success
    visits = store.visits
    pose = np.zeros(3, dtype=np.int64)  # before the step
    max_steps, doors, n_doors = episodes.max_steps, episodes.doors, episodes.n_doors
    goals, n_goals, scan_pickables = episodes.goals, episodes.n_goals, episodes.scan_pickables
    pickup_target, targets, n_targets = episodes.pickup_target, episodes.targets, episodes.n_targets
    box_contents = episodes.box_contents
    cells = width * height if rules.uses_paths else 0  # scratch for the grid bound's searches, only where they run
    paths = (np.empty(cells, np.int64), np.empty(cells, np.int64), np.empty(cells, np.int64), np.empty(cells, np.int64))
    cap = width * height  # the progress reward's steps when no target is reachable
    for r in range(ids.shape[0]):
        if ids[r] >> GENERATION_SHIFT != episodes.generation:
            return -1
    n_states, n_grids = store.used[0], store.used[1]
    ended = 0
    new_carry = np.zeros(3, dtype=np.uint8)
    for r in range(ids.shape[0]):
        s = ids[r] & mask
        e = rows_episode[r]
        x, y, direction, steps = agent[s, 0], agent[s, 1], agent[s, 2], agent[s, 3] + 1
        x0, y0 = x, y
        g = grid_of[s]
        new_carry[:] = carry[s]
        was_carrying = new_carry[0] != 0
        fx, fy = x + DIR_X[direction], y + DIR_Y[direction]
        inside = 0 <= fx < width and 0 <= fy < height
        kind = grids[g, fy, fx, 0] if inside else EMPTY
        color = grids[g, fy, fx, 1] if inside else 0
        state = grids[g, fy, fx, 2] if inside else 0
        is_door = kind == DOOR
        was_open = is_door and state == OPEN
        new_state = state  # of the front cell
        box_opened = False
        terminated = False
        reached_goal = False
        action = actions[r] + rules.action_start
        if action == LEFT:
            direction = (direction + 3) % 4
        elif action == RIGHT:
            direction = (direction + 1) % 4
        elif action == FORWARD and inside:
            if kind == EMPTY or kind == GOAL or kind == LAVA or kind == FLOOR or (is_door and state == OPEN):
                x, y = fx, fy
            if kind == GOAL:
                terminated = True
                reached_goal = True
            elif kind == LAVA:
                terminated = True
        elif action == PICKUP and inside:
            if (kind == KEY or kind == BALL or kind == BOX) and not was_carrying:
                new_carry[0], new_carry[1], new_carry[2] = kind, color, state
                if fy * width + fx == pickup_target[e]:  # KeyCorridor's success: its object, picked up
                    terminated = True
                    reached_goal = True
        elif action == DROP and inside:
            if kind == EMPTY and was_carrying:
                new_carry[:] = 0
        elif action == TOGGLE and is_door:
            if state == LOCKED:
                if new_carry[0] == KEY and new_carry[1] == color:
                    new_state = OPEN
            else:
                new_state = CLOSED if state == OPEN else OPEN
        elif action == TOGGLE and inside and kind == BOX:  # replaced by its contents
            box_opened = True
        carrying = new_carry[0] != 0
        changed = carrying != was_carrying or new_state != state or box_opened
        if changed:  # the front cell changes: a grid of its own
            grids[n_grids] = grids[g]
            if box_opened:
                grids[n_grids, fy, fx] = box_contents[e, state]
            elif carrying and not was_carrying:
                grids[n_grids, fy, fx, 0], grids[n_grids, fy, fx, 1], grids[n_grids, fy, fx, 2] = EMPTY, 0, 0
            elif was_carrying and not carrying:
                grids[n_grids, fy, fx] = carry[s]
            else:
                grids[n_grids, fy, fx, 2] = new_state
            g = n_grids
            n_grids += 1
        reward = 0.0
        if is_door and (new_state == OPEN) != was_open:
            reward += rules.door_reward if new_state == OPEN else -rules.door_reward
        if carrying != was_carrying:
            reward += rules.pickup_reward if carrying else -rules.pickup_reward
        if reached_goal:
            reward += rules.goal_reward
        first = UNREACHABLE
        if rules.uses_paths and not reached_goal:
            first = steps_to_success(
                grids[g], x, y, new_carry[0], targets[e, : n_targets[e]], pickup_target[e] >= 0, paths
            )
        if rules.progress_reward > 0:  # MiniGridProgressReward: the decrease of the steps to success, capped
            after = 0 if reached_goal else min(first, cap)
            reward += rules.progress_reward * np.float64(min(to_success[s], cap) - after)
        rewards[r] = reward
        success[r] = reached_goal
        directions[r] = direction
        encode_view(grids[g], x, y, direction, new_carry, rules.see_through_walls, images[r])
        if terminated or steps >= max_steps[e]:
            terminal[r] = True
            lower[r] = 0.0
            upper[r] = 0.0
            reached[r] = -1
            ended += 1
            continue
        terminal[r] = False
        agent[n_states, 0], agent[n_states, 1], agent[n_states, 2], agent[n_states, 3] = x, y, direction, steps
        agent[n_states, 4] = push_move(agent[s, 4], action, x != x0 or y != y0, changed)
        agent[n_states, 5] = remember_drop(agent[s, 5], action, changed, fy * width + fx)
        if visits.shape[1]:
            pose[0], pose[1], pose[2] = x0, y0, agent[s, 2]
            count_visit(visits, s, n_states, pose, width, x != x0 or y != y0 or direction != agent[s, 2], changed)
        carry[n_states] = new_carry
        grid_of[n_states] = g
        to_success[n_states] = first
        reached[r] = n_states
        if bound.on and bound.grid:
            lower[r], upper[r] = grid_bound(
                grids[g], new_carry[0], first, paths[0], bound.gamma, bound.door_reward, bound.goal_reward,
                bound.pickup_reward, bound.progress_reward,
            )  # fmt: skip
        elif bound.on:
            lower[r], upper[r] = bound_state(
                grids[g], x, y, max_steps[e] - steps, carrying, doors[e, : n_doors[e]], goals[e, : n_goals[e]],
                scan_pickables[e], bound,
            )  # fmt: skip
        else:
            lower[r] = 0.0
            upper[r] = 0.0
        n_states += 1
    store.used[0], store.used[1] = n_states, n_grids
    return ended
