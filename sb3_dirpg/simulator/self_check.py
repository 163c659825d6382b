"""The determinism self-check of :class:`~sb3_dirpg.simulator.SimulatorWrapper`: does restoring a snapshot reproduce
the env exactly, and does resetting with the same seed reproduce the episode?

Entry points: :func:`run_determinism_check` and :func:`run_reset_check`, which ``SimulatorWrapper.check_determinism``
calls.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Protocol, SupportsFloat

import gymnasium as gym
import numpy as np

from sb3_dirpg.simulator.cloners import DeepcopyCloner, env_name
from sb3_dirpg.simulator.copy_utils import MISSING
from sb3_dirpg.simulator.registry import NondeterministicEnvError, NotClonableError
from sb3_dirpg.simulator.replay import ReplayCloner
from sb3_dirpg.simulator.snapshot import Snapshot


class CheckedSimulator(Protocol):
    """What the self-check needs of a :class:`~sb3_dirpg.simulator.SimulatorWrapper` (the wrapper imports this module)."""

    cloner: Any
    has_action_masks: bool
    action_space: gym.Space
    unwrapped: gym.Env

    def restore(self, snapshot: Snapshot) -> None:
        """:param snapshot: a snapshot made by this simulator"""

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """:param action: an action
        :return: gymnasium's step tuple"""

    def action_masks(self) -> np.ndarray:
        """:return: the legal actions, bool"""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """:param seed: the seed
        :param options: reset options
        :return: the first observation and the info"""


class NondeterministicResetWarning(UserWarning):
    """``reset(seed=...)`` twice with the same seed gave different episodes: results will change from run to run and with
    ``n_workers``."""


_SKIP = object()  # a fingerprint value too costly to compare
_SIMPLE_TYPES = (int, float, bool, str, bytes, type(None), np.generic)
_FINGERPRINT_MAX_ITEMS = 4096


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


def ignored_attributes(sim: CheckedSimulator) -> frozenset[str]:
    """:param sim: a wrapper
    :return: the unwrapped env's attributes that the checks do not compare (the RNG, rendering; the cloner may list more
        in ``ignored_attributes``)"""
    extra = getattr(sim.cloner, "ignored_attributes", ())
    return frozenset(("_np_random", "window", "clock", "render_size", *extra))


def attribute_fingerprint(sim: CheckedSimulator) -> dict[str, Any]:
    """:param sim: a wrapper
    :return: copies of the unwrapped env's cheaply comparable attributes (numbers, strings, small containers and numpy
        arrays), for :func:`first_difference`"""
    return _fingerprint(sim.unwrapped.__dict__, ignored_attributes(sim))


def attribute_difference(got: dict[str, Any], expected: dict[str, Any]) -> tuple[str, str] | None:
    """:param got: an :func:`attribute_fingerprint` taken now
    :param expected: one taken before
    :return: None when they agree, else the first attribute that differs (``env.unwrapped.name``) and how"""
    for name in sorted(expected.keys() - got.keys()):
        return f"env.unwrapped.{name}", "the attribute is gone"
    for name in sorted(got.keys() - expected.keys()):
        return f"env.unwrapped.{name}", f"a new attribute, = {_short(got[name])}"
    for name, value in expected.items():
        diff = _first_difference(got[name], value, f"env.unwrapped.{name}")
        if diff is not None:
            return diff
    return None


def _short(value: Any) -> str:
    """:param value: a value
    :return: its repr, cut to 120 characters"""
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def first_difference(got: Any, expected: Any, path: str) -> tuple[str, str] | None:
    """Compare two values (numpy arrays, dicts, tuples and lists recursively; NaN equals NaN).

    :param got: the value observed now
    :param expected: the reference value
    :param path: the name of the value
    :return: None when equal, else the path of the first differing item and a short description of the difference
    """
    return _first_difference(got, expected, path)


def random_legal_action(sim: CheckedSimulator, space: gym.Space) -> Any:
    """:param sim: a wrapper
    :param space: a private copy of its action space
    :return: a random action, legal under the action mask for Discrete spaces"""
    if isinstance(space, gym.spaces.Discrete) and sim.has_action_masks:
        mask = sim.action_masks()
        if mask.any():
            return space.sample(mask=mask.astype(np.int8))
    return space.sample()


class _Path:
    """A random rollout recorded by the determinism check: node snapshots, attribute fingerprints, actions, outcomes."""

    def __init__(self) -> None:
        self.snapshots: list[Snapshot] = []
        self.fingerprints: list[dict[str, Any]] = []
        self.actions: list[Any] = []
        self.outcomes: list[tuple[Any, SupportsFloat, bool, bool]] = []


def run_determinism_check(
    sim: CheckedSimulator, take_snapshot: Callable[[], Snapshot], n_branches: int, depth: int, seed: int
) -> None:
    """Check that restoring a snapshot of ``sim`` reproduces the env exactly; put the env back as it was afterwards.

    Rolls random legal actions from the current state, then branches off from random intermediate snapshots and
    replays recorded action suffixes after restores, comparing observations, rewards and flags. Right after each
    restore, the unwrapped env's simple attributes (numbers, strings, small containers, numpy arrays) are compared
    with their values at snapshot time.

    :param sim: a wrapper that has been reset and is not at the end of an episode
    :param take_snapshot: snapshots ``sim`` without running the first-use self-check again
    :param n_branches: number of divergent branches
    :param depth: maximum length of each random rollout
    :param seed: seed of the random actions
    :raises NondeterministicEnvError: naming the env and the field that differed
    """
    _DeterminismCheck(sim, take_snapshot).run(n_branches, depth, seed)


class _DeterminismCheck:
    """One run of the self-check on one wrapper.

    :param sim: the wrapper to check
    :param take_snapshot: snapshots ``sim`` without running the first-use self-check
    """

    def __init__(self, sim: CheckedSimulator, take_snapshot: Callable[[], Snapshot]) -> None:
        self.sim = sim
        self.take_snapshot = take_snapshot
        self.base = sim.unwrapped
        self.ignored = ignored_attributes(sim)

    def run(self, n_branches: int, depth: int, seed: int) -> None:
        """:param n_branches: number of divergent branches
        :param depth: maximum length of each random rollout
        :param seed: seed of the random actions
        :raises NondeterministicEnvError: naming the env and the field that differed"""
        sim = self.sim
        rng = np.random.default_rng(seed)
        space = copy.deepcopy(sim.action_space)
        space.seed(seed)
        start = self.take_snapshot()
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
            sim.restore(start)
            if backup is not None:
                DeepcopyCloner().restore(self.base, backup)
            raise
        except BaseException:
            sim.restore(start)
            raise
        sim.restore(start)

    def _backup(self) -> Any:
        """:return: a deepcopy of the unwrapped env's attributes, to undo the self-check when the cloner misses state,
        or None when the env cannot be deepcopied"""
        if isinstance(self.sim.cloner, DeepcopyCloner):
            return None
        try:
            return DeepcopyCloner().snapshot(self.base)
        except NotClonableError:
            return None

    def _random_action(self, space: gym.Space) -> Any:
        """:param space: a private copy of the action space
        :return: a random action, legal under the action mask for Discrete spaces"""
        return random_legal_action(self.sim, space)

    def _roll(self, space: gym.Space, depth: int) -> _Path:
        """:param space: a private copy of the action space
        :param depth: maximum number of steps
        :return: a random rollout from the current (non-terminal) state"""
        path = _Path()
        for _ in range(depth):
            path.snapshots.append(self.take_snapshot())
            path.fingerprints.append(_fingerprint(self.base.__dict__, self.ignored))
            action = self._random_action(space)
            obs, reward, terminated, truncated, _ = self.sim.step(action)
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
        self.sim.restore(path.snapshots[index])
        current = self.base.__dict__
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
            obs, reward, terminated, truncated, _ = self.sim.step(path.actions[i])
            for name, got, expected in zip(names, (obs, reward, terminated, truncated), path.outcomes[i]):
                diff = _first_difference(got, expected, name)
                if diff is not None:
                    raise self._mismatch(
                        diff[0], f"at step {i - index + 1} of replaying the same actions from a restored snapshot", diff[1]
                    )

    def _mismatch(self, field: str, when: str, detail: str) -> NondeterministicEnvError:
        """:param field: what differed
        :param when: when it differed
        :param detail: how it differed
        :return: the error to raise, with advice that depends on the cloner"""
        cloner = self.sim.cloner
        if isinstance(cloner, ReplayCloner):
            advice = (
                "With cloner='replay' this means the env is not reproducible from reset(seed=...): make it draw all "
                "its randomness from self.np_random, or register a cloner with sb3_dirpg.register_cloner."
            )
        else:
            cls = type(self.base).__name__
            advice = (
                f"The snapshot (cloner {cloner!r}) does not capture all of the env's state. Register a cloner that "
                f"copies it with sb3_dirpg.register_cloner({cls}, cloner), or pass cloner='replay' to SimulatorWrapper "
                "(restore = reset with the seed and replay the actions)."
            )
        return NondeterministicEnvError(
            f"{env_name(self.sim)}: snapshot/restore is not exact: {field} differed {when} ({detail}). {advice}"
        )


def run_reset_check(
    sim: CheckedSimulator, seed: int, options: dict[str, Any] | None, depth: int = 8
) -> tuple[str, str, str] | None:
    """Reset ``sim`` with ``seed`` and take random legal actions; reset with ``seed`` again and take the same actions,
    comparing the observations, rewards and flags; reset a third time and compare the unwrapped env's simple attributes
    with their values after the second reset (both resets then follow the same episode, so attributes an env keeps
    from the previous episode do not count).

    The caller restores the state it had before (this function leaves ``sim`` in a new episode).

    :param sim: a wrapper that has been reset
    :param seed: the seed of the resets
    :param options: the reset options
    :param depth: the most actions taken after each reset
    :return: None when the episodes agree, else what differed, when, and how
    """
    space = copy.deepcopy(sim.action_space)
    space.seed(seed)
    obs, _ = sim.reset(seed=seed, options=copy.deepcopy(options))
    first = [copy.deepcopy(obs)]
    actions = []
    masks = []
    for _ in range(depth):
        masks.append(sim.action_masks().copy() if sim.has_action_masks else None)
        action = random_legal_action(sim, space)
        obs, reward, terminated, truncated, _ = sim.step(action)
        actions.append(action)
        first.append((copy.deepcopy(obs), reward, terminated, truncated))
        if terminated or truncated:
            break
    obs, _ = sim.reset(seed=seed, options=copy.deepcopy(options))
    attributes = attribute_fingerprint(sim)
    diff = _first_difference(obs, first[0], "observation")
    if diff is not None:
        return diff[0], "right after reset", diff[1]
    names = ("observation", "reward", "terminated", "truncated")
    for i, action in enumerate(actions):
        if masks[i] is not None:
            diff = _first_difference(sim.action_masks(), masks[i], "action mask")
            if diff is not None:
                return diff[0], f"after {i} steps", diff[1]
        outcome = sim.step(action)[:4]
        for name, got, expected in zip(names, outcome, first[i + 1]):
            diff = _first_difference(got, expected, name)
            if diff is not None:
                return diff[0], f"at step {i + 1} of the same actions", diff[1]
    sim.reset(seed=seed, options=copy.deepcopy(options))
    diff = attribute_difference(attribute_fingerprint(sim), attributes)
    if diff is not None:
        return diff[0], "right after reset", diff[1]
    return None
