"""Per-edge reward statistics of a spanning-tree bandit learner, and the greedy tree they imply, as an SB3 policy."""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx
import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import PyTorchObs


def spanning_tree_mask(graph: nx.Graph, weights: np.ndarray) -> np.ndarray:
    """Maximum-weight spanning tree with networkx (Kruskal).

    :param graph: the graph; every edge carries its decision index in the ``index`` attribute
    :param weights: weight of each edge by index (``inf`` allowed)
    :return: bool mask over edge indices, True for the tree's edges
    """
    for _, _, data in graph.edges(data=True):
        data["weight"] = float(weights[data["index"]])
    mask = np.zeros(len(weights), dtype=bool)
    for _, _, index in nx.maximum_spanning_tree(graph, weight="weight").edges(data="index"):
        mask[index] = True
    return mask


class TreePolicy(BasePolicy):
    """Policy of :class:`~sb3_dirpg.baselines.UCB` for ``SpanningTreeBanditEnv``: no weights, only statistics.

    The buffers ``mu_hat`` (mean observed reward per edge), ``counts`` (times each edge was in a played tree) and
    ``n_rounds`` (rounds played) are saved and loaded with the model. The policy acts greedily: it builds the maximum
    spanning tree of ``mu_hat`` and answers each include/exclude decision of the env accordingly.

    :param observation_space: the env's observation space (decision one-hot first, as ``SpanningTreeBanditEnv`` emits)
    :param action_space: ``Discrete(2)`` (0 excludes the edge, 1 includes it)
    :param edges: the graph's edges ``(u, v)`` in decision order
    """

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space, edges: Sequence[tuple[int, int]]) -> None:
        super().__init__(observation_space, action_space)
        self.edges = [(int(u), int(v)) for u, v in edges]
        n_edges = len(self.edges)
        if not isinstance(observation_space, spaces.Box) or observation_space.shape[0] < n_edges:
            raise ValueError(
                f"TreePolicy needs a Box observation starting with a one-hot of {n_edges} decisions, got {observation_space}"
            )
        self.register_buffer("mu_hat", th.zeros(n_edges, dtype=th.float64))
        self.register_buffer("counts", th.zeros(n_edges, dtype=th.int64))
        self.register_buffer("n_rounds", th.zeros((), dtype=th.int64))
        self.graph = nx.Graph()
        for index, (u, v) in enumerate(self.edges):
            self.graph.add_edge(u, v, index=index)

    def _get_constructor_parameters(self) -> dict:
        data = super()._get_constructor_parameters()
        data.update(edges=self.edges)
        return data

    def update(self, tree: np.ndarray, edge_rewards: np.ndarray) -> None:
        """Add one round's observations: the running mean of each played edge takes in its observed reward.

        :param tree: indices of the played tree's edges
        :param edge_rewards: the reward attributed to each of those edges, same shape
        """
        counts, mu_hat = self.counts.numpy(), self.mu_hat.numpy()
        counts[tree] += 1
        mu_hat[tree] += (edge_rewards - mu_hat[tree]) / counts[tree]
        self.n_rounds += 1

    def ucb_scores(self, exploration: float) -> np.ndarray:
        """:param exploration: coefficient of the bonus
        :return: ``mu_hat_e + exploration * log(t) / c_e`` for the coming round ``t``; ``inf`` for edges never played"""
        counts = self.counts.numpy()
        t = int(self.n_rounds) + 1
        with np.errstate(divide="ignore", invalid="ignore"):
            bonus = exploration * np.log(t) / counts
        return np.where(counts > 0, self.mu_hat.numpy() + bonus, np.inf)

    def tree_mask(self, weights: np.ndarray | None = None) -> np.ndarray:
        """:param weights: per-edge weights, or None for ``mu_hat`` (the greedy tree)
        :return: bool mask of the maximum spanning tree's edges"""
        weights = self.mu_hat.numpy() if weights is None else np.asarray(weights, dtype=np.float64)
        return spanning_tree_mask(self.graph, weights)

    def _predict(self, observation: PyTorchObs, deterministic: bool = False) -> th.Tensor:
        """:param observation: batch of observations, decision one-hot first (all zeros once the episode is over)
        :param deterministic: unused: the greedy tree is deterministic
        :return: 1 where the decided edge is in the greedy tree, else 0"""
        n_edges = len(self.edges)
        one_hot = th.as_tensor(observation).reshape(-1, self.observation_space.shape[0])[:, :n_edges]
        index = one_hot.argmax(dim=1)
        in_tree = th.as_tensor(self.tree_mask(), device=one_hot.device)[index]
        return (in_tree & (one_hot.sum(dim=1) > 0)).long()
