"""A bound on the shaped return-to-go for MiniGrid grids in general: shortest paths around walls to the cell where the
episode's success happens (a goal, the object to fetch, the door to open or to stand at), and to doors and objects."""

from __future__ import annotations

from collections import deque
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np

from sb3_dirpg.envs.minigrid.bound import ShapedRewardBound
from sb3_dirpg.envs.minigrid.seen import SeenCells, seen_cells_layer
from sb3_dirpg.envs.minigrid.wrappers import DEFAULT_DOOR_REWARD, DEFAULT_GOAL_REWARD, DEFAULT_PICKUP_REWARD

UNREACHABLE = np.iinfo(np.int32).max


def success_targets(base: Any) -> list[tuple[int, int, int]] | None:
    """Where the episode's success can happen, for the MiniGrid families whose success rule is known.

    Each target is ``(x, y, slack)``: success needs the agent at shortest-path distance ``d`` of ``(x, y)`` to make at
    least ``d - slack`` more steps first, so its reward comes at step index ``>= max(d - slack, 0)``.

    * a ``Goal`` cell (Empty, FourRooms, DoorKey, MultiRoom, LockedRoom, Crossing, LavaGap, DistShift, Dynamic-Obstacles,
      ...) or Memory's ``success_pos``: entered after ``d`` steps, slack 1;
    * the object to pick up (KeyCorridor, ObstructedMaze, UnlockPickup, BlockedUnlockPickup: ``obj``; Fetch: the
      objects of the mission's type and colour), the door to open (Unlock: ``door``; RedBlueDoors: the blue door) or the
      door or object to stand at (GoToDoor, GoToObject: ``target_pos``): the agent must be next to it, slack 1; slack 0
      for ``obj`` while the agent carries something else, which it must drop first (one more step);
    * PutNear: the object to move, picked up and then dropped (slack 0); while carrying it, the drop lands within one
      cell (diagonals included) of ``target_pos`` from a cell next to it, slack 3 on the Manhattan distance.

    :param base: the unwrapped MiniGrid env
    The registered families without one are Playground (it never succeeds) and WFC (a goal cell: found above).

    :return: the targets, or None for an env whose success rule is not known here
    """
    from minigrid.envs import (
        BlockedUnlockPickupEnv,
        FetchEnv,
        GoToDoorEnv,
        GoToObjectEnv,
        KeyCorridorEnv,
        MemoryEnv,
        ObstructedMazeEnv,
        PutNearEnv,
        RedBlueDoorEnv,
        UnlockEnv,
        UnlockPickupEnv,
    )

    goals = _cells(base, "goal", None, 1)
    if goals:
        return goals
    if isinstance(base, MemoryEnv):
        return [(int(base.success_pos[0]), int(base.success_pos[1]), 1)]
    if isinstance(base, (KeyCorridorEnv, ObstructedMazeEnv, UnlockPickupEnv, BlockedUnlockPickupEnv)):
        obj = base.obj
        if obj.cur_pos is None or base.carrying is obj:
            return []
        return [(int(obj.cur_pos[0]), int(obj.cur_pos[1]), 1 if base.carrying is None else 0)]  # a drop comes first
    if isinstance(base, FetchEnv):
        return _cells(base, base.targetType, base.targetColor, 1)
    if isinstance(base, UnlockEnv):
        return _cells(base, base.door, None, 1)
    if isinstance(base, RedBlueDoorEnv):
        return _cells(base, base.blue_door, None, 1)
    if isinstance(base, (GoToDoorEnv, GoToObjectEnv)):
        return [(int(base.target_pos[0]), int(base.target_pos[1]), 1)]
    if isinstance(base, PutNearEnv):
        carrying = base.carrying
        if carrying is not None and carrying.type == base.move_type and carrying.color == base.moveColor:
            return [(int(base.target_pos[0]), int(base.target_pos[1]), -3)]  # negative: Manhattan distance, slack 3
        return _cells(base, base.move_type, base.moveColor, 0)
    return None


def _cells(base: Any, kind: Any, color: str | None, slack: int) -> list[tuple[int, int, int]]:
    """:param base: the unwrapped MiniGrid env
    :param kind: a world object type, or the world object itself
    :param color: its colour, or None for any
    :param slack: see :func:`success_targets`
    :return: the cells of the grid's objects of ``kind`` (and ``color``), with ``slack``"""
    width = base.grid.width

    def wanted(cell: Any) -> bool:
        if not isinstance(kind, str):
            return cell is kind
        return cell.type == kind and (color is None or cell.color == color)

    return [(k % width, k // width, slack) for k, cell in enumerate(base.grid.grid) if cell is not None and wanted(cell)]


def distance_field(passable: np.ndarray, x: int, y: int) -> np.ndarray:
    """Shortest-path lengths (4-neighbour moves through passable cells) from every cell to ``(x, y)``.

    The target cell itself counts as reachable even when it is not passable (a door, an object to pick up).

    :param passable: bool array (height, width)
    :param x: the target's column
    :param y: the target's row
    :return: int32 array (height, width), :data:`UNREACHABLE` where no path exists
    """
    height, width = passable.shape
    dist = np.full((height, width), UNREACHABLE, dtype=np.int32)
    dist[y, x] = 0
    queue = deque([(x, y)])
    while queue:
        cx, cy = queue.popleft()
        step = dist[cy, cx] + 1
        for nx, ny in ((cx + 1, cy), (cx - 1, cy), (cx, cy + 1), (cx, cy - 1)):
            if 0 <= nx < width and 0 <= ny < height and passable[ny, nx] and dist[ny, nx] > step:
                dist[ny, nx] = step
                queue.append((nx, ny))
    return dist


class GridLayout(NamedTuple):
    """What :class:`MiniGridBound` reads of an episode's grid once, and the distance fields it finds on it.

    :param base: the unwrapped env
    :param grid: its grid (a new one each episode)
    :param passable: the cells a way may cross (not a wall, not lava), bool, shape (height, width)
    :param fields: the distance fields found so far, by target cell and the locked doors treated as walls
    :param seen: the chain's :class:`~sb3_dirpg.envs.minigrid.seen.SeenCells` layer, or None
    """

    base: Any
    grid: Any
    passable: np.ndarray
    fields: dict[tuple[int, int, tuple[int, ...]], np.ndarray]
    seen: SeenCells | None


class MiniGridBound(ShapedRewardBound):
    """``(lower, upper)`` bounds on the discounted return-to-go under :class:`~sb3_dirpg.envs.MiniGridShapedReward`
    for MiniGrid grids in general.

    It refines :class:`~sb3_dirpg.envs.minigrid.MultiRoomBound` in three ways. Distances are shortest paths around
    walls and lava (which never move, and which no path to success crosses: lava ends the episode), found by
    breadth-first search once per grid and target cell, instead of Manhattan distances. The success reward is placed
    where the env's success happens (:func:`success_targets`), so envs without a goal cell (Fetch, GoToDoor, PutNear,
    Unlock, KeyCorridor, RedBlueDoors, ObstructedMaze) get a bound too. And where locked doors stand in every way to
    the success and the agent carries no key, the way goes through the nearest key or box first. Doors, keys, balls
    and boxes count as passable otherwise (a path may open or clear them), so the distances never exceed the true
    number of steps.

    With ``d(x)`` the path length from the agent to cell ``x``:

    * success: ``goal_reward * gamma^max(d - slack, 0)`` at the nearest target; ``goal_reward`` where the env's rule is
      unknown (no discount: still admissible); 0 where no target is reachable;
    * a closed door at most ``door_reward * gamma^max(d - 1, 0)``, an open one at least ``-door_reward`` times that;
    * not carrying: at most ``pickup_reward * gamma^max(d - 1, 0)`` (nearest pickable object); carrying: at least
      ``-pickup_reward``.

    The step limit is ignored, as in :class:`~sb3_dirpg.envs.minigrid.MultiRoomBound` (see there why). The bound runs
    in Python, on the env: the compiled simulator uses ``MultiRoomBound``.

    With ``count_key_actions``, a way through a key also counts the actions that are not moves and that every such
    way needs before the success: the toggle of the locked door (unless toggling it is the success), the toggle of a
    box that holds the key, the drop of what the agent carries before the key's pickup, and the drop of the key
    before a success that picks an object up. A carried box no longer hides the way through a key: it may hold the
    key, which it releases only once dropped and toggled. The bound stays admissible and is tighter wherever a key is
    needed.

    With a :class:`~sb3_dirpg.envs.minigrid.seen.SeenCells` layer in the env chain, the way through a key uses only the
    keys and boxes the agent has seen; one it has not seen counts at the nearest cell it has not seen, where no locked
    door is in the way. Admissible still (that is where such a key must lie), and the bound no longer leads the search
    to a key hidden behind a closed door, which the policy cannot see (KeyCorridor).

    :param gamma: discount in (0, 1]
    :param door_reward: the wrapper's ``door_reward``
    :param goal_reward: the wrapper's ``goal_reward``
    :param pickup_reward: the wrapper's ``pickup_reward``
    :param count_key_actions: count the non-move actions of the way through a key (above)
    """

    def __init__(
        self,
        gamma: float = 1.0,
        door_reward: float = DEFAULT_DOOR_REWARD,
        goal_reward: float = DEFAULT_GOAL_REWARD,
        pickup_reward: float = DEFAULT_PICKUP_REWARD,
        count_key_actions: bool = False,
    ) -> None:
        super().__init__(gamma, door_reward, goal_reward, pickup_reward)
        self.count_key_actions = bool(count_key_actions)

    def new_layout(self, base: gym.Env, chain: gym.Env) -> GridLayout:
        """:param base: an unwrapped MiniGrid env after reset
        :param chain: the env chain around it
        :return: its grid's cells that block a way, an empty cache of distance fields, and the chain's
            :class:`~sb3_dirpg.envs.minigrid.seen.SeenCells` layer"""
        grid = base.grid
        blocked = [cell is not None and cell.type in ("wall", "lava") for cell in grid.grid]
        passable = ~np.array(blocked, dtype=bool).reshape(grid.height, grid.width)
        return GridLayout(base, grid, passable, {}, seen_cells_layer(chain))

    @staticmethod
    def _field(entry: GridLayout, x: int, y: int, locked: tuple[int, ...] = ()) -> np.ndarray:
        """:param entry: the grid's layout
        :param x: the target's column
        :param y: the target's row
        :param locked: grid indices of cells to treat as walls (locked doors)
        :return: the path lengths from every cell to ``(x, y)`` (:func:`distance_field`, found once per grid and wall
            set)"""
        fields = entry.fields
        field = fields.get((x, y, locked))
        if field is None:
            passable = entry.passable
            if locked:
                passable = passable.copy()
                passable.flat[list(locked)] = False
            field = fields[(x, y, locked)] = distance_field(passable, x, y)
        return field

    @classmethod
    def _distance(cls, entry: GridLayout, ax: int, ay: int, x: int, y: int, locked: tuple[int, ...] = ()) -> int:
        """:param entry: the grid's layout
        :param ax: the start's column
        :param ay: the start's row
        :param x: the target's column
        :param y: the target's row
        :param locked: grid indices of cells to treat as walls (locked doors)
        :return: the path length from ``(ax, ay)`` to ``(x, y)``"""
        return int(cls._field(entry, x, y, locked)[ay, ax])

    @classmethod
    def _way_through_unseen(cls, entry: GridLayout, ax: int, ay: int, x: int, y: int, locked: tuple[int, ...]) -> int:
        """The shortest way to a target through a cell the agent has not seen, as the way through a key counts it.

        A key the agent picks up first, with no key in hand, lies where no locked door stands in the way; if the agent
        has not seen it, it lies at a cell not seen yet. So over those cells ``u``, ``d(agent, u) + d(u, target) - 1``
        (``d(agent, u)`` with the locked doors as walls) is a lower bound on a way through such a key.

        :param entry: the grid's layout, with a :class:`~sb3_dirpg.envs.minigrid.seen.SeenCells` layer
        :param ax: the agent's column
        :param ay: the agent's row
        :param x: the target's column
        :param y: the target's row
        :param locked: grid indices of the locked doors
        :return: the way's length, or :data:`UNREACHABLE` where no unseen cell is within reach
        """
        from_agent = cls._field(entry, ax, ay, locked)  # symmetric: the lengths from the agent to every cell
        to_target = cls._field(entry, x, y)
        candidates = ~entry.seen.seen & (from_agent != UNREACHABLE) & (to_target != UNREACHABLE)
        if not candidates.any():
            return UNREACHABLE
        return int((from_agent[candidates].astype(np.int64) + to_target[candidates]).min()) - 1

    def _target_distance(self, entry: GridLayout, ax: int, ay: int, x: int, y: int) -> int:
        """Path length from the agent to a success target, through a key where a locked door is in the way.

        When the target is a locked door, or no way to it avoids the locked doors, and the agent carries no key (nor
        a box, which may hold one), every success first picks up a key: the way is then at least
        ``d(agent, key) + d(key, target) - 1`` for the nearest key or box, which keeps the target's slack valid. The
        larger of that and the plain path length is returned: both are lower bounds. With a
        :class:`~sb3_dirpg.envs.minigrid.seen.SeenCells` layer in the chain, keys and boxes the agent has not seen are
        replaced by the cells it has not seen (:meth:`_way_through_unseen`).

        :param entry: the grid's layout
        :param ax: the agent's column
        :param ay: the agent's row
        :param x: the target's column
        :param y: the target's row
        :return: the path length, or :data:`UNREACHABLE`
        """
        plain = self._distance(entry, ax, ay, x, y)
        base, cells, width = entry.base, entry.grid.grid, entry.grid.width
        carrying = None if base.carrying is None else base.carrying.type
        if plain == UNREACHABLE or (carrying in ("key", "box") and not self.count_key_actions):
            return plain
        locked = tuple(k for k, cell in enumerate(cells) if cell is not None and cell.type == "door" and cell.is_locked)
        if not locked:
            return plain
        target = cells[y * width + x]
        target_locked = target is not None and target.type == "door" and target.is_locked
        free = UNREACHABLE if target_locked else self._distance(entry, ax, ay, x, y, locked)
        if free == plain:
            return plain
        # the non-move actions of the way through a key beyond its pickup (which the way's "- 1" below counts)
        extra, box_extra = 0, 0
        if self.count_key_actions:
            picks_target = target is not None and target.can_pickup()  # success picks it up, with empty hands
            extra = (0 if target_locked else 1) + (1 if picks_target else 0)  # toggle the door, drop the key
            if carrying == "key":  # the drop before a pickup success is the target's slack already
                return max(plain, min(free, plain + (0 if target_locked else 1)))
            if carrying is not None:  # it goes down before the key's pickup (the slack counts that for a pickup)
                extra += 0 if picks_target else 1
            box_extra = 1  # a key in a box comes out with a toggle
        through_key = UNREACHABLE
        if carrying == "box" and getattr(base.carrying.contains, "type", None) == "key":
            through_key = plain + extra + box_extra + 1  # dropped, toggled and the key picked up, anywhere on the way
        seen = None if entry.seen is None else entry.seen.seen
        if seen is not None:  # a key not seen yet counts at the nearest cell not seen yet (no key is in hand here)
            unseen = self._way_through_unseen(entry, ax, ay, x, y, locked)
            through_key = min(through_key, UNREACHABLE if unseen == UNREACHABLE else unseen + extra)
        for k, cell in enumerate(cells):
            if cell is not None and cell.type in ("key", "box"):
                kx, ky = k % width, k // width
                if seen is not None and not seen[ky, kx]:
                    continue  # counted by the way through the cells not seen yet
                to_key, key_to_target = self._distance(entry, ax, ay, kx, ky), self._distance(entry, kx, ky, x, y)
                if to_key != UNREACHABLE and key_to_target != UNREACHABLE:
                    opened = box_extra if cell.type == "box" else 0
                    through_key = min(through_key, to_key + key_to_target - 1 + extra + opened)
        return max(plain, min(free, through_key))  # both are lower bounds on the way

    def steps_to_success(self, env: gym.Env) -> int | None:
        """A lower bound on the number of steps before the step where the episode's success happens.

        It is ``max(d - slack, 0)`` for the nearest target of :func:`success_targets`, where ``d`` is the path length
        to it (through a key where locked doors are in the way). Two families need a way through a first cell:
        RedBlueDoors while the red door is closed (it must be opened before the blue one), and PutNear before the
        object is picked up (it must then be carried near the target).

        :param env: a MiniGrid env (possibly wrapped)
        :return: the number of steps, :data:`UNREACHABLE` when no target is reachable, None when the env's success
            rule is not known here
        """
        from minigrid.envs import PutNearEnv, RedBlueDoorEnv

        entry = self.layout(env)
        base = entry.base
        targets = success_targets(base)
        if targets is None:
            return None
        ax, ay = int(base.agent_pos[0]), int(base.agent_pos[1])
        first = UNREACHABLE
        for x, y, slack in targets:
            if slack < 0:  # measured in Manhattan distance
                index = abs(ax - x) + abs(ay - y) + slack
            else:
                distance = self._target_distance(entry, ax, ay, x, y)
                index = UNREACHABLE if distance == UNREACHABLE else distance - slack
            first = min(first, max(index, 0))
        if first == UNREACHABLE:
            return first
        if isinstance(base, RedBlueDoorEnv) and not base.red_door.is_open:
            # next to the red door, then from next to it to next to the blue door: d(red, blue) - 2 moves at least
            (rx, ry, _), = _cells(base, base.red_door, None, 1)
            (bx, by, _), = targets
            to_red, red_to_blue = self._distance(entry, ax, ay, rx, ry), self._distance(entry, rx, ry, bx, by)
            if UNREACHABLE in (to_red, red_to_blue):
                return UNREACHABLE
            first = max(first, to_red + max(red_to_blue - 2, 0))  # red toggled at index >= to_red - 1, then one more step
        elif isinstance(base, PutNearEnv) and targets[0][2] == 0:
            # before the pickup: the object is then carried from next to its cell, at Manhattan distance m - 1 of the
            # target at least, and the drop needs that distance minus 3 (see success_targets)
            tx, ty = int(base.target_pos[0]), int(base.target_pos[1])
            first = min(
                max(self._distance(entry, ax, ay, x, y) + max(abs(x - tx) + abs(y - ty) - 4, 0), 0)
                for x, y, _ in targets
                if self._distance(entry, ax, ay, x, y) != UNREACHABLE
            )
        return first

    def __call__(self, env: gym.Env) -> tuple[float, float]:
        """:param env: a MiniGrid env (possibly wrapped) in the state to bound
        :return: ``(lower, upper)`` bounds on the discounted return-to-go"""
        entry = self.layout(env)
        base = entry.base
        if base.max_steps - base.step_count <= 0:
            return 0.0, 0.0
        ax, ay = int(base.agent_pos[0]), int(base.agent_pos[1])
        under = base.grid.grid[ay * base.grid.width + ax]
        if under is not None and under.type == "goal":
            return 0.0, 0.0  # standing on the goal: the episode is over
        gamma = self.gamma
        first = self.steps_to_success(env)
        if first is None:
            upper = self.goal_reward
        else:
            upper = 0.0 if first == UNREACHABLE else self.goal_reward * self.gamma**first
        lower = 0.0
        grid, width = base.grid.grid, base.grid.width
        nearest_pickable = UNREACHABLE
        for k, cell in enumerate(grid):
            if cell is None or cell.type in ("wall", "goal", "lava", "floor"):
                continue
            x, y = k % width, k // width
            if cell.type == "door":
                distance = self._distance(entry, ax, ay, x, y)
                if distance == UNREACHABLE:
                    continue
                term = self.door_reward * gamma ** max(distance - 1, 0)
                if cell.is_open:
                    lower -= term
                else:
                    upper += term
            elif base.carrying is None and cell.can_pickup():
                nearest_pickable = min(nearest_pickable, self._distance(entry, ax, ay, x, y))
        if base.carrying is not None:
            lower -= self.pickup_reward
        elif nearest_pickable != UNREACHABLE:
            upper += self.pickup_reward * gamma ** max(nearest_pickable - 1, 0)
        return self._add_terms(entry, first, float(lower), float(upper))

    def _add_terms(self, entry: GridLayout, steps: int | None, lower: float, upper: float) -> tuple[float, float]:
        """Where a subclass adds the bounds of more reward terms (the state is neither at the step limit nor on the goal).

        :param entry: the grid's layout
        :param steps: :meth:`steps_to_success` of the state
        :param lower: the lower bound so far
        :param upper: the upper bound so far
        :return: the bounds
        """
        return lower, upper
