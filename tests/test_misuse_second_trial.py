"""The second misuse trial (issue 46): infinite heuristic bounds, settings changed after construction, flags that are not
bools, sub-envs that differ, and the smaller and confusing cases. Each case is fixed or refused with an error that names
the argument or the env and what to do instead."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_dirpg import DirPG
from sb3_dirpg.common.vec_simulator import HeuristicError
from sb3_dirpg.integrations.zoo import algorithm_kwargs
from sb3_dirpg.search import SearchConfig, TopDownSearch
from sb3_dirpg.simulator import EnvAPIError
from tests.helpers import DefectChainEnv, MaskableChainEnv, SparseChainEnv, chain

INF = float("inf")
SETTINGS: dict[str, Any] = dict(
    search_budget=24, batch_episodes=4, policy_kwargs=dict(net_arch=[8]), seed=0, learning_rate=1e-2
)
SEEDS = list(range(12))
#: the DirPG flags that must be bools
FLAGS = ("prune",)


def target_env() -> gym.Env:
    """:return: a deterministic chain of 5 steps and 3 actions that pays for hitting a per-seed target at each step"""
    return DefectChainEnv(5, 3)


class FixedBounds:
    """A bound on :func:`target_env`'s return-to-go: each side is either infinite or an admissible finite number.

    :param lower: ``"inf"`` for ``-inf``, else ``"finite"`` (0: rewards are never negative)
    :param upper: ``"inf"`` for ``+inf``, else ``"finite"`` (1.01 per step left)
    :param where: ``"all"``: the same kind at every state; ``"odd"``: the given kinds at odd steps, finite at even ones
    """

    def __init__(self, lower: str, upper: str, where: str = "all") -> None:
        self.lower, self.upper, self.where = lower, upper, where

    def __call__(self, env: gym.Env) -> tuple[float, float]:
        base = env.unwrapped
        left = base.length - base.t
        finite = self.where == "odd" and base.t % 2 == 0
        lower = 0.0 if finite or self.lower == "finite" else -INF
        upper = 1.01 * left if finite or self.upper == "finite" else INF
        return lower, upper

    def __repr__(self) -> str:
        return f"FixedBounds({self.lower!r}, {self.upper!r}, {self.where!r})"


def outcomes(model: DirPG, **overrides: Any) -> list[Any]:
    """:param model: a model
    :param overrides: search settings
    :return: the per-episode outcomes of a search of :data:`SEEDS` (no early stop, fixed noise)"""
    config = model.search_config(stop="budget", **overrides)
    rngs = [np.random.default_rng([seed, 5]) for seed in SEEDS]
    return model.search(SEEDS, config=config, rng=rngs).episodes


def params(model: DirPG) -> th.Tensor:
    """:param model: a model
    :return: its parameters as one vector"""
    return th.nn.utils.parameters_to_vector(model.policy.parameters()).detach()


# -- 1. infinite bounds ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [1.0, -1.0])
@pytest.mark.parametrize("lower", ["inf", "finite"])
@pytest.mark.parametrize("upper", ["inf", "finite"])
def test_an_infinite_bound_adds_nothing_to_the_astar_priority(epsilon: float, lower: str, upper: str) -> None:
    """The bound the priority uses (upper for ε > 0, lower for ε < 0) guides nothing when it is infinite: the search is
    then the one with α = 0 (pruning nothing with it); a finite one guides. Either way the search keeps its order and
    improves on a_opt."""
    bound = FixedBounds(lower, upper)
    model = DirPG("MlpPolicy", target_env(), **SETTINGS, epsilon=epsilon, priority={"astar": {"alpha": 0.5}}, heuristic=bound)
    guided = outcomes(model)
    used_is_infinite = (upper if epsilon > 0 else lower) == "inf"
    assert sum(ep.improved for ep in guided) >= 3
    assert all(np.isfinite(ep.d_dir) for ep in guided)
    if used_is_infinite:
        assert guided == outcomes(model, alpha=0.0)
        assert all(ep.pruned == 0 for ep in guided)


@pytest.mark.parametrize("epsilon", [1.0, -1.0])
@pytest.mark.parametrize(("lower", "upper"), [("inf", "inf"), ("inf", "finite"), ("finite", "inf")])
def test_bounds_infinite_at_some_states_only_keep_the_search_ordered(epsilon: float, lower: str, upper: str) -> None:
    model = DirPG(
        "MlpPolicy", target_env(), **SETTINGS, epsilon=epsilon, priority={"astar": {"alpha": 0.5}},
        heuristic=FixedBounds(lower, upper, where="odd"),
    )  # fmt: skip
    mixed = outcomes(model)
    assert sum(ep.improved for ep in mixed) >= 3
    assert all(np.isfinite(ep.d_dir) for ep in mixed)


@pytest.mark.parametrize("bounds", [(INF, INF), (-INF, -INF), -INF, (1.0, -INF)])
def test_an_impossible_infinite_bound_is_refused_naming_the_heuristic(bounds: Any) -> None:
    """``lower = +inf`` or ``upper = -inf`` bound a return-to-go that no trajectory has."""

    def impossible(env: gym.Env) -> Any:
        return bounds

    with pytest.raises(ValueError, match="impossible"):
        DirPG("MlpPolicy", target_env(), **SETTINGS, heuristic=impossible)


@pytest.mark.parametrize("compiled_loop", [False, True])
@pytest.mark.parametrize("epsilon", [1.0, -1.0])
def test_unbounded_nodes_under_astar_search_as_alpha_0_in_both_loops(compiled_loop: bool, epsilon: float) -> None:
    """The compiled MiniGrid simulator without a heuristic reports no bounds (±inf): the A* priority with α > 0 is
    then the one with α = 0, in the Python loop and in the compiled loop."""
    from sb3_dirpg.envs import make_minigrid_env
    from sb3_dirpg.envs.minigrid import CompiledMiniGridSimulator, MiniGridCNN

    env = make_minigrid_env("MiniGrid-DoorKey-5x5-v0", max_steps=40)
    kwargs = dict(features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False)
    model = DirPG("MultiInputPolicy", env, seed=3, policy_kwargs=kwargs, device="cpu")
    assert type(model.simulator) is CompiledMiniGridSimulator
    seeds = [0, 1, 2]
    model.simulator.ensure_simulators(len(seeds))

    def run(alpha: float) -> Any:
        config = SearchConfig(
            epsilon=epsilon, budget=200, priority="astar", alpha=alpha, prune=True, stop="budget", horizon=40,
            compiled_loop=compiled_loop,
        )  # fmt: skip
        rngs = [np.random.default_rng([seed, 11]) for seed in seeds]
        return TopDownSearch(model.simulator, model.search_policy_function(), config).run(seeds, rngs)

    guided, plain = run(0.5), run(0.0)
    assert guided.episodes == plain.episodes
    size = int(plain.tree.regions.count[0])
    np.testing.assert_array_equal(guided.tree.regions.G[:size], plain.tree.regions.G[:size])


# -- 2. settings changed after construction ----------------------------------------------------------------------------


def admissible(env: gym.Env) -> float:
    """:param env: :func:`target_env`, at some state
    :return: an admissible upper bound on its return-to-go"""
    base = env.unwrapped
    return 1.01 * (base.length - base.t)


def astar_settings() -> dict[str, Any]:
    return dict(priority={"astar": {"alpha": 0.5}}, heuristic=admissible)


def test_a_heuristic_set_after_construction_reaches_the_search() -> None:
    built = DirPG("MlpPolicy", target_env(), **SETTINGS, **astar_settings())
    changed = DirPG("MlpPolicy", target_env(), **SETTINGS)
    changed.heuristic = admissible
    changed.priority = {"astar": {"alpha": 0.5}}
    assert changed.search_config() == built.search_config()
    assert outcomes(changed) == outcomes(built)
    built.learn(200)
    changed.learn(200)
    assert th.equal(params(changed), params(built))


def test_a_heuristic_set_after_construction_gets_the_constructors_check() -> None:
    model = DirPG("MlpPolicy", target_env(), **SETTINGS)

    def writes(env: gym.Env) -> float:
        env.unwrapped.bonus += 1.0
        return 10.0

    with pytest.raises(HeuristicError, match="writes"):
        model.heuristic = writes
    assert model.heuristic is None and model.simulator.heuristic is None


@pytest.mark.parametrize(
    ("name", "value", "match"),
    [
        ("epsilon", 0.0, "epsilon"), ("epsilon", "1.0", "epsilon"), ("priority", {"astar": {"alpha": 2.0}}, "alpha"),
        ("priority", "bfs", "priority"),
        ("search_budget", 0, "search_budget"), ("search_budget", 2.5, "search_budget"), ("heuristic", 3.0, "heuristic"),
        ("lookahead", 0, "lookahead"), ("gamma", 1.5, "gamma"), ("batch_episodes", 0, "batch_episodes"),
        ("max_episode_steps", -1, "max_episode_steps"), ("n_workers", -1, "n_workers"),
        ("n_workers", {"mpi": 1}, "n_workers"), ("simulator_backend", "gpu", "simulator_backend"),
        *((flag, "false", flag) for flag in FLAGS),
    ],
)  # fmt: skip
def test_a_setting_assigned_after_construction_gets_the_constructors_check(name: str, value: Any, match: str) -> None:
    model = DirPG("MlpPolicy", target_env(), **SETTINGS)
    before = getattr(model, name)
    with pytest.raises(ValueError, match=match):
        setattr(model, name, value)
    assert getattr(model, name) == before
    with pytest.raises(ValueError, match=match):
        DirPG("MlpPolicy", target_env(), **{**SETTINGS, name: value})


def test_a_learning_rate_assigned_after_construction_is_the_one_the_optimizer_steps_with() -> None:
    model = DirPG("MlpPolicy", target_env(), **SETTINGS)
    model.learn(100)
    model.learning_rate = 0.25
    assert model.lr_schedule(1.0) == 0.25
    model.learn(100, reset_num_timesteps=False)
    assert [group["lr"] for group in model.policy.optimizer.param_groups] == [0.25]


def test_astar_without_a_heuristic_set_after_construction_is_refused_before_searching() -> None:
    model = DirPG("MlpPolicy", target_env(), **SETTINGS)
    model.priority = {"astar": {"alpha": 0.5}}
    with pytest.raises(ValueError, match="heuristic"):
        model.learn(50)
    assert model.num_timesteps == 0


def test_load_overrides_get_the_constructors_checks_and_behaviour(tmp_path: Path) -> None:
    DirPG("MlpPolicy", target_env(), **SETTINGS).save(tmp_path / "model")
    built = DirPG("MlpPolicy", target_env(), **SETTINGS, **astar_settings())
    loaded = DirPG.load(tmp_path / "model", env=target_env(), **astar_settings())
    assert loaded.search_config() == built.search_config()
    assert outcomes(loaded) == outcomes(built)
    for bad in (dict(stop="sometimes"), dict(priority={"astar": {"alpha": 3.0}}), dict(priority={"astar": {"alpha": 0.5}}),
                dict(learning_rate="1e-3")):
        with pytest.raises(ValueError, match="|".join(bad)):
            DirPG.load(tmp_path / "model", env=target_env(), **bad)
    faster = DirPG.load(tmp_path / "model", env=target_env(), learning_rate=0.5)  # SB3's way still works
    assert faster.lr_schedule(1.0) == 0.5  # the optimizer takes it at its next step, as in SB3


# -- 3. flags that are not bools ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("flag", FLAGS)
@pytest.mark.parametrize("value", ["false", "True", 0, 1.0, None])
def test_a_flag_that_is_not_a_bool_is_refused_naming_it(flag: str, value: Any) -> None:
    with pytest.raises(ValueError, match=f"{flag} must be a bool"):
        DirPG("MlpPolicy", target_env(), **{**SETTINGS, flag: value})


@pytest.mark.parametrize("flag", FLAGS)
def test_a_numpy_bool_flag_is_taken(flag: str) -> None:
    model = DirPG("MlpPolicy", target_env(), **{**SETTINGS, flag: np.bool_(False)})
    assert getattr(model, flag) is False


def test_a_quoted_flag_from_a_zoo_entry_is_refused_naming_it() -> None:
    entry = {"policy": "MlpPolicy", "n_timesteps": 100, "early_stop": "false", "search_budget": 16}
    with pytest.raises(ValueError, match="early_stop must be a bool"):
        DirPG("MlpPolicy", target_env(), **algorithm_kwargs(entry))


# -- 4. sub-envs that differ -------------------------------------------------------------------------------------------


class LevelEnv(SparseChainEnv):
    """A sparse chain that pays at the end for the trajectory of all ``level`` actions (level 0 or 1)."""

    def __init__(self, level: int, length: int = 3) -> None:
        super().__init__(length)
        self.level = level

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        return super().step(1 - int(action) if self.level == 0 else int(action))


def test_a_vec_env_whose_sub_envs_differ_is_refused_naming_the_sub_env() -> None:
    venv = DummyVecEnv([lambda: gym.wrappers.TimeLimit(LevelEnv(1), 3), lambda: gym.wrappers.TimeLimit(LevelEnv(0), 3)])
    with pytest.raises(ValueError, match=r"sub-env 1.*differ"):
        DirPG("MlpPolicy", venv, **SETTINGS)
    model = DirPG("MlpPolicy", DummyVecEnv([chain, chain]), **SETTINGS)
    with pytest.raises(ValueError, match=r"sub-env 1.*differ"):
        model.set_env(venv)


def test_a_vec_env_of_like_sub_envs_is_taken() -> None:
    model = DirPG("MlpPolicy", DummyVecEnv([lambda: DefectChainEnv(4, stochastic=True)] * 3), **SETTINGS)
    model.learn(100)
    assert model.num_timesteps >= 100


# -- 5. the smaller cases ----------------------------------------------------------------------------------------------


def test_an_item_policy_refuses_a_net_arch_naming_it() -> None:
    from sb3_dirpg.envs import KnapsackEnv

    with pytest.raises(ValueError, match="net_arch"):
        DirPG("ItemPolicy", KnapsackEnv(n_items=5), policy_kwargs=dict(net_arch=[64, 64]))
    DirPG("ItemPolicy", KnapsackEnv(n_items=5), policy_kwargs=dict(net_arch=[]))


@pytest.mark.parametrize("seeds", [[5.9, 6.2], [1, "2"], 3.5, [True]])
def test_solve_refuses_seeds_that_are_not_integers(seeds: Any) -> None:
    model = DirPG("MlpPolicy", target_env(), **SETTINGS)
    with pytest.raises(ValueError, match="seeds"):
        model.solve(seeds, 30)


def test_solve_takes_integral_seeds_and_an_empty_list() -> None:
    model = DirPG("MlpPolicy", target_env(), **SETTINGS)
    assert model.solve([], 50) == []
    assert model.solve([np.int64(5), 6.0], 10) == model.solve([5, 6], 10)


class IndexMaskEnv(MaskableChainEnv):
    """``action_masks()`` returns the indices of the legal actions instead of booleans."""

    def action_masks(self) -> np.ndarray:
        return np.flatnonzero(self.legal())


class IntMaskEnv(MaskableChainEnv):
    """``action_masks()`` returns 0/1 integers of the right length (cast to bools, as sb3-contrib does)."""

    def action_masks(self) -> np.ndarray:
        return self.legal().astype(np.int64)


def test_action_masks_of_indices_are_refused_naming_action_masks_and_the_env() -> None:
    with pytest.raises(EnvAPIError, match=r"action_masks\(\).*IndexMaskEnv|IndexMaskEnv.*action_masks\(\)"):
        DirPG("MlpPolicy", gym.wrappers.TimeLimit(IndexMaskEnv(), 4), **SETTINGS)


def test_action_masks_of_zeros_and_ones_are_cast_to_bools() -> None:
    bools = DirPG("MlpPolicy", gym.wrappers.TimeLimit(MaskableChainEnv(), 4), **SETTINGS)
    ints = DirPG("MlpPolicy", gym.wrappers.TimeLimit(IntMaskEnv(), 4), **SETTINGS)
    bools.learn(100)
    ints.learn(100)
    assert th.equal(params(ints), params(bools))


# -- 6. confusing errors -----------------------------------------------------------------------------------------------


class TupleObsEnv(SparseChainEnv):
    def __init__(self) -> None:
        super().__init__(3)
        self.observation_space = spaces.Tuple((spaces.Discrete(4), spaces.Box(0.0, 1.0, (2,), np.float32)))

    def _obs(self) -> Any:
        return (self.t, np.zeros(2, np.float32))


def test_a_tuple_observation_is_refused_at_construction_naming_the_space() -> None:
    with pytest.raises(ValueError, match=r"Tuple.*TupleObsEnv|TupleObsEnv.*Tuple"):
        DirPG("MlpPolicy", gym.wrappers.TimeLimit(TupleObsEnv(), 3), **SETTINGS)


class GrowingObsEnv(SparseChainEnv):
    """Returns one element more from the 15th reset on."""

    def __init__(self) -> None:
        super().__init__(4)
        self.resets = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        self.resets += 1
        return super().reset(seed=seed, options=options)

    def _obs(self) -> np.ndarray:
        obs = super()._obs()
        return np.append(obs, np.float32(0.0)) if self.resets >= 15 else obs


def test_an_observation_that_changes_shape_later_is_named_with_the_env() -> None:
    model = DirPG("MlpPolicy", gym.wrappers.TimeLimit(GrowingObsEnv(), 4), **SETTINGS)
    with pytest.raises(EnvAPIError, match=r"GrowingObsEnv.*observation.*shape"):
        model.learn(3000)


class ShortMaskEnv(MaskableChainEnv):
    def action_masks(self) -> np.ndarray:
        return self.legal()[:2]


def test_action_masks_of_the_wrong_length_are_named_with_the_env() -> None:
    with pytest.raises(EnvAPIError, match=r"action_masks\(\).*ShortMaskEnv|ShortMaskEnv.*action_masks\(\)"):
        DirPG("MlpPolicy", gym.wrappers.TimeLimit(ShortMaskEnv(), 4), **SETTINGS)
