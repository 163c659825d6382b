"""The steps of a DirPG update: where ``a_dir`` and ``a_opt`` differ, and the share of a batch a search sends back (the
episodes' outcomes and those steps). Pure numpy (no torch), so search workers can build them and send them to the
learner.

The update is ``(1/ε)[∇log P(a_dir) − ∇log P(a_opt)]``; the log-probabilities of a shared prefix cancel, so only the
steps after the two trajectories part are kept, with sign +1 on ``a_dir``'s and −1 on ``a_opt``'s.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sb3_dirpg.search import EpisodeSearch, SearchResult, cyclic_gc_paused

#: how far DirPG's further epochs (``n_epochs > 1``) may move a step's probability ratio from 1: PPO's default clip range
CLIP_RANGE = 0.2


@dataclass
class UpdateSteps:
    """The (state, action) pairs on which ``a_dir`` and ``a_opt`` differ, for all episodes of a batch (``m`` steps).

    :param obs: the observation of each step's state, ``m`` entries
    :param masks: the legal actions in each step's state, bool, shape (m, n_actions)
    :param actions: the action taken, int64, shape (m,)
    :param signs: +1.0 for a step of ``a_dir``, -1.0 for a step of ``a_opt``, float64, shape (m,)
    :param episodes: the index of each step's episode in the batch, int64, shape (m,)
    """

    obs: list
    masks: np.ndarray
    actions: np.ndarray
    signs: np.ndarray
    episodes: np.ndarray


def shared_prefix_length(path_a: Sequence[int], path_b: Sequence[int]) -> int:
    """:param path_a: node ids from the root
    :param path_b: node ids from the same root
    :return: the number of leading nodes the two paths share (1 or more: the root)"""
    common = 0
    while common < min(len(path_a), len(path_b)) and path_a[common] == path_b[common]:
        common += 1
    return common


@functools.singledispatch
def update_steps(result: Any) -> UpdateSteps:
    """The steps where ``a_dir`` and ``a_opt`` differ, over all improved episodes of a search result.

    Implemented for :class:`~sb3_dirpg.search.SearchResult`; another search registers its own result type with
    ``@update_steps.register``.

    :param result: the result of a batch of searches
    :return: the steps, episode by episode; in each, those of ``a_dir`` then those of ``a_opt``, from where they part
    """
    raise TypeError(f"update_steps() does not know {type(result).__name__}; register it with @update_steps.register")


@update_steps.register(SearchResult)
def _search_result_steps(result: SearchResult) -> UpdateSteps:
    """:param result: the result of a :class:`~sb3_dirpg.search.TopDownSearch`
    :return: its update steps (see :func:`update_steps`)"""
    tree = result.tree
    nodes, actions, signs, episodes = [], [], [], []
    for index, ep in enumerate(result.episodes):
        if not ep.improved:
            continue
        path_opt, path_dir = tree.path(ep.opt_leaf), tree.path(ep.dir_leaf)
        start = shared_prefix_length(path_opt, path_dir) - 1  # the last shared node: the first state where they differ
        for path, sign in ((path_dir, 1.0), (path_opt, -1.0)):
            for i in range(start, len(path) - 1):
                nodes.append(path[i])
                actions.append(tree.nodes.action[path[i + 1]])
                signs.append(sign)
                episodes.append(index)
    return UpdateSteps(
        obs=[tree.obs[i] for i in nodes],
        masks=tree.nodes.legal[np.asarray(nodes, dtype=np.int64)],
        actions=np.asarray(actions, dtype=np.int64),
        signs=np.asarray(signs, dtype=np.float64),
        episodes=np.asarray(episodes, dtype=np.int64),
    )


@dataclass
class SearchShare:
    """What a search sends back: per-episode outcomes (without their tree) and the steps of the update."""

    episodes: list[EpisodeSearch]
    steps: UpdateSteps

    @classmethod
    def of(cls, result: SearchResult) -> SearchShare:
        """:param result: a search result
        :return: its compact form"""
        return cls(episodes=result.episodes, steps=update_steps(result))

    @classmethod
    def from_search(cls, run: Callable[[], SearchResult]) -> tuple[SearchShare, bool]:
        """Run a search and keep only its share, freeing the tree while Python's cyclic collector is still paused (the
        first collection after the pause would otherwise walk every object of the tree).

        :param run: runs the search and returns its result
        :return: the share, and whether the search was stopped by its ``on_iteration`` hook
        """
        with cyclic_gc_paused():
            result = run()
            share, stopped = cls.of(result), result.stopped
            del result
        return share, stopped


def concat_steps(parts: Sequence[UpdateSteps], offsets: Sequence[int]) -> UpdateSteps:
    """:param parts: update steps
    :param offsets: added to each part's episode indices
    :return: the parts' steps, one after the other"""
    obs = [o for part in parts for o in part.obs]
    episodes = np.concatenate([part.episodes + offset for part, offset in zip(parts, offsets)])
    return UpdateSteps(obs, np.concatenate([part.masks for part in parts]), np.concatenate([part.actions for part in parts]),
                       np.concatenate([part.signs for part in parts]), episodes)  # fmt: skip


def merge_shares(shares: Sequence[SearchShare]) -> SearchShare:
    """Concatenate shares, renumbering the episodes of the update steps.

    :param shares: the shares, in episode order
    :return: one share for the whole batch
    """
    offsets = np.cumsum([0] + [len(share.episodes) for share in shares])[:-1].tolist()
    return SearchShare(
        episodes=[ep for share in shares for ep in share.episodes],
        steps=concat_steps([share.steps for share in shares], offsets),
    )


def split_share(share: SearchShare, sizes: Sequence[int]) -> list[SearchShare]:
    """Cut a share into consecutive shares of the given numbers of episodes (the inverse of :func:`merge_shares`).

    :param share: the share of all episodes
    :param sizes: episodes per part, summing to the share's episodes
    :return: one share per part, its update steps renumbered from 0
    """
    if sum(sizes) != len(share.episodes):
        raise ValueError(f"split_share: the sizes {list(sizes)} do not add up to the share's {len(share.episodes)} episodes")
    steps, parts, start = share.steps, [], 0
    for size in sizes:
        rows = np.flatnonzero((steps.episodes >= start) & (steps.episodes < start + size))
        obs = [steps.obs[i] for i in rows]
        part = UpdateSteps(obs, steps.masks[rows], steps.actions[rows], steps.signs[rows], steps.episodes[rows] - start)
        parts.append(SearchShare(episodes=share.episodes[start : start + size], steps=part))
        start += size
    return parts
