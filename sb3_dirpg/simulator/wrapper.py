"""``SimulatorWrapper``: seeded reset, snapshot and restore of a gymnasium env and of its wrapper layers."""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from sb3_dirpg.simulator.chain_copy import CopyingChainCloner
from sb3_dirpg.simulator.cloners import DeepcopyCloner, env_name
from sb3_dirpg.simulator.introspect import all_legal_mask, find_action_masks, find_horizon
from sb3_dirpg.simulator.registry import ChainCloner, Cloner, find_cloner
from sb3_dirpg.simulator.replay import ReplayCloner
from sb3_dirpg.simulator.self_check import run_determinism_check
from sb3_dirpg.simulator.snapshot import Snapshot
from sb3_dirpg.simulator.unwrap import refuse_monitor, wrapper_layers

__all__ = ["SimulatorWrapper", "Snapshot"]


class SimulatorWrapper(gym.Wrapper):
    """Make an env a simulator: ``snapshot()`` its exact state and ``restore()`` it later, any number of times.

    The snapshot covers the unwrapped env (through a cloner), the unwrapped env's RNG (``np_random``) and the state of
    every wrapper layer between this wrapper and the unwrapped env (``TimeLimit`` elapsed steps, ...).

    :param env: the env to wrap; its chain must not contain SB3's ``Monitor`` (see :func:`strip_monitor`)
    :param cloner: how to copy the unwrapped env: None (the cloner registered for the env class, else ``"deepcopy"``),
        ``"deepcopy"`` (deepcopy of the env's attributes, static objects shared), ``"replay"`` (a
        :class:`~sb3_dirpg.simulator.ReplayCloner`: a snapshot is the reset seed and the action prefix; restoring
        resets and replays the actions), or a :class:`~sb3_dirpg.simulator.Cloner` instance. A
        :class:`~sb3_dirpg.simulator.ChainCloner` (such as the replay cloner) covers the whole chain instead, RNG and
        layers included; the wrapper keeps the instance its ``for_chain`` returns as ``cloner``.
    :param self_check: run :meth:`check_determinism` on the first ``snapshot()`` of a non-terminal state
    """

    def __init__(self, env: gym.Env, cloner: Cloner | str | None = None, self_check: bool = True) -> None:
        super().__init__(env)
        layers = wrapper_layers(env)
        refuse_monitor(env, layers)
        self._sim_base = env.unwrapped
        resolved = _resolve_cloner(env, cloner)
        # how the whole chain is snapshotted: a ChainCloner does it all, a plain Cloner is combined with the RNG and layers
        chain_cloner: ChainCloner
        if isinstance(resolved, ChainCloner):
            chain_cloner = resolved = resolved.for_chain(env)
        else:
            chain_cloner = CopyingChainCloner(resolved, env)
        self.cloner = resolved
        self.cloner_spec = cloner  # what the user asked for, to build equivalent wrappers
        self._chain_cloner = chain_cloner
        self._layer_list = layers
        self._mask_fn = find_action_masks(env, layers)
        self._all_legal = all_legal_mask(env.action_space)
        self._needs_check = self_check
        self._has_reset = False
        self._done = False
        self._token = object()

    # ------------------------------------------------------------------ gym API

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset the env (the cloner sees ``seed`` and ``options`` first: the replay cloner records them).

        :param seed: the seed of the episode
        :param options: reset options
        :return: the first observation and the info dict
        """
        seed = self._chain_cloner.before_reset(self.env, seed, options)
        result = self.env.reset(seed=seed, options=options)
        self._has_reset = True
        self._done = False
        return result

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """:param action: the action
        :return: observation, reward, terminated, truncated, info"""
        result = self.env.step(action)
        self._done = bool(result[2] or result[3])
        self._chain_cloner.after_step(action)
        return result

    # ------------------------------------------------------------------ simulator API

    def snapshot(self) -> Snapshot:
        """Capture the current state (the first call runs :meth:`check_determinism` when ``self_check`` is set).

        :return: an opaque snapshot for :meth:`restore`
        """
        if self._needs_check:
            if not self._has_reset:
                raise RuntimeError("SimulatorWrapper.snapshot(): call reset() on the SimulatorWrapper first")
            if not self._done:
                self._needs_check = False
                self.check_determinism()
        return self._snapshot()

    def _snapshot(self) -> Snapshot:
        """:return: a snapshot, without the first-use self-check"""
        chain_cloner = self._chain_cloner
        return Snapshot(self._token, chain_cloner.snapshot(self.env), self._done, chain_cloner.snapshot_label)

    def restore(self, snapshot: Snapshot) -> None:
        """Put the env, its RNG and its wrapper layers back in the state captured by ``snapshot``.

        :param snapshot: a snapshot made by this wrapper
        """
        if snapshot._owner is not self._token:
            raise ValueError("SimulatorWrapper.restore(): this snapshot was made by another SimulatorWrapper")
        self._chain_cloner.restore(self.env, snapshot._state)
        self._done = snapshot._done

    def step_from(self, snapshot: Snapshot, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any], Snapshot]:
        """Restore ``snapshot``, take ``action`` and snapshot the result.

        :param snapshot: the state to step from
        :param action: the action
        :return: observation, reward, terminated, truncated, info and the snapshot of the new state
        """
        self.restore(snapshot)
        obs, reward, terminated, truncated, info = self.step(action)
        return obs, reward, terminated, truncated, info, self.snapshot()

    # ------------------------------------------------------------------ action masks and horizon

    @property
    def has_action_masks(self) -> bool:
        """:return: whether the env chain provides ``action_masks()`` (sb3-contrib convention)"""
        return self._mask_fn is not None

    def action_masks(self) -> np.ndarray:
        """:return: the legal actions of the current state as a bool array (all True when the env has no masks)"""
        if self._mask_fn is not None:
            return np.asarray(self._mask_fn(), dtype=bool)
        if self._all_legal is None:
            raise TypeError(
                f"{env_name(self)}: action_masks() needs a Discrete or MultiDiscrete action space "
                f"or an env that provides action_masks(), got {self.action_space}"
            )
        return self._all_legal

    @property
    def horizon(self) -> int | None:
        """:return: ``max_episode_steps`` of a ``TimeLimit`` in the chain, else the env's own ``max_steps``
        (MiniGrid truncates internally) or ``horizon`` (envs that always end after a fixed number of steps, such as
        the spanning-tree bandit and DeepSea), else None"""
        return find_horizon(self._layer_list, self._sim_base)

    # ------------------------------------------------------------------ determinism self-check

    def check_determinism(self, n_branches: int = 3, depth: int = 8, seed: int = 0) -> None:
        """Check that restoring a snapshot reproduces the env exactly; put the env back as it was afterwards.

        Rolls random legal actions from the current state, then branches off from random intermediate snapshots and
        replays recorded action suffixes after restores, comparing observations, rewards and flags. Right after each
        restore, the unwrapped env's simple attributes (numbers, strings, small containers, numpy arrays) are compared
        with their values at snapshot time.

        :param n_branches: number of divergent branches
        :param depth: maximum length of each random rollout
        :param seed: seed of the random actions
        :raises NondeterministicEnvError: naming the env and the field that differed
        """
        if not self._has_reset:
            raise RuntimeError("SimulatorWrapper.check_determinism(): call reset() on the SimulatorWrapper first")
        if self._done:
            return
        run_determinism_check(self, self._snapshot, n_branches, depth, seed)


def _resolve_cloner(env: gym.Env, cloner: Cloner | str | None) -> Cloner:
    """:param env: the env chain
    :param cloner: the ``cloner`` argument of :class:`SimulatorWrapper`
    :return: the cloner it names"""
    if cloner is None:
        return find_cloner(env) or DeepcopyCloner()
    if isinstance(cloner, str):
        if cloner == "deepcopy":
            return DeepcopyCloner()
        if cloner == "replay":
            return ReplayCloner()
        raise ValueError(f"SimulatorWrapper: unknown cloner {cloner!r}; use None, 'deepcopy', 'replay' or a Cloner")
    if isinstance(cloner, Cloner):
        return cloner
    raise TypeError(f"SimulatorWrapper: cloner must be None, 'deepcopy', 'replay' or a Cloner, got {cloner!r}")
