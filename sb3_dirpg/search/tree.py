"""Array storage for the prefix nodes and regions of a batch of searches: :class:`Nodes` and :class:`Regions` declare
the columns (records that the compiled kernels take as they are), :class:`SearchTree` holds them and grows them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar, overload

import numpy as np
from numba import njit

_Columns = TypeVar("_Columns", "Nodes", "Regions")


class Nodes(NamedTuple):
    """The prefix nodes of a batch of searches, one row per node: a root per episode, then one per interaction.

    Each column has ``N`` rows, the capacity; the first ``count[0]`` are in use. ``A`` is the number of actions.
    Returns and bounds are discounted to the root.

    :param count: the number of nodes, int64, shape (1,)
    :param episode: the node's episode, int64, shape (N,)
    :param parent: its parent, or -1 at a root, int64, shape (N,)
    :param action: the action that led to it, or -1 at a root, int64, shape (N,)
    :param depth: its depth, int64, shape (N,)
    :param log_p: the log-probability of its prefix, float64, shape (N,)
    :param reward: the reward of the step that reached it, float64, shape (N,)
    :param ret: the discounted return of its prefix, float64, shape (N,)
    :param lower: a lower bound on its return-to-go (``-inf`` when unknown, 0 at a terminal node), float64, shape (N,)
    :param upper: an upper bound on its return-to-go (``inf`` when unknown, 0 at a terminal node), float64, shape (N,)
    :param terminal: whether it ends its trajectory, bool, shape (N,)
    :param success: whether the step that reached it ended the episode in success, bool, shape (N,)
    :param legal: its legal actions, bool, shape (N, A)
    :param log_pi: the policy's log-probabilities there (``-inf`` on illegal actions; NaN before it is evaluated),
        float64, shape (N, A)
    :param evaluated: whether the policy has been evaluated there, bool, shape (N,)
    """

    count: np.ndarray
    episode: np.ndarray
    parent: np.ndarray
    action: np.ndarray
    depth: np.ndarray
    log_p: np.ndarray
    reward: np.ndarray
    ret: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    terminal: np.ndarray
    success: np.ndarray
    legal: np.ndarray
    log_pi: np.ndarray
    evaluated: np.ndarray

    @classmethod
    def empty(cls, capacity: int, n_actions: int) -> Nodes:
        """:param capacity: the number of rows
        :param n_actions: the number of actions
        :return: no nodes, room for ``capacity``"""
        return cls(
            count=np.zeros(1, np.int64), episode=np.full(capacity, -1, np.int64), parent=np.full(capacity, -1, np.int64),
            action=np.full(capacity, -1, np.int64), depth=np.zeros(capacity, np.int64), log_p=np.zeros(capacity),
            reward=np.zeros(capacity), ret=np.zeros(capacity), lower=np.full(capacity, -np.inf),
            upper=np.full(capacity, np.inf), terminal=np.zeros(capacity, bool), success=np.zeros(capacity, bool),
            legal=np.zeros((capacity, n_actions), bool), log_pi=np.full((capacity, n_actions), np.nan),
            evaluated=np.zeros(capacity, bool),
        )  # fmt: skip

    @property
    def size(self) -> int:
        """:return: the number of nodes"""
        return int(self.count[0])


class Regions(NamedTuple):
    """The regions of a batch of searches: a node plus a set of legal next actions and its Gumbel ``G``.

    Each column has ``N`` rows, the capacity; the first ``count[0]`` are in use. ``A`` is the number of actions.

    :param count: the number of regions, int64, shape (1,)
    :param node: the region's node, int64, shape (N,)
    :param legal: its actions, bool, shape (N, A)
    :param G: its Gumbel, the largest ``G`` of the trajectories it holds, float64, shape (N,)
    """

    count: np.ndarray
    node: np.ndarray
    legal: np.ndarray
    G: np.ndarray

    @classmethod
    def empty(cls, capacity: int, n_actions: int) -> Regions:
        """:param capacity: the number of rows
        :param n_actions: the number of actions
        :return: no regions, room for ``capacity``"""
        return cls(
            count=np.zeros(1, np.int64), node=np.full(capacity, -1, np.int64), legal=np.zeros((capacity, n_actions), bool),
            G=np.full(capacity, -np.inf),
        )  # fmt: skip

    @property
    def size(self) -> int:
        """:return: the number of regions"""
        return int(self.count[0])


@njit(cache=True)
def _path(parent: np.ndarray, leaf: int) -> np.ndarray:
    """:param parent: each node's parent, -1 at a root
    :param leaf: a node id
    :return: the node ids from the root to ``leaf``"""
    depth = 0
    node = leaf
    while parent[node] >= 0:
        node = parent[node]
        depth += 1
    out = np.empty(depth + 1, np.int64)
    node = leaf
    for i in range(depth, -1, -1):
        out[i] = node
        node = parent[node]
    return out


def _reserve(columns: _Columns, n: int) -> _Columns:
    """:param columns: nodes or regions
    :param n: rows to make room for
    :return: ``columns`` when they have room for ``n`` more rows, else a copy with twice the capacity (or more)"""
    size, capacity = int(columns.count[0]), columns.legal.shape[0]
    if size + n <= capacity:
        return columns
    grown = columns.empty(max(size + n, 2 * capacity), columns.legal.shape[1])
    grown.count[0] = size
    for old, new in zip(columns[1:], grown[1:]):
        new[:size] = old[:size]
    return grown


def _allocate(columns: _Columns, n: int) -> slice:
    """Add ``n`` rows to columns that have room for them.

    :param columns: nodes or regions
    :param n: number of rows
    :return: the new rows, as a slice (writing through a slice is cheaper than through an index array)
    """
    start = int(columns.count[0])
    columns.count[0] = start + n
    return slice(start, start + n)


class NodeColumn(Sequence[Any]):
    """One Python value per node (an observation or a simulator snapshot): held in a list as the nodes are added, or,
    after a compiled search loop kept them in arrays, read from those arrays (:meth:`read_from`).
    """

    def __init__(self) -> None:
        self._values: list[Any] = []
        self._read: Callable[[int], Any] | None = None
        self._size = 0

    def extend(self, values: Sequence[Any]) -> None:
        """:param values: the values of the nodes added next"""
        self._values.extend(values)

    def read_from(self, size: int, read: Callable[[int], Any]) -> None:
        """Hold the values of ``size`` nodes as ``read(node)`` gives them, in place of the list.

        :param size: the number of nodes
        :param read: a node id to its value
        """
        self._values, self._read, self._size = [], read, size

    def __len__(self) -> int:
        return self._size if self._read is not None else len(self._values)

    @overload
    def __getitem__(self, node: int) -> Any: ...

    @overload
    def __getitem__(self, node: slice) -> list[Any]: ...

    def __getitem__(self, node: int | slice) -> Any:
        if self._read is None:
            return self._values[node]
        if isinstance(node, slice):
            return [self._read(i) for i in range(*node.indices(self._size))]
        if not -self._size <= node < self._size:
            raise IndexError(f"node {node} is not in a tree of {self._size} nodes")
        return self._read(node % self._size)


class SearchTree:
    """Prefix nodes (one per environment interaction, plus roots) and regions of a batch of searches.

    A node stores what a step produced (see :class:`Nodes`); observations and simulator snapshots are kept once per
    node in a :class:`NodeColumn`. A region is a node plus a set of legal next actions and its Gumbel ``G`` (see
    :class:`Regions`). Both grow by amortised doubling: :meth:`reserve` replaces ``nodes`` and ``regions`` by larger
    copies, so read them again after it.

    :param n_actions: the number of actions
    :param capacity: the initial number of rows of each
    """

    def __init__(self, n_actions: int, capacity: int = 1024) -> None:
        self.n_actions = n_actions
        capacity = max(int(capacity), 16)
        self.nodes = Nodes.empty(capacity, n_actions)
        self.regions = Regions.empty(capacity, n_actions)
        self.obs = NodeColumn()
        self.snapshots = NodeColumn()

    def reserve(self, nodes: int = 0, regions: int = 0) -> None:
        """Make room for more nodes and regions (doubling the capacity when needed), without adding them.

        :param nodes: number of nodes
        :param regions: number of regions
        """
        self.nodes = _reserve(self.nodes, nodes)
        self.regions = _reserve(self.regions, regions)

    def add_roots(
        self, legal: np.ndarray, lower: np.ndarray, upper: np.ndarray, obs: list[Any], snapshots: list[Any]
    ) -> np.ndarray:
        """Append one root per episode, in episode order, before any other node.

        :param legal: the roots' legal actions, bool, shape (n, A)
        :param lower: the lower bounds on their return-to-go, shape (n,)
        :param upper: the upper bounds on it, shape (n,)
        :param obs: their observations
        :param snapshots: their simulator snapshots
        :return: their ids
        """
        n = len(legal)
        self.reserve(nodes=n)
        rows, nodes = _allocate(self.nodes, n), self.nodes
        nodes.episode[rows], nodes.depth[rows], nodes.legal[rows] = np.arange(n), 0, legal
        nodes.lower[rows], nodes.upper[rows] = lower, upper
        self.obs.extend(obs)
        self.snapshots.extend(snapshots)
        return np.arange(rows.start, rows.stop)

    def add_regions(self, node: np.ndarray, legal: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Append a batch of regions.

        :param node: their nodes, shape (m,)
        :param legal: their actions, bool, shape (m, A)
        :param g: their Gumbels, shape (m,)
        :return: their ids
        """
        self.reserve(regions=len(node))
        rows, regions = _allocate(self.regions, len(node)), self.regions
        regions.node[rows], regions.legal[rows], regions.G[rows] = node, legal, g
        return np.arange(rows.start, rows.stop)

    def path(self, leaf: int) -> list[int]:
        """Node ids from the root to ``leaf`` (both included).

        :param leaf: a node id
        :return: the path
        """
        return _path(self.nodes.parent, int(leaf)).tolist()

    def mean_entropy(self, leaf: int) -> float:
        """:param leaf: the last node of a trajectory
        :return: the mean over its steps of the policy's entropy (nats, over the legal actions) in the state of the step
            (NaN where a state was never evaluated)"""
        log_pi = self.nodes.log_pi[self.path(leaf)[:-1]]
        if log_pi.size == 0:
            return float("nan")
        finite = np.isfinite(log_pi)  # -inf on masked actions: 0 * -inf would warn
        safe = np.where(finite, log_pi, 0.0)
        terms = np.where(finite, np.exp(safe) * safe, 0.0)
        return float(-terms.sum(axis=1).mean())

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
