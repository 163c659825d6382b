"""``ppo_from_dirpg``: the PPO actor reproduces the DirPG policy exactly, then fine-tunes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO
from sb3_contrib.common.wrappers import ActionMasker
from stable_baselines3 import PPO

from sb3_dirpg import DirPG, MiniGridCNN
from sb3_dirpg.baselines import CEM
from sb3_dirpg.envs import SpanningTreeBanditEnv, make_minigrid_env
from sb3_dirpg.integrations.ppo import ppo_from_dirpg

pytestmark = pytest.mark.integration


def _random_obs(space, n: int):
    if hasattr(space, "spaces"):
        return {key: np.stack([sub.sample() for _ in range(n)]) for key, sub in space.spaces.items()}
    return np.stack([space.sample() for _ in range(n)])


def _probs(policy, obs) -> np.ndarray:
    tensor, _ = policy.obs_to_tensor(obs)
    with torch.no_grad():
        return policy.get_distribution(tensor).distribution.probs.cpu().numpy()


def _assert_same_actor(model, ppo, n: int = 64) -> None:
    space = model.policy.observation_space
    space.seed(0)
    obs = _random_obs(space, n)
    expected = _probs(model.policy, obs)
    assert not np.allclose(expected, expected[:1]), "the probe observations should give different probabilities"
    np.testing.assert_allclose(_probs(ppo.policy, obs), expected, rtol=1e-5, atol=1e-6)


def test_mlp_policy_same_probabilities_then_trains() -> None:
    model = DirPG("MlpPolicy", "CartPole-v1", search_budget=20, learning_rate=1e-2, seed=0,
                  policy_kwargs=dict(net_arch=[32, 16]))  # fmt: skip
    model.learn(1_500)
    ppo = ppo_from_dirpg(model, n_steps=64, batch_size=32, n_epochs=1, seed=0)
    assert type(ppo) is PPO
    assert ppo.policy.mlp_extractor.policy_net[0].out_features == 32
    _assert_same_actor(model, ppo)
    ppo.learn(128)
    assert ppo.num_timesteps >= 128


def _minigrid_model() -> DirPG:
    env = make_minigrid_env("MiniGrid-Empty-5x5-v0")
    kwargs = dict(features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False)
    model = DirPG("MultiInputPolicy", env, search_budget=10, seed=0, policy_kwargs=kwargs)
    for param in model.policy.parameters():  # a trained-looking policy: different actions get different probabilities
        param.data.normal_(0.0, 0.3)
    return model


def test_minigrid_cnn_same_probabilities_then_trains() -> None:
    model = _minigrid_model()
    ppo = ppo_from_dirpg(model, n_steps=32, batch_size=16, n_epochs=1)
    assert isinstance(ppo.policy.features_extractor, MiniGridCNN)
    _assert_same_actor(model, ppo)
    ppo.learn(32)  # PPO's buffer gives the Discrete direction as (batch, 1): MiniGridCNN must flatten its one-hot


def test_unshared_extractor_and_value_arch() -> None:
    model = CEM("MlpPolicy", "CartPole-v1", n_rollouts=4, seed=1, policy_kwargs=dict(net_arch=[8]))
    for param in model.policy.parameters():
        param.data.normal_(0.0, 0.5)
    ppo = ppo_from_dirpg(model, vf_arch=[16, 16], policy_kwargs=dict(share_features_extractor=False), n_steps=32,
                         batch_size=32)  # fmt: skip
    assert len(ppo.policy.mlp_extractor.value_net) == 4  # two Linear + two activations
    _assert_same_actor(model, ppo)


def test_masked_env_gives_maskable_ppo() -> None:
    env = ActionMasker(SpanningTreeBanditEnv(n_nodes=5, graph_seed=3), lambda e: e.unwrapped.action_masks())
    model = DirPG("MlpPolicy", env, search_budget=20, max_episode_steps=50, seed=0)
    model.learn(300)
    for param in model.policy.parameters():
        param.data.normal_(0.0, 0.5)
    ppo = ppo_from_dirpg(model, n_steps=32, batch_size=16, n_epochs=1)
    assert type(ppo) is MaskablePPO
    _assert_same_actor(model, ppo)
    ppo.learn(32)
    assert type(ppo_from_dirpg(model, maskable=False, n_steps=32, batch_size=32)) is PPO


def test_loaded_model_needs_an_env_and_spaces_must_match(tmp_path) -> None:
    DirPG("MlpPolicy", "CartPole-v1", search_budget=5).save(tmp_path / "model")
    model = DirPG.load(tmp_path / "model")
    with pytest.raises(ValueError, match="no env"):
        ppo_from_dirpg(model)
    with pytest.raises(ValueError, match="differ from the model's"):
        ppo_from_dirpg(model, env="Acrobot-v1")
    assert type(ppo_from_dirpg(model, env="CartPole-v1", n_steps=32, batch_size=32)) is PPO
