"""Combinatorial (spanning-tree) bandit of the paper (section 6, appendix E.1) as a sequential decision problem."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import networkx as nx
import numpy as np
from gymnasium import spaces

from sb3_dirpg.simulator.registry import register_cloner

MASK_RULES = ("exact", "count")


def random_connected_graph(
    n_nodes: int,
    rng: np.random.Generator,
    edge_prob: float | None = None,
    n_edges: int | None = None,
) -> list[tuple[int, int]]:
    """Draw a connected simple graph: a uniformly random recursive tree plus extra random edges.

    :param n_nodes: number of nodes (at least 2)
    :param rng: the generator that draws the graph
    :param edge_prob: probability of adding each pair that is not already a tree edge (used when ``n_edges`` is None)
    :param n_edges: exact number of edges, between ``n_nodes - 1`` and ``n_nodes * (n_nodes - 1) / 2``
    :return: the edges as sorted ``(u, v)`` pairs with ``u < v``, in lexicographic order
    """
    perm = rng.permutation(n_nodes)
    tree = {tuple(sorted((int(perm[k]), int(perm[rng.integers(k)])))) for k in range(1, n_nodes)}
    others = [(u, v) for u in range(n_nodes) for v in range(u + 1, n_nodes) if (u, v) not in tree]
    if n_edges is not None:
        n_extra = n_edges - (n_nodes - 1)
        if not 0 <= n_extra <= len(others):
            raise ValueError(
                f"n_edges must be in [{n_nodes - 1}, {n_nodes - 1 + len(others)}] for {n_nodes} nodes, got {n_edges}"
            )
        chosen = rng.choice(len(others), size=n_extra, replace=False) if n_extra else []
        extra = {others[int(k)] for k in chosen}
    else:
        keep = rng.random(len(others)) < edge_prob
        extra = {e for e, k in zip(others, keep) if k}
    return sorted(tree | extra)


class SpanningTreeBanditEnv(gym.Env):
    """Build a spanning tree of a fixed graph by |E| include/exclude decisions; the tree's reward is paid at the end.

    Edge ``e`` has a parameter ``mu_e``; at each reset per-edge rewards ``r_e ~ Uniform(0, 2 mu_e)`` are drawn from
    ``np_random`` (the episode's fixed noise) and the tree ``T`` earns ``sum_{e in T} r_e`` at the last step.

    Decision ``i`` concerns edge ``edges[i]``: action 1 includes it, 0 excludes it. ``action_masks()`` follows the
    sb3-contrib convention (bool array of shape (2,)):

    * ``mask_rule="exact"`` (default): "include" is legal iff the edge joins two different components of the edges
      chosen so far; "exclude" is legal iff the chosen edges plus the undecided edges after this one still connect the
      graph. This implies the paper's counting rule and is exact: at least one action is always legal and every episode
      that follows the masks ends in a spanning tree.
    * ``mask_rule="count"``: the paper's rule (appendix E.1): "include" is illegal if it closes a cycle, "exclude" is
      illegal if all remaining decisions are needed to reach ``n_nodes - 1`` edges. Invalid trees are possible.

    An episode that ignores the masks, or a conflict under ``mask_rule="count"``, can end with an *invalid* tree (a
    cycle, or not spanning). It is paid ``invalid_reward`` (default 0.0, not above any valid tree's reward since
    ``r_e >= 0``) and ``info["is_valid_tree"]`` is False. When no action is legal (only after an illegal move) the mask
    allows both actions.

    The observation is a one-hot of the decision index (all zeros after the last decision), shape ``(|E|,)``, so a linear
    policy can express "include edge ``e`` with probability ``sigmoid(theta_e)``". With ``observe_inclusions=True``
    the inclusion flags of the edges (1.0 = included) are appended, shape ``(2 |E|,)``.

    The last step's ``info`` carries ``tree`` (list of included edge indices), ``edge_rewards`` (copy of the
    per-edge rewards, for semi-bandit baselines) and ``is_valid_tree``.

    :param n_nodes: number of nodes of a random graph (ignored when ``edges`` is given)
    :param edge_prob: probability of each non-tree pair being an edge of the random graph (when ``n_edges`` is None)
    :param n_edges: exact number of edges of the random graph
    :param edges: explicit edge list of ``(u, v)`` pairs over nodes ``0 .. max + 1``; must be connected and simple
    :param mu: per-edge reward parameters (non-negative); drawn ``Uniform(0, 1)`` from ``graph_seed`` when None
    :param graph_seed: seed of the graph and of ``mu`` (not of the per-episode rewards, which come from ``reset``)
    :param mask_rule: ``"exact"`` or ``"count"``, see above
    :param observe_inclusions: append the inclusion flags to the observation
    :param invalid_reward: reward paid for an invalid tree
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        n_nodes: int = 6,
        edge_prob: float = 0.5,
        n_edges: int | None = None,
        edges: Sequence[tuple[int, int]] | None = None,
        mu: Sequence[float] | np.ndarray | None = None,
        graph_seed: int = 0,
        mask_rule: str = "exact",
        observe_inclusions: bool = False,
        invalid_reward: float = 0.0,
    ) -> None:
        if mask_rule not in MASK_RULES:
            raise ValueError(f"mask_rule must be one of {MASK_RULES}, got {mask_rule!r}")
        rng = np.random.default_rng(graph_seed)
        if edges is None:
            if n_nodes < 2:
                raise ValueError(f"n_nodes must be at least 2, got {n_nodes}")
            if n_edges is None and not 0.0 <= edge_prob <= 1.0:
                raise ValueError(f"edge_prob must be in [0, 1], got {edge_prob}")
            edge_list = random_connected_graph(n_nodes, rng, edge_prob=edge_prob, n_edges=n_edges)
        else:
            edge_list = [(int(u), int(v)) for u, v in edges]
            if not edge_list:
                raise ValueError("edges must not be empty")
            n_nodes = max(max(e) for e in edge_list) + 1
            graph = nx.MultiGraph(edge_list)
            graph.add_nodes_from(range(n_nodes))
            if any(u == v for u, v in edge_list) or len({frozenset(e) for e in edge_list}) != len(edge_list):
                raise ValueError("edges must have no self-loops and no repeated pairs")
            if min(min(e) for e in edge_list) < 0 or not nx.is_connected(graph):
                raise ValueError(f"edges must connect all nodes 0..{n_nodes - 1}")
        self.n_nodes = n_nodes
        self.edges: list[tuple[int, int]] = edge_list
        self.n_edges = len(edge_list)
        self.horizon = self.n_edges
        if mu is None:
            mu_arr = rng.uniform(0.0, 1.0, size=self.n_edges)
        else:
            mu_arr = np.asarray(mu, dtype=np.float64)
            if mu_arr.shape != (self.n_edges,) or np.any(mu_arr < 0) or not np.all(np.isfinite(mu_arr)):
                raise ValueError(f"mu must be {self.n_edges} finite non-negative numbers, got {mu!r}")
        self.mu = mu_arr.copy()
        self.mu.setflags(write=False)
        self.mask_rule = mask_rule
        self.observe_inclusions = observe_inclusions
        self.invalid_reward = float(invalid_reward)

        obs_dim = 2 * self.n_edges if observe_inclusions else self.n_edges
        self.observation_space = spaces.Box(0.0, 1.0, shape=(obs_dim,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        # Row i is the one-hot of decision i; row |E| (episode over) is all zeros.
        self._one_hot = np.eye(self.n_edges + 1, self.n_edges, dtype=np.float32)
        self._u = [u for u, _ in edge_list]
        self._v = [v for _, v in edge_list]

        self.edge_rewards = np.zeros(self.n_edges)
        self.edge_rewards.setflags(write=False)
        self._set_state(0, list(range(n_nodes)), 0, bytearray(self.n_edges), True)

    # --- state -------------------------------------------------------------------------------------------------
    def _set_state(self, index: int, comp: list[int], n_included: int, included: bytearray, valid: bool) -> None:
        """:param index: next decision
        :param comp: component label of each node in the forest of included edges
        :param n_included: number of included edges
        :param included: inclusion flag per edge
        :param valid: False once a cycle was closed"""
        self._index = index
        self._comp = comp
        self._n_included = n_included
        self._included = included
        self._valid = valid

    def _obs(self) -> np.ndarray:
        """:return: the observation of the current state"""
        one_hot = self._one_hot[self._index]
        if not self.observe_inclusions:
            return one_hot.copy()
        return np.concatenate([one_hot, np.frombuffer(bytes(self._included), dtype=np.uint8).astype(np.float32)])

    @property
    def tree(self) -> list[int]:
        """:return: indices of the edges included so far"""
        return [k for k, flag in enumerate(self._included) if flag]

    # --- masks -------------------------------------------------------------------------------------------------
    def _exclude_keeps_connected(self, index: int) -> bool:
        """:param index: the decision about to be made
        :return: whether the chosen edges plus the undecided edges after ``index`` connect all nodes"""
        comp = self._comp
        parent = list(range(self.n_nodes))
        n_components = self.n_nodes - self._n_included  # exact while the chosen edges form a forest
        if not self._valid:
            n_components = len(set(comp))
        if n_components == 1:
            return True
        u_list, v_list = self._u, self._v
        for k in range(index + 1, self.n_edges):
            a, b = comp[u_list[k]], comp[v_list[k]]
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            while parent[b] != b:
                parent[b] = parent[parent[b]]
                b = parent[b]
            if a != b:
                parent[a] = b
                n_components -= 1
                if n_components == 1:
                    return True
        return False

    def action_masks(self) -> np.ndarray:
        """Legal actions of the current decision (sb3-contrib convention).

        :return: bool array ``[exclude_legal, include_legal]``; both True once the episode is over
        """
        index = self._index
        if index >= self.n_edges:
            return np.ones(2, dtype=bool)
        include = self._comp[self._u[index]] != self._comp[self._v[index]]
        if self.mask_rule == "exact":
            exclude = self._exclude_keeps_connected(index)
        else:
            exclude = self.n_edges - index - 1 >= self.n_nodes - 1 - self._n_included
        if not (include or exclude):
            return np.ones(2, dtype=bool)
        return np.array([exclude, include], dtype=bool)

    # --- gym API -----------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """Draw the episode's per-edge rewards and start with no edge decided.

        :param seed: seed of ``np_random``
        :param options: unused
        :return: observation and an empty info dict
        """
        super().reset(seed=seed)
        rewards = self.np_random.uniform(0.0, 2.0 * self.mu)
        rewards.setflags(write=False)
        self.edge_rewards = rewards
        self._set_state(0, list(range(self.n_nodes)), 0, bytearray(self.n_edges), True)
        return self._obs(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Decide about the current edge.

        :param action: 1 to include the edge, 0 to exclude it
        :return: observation, reward (tree reward at the last step, else 0), terminated, truncated (always False), info
        """
        index = self._index
        if index >= self.n_edges:
            raise RuntimeError("SpanningTreeBanditEnv.step called after the episode terminated; call reset()")
        if int(action) == 1:
            comp = self._comp
            a, b = comp[self._u[index]], comp[self._v[index]]
            if a == b:
                self._valid = False
            else:
                self._comp = [a if c == b else c for c in comp]
            self._n_included += 1
            self._included[index] = 1
        elif int(action) != 0:
            raise ValueError(f"action must be 0 or 1, got {action!r}")
        self._index = index + 1
        if self._index < self.n_edges:
            return self._obs(), 0.0, False, False, {}
        tree = self.tree
        is_valid = self._valid and self._n_included == self.n_nodes - 1
        reward = float(self.edge_rewards[tree].sum()) if is_valid else self.invalid_reward
        info = {"tree": tree, "edge_rewards": self.edge_rewards.copy(), "is_valid_tree": is_valid}
        return self._obs(), reward, True, False, info

    # --- helpers for baselines ---------------------------------------------------------------------------------
    def graph(self) -> nx.Graph:
        """:return: the graph, with edge attributes ``index`` (decision order) and ``mu``"""
        graph = nx.Graph()
        graph.add_nodes_from(range(self.n_nodes))
        for k, (u, v) in enumerate(self.edges):
            graph.add_edge(u, v, index=k, mu=float(self.mu[k]))
        return graph

    def max_spanning_tree(self, weights: Sequence[float] | np.ndarray | None = None) -> list[int]:
        """Maximum-weight spanning tree (the best tree in expectation when ``weights`` is ``mu``).

        :param weights: per-edge weights; ``mu`` when None
        :return: sorted indices of the tree's edges
        """
        weights = self.mu if weights is None else np.asarray(weights, dtype=np.float64)
        graph = self.graph()
        for k, (u, v) in enumerate(self.edges):
            graph[u][v]["weight"] = float(weights[k])
        return sorted(d["index"] for _, _, d in nx.maximum_spanning_tree(graph).edges(data=True))


class SpanningTreeCloner:
    """Snapshot/restore of :class:`SpanningTreeBanditEnv` (edge rewards, decision index, forest, flags)."""

    def snapshot(self, env: SpanningTreeBanditEnv) -> tuple:
        """:param env: the unwrapped env
        :return: immutable state (the read-only reward array is shared, never mutated)"""
        return (env.edge_rewards, env._index, tuple(env._comp), env._n_included, bytes(env._included), env._valid)

    def restore(self, env: SpanningTreeBanditEnv, state: tuple) -> None:
        """:param env: the unwrapped env
        :param state: a value from ``snapshot``"""
        env.edge_rewards = state[0]
        env._set_state(state[1], list(state[2]), state[3], bytearray(state[4]), state[5])


register_cloner(SpanningTreeBanditEnv, SpanningTreeCloner())
