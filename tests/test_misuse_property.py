"""Properties of the misuse checks. Issue 23: an env with randomly injected defects is either refused at construction
with an error that names it, or trains exactly as the same env without the defects. Issue 46: a setting given to the
constructor, assigned after it or passed to ``load`` gives the same search or the same refusal, with heuristic bounds
whose sides are drawn infinite or finite; issue 81 adds the refining settings that cannot act."""

from __future__ import annotations

import functools
import tempfile
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from sb3_dirpg import DirPG
from sb3_dirpg.common.vec_simulator import HeuristicError
from sb3_dirpg.simulator import EnvAPIError, NondeterministicEnvError, NondeterministicResetWarning
from tests.helpers import DefectChainEnv

#: the defects of :class:`~tests.helpers.DefectChainEnv`: aliasing, hidden state, unseeded resets, wrong shapes, wrong
#: types (some harmless: float64 or list observations of a float32 Box, numpy rewards and flags) and the old gym API
DEFECTS = (
    "aliasing", "hidden_state", "unseeded_reset", "obs_shape", "obs_float64", "obs_list", "reward_array", "reward_numpy",
    "flags_numpy", "info_none", "old_step", "old_reset", "success_str",
)  # fmt: skip
#: the errors that count as a clear refusal (the reset warning is turned into one)
REFUSALS = (EnvAPIError, NondeterministicEnvError, NondeterministicResetWarning, HeuristicError)
INTERACTIONS = 120


class Bound:
    """An admissible bound on the chain's return-to-go; ``kind`` ``"steps"`` also steps the wrapper it is given (which the
    search must undo), ``"writes"`` changes an attribute of the env (which must be refused)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __call__(self, env: gym.Env) -> float:
        base = env.unwrapped
        left = base.length - base.t
        if self.kind == "steps" and base.t == 1 and left > 1:
            env.step(0)
        elif self.kind == "writes":
            base.bonus = base.bonus + 1e-9
        return 3.0 * left

    def __repr__(self) -> str:
        return f"Bound({self.kind!r})"


def build(length: int, n_actions: int, stochastic: bool, defects: frozenset[str], heuristic: str) -> DirPG:
    """:param length: chain length
    :param n_actions: number of actions
    :param stochastic: reward noise
    :param defects: the env's defects
    :param heuristic: ``"none"``, or the kind of :class:`Bound`
    :return: a small seeded model on the env (a changed reset is an error here)"""
    search: dict[str, Any] = dict(search_budget=12, priority="gumbel")
    if heuristic != "none":
        search = dict(search_budget=12, priority={"astar": {"alpha": 0.2}}, heuristic=Bound(heuristic))
    with warnings.catch_warnings():
        warnings.simplefilter("error", NondeterministicResetWarning)
        return DirPG(
            "MlpPolicy", DefectChainEnv(length, n_actions, defects, stochastic), batch_episodes=3, learning_rate=1e-2,
            policy_kwargs=dict(net_arch=[8]), seed=0, **search,
        )  # fmt: skip


def outcome(model: DirPG) -> tuple[th.Tensor, int, list[float]]:
    """:param model: a model
    :return: its parameters, interactions and episode returns after training"""
    model.learn(INTERACTIONS)
    returns = [ep["r"] for ep in model.ep_info_buffer]
    return th.nn.utils.parameters_to_vector(model.policy.parameters()).detach(), model.num_timesteps, returns


@functools.cache
def clean(length: int, n_actions: int, stochastic: bool, heuristic: str) -> tuple[th.Tensor, int, list[float]]:
    """:return: :func:`outcome` of the env without defects (with the pure bound when there is a heuristic)"""
    return outcome(build(length, n_actions, stochastic, frozenset(), "none" if heuristic == "none" else "pure"))


def with_each_defect_alone(test: Any) -> Any:
    """:param test: the property test
    :return: the test, with an explicit example for each defect alone and for each heuristic alone (besides the drawn
        ones)"""
    for defect in DEFECTS:
        test = example(length=3, n_actions=2, stochastic=True, defects=frozenset({defect}), heuristic="none")(test)
    for heuristic in ("pure", "steps", "writes"):
        test = example(length=4, n_actions=3, stochastic=True, defects=frozenset(), heuristic=heuristic)(test)
    return test


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@with_each_defect_alone
@given(
    length=st.integers(2, 5),
    n_actions=st.integers(2, 3),
    stochastic=st.booleans(),
    defects=st.frozensets(st.sampled_from(DEFECTS), max_size=2),
    heuristic=st.sampled_from(["none", "pure", "steps", "writes"]),
)
def test_a_defective_env_is_refused_at_construction_or_trains_as_the_clean_one(
    length: int, n_actions: int, stochastic: bool, defects: frozenset[str], heuristic: str
) -> None:
    try:
        model = build(length, n_actions, stochastic, defects, heuristic)
    except REFUSALS as error:
        named = "Bound('writes')" if isinstance(error, HeuristicError) else "DefectChainEnv"
        assert named in str(error), str(error)
        event(f"refused: {type(error).__name__}")
        return
    got = outcome(model)
    expected = clean(length, n_actions, stochastic, heuristic)
    assert got[1:] == expected[1:]
    assert th.equal(got[0], expected[0])
    event("trained as the clean env")


# -- issue 46: settings given any way, and infinite bounds -------------------------------------------------------------

#: drawn values of each setting: good ones, and bad ones of the kinds users pass (quoted flags, numbers out of range)
SETTING_VALUES: dict[str, list[Any]] = {
    "epsilon": [0.5, -1.0, 0.0, "1.0", True],
    "priority": ["gumbel", "astar", "A*", {"astar": {"alpha": 0.5}}, {"astar": {"alpha": 1.5}}, {"astar": {"alpha": "0.2"}},
                 {"gumbel": {"depth_first": True}}, {"astar": {"depth_first": "no"}}],
    "search_budget": [12, 0, 7.5],
    "prune": [True, False, "false", 1],
    # issue 81: a refining budget above search_budget's 12 cannot act
    "stop": ["budget", "success", {"success": {"refine": 6}}, "sometimes", {"success": {"refine": "5"}},
             {"success": {"refine": 100}}],
    "n_epochs": [1, 3, 0, 2.5, True],
}


class SidedBound:
    """A bound on the chain's return-to-go whose sides are each infinite or finite (3 per step left: admissible).

    :param lower: whether the lower bound is ``-inf``
    :param upper: whether the upper bound is ``+inf``
    """

    def __init__(self, lower: bool, upper: bool) -> None:
        self.lower, self.upper = lower, upper

    def __call__(self, env: gym.Env) -> tuple[float, float]:
        left = env.unwrapped.length - env.unwrapped.t
        return (-float("inf") if self.lower else -3.0 * left), (float("inf") if self.upper else 3.0 * left)

    def __repr__(self) -> str:
        return f"SidedBound({self.lower}, {self.upper})"


def searched(model: DirPG) -> list[Any]:
    """:param model: a model
    :return: the episodes of a short search with fixed noise"""
    rngs = [np.random.default_rng([seed, 3]) for seed in range(4)]
    return model.search(list(range(4)), rng=rngs).episodes


def routed(route: str, settings: dict[str, Any], tmp: Path) -> DirPG:
    """:param route: ``"constructor"``, ``"assignment"`` (in the drawn order) or ``"load"``
    :param settings: the settings
    :param tmp: a folder for the saved model
    :return: a model with the settings, given by that route"""
    base = dict(batch_episodes=2, policy_kwargs=dict(net_arch=[8]), seed=0, search_budget=12)
    env = DefectChainEnv(3, 2, frozenset(), True)
    if route == "constructor":
        return DirPG("MlpPolicy", env, **{**base, **settings})
    if route == "assignment":
        model = DirPG("MlpPolicy", env, **base)
        for name, value in settings.items():
            setattr(model, name, value)
        return model  # settings that depend on each other are checked by search_config(), before the search
    DirPG("MlpPolicy", env, **base).save(tmp / "model")
    return DirPG.load(tmp / "model", env=DefectChainEnv(3, 2, frozenset(), True), **settings)


@settings(max_examples=30, deadline=None, derandomize=True, database=None)
@given(
    chosen=st.dictionaries(st.sampled_from(sorted(SETTING_VALUES)), st.integers(0, 4), max_size=3),
    bound=st.sampled_from([None, (False, False), (True, False), (False, True), (True, True)]),
    epsilon_sign=st.sampled_from([1.0, -1.0]),
)
def test_a_setting_gives_the_same_model_or_the_same_refusal_by_every_route(
    chosen: dict[str, int], bound: tuple[bool, bool] | None, epsilon_sign: float
) -> None:
    """A setting passed to the constructor, assigned after it or passed to ``load`` gives the same search, or a
    ValueError that names a setting by each route; an infinite side of a heuristic's bound never stalls the search."""
    drawn = {name: SETTING_VALUES[name][index % len(SETTING_VALUES[name])] for name, index in chosen.items()}
    drawn["epsilon"] = epsilon_sign * abs(drawn["epsilon"]) if isinstance(drawn.get("epsilon"), float) else drawn.get(
        "epsilon", epsilon_sign
    )
    if bound is not None:
        drawn["heuristic"] = SidedBound(*bound)
    outcomes = []
    with tempfile.TemporaryDirectory() as tmp:
        for route in ("constructor", "assignment", "load"):
            try:
                model = routed(route, drawn, Path(tmp))
                outcomes.append(("model", model.search_config(), searched(model)))
            except ValueError as error:
                assert any(name in str(error) for name in (*drawn, "heuristic")), str(error)
                outcomes.append(("refused", None, None))
    assert outcomes[1] == outcomes[0] and outcomes[2] == outcomes[0]
    if outcomes[0][0] == "model":
        assert all(np.isfinite(ep.d_dir) for ep in outcomes[0][2])
        event("same search by every route")
    else:
        event("refused by every route")
