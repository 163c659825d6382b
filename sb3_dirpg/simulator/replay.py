"""``ReplayCloner``: a snapshot is the reset seed and the actions since; restoring resets and replays them."""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np

from sb3_dirpg.simulator.copy_utils import copy1, restore_rng, save_rng

# (seed, options, RNG state before reset) of an episode
Root = tuple[int | None, dict[str, Any] | None, Any]
# the actions since reset as a cons list (last action first, None when empty): snapshots share their common prefix
Prefix = tuple[Any, Any] | None


class ReplayCloner:
    """Snapshot by replay, for envs whose state cannot be copied (locks, sockets, external processes) but which
    ``reset(seed=...)`` reproduces: a snapshot is the episode's reset seed and the actions taken since; restoring it
    resets the chain with that seed and replays the actions, or only takes the missing actions when the chain is at an
    earlier state of the same episode. Exact for envs that draw all their randomness from ``np_random``; a restore
    costs up to one step per action taken since reset.

    ``SimulatorWrapper(env, cloner="replay")`` uses it. It is a :class:`~sb3_dirpg.simulator.ChainCloner`: it
    covers the whole chain (the wrapper saves no RNG or layer state beside it) and records the episode through
    :meth:`before_reset` and :meth:`after_step`; each wrapper gets its own instance from :meth:`for_chain`.
    """

    snapshot_label = "replay"

    def __init__(self) -> None:
        self._root: Root | None = None  # the current episode
        self._prefix: Prefix = None  # the actions the chain took in it

    def for_chain(self, chain: gym.Env) -> ReplayCloner:
        """:param chain: the env inside the SimulatorWrapper
        :return: a new ReplayCloner, to record that chain's episode"""
        return ReplayCloner()

    def before_reset(self, chain: gym.Env, seed: int | None, options: dict[str, Any] | None) -> int | None:
        """Start recording a new episode.

        :param chain: the env chain about to be reset
        :param seed: the reset seed
        :param options: the reset options
        :return: the seed to reset with: ``seed``, or a seed drawn here when it is None and the env has no RNG yet
            (it would seed itself from OS entropy, which cannot be replayed)
        """
        pre_rng = None
        if seed is None:
            pre_rng = save_rng(chain.unwrapped)
            if pre_rng is None:
                seed = int(np.random.SeedSequence().generate_state(1)[0])
        self._root = (seed, copy.deepcopy(options), pre_rng)
        self._prefix = None
        return seed

    def after_step(self, action: Any) -> None:
        """:param action: the action the chain just took"""
        self._prefix = (copy1(action), self._prefix)

    def snapshot(self, chain: gym.Env) -> tuple[Root, Prefix]:
        """:param chain: the env chain
        :return: the current episode and the actions taken in it"""
        if self._root is None:
            raise RuntimeError("SimulatorWrapper.snapshot(): call reset() on the SimulatorWrapper first")
        return self._root, self._prefix

    def restore(self, chain: gym.Env, state: tuple[Root, Prefix]) -> None:
        """Reach the state by stepping on from the current state when it is an ancestor, else by resetting with the
        episode's seed and replaying the actions.

        :param chain: the env chain
        :param state: a value returned by :meth:`snapshot`
        """
        root, prefix = state
        pending = []
        node = prefix
        while node is not None and node is not self._prefix:
            pending.append(node[0])
            node = node[1]
        if not (root is self._root and node is self._prefix):
            seed, options, pre_rng = root
            if pre_rng is not None:
                restore_rng(chain.unwrapped, pre_rng)
            chain.reset(seed=seed, options=copy.deepcopy(options))
            pending = []
            node = prefix
            while node is not None:
                pending.append(node[0])
                node = node[1]
        for action in reversed(pending):
            chain.step(action)
        self._root = root
        self._prefix = prefix

    def __repr__(self) -> str:
        return "ReplayCloner()"
