"""``SimulatorWrapper``: seeded reset, snapshot and restore of a gymnasium env and of its wrapper layers."""

from __future__ import annotations

import warnings
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from sb3_dirpg.simulator.api_check import (
    EnvAPIError,
    check_reset_result,
    check_step_result,
    copy_observation,
    reset_seed_problem,
    shared_observations,
)
from sb3_dirpg.simulator.chain_copy import CopyingChainCloner
from sb3_dirpg.simulator.cloners import DeepcopyCloner, env_name
from sb3_dirpg.simulator.introspect import all_legal_mask, describe_horizon, find_action_masks, find_horizon
from sb3_dirpg.simulator.registry import ChainCloner, Cloner, find_cloner
from sb3_dirpg.simulator.replay import ReplayCloner
from sb3_dirpg.simulator.self_check import NondeterministicResetWarning, run_determinism_check, run_reset_check
from sb3_dirpg.simulator.snapshot import Snapshot
from sb3_dirpg.simulator.unwrap import refuse_monitor, wrapper_layers

__all__ = ["SimulatorWrapper", "Snapshot"]

#: results of ``reset`` and ``step`` checked against gymnasium's API before the first-use self-check, at most
_CHECKED_RESULTS = 256


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
    :param self_check: check the env when it is first used: until the first ``snapshot()`` of a non-terminal state,
        the results of ``reset`` and ``step`` are checked against gymnasium's API (an
        :class:`~sb3_dirpg.simulator.EnvAPIError` names the env and the fix) and their observations are copied; that
        snapshot runs :meth:`check_determinism` (snapshot/restore, and two resets with the same seed) and decides whether
        the env reuses its observation objects (:attr:`copy_observations`)
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
        self._reset_args: tuple[int | None, dict[str, Any] | None] = (None, None)  # of the last reset
        # until the first-use check: results are checked (_checks_left of them) and observations are copied
        self._probing = self_check
        self._checks_left = _CHECKED_RESULTS if self_check else 0
        self._seen_obs: list[Any] = []  # the raw observations returned while probing, for the aliasing check
        self._copy_obs = False
        self._inspect = self_check  # probing or copying: step() and reset() look at their results
        #: counts the resets, steps and restores made through this wrapper: equal values mean that nothing was done
        #: through it in between (the search's check that a heuristic left the state alone)
        self.state_version = 0

    @property
    def copy_observations(self) -> bool:
        """Whether ``reset`` and ``step`` return copies of the env's observations. The first-use self-check turns it on
        for an env that returns the same numpy array (or dict, ...) again, mutated in place, which would corrupt the
        observations the search keeps. Until that check the observations are copied anyway.

        :return: the setting
        """
        return self._copy_obs

    @copy_observations.setter
    def copy_observations(self, value: bool) -> None:
        """:param value: copy the observations (a copy of a checked wrapper takes the setting of the original)"""
        self._copy_obs = bool(value)
        self._inspect = self._probing or self._copy_obs

    # ------------------------------------------------------------------ gym API

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset the env (the cloner sees ``seed`` and ``options`` first: the replay cloner records them).

        :param seed: the seed of the episode
        :param options: reset options
        :return: the first observation and the info dict
        """
        seed = self._chain_cloner.before_reset(self.env, seed, options)
        if self._inspect:
            result = self._inspected_reset(seed, options)
        else:
            result = self.env.reset(seed=seed, options=options)
        self._reset_args = (seed, options)
        self._has_reset = True
        self._done = False
        self.state_version += 1
        return result

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """:param action: the action
        :return: observation, reward, terminated, truncated, info"""
        try:
            result = self.env.step(action)
        except (ValueError, TypeError) as error:
            if self._probing:  # e.g. a wrapper unpacking an old-API 4-tuple: say so rather than "not enough values"
                self._diagnose(error, lambda: self.env.unwrapped.step(action), check_step_result)
            raise
        if self._inspect:
            result = self._inspected(result, check_step_result)
        self._done = bool(result[2] or result[3])
        self._chain_cloner.after_step(action)
        self.state_version += 1
        return result

    def _inspected_reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[Any, dict[str, Any]]:
        """:param seed: the reset seed
        :param options: the reset options
        :return: the env's reset result, checked while probing, with its observation copied"""
        try:
            result = self.env.reset(seed=seed, options=options)
        except (ValueError, TypeError) as error:
            if self._probing:
                problem = reset_seed_problem(self.env) if isinstance(error, TypeError) else None
                if problem is not None:
                    raise EnvAPIError(problem) from error
                self._diagnose(error, lambda: self.env.unwrapped.reset(seed=seed, options=options), check_reset_result)
            raise
        return self._inspected(result, check_reset_result)

    def _diagnose(self, error: Exception, call: Any, check: Any) -> None:
        """When a wrapper layer failed on what the unwrapped env returned, call the unwrapped env's method and check
        its result against the unwrapped env's own spaces (the env is being refused anyway, so its state no longer
        matters). A result that fits them is the wrapper's failure, and ``error`` is left to speak for itself.

        :param error: what the chain raised
        :param call: calls the unwrapped env's ``reset`` or ``step``
        :param check: :func:`check_reset_result` or :func:`check_step_result`
        :raises EnvAPIError: when the unwrapped env's result breaks gymnasium's API (chained from ``error``)
        """
        if self.env is self.env.unwrapped:
            return
        try:
            result = call()
        except Exception:
            return
        try:
            check(self.env.unwrapped, result)
        except EnvAPIError as api_error:
            raise api_error from error

    def _inspected(self, result: Any, check: Any) -> Any:
        """:param result: what the env's ``reset`` or ``step`` returned
        :param check: :func:`check_reset_result` or :func:`check_step_result`
        :return: the result with its observation copied, after the check while probing"""
        if self._checks_left > 0:
            self._checks_left -= 1
            check(self, result)
            self._seen_obs.append(result[0])
        return (copy_observation(result[0]), *result[1:])

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
                self._end_probe()
        return self._snapshot()

    @property
    def checked(self) -> bool:
        """:return: whether the first-use check has run (or was switched off with ``self_check=False``)"""
        return not self._needs_check

    def check_now(self, seed: int = 0) -> None:
        """Run the first-use check now if it has not run yet: reset with ``seed`` and snapshot (a copy of the env chain
        made afterwards may then skip the check and take :attr:`copy_observations` from this wrapper).

        :param seed: the seed of the reset
        """
        if self._needs_check:
            self.reset(seed=seed)
            self.snapshot()

    def _end_probe(self) -> None:
        """After the first-use check: stop checking results, and copy observations only when the env reuses them."""
        shared = shared_observations(self._seen_obs)
        self._probing = False
        self._checks_left = 0
        self._seen_obs = []
        self.copy_observations = shared is not None

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
        self.state_version += 1

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
            found = self._mask_fn()
            masks = np.asarray(found, dtype=bool)
            legal = self._all_legal
            exact = type(found) is np.ndarray and found.dtype.kind == "b"
            if legal is not None and not (exact and masks.shape == legal.shape):
                self._check_masks(found)
            return masks
        if self._all_legal is None:
            raise TypeError(
                f"{env_name(self)}: action_masks() needs a Discrete or MultiDiscrete action space "
                f"or an env that provides action_masks(), got {self.action_space}"
            )
        return self._all_legal

    def _check_masks(self, found: Any) -> None:
        """Refuse ``action_masks()`` of the wrong length, or integers that are not 0/1 (indices of the legal actions, say);
        0/1 integers are cast to bools, as sb3-contrib does.

        :param found: what the env's ``action_masks()`` returned
        :raises EnvAPIError: naming ``action_masks()`` and the env
        """
        array = np.asarray(found)
        expected = self._all_legal.shape
        problem = None
        if array.shape != expected:
            problem = f"returned shape {array.shape}, but the action space {self.action_space} needs shape {expected}"
        elif array.dtype != bool and not np.isin(array, (0, 1)).all():
            problem = f"returned {array.dtype} values other than 0 and 1 ({array.tolist()})"
        if problem is not None:
            raise EnvAPIError(
                f"the env {env_name(self)}: action_masks() {problem}. It must return one bool per action, True for the "
                "legal ones (sb3-contrib's convention; 0/1 integers are cast to bools), not the indices of the legal "
                "actions: return e.g. np.isin(np.arange(n_actions), legal_indices)"
            )

    @property
    def horizon(self) -> int | None:
        """:return: the smallest ``max_episode_steps`` of the ``TimeLimit`` layers, else the env's own ``max_steps``
        (MiniGrid truncates internally) or ``horizon`` (envs that always end after a fixed number of steps, such as
        the spanning-tree bandit and DeepSea), else None"""
        return find_horizon(self._layer_list, self._sim_base)

    @property
    def horizon_source(self) -> str | None:
        """:return: what sets :attr:`horizon` (``"its TimeLimit"``, ``"its max_steps"`` or ``"its horizon"``), or None"""
        found = describe_horizon(self._layer_list, self._sim_base)
        return None if found is None else found[1]

    # ------------------------------------------------------------------ determinism self-check

    def check_determinism(self, n_branches: int = 3, depth: int = 8, seed: int = 0, check_reset: bool = True) -> None:
        """Check that restoring a snapshot reproduces the env exactly, and that resetting with the same seed reproduces
        the episode; put the env back as it was afterwards.

        Rolls random legal actions from the current state, then branches off from random intermediate snapshots and
        replays recorded action suffixes after restores, comparing observations, rewards and flags. Right after each
        restore, the unwrapped env's simple attributes (numbers, strings, small containers, numpy arrays) are compared
        with their values at snapshot time. Then it resets twice with the seed of the last reset (0 when it had none),
        takes the same random legal actions after each and compares, and compares the simple attributes after a third
        reset with those after the second; a difference is warned about with a
        :class:`~sb3_dirpg.simulator.NondeterministicResetWarning` (the search stays valid within each episode, but
        results change from run to run and with ``n_workers``).

        :param n_branches: number of divergent branches
        :param depth: maximum length of each random rollout
        :param seed: seed of the random actions
        :param check_reset: also reset twice with the same seed and compare
        :raises NondeterministicEnvError: naming the env and the field that differed
        """
        if not self._has_reset:
            raise RuntimeError("SimulatorWrapper.check_determinism(): call reset() on the SimulatorWrapper first")
        if self._done:
            return
        run_determinism_check(self, self._snapshot, n_branches, depth, seed)
        if check_reset:
            self._check_reset(depth)

    def _check_reset(self, depth: int) -> None:
        """Reset with the last reset's seed and compare (see :meth:`check_determinism`); restore the state after.

        :param depth: the most actions taken after each reset
        """
        start = self._snapshot()
        reset_seed, options = self._reset_args
        seed = 0 if reset_seed is None else int(reset_seed)
        try:
            diff = run_reset_check(self, seed, options, depth)
        finally:
            self.restore(start)
        if diff is not None:
            field, when, detail = diff
            warnings.warn(
                f"{env_name(self)}: reset(seed={seed}) twice gave different episodes: the {field} differed {when} "
                f"({detail}). The env's episodes are not fixed by the seed, so DirPG's results change from run to run "
                "and with n_workers (the search within each episode stays valid). Make reset() call "
                "super().reset(seed=seed) and draw all randomness from self.np_random, not from np.random, random or a "
                "generator that reset() does not reseed",
                NondeterministicResetWarning,
                stacklevel=4,
            )


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
