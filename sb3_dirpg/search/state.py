"""The state of a batch of searches in lockstep: one object instead of loose per-episode lists."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from sb3_dirpg.search.tree import SearchTree

if TYPE_CHECKING:  # top_down.py imports this module
    from sb3_dirpg.search.top_down import EpisodeSearch


class Phase(enum.Enum):
    """Where the search of one episode stands."""

    OPT = enum.auto()  # sampling a_opt: priority G, no pruning
    DIR = enum.auto()  # a_opt found, searching a_dir: priority G or the A* priority, pruning against the best D
    DONE = enum.auto()  # finished: budget spent, queue empty, early stop, enough trajectories or success


# The members under module names too, for the search's per-episode loops: on Python 3.11 every ``Phase.X`` goes through
# EnumType.__getattr__ (~0.2 us, 3 % of a 20 000-episode search), a module global costs ~20 ns.
OPT, DIR, DONE = Phase.OPT, Phase.DIR, Phase.DONE


# one entry of an episode's queue: (-priority, upper bound on D, region id)
HeapEntry = tuple[float, float, int]


@dataclass(slots=True)
class SearchState:
    """Everything a batch of searches carries from one lockstep iteration to the next.

    ``n`` is the number of episodes of the batch; every per-episode field has one entry per episode, indexed by the
    episode's position in the batch (the ``episode`` column of the tree's nodes).

    :param tree: the prefix nodes and regions of every episode
    :param rngs: each episode's own random stream, ``n`` generators (Gumbel noise and action sampling)
    :param outcomes: each episode's outcome so far, ``n`` :class:`~sb3_dirpg.search.top_down.EpisodeSearch`
    :param phase: each episode's :class:`Phase`, ``n`` entries
    :param heaps: each episode's priority queue of regions, ``n`` lists kept as binary heaps (``heapq``) of
        ``(-priority, bound on D, region id)``
    :param follow: depth-first only: each episode's next region, as ``(bound on D, region id)``, or None; ``n`` entries
    :param d_best: each episode's best direct objective ``D`` so far (``D(a_opt)``, then the best ``a_dir``; ``-inf``
        before ``a_opt``), ``n`` floats
    :param search_interactions: environment interactions spent after ``a_opt`` (the ``a_dir`` search), int64, shape (n,)
    :param check_bounds: whether the simulator reports the bound that pruning relies on (``upper`` for ε > 0, ``lower``
        for ε < 0), so that complete trajectories are checked against it
    """

    tree: SearchTree
    rngs: list[np.random.Generator]
    outcomes: list[EpisodeSearch]
    phase: list[Phase]
    heaps: list[list[HeapEntry]]
    follow: list[tuple[float, int] | None]
    d_best: list[float]
    search_interactions: np.ndarray
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
            tree=tree, rngs=list(rngs), outcomes=outcomes, phase=[OPT] * n, heaps=[[] for _ in range(n)],
            follow=[None] * n, d_best=[-np.inf] * n, search_interactions=np.zeros(n, dtype=np.int64),
            check_bounds=check_bounds,
        )  # fmt: skip

    @property
    def n_episodes(self) -> int:
        """:return: the number of episodes of the batch"""
        return len(self.outcomes)
