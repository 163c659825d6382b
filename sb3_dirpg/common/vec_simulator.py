"""Adapts simulators (a list of :class:`~sb3_dirpg.simulator.SimulatorWrapper`) to the search's batch-simulator protocol;
the SB3 ``VecEnv`` whose sub-envs they wrap is checked and unwrapped in :mod:`sb3_dirpg.common.vec_envs`."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from sb3_dirpg.search.protocols import Heuristic, Transitions
from sb3_dirpg.simulator import SimulatorWrapper
from sb3_dirpg.simulator.api_check import (
    SUCCESS_ADVICE,
    EnvAPIError,
    copy_observation,
    is_bool,
    observation_problem,
    success_problem,
)
from sb3_dirpg.simulator.cloners import env_name
from sb3_dirpg.simulator.self_check import (
    attribute_difference,
    attribute_fingerprint,
    first_difference,
    random_legal_action,
)


class HeuristicError(RuntimeError):
    """A heuristic raised, or changed the env it was asked to bound; the message names the heuristic and the env."""


_HEURISTIC_CONTRACT = (
    "a heuristic must only read the env's state (through env.unwrapped or env.get_wrapper_attr): it may step or reset "
    "the SimulatorWrapper it receives, which the search then restores, but must not step the env behind it "
    "(env.unwrapped.step, env.env.step), change its attributes or draw from its np_random (see docs/heuristics.md)"
)


_INF = float("inf")


class VecSimulator:
    """Batch simulator over a list of :class:`~sb3_dirpg.simulator.SimulatorWrapper` instances.

    Episode ``e`` always runs on simulator ``e % len(simulators)`` (a snapshot belongs to the wrapper that made it).
    Every step starts from a snapshot, so one simulator serves any number of episodes; the restore is skipped when the
    snapshot is the one this simulator took last (nothing has stepped it since), which is how a search usually goes
    on down a trajectory. A step that ends an episode
    reports success when the env's info says ``is_success`` (SB3's convention; a bool or numpy bool, anything else is
    refused); ``reports_success`` tells whether any episode end so far carried that key, and ``ends_without_success``
    whether one did not (trajectories cut by ``max_episode_steps`` are not the env's ends and count for neither).

    The heuristic is called after the state's snapshot is taken: when it steps, resets or restores the wrapper (its
    ``state_version`` changed), the next step from that state restores the snapshot first. An exception inside it is
    raised again as a :class:`HeuristicError` that names it; :meth:`check_heuristic` checks that it leaves the env alone.

    :param simulators: the simulators
    :param heuristic: ``heuristic(env) -> upper`` or ``(lower, upper)`` bound on the discounted return-to-go from the
        env's current state, or None
    """

    #: run the per-step input checks (finite rewards and observations, the observation's shape); switched off only to
    #: measure what they cost (``python -m benchmarks.check_cost``)
    input_checks: bool = True

    def __init__(self, simulators: Sequence[SimulatorWrapper], heuristic: Heuristic | None = None) -> None:
        if not simulators:
            raise ValueError("VecSimulator needs at least one simulator")
        action_space = simulators[0].action_space
        if not isinstance(action_space, spaces.Discrete):
            raise ValueError(f"the search needs a Discrete action space, got {action_space}")
        self.simulators = list(simulators)
        self.heuristic = heuristic
        self.n_actions = int(action_space.n)
        self._start = int(action_space.start)
        self._all_legal = np.ones(self.n_actions, dtype=bool)
        self.reports_success = False
        self.ends_without_success = False
        self._float_obs_keys = _float_observation_keys(simulators[0].observation_space)
        space = simulators[0].observation_space
        self._box_shape = space.shape if isinstance(space, spaces.Box) else None  # checked at every step (cheap)
        self._current: list[Any] = [None] * len(self.simulators)  # per simulator: the snapshot of its current state
        self._copy_problem: str | None = None  # why the first simulator cannot be deep-copied, once found

    def ensure_simulators(self, n: int) -> None:
        """Give every one of ``n`` concurrently searched episodes a simulator of its own (deep copies of the first).

        Restoring a snapshot of the episode a simulator last ran is cheaper (cloners skip unchanged parts, and the
        env's data stays in cache) than switching between episodes at every step.

        An env that cannot be deep-copied (it holds an open file, a lock, ...) is warned about once; its simulators then
        take turns at the episodes, each switch restoring a snapshot: the same results, more slowly.

        :param n: number of episodes searched together
        """
        if len(self.simulators) < n:
            self.simulators[0].check_now()  # the copies take its findings (in a search worker it has not run yet)
        while len(self.simulators) < n and self._copy_problem is None:
            first = self.simulators[0]
            try:
                chain = copy.deepcopy(first.env)
            except Exception as error:
                self._copy_problem = f"{type(error).__name__}: {error}"
                warnings.warn(
                    f"the env {env_name(first)} cannot be deep-copied ({self._copy_problem}), so {len(self.simulators)} "
                    f"simulator(s) take turns at the {n} episodes searched together, restoring a snapshot at every switch "
                    "(the same results, more slowly). Make the env deep-copyable (e.g. open files in reset() rather than "
                    "__init__, or define __deepcopy__) to give each episode a simulator of its own",
                    UserWarning,
                    stacklevel=2,
                )
                break
            # a deep copy of an env chain that passed the self-check needs no check of its own
            sim = SimulatorWrapper(chain, cloner=first.cloner_spec, self_check=False)
            sim.copy_observations = first.copy_observations
            self.simulators.append(sim)
            self._current.append(None)

    @property
    def horizon(self) -> int | None:
        """:return: the episode step limit of the simulators (TimeLimit or MiniGrid ``max_steps``), or None"""
        return self.simulators[0].horizon

    def _call_heuristic(self, env: SimulatorWrapper) -> Any:
        """:param env: a simulator, at the state to bound
        :return: what the heuristic returned"""
        try:
            return self.heuristic(env)
        except Exception as error:
            raise self._heuristic_raised(env, error) from error

    def _heuristic_raised(self, env: SimulatorWrapper, error: Exception) -> HeuristicError:
        """:param env: the simulator the heuristic was called on
        :param error: what the heuristic raised
        :return: the error to raise from it, naming the heuristic and the env"""
        return HeuristicError(
            f"the heuristic {self.heuristic!r} raised {type(error).__name__} ({error}) on the env {env_name(env)} at "
            f"{_describe_state(env)}: fix the heuristic, which the search calls as heuristic(env) with the "
            "SimulatorWrapper at every state it reaches (see docs/heuristics.md); its traceback is above"
        )

    def _bounds(self, env: SimulatorWrapper) -> tuple[float, float]:
        """:param env: a simulator, at the state to bound
        :return: the heuristic's (lower, upper) bounds, checked"""
        try:  # inlined _call_heuristic: this runs at every step
            value = self.heuristic(env)
        except Exception as error:
            raise self._heuristic_raised(env, error) from error
        if type(value) is tuple and len(value) == 2 and type(value[0]) is float and type(value[1]) is float:
            # the usual answer, checked in full below when it is anything else (NaN and impossible infinities included)
            if value[0] <= value[1] and value[0] != _INF and value[1] != -_INF:
                return value
        if isinstance(value, tuple) and len(value) == 2:
            lower, upper = value
        else:
            lower, upper = -np.inf, value
        if isinstance(lower, (str, bytes)) or isinstance(upper, (str, bytes)):
            self._bad_bounds(env, value, "is not a number")
        try:
            lower, upper = float(lower), float(upper)
        except (TypeError, ValueError):
            self._bad_bounds(env, value, "is not a number")
        if lower > upper:
            self._bad_bounds(env, value, "has lower > upper")
        if upper != upper or lower != lower:  # NaN
            self._bad_bounds(env, value, "is NaN")
        if lower == _INF or upper == -_INF:
            self._bad_bounds(
                env, value, "is impossible (a lower bound of +inf or an upper bound of -inf holds for no return-to-go; "
                "an unknown bound is -inf for the lower and +inf for the upper)",
            )  # fmt: skip
        return lower, upper

    def _bad_bounds(self, env: SimulatorWrapper, value: Any, problem: str) -> None:
        raise ValueError(
            f"the heuristic {self.heuristic!r} returned {value!r} for the env {env_name(env)}, which {problem}: it must "
            "return a float upper bound, or a (lower, upper) tuple of floats with lower <= upper (±inf allowed), on the "
            f"discounted return-to-go from the env's current state (state: {_describe_state(env)})"
        )

    def _check_finite(self, rows: list[tuple], rewards: np.ndarray, episodes: Sequence[int], what: str) -> None:
        """Refuse non-finite rewards and observations with an error naming the env (one vectorised check per call)."""
        if not np.isfinite(rewards).all():
            row = int(np.flatnonzero(~np.isfinite(rewards))[0])
            self._non_finite("reward", rewards[row], row, episodes, what)
        for key in self._float_obs_keys:
            parts = [entry[0] if key is None else entry[0][key] for entry in rows]
            if np.isfinite(np.concatenate(parts, axis=None)).all():  # one check for the whole batch
                continue
            row = next(i for i, part in enumerate(parts) if not np.isfinite(part).all())
            self._non_finite("observation" if key is None else f"observation[{key!r}]", parts[row], row, episodes, what)

    def _non_finite(self, name: str, value: Any, row: int, episodes: Sequence[int], what: str) -> None:
        episode = int(episodes[row])
        env = self.simulators[episode % len(self.simulators)]
        raise ValueError(
            f"the env {env_name(env)} returned a non-finite {name} ({value!r}) {what} (episode {episode}); NaN or inf "
            "would poison the search and the update: fix the env, or clip/replace the value in a wrapper"
        )

    def _transitions(
        self, rows: list[tuple[Any, float, bool, np.ndarray, Any, tuple[float, float]]], success: list[bool]
    ) -> Transitions:
        obs, rewards, terminal, masks, snaps, bounds = zip(*rows)
        bounds_arr = np.asarray(bounds, dtype=np.float64)
        with_bounds = self.heuristic is not None
        return Transitions(
            obs=list(obs), rewards=np.asarray(rewards, dtype=np.float64), terminal=np.asarray(terminal, dtype=bool),
            masks=np.stack(masks), snapshots=list(snaps),
            lower=bounds_arr[:, 0] if with_bounds else None, upper=bounds_arr[:, 1] if with_bounds else None,
            success=np.asarray(success, dtype=bool),
        )  # fmt: skip

    def reset(self, seeds: Sequence[int]) -> Transitions:
        """:param seeds: one seed per episode
        :return: the root states"""
        rows = []
        n_sims = len(self.simulators)
        current = self._current
        current[:] = [None] * n_sims
        for episode, seed in enumerate(seeds):
            index = episode % n_sims
            env = self.simulators[index]
            obs, _ = env.reset(seed=int(seed))
            problem = observation_problem(obs, env.observation_space) if self.input_checks else None
            if problem is not None:
                self._observation_changed(env, f"reset(seed={int(seed)})", problem)
            snapshot = current[index] = env.snapshot()
            masks = env.action_masks()
            bounds = (-np.inf, np.inf)
            if self.heuristic is not None:
                version = env.state_version
                bounds = self._bounds(env)
                if env.state_version != version:  # the heuristic moved the env: restore before stepping from here
                    current[index] = None
            rows.append((obs, 0.0, False, masks, snapshot, bounds))
        trans = self._transitions(rows, [False] * len(rows))
        if self.input_checks:
            self._check_finite(rows, trans.rewards, range(len(rows)), f"at reset(seed={list(seeds)})")
        return trans

    def step(self, snapshots: Sequence[Any], actions: np.ndarray, episodes: np.ndarray) -> Transitions:
        """:param snapshots: states to step from
        :param actions: one action index per row (0-based)
        :param episodes: the episode of each row
        :return: the states reached (terminal states get no snapshot)"""
        rows, success = [], []
        n_sims = len(self.simulators)
        current = self._current
        no_bounds = (0.0, 0.0)
        box_shape = self._box_shape if self.input_checks else None
        for snapshot, action, episode in zip(snapshots, actions.tolist(), episodes.tolist()):
            index = episode % n_sims
            env = self.simulators[index]
            if current[index] is not snapshot:
                env.restore(snapshot)
            current[index] = None
            obs, reward, terminated, truncated, info = env.step(action + self._start)
            if box_shape is not None and type(obs) is np.ndarray and obs.shape != box_shape:
                self._observation_changed(env, "step()", observation_problem(obs, env.observation_space) or "")
            if terminated or truncated:
                rows.append((obs, float(reward), True, self._all_legal, None, no_bounds))
                success.append(self._success(env, info))
                continue
            success.append(False)
            snapshot = current[index] = env.snapshot()
            masks = env.action_masks()
            bounds = no_bounds
            if self.heuristic is not None:
                version = env.state_version
                bounds = self._bounds(env)
                if env.state_version != version:  # the heuristic moved the env: restore before stepping from here
                    current[index] = None
            rows.append((obs, float(reward), False, masks, snapshot, bounds))
        trans = self._transitions(rows, success)
        if self.input_checks:
            self._check_finite(rows, trans.rewards, episodes, "after a step")
        return trans


    def _observation_changed(self, env: SimulatorWrapper, method: str, problem: str) -> None:
        """:param env: the simulator
        :param method: the call that returned the observation
        :param problem: what does not fit
        :raises EnvAPIError: naming the env and the observation"""
        raise EnvAPIError(
            f"the env {env_name(env)}: {method} returned an observation that does not fit its observation_space "
            f"{env.observation_space}: {problem}. The policy was built for that space (the checks at construction saw "
            "observations that fit); make every reset and step return observations of the declared structure and shape"
        )

    def _success(self, env: SimulatorWrapper, info: Any) -> bool:
        """:param env: the simulator whose step ended an episode
        :param info: the step's info
        :return: whether the episode ended in success (``info["is_success"]``, a bool)"""
        if not isinstance(info, dict):
            raise EnvAPIError(
                f"the env {env_name(env)}: step() returned an info that is a {type(info).__name__}; it must be a dict"
            )
        flag = info.get("is_success")
        if flag is None and "is_success" not in info:
            self.ends_without_success = True
            return False
        if not is_bool(flag):
            raise EnvAPIError(f"the env {env_name(env)}: step() {success_problem(flag)}; {SUCCESS_ADVICE}")
        self.reports_success = True
        return bool(flag)

    def check_heuristic(self, depth: int = 8, seed: int = 0) -> None:
        """Check that the heuristic leaves the env as it found it, on the states of a short random rollout of the first
        simulator (from its current, non-terminal state, which is restored afterwards).

        At each state the heuristic is called as the search calls it (a wrapper it stepped is restored). Then the
        unwrapped env's simple attributes and its random generator must be as before, and a step from there must give
        what the same step gives from the state's snapshot.

        :param depth: the most states checked
        :param seed: seed of the random actions
        :raises HeuristicError: naming the heuristic, the env and what it changed
        """
        if self.heuristic is None:
            return
        env = self.simulators[0]
        start = env.snapshot()
        space = copy.deepcopy(env.action_space)
        space.seed(seed)
        try:
            for _ in range(depth):
                action = random_legal_action(env, space)
                if self._heuristic_changed(env, action):  # the action ends the episode
                    break
                env.step(action)
        finally:
            env.restore(start)

    def _heuristic_changed(self, env: SimulatorWrapper, action: Any) -> bool:
        """Call the heuristic at the env's current state and compare the state after with the state before.

        :param env: the simulator, at a non-terminal state
        :param action: an action to try from that state
        :return: whether ``action`` ends the episode from there (the state is left as it was)
        """
        snapshot = env.snapshot()
        base = env.unwrapped
        attributes = attribute_fingerprint(env)
        rng = getattr(base, "_np_random", None)
        rng_state = copy.deepcopy(rng.bit_generator.state) if rng is not None else None
        version = env.state_version
        self._bounds(env)  # its value is checked as the search checks it (NaN, lower > upper, impossible infinities)
        if env.state_version != version:
            env.restore(snapshot)
        diff = attribute_difference(attribute_fingerprint(env), attributes)
        if diff is not None:
            self._changed(env, f"{diff[0]} ({diff[1]})")
        rng = getattr(base, "_np_random", None)
        if rng_state is not None and (rng is None or rng.bit_generator.state != rng_state):
            self._changed(env, "the state of its random generator np_random")
        after = env.step(action)[:4]
        env.restore(snapshot)
        expected = env.step(action)[:4]
        env.restore(snapshot)
        for name, got, want in zip(("observation", "reward", "terminated", "truncated"), after, expected):
            diff = first_difference(got, want, name)
            if diff is not None:
                self._changed(env, f"the next step: its {diff[0]} differed from a step from the state's snapshot ({diff[1]})")
        return bool(expected[2] or expected[3])

    def _changed(self, env: SimulatorWrapper, what: str) -> None:
        """:param env: the simulator
        :param what: what the heuristic changed"""
        raise HeuristicError(
            f"the heuristic {self.heuristic!r} changed the env {env_name(env)} when called at {_describe_state(env)}: "
            f"{what}. The search snapshots a state before calling the heuristic and steps on from there, so such a "
            f"change corrupts the search; {_HEURISTIC_CONTRACT}"
        )


#: the seeds and steps of the probes that compare a VecEnv's sub-envs
_PROBE_SEEDS, _PROBE_STEPS, _PROBE_ACTIONS = (0, 1), 16, 4


def check_sub_envs_alike(simulators: Sequence[SimulatorWrapper], algo: str = "DirPG") -> None:
    """Refuse a VecEnv whose sub-envs differ. The search runs every episode on a simulator that is sub-env ``e % n_envs``
    or a deep copy of sub-env 0 (the episodes are seeded resets, and one env serves any number of them), so sub-envs
    that differ (two levels, two sizes) would get unequal, arbitrary shares of the episodes.

    Each sub-env is probed as sub-env 0 is: seeded resets, then a few steps of each of the first actions (the first legal
    one where it is not legal); the observations, rewards, ends and action masks must be the same. Put back as it was
    by the next seeded reset (the search resets every episode).

    :param simulators: the simulators of the sub-envs, in order
    :param algo: name of the algorithm, for messages
    :raises ValueError: naming the first sub-env that differs from sub-env 0 and where
    """
    if len(simulators) < 2:
        return
    n_actions = int(simulators[0].action_space.n)
    reference = _probe(simulators[0], n_actions)
    again = _probe(simulators[0], n_actions)
    if len(again) != len(reference) or not all(_same(a, b) for (_, a), (_, b) in zip(reference, again)):
        return  # sub-env 0 does not repeat itself: its seeded resets are warned about, they cannot be compared
    for index, sim in enumerate(simulators[1:], start=1):
        found = _probe(sim, n_actions)
        difference = next(((what, a, b) for (what, a), (_, b) in zip(reference, found) if not _same(a, b)), None)
        if difference is None and len(found) != len(reference):
            difference = ("the episode's length", len(reference), len(found))
        if difference is not None:
            what, a, b = difference
            raise ValueError(
                f"{algo}: the sub-envs of the VecEnv differ: sub-env {index} ({env_name(sim)}) and sub-env 0 "
                f"({env_name(simulators[0])}) give different {what} ({_short_value(a)} vs {_short_value(b)}). {algo} "
                "searches each episode as a seeded reset of one env, on sub-env 0's copies, so sub-envs that differ would "
                "not get their share of the episodes. Give every sub-env the same env (make_vec_env(env_id, n_envs=...)), "
                "or make one env that draws the level from its reset seed (e.g. a wrapper whose reset picks level_a or "
                "level_b by the seed) to train on several levels"
            )


def _probe(sim: SimulatorWrapper, n_actions: int) -> list[tuple[str, Any]]:
    """:param sim: a simulator
    :param n_actions: the number of actions
    :return: what the probes saw, in order, each with its name"""
    seen: list[tuple[str, Any]] = []
    for seed in _PROBE_SEEDS:
        for action in range(min(n_actions, _PROBE_ACTIONS)):
            obs, _ = sim.reset(seed=seed)
            seen.append((f"observations at reset(seed={seed})", copy_observation(obs)))
            for step in range(_PROBE_STEPS):
                masks = np.asarray(sim.action_masks(), dtype=bool)
                seen.append((f"action masks after {step} steps from reset(seed={seed})", masks))
                taken = action if masks[action] else int(np.flatnonzero(masks)[0]) if masks.any() else action
                obs, reward, terminated, truncated, _ = sim.step(taken)
                where = f"after {step + 1} steps of action {action} from reset(seed={seed})"
                seen += [(f"observations {where}", copy_observation(obs)), (f"rewards {where}", float(np.sum(reward)))]
                seen.append((f"episode ends {where}", (bool(terminated), bool(truncated))))
                if terminated or truncated:
                    break
    return seen


def _same(a: Any, b: Any) -> bool:
    """:return: whether two observations (arrays, dicts, tuples) or values are equal"""
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and not isinstance(a, np.ndarray):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    try:
        return bool(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True))
    except TypeError:
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))


def _short_value(value: Any) -> str:
    """:return: a short text of a value for a message"""
    text = repr(value.tolist() if isinstance(value, np.ndarray) else value)
    return text if len(text) <= 60 else text[:57] + "..."


def _float_observation_keys(space: spaces.Space) -> list[str | None]:
    """:param space: an observation space
    :return: the parts of its observations that can hold NaN or inf: ``[None]`` for a float Box, the keys of the float
        Box subspaces of a Dict, ``[]`` otherwise (integer observations are always finite)"""
    if isinstance(space, spaces.Dict):
        return [key for key, sub in space.spaces.items() if _is_float_box(sub)]
    return [None] if _is_float_box(space) else []


def _is_float_box(space: spaces.Space) -> bool:
    """:param space: an observation space
    :return: whether it is a Box of floats"""
    return isinstance(space, spaces.Box) and np.issubdtype(space.dtype, np.floating)


def _describe_state(env: gym.Env) -> str:
    """:param env: a simulator
    :return: a short description of its current state for messages (MiniGrid: agent position and direction)"""
    base = env.unwrapped
    if hasattr(base, "agent_pos") and hasattr(base, "agent_dir"):
        pos = tuple(int(v) for v in base.agent_pos)
        return f"agent_pos={pos}, agent_dir={int(base.agent_dir)}, step_count={getattr(base, 'step_count', '?')}"
    state = getattr(base, "state", getattr(base, "s", None))
    return f"{type(base).__name__}.state={state!r}" if state is not None else f"a {type(base).__name__} state"
