"""The state of a batch of searches in lockstep: one object instead of loose per-episode lists."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from sb3_dirpg.search.kernels import DIR, DONE, OPT
from sb3_dirpg.search.tree import SearchTree

if TYPE_CHECKING:  # top_down.py imports this module
    from sb3_dirpg.search.top_down import EpisodeSearch

__all__ = ["DIR", "DONE", "NOISE_BLOCK", "OPT", "NoiseBlocks", "Popped", "RegionQueues", "SearchState"]

QUEUE_CAPACITY = 64  # initial entries per episode's queue; doubled as needed
NOISE_BLOCK = 256  # random numbers of each kind drawn at a time from an episode's stream; part of the search's definition


@dataclass(slots=True)
class NoiseBlocks:
    """The random numbers of each episode's expansions, drawn from the episode's own stream a block at a time:
    :data:`NOISE_BLOCK` uniforms (the actions), then as many standard exponentials (the rests' Gumbels). The ``j``-th
    expansion of an episode uses the ``j``-th number of each kind, whatever the other episodes of the batch do.

    :param uniform: shape (n, NOISE_BLOCK)
    :param exponential: shape (n, NOISE_BLOCK)
    :param used: the numbers of each episode's block already used, int64, shape (n,) (``NOISE_BLOCK``: none left)
    """

    uniform: np.ndarray
    exponential: np.ndarray
    used: np.ndarray

    @classmethod
    def empty(cls, n: int) -> NoiseBlocks:
        """:param n: number of episodes
        :return: blocks that every episode must refill before its first expansion"""
        return cls(np.empty((n, NOISE_BLOCK)), np.empty((n, NOISE_BLOCK)), np.full(n, NOISE_BLOCK, np.int64))

    def refill(self, episodes: np.ndarray, rngs: Sequence[np.random.Generator]) -> None:
        """Draw the next block of the given episodes.

        :param episodes: episodes, shape (m,)
        :param rngs: every episode's generator
        """
        for e in episodes.tolist():
            self.uniform[e] = rngs[e].random(NOISE_BLOCK)
            self.exponential[e] = rngs[e].standard_exponential(NOISE_BLOCK)
            self.used[e] = 0


@dataclass(slots=True)
class RegionQueues:
    """One priority queue of regions per episode, as arrays: binary heaps ordered as ``heapq`` orders the tuples
    ``(-priority, bound on D, region id)`` (see :mod:`sb3_dirpg.search.kernels`), plus the depth-first next region.

    ``n`` is the number of episodes and ``C`` the capacity of a queue.

    :param key: ``-priority`` of each entry, float64, shape (n, C)
    :param bound: the entry's upper bound on ``D``, float64, shape (n, C)
    :param region: the entry's region id, int64, shape (n, C)
    :param size: the number of entries of each queue, int64, shape (n,)
    :param follow_bound: depth-first only: the bound on ``D`` of each episode's next region, float64, shape (n,)
    :param follow_region: depth-first only: each episode's next region, or -1, int64, shape (n,)
    :param size_bound: an upper bound on ``size.max()`` kept without reading ``size``
    """

    key: np.ndarray
    bound: np.ndarray
    region: np.ndarray
    size: np.ndarray
    follow_bound: np.ndarray
    follow_region: np.ndarray
    size_bound: int = 0

    @classmethod
    def empty(cls, n: int, capacity: int = QUEUE_CAPACITY) -> RegionQueues:
        """:param n: number of episodes
        :param capacity: initial capacity of each queue
        :return: ``n`` empty queues"""
        return cls(
            key=np.empty((n, capacity)), bound=np.empty((n, capacity)), region=np.empty((n, capacity), np.int64),
            size=np.zeros(n, np.int64), follow_bound=np.full(n, -np.inf), follow_region=np.full(n, -1, np.int64),
        )  # fmt: skip

    @property
    def capacity(self) -> int:
        """:return: the number of entries each queue can hold"""
        return self.key.shape[1]

    def reserve(self, extra: int) -> None:
        """Make room for ``extra`` more entries in every queue (doubling the capacity when needed).

        :param extra: entries to add per queue at most
        """
        self.size_bound += extra
        if self.size_bound <= self.capacity:
            return
        self.size_bound = int(self.size.max(initial=0)) + extra
        if self.size_bound <= self.capacity:
            return
        capacity = max(self.size_bound, 2 * self.capacity)
        for name in ("key", "bound", "region"):
            old = getattr(self, name)
            grown = np.empty((old.shape[0], capacity), old.dtype)
            grown[:, : old.shape[1]] = old
            setattr(self, name, grown)


@dataclass(frozen=True, slots=True)
class Popped:
    """The regions that one lockstep iteration expands: one per episode still searching (``k`` of them).

    :param episodes: the episodes, in batch order, int64, shape (k,)
    :param regions: their regions, int64, shape (k,)
    :param nodes: the regions' nodes, int64, shape (k,)
    :param g: the regions' Gumbels, float64, shape (k,)
    :param todo: the nodes among them that the policy has not evaluated yet, sorted and unique, int64, shape (m,)
    :param refill: the episodes among them whose block of random numbers is used up, shape (r,)
    """

    episodes: np.ndarray
    regions: np.ndarray
    nodes: np.ndarray
    g: np.ndarray
    todo: np.ndarray
    refill: np.ndarray


@dataclass(slots=True)
class SearchState:
    """Everything a batch of searches carries from one lockstep iteration to the next.

    ``n`` is the number of episodes of the batch; every per-episode field has one entry per episode, indexed by the
    episode's position in the batch (the ``episode`` column of the tree's nodes).

    :param tree: the prefix nodes and regions of every episode
    :param rngs: each episode's own random stream, ``n`` generators (Gumbel noise and action sampling)
    :param noise: the random numbers of each episode's next expansions, drawn from its stream
    :param outcomes: each episode's outcome so far, ``n`` :class:`~sb3_dirpg.search.top_down.EpisodeSearch`
        (``pruned``, ``length_opt`` and ``interactions`` are filled from the counters below when the search ends)
    :param phase: each episode's phase, int8, shape (n,): ``OPT`` (sampling ``a_opt``: priority ``G``, no pruning),
        ``DIR`` (searching ``a_dir``: priority ``G`` or the A* priority, pruning against the best ``D``) or ``DONE``
        (budget spent, queue empty, early stop, enough trajectories or success)
    :param queues: each episode's priority queue of regions
    :param d_best: each episode's best direct objective ``D`` so far (``D(a_opt)``, then the best ``a_dir``; ``-inf``
        before ``a_opt``), float64, shape (n,)
    :param search_interactions: environment interactions spent after ``a_opt`` (the ``a_dir`` search), int64, shape (n,)
    :param length_opt: environment interactions spent on ``a_opt`` (its length), int64, shape (n,)
    :param pruned: regions pruned, int64, shape (n,)
    :param check_bounds: whether the simulator reports the bound that pruning relies on (``upper`` for ε > 0, ``lower``
        for ε < 0), so that complete trajectories are checked against it
    """

    tree: SearchTree
    rngs: list[np.random.Generator]
    noise: NoiseBlocks
    outcomes: list[EpisodeSearch]
    phase: np.ndarray
    queues: RegionQueues
    d_best: np.ndarray
    search_interactions: np.ndarray
    length_opt: np.ndarray
    pruned: np.ndarray
    check_bounds: bool

    @classmethod
    def start(
        cls, tree: SearchTree, rngs: Sequence[np.random.Generator], outcomes: list[EpisodeSearch], check_bounds: bool
    ) -> SearchState:
        """The state before the first push: every episode sampling ``a_opt`` with an empty queue.

        :param tree: the tree, holding the roots
        :param rngs: one generator per episode
        :param outcomes: one empty :class:`~sb3_dirpg.search.top_down.EpisodeSearch` per episode
        :param check_bounds: whether to check the simulator's bounds on complete trajectories
        :return: the state
        """
        n = len(outcomes)
        return cls(
            tree=tree, rngs=list(rngs), noise=NoiseBlocks.empty(n), outcomes=outcomes, phase=np.full(n, OPT, np.int8),
            queues=RegionQueues.empty(n),
            d_best=np.full(n, -np.inf), search_interactions=np.zeros(n, np.int64), length_opt=np.zeros(n, np.int64),
            pruned=np.zeros(n, np.int64), check_bounds=check_bounds,
        )  # fmt: skip

    @property
    def n_episodes(self) -> int:
        """:return: the number of episodes of the batch"""
        return len(self.outcomes)
