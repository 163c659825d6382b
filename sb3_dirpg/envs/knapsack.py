"""0/1 knapsack with a new random instance every episode, its LP bound, and the reference solutions.

The instance distribution is the usual one of neural combinatorial optimisation (KNAP50 of Bello et al.): values and
weights drawn ``Uniform(0, 1)``, capacity 12.5 for 50 items.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from scipy.optimize import Bounds, LinearConstraint, milp

from sb3_dirpg.simulator.registry import register_cloner

ITEM_FEATURES = 4  # value, weight, still available, capacity left


class KnapsackEnv(gym.Env):
    """Fill a knapsack one item at a time; each episode's instance comes from the seed of its reset.

    Action ``i`` puts item ``i`` in the knapsack and pays its value. ``action_masks()`` (sb3-contrib's convention)
    allows the items not taken yet that still fit. The episode ends when no item fits, so every episode ends in a
    maximal packing and its return is the packing's value.

    The observation is one row per item, shape ``(n_items, 4)``: value, weight, 1.0 while the item is available, and
    the capacity left (the same in every row), so that a per-item encoder sees each item with its context.

    :param n_items: number of items
    :param capacity: the knapsack's capacity; ``n_items / 4`` when None (12.5 for 50 items)
    """

    metadata = {"render_modes": []}

    def __init__(self, n_items: int = 50, capacity: float | None = None) -> None:
        if n_items < 1:
            raise ValueError(f"n_items must be positive, got {n_items}")
        self.n_items = int(n_items)
        self.capacity = float(n_items / 4 if capacity is None else capacity)
        if not self.capacity > 0:
            raise ValueError(f"capacity must be positive, got {capacity}")
        high = max(1.0, self.capacity)
        self.observation_space = spaces.Box(0.0, high, shape=(self.n_items, ITEM_FEATURES), dtype=np.float32)
        self.action_space = spaces.Discrete(self.n_items)
        self.horizon = self.n_items
        self._set_instance(np.zeros(self.n_items), np.ones(self.n_items))

    def _set_instance(self, values: np.ndarray, weights: np.ndarray) -> None:
        """:param values: the items' values, shape (n_items,)
        :param weights: the items' weights, shape (n_items,)"""
        self.values, self.weights = values, weights
        self.values.setflags(write=False)
        self.weights.setflags(write=False)
        self._available = np.ones(self.n_items, dtype=bool)
        self._capacity_left = self.capacity

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """Draw a new instance from the env's generator (seeded by ``seed``).

        :param seed: the instance's seed
        :param options: unused
        :return: the first observation and an empty info
        """
        super().reset(seed=seed)
        self._set_instance(self.np_random.uniform(0.0, 1.0, self.n_items), self.np_random.uniform(0.0, 1.0, self.n_items))
        return self._obs(), {}

    def action_masks(self) -> np.ndarray:
        """:return: the items not taken yet that fit in the capacity left, bool, shape (n_items,)"""
        return self._available & (self.weights <= self._capacity_left)

    def _obs(self) -> np.ndarray:
        obs = np.empty((self.n_items, ITEM_FEATURES), dtype=np.float32)
        obs[:, 0], obs[:, 1], obs[:, 2], obs[:, 3] = self.values, self.weights, self._available, self._capacity_left
        return obs

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        """:param action: the item to add; it must be available and fit
        :return: gymnasium's step tuple; the reward is the item's value"""
        item = int(action)
        if not (0 <= item < self.n_items and self._available[item] and self.weights[item] <= self._capacity_left):
            raise ValueError(f"KnapsackEnv: item {action!r} is taken or does not fit; follow action_masks()")
        self._available = self._available.copy()
        self._available[item] = False
        self._capacity_left -= float(self.weights[item])
        terminated = not self.action_masks().any()
        return self._obs(), float(self.values[item]), terminated, False, {}

    def lp_bound(self) -> float:
        """The fractional (LP) relaxation of the rest of the problem: the available items by decreasing value per
        weight, the last one cut to fill the capacity left. No packing of the available items is worth more.

        :return: the bound on the value still to collect
        """
        fits = self._available & (self.weights <= self._capacity_left)
        values, weights = self.values[fits], self.weights[fits]
        order = np.argsort(-values / weights, kind="stable")
        filled = np.cumsum(weights[order])
        whole = int(np.searchsorted(filled, self._capacity_left, side="right"))
        bound = float(values[order[:whole]].sum())
        if whole < order.size:
            room = self._capacity_left - (filled[whole - 1] if whole else 0.0)
            bound += float(values[order[whole]]) * room / float(weights[order[whole]])
        return bound


def knapsack_bound(env: gym.Env) -> float:
    """The search's heuristic for :class:`KnapsackEnv` (a :class:`~sb3_dirpg.search.protocols.Heuristic`).

    :param env: the env (any wrapper chain around a :class:`KnapsackEnv`), at the state to bound
    :return: the LP bound on the return-to-go (admissible, undiscounted)
    """
    return env.unwrapped.lp_bound()


def knapsack_optimum(values: np.ndarray, weights: np.ndarray, capacity: float) -> float:
    """The exact optimum, by scipy's mixed-integer solver (HiGHS).

    :param values: shape (n,)
    :param weights: shape (n,)
    :param capacity: the capacity
    :return: the largest value of a packing
    """
    n = len(values)
    fits = LinearConstraint(np.asarray(weights, dtype=float)[None], -np.inf, capacity)
    exact = {"mip_rel_gap": 0.0}
    result = milp(-np.asarray(values, float), constraints=fits, integrality=np.ones(n), bounds=Bounds(0, 1), options=exact)
    if not result.success:
        raise RuntimeError(f"milp failed on a knapsack instance: {result.message}")
    return float(-result.fun)


def knapsack_greedy(values: np.ndarray, weights: np.ndarray, capacity: float) -> float:
    """The classic greedy: items by decreasing value per weight, each taken if it fits.

    :param values: shape (n,)
    :param weights: shape (n,)
    :param capacity: the capacity
    :return: the packing's value
    """
    total, left = 0.0, float(capacity)
    for item in np.argsort(-np.asarray(values) / np.asarray(weights), kind="stable"):
        if weights[item] <= left:
            left -= float(weights[item])
            total += float(values[item])
    return total


class KnapsackCloner:
    """Snapshot/restore of :class:`KnapsackEnv`; the instance's read-only arrays are shared, never copied."""

    def snapshot(self, env: KnapsackEnv) -> tuple:
        """:param env: the unwrapped env
        :return: immutable state (``step`` replaces ``_available`` instead of writing into it)"""
        return env.values, env.weights, env._available, env._capacity_left

    def restore(self, env: KnapsackEnv, state: tuple) -> None:
        """:param env: the unwrapped env
        :param state: a value from ``snapshot``"""
        env.values, env.weights, env._available, env._capacity_left = state


register_cloner(KnapsackEnv, KnapsackCloner())
