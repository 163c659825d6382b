"""What several test modules share: small gymnasium envs, DirPG models on them, and callbacks."""

from __future__ import annotations

import threading
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from minigrid.core.constants import DIR_TO_VEC
from stable_baselines3.common.callbacks import BaseCallback

from sb3_dirpg import DirPG


class SparseChainEnv(gym.Env):
    """``length`` binary decisions; reward 1 at the end only if every action was 1 (the paper's sparse example).

    Observation: one-hot of the step index. Optionally noisy: ``noise`` adds a reset-time offset to the reward.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, length: int = 6) -> None:
        self.length = length
        self.observation_space = spaces.Box(0.0, 1.0, (length + 1,), np.float32)
        self.action_space = spaces.Discrete(2)
        self.t = 0
        self.all_ones = True

    def _obs(self) -> np.ndarray:
        obs = np.zeros(self.length + 1, np.float32)
        obs[self.t] = 1.0
        return obs

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t, self.all_ones = 0, True
        return self._obs(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.all_ones = self.all_ones and int(action) == 1
        self.t += 1
        done = self.t >= self.length
        return self._obs(), float(done and self.all_ones), done, False, {}


class MaskedChainEnv(SparseChainEnv):
    """Three actions; action 2 is illegal at even steps and taking an illegal action raises.

    Reward: +1 per action 2 taken (so the best legal trajectory uses action 2 at every odd step).
    """

    def __init__(self, length: int = 4) -> None:
        super().__init__(length)
        self.action_space = spaces.Discrete(3)
        self.count = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        self.count = 0
        return super().reset(seed=seed, options=options)

    def legal(self) -> np.ndarray:
        return np.array([True, True, self.t % 2 == 1])

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        if not self.legal()[int(action)]:
            raise AssertionError(f"illegal action {action} at step {self.t}")
        self.t += 1
        reward = float(int(action) == 2)
        return self._obs(), reward, self.t >= self.length, False, {}


class NoTimeLimitEnv(SparseChainEnv):
    """Never terminates and has no time limit."""

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t = min(self.t + 1, self.length)
        return self._obs(), 0.0, False, False, {}


_HIDDEN_STATE = {"calls": 0}


class LeakyEnv(SparseChainEnv):
    """Keeps part of its state outside the instance, so no cloner can restore it."""

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        _HIDDEN_STATE["calls"] += 1
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward + 0.01 * _HIDDEN_STATE["calls"], terminated, truncated, info


class CounterEnv(gym.Env):
    """Custom env with in-place mutated list and array, RNG in step and a large static table."""

    def __init__(self) -> None:
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(3,), dtype=np.float64)
        self.action_space = spaces.Discrete(3)
        self.P = {i: list(range(10)) for i in range(200)}
        self.history: list[int] = []
        self.x = np.zeros(3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.history = []
        self.x = self.np_random.normal(size=3)
        return self.x.copy(), {}

    def step(self, action):
        self.history.append(int(action))
        self.x[int(action)] += self.np_random.normal()
        reward = float(len(self.history) * self.x.sum())
        return self.x.copy(), reward, False, len(self.history) >= 50, {}


class LockedEnv(CounterEnv):
    """Cannot be deepcopied: holds a lock."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def step(self, action):
        with self.lock:
            return super().step(action)


class PoisonedChainEnv(SparseChainEnv):
    """A chain whose reward or observation turns NaN (or inf) at step ``at`` (0: the observation of reset)."""

    def __init__(self, length: int = 4, what: str = "reward", at: int = 2, value: float = float("nan")) -> None:
        super().__init__(length)
        self.what, self.at, self.value = what, at, value

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        obs, info = super().reset(seed=seed, options=options)
        if self.what == "obs" and self.at == 0:
            obs[0] = self.value
        return obs, info

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = super().step(action)
        if self.t == self.at:
            if self.what == "reward":
                reward = self.value
            else:
                obs[0] = self.value
        return obs, reward, terminated, truncated, info


class MaskableChainEnv(MaskedChainEnv):
    """:class:`MaskedChainEnv` with sb3-contrib's ``action_masks()`` on the env itself (no wrapper needed)."""

    def action_masks(self) -> np.ndarray:
        return self.legal()


def chain(length: int = 6) -> gym.Env:
    """:param length: chain length
    :return: a sparse chain cut at ``length`` steps"""
    # looked up at call time: importing rl_zoo3 replaces gymnasium's TimeLimit by a subclass, and an env built with the
    # class bound before that pickles by value into worker processes, where its reset fails with "super(type, obj)"
    return gym.wrappers.TimeLimit(SparseChainEnv(length), length)


def small_dirpg(env: gym.Env | None = None, **kwargs: Any) -> DirPG:
    """:param env: the env (default: a chain of 6)
    :param kwargs: DirPG arguments that replace the small defaults
    :return: a small, seeded DirPG model"""
    settings: dict[str, Any] = dict(
        seed=0, search_budget=64, learning_rate=1e-2, batch_episodes=8, policy_kwargs=dict(net_arch=[16])
    )
    settings.update(kwargs)
    return DirPG("MlpPolicy", env or chain(), **settings)


class StopAfter(BaseCallback):
    """Stops training at its ``n_calls``-th call."""

    def __init__(self, n_calls: int) -> None:
        super().__init__()
        self.limit = n_calls

    def _on_step(self) -> bool:
        return self.n_calls < self.limit


def face(env: gym.Env, target: tuple[int, int]) -> None:
    """Put a MiniGrid agent on an empty cell next to ``target``, facing it.

    :param env: a (wrapped) MiniGrid env
    :param target: the cell to face
    """
    base = env.unwrapped
    for direction, vec in enumerate(DIR_TO_VEC):
        dx, dy = int(vec[0]), int(vec[1])
        x, y = target[0] - dx, target[1] - dy
        if 0 <= x < base.width and 0 <= y < base.height and base.grid.get(x, y) is None:
            base.agent_pos, base.agent_dir = (x, y), direction
            return
    raise AssertionError(f"no empty cell next to {target}")


def cells_of(env: gym.Env, kind: str) -> list[tuple[int, int]]:
    """:param env: a (wrapped) MiniGrid env
    :param kind: a world object type (``"door"``, ``"key"``, ``"goal"``, ...)
    :return: the cells holding that kind of object, row by row"""
    grid = env.unwrapped.grid
    return [(k % grid.width, k // grid.width) for k, cell in enumerate(grid.grid) if cell is not None and cell.type == kind]


_HIDDEN_COUNTS: dict[int, int] = {}


class DefectChainEnv(gym.Env):
    """A small seeded env with defects that can be switched on one by one, for the misuse tests.

    ``length`` steps; at reset the env draws a target action per step from ``np_random`` (and a small reward bonus); a
    step pays 1 when the action hits the step's target, plus the bonus, plus Gaussian noise from ``np_random`` when
    ``stochastic``. The observation is the one-hot step index followed by the one-hot target of the step.

    Defects (names in ``defects``):

    * ``aliasing``: every observation is the same numpy array, rewritten in place;
    * ``hidden_state``: the reward depends on a step counter kept outside the env (no snapshot can restore it);
    * ``unseeded_reset``: reset draws the target and the bonus from a generator made once, unseeded;
    * ``obs_shape``: the observation has one element too many;
    * ``obs_float64``, ``obs_list``: the observation is a float64 array, or a list, for a float32 Box;
    * ``reward_array``: the reward is an array of shape (1,);
    * ``reward_numpy``, ``flags_numpy``: the reward is a numpy float, the flags numpy bools;
    * ``info_none``: step returns None for info;
    * ``old_step``: step returns the old gym 4-tuple (observation, reward, done, info);
    * ``old_reset``: reset returns the observation alone;
    * ``success_str``: the last step says ``info["is_success"] = "yes"`` or ``"no"``.

    :param length: number of steps
    :param n_actions: number of actions
    :param defects: the defects to switch on
    :param stochastic: add reward noise drawn from ``np_random`` at every step
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, length: int = 4, n_actions: int = 2, defects: frozenset[str] = frozenset(), stochastic: bool = False):
        self.length, self.n_actions, self.defects, self.stochastic = length, n_actions, frozenset(defects), stochastic
        self.horizon = length  # every episode ends after ``length`` steps (what SimulatorWrapper.horizon reads)
        self.observation_space = spaces.Box(0.0, 1.0, (length + 1 + n_actions,), np.float32)
        self.action_space = spaces.Discrete(n_actions)
        self.t = 0
        self.target = np.zeros(length, dtype=np.int64)
        self.bonus = 0.0
        self._buffer = np.zeros(self.observation_space.shape, np.float32)
        self._own_rng = np.random.default_rng()  # unseeded: what the ``unseeded_reset`` defect draws from

    def _obs(self) -> Any:
        obs = self._buffer if "aliasing" in self.defects else np.zeros(self.observation_space.shape, np.float32)
        obs[:] = 0.0
        obs[self.t] = 1.0
        if self.t < self.length:
            obs[self.length + 1 + int(self.target[self.t])] = 1.0
        if "obs_shape" in self.defects:
            return np.append(obs, np.float32(0.0))
        if "obs_float64" in self.defects:
            return obs.astype(np.float64)
        if "obs_list" in self.defects:
            return obs.tolist()
        return obs

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        super().reset(seed=seed)
        rng = self._own_rng if "unseeded_reset" in self.defects else self.np_random
        self.t = 0
        self.target = rng.integers(self.n_actions, size=self.length)
        self.bonus = float(rng.uniform(0.0, 0.01))
        _HIDDEN_COUNTS[id(self)] = 0
        obs = self._obs()
        return obs if "old_reset" in self.defects else (obs, {})

    def step(self, action: int) -> Any:
        reward = float(int(action) == int(self.target[self.t])) + self.bonus
        if self.stochastic:
            reward += 0.1 * float(self.np_random.normal())
        if "hidden_state" in self.defects:
            _HIDDEN_COUNTS[id(self)] = _HIDDEN_COUNTS.get(id(self), 0) + 1
            reward += 0.001 * _HIDDEN_COUNTS[id(self)]
        self.t += 1
        terminated = self.t >= self.length
        info: Any = {}
        if "success_str" in self.defects and terminated:
            info["is_success"] = "yes" if reward > 1.0 else "no"
        if "info_none" in self.defects:
            info = None
        out_reward: Any = reward
        if "reward_array" in self.defects:
            out_reward = np.array([reward])
        elif "reward_numpy" in self.defects:
            out_reward = np.float64(reward)
        flags: tuple[Any, Any] = (terminated, False)
        if "flags_numpy" in self.defects:
            flags = (np.bool_(terminated), np.bool_(False))
        if "old_step" in self.defects:
            return self._obs(), out_reward, terminated, info
        return self._obs(), out_reward, *flags, info
