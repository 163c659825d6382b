"""What :class:`~sb3_dirpg.simulator.SimulatorWrapper` checks of an env's ``reset`` and ``step`` results while it is
being checked (its first reset and the self-check's steps), and how it copies observations of envs that reuse them.

gymnasium's passive env checker runs on each result (its errors and warnings are quoted in the message); a result the
search cannot use is refused with an :class:`EnvAPIError` naming the env and what to do: the old gym API (``reset``
returning the observation alone, a 4-tuple ``step``), an ``info`` that is not a dict, a reward or flag that is not a
scalar, an ``info["is_success"]`` that is not a bool, and an observation whose structure or shape is not the one its
observation space declares. gymnasium only warns about the last ones, alike for a wrong shape and for a value outside
a Box's bounds (which the search handles); SB3's ``check_env`` refuses them but steps the env with random actions that
ignore action masks, and also refuses float32 rewards, numpy-bool flags and float64 observations of a float32 Box.
"""

from __future__ import annotations

import copy
import inspect
import re
import warnings
from collections.abc import Sequence
from itertools import combinations
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils.passive_env_checker import data_shares_objects, env_reset_passive_checker, env_step_passive_checker

from sb3_dirpg.simulator.cloners import env_name

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: the most observations compared pairwise for the aliasing check
ALIASING_WINDOW = 24


class EnvAPIError(ValueError):
    """An env's ``reset`` or ``step`` returned something the search cannot use; the message names the env and the fix."""


class _Returning:
    """Stands for an env whose ``reset`` or ``step`` returns a result already obtained, for gymnasium's passive checkers
    (which call the method themselves).

    :param observation_space: the env's observation space
    :param result: what the method returned
    """

    def __init__(self, observation_space: spaces.Space, result: Any) -> None:
        self.observation_space = observation_space
        self._result = result

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        """:param seed: unused
        :param options: unused
        :return: the result"""
        return self._result

    def step(self, action: Any) -> Any:
        """:param action: unused
        :return: the result"""
        return self._result


def gymnasium_findings(observation_space: spaces.Space, result: Any, method: str) -> list[str]:
    """Run gymnasium's passive checker of ``reset`` or ``step`` on a result.

    :param observation_space: the env's observation space
    :param result: what the method returned
    :param method: ``"reset"`` or ``"step"``
    :return: the checker's error and warnings, as text
    """
    returning = _Returning(observation_space, result)
    findings = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if method == "reset":
                env_reset_passive_checker(returning, seed=0)  # type: ignore[arg-type]
            else:
                env_step_passive_checker(returning, None)  # type: ignore[arg-type]
        except Exception as error:  # an AssertionError or gymnasium.error.Error: the checker refused the result
            findings.append(f"{type(error).__name__}: {error}")
    findings.extend(_ANSI.sub("", str(w.message)) for w in caught)
    return findings


def _refuse(env: gym.Env, method: str, result: Any, problem: str, advice: str) -> EnvAPIError:
    """:param env: the env
    :param method: ``"reset"`` or ``"step"``
    :param result: what the method returned
    :param problem: what is wrong
    :param advice: what to do
    :return: the error, with gymnasium's findings on the result"""
    findings = gymnasium_findings(env.observation_space, result, method)
    said = f" (gymnasium's passive env checker: {'; '.join(findings)})" if findings else ""
    return EnvAPIError(f"the env {env_name(env)}: {method}() {problem}; {advice}{said}")


def _describe(value: Any) -> str:
    """:param value: a value
    :return: its type, with the shape and dtype of an array"""
    if isinstance(value, np.ndarray):
        return f"a numpy array of shape {value.shape} and dtype {value.dtype}"
    return f"a {type(value).__name__}"


def reset_seed_problem(env: gym.Env) -> str | None:
    """:param env: an env whose ``reset(seed=..., options=...)`` raised a TypeError
    :return: why, when its ``reset`` takes no ``seed`` (the old gym API), else None"""
    try:
        parameters = inspect.signature(env.unwrapped.reset).parameters
    except (TypeError, ValueError):
        return None
    takes_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    if "seed" in parameters or takes_kwargs:
        return None
    return (
        f"the env {env_name(env)}: reset() takes no seed (the old gym API, which seeded with env.seed()); gymnasium's "
        "reset(*, seed=None, options=None) must call super().reset(seed=seed) and return (observation, info)"
    )


def check_reset_result(env: gym.Env, result: Any) -> None:
    """Refuse a ``reset`` result the search cannot use.

    :param env: the env (for its name and observation space)
    :param result: what ``env.reset(seed=...)`` returned
    :raises EnvAPIError: naming the env and what to do
    """
    if not (isinstance(result, tuple) and len(result) == 2):
        raise _refuse(
            env, "reset", result, f"returned {_describe(result)}, not the pair (observation, info)",
            "this is the old gym API, where reset() returned the observation alone: return `observation, {}` (gymnasium's "
            "reset(*, seed=None, options=None) -> (observation, info))",
        )  # fmt: skip
    obs, info = result
    if not isinstance(info, dict):
        raise _refuse(env, "reset", result, f"returned an info that is {_describe(info)}", "it must be a dict ({} when empty)")
    problem = observation_problem(obs, env.observation_space)
    if problem is not None:
        raise _refuse(env, "reset", result, f"returned an observation that does not fit: {problem}", _OBS_ADVICE)


_OBS_ADVICE = "make the env's observations match its observation_space (or declare the space the env returns)"


def check_step_result(env: gym.Env, result: Any) -> None:
    """Refuse a ``step`` result the search cannot use.

    :param env: the env (for its name and observation space)
    :param result: what ``env.step(action)`` returned
    :raises EnvAPIError: naming the env and what to do
    """
    if not isinstance(result, tuple) or len(result) != 5:
        if isinstance(result, tuple) and len(result) == 4:
            raise _refuse(
                env, "step", result, "returned 4 values (observation, reward, done, info): the old gym API",
                "gymnasium's step returns 5: (observation, reward, terminated, truncated, info); split done into terminated "
                "(the task ended) and truncated (a time limit cut the episode)",
            )  # fmt: skip
        got = f"a tuple of {len(result)}" if isinstance(result, tuple) else _describe(result)
        raise _refuse(
            env, "step", result, f"returned {got}", "it must return (observation, reward, terminated, truncated, info)"
        )
    obs, reward, terminated, truncated, info = result
    if not isinstance(info, dict):
        raise _refuse(env, "step", result, f"returned an info that is {_describe(info)}", "it must be a dict ({} when empty)")
    if not _is_real_scalar(reward):
        raise _refuse(
            env, "step", result, f"returned a reward that is {_describe(reward)}, not a number",
            "return a float (float(reward); reward.item() for a one-element array)",
        )  # fmt: skip
    for name, flag in (("terminated", terminated), ("truncated", truncated)):
        if not _is_flag(flag):
            raise _refuse(env, "step", result, f"returned {name} as {_describe(flag)}", "it must be a bool")
    if "is_success" in info and not is_bool(info["is_success"]):
        raise _refuse(env, "step", result, success_problem(info["is_success"]), SUCCESS_ADVICE)
    problem = observation_problem(obs, env.observation_space)
    if problem is not None:
        raise _refuse(env, "step", result, f"returned an observation that does not fit: {problem}", _OBS_ADVICE)


SUCCESS_ADVICE = (
    "it must be a bool or a numpy bool (SB3's convention; DirPG's stop='success' and success rates read it): "
    "set info['is_success'] = bool(...)"
)


def is_bool(value: Any) -> bool:
    """:param value: a value
    :return: whether it is a Python or numpy bool"""
    return value is True or value is False or type(value) is np.bool_


def success_problem(value: Any) -> str:
    """:param value: an ``info["is_success"]`` that is not a bool
    :return: what is wrong with it"""
    return f"returned info['is_success'] = {value!r}, which is {_describe(value)}, not a bool"


def _is_real_scalar(value: Any) -> bool:
    """:param value: a reward
    :return: whether it is a real number (Python or numpy, or a 0-d numeric array)"""
    if isinstance(value, (bool, int, float, np.number, np.bool_)):
        return not isinstance(value, (complex, np.complexfloating))
    if isinstance(value, np.ndarray):
        return value.ndim == 0 and value.dtype.kind in "biuf"
    return False


def _is_flag(value: Any) -> bool:
    """:param value: a terminated or truncated flag
    :return: whether it is a bool-like scalar (Python or numpy bool or integer, or a 0-d array of them)"""
    if isinstance(value, (bool, int, np.bool_, np.integer)):
        return True
    return isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "biu"


def observation_problem(obs: Any, space: spaces.Space, path: str = "observation") -> str | None:
    """Compare an observation's structure and shape with its space's (not its values: a Box's bounds are not checked).

    :param obs: an observation
    :param space: the observation space
    :param path: the name of the observation, extended with ``[key]`` for parts of Dict and Tuple observations
    :return: what does not fit, or None
    """
    if isinstance(space, spaces.Dict):
        if not isinstance(obs, dict):
            return f"{path} is {_describe(obs)}, but the observation space is a Dict with keys {list(space.spaces)}"
        if set(obs) != set(space.spaces):
            return f"{path} has the keys {sorted(map(str, obs))}, but its Dict space has {sorted(map(str, space.spaces))}"
        for key, sub in space.spaces.items():
            problem = observation_problem(obs[key], sub, f"{path}[{key!r}]")
            if problem is not None:
                return problem
        return None
    if isinstance(space, spaces.Tuple):
        if not isinstance(obs, tuple) or len(obs) != len(space.spaces):
            return f"{path} is {_describe(obs)}, but the observation space is a Tuple of {len(space.spaces)}"
        for i, (part, sub) in enumerate(zip(obs, space.spaces)):
            problem = observation_problem(part, sub, f"{path}[{i}]")
            if problem is not None:
                return problem
        return None
    if isinstance(space, spaces.Discrete):
        if not (np.ndim(obs) == 0 and np.issubdtype(np.asarray(obs).dtype, np.integer)):
            return f"{path} is {_describe(obs)} ({_short(obs)}), but the Discrete space needs an integer"
        return None
    if isinstance(space, (spaces.Box, spaces.MultiBinary, spaces.MultiDiscrete)):
        try:
            array = np.asarray(obs)
        except ValueError:  # ragged nested lists
            return f"{path} is {_describe(obs)} that is not an array ({_short(obs)})"
        if array.shape != space.shape:
            return f"{path} has shape {array.shape}, but the observation space {space} has shape {space.shape}"
        if array.dtype.kind not in "biuf":
            return f"{path} holds {array.dtype} values, but the observation space {space} holds numbers"
    return None


def _short(value: Any) -> str:
    """:param value: a value
    :return: its repr, cut to 80 characters"""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def copy_observation(obs: Any) -> Any:
    """:param obs: an observation
    :return: a copy that shares no mutable data with it (numpy arrays copied, dicts and tuples rebuilt)"""
    kind = type(obs)
    if kind is np.ndarray:
        return obs.copy()
    if kind is dict:
        return {key: copy_observation(value) for key, value in obs.items()}
    if kind is tuple:
        return tuple(copy_observation(value) for value in obs)
    if isinstance(obs, (int, float, bool, str, np.generic, type(None))):
        return obs
    return copy.deepcopy(obs)


def shared_observations(observations: Sequence[Any]) -> tuple[int, int] | None:
    """Find two observations that share a mutable object (the same numpy buffer, dict, ...), with gymnasium's
    ``data_shares_objects``.

    :param observations: observations returned by an env, in order (the first :data:`ALIASING_WINDOW` are compared)
    :return: the indices of the first pair that shares an object, or None
    """
    window = list(observations[:ALIASING_WINDOW])
    for (i, first), (j, second) in combinations(enumerate(window), 2):
        if data_shares_objects(first, second):
            return i, j
    return None


def unsupported_observation_spaces(space: spaces.Space, path: str = "observation_space") -> list[tuple[str, spaces.Space]]:
    """:param space: an observation space
    :param path: its name, extended with ``[key]`` for parts of Dict and Tuple spaces
    :return: the parts that have no fixed shape (Text, Sequence, Graph, ...), which SB3's VecEnv cannot hold"""
    if isinstance(space, (spaces.Dict, spaces.Tuple)):
        parts = space.spaces.items() if isinstance(space, spaces.Dict) else enumerate(space.spaces)
        return [found for key, sub in parts for found in unsupported_observation_spaces(sub, f"{path}[{key!r}]")]
    return [(path, space)] if space.shape is None else []
