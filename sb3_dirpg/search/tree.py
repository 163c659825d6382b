"""Array storage for the prefix nodes and regions of a batch of searches."""

from __future__ import annotations

from typing import Any

import numpy as np


class _Columns:
    """Named numpy columns that grow together (amortised doubling)."""

    def __init__(self, specs: dict[str, tuple[np.dtype, tuple[int, ...], Any]], capacity: int) -> None:
        self._specs = specs
        self.size = 0
        self._capacity = max(int(capacity), 16)
        for name, (dtype, shape, fill) in specs.items():
            setattr(self, name, np.full((self._capacity, *shape), fill, dtype=dtype))

    def reserve(self, n: int) -> None:
        """Make room for ``n`` more rows (doubling the capacity when needed), without adding them.

        :param n: number of rows
        """
        end = self.size + n
        if end > self._capacity:
            new_capacity = max(end, 2 * self._capacity)
            for name, (dtype, shape, fill) in self._specs.items():
                grown = np.full((new_capacity, *shape), fill, dtype=dtype)
                grown[: self.size] = getattr(self, name)[: self.size]
                setattr(self, name, grown)
            self._capacity = new_capacity

    def allocate(self, n: int) -> slice:
        """Add ``n`` new rows.

        :param n: number of rows
        :return: their rows, as a slice (writing through a slice is cheaper than through an index array)
        """
        self.reserve(n)
        start = self.size
        self.size += n
        return slice(start, self.size)


class SearchTree:
    """Prefix nodes (one per environment interaction, plus roots) and regions of a batch of searches.

    A node stores what a step produced: its parent, the action that led to it, the log-probability and
    discounted return of its prefix, its legal actions, bounds on the return-to-go (already discounted to the
    root), and, once the policy has been evaluated there, the log-probabilities of its actions.
    Observations and simulator snapshots are kept once per node in Python lists.
    A region is a node plus a set of legal next actions and its Gumbel ``G``.
    """

    def __init__(self, n_actions: int, capacity: int = 1024) -> None:
        self.n_actions = n_actions
        self.nodes = _Columns(
            {
                "episode": (np.int64, (), -1),
                "parent": (np.int64, (), -1),
                "action": (np.int64, (), -1),
                "depth": (np.int64, (), 0),
                "log_p": (np.float64, (), 0.0),
                "reward": (np.float64, (), 0.0),
                "ret": (np.float64, (), 0.0),
                "lower": (np.float64, (), -np.inf),
                "upper": (np.float64, (), np.inf),
                "terminal": (np.bool_, (), False),
                "success": (np.bool_, (), False),
                "legal": (np.bool_, (n_actions,), False),
                "log_pi": (np.float64, (n_actions,), np.nan),
                "evaluated": (np.bool_, (), False),
            },
            capacity,
        )
        self.regions = _Columns(
            {"node": (np.int64, (), -1), "legal": (np.bool_, (n_actions,), False), "G": (np.float64, (), -np.inf)},
            capacity,
        )
        self.obs: list[Any] = []
        self.snapshots: list[Any] = []

    def add_nodes(
        self,
        episode: np.ndarray,
        parent: np.ndarray,
        action: np.ndarray,
        depth: np.ndarray,
        log_p: np.ndarray,
        reward: np.ndarray,
        ret: np.ndarray,
        terminal: np.ndarray,
        legal: np.ndarray,
        lower: np.ndarray,
        upper: np.ndarray,
        obs: list[Any],
        snapshots: list[Any],
        success: np.ndarray | None = None,
    ) -> np.ndarray:
        """Append a batch of nodes.

        :return: their ids
        """
        rows = self.nodes.allocate(len(episode))
        n = self.nodes
        if success is not None:
            n.success[rows] = success
        n.episode[rows], n.parent[rows], n.action[rows], n.depth[rows] = episode, parent, action, depth
        n.log_p[rows], n.reward[rows], n.ret[rows], n.terminal[rows], n.legal[rows] = log_p, reward, ret, terminal, legal
        n.lower[rows], n.upper[rows] = lower, upper
        self.obs.extend(obs)
        self.snapshots.extend(snapshots)
        return np.arange(rows.start, rows.stop)

    def add_regions(self, node: np.ndarray, legal: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Append a batch of regions.

        :return: their ids
        """
        rows = self.regions.allocate(len(node))
        self.regions.node[rows], self.regions.legal[rows], self.regions.G[rows] = node, legal, g
        return np.arange(rows.start, rows.stop)

    def path(self, leaf: int) -> list[int]:
        """Node ids from the root to ``leaf`` (both included).

        :param leaf: a node id
        :return: the path
        """
        out = [leaf]
        parent = self.nodes.parent
        while parent[out[-1]] >= 0:
            out.append(int(parent[out[-1]]))
        return out[::-1]

    def undiscounted_return(self, leaf: int) -> float:
        """:param leaf: a node id
        :return: the plain sum of the rewards from the root to ``leaf``"""
        return float(self.nodes.reward[self.path(leaf)].sum())

    def actions(self, leaf: int) -> list[int]:
        """The action sequence that leads from the root to ``leaf``.

        :param leaf: a node id
        :return: the actions
        """
        return [int(self.nodes.action[i]) for i in self.path(leaf)[1:]]
