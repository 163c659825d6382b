"""Adapts the sub-envs of an SB3 ``VecEnv`` to the search's batch-simulator protocol."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv, VecEnvWrapper, VecMonitor, VecTransposeImage

from sb3_dirpg.search.protocols import Heuristic, Transitions
from sb3_dirpg.simulator import SimulatorWrapper, strip_monitor
from sb3_dirpg.simulator.cloners import env_name

# VecEnv wrappers that only observe (or transform observations statelessly) and are safe to bypass or replay
_STATELESS_VEC_WRAPPERS = (VecMonitor, VecTransposeImage)


def _vec_wrappers(venv: VecEnv) -> list[VecEnvWrapper]:
    layers = []
    while isinstance(venv, VecEnvWrapper):
        layers.append(venv)
        venv = venv.venv
    return layers


def check_vec_env(venv: VecEnv, algo: str) -> None:
    """Refuse VecEnv types and wrappers the search cannot use correctly, with a message that says what to do.

    :param venv: the training VecEnv
    :param algo: name of the algorithm, for messages
    """
    for layer in _vec_wrappers(venv):
        if not isinstance(layer, _STATELESS_VEC_WRAPPERS):
            raise ValueError(
                f"{algo} cannot use the VecEnv wrapper {type(layer).__name__}: the search steps the sub-envs from snapshots, "
                "so wrappers that keep running statistics or history (VecNormalize, VecFrameStack, ...) would go stale. "
                "Apply per-env gymnasium wrappers instead (e.g. gymnasium.wrappers.FrameStackObservation), "
                "or normalise inside the policy."
            )
    base = venv.unwrapped
    if isinstance(base, SubprocVecEnv):
        raise ValueError(
            f"{algo} keeps simulator snapshots in the training process and cannot search inside SubprocVecEnv workers; "
            "use DummyVecEnv (make_vec_env(..., vec_env_cls=DummyVecEnv)). The number of episodes searched together "
            "is set by batch_episodes, independently of n_envs."
        )
    if not isinstance(base, DummyVecEnv):
        raise ValueError(f"{algo} needs a DummyVecEnv (got {type(base).__name__}) so that it can snapshot the sub-envs")


class VecSimulator:
    """Batch simulator over a list of :class:`~sb3_dirpg.simulator.SimulatorWrapper` instances.

    Episode ``e`` always runs on simulator ``e % len(simulators)`` (a snapshot belongs to the wrapper that made it).
    Every step starts from a snapshot, so one simulator serves any number of episodes; the restore is skipped when the
    snapshot is the one this simulator took last (nothing has stepped it since), which is how a search usually goes
    on down a trajectory. A step that ends an episode
    reports success when the env's info says ``is_success`` (SB3's convention); ``reports_success`` tells whether
    any episode end so far carried that key.

    :param simulators: the simulators
    :param heuristic: ``heuristic(env) -> upper`` or ``(lower, upper)`` bound on the discounted return-to-go from the
        env's current state, or None
    """

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
        self._float_obs_keys = _float_observation_keys(simulators[0].observation_space)
        self._current: list[Any] = [None] * len(self.simulators)  # per simulator: the snapshot of its current state

    @classmethod
    def from_vec_env(cls, venv: VecEnv, heuristic: Heuristic | None = None, algo: str = "DirPG") -> VecSimulator:
        """Wrap every sub-env of a DummyVecEnv (without its Monitor) in a SimulatorWrapper.

        :param venv: the training VecEnv
        :param heuristic: see the class docstring
        :param algo: name of the algorithm, for messages
        :return: the batch simulator
        """
        return cls(vec_env_simulators(venv, algo), heuristic)

    def ensure_simulators(self, n: int) -> None:
        """Give every one of ``n`` concurrently searched episodes a simulator of its own (deep copies of the first).

        Restoring a snapshot of the episode a simulator last ran is cheaper (cloners skip unchanged parts, and the
        env's data stays in cache) than switching between episodes at every step.

        :param n: number of episodes searched together
        """
        while len(self.simulators) < n:
            first = self.simulators[0]
            # a deep copy of an env chain that passed the self-check needs no check of its own
            self.simulators.append(SimulatorWrapper(copy.deepcopy(first.env), cloner=first.cloner_spec, self_check=False))
            self._current.append(None)

    @property
    def horizon(self) -> int | None:
        """:return: the episode step limit of the simulators (TimeLimit or MiniGrid ``max_steps``), or None"""
        return self.simulators[0].horizon

    def _bounds(self, env: SimulatorWrapper) -> tuple[float, float]:
        value = self.heuristic(env)
        if type(value) is tuple and len(value) == 2 and type(value[0]) is float and type(value[1]) is float:
            if value[0] <= value[1]:  # the usual answer, checked in full below when it is anything else (NaN included)
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
            bounds = self._bounds(env) if self.heuristic is not None else (-np.inf, np.inf)
            snapshot = current[index] = env.snapshot()
            rows.append((obs, 0.0, False, env.action_masks(), snapshot, bounds))
        trans = self._transitions(rows, [False] * len(rows))
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
        for snapshot, action, episode in zip(snapshots, actions.tolist(), episodes.tolist()):
            index = episode % n_sims
            env = self.simulators[index]
            if current[index] is not snapshot:
                env.restore(snapshot)
            current[index] = None
            obs, reward, terminated, truncated, info = env.step(action + self._start)
            if terminated or truncated:
                rows.append((obs, float(reward), True, self._all_legal, None, no_bounds))
                if "is_success" in info:
                    self.reports_success = True
                success.append(bool(info.get("is_success", False)))
                continue
            success.append(False)
            bounds = self._bounds(env) if self.heuristic is not None else no_bounds
            snapshot = current[index] = env.snapshot()
            rows.append((obs, float(reward), False, env.action_masks(), snapshot, bounds))
        trans = self._transitions(rows, success)
        self._check_finite(rows, trans.rewards, episodes, "after a step")
        return trans


def vec_env_simulators(venv: VecEnv, algo: str = "DirPG") -> list[SimulatorWrapper]:
    """:param venv: the training VecEnv (checked with :func:`check_vec_env`)
    :param algo: name of the algorithm, for messages
    :return: a SimulatorWrapper around every sub-env (without its Monitor)"""
    check_vec_env(venv, algo)
    sims = []
    for env in venv.unwrapped.envs:
        inner = strip_monitor(env)
        sims.append(inner if isinstance(inner, SimulatorWrapper) else SimulatorWrapper(inner))
    return sims


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
