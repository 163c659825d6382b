"""MiniGrid's step, observation and return-to-go bound on array-held states, compiled with numba: one call per batch.

These kernels follow ``MiniGridEnv.step`` (the base class's dynamics: turn, forward, pickup, drop, toggle, done),
:class:`~sb3_dirpg.envs.minigrid.MiniGridShapedReward`, :func:`~sb3_dirpg.envs.minigrid.fast_obs.encode_view` and
:class:`~sb3_dirpg.envs.minigrid.MultiRoomBound` on a grid held as MiniGrid's own encoding, one ``(type, color,
state)`` triple per cell. :class:`~sb3_dirpg.envs.minigrid.compiled.CompiledMiniGridSimulator` checks that an env
uses nothing else (no ``step`` override, no boxes) and compares itself with the env on every supported MiniGrid
family in ``tests/test_compiled_minigrid.py``.

A state is a row of the state store:

* ``agent``: int32, shape (S, 4): x, y, direction, step count;
* ``carry``: uint8, shape (S, 3): the carried object's encoding, type 0 when the agent carries nothing;
* ``grid_of``: int32, shape (S,): the state's row in ``grids``, uint8, shape (G, H * W, 3); a step that changes a cell
  writes a new grid row, every other state shares its parent's grid.

Per episode ``e`` (shapes with ``E`` episodes, ``D``/``Q`` the most doors/goals of any episode): ``max_steps`` (E,),
the door cells in the order the bound adds them, ``doors`` (E, D) with ``n_doors`` (E,), the goal cells ``goals``
(E, Q) with ``n_goals`` (E,), and whether the bound scans the grid for pickable objects, ``scan_pickables`` (E,).
"""

from __future__ import annotations

import numpy as np
from numba import njit

EMPTY, WALL, DOOR, KEY, BALL, BOX, GOAL, LAVA = 1, 2, 4, 5, 6, 7, 8, 9  # MiniGrid's OBJECT_TO_IDX
OPEN, CLOSED, LOCKED = 0, 1, 2  # a door's state
GREY = 5  # the colour of the wall MiniGrid shows outside the grid
LEFT, RIGHT, FORWARD, PICKUP, DROP, TOGGLE = 0, 1, 2, 3, 4, 5
DIR_X = np.array([1, 0, -1, 0], dtype=np.int64)  # MiniGrid's DIR_TO_VEC: right, down, left, up
DIR_Y = np.array([0, 1, 0, -1], dtype=np.int64)


@njit(cache=True)
def _sees_through(kind: int, state: int) -> bool:
    """:return: MiniGrid's ``see_behind`` of a cell: not a wall, not a closed or locked door"""
    return kind != WALL and not (kind == DOOR and state != OPEN)


@njit(cache=True)
def _visibility(see_rows: np.ndarray, size: int, rows: np.ndarray) -> None:
    """MiniGrid's ``Grid.process_vis`` on bit rows, as :func:`~sb3_dirpg.envs.minigrid.fast_obs.visibility`.

    :param see_rows: bit i of row j: whether view cell (i, j) lets sight through, shape (size,)
    :param size: the view's side
    :param rows: out: bit i of row j: whether the agent sees view cell (i, j), shape (size,)
    """
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
    grid: np.ndarray, width: int, height: int, x: int, y: int, direction: int, carry: np.ndarray, see_through_walls: bool,
    image: np.ndarray,
) -> None:  # fmt: skip
    """Write MiniGrid's egocentric image of one state.

    :param grid: the state's grid, uint8, shape (H * W, 3)
    :param width: W
    :param height: H
    :param x: the agent's column
    :param y: the agent's row
    :param direction: the agent's direction
    :param carry: the carried object's encoding (type 0: nothing), shape (3,)
    :param see_through_walls: MiniGrid's ``see_through_walls``
    :param image: out: the image, uint8, shape (V, V, 3)
    """
    size = image.shape[0]
    half = size // 2
    ahead_x, ahead_y = DIR_X[direction], DIR_Y[direction]
    right_x, right_y = -ahead_y, ahead_x
    see_rows = np.zeros(size, dtype=np.int64)
    for i in range(size):
        for j in range(size):
            cx = x + (size - 1 - j) * ahead_x + (i - half) * right_x
            cy = y + (size - 1 - j) * ahead_y + (i - half) * right_y
            if 0 <= cx < width and 0 <= cy < height:
                k = cy * width + cx
                kind, state = grid[k, 0], grid[k, 2]
                image[i, j, 0], image[i, j, 1], image[i, j, 2] = kind, grid[k, 1], state
                if _sees_through(kind, state):
                    see_rows[j] |= 1 << i
            else:
                image[i, j, 0], image[i, j, 1], image[i, j, 2] = WALL, GREY, 0
    if not see_through_walls:
        rows = np.empty(size, dtype=np.int64)
        _visibility(see_rows, size, rows)
        for i in range(size):
            for j in range(size):
                if not rows[j] & (1 << i):
                    image[i, j, 0], image[i, j, 1], image[i, j, 2] = 0, 0, 0
    if carry[0] != 0:
        image[half, size - 1, 0], image[half, size - 1, 1], image[half, size - 1, 2] = carry[0], carry[1], carry[2]
    else:
        image[half, size - 1, 0], image[half, size - 1, 1], image[half, size - 1, 2] = EMPTY, 0, 0


@njit(cache=True)
def bound_state(
    grid: np.ndarray, width: int, x: int, y: int, steps_left: int, carrying: bool, doors: np.ndarray, n_doors: int,
    goals: np.ndarray, n_goals: int, scan_pickables: bool, gamma: float, door_reward: float, goal_reward: float,
    pickup_reward: float, step_limit: bool,
) -> tuple[float, float]:  # fmt: skip
    """:class:`~sb3_dirpg.envs.minigrid.MultiRoomBound` of one state, with its terms added in its order.

    :param grid: the state's grid, uint8, shape (H * W, 3)
    :param width: W
    :param x: the agent's column
    :param y: the agent's row
    :param steps_left: ``max_steps - step_count``
    :param carrying: whether the agent carries an object
    :param doors: door cells (``y * W + x``) in the bound's order, shape (D,)
    :param n_doors: doors used
    :param goals: goal cells, shape (Q,)
    :param n_goals: goals used (at least 1)
    :param scan_pickables: whether the bound looks for pickable objects (False on MultiRoom, as the bound's layout path)
    :param gamma: the bound's discount
    :param door_reward: the bound's door reward
    :param goal_reward: the bound's goal reward
    :param pickup_reward: the bound's pickup reward
    :param step_limit: the bound's ``step_limit``
    :return: (lower, upper)
    """
    if steps_left <= 0:
        return 0.0, 0.0
    reach = steps_left if step_limit else 1 << 62
    m_goal = 1 << 62
    for q in range(n_goals):
        m = abs(x - goals[q] % width) + abs(y - goals[q] // width)
        m_goal = min(m_goal, m)
    if m_goal == 0:
        return 0.0, 0.0
    upper = goal_reward * gamma ** np.float64(m_goal - 1) if m_goal <= reach else 0.0
    lower = 0.0
    for q in range(n_doors):
        k = doors[q]
        first = max(abs(x - k % width) + abs(y - k // width) - 1, 0)
        if first >= reach:
            continue
        if grid[k, 2] == OPEN:
            lower -= door_reward * gamma ** np.float64(first)
        else:
            upper += door_reward * gamma ** np.float64(first)
    if carrying:
        lower -= pickup_reward
    elif scan_pickables:
        nearest = -1
        for k in range(grid.shape[0]):
            kind = grid[k, 0]
            if kind == KEY or kind == BALL or kind == BOX:
                m = abs(x - k % width) + abs(y - k // width)
                if nearest < 0 or m < nearest:
                    nearest = m
        if nearest >= 0 and nearest - 1 < reach:
            upper += pickup_reward * gamma ** np.float64(nearest - 1)
    return lower, upper


@njit(cache=True)
def step_states(
    states: np.ndarray, actions: np.ndarray, episodes: np.ndarray, agent: np.ndarray, carry: np.ndarray,
    grid_of: np.ndarray, grids: np.ndarray, n_states: int, n_grids: int, width: int, height: int,
    see_through_walls: bool, max_steps: np.ndarray, rewards_of: np.ndarray, with_bound: bool, bound_of: np.ndarray,
    step_limit: bool, doors: np.ndarray, n_doors: np.ndarray, goals: np.ndarray, n_goals: np.ndarray,
    scan_pickables: np.ndarray, images: np.ndarray, directions: np.ndarray, rewards: np.ndarray, terminal: np.ndarray,
    success: np.ndarray, lower: np.ndarray, upper: np.ndarray, reached: np.ndarray,
) -> tuple[int, int]:  # fmt: skip
    """Step a batch of states, writing the states reached into the store.

    :param states: rows of the store to step from, shape (k,)
    :param actions: MiniGrid actions, shape (k,)
    :param episodes: the episode of each row, shape (k,)
    :param agent: the store's agent rows (see the module docstring); rows ``n_states:`` are written
    :param carry: the store's carried objects
    :param grid_of: the store's grid index per state
    :param grids: the grid rows; rows ``n_grids:`` are written
    :param n_states: states in use
    :param n_grids: grids in use
    :param width: W
    :param height: H
    :param see_through_walls: MiniGrid's ``see_through_walls``
    :param max_steps: MiniGrid's ``max_steps`` per episode
    :param rewards_of: the shaped reward's (door, goal, pickup) rewards
    :param with_bound: whether to compute bounds
    :param bound_of: the bound's (gamma, door, goal, pickup) values
    :param step_limit: the bound's ``step_limit``
    :param doors: per-episode door cells (see the module docstring)
    :param n_doors: doors per episode
    :param goals: per-episode goal cells
    :param n_goals: goals per episode
    :param scan_pickables: per episode, whether the bound scans for pickable objects
    :param images: out: observations, shape (k, V, V, 3)
    :param directions: out: the agent's direction, shape (k,)
    :param rewards: out: shaped rewards, shape (k,)
    :param terminal: out: terminated or truncated, shape (k,)
    :param success: out: the step entered a goal, shape (k,)
    :param lower: out: lower bounds (0 for terminal rows), shape (k,)
    :param upper: out: upper bounds (0 for terminal rows), shape (k,)
    :param reached: out: the store row of each state reached, -1 for terminal rows, shape (k,)
    :return: states and grids in use afterwards
    """
    door_reward, goal_reward, pickup_reward = rewards_of[0], rewards_of[1], rewards_of[2]
    new_carry = np.zeros(3, dtype=np.uint8)
    for r in range(states.shape[0]):
        s = states[r]
        e = episodes[r]
        x, y, direction, steps = agent[s, 0], agent[s, 1], agent[s, 2], agent[s, 3] + 1
        g = grid_of[s]
        new_carry[:] = carry[s]
        was_carrying = new_carry[0] != 0
        fx, fy = x + DIR_X[direction], y + DIR_Y[direction]
        inside = 0 <= fx < width and 0 <= fy < height
        k = fy * width + fx if inside else -1
        kind = grids[g, k, 0] if inside else EMPTY
        color = grids[g, k, 1] if inside else 0
        state = grids[g, k, 2] if inside else 0
        is_door = kind == DOOR
        was_open = is_door and state == OPEN
        new_state = state  # of the front cell
        terminated = False
        reached_goal = False
        action = actions[r]
        if action == LEFT:
            direction = (direction + 3) % 4
        elif action == RIGHT:
            direction = (direction + 1) % 4
        elif action == FORWARD and inside:
            if kind == EMPTY or kind == GOAL or kind == LAVA or kind == 3 or (is_door and state == OPEN):  # 3: floor
                x, y = fx, fy
            if kind == GOAL:
                terminated = True
                reached_goal = True
            elif kind == LAVA:
                terminated = True
        elif action == PICKUP and inside:
            if (kind == KEY or kind == BALL or kind == BOX) and not was_carrying:
                new_carry[0], new_carry[1], new_carry[2] = kind, color, state
        elif action == DROP and inside:
            if kind == EMPTY and was_carrying:
                new_carry[:] = 0
        elif action == TOGGLE and is_door:
            if state == LOCKED:
                if new_carry[0] == KEY and new_carry[1] == color:
                    new_state = OPEN
            else:
                new_state = CLOSED if state == OPEN else OPEN
        carrying = new_carry[0] != 0
        if carrying != was_carrying or new_state != state:  # the front cell changes: the state gets a grid of its own
            grids[n_grids] = grids[g]
            if carrying and not was_carrying:
                grids[n_grids, k, 0], grids[n_grids, k, 1], grids[n_grids, k, 2] = EMPTY, 0, 0
            elif was_carrying and not carrying:
                grids[n_grids, k] = carry[s]
            else:
                grids[n_grids, k, 2] = new_state
            g = n_grids
            n_grids += 1
        reward = 0.0
        if is_door and (new_state == OPEN) != was_open:
            reward += door_reward if new_state == OPEN else -door_reward
        if carrying != was_carrying:
            reward += pickup_reward if carrying else -pickup_reward
        if reached_goal:
            reward += goal_reward
        rewards[r] = reward
        success[r] = reached_goal
        directions[r] = direction
        encode_view(grids[g], width, height, x, y, direction, new_carry, see_through_walls, images[r])
        if terminated or steps >= max_steps[e]:
            terminal[r] = True
            lower[r] = 0.0
            upper[r] = 0.0
            reached[r] = -1
            continue
        terminal[r] = False
        agent[n_states, 0], agent[n_states, 1], agent[n_states, 2], agent[n_states, 3] = x, y, direction, steps
        carry[n_states] = new_carry
        grid_of[n_states] = g
        reached[r] = n_states
        n_states += 1
        if with_bound:
            lower[r], upper[r] = bound_state(
                grids[g], width, x, y, max_steps[e] - steps, carrying, doors[e], n_doors[e], goals[e], n_goals[e],
                scan_pickables[e], bound_of[0], bound_of[1], bound_of[2], bound_of[3], step_limit,
            )  # fmt: skip
        else:
            lower[r] = 0.0
            upper[r] = 0.0
    return n_states, n_grids
