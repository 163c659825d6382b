"""A progress reward for MiniGrid: potential-based shaping by the steps left to the episode's success, and its bound."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from sb3_dirpg.envs.minigrid.bound import shaped_reward_values
from sb3_dirpg.envs.minigrid.grid_bound import UNREACHABLE, GridLayout, MiniGridBound
from sb3_dirpg.envs.minigrid.seen import seen_cells_layer
from sb3_dirpg.envs.minigrid.wrappers import DEFAULT_DOOR_REWARD, DEFAULT_GOAL_REWARD, DEFAULT_PICKUP_REWARD

DEFAULT_PROGRESS_REWARD = 5.0


def _distance_cap(base: Any) -> int:
    """:param base: the unwrapped MiniGrid env
    :return: the steps to success counted for a state from which no target is reachable (more than any path)"""
    return int(base.grid.width * base.grid.height)


def _unseen_cells(entry: GridLayout) -> int:
    """:param entry: a grid's layout (:meth:`~sb3_dirpg.envs.minigrid.MiniGridBound.layout`)
    :return: the cells a way may cross (not a wall, not lava) that the agent has not seen, 0 without a
        :class:`~sb3_dirpg.envs.minigrid.seen.SeenCells` layer"""
    return 0 if entry.seen is None else int(np.count_nonzero(entry.passable & ~entry.seen.seen))


def progress_potential(steps: int | None, entry: GridLayout, unseen_cell_steps: float) -> float:
    """The distance ``d`` of :class:`MiniGridProgressReward`: the steps left, capped, plus ``unseen_cell_steps`` per
    cell not seen yet.

    :param steps: :meth:`~sb3_dirpg.envs.minigrid.MiniGridBound.steps_to_success` of the state
    :param entry: the grid's layout
    :param unseen_cell_steps: what a cell not seen yet counts
    :return: ``d``, in ``[0, cap]`` with ``cap`` the grid's number of cells times ``1 + unseen_cell_steps``
    """
    cap = _distance_cap(entry.base)
    steps = cap if steps is None or steps == UNREACHABLE else min(steps, cap)
    return steps + unseen_cell_steps * _unseen_cells(entry)


class MiniGridProgressReward(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Adds ``progress_reward * (d(s) - d(s'))`` to the reward of each step, ``d`` being the grid bound's lower bound on
    the steps left before the success (:meth:`~sb3_dirpg.envs.minigrid.MiniGridBound.steps_to_success`: shortest
    paths around walls to the goal or the mission's target, through a key where locked doors are in the way).

    This is potential-based shaping (Ng, Harada and Russell, 1999) with the potential ``-progress_reward * d``: over an
    episode the added rewards sum to ``progress_reward * (d(s_0) - d(s_T))``, so no loop pays and the best
    trajectories of the env's own reward stay the best. Unlike door and pickup rewards it cannot be collected away from
    the way to success (opening every door of LockedRoom, say). A successful step counts ``d(s') = 0``; a state from
    which no target is reachable counts the grid's number of cells. Put it outside
    :class:`~sb3_dirpg.envs.MiniGridShapedReward` (usually with ``door_reward`` and ``pickup_reward`` 0), whose
    ``info["is_success"]`` it reads. It computes ``d`` from the env's state before and after each step, so it has no
    state of its own and needs nothing in a simulator snapshot.

    :param env: a MiniGrid env wrapped in :class:`~sb3_dirpg.envs.MiniGridShapedReward`
    :param progress_reward: reward per step of progress, > 0
    :param count_key_actions: ``d`` counts the actions that are not moves on a way through a key (the toggles of the
        door and of a box, the drops), so that they pay as progress too (see
        :class:`~sb3_dirpg.envs.minigrid.MiniGridBound`)
    :param unseen_cell_steps: ``d`` also counts this many steps for each cell the agent has not seen yet (a wall or
        lava excepted), so that seeing a cell pays as progress. It needs a
        :class:`~sb3_dirpg.envs.minigrid.seen.SeenCells` layer inside this wrapper. With that layer the steps left count
        a key the agent has not seen at the nearest cell not seen yet; ``d`` then jumps up when a room without the key
        comes into view, and this term pays for the view instead (still potential-based: ``d`` is a function of the
        env chain's state)
    """

    def __init__(
        self,
        env: gym.Env,
        progress_reward: float = DEFAULT_PROGRESS_REWARD,
        count_key_actions: bool = False,
        unseen_cell_steps: float = 0.0,
    ) -> None:
        gym.utils.RecordConstructorArgs.__init__(
            self, progress_reward=progress_reward, count_key_actions=count_key_actions, unseen_cell_steps=unseen_cell_steps
        )
        gym.Wrapper.__init__(self, env)
        if not progress_reward > 0:
            raise ValueError(f"progress_reward must be > 0, got {progress_reward}")
        if not unseen_cell_steps >= 0:
            raise ValueError(f"unseen_cell_steps must be >= 0, got {unseen_cell_steps}")
        shaped_reward_values(env)  # raises when the chain has no MiniGridShapedReward
        if unseen_cell_steps > 0 and seen_cells_layer(env) is None:
            raise ValueError(
                "MiniGridProgressReward's unseen_cell_steps counts the cells the agent has not seen: put "
                "sb3_dirpg.envs.SeenCells inside it (after FastObservation), or pass unseen_cell_steps=0"
            )
        self.progress_reward = float(progress_reward)
        self.count_key_actions = bool(count_key_actions)
        self.unseen_cell_steps = float(unseen_cell_steps)
        # its per-grid distance fields serve every step of an episode
        self._steps = MiniGridBound(count_key_actions=self.count_key_actions)

    def _steps_left(self) -> float:
        """:return: ``d`` of the env's current state (:func:`progress_potential`)"""
        steps = self._steps.steps_to_success(self.env)
        if steps is None:
            raise ValueError(
                f"MiniGridProgressReward does not know where {type(self.env.unwrapped).__name__}'s success happens; "
                "use it on the families of sb3_dirpg.envs.minigrid.grid_bound.success_targets, or leave it out"
            )
        return progress_potential(steps, self._steps.layout(self.env), self.unseen_cell_steps)

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """:param kwargs: passed to the env's ``reset``
        :return: the first observation and info (the env's success rule is checked here)"""
        obs, info = self.env.reset(**kwargs)
        self._steps_left()
        return obs, info

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """:param action: MiniGrid action
        :return: observation, reward plus progress, terminated, truncated, info"""
        before = self._steps_left()
        obs, reward, terminated, truncated, info = self.env.step(action)
        after = 0 if info.get("is_success") else self._steps_left()
        return obs, float(reward) + self.progress_reward * (before - after), terminated, truncated, info


class MiniGridProgressBound(MiniGridBound):
    """``(lower, upper)`` bounds on the discounted return-to-go under :class:`MiniGridProgressReward` stacked on
    :class:`~sb3_dirpg.envs.MiniGridShapedReward`: :class:`~sb3_dirpg.envs.minigrid.MiniGridBound`'s bounds plus those
    of the progress.

    With ``d_t >= 0`` the progress's discounted sum from ``s_0`` is
    ``p * (d_0 - (1 - gamma) * sum_{t>=1} gamma^(t-1) d_t - gamma^(T-1) d_T)``, which lies in
    ``[p * (d_0 - cap), p * d_0]`` (``cap`` the largest ``d``: the grid's number of cells, times
    ``1 + unseen_cell_steps``).

    :param gamma: discount in (0, 1]
    :param door_reward: the inner wrapper's ``door_reward``
    :param goal_reward: the inner wrapper's ``goal_reward``
    :param pickup_reward: the inner wrapper's ``pickup_reward``
    :param progress_reward: the progress wrapper's ``progress_reward``
    :param count_key_actions: the progress wrapper's ``count_key_actions``
    :param unseen_cell_steps: the progress wrapper's ``unseen_cell_steps``
    """

    def __init__(
        self,
        gamma: float = 1.0,
        door_reward: float = DEFAULT_DOOR_REWARD,
        goal_reward: float = DEFAULT_GOAL_REWARD,
        pickup_reward: float = DEFAULT_PICKUP_REWARD,
        progress_reward: float = DEFAULT_PROGRESS_REWARD,
        count_key_actions: bool = False,
        unseen_cell_steps: float = 0.0,
    ) -> None:
        super().__init__(gamma, door_reward, goal_reward, pickup_reward, count_key_actions)
        if not progress_reward > 0:
            raise ValueError(f"progress_reward must be > 0, got {progress_reward}")
        if not unseen_cell_steps >= 0:
            raise ValueError(f"unseen_cell_steps must be >= 0, got {unseen_cell_steps}")
        self.progress_reward = float(progress_reward)
        self.unseen_cell_steps = float(unseen_cell_steps)

    @classmethod
    def env_rewards(cls, env: gym.Env) -> dict[str, Any]:
        """:param env: a wrapped MiniGrid env
        :return: the reward values of its :class:`MiniGridShapedReward` and its :class:`MiniGridProgressReward`, and the
            progress wrapper's ``count_key_actions`` and ``unseen_cell_steps`` (which :meth:`for_env` takes unless given
            others)"""
        wrapper = env
        while isinstance(wrapper, gym.Wrapper) and not isinstance(wrapper, MiniGridProgressReward):
            wrapper = wrapper.env
        if not isinstance(wrapper, MiniGridProgressReward):
            raise ValueError(f"no MiniGridProgressReward in the wrapper chain of {env}")
        progress = dict(
            progress_reward=wrapper.progress_reward,
            count_key_actions=wrapper.count_key_actions,
            unseen_cell_steps=wrapper.unseen_cell_steps,
        )
        return {**super().env_rewards(env), **progress}

    def _add_terms(self, entry: GridLayout, steps: int | None, lower: float, upper: float) -> tuple[float, float]:
        """:param entry: the grid's layout
        :param steps: :meth:`steps_to_success` of the state
        :param lower: ``MiniGridBound``'s lower bound
        :param upper: ``MiniGridBound``'s upper bound
        :return: the bounds with the progress's added"""
        cap = _distance_cap(entry.base) * (1.0 + self.unseen_cell_steps)
        distance = progress_potential(steps, entry, self.unseen_cell_steps)
        return lower + self.progress_reward * (distance - cap), upper + self.progress_reward * distance
