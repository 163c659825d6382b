"""Search worker processes: results do not depend on how a batch is split between processes."""

from __future__ import annotations

import pytest
import torch as th

from sb3_dirpg import DirPG
from sb3_dirpg.envs import make_minigrid_env
from sb3_dirpg.parallel import split_batch
from sb3_dirpg.policies import MiniGridCNN

th.set_num_threads(1)


def params(model: DirPG) -> th.Tensor:
    return th.nn.utils.parameters_to_vector(model.policy.parameters()).detach()


@pytest.mark.parametrize("n_workers", [1, 2])
def test_workers_give_the_same_training_run(n_workers: int) -> None:
    runs = []
    for workers in (0, n_workers):
        model = DirPG("MlpPolicy", "CartPole-v1", search_budget=50, batch_episodes=5, seed=3, n_workers=workers)
        model.learn(3_000)
        runs.append((params(model), model.num_timesteps, [ep["r"] for ep in model.ep_info_buffer]))
        model.close_workers()
    (p0, n0, r0), (p1, n1, r1) = runs
    assert n0 == n1 and r0 == r1
    assert th.allclose(p0, p1, atol=1e-6)


def test_workers_with_minigrid_and_memoised_policy() -> None:
    env = make_minigrid_env("MiniGrid-Empty-5x5-v0")
    kwargs = dict(features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False)
    model = DirPG("MultiInputPolicy", env, search_budget=40, batch_episodes=4, seed=0, n_workers=1, policy_kwargs=kwargs)
    model.learn(800)
    assert model.num_timesteps >= 800 and model._worker_pool is not None
    model.close_workers()
    assert model._worker_pool is None


def test_split_batch() -> None:
    assert [len(p) for p in split_batch(list(range(5)), 2)] in ([3, 2], [2, 3])
    assert sum(len(p) for p in split_batch(list(range(7)), 3)) == 7
    assert [len(p) for p in split_batch([1], 2)].count(1) == 1


def test_bad_n_workers() -> None:
    with pytest.raises(ValueError, match="n_workers"):
        DirPG("MlpPolicy", "CartPole-v1", n_workers=-1)
