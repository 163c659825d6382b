"""Maximum independent set on a new random graph every episode, its clique-cover bound, and the reference solutions."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from scipy.optimize import Bounds, LinearConstraint, milp

from sb3_dirpg.simulator.registry import register_cloner

NODE_FLAGS = 2  # free (neither chosen nor next to a chosen node), chosen


class IndependentSetEnv(gym.Env):
    """Build an independent set of an Erdős–Rényi graph one node at a time; each reset's seed draws the graph.

    Action ``v`` adds node ``v`` to the set and pays 1. ``action_masks()`` (sb3-contrib's convention) allows the free
    nodes: those neither chosen nor adjacent to a chosen node. The episode ends when no node is free, so every episode
    ends in a maximal independent set and its return is the set's size.

    The observation is one row per node, shape ``(n_nodes, n_nodes + 2)``: the node's row of the adjacency matrix,
    then whether it is free and whether it is chosen.

    :param n_nodes: number of nodes
    :param edge_prob: probability of each edge
    """

    metadata = {"render_modes": []}

    def __init__(self, n_nodes: int = 40, edge_prob: float = 0.15) -> None:
        if n_nodes < 1:
            raise ValueError(f"n_nodes must be positive, got {n_nodes}")
        if not 0.0 <= edge_prob <= 1.0:
            raise ValueError(f"edge_prob must lie in [0, 1], got {edge_prob}")
        self.n_nodes, self.edge_prob = int(n_nodes), float(edge_prob)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(self.n_nodes, self.n_nodes + NODE_FLAGS), dtype=np.float32)
        self.action_space = spaces.Discrete(self.n_nodes)
        self.horizon = self.n_nodes
        self._set_instance(np.zeros((self.n_nodes, self.n_nodes), dtype=bool))

    def _set_instance(self, adjacency: np.ndarray) -> None:
        """:param adjacency: symmetric, no self-loops, bool, shape (n_nodes, n_nodes)"""
        self.adjacency = adjacency
        self.adjacency.setflags(write=False)
        weights = 1 << np.arange(self.n_nodes, dtype=object)
        self._neighbour_bits = [int(weights[row].sum()) for row in adjacency]  # each node's neighbours, as a bitset
        self._free = np.ones(self.n_nodes, dtype=bool)
        self._chosen = np.zeros(self.n_nodes, dtype=bool)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """Draw a new graph from the env's generator (seeded by ``seed``).

        :param seed: the instance's seed
        :param options: unused
        :return: the first observation and an empty info
        """
        super().reset(seed=seed)
        upper = np.triu(self.np_random.random((self.n_nodes, self.n_nodes)) < self.edge_prob, k=1)
        self._set_instance(upper | upper.T)
        return self._obs(), {}

    def action_masks(self) -> np.ndarray:
        """:return: the free nodes, bool, shape (n_nodes,)"""
        return self._free.copy()

    def _obs(self) -> np.ndarray:
        obs = np.empty((self.n_nodes, self.n_nodes + NODE_FLAGS), dtype=np.float32)
        obs[:, : self.n_nodes] = self.adjacency
        obs[:, -2], obs[:, -1] = self._free, self._chosen
        return obs

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        """:param action: the node to add; it must be free
        :return: gymnasium's step tuple; the reward is 1"""
        node = int(action)
        if not (0 <= node < self.n_nodes and self._free[node]):
            raise ValueError(f"IndependentSetEnv: node {action!r} is not free; follow action_masks()")
        self._chosen = self._chosen.copy()
        self._chosen[node] = True
        self._free = self._free & ~self.adjacency[node]
        self._free[node] = False
        return self._obs(), 1.0, not self._free.any(), False, {}

    def clique_cover_bound(self) -> int:
        """The number of cliques of a greedy clique cover of the free nodes: each free node, by decreasing degree among
        the free nodes, joins the first clique whose members are all its neighbours, else starts a clique. An
        independent set holds at most one node of each clique, so no completion adds more nodes than there are cliques.

        :return: the bound on the nodes still to add
        """
        free = np.flatnonzero(self._free)
        if free.size <= 1:
            return int(free.size)
        degrees = self.adjacency[np.ix_(free, free)].sum(axis=1)
        cliques: list[int] = []  # each clique's members, as a bitset of node ids
        for node in free[np.argsort(-degrees, kind="stable")].tolist():
            neighbours = self._neighbour_bits[node]
            for c, members in enumerate(cliques):
                if members & ~neighbours == 0:
                    cliques[c] = members | (1 << node)
                    break
            else:
                cliques.append(1 << node)
        return len(cliques)


def independent_set_bound(env: gym.Env) -> float:
    """The search's heuristic for :class:`IndependentSetEnv` (a :class:`~sb3_dirpg.search.protocols.Heuristic`).

    :param env: the env (any wrapper chain around an :class:`IndependentSetEnv`), at the state to bound
    :return: the clique-cover bound on the return-to-go (admissible, undiscounted)
    """
    return float(env.unwrapped.clique_cover_bound())


def independent_set_optimum(adjacency: np.ndarray) -> int:
    """The size of a maximum independent set, by scipy's mixed-integer solver (HiGHS) on the edge formulation.

    :param adjacency: symmetric, bool, shape (n, n)
    :return: the largest size of an independent set
    """
    n = adjacency.shape[0]
    u, v = np.nonzero(np.triu(adjacency, k=1))
    constraints = []
    if u.size:
        rows = np.zeros((u.size, n))
        rows[np.arange(u.size), u] = rows[np.arange(u.size), v] = 1.0
        constraints.append(LinearConstraint(rows, -np.inf, 1.0))
    exact = {"mip_rel_gap": 0.0}
    result = milp(-np.ones(n), constraints=constraints, integrality=np.ones(n), bounds=Bounds(0, 1), options=exact)
    if not result.success:
        raise RuntimeError(f"milp failed on an independent-set instance: {result.message}")
    return int(round(-result.fun))


def independent_set_greedy(adjacency: np.ndarray) -> int:
    """The classic minimum-degree greedy: repeatedly take a node of least degree among the free nodes.

    :param adjacency: symmetric, bool, shape (n, n)
    :return: the size of the independent set it builds
    """
    free = np.ones(adjacency.shape[0], dtype=bool)
    size = 0
    while free.any():
        degrees = np.where(free, (adjacency & free).sum(axis=1), adjacency.shape[0] + 1)
        node = int(np.argmin(degrees))
        free &= ~adjacency[node]
        free[node] = False
        size += 1
    return size


class IndependentSetCloner:
    """Snapshot/restore of :class:`IndependentSetEnv`; the graph's read-only adjacency matrix is shared."""

    def snapshot(self, env: IndependentSetEnv) -> tuple:
        """:param env: the unwrapped env
        :return: immutable state (``step`` replaces the flag arrays instead of writing into them)"""
        return env.adjacency, env._neighbour_bits, env._free, env._chosen

    def restore(self, env: IndependentSetEnv, state: tuple) -> None:
        """:param env: the unwrapped env
        :param state: a value from ``snapshot``"""
        env.adjacency, env._neighbour_bits, env._free, env._chosen = state


register_cloner(IndependentSetEnv, IndependentSetCloner())
