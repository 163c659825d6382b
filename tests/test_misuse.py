"""Misuse that used to corrupt training silently is fixed or refused, and misuse that used to fail deep inside a library
is refused at construction with an error that names the env or the argument and what to do (issue 23)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import minigrid  # noqa: F401  (registers the MiniGrid ids)
import numpy as np
import pytest
import torch as th
from gymnasium import spaces

from sb3_dirpg import DirPG
from sb3_dirpg.baselines import Reinforce
from sb3_dirpg.common.vec_simulator import HeuristicError
from sb3_dirpg.simulator import EnvAPIError, NondeterministicResetWarning, SimulatorWrapper
from tests.helpers import DefectChainEnv, SparseChainEnv, chain

SETTINGS: dict[str, Any] = dict(
    search_budget=16, batch_episodes=4, policy_kwargs=dict(net_arch=[8]), seed=0, learning_rate=1e-2
)


def model(env: gym.Env | str, **kwargs: Any) -> DirPG:
    """:param env: the env
    :param kwargs: DirPG arguments that replace the small defaults
    :return: a small, seeded DirPG model"""
    return DirPG("MlpPolicy", env, **{**SETTINGS, **kwargs})


def params(model: DirPG) -> th.Tensor:
    """:param model: a model
    :return: its parameters as one vector"""
    return th.nn.utils.parameters_to_vector(model.policy.parameters()).detach()


def trained(env: gym.Env, steps: int = 300, **kwargs: Any) -> DirPG:
    """:param env: the env
    :param steps: interactions to train for
    :param kwargs: DirPG arguments
    :return: the model, trained"""
    m = model(env, **kwargs)
    m.learn(steps)
    return m


def defect(*names: str, length: int = 4, stochastic: bool = True) -> DefectChainEnv:
    """:param names: the defects
    :param length: number of steps
    :param stochastic: reward noise from ``np_random``
    :return: the env"""
    return DefectChainEnv(length, 2, frozenset(names), stochastic=stochastic)


# -- silent, with wrong results: now fixed or refused ----------------------------------------------------------------


def test_aliased_observations_train_to_the_same_parameters_as_copied_ones() -> None:
    clean, aliasing = trained(defect()), trained(defect("aliasing"))
    assert aliasing.simulator.simulators[0].copy_observations  # the self-check saw the array come back
    assert not clean.simulator.simulators[0].copy_observations  # envs that return new arrays are not copied
    assert aliasing.num_timesteps == clean.num_timesteps
    assert th.equal(params(aliasing), params(clean))


@pytest.mark.integration
def test_aliased_observations_in_a_search_worker_give_the_same_run() -> None:
    runs = []
    for n_workers in (0, 1):
        m = trained(defect("aliasing"), n_workers=n_workers)
        runs.append((params(m), m.num_timesteps))
        m.close_workers()
    assert runs[0][1] == runs[1][1]
    assert th.allclose(runs[0][0], runs[1][0], atol=1e-6)


class Bound:
    """An admissible bound on the chain's return-to-go (at most 1.01 per step left); ``steps`` makes it also step the
    wrapper it is given at step 1, against the heuristic contract."""

    def __init__(self, steps: bool = False) -> None:
        self.steps = steps

    def __call__(self, env: gym.Env) -> float:
        base = env.unwrapped
        left = base.length - base.t
        if self.steps and base.t == 1:
            env.step(0)
        return 1.01 * left

    def __repr__(self) -> str:
        return f"Bound(steps={self.steps})"


def test_a_heuristic_that_steps_the_wrapper_does_not_change_the_search() -> None:
    kwargs = dict(priority={"astar": {"alpha": 0.2}}, search_budget=24)
    results = []
    for steps in (False, True):
        m = model(defect(length=5), heuristic=Bound(steps), **kwargs)
        found = m.search([1, 2, 3, 4])
        results.append([(ep.length_opt, ep.return_opt, ep.d_dir, ep.interactions, ep.trajectories) for ep in found.episodes])
    assert [r[0] for r in results[1]] == [5, 5, 5, 5]  # every episode lasts its 5 steps
    assert results[1] == results[0]


def step_behind(env: gym.Env) -> float:
    """A heuristic that steps the unwrapped env, behind the SimulatorWrapper."""
    if env.unwrapped.t < env.unwrapped.length - 1:
        env.unwrapped.step(0)
    return 10.0


def write_attribute(env: gym.Env) -> float:
    """A heuristic that writes an attribute of the env."""
    env.unwrapped.bonus = 0.5
    return 10.0


def draw_random(env: gym.Env) -> float:
    """A heuristic that draws from the env's random generator."""
    return 10.0 + float(env.unwrapped.np_random.uniform(0.0, 0.001))


@pytest.mark.parametrize(
    "heuristic, what",
    [
        (step_behind, r"env.unwrapped.t \(expected 0, got 1\)"),
        (write_attribute, r"env.unwrapped.bonus \(expected 0.00"),
        (draw_random, "np_random"),
    ],
)
def test_a_heuristic_that_changes_the_env_is_refused_at_construction(heuristic: Any, what: str) -> None:
    with pytest.raises(HeuristicError, match=rf"{heuristic.__name__}.* changed the env DefectChainEnv.*{what}") as error:
        model(defect(), heuristic=heuristic, priority={"astar": {"alpha": 0.2}})
    assert "heuristics.md" in str(error.value)


def test_a_non_bool_is_success_is_refused_at_construction_naming_the_env() -> None:
    with pytest.raises(EnvAPIError, match=r"DefectChainEnv.*info\['is_success'\] = '(yes|no)'.*not a bool"):
        model(defect("success_str"), stop="success")


def test_a_non_bool_is_success_is_refused_while_searching() -> None:
    # a wrapper built without the self-check: the search's own check sees the value when an episode ends
    m = model(SimulatorWrapper(defect("success_str"), self_check=False), stop="success")
    with pytest.raises(ValueError, match=r"DefectChainEnv.*info\['is_success'\] = '(yes|no)'"):
        m.learn(100)
    assert m._n_updates == 0


class NumpySuccessEnv(DefectChainEnv):
    """Reports ``info["is_success"]`` as a numpy bool: success when the episode hit every target."""

    def step(self, action: int) -> Any:
        self.hits = (self.hits if self.t else 0) + int(int(action) == int(self.target[self.t]))
        obs, reward, terminated, truncated, info = super().step(action)
        if terminated:
            info["is_success"] = np.bool_(self.hits == self.length)
        return obs, reward, terminated, truncated, info


def test_numpy_bool_is_success_is_read_as_success() -> None:
    m = trained(NumpySuccessEnv(3, 2), steps=300, stop="success")
    assert m.simulator.reports_success and len(m.ep_success_buffer) > 0
    assert set(m.ep_success_buffer) <= {0.0, 1.0} and max(m.ep_success_buffer) == 1.0


class OffsetChainEnv(SparseChainEnv):
    """The sparse chain with the actions 5 and 6 (``Discrete(2, start=5)``); any other action raises."""

    def __init__(self, length: int = 4) -> None:
        super().__init__(length)
        self.action_space = spaces.Discrete(2, start=5)

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        assert self.action_space.contains(action), f"action {action} is not in {self.action_space}"
        return super().step(int(action) - 5)


def test_a_discrete_space_with_a_start_is_refused_naming_the_wrapper() -> None:
    with pytest.raises(ValueError, match=r"starts at 0, got Discrete\(2, start=5\).*TransformAction") as error:
        model(gym.wrappers.TimeLimit(OffsetChainEnv(4), 4))
    assert "lambda a: a + 5" in str(error.value) and "Discrete(2)" in str(error.value)


def test_the_suggested_wrapper_trains_and_predicts_actions_the_env_takes() -> None:
    def offset() -> gym.Env:
        env = gym.wrappers.TimeLimit(OffsetChainEnv(4), 4)
        return gym.wrappers.TransformAction(env, lambda a: a + 5, spaces.Discrete(2))

    m = trained(offset(), steps=3_000, search_budget=32)
    env = offset()
    obs, _ = env.reset(seed=0)
    total, done = 0.0, False
    while not done:
        action, _ = m.predict(obs, deterministic=True)
        assert int(action) in (0, 1)
        obs, reward, terminated, truncated, _ = env.step(int(action))
        total, done = total + float(reward), terminated or truncated
    assert total == 1.0  # the trained policy takes 6 (index 1) at every step


def test_an_env_whose_reset_ignores_its_seed_is_warned_about_at_construction() -> None:
    with pytest.warns(NondeterministicResetWarning, match=r"DefectChainEnv: reset\(seed=0\) twice.*n_workers.*np_random"):
        m = model(defect("unseeded_reset"))
    m.learn(100)  # the search itself still works
    with warnings.catch_warnings():
        warnings.simplefilter("error", NondeterministicResetWarning)
        model(defect())  # a seeded reset passes


def test_max_episode_steps_beyond_the_env_limit_warns_and_reports_the_effective_horizon() -> None:
    with pytest.warns(UserWarning, match=r"max_episode_steps=10 is larger than the 4 steps .*SparseChainEnv.*TimeLimit"):
        m = model(chain(4), max_episode_steps=10)
    assert m.horizon == 4 and m.search_config().horizon == 4
    assert all(ep.length_opt == 4 for ep in m.search([0, 1]).episodes)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert model(chain(4), max_episode_steps=3).horizon == 3  # a shorter cut is what max_episode_steps is for


# -- confusing errors: now refused at construction, naming the env or the argument ---------------------------------


@pytest.mark.parametrize(
    "names, match",
    [
        (("obs_shape",), r"reset\(\) returned an observation .* shape \(8,\), but the observation space .* has shape \(7,\)"),
        (("reward_array",), r"step\(\) returned a reward that is a numpy array of shape \(1,\)"),
        (("info_none",), r"step\(\) returned an info that is a NoneType; it must be a dict"),
        (("old_step",), r"step\(\) returned 4 values .*old gym API.*terminated.*truncated"),
        (("old_reset",), r"reset\(\) returned a numpy array .*not the pair \(observation, info\).*old gym API"),
    ],
)
def test_env_output_that_breaks_the_api_is_refused_at_construction(names: tuple[str, ...], match: str) -> None:
    with pytest.raises(EnvAPIError, match=rf"the env DefectChainEnv: {match}"):
        model(defect(*names))


def test_an_old_api_step_is_named_also_behind_a_wrapper_that_unpacks_it() -> None:
    # TimeLimit unpacks five values and fails first; the wrapper asks the unwrapped env and names the old API
    with pytest.raises(EnvAPIError, match="old gym API") as error:
        model(gym.wrappers.TimeLimit(defect("old_step"), 4))
    assert isinstance(error.value.__cause__, ValueError)  # the wrapper's "not enough values to unpack"


class SeedlessResetEnv(SparseChainEnv):
    """The old gym API's ``reset(self)``, which takes no seed."""

    def reset(self) -> tuple[np.ndarray, dict]:  # type: ignore[override]
        return super().reset()


def test_a_reset_without_a_seed_parameter_is_named_the_old_api() -> None:
    with pytest.raises(EnvAPIError, match=r"SeedlessResetEnv: reset\(\) takes no seed .*super\(\).reset\(seed=seed\)"):
        model(gym.wrappers.TimeLimit(SeedlessResetEnv(4), 4))


@pytest.mark.parametrize("given", ["object", "id"])
def test_a_raw_minigrid_env_names_make_minigrid_env(given: str) -> None:
    env = gym.make("MiniGrid-Empty-5x5-v0") if given == "object" else "MiniGrid-Empty-5x5-v0"
    with pytest.raises(ValueError, match=r"MiniGrid-Empty-5x5-v0.*\['mission'\].*sb3_dirpg.envs.make_minigrid_env"):
        DirPG("MultiInputPolicy", env)


def test_no_env_is_refused_at_construction_and_loading_without_one_still_works(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"DirPG: env is None.*DirPG.load\(path, env=env\)"):
        DirPG("MlpPolicy", None)
    saved = trained(chain(4), steps=100)
    saved.save(tmp_path / "model.zip")
    loaded = DirPG.load(tmp_path / "model.zip")
    assert loaded.env is None and th.equal(params(loaded), params(saved))


@pytest.mark.parametrize("algo", [DirPG, Reinforce])
def test_a_string_learning_rate_is_quoted(algo: type) -> None:
    extra = {"n_rollouts": 2} if algo is Reinforce else {}
    with pytest.raises(ValueError, match=rf"{algo.__name__}: learning_rate .*got '1e-3' of type str.*1.0e-3"):
        algo("MlpPolicy", chain(4), learning_rate="1e-3", **extra)


def broken(env: gym.Env) -> float:
    """A heuristic that reads an attribute the env does not have."""
    return env.unwrapped.no_such_attribute


def test_a_heuristic_that_raises_is_named_with_its_cause_at_construction() -> None:
    with pytest.raises(HeuristicError, match=r"heuristic <function broken .* raised AttributeError .*DefectChainEnv") as error:
        model(defect(), heuristic=broken, priority={"astar": {"alpha": 0.2}})
    assert isinstance(error.value.__cause__, AttributeError)


class LoggingChainEnv(SparseChainEnv):
    """The sparse chain, writing every step to a log file it keeps open (so it can be neither copied nor pickled)."""

    def __init__(self, path: Path, length: int = 4) -> None:
        super().__init__(length)
        self.log = open(path, "w")

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.log.write(f"{action}\n")
        return super().step(action)


def test_an_env_holding_an_open_file_names_n_workers_0_and_trains_in_process(tmp_path: Path) -> None:
    def logging_env() -> SimulatorWrapper:
        return SimulatorWrapper(gym.wrappers.TimeLimit(LoggingChainEnv(tmp_path / "log.txt", 4), 4), cloner="replay")

    with pytest.raises(ValueError, match=r"n_workers=2 starts search worker processes.*LoggingChainEnv.*n_workers=0"):
        model(logging_env(), n_workers=2)
    with pytest.warns(UserWarning, match=r"LoggingChainEnv cannot be deep-copied .*take turns at the 4 episodes"):
        logging = trained(logging_env())
    plain = trained(SimulatorWrapper(chain(4), cloner="replay"))  # the same chain, copied for each episode
    assert len(logging.simulator.simulators) == 1 and len(plain.simulator.simulators) == 4
    assert th.equal(params(logging), params(plain))
