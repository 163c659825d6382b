"""Input that would poison learning is refused with an error that names its source; settings that would silently do
nothing are refused or warned about; misuse gets a clear error."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from sb3_contrib.common.wrappers import ActionMasker
from stable_baselines3 import PPO

from sb3_dirpg import DirPG
from sb3_dirpg.common.vec_simulator import VecSimulator
from sb3_dirpg.dirpg import HeuristicViolationWarning
from sb3_dirpg.simulator import SimulatorWrapper
from tests.helpers import MaskedChainEnv, PoisonedChainEnv, chain, small_dirpg

GUARD_SETTINGS = dict(search_budget=16, batch_episodes=4, policy_kwargs=dict(net_arch=[8]))


def small_model(env: gym.Env | None = None, **kwargs) -> DirPG:
    return small_dirpg(env or chain(4), **{**GUARD_SETTINGS, **kwargs})


# -- non-finite rewards and observations ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "what, at, value, match",
    [
        ("reward", 2, float("nan"), "non-finite reward"),
        ("reward", 4, float("inf"), "non-finite reward"),
        ("obs", 1, float("nan"), "non-finite observation"),
        ("obs", 0, float("nan"), r"non-finite observation .* at reset"),
    ],
)
def test_non_finite_env_output_is_refused_naming_the_env(what: str, at: int, value: float, match: str) -> None:
    env = gym.wrappers.TimeLimit(PoisonedChainEnv(4, what=what, at=at, value=value), 4)
    model = small_model(env)
    with pytest.raises(ValueError, match=match) as error:
        model.learn(200)
    assert "PoisonedChainEnv" in str(error.value)
    assert model._n_updates == 0  # refused before any update


def test_finite_output_and_integer_observations_pass_the_check() -> None:
    sim = VecSimulator([SimulatorWrapper(gym.make("FrozenLake-v1"))])
    assert sim._float_obs_keys == []
    trans = sim.step(sim.reset([0, 1]).snapshots, np.array([1, 2]), np.array([0, 1]))
    assert np.isfinite(trans.rewards).all()


# -- heuristic outputs ---------------------------------------------------------------------------------------


class Constant:
    """A heuristic that always returns the same value."""

    def __init__(self, value: object) -> None:
        self.value = value

    def __call__(self, env: gym.Env) -> object:
        return self.value

    def __repr__(self) -> str:
        return f"Constant({self.value!r})"


@pytest.mark.parametrize(
    "value, problem",
    [
        ("abc", "is not a number"),
        ("1.0", "is not a number"),
        ([1.0], "is not a number"),
        (float("nan"), "is NaN"),
        ((0.0, float("nan")), "is NaN"),
        ((2.0, 1.0), "lower > upper"),
    ],
)
def test_bad_heuristic_output_names_the_heuristic_and_the_env(value: object, problem: str) -> None:
    with pytest.raises(ValueError, match=problem) as error:  # at construction, where the heuristic is first checked
        small_model(heuristic=Constant(value)).learn(200)
    assert "Constant(" in str(error.value) and "SparseChainEnv" in str(error.value)


def test_good_heuristic_outputs_are_accepted() -> None:
    for value in (1.0, np.float32(1.0), 3, (0.0, 1.0), (-np.inf, np.inf)):
        small_model(heuristic=Constant(value)).learn(100)


# -- runtime admissibility check -------------------------------------------------------------------------------


class ZeroBound:
    """Deliberately inadmissible: says no reward is left, while the all-ones trajectory of the chain earns 1."""

    def __call__(self, env: gym.Env) -> float:
        return 0.0

    def __repr__(self) -> str:
        return "ZeroBound()"


def test_inadmissible_heuristic_warns_once_and_stops_pruning() -> None:
    model = small_model(chain(3), heuristic=ZeroBound(), search_budget=32)
    assert model.search_config().prune
    with pytest.warns(UserWarning, match=r"ZeroBound\(\) is not admissible.*depth \d.*by 1.*pruning is switched off") as seen:
        model.learn(1_500)
    assert sum("not admissible" in str(w.message) for w in seen) == 1
    assert model.heuristic_violation is not None and not model.search_config().prune
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning, neither in this learn nor in the next
        model.learn(500, reset_num_timesteps=False)


def test_a_violated_bound_is_an_error_under_the_warning_filter() -> None:
    """``HeuristicViolationWarning`` is its own category: the warning filter makes it an error (what
    ``strict_heuristic`` did), leaving other warnings alone."""
    model = small_model(chain(3), heuristic=ZeroBound(), search_budget=32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", HeuristicViolationWarning)
        with pytest.raises(HeuristicViolationWarning, match=r"ZeroBound\(\) is not admissible"):
            model.learn(1_500)


def test_search_reports_the_depth_and_gap_of_a_violation() -> None:
    model = small_model(chain(3), heuristic=Constant((0.0, 0.25)), gamma=0.5)
    config = model.search_config(prune=False, stop="budget", budget=200)
    result = model.search([0], config=config, rng=np.random.default_rng(0))
    (ep,) = result.episodes
    # the all-ones trajectory (reward 1 at its third step) is found by the exhaustive search; from the root the
    # realised return-to-go is 0.5**2 = 0.25 (no violation), from depth 1 it is 0.5 and from depth 2 it is 1
    assert ep.bound_gap_depth == 2 and ep.bound_gap == pytest.approx(0.75)


def test_admissible_heuristic_gives_no_warning() -> None:
    model = small_model(chain(3), heuristic=Constant(1.0), search_budget=32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.learn(1_500)
    assert model.heuristic_violation is None and model.search_config().prune


def test_negative_epsilon_checks_the_lower_bound() -> None:
    model = small_model(chain(3), heuristic=Constant((0.5, 1.0)), epsilon=-1.0, search_budget=32)
    with pytest.warns(HeuristicViolationWarning, match="falls below its lower bound"):
        model.learn(1_500)


# -- quiet no-ops ----------------------------------------------------------------------------------------------


def test_astar_with_a_heuristic_and_alpha_zero_warns() -> None:
    with pytest.warns(UserWarning, match=r"alpha=0.*G \+ ε·L.*'alpha': 0.2"):
        small_model(priority="astar", heuristic=Constant(1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        small_model(priority={"astar": {"alpha": 0.2}}, heuristic=Constant(1.0))
        small_model(priority="gumbel", heuristic=Constant(1.0))


def test_zero_search_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="search_budget=0.*never updates"):
        small_model(search_budget=0)


# -- clear errors ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["epsilon", "search_budget"])
def test_non_numeric_settings_name_the_argument(name: str) -> None:
    with pytest.raises(ValueError, match=f"{name} must be a real number"):
        small_model(**{name: "abc"})


def test_predict_with_a_wrong_mask_length_names_action_masks() -> None:
    env = ActionMasker(gym.wrappers.TimeLimit(MaskedChainEnv(4), 4), lambda e: e.unwrapped.legal())
    model = small_model(env)
    obs = np.eye(5, dtype=np.float32)[0]
    with pytest.raises(ValueError, match=r"action_masks.*3 actions"):
        model.predict(obs, action_masks=np.array([True, False]))
    with pytest.raises(ValueError, match=r"action_masks.*3 actions"):
        model.predict(np.stack([obs, obs]), action_masks=np.ones((2, 2), dtype=bool))
    action, _ = model.predict(obs, action_masks=np.array([True, False, False]), deterministic=True)
    assert int(action) == 0
    actions, _ = model.predict(np.stack([obs, obs]), action_masks=np.array([[False, True, False]] * 2))
    assert actions.tolist() == [1, 1]


def test_loading_a_ppo_zip_names_ppo_from_dirpg(tmp_path) -> None:
    path = tmp_path / "ppo.zip"
    PPO("MlpPolicy", chain(), n_steps=16, batch_size=16).save(path)
    with pytest.raises(ValueError, match=r"ActorCriticPolicy.*sb3_dirpg\.integrations\.ppo\.ppo_from_dirpg"):
        DirPG.load(path)
    with pytest.raises(ValueError, match="ppo_from_dirpg"):
        DirPG.load(path, env=chain())
