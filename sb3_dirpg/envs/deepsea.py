"""The risk-sensitivity DeepSea grid of the paper (section 6, appendix E.2)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from sb3_dirpg.simulator.registry import register_cloner


class DeepSeaRiskEnv(gym.Env):
    """An N x N grid walked from the top-left cell (row 0, column 0) down to the bottom row in N - 1 moves.

    * action 0 (L): move down and left (column clipped at 0), reward 0;
    * action 1 (R): move down and right, reward ``-move_cost``, except when the move lands on the bottom-right corner,
      which pays a draw from ``N(goal_mean, goal_std**2)``.

    The Gaussian is drawn once per episode at ``reset`` from ``np_random`` (the episode's fixed noise), so it does
    not depend on the path. Only the all-R trajectory reaches the corner. With the defaults (N = 5,
    ``move_cost = 1/3``, ``N(1, 1)``) this is the paper's environment: LLLL returns exactly 0, RRRR returns
    ``-3 * (1/3) + N(1, 1) = N(0, 1)``: both have mean 0, RRRR has variance 1. ``move_cost=None`` (the default)
    means ``1 / (N - 2)`` (``1/3`` for N = 5), which keeps the two extreme trajectories at equal mean for any N.

    The observation is a one-hot of the cell (``N * N`` float32, index ``row * N + column``). The episode terminates
    after ``N - 1`` moves (``horizon``); it is never truncated.

    :param size: N, at least 2
    :param move_cost: cost of an R move that does not land on the corner; None for ``1 / (N - 2)`` (0 when N = 2)
    :param goal_mean: mean of the corner reward
    :param goal_std: standard deviation of the corner reward
    """

    metadata = {"render_modes": []}

    def __init__(self, size: int = 5, move_cost: float | None = None, goal_mean: float = 1.0, goal_std: float = 1.0) -> None:
        if size < 2:
            raise ValueError(f"size must be at least 2, got {size}")
        if goal_std < 0:
            raise ValueError(f"goal_std must be non-negative, got {goal_std}")
        self.size = size
        self.horizon = size - 1
        self.move_cost = (1.0 / (size - 2) if size > 2 else 0.0) if move_cost is None else float(move_cost)
        self.goal_mean = float(goal_mean)
        self.goal_std = float(goal_std)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(size * size,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self._one_hot = np.eye(size * size, dtype=np.float32)
        self.row = 0
        self.col = 0
        self.goal_reward = self.goal_mean

    def _obs(self) -> np.ndarray:
        """:return: one-hot of the current cell"""
        return self._one_hot[self.row * self.size + self.col].copy()

    def action_masks(self) -> np.ndarray:
        """:return: both actions are always legal"""
        return np.ones(2, dtype=bool)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """Put the agent on the top-left cell and draw the corner reward.

        :param seed: seed of ``np_random``
        :param options: unused
        :return: observation and an empty info dict
        """
        super().reset(seed=seed)
        self.goal_reward = float(self.np_random.normal(self.goal_mean, self.goal_std))
        self.row = 0
        self.col = 0
        return self._obs(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Move one row down.

        :param action: 0 (L) or 1 (R)
        :return: observation, reward, terminated (bottom row reached), truncated (always False), info (empty)
        """
        if self.row >= self.size - 1:
            raise RuntimeError("DeepSeaRiskEnv.step called after the episode terminated; call reset()")
        action = int(action)
        self.row += 1
        if action == 0:
            self.col = max(self.col - 1, 0)
            reward = 0.0
        elif action == 1:
            self.col = min(self.col + 1, self.size - 1)
            last = self.size - 1
            reward = self.goal_reward if (self.row == last and self.col == last) else -self.move_cost
        else:
            self.row -= 1
            raise ValueError(f"action must be 0 or 1, got {action!r}")
        return self._obs(), reward, self.row == self.size - 1, False, {}


class DeepSeaCloner:
    """Snapshot/restore of :class:`DeepSeaRiskEnv`: position and the episode's corner reward."""

    def snapshot(self, env: DeepSeaRiskEnv) -> tuple[int, int, float]:
        """:param env: the unwrapped env
        :return: ``(row, col, goal_reward)``"""
        return env.row, env.col, env.goal_reward

    def restore(self, env: DeepSeaRiskEnv, state: tuple[int, int, float]) -> None:
        """:param env: the unwrapped env
        :param state: a value from ``snapshot``"""
        env.row, env.col, env.goal_reward = state


register_cloner(DeepSeaRiskEnv, DeepSeaCloner())
