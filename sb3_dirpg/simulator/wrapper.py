"""``SimulatorWrapper``: seeded reset, snapshot and restore of a gymnasium env and of its wrapper layers."""

from __future__ import annotations

import copy
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium.wrappers import TimeLimit

from sb3_dirpg.simulator.chain_copy import CopyingChainCloner
from sb3_dirpg.simulator.cloners import DeepcopyCloner, env_name
from sb3_dirpg.simulator.copy_utils import MISSING
from sb3_dirpg.simulator.registry import ChainCloner, Cloner, NondeterministicEnvError, NotClonableError, find_cloner
from sb3_dirpg.simulator.replay import ReplayCloner
from sb3_dirpg.simulator.unwrap import refuse_monitor, wrapper_layers

_SKIP = object()
_SIMPLE_TYPES = (int, float, bool, str, bytes, type(None), np.generic)
_FINGERPRINT_MAX_ITEMS = 4096


class Snapshot:
    """Opaque state of a :class:`SimulatorWrapper` (immutable by convention: do not modify its fields).

    A snapshot can only be restored into the wrapper that made it. Restoring it does not consume it.
    """

    __slots__ = ("_owner", "_state", "_done", "_label")

    def __init__(self, owner: object, state: Any, done: bool, label: str) -> None:
        """:param owner: the token of the wrapper that made it
        :param state: the chain's state, from the wrapper's chain cloner
        :param done: whether the last step before it ended the episode
        :param label: the kind of snapshot, for the repr"""
        self._owner = owner
        self._state = state
        self._done = done
        self._label = label

    @property
    def done(self) -> bool:
        """:return: whether the last step before this snapshot terminated or truncated the episode"""
        return self._done

    def __repr__(self) -> str:
        return f"<Snapshot {self._label}{' done' if self._done else ''}>"


def _fingerprint_value(value: Any, depth: int = 0) -> Any:
    """:param value: an attribute value
    :param depth: nesting depth reached so far
    :return: a copy of the value for a later equality check, or ``_SKIP`` for values not cheap to compare"""
    if isinstance(value, _SIMPLE_TYPES):
        return value
    kind = type(value)
    if kind is np.ndarray:
        return value.copy() if value.dtype != object and value.size <= _FINGERPRINT_MAX_ITEMS else _SKIP
    if depth >= 2:
        return _SKIP
    if kind in (tuple, list, set, frozenset) and len(value) <= 256:
        items = [_fingerprint_value(v, depth + 1) for v in value]
        return _SKIP if any(v is _SKIP for v in items) else kind(items)
    if kind is dict and len(value) <= 256:
        items = {k: _fingerprint_value(v, depth + 1) for k, v in value.items()}
        return _SKIP if any(v is _SKIP for v in items.values()) else items
    return _SKIP


def _fingerprint(d: dict[str, Any], ignored: frozenset[str]) -> dict[str, Any]:
    """:param d: an env's ``__dict__``
    :param ignored: attribute names to leave out
    :return: copies of its cheaply comparable attributes"""
    out = {}
    for name, value in d.items():
        if name in ignored:
            continue
        fp = _fingerprint_value(value)
        if fp is not _SKIP:
            out[name] = fp
    return out


def _first_difference(got: Any, expected: Any, path: str) -> tuple[str, str] | None:
    """Compare two values (numpy arrays, dicts, tuples and lists recursively).

    :param got: the value observed now
    :param expected: the reference value
    :param path: the name of the value, extended with ``[key]`` for nested items
    :return: None when equal, else the path of the first differing item and a short description of the difference
    """
    if isinstance(expected, dict) or isinstance(got, dict):
        if not (isinstance(expected, dict) and isinstance(got, dict)) or expected.keys() != got.keys():
            return path, _describe(expected, got)
        for key in expected:
            diff = _first_difference(got[key], expected[key], f"{path}[{key!r}]")
            if diff is not None:
                return diff
        return None
    if isinstance(expected, (tuple, list)) or isinstance(got, (tuple, list)):
        if type(expected) is not type(got) or len(expected) != len(got):
            return path, _describe(expected, got)
        for i, (g, e) in enumerate(zip(got, expected)):
            diff = _first_difference(g, e, f"{path}[{i}]")
            if diff is not None:
                return diff
        return None
    if isinstance(expected, np.ndarray) or isinstance(got, np.ndarray):
        g, e = np.asarray(got), np.asarray(expected)
        if g.shape != e.shape or g.dtype != e.dtype:
            return path, f"expected shape {e.shape} dtype {e.dtype}, got shape {g.shape} dtype {g.dtype}"
        if np.array_equal(g, e, equal_nan=e.dtype.kind in "fc"):
            return None
        if e.ndim == 0:
            return path, _describe(e.item(), g.item())
        unequal = g != e
        if e.dtype.kind in "fc":
            unequal &= ~(np.isnan(g) & np.isnan(e))
        where = tuple(int(i[0]) for i in np.nonzero(unequal))
        detail = _describe(e[where].item(), g[where].item())
        return path, f"{int(unequal.sum())} of {e.size} elements differ, first at {where}: {detail}"
    try:
        equal = bool(got == expected) or (got != got and expected != expected)  # NaN == NaN here
    except Exception:
        equal = got is expected
    return None if equal else (path, _describe(expected, got))


def _describe(expected: Any, got: Any) -> str:
    """:param expected: the reference value
    :param got: the value observed
    :return: "expected ..., got ..." with both reprs cut to 120 characters"""

    def short(value: Any) -> str:
        text = repr(value)
        return text if len(text) <= 120 else text[:117] + "..."

    return f"expected {short(expected)}, got {short(got)}"


class _Path:
    """A random rollout recorded by the determinism check: node snapshots, attribute fingerprints, actions, outcomes."""

    def __init__(self) -> None:
        self.snapshots: list[Snapshot] = []
        self.fingerprints: list[dict[str, Any]] = []
        self.actions: list[Any] = []
        self.outcomes: list[tuple[Any, SupportsFloat, bool, bool]] = []


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
        self._mask_fn = _find_action_masks(env, layers)
        self._all_legal = _all_legal_mask(env.action_space)
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

    def step_from(
        self, snapshot: Snapshot, action: Any
    ) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any], Snapshot]:
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
        for layer in self._layer_list:
            if isinstance(layer, TimeLimit):
                return int(layer._max_episode_steps)
        for name in ("max_steps", "horizon"):
            value = getattr(self._sim_base, name, None)
            if isinstance(value, (int, np.integer)):
                return int(value)
        return None

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
        rng = np.random.default_rng(seed)
        space = copy.deepcopy(self.action_space)
        space.seed(seed)
        start = self._snapshot()
        backup = self._backup()
        try:
            trunk = self._roll(space, depth)
            self._replay_path(trunk, 0)
            for _ in range(n_branches):
                self._restore_checked(trunk, int(rng.integers(len(trunk.snapshots))))
                branch = self._roll(space, depth)
                self._replay_path(trunk, int(rng.integers(len(trunk.snapshots))))
                self._replay_path(branch, int(rng.integers(len(branch.snapshots))))
        except NondeterministicEnvError:
            # the snapshot misses some state: put the env back from the deepcopy backup as well
            self.restore(start)
            if backup is not None:
                DeepcopyCloner().restore(self._sim_base, backup)
            raise
        except BaseException:
            self.restore(start)
            raise
        self.restore(start)

    def _backup(self) -> Any:
        """:return: a deepcopy of the unwrapped env's attributes, to undo the self-check when the cloner misses state,
        or None when the env cannot be deepcopied"""
        if isinstance(self.cloner, DeepcopyCloner):
            return None
        try:
            return DeepcopyCloner().snapshot(self._sim_base)
        except NotClonableError:
            return None

    def _random_action(self, space: gym.Space) -> Any:
        """:param space: a private copy of the action space
        :return: a random action, legal under the action mask for Discrete spaces"""
        if isinstance(space, gym.spaces.Discrete) and self._mask_fn is not None:
            mask = self.action_masks()
            if mask.any():
                return space.sample(mask=mask.astype(np.int8))
        return space.sample()

    def _roll(self, space: gym.Space, depth: int) -> _Path:
        """:param space: a private copy of the action space
        :param depth: maximum number of steps
        :return: a random rollout from the current (non-terminal) state"""
        path = _Path()
        ignored = self._ignored_attributes()
        for _ in range(depth):
            path.snapshots.append(self._snapshot())
            path.fingerprints.append(_fingerprint(self._sim_base.__dict__, ignored))
            action = self._random_action(space)
            obs, reward, terminated, truncated, _ = self.step(action)
            path.actions.append(action)
            path.outcomes.append((copy.deepcopy(obs), reward, terminated, truncated))
            if terminated or truncated:
                break
        return path

    def _restore_checked(self, path: _Path, index: int) -> None:
        """Restore node ``index`` of ``path`` and compare the env's attributes with their values at snapshot time.

        :param path: a recorded rollout
        :param index: the node
        """
        self.restore(path.snapshots[index])
        current = self._sim_base.__dict__
        for name, expected in path.fingerprints[index].items():
            got = current.get(name, MISSING)
            diff = (name, "the attribute is missing") if got is MISSING else _first_difference(got, expected, name)
            if diff is not None:
                raise self._mismatch(
                    f"attribute {diff[0]!r} of the unwrapped env",
                    "right after restoring a snapshot (other branches had been stepped in between)",
                    diff[1],
                )

    def _replay_path(self, path: _Path, index: int) -> None:
        """Restore node ``index`` of ``path``, replay the recorded actions from there and compare the outcomes.

        :param path: a recorded rollout
        :param index: the node to start from
        """
        self._restore_checked(path, index)
        names = ("obs", "reward", "terminated", "truncated")
        for i in range(index, len(path.actions)):
            obs, reward, terminated, truncated, _ = self.step(path.actions[i])
            for name, got, expected in zip(names, (obs, reward, terminated, truncated), path.outcomes[i]):
                diff = _first_difference(got, expected, name)
                if diff is not None:
                    raise self._mismatch(
                        diff[0], f"at step {i - index + 1} of replaying the same actions from a restored snapshot", diff[1]
                    )

    def _ignored_attributes(self) -> frozenset[str]:
        """:return: attributes the self-check does not compare (the cloner may list more in ``ignored_attributes``)"""
        extra = getattr(self.cloner, "ignored_attributes", ())
        return frozenset(("_np_random", "window", "clock", "render_size", *extra))

    def _mismatch(self, field: str, when: str, detail: str) -> NondeterministicEnvError:
        """:param field: what differed
        :param when: when it differed
        :param detail: how it differed
        :return: the error to raise"""
        name = env_name(self)
        cls = type(self._sim_base).__name__
        if isinstance(self.cloner, ReplayCloner):
            advice = (
                "With cloner='replay' this means the env is not reproducible from reset(seed=...): make it draw all "
                "its randomness from self.np_random, or register a cloner with sb3_dirpg.register_cloner."
            )
        else:
            advice = (
                f"The snapshot (cloner {self.cloner!r}) does not capture all of the env's state. Register a cloner that "
                f"copies it with sb3_dirpg.register_cloner({cls}, cloner), or pass cloner='replay' to SimulatorWrapper "
                "(restore = reset with the seed and replay the actions)."
            )
        return NondeterministicEnvError(
            f"{name}: snapshot/restore is not exact: {field} differed {when} "
            f"({detail}). {advice}"
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


def _find_action_masks(env: gym.Env, layers: list[gym.Wrapper]) -> Any:
    """:param env: the env chain
    :param layers: its wrapper layers
    :return: the bound ``action_masks`` method of the outermost layer (or the unwrapped env) that defines one, or None"""
    for layer in [*layers, env.unwrapped]:
        if "action_masks" in vars(layer) or hasattr(type(layer), "action_masks"):
            return layer.action_masks
    return None


def _all_legal_mask(space: gym.Space) -> np.ndarray | None:
    """:param space: the action space
    :return: a read-only all-True mask in sb3-contrib's layout, or None for spaces that have no masks"""
    if isinstance(space, gym.spaces.Discrete):
        mask = np.ones(int(space.n), dtype=bool)
    elif isinstance(space, gym.spaces.MultiDiscrete):
        mask = np.ones(int(np.sum(space.nvec)), dtype=bool)
    else:
        return None
    mask.flags.writeable = False
    return mask
