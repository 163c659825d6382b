"""Searching batches ahead of the policy (DirPG's ``lookahead``), without changing what is learned.

A batch whose update is zero (no episode improved on ``a_opt``) leaves the policy as it was, so the search of the next
batch with that policy is exactly the search it would have had. Late in training most batches are like that: with
``stop="success"`` a successful ``a_opt`` ends the search. :class:`Lookahead` keeps the batches drawn from the model's
streams (seeds and search noise) in order, and the searched shares of the first of them. DirPG searches several drawn
batches at once, in lockstep, and commits them one at a time; a committed update (or any change of the search's
settings) makes the shares still waiting stale, and they are searched again, with the same seeds and noise.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sb3_dirpg.dirpg.update import SearchShare
from sb3_dirpg.dirpg.workers import split_batch


@dataclass
class DrawnBatch:
    """One batch as the model's streams drew it.

    :param seeds: its episode seeds
    :param rngs: one untouched search-noise generator per episode (copied before every search, so that a batch searched
        again gets the same noise)
    """

    seeds: list[int]
    rngs: list[np.random.Generator]

    def fresh_rngs(self) -> list[np.random.Generator]:
        """:return: copies of the generators in their drawn state"""
        return [copy.deepcopy(rng) for rng in self.rngs]

    def fresh(self) -> DrawnBatch:
        """:return: the batch with copies of its generators in their drawn state"""
        return DrawnBatch(list(self.seeds), self.fresh_rngs())

    def split(self, n_parts: int) -> list[DrawnBatch]:
        """:param n_parts: the number of parts
        :return: ``n_parts`` contiguous, nearly equal parts, the first ones larger (some empty if the batch is smaller)"""
        parts = split_batch(range(len(self.seeds)), n_parts)
        return [DrawnBatch([self.seeds[i] for i in part], [self.rngs[i] for i in part]) for part in parts]

    @staticmethod
    def joined(batches: Sequence[DrawnBatch]) -> DrawnBatch:
        """:param batches: drawn batches
        :return: one batch of their episodes, in order"""
        return DrawnBatch([s for b in batches for s in b.seeds], [r for b in batches for r in b.rngs])


@dataclass
class Lookahead:
    """The drawn batches not yet committed, the shares searched for the first of them, and the width of the next search.

    :param window: the committed batches over which the share of batches that updated the policy is estimated
    :param drawn: the drawn batches, oldest first; they are committed in this order
    :param searched: the shares of the first ``len(searched)`` drawn batches
    :param searched_with: what the search of ``searched`` depended on (the update count and the search settings)
    :param updated: per committed batch of the window, whether it updated the policy
    """

    window: int = 32
    drawn: deque[DrawnBatch] = field(default_factory=deque)
    searched: deque[SearchShare] = field(default_factory=deque)
    searched_with: Any = None
    updated: deque[bool] = field(default_factory=deque)

    def width(self, most: int) -> int:
        """The number of batches to search at once: about one over the share of recent batches that updated the policy
        (so that, on average, all are committed before the first that updates), at most ``most``.

        :param most: the most batches to search at once
        :return: the width, at least 1
        """
        share = (sum(self.updated) + 1) / (len(self.updated) + 1)
        return max(1, min(most, round(1.0 / share)))

    def ready(self, depends_on: Any) -> bool:
        """:param depends_on: what a search would depend on now
        :return: whether the first drawn batch has a share searched under the same conditions"""
        if self.searched and self.searched_with != depends_on:
            self.searched.clear()
        return bool(self.searched)

    def commit(self, updated: bool) -> None:
        """Note whether the committed batch updated the policy (for :meth:`width`).

        :param updated: whether it did
        """
        self.updated.append(updated)
        while len(self.updated) > self.window:
            self.updated.popleft()

    def keep_size(self, size: int) -> None:
        """Drop the drawn batches (and their searches) when the batch size changed since they were drawn, so that the
        next batch has the new size (``batch_episodes`` assigned between batches); they were not counted yet.

        :param size: the episodes of a batch now
        """
        if any(len(drawn.seeds) != size for drawn in self.drawn):
            self.drawn.clear()
            self.searched.clear()

    def forget_searches(self) -> None:
        """Drop the searched shares (the drawn batches stay, to be searched again)."""
        self.searched.clear()

    def __getstate__(self) -> dict[str, Any]:
        """:return: the state to save: the drawn batches (they belong to the model's streams), not the searched shares"""
        return {**self.__dict__, "searched": deque(), "searched_with": None}
