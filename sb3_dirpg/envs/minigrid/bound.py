"""Bounds on the shaped return-to-go in MiniGrid (MultiRoom, DoorKey, Empty): doors still closed and distance to the goal."""

from __future__ import annotations

import contextlib
import weakref
from typing import Any, NamedTuple, Self

import gymnasium as gym

from sb3_dirpg.envs.minigrid.wrappers import (
    DEFAULT_DOOR_REWARD,
    DEFAULT_GOAL_REWARD,
    DEFAULT_PICKUP_REWARD,
    MiniGridShapedReward,
)


def _multiroom_class() -> type | None:
    """:return: MiniGrid's ``MultiRoomEnv`` class, or None if it cannot be imported"""
    try:
        from minigrid.envs.multiroom import MultiRoomEnv
    except ImportError:  # pragma: no cover - minigrid is a dependency
        return None
    return MultiRoomEnv


_MULTIROOM = _multiroom_class()


def shaped_reward_values(env: gym.Env) -> tuple[float, float, float]:
    """:param env: a wrapped MiniGrid env
    :return: ``door_reward``, ``goal_reward`` and ``pickup_reward`` of the :class:`MiniGridShapedReward` in its chain"""
    wrapper = env
    while isinstance(wrapper, gym.Wrapper):
        if isinstance(wrapper, MiniGridShapedReward):
            return wrapper.door_reward, wrapper.goal_reward, wrapper.pickup_reward
        wrapper = wrapper.env
    raise ValueError(f"no MiniGridShapedReward in the wrapper chain of {env}")


class RoomLayout(NamedTuple):
    """What :class:`MultiRoomBound` reads of an episode's grid once: nothing there moves.

    :param base: the unwrapped env
    :param grid: its grid (a new one each episode)
    :param doors: on MultiRoom, the doors as ``(x, y, index in the grid's cell list)``, else None (the grid is scanned)
    :param goal: on MultiRoom, the goal cell, else ``(-1, -1)``
    """

    base: Any
    grid: Any
    doors: tuple[tuple[int, int, int], ...] | None
    goal: tuple[int, int]


class ShapedRewardBound:
    """What the MiniGrid bounds share: the discount, the reward values of :class:`MiniGridShapedReward`, :meth:`for_env`,
    and a cache of each env chain's layout (:meth:`layout`) that copies and pickles leave out (it holds weak
    references, and a copy starts with none).

    :param gamma: discount in (0, 1]
    :param door_reward: the wrapper's ``door_reward``
    :param goal_reward: the wrapper's ``goal_reward``
    :param pickup_reward: the wrapper's ``pickup_reward``
    """

    def __init__(
        self,
        gamma: float = 1.0,
        door_reward: float = DEFAULT_DOOR_REWARD,
        goal_reward: float = DEFAULT_GOAL_REWARD,
        pickup_reward: float = DEFAULT_PICKUP_REWARD,
    ) -> None:
        if not 0.0 < gamma <= 1.0:
            raise ValueError(f"gamma must be in (0, 1], got {gamma}")
        if min(door_reward, goal_reward, pickup_reward) < 0:
            raise ValueError("door_reward, goal_reward and pickup_reward must be non-negative")
        self.gamma = float(gamma)
        self.door_reward = float(door_reward)
        self.goal_reward = float(goal_reward)
        self.pickup_reward = float(pickup_reward)
        self._layouts: weakref.WeakKeyDictionary[gym.Env, Any] = weakref.WeakKeyDictionary()

    @classmethod
    def for_env(cls, env: gym.Env, gamma: float = 1.0, **options: Any) -> Self:
        """Bound with the reward values of the wrappers found in ``env``'s chain (:meth:`env_rewards`).

        :param env: a wrapped MiniGrid env
        :param gamma: discount in (0, 1]
        :param options: the bound's own settings (:class:`MultiRoomBound`'s ``step_limit``,
            :class:`~sb3_dirpg.envs.minigrid.MiniGridBound`'s ``count_key_actions``); None keeps what the env says
        :return: the bound
        """
        return cls(gamma, **{**cls.env_rewards(env), **{key: value for key, value in options.items() if value is not None}})

    @classmethod
    def env_rewards(cls, env: gym.Env) -> dict[str, Any]:
        """:param env: a wrapped MiniGrid env
        :return: the settings of the bound that the env's wrappers fix: :class:`MiniGridShapedReward`'s reward values"""
        door_reward, goal_reward, pickup_reward = shaped_reward_values(env)
        return dict(door_reward=door_reward, goal_reward=goal_reward, pickup_reward=pickup_reward)

    def layout(self, env: gym.Env) -> Any:
        """The layout of an env chain's current grid (:meth:`new_layout`), found once per grid (per episode) and
        remembered per chain, since ``env.unwrapped`` walks the chain at every call.

        :param env: an env chain
        :return: the layout, a named record whose first fields are ``base`` (the unwrapped env) and ``grid``
        """
        try:
            layout = self._layouts.get(env)
        except TypeError:  # an unhashable env class: nothing remembered
            layout = None
        base = env.unwrapped if layout is None else layout.base
        if layout is not None and layout.grid is base.grid:
            return layout
        layout = self.new_layout(base, env)
        with contextlib.suppress(TypeError):
            self._layouts[env] = layout
        return layout

    def new_layout(self, base: gym.Env, chain: gym.Env) -> Any:
        """:param base: an unwrapped MiniGrid env after reset
        :param chain: the env chain around it (its wrappers may hold state the bound reads)
        :return: what the bound reads of its grid once"""
        raise NotImplementedError

    def __getstate__(self) -> dict[str, Any]:
        """:return: the settings, without the cache"""
        return {key: value for key, value in self.__dict__.items() if key != "_layouts"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """:param state: a value returned by :meth:`__getstate__`"""
        self.__dict__.update(state)
        self._layouts = weakref.WeakKeyDictionary()


class MultiRoomBound(ShapedRewardBound):
    """``(lower, upper)`` bounds on the discounted return-to-go under :class:`~sb3_dirpg.envs.MiniGridShapedReward`.

    The return-to-go is ``r_t + gamma r_{t+1} + ...`` from the current state up to the end of the episode
    (success, or MiniGrid's ``max_steps`` truncation). ``upper`` is admissible (``>=`` the best return-to-go of any
    continuation) and ``lower`` is ``<=`` the return-to-go of *every* continuation (the bound to use when epsilon < 0).
    With ``K = max_steps - step_count`` steps left and ``m(x)`` the Manhattan distance from the agent to cell ``x``,
    an event at ``x`` (toggling the door at ``x``, picking up the object at ``x``, entering the goal ``x``) needs the
    agent next to ``x``, so it happens at step index ``>= m(x) - 1`` (discount ``<= gamma^(m(x) - 1)``) and is
    possible only if ``m(x) <= K``. Each step triggers at most one event.

    * Goal: at most ``goal_reward * gamma^(m_goal - 1)`` (nearest goal cell), 0 if ``m_goal > K`` (with ``step_limit``).
    * Doors: the toggle rewards of one door alternate in sign with decreasing discount, so a *closed* (or locked) door
      contributes at most ``door_reward * gamma^(m - 1)`` and at least 0; an *open* door at most 0 and at least
      ``-door_reward * gamma^(max(m - 1, 0))``. With ``step_limit``, doors with ``max(m - 1, 0) >= K``
      contribute nothing.
    * Pickups: pickups and drops alternate too: when not carrying, at most ``pickup_reward * gamma^(m_obj - 1)``
      (nearest pickable object within reach) and at least 0; when carrying, at most 0 and at least ``-pickup_reward``.

    ``upper`` sums the positive parts, ``lower`` the negative parts. In MultiRoom the door and goal positions come from
    the env's room list (a few cell look-ups); for other MiniGrid envs the grid is scanned (slower, O(width * height)).
    The bound is only valid for envs whose success is entering a ``Goal`` cell; an env without a goal raises.

    With ``step_limit=True`` the terms of events that the steps left cannot reach are dropped. That bound is tighter,
    which helps pruning, but it starves the weighted-A* priority ``G + ε·(L + α·U)``: along a deep prefix of a weak
    policy the goal leaves reach, the priority falls by ``ε·α·goal_reward`` and the search retreats to shallow regions
    without completing trajectories (measured on MultiRoom-N6 in ``docs/hyperparameters.md``). The default ignores the
    step limit, as the authors' bound does; both are admissible.

    :func:`~sb3_dirpg.envs.minigrid.compiled_kernels.bound_state` is its compiled copy, used by the compiled simulator
    and compared with this one bit for bit in ``tests/test_compiled_minigrid.py``. The env keeps this Python version:
    reading the doors' state out of MiniGrid's objects into arrays for the kernel costs about as much as this whole
    call (about 2 us).

    :param gamma: discount in (0, 1]
    :param door_reward: the wrapper's ``door_reward``
    :param goal_reward: the wrapper's ``goal_reward``
    :param pickup_reward: the wrapper's ``pickup_reward``
    :param step_limit: drop the terms of events beyond the steps left (tighter, but starves the weighted priority)
    """

    def __init__(
        self,
        gamma: float = 1.0,
        door_reward: float = DEFAULT_DOOR_REWARD,
        goal_reward: float = DEFAULT_GOAL_REWARD,
        pickup_reward: float = DEFAULT_PICKUP_REWARD,
        step_limit: bool = False,
    ) -> None:
        super().__init__(gamma, door_reward, goal_reward, pickup_reward)
        self.step_limit = bool(step_limit)

    def new_layout(self, base: gym.Env, chain: gym.Env) -> RoomLayout:
        """:param base: an unwrapped MiniGrid env after reset
        :param chain: the env chain around it (not read)
        :return: its grid and, on MultiRoom, its doors' and goal's cells (from the room list: a few look-ups)"""
        grid = base.grid
        doors, goal = None, (-1, -1)
        if _MULTIROOM is not None and isinstance(base, _MULTIROOM):
            width = grid.width
            positions = [(int(room.entryDoorPos[0]), int(room.entryDoorPos[1])) for room in base.rooms[1:]]
            doors = tuple((x, y, y * width + x) for x, y in positions)
            goal = (int(base.goal_pos[0]), int(base.goal_pos[1]))
        return RoomLayout(base, grid, doors, goal)

    def _scan(self, base: gym.Env) -> tuple[list[tuple[int, int, bool]], list[tuple[int, int]], list[tuple[int, int]]]:
        """Find doors, goals and pickable objects by scanning the grid (any MiniGrid env).

        :param base: the unwrapped MiniGrid env
        :return: doors ``(x, y, is_open)``, goal cells ``(x, y)``, pickable objects ``(x, y)``
        """
        grid = base.grid
        doors, goals, pickables = [], [], []
        width = grid.width
        for k, cell in enumerate(grid.grid):
            if cell is None:
                continue
            kind = cell.type
            if kind == "wall":
                continue
            x, y = k % width, k // width
            if kind == "door":
                doors.append((x, y, cell.is_open))
            elif kind == "goal":
                goals.append((x, y))
            elif cell.can_pickup():
                pickables.append((x, y))
        return doors, goals, pickables

    def static_cells(self, env: gym.Env) -> tuple[list[tuple[int, int]], list[tuple[int, int]], bool]:
        """The cells the bound reads that never move, in the order it adds their terms (for a compiled copy of it).

        :param env: a MiniGrid env (possibly wrapped) after ``reset``
        :return: the door cells ``(x, y)``, the goal cells, and whether the bound looks for pickable objects (it does
            not on MultiRoom, where the layout comes from the room list)
        """
        base, _, door_cells, goal = self.layout(env)
        if door_cells is not None:
            return [(x, y) for x, y, _ in door_cells], [goal], False
        doors, goals, _ = self._scan(base)
        return [(x, y) for x, y, _ in doors], goals, True

    def __call__(self, env: gym.Env) -> tuple[float, float]:
        """:param env: a MiniGrid env (possibly wrapped) in the state to bound
        :return: ``(lower, upper)`` bounds on the discounted return-to-go"""
        base, _, door_cells, goal = self.layout(env)
        steps_left = base.max_steps - base.step_count
        if steps_left <= 0:
            return 0.0, 0.0
        if door_cells is not None:  # MultiRoom: the cells are known, only the doors' state is read
            cells = base.grid.grid
            doors, goals, pickables = [(x, y, cells[k].is_open) for x, y, k in door_cells], [goal], []
        else:
            doors, goals, pickables = self._scan(base)
        if not goals:
            raise ValueError(f"MultiRoomBound needs a Goal cell in the grid of {type(base).__name__}")
        reach = steps_left if self.step_limit else float("inf")
        ax, ay = int(base.agent_pos[0]), int(base.agent_pos[1])
        gamma, door_reward = self.gamma, self.door_reward
        m_goal = min([abs(ax - x) + abs(ay - y) for x, y in goals])
        if m_goal == 0:  # standing on the goal: the episode is over
            return 0.0, 0.0
        upper = self.goal_reward * gamma ** (m_goal - 1) if m_goal <= reach else 0.0
        lower = 0.0
        for x, y, is_open in doors:
            first = abs(ax - x) + abs(ay - y) - 1
            if first < 0:
                first = 0
            if first >= reach:
                continue
            if is_open:
                lower -= door_reward * gamma**first
            else:
                upper += door_reward * gamma**first
        if base.carrying is not None:
            lower -= self.pickup_reward
        elif pickables:
            first = min(abs(ax - x) + abs(ay - y) for x, y in pickables) - 1
            if first < reach:
                upper += self.pickup_reward * gamma**first
        return float(lower), float(upper)
