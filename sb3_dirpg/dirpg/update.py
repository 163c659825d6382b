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
class Path:
    """One trajectory from the root, as the update needs it (``k`` steps).

    :param obs: the observation of each step's state, ``k`` entries
    :param masks: the legal actions in each step's state, bool, shape (k, n_actions)
    :param actions: the action taken, int64, shape (k,)
    """

    obs: list
    masks: np.ndarray
    actions: np.ndarray


def dir_path(result: SearchResult, episode: EpisodeSearch) -> Path | None:
    """:param result: a search result
    :param episode: one of its episodes
    :return: the episode's ``a_dir`` from the root, or None when the search found no complete trajectory"""
    if episode.dir_leaf < 0:
        return None
    tree = result.tree
    nodes = tree.path(episode.dir_leaf)
    steps = np.asarray(nodes[:-1], dtype=np.int64)
    return Path(obs=[tree.obs[i] for i in nodes[:-1]], masks=tree.nodes.legal[steps],
                actions=np.asarray(tree.nodes.action[np.asarray(nodes[1:], dtype=np.int64)], dtype=np.int64))  # fmt: skip


@dataclass
class SearchShare:
    """What a search sends back: per-episode outcomes (without their tree), the steps of the update and each episode's
    ``a_dir`` (for the greedy contrast, ``greedy_coef``; None where none was kept)."""

    episodes: list[EpisodeSearch]
    steps: UpdateSteps
    dir_paths: list[Path | None] | None = None

    @classmethod
    def of(cls, result: SearchResult, with_paths: bool = False) -> SearchShare:
        """:param result: a search result
        :param with_paths: keep each episode's ``a_dir`` from the root (the greedy contrast needs them)
        :return: its compact form"""
        paths = [dir_path(result, ep) for ep in result.episodes] if with_paths else None
        return cls(episodes=result.episodes, steps=update_steps(result), dir_paths=paths)

    def paths(self) -> list[Path | None]:
        """:return: each episode's ``a_dir`` from the root, None where the share kept none"""
        return list(self.dir_paths) if self.dir_paths is not None else [None] * len(self.episodes)

    @classmethod
    def from_search(cls, run: Callable[[], SearchResult], with_paths: bool = False) -> tuple[SearchShare, bool]:
        """Run a search and keep only its share, freeing the tree while Python's cyclic collector is still paused (the
        first collection after the pause would otherwise walk every object of the tree).

        :param run: runs the search and returns its result
        :param with_paths: keep each episode's ``a_dir`` from the root
        :return: the share, and whether the search was stopped by its ``on_iteration`` hook
        """
        with cyclic_gc_paused():
            result = run()
            share, stopped = cls.of(result, with_paths), result.stopped
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
        dir_paths=[path for share in shares for path in share.paths()],
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
        paths = share.paths()[start : start + size]
        parts.append(SearchShare(episodes=share.episodes[start : start + size], steps=part, dir_paths=paths))
        start += size
    return parts


def _obs_key(obs: Any) -> bytes:
    """:param obs: an observation (an array, a number or a dict of them)
    :return: bytes equal for equal observations"""
    if isinstance(obs, dict):
        return b"|".join(_obs_key(obs[key]) for key in sorted(obs))
    return np.ascontiguousarray(obs).tobytes()


def greedy_contrast_steps(
    paths: Sequence[Path | None], greedy: Sequence[Any], returns_dir: np.ndarray, weight: float, gamma: float
) -> UpdateSteps:
    """The steps of ``weight·[∇log P(a_dir) − ∇log P(a_greedy)]`` for each episode whose ``a_dir`` has a larger return
    than the policy's greedy trajectory: DirPG's update with the greedy trajectory in place of ``a_opt`` (the direct
    loss update of the argmax policy). Both are kept from where their actions part; the greedy trajectory is cut before
    its first repeated observation, where a deterministic policy starts to loop.

    :param paths: each episode's ``a_dir`` from the root (None: no contrast for it)
    :param greedy: each episode's greedy trajectory (:class:`~sb3_dirpg.dirpg.solve.Trajectory`, recorded)
    :param returns_dir: the return of each episode's ``a_dir``, shape (n_episodes,)
    :param weight: the weight of the contrast (the update's signs are ``±weight``)
    :param gamma: the discount of the returns
    :return: the steps, with their episode indices
    """
    obs: list = []
    masks, actions, signs, episodes = [], [], [], []
    for index, (path, trajectory) in enumerate(zip(paths, greedy)):
        discounts = gamma ** np.arange(len(trajectory.rewards))
        if path is None or not float(returns_dir[index]) > float(discounts @ trajectory.rewards):
            continue
        start = shared_prefix_length(path.actions.tolist(), trajectory.actions)
        seen: set[bytes] = {_obs_key(o) for o in trajectory.obs[:start]}
        end = start
        while end < len(trajectory.actions) and _obs_key(trajectory.obs[end]) not in seen:
            seen.add(_obs_key(trajectory.obs[end]))
            end += 1
        for part_obs, part_masks, part_actions, sign, stop in (
            (path.obs, path.masks, path.actions, weight, len(path.actions)),
            (trajectory.obs, trajectory.masks, np.asarray(trajectory.actions, dtype=np.int64), -weight, end),
        ):
            obs.extend(part_obs[start:stop])
            masks.append(part_masks[start:stop])
            actions.append(part_actions[start:stop])
            signs.append(np.full(max(0, stop - start), sign))
            episodes.append(np.full(max(0, stop - start), index, dtype=np.int64))
    if not actions:
        n_actions = next((p.masks.shape[1] for p in paths if p is not None), 0)
        none = np.zeros(0, dtype=np.int64)
        return UpdateSteps([], np.zeros((0, n_actions), dtype=bool), none, np.zeros(0), none)
    return UpdateSteps(obs, np.concatenate(masks), np.concatenate(actions), np.concatenate(signs), np.concatenate(episodes))
