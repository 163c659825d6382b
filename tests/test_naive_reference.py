"""The fast lockstep search and the naive reference (deepcopy per expansion, unbatched policy) agree exactly."""

from __future__ import annotations

import numpy as np
import pytest

from sb3_dirpg import DirPG, MiniGridCNN
from sb3_dirpg.envs import make_minigrid_env
from sb3_dirpg.envs.minigrid import MultiRoomBound
from tests.reference.naive_search import NaiveDirPG, naive_search


def compare(model: DirPG, seeds: list[int]) -> None:
    streams = np.random.default_rng(7).spawn(len(seeds))
    copies = [np.random.default_rng(s.bit_generator.seed_seq) for s in streams]
    fast = model.search(seeds, rng=streams)
    naive = naive_search(
        model.get_env().unwrapped.envs[0], model.policy_logits, seeds, copies, model.search_config(), model.heuristic
    )
    improved = 0
    for f, n in zip(fast.episodes, naive.episodes):
        assert fast.actions(f.opt_leaf) == naive.actions(n.opt_leaf)
        assert fast.actions(f.dir_leaf) == naive.actions(n.dir_leaf)
        assert (f.interactions, f.trajectories, f.pruned) == (n.interactions, n.trajectories, n.pruned)
        assert f.d_dir == pytest.approx(
            n.d_dir, rel=1e-7
        )  # float32 forwards on batches of different size differ in the last bits
        improved += f.improved
    assert improved > 0  # the comparison covered a_dir searches, not only a_opt


def test_cartpole_gumbel_priority() -> None:
    model = DirPG("MlpPolicy", "CartPole-v1", search_budget=60, seed=0, batch_episodes=6)
    compare(model, list(range(6)))


def test_multiroom_astar_with_pruning() -> None:
    env = make_minigrid_env("MiniGrid-MultiRoom-N2-S4-v0")
    model = DirPG(
        "MultiInputPolicy", env, search_budget=1500, priority={"astar": {"alpha": 0.3}},
        heuristic=MultiRoomBound.for_env(env, 0.99),
        gamma=0.99, max_episode_steps=40, stop="budget", seed=1,
        policy_kwargs=dict(features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False),
    )  # fmt: skip
    compare(model, [3, 4, 5, 6, 7, 8])


def test_naive_dirpg_learns_like_dirpg() -> None:
    model = NaiveDirPG("MlpPolicy", "CartPole-v1", search_budget=20, seed=0, batch_episodes=2)
    model.learn(1_000)
    assert model.num_timesteps >= 1_000 and model._n_updates >= 1
