"""The paper's environments: API checks, exact cloning, spanning-tree masks, DeepSea statistics, MiniGrid shaped rewards."""

from __future__ import annotations

import copy
import warnings

import gymnasium as gym
import networkx as nx
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import sb3_dirpg.envs  # noqa: F401  (registers the envs)
from sb3_dirpg.envs import DeepSeaRiskEnv, SpanningTreeBanditEnv, make_minigrid_env
from sb3_dirpg.simulator.registry import find_cloner
from tests.helpers import cells_of, face

TOGGLE, FORWARD, PICKUP, DROP = 5, 2, 3, 4


# --- API checks -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make",
    [
        lambda: gym.make("sb3_dirpg/SpanningTreeBandit-v0").unwrapped,
        lambda: gym.make("sb3_dirpg/SpanningTreeBandit-v0", n_nodes=8, n_edges=14, observe_inclusions=True).unwrapped,
        lambda: gym.make("sb3_dirpg/DeepSeaRisk-v0").unwrapped,
        lambda: make_minigrid_env("MiniGrid-MultiRoom-N2-S4-v0"),
    ],
    ids=["spanning-tree", "spanning-tree-inclusions", "deepsea", "minigrid-multiroom"],
)
def test_env_checkers(make) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. SB3's note that a 7x7 image is too small for NatureCNN
        gym_check_env(make())
        sb3_check_env(make())


def test_registration_is_idempotent() -> None:
    import importlib

    importlib.reload(sb3_dirpg.envs)
    assert isinstance(gym.make("sb3_dirpg/DeepSeaRisk-v0", size=7).unwrapped, DeepSeaRiskEnv)


def test_multiroom_n12_s10_has_twelve_rooms_of_at_most_ten_cells() -> None:
    """The registered MultiRoom-N12-S10 (issue 47) is the papers' env: 12 rooms, each at most 10 cells a side, 20 steps
    a room."""
    env = gym.make("MiniGrid-MultiRoom-N12-S10-v0")
    for seed in (0, 1):
        env.reset(seed=seed)
        rooms = env.unwrapped.rooms
        assert len(rooms) == 12 and max(max(room.size) for room in rooms) <= 10
    assert env.unwrapped.max_steps == 240


# --- cloners --------------------------------------------------------------------------------------------------------
def _snapshot(env: gym.Env) -> tuple:
    return find_cloner(env).snapshot(env), copy.deepcopy(env.np_random.bit_generator.state)


def _restore(env: gym.Env, snap: tuple) -> None:
    find_cloner(env).restore(env, snap[0])
    env.np_random.bit_generator.state = snap[1]


def _step_or_reset(env: gym.Env, action: int, seed: int) -> tuple:
    """Step, or reset when the episode is over (so branches also cross episode boundaries)."""
    if getattr(env, "_done", False):
        env._done = False
        obs, info = env.reset(seed=seed)
        return obs, None, None, None, info, env.action_masks()
    obs, reward, terminated, truncated, info = env.step(action)
    env._done = terminated or truncated
    return obs, reward, terminated, truncated, info, env.action_masks()


def _same(a: tuple, b: tuple) -> bool:
    obs_a, *rest_a, info_a, mask_a = a
    obs_b, *rest_b, info_b, mask_b = b
    if not (np.array_equal(obs_a, obs_b) and rest_a == rest_b and np.array_equal(mask_a, mask_b)):
        return False
    if info_a.keys() != info_b.keys():
        return False
    return all(np.array_equal(info_a[k], info_b[k]) for k in info_a)


@pytest.mark.parametrize(
    "make",
    [
        lambda: SpanningTreeBanditEnv(n_nodes=7, n_edges=13, graph_seed=3),
        lambda: SpanningTreeBanditEnv(n_nodes=5, mask_rule="count", observe_inclusions=True),
        lambda: DeepSeaRiskEnv(size=6),
    ],
    ids=["spanning-tree", "spanning-tree-count", "deepsea"],
)
def test_cloner_exact_under_random_branching(make) -> None:
    """Restore, then any action sequence gives what a deepcopy taken at the snapshot gives, twice (no aliasing)."""
    rng = np.random.default_rng(0)
    env = make()
    env.reset(seed=0)
    env._done = False
    for _ in range(60):
        for _ in range(rng.integers(0, 6)):
            _step_or_reset(env, int(rng.integers(2)), int(rng.integers(1000)))
        snap, reference = _snapshot(env), copy.deepcopy(env)
        for _ in range(2):
            suffix = [(int(a), int(s)) for a, s in zip(rng.integers(2, size=12), rng.integers(1000, size=12))]
            for action, seed in suffix[: rng.integers(1, 12)]:  # diverge, possibly into the next episode
                _step_or_reset(env, action, seed)
            _restore(env, snap)
            env._done = reference._done
            twin = copy.deepcopy(reference)
            for action, seed in suffix:
                assert _same(_step_or_reset(env, action, seed), _step_or_reset(twin, action, seed))


# --- spanning tree --------------------------------------------------------------------------------------------------
def _connects(n_nodes: int, edge_list: list[tuple[int, int]]) -> bool:
    graph = nx.Graph(edge_list)
    graph.add_nodes_from(range(n_nodes))
    return nx.is_connected(graph)


@settings(max_examples=80, deadline=None, derandomize=True, database=None)
@given(
    n_nodes=st.integers(2, 8),
    edge_prob=st.floats(0.0, 1.0),
    graph_seed=st.integers(0, 2**16),
    policy_seed=st.integers(0, 2**16),
)
def test_masks_are_exact_and_give_spanning_trees(n_nodes: int, edge_prob: float, graph_seed: int, policy_seed: int) -> None:
    """Include is legal iff it closes no cycle, exclude iff the rest can still connect; every masked episode is a tree."""
    env = SpanningTreeBanditEnv(n_nodes=n_nodes, edge_prob=edge_prob, graph_seed=graph_seed)
    assert _connects(n_nodes, env.edges)
    rng = np.random.default_rng(policy_seed)
    env.reset(seed=policy_seed)
    chosen: list[tuple[int, int]] = []
    for index, (u, v) in enumerate(env.edges):
        mask = env.action_masks()
        forest = nx.Graph(chosen)
        forest.add_nodes_from(range(n_nodes))
        assert mask[1] == (not nx.has_path(forest, u, v))
        assert mask[0] == _connects(n_nodes, chosen + env.edges[index + 1 :])
        action = int(rng.choice(np.flatnonzero(mask)))
        obs, reward, terminated, truncated, info = env.step(action)
        if action:
            chosen.append((u, v))
        assert terminated == (index == env.n_edges - 1) and not truncated
    tree = nx.Graph(chosen)
    tree.add_nodes_from(range(n_nodes))
    assert nx.is_tree(tree)
    assert info["is_valid_tree"] and [env.edges[k] for k in info["tree"]] == chosen
    assert reward == pytest.approx(info["edge_rewards"][info["tree"]].sum())
    assert np.all((0 <= info["edge_rewards"]) & (info["edge_rewards"] <= 2 * env.mu))
    assert not obs.any()


def test_observation_is_one_hot_of_decision() -> None:
    env = SpanningTreeBanditEnv(n_nodes=4, edges=[(0, 1), (1, 2), (2, 3), (0, 3)], observe_inclusions=True)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (8,) and obs.dtype == np.float32
    np.testing.assert_array_equal(obs, [1, 0, 0, 0, 0, 0, 0, 0])
    obs, *_ = env.step(1)
    np.testing.assert_array_equal(obs, [0, 1, 0, 0, 1, 0, 0, 0])


def test_count_rule_can_produce_invalid_tree() -> None:
    """The paper's counting rule lets the agent drop a bridge; the invalid tree gets ``invalid_reward``."""
    edges = [(2, 3), (0, 1), (0, 2), (1, 2)]  # (2, 3) is a bridge, decided first
    exact = SpanningTreeBanditEnv(edges=edges)
    exact.reset(seed=0)
    np.testing.assert_array_equal(exact.action_masks(), [False, True])
    count = SpanningTreeBanditEnv(edges=edges, mask_rule="count", invalid_reward=-1.0)
    count.reset(seed=0)
    np.testing.assert_array_equal(count.action_masks(), [True, True])
    for action in (0, 1, 1):
        count.step(action)
    np.testing.assert_array_equal(count.action_masks(), [True, True])  # the rules conflict: nothing legal, so allow both
    *_, reward, terminated, _, info = count.step(1)
    assert terminated and reward == -1.0 and not info["is_valid_tree"]


def test_spanning_tree_validation_and_helpers() -> None:
    with pytest.raises(ValueError):
        SpanningTreeBanditEnv(edges=[(0, 1), (2, 3)])
    with pytest.raises(ValueError):
        SpanningTreeBanditEnv(mask_rule="nope")
    env = SpanningTreeBanditEnv(edges=[(0, 1), (1, 2), (0, 2)], mu=[0.9, 0.1, 0.5])
    assert env.max_spanning_tree() == [0, 2]
    assert env.n_edges == env.horizon == 3


# --- DeepSea --------------------------------------------------------------------------------------------------------
def _deepsea_return(env: DeepSeaRiskEnv, actions: str, seed: int) -> float:
    env.reset(seed=seed)
    total, terminated = 0.0, False
    for a in actions:
        assert not terminated
        _, reward, terminated, _, _ = env.step(int(a == "R"))
        total += reward
    assert terminated
    return total


def test_deepsea_risk_statistics() -> None:
    """LLLL returns exactly 0; RRRR returns N(0, 1): z-test for the mean, chi-square interval for the variance."""
    env = DeepSeaRiskEnv()
    n = 20_000
    assert all(_deepsea_return(env, "LLLL", seed) == 0.0 for seed in range(200))
    returns = np.array([_deepsea_return(env, "RRRR", 10_000 + seed) for seed in range(n)])
    alpha = 1e-3
    z = returns.mean() / (1.0 / np.sqrt(n))
    assert abs(z) < stats.norm.ppf(1 - alpha / 2)
    chi2 = (n - 1) * returns.var(ddof=1) / 1.0
    assert stats.chi2.ppf(alpha / 2, n - 1) < chi2 < stats.chi2.ppf(1 - alpha / 2, n - 1)
    assert _deepsea_return(env, "RLRL", 0) == pytest.approx(-2 / 3)
    assert _deepsea_return(env, "RRRL", 0) == pytest.approx(-1.0)
    assert _deepsea_return(env, "RRRR", 0) == pytest.approx(-1.0 + env.goal_reward)


def test_deepsea_observation() -> None:
    env = DeepSeaRiskEnv(size=5)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (25,) and obs[0] == 1.0 and obs.sum() == 1.0
    obs, *_ = env.step(0)
    assert obs[5] == 1.0  # row 1, column clipped at 0
    obs, *_ = env.step(1)
    assert obs[2 * 5 + 1] == 1.0


# --- MiniGrid shaped reward -----------------------------------------------------------------------------------------
def test_shaped_reward_multiroom_door_and_goal() -> None:
    env = make_minigrid_env("MiniGrid-MultiRoom-N2-S4-v0")
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"image", "direction"} and obs["image"].shape == (7, 7, 3)
    face(env, cells_of(env, "door")[0])
    rewards = [env.step(TOGGLE)[1] for _ in range(3)]
    assert rewards == [30.0, -30.0, 30.0]
    assert env.step(0)[1] == 0.0
    face(env, cells_of(env, "goal")[0])
    _, reward, terminated, truncated, info = env.step(FORWARD)
    assert reward == 100.0 and terminated and not truncated and 0 < info["minigrid_reward"] < 1


def test_shaped_reward_doorkey_pickup_drop_unlock() -> None:
    env = make_minigrid_env("MiniGrid-DoorKey-5x5-v0", pickup_reward=5.0)
    env.reset(seed=0)
    door = cells_of(env, "door")[0]
    face(env, door)
    assert env.step(TOGGLE)[1] == 0.0  # locked, no key
    face(env, cells_of(env, "key")[0])
    assert [env.step(a)[1] for a in (PICKUP, DROP, PICKUP, PICKUP)] == [5.0, -5.0, 5.0, 0.0]
    face(env, door)
    assert env.step(TOGGLE)[1] == 30.0  # unlock and open


def test_unshaped_env_keeps_minigrid_reward() -> None:
    env = make_minigrid_env("MiniGrid-Empty-5x5-v0", shaped_reward=False)
    env.reset(seed=0)
    face(env, cells_of(env, "goal")[0])
    _, reward, terminated, _, _ = env.step(FORWARD)
    assert terminated and 0 < reward < 1
