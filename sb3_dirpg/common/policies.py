"""Actor-only categorical policies built from SB3 parts, with sb3-contrib style action masks."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib.common.maskable.distributions import MaskableCategoricalDistribution
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.torch_layers import (
    BaseFeaturesExtractor,
    CombinedExtractor,
    FlattenExtractor,
    NatureCNN,
    create_mlp,
)
from stable_baselines3.common.type_aliases import PyTorchObs, Schedule
from torch import nn


class DirPGPolicy(BasePolicy):
    """Categorical policy without a value head: features extractor → MLP → action logits.

    Parameter names follow SB3's ``ActorCriticPolicy`` (``features_extractor``, ``mlp_extractor.policy_net``,
    ``action_net``) so the weights can seed a PPO policy with the same ``net_arch``.

    :param observation_space: observation space
    :param action_space: a ``Discrete`` action space
    :param lr_schedule: learning rate schedule (used for the optimizer's initial learning rate)
    :param net_arch: hidden layer sizes, or ``dict(pi=[...])`` as in SB3 (a ``vf`` entry is ignored)
    :param activation_fn: activation function
    :param ortho_init: orthogonal initialisation, as in SB3's on-policy algorithms
    :param features_extractor_class: features extractor class
    :param features_extractor_kwargs: keyword arguments of the features extractor
    :param normalize_images: divide images by 255
    :param optimizer_class: optimizer class used by the update
    :param optimizer_kwargs: keyword arguments of the optimizer (the learning rate comes from ``lr_schedule``)
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        lr_schedule: Schedule,
        net_arch: list[int] | dict[str, list[int]] | None = None,
        activation_fn: type[nn.Module] = nn.Tanh,
        ortho_init: bool = True,
        features_extractor_class: type[BaseFeaturesExtractor] = FlattenExtractor,
        features_extractor_kwargs: dict[str, Any] | None = None,
        normalize_images: bool = True,
        optimizer_class: type[th.optim.Optimizer] = th.optim.Adam,
        optimizer_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if not isinstance(action_space, spaces.Discrete):
            raise ValueError(f"DirPG policies need a Discrete action space, got {action_space}")
        super().__init__(
            observation_space,
            action_space,
            features_extractor_class,
            features_extractor_kwargs,
            optimizer_class=optimizer_class,
            optimizer_kwargs=optimizer_kwargs,
            normalize_images=normalize_images,
        )
        if isinstance(net_arch, dict):
            net_arch = net_arch.get("pi", [])
        self.net_arch = [64, 64] if net_arch is None else list(net_arch)
        self.activation_fn = activation_fn
        self.ortho_init = ortho_init
        self.features_extractor = self.make_features_extractor()
        self.features_dim = self.features_extractor.features_dim
        self.mlp_extractor = nn.Module()
        self.mlp_extractor.policy_net = nn.Sequential(*create_mlp(self.features_dim, -1, self.net_arch, activation_fn))
        latent_dim = self.net_arch[-1] if self.net_arch else self.features_dim
        self.action_dist = MaskableCategoricalDistribution(int(action_space.n))
        self.action_net = self.make_action_net(latent_dim)
        if ortho_init:
            gains = {self.features_extractor: np.sqrt(2), self.mlp_extractor: np.sqrt(2), self.action_net: 0.01}
            for module, gain in gains.items():
                module.apply(lambda m, g=gain: self.init_weights(m, gain=g))
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def make_action_net(self, latent_dim: int) -> nn.Module:
        """The layer from the latent vector to the action logits; a subclass may score actions otherwise.

        :param latent_dim: the size of the policy network's output
        :return: a module mapping (batch, latent_dim) to (batch, n_actions)
        """
        return self.action_dist.proba_distribution_net(latent_dim)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(
            net_arch=self.net_arch,
            activation_fn=self.activation_fn,
            ortho_init=self.ortho_init,
            lr_schedule=self._dummy_schedule,
            features_extractor_class=self.features_extractor_class,
            features_extractor_kwargs=self.features_extractor_kwargs,
            optimizer_class=self.optimizer_class,
            optimizer_kwargs=self.optimizer_kwargs,
        )
        return data

    def action_logits(self, obs: PyTorchObs) -> th.Tensor:
        """:param obs: observation tensor(s), not yet preprocessed
        :return: unmasked action logits, shape (batch, n_actions)"""
        features = self.extract_features(obs, self.features_extractor)
        return self.action_net(self.mlp_extractor.policy_net(features))

    def get_distribution(
        self, obs: PyTorchObs, action_masks: np.ndarray | th.Tensor | None = None
    ) -> MaskableCategoricalDistribution:
        """:param obs: observation tensor(s)
        :param action_masks: legal actions, bool, shape (batch, n_actions), or None
        :return: the masked categorical distribution; ``log_prob`` is differentiable"""
        dist = self.action_dist.proba_distribution(action_logits=self.action_logits(obs))
        if action_masks is not None:
            masks = th.as_tensor(action_masks, dtype=th.bool, device=self.device).reshape(-1, self.action_dist.action_dim)
            if not bool(masks.any(dim=1).all()):
                raise ValueError("all-false action mask: every state needs at least one legal action")
            dist.apply_masking(masks)
        return dist

    def log_prob_and_entropy(
        self, obs: PyTorchObs, actions: th.Tensor, action_masks: th.Tensor | None = None, entropy: bool = False
    ) -> tuple[th.Tensor, th.Tensor | None]:
        """``get_distribution(obs, action_masks).log_prob(actions)`` (and ``.entropy()``), computed op for op as
        sb3-contrib's masked categorical computes them, so the results are bit-identical, without building and
        validating the two distribution objects it builds (an update's per-step overhead).

        :param obs: observation tensor(s)
        :param actions: the actions, shape (batch,)
        :param action_masks: legal actions, bool tensor of shape (batch, n_actions) (checked by the caller), or None
        :param entropy: also compute the entropy
        :return: the log-probabilities, shape (batch,), and the entropies (None unless asked)
        """
        logits = self.action_logits(obs).view(-1, self.action_dist.action_dim)
        logits = logits - logits.logsumexp(dim=-1, keepdim=True)  # Categorical's normalisation
        # MaskableCategorical normalises again: the masked logits where masks are given, else the normalised ones
        if action_masks is not None:
            logits = th.where(action_masks, logits, th.tensor(-1e8, dtype=logits.dtype, device=logits.device))
        logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        index, log_pmf = th.broadcast_tensors(actions.long().unsqueeze(-1), logits)
        log_prob = log_pmf.gather(-1, index[..., :1]).squeeze(-1)
        if not entropy:
            return log_prob, None
        probs = th.nn.functional.softmax(logits, dim=-1)
        if action_masks is None:
            p_log_p = th.clamp(logits, min=th.finfo(logits.dtype).min) * probs
        else:
            p_log_p = th.where(action_masks, logits * probs, th.tensor(0.0, device=logits.device))
        return log_prob, -p_log_p.sum(-1)

    def forward(self, obs: PyTorchObs, deterministic: bool = False, action_masks: np.ndarray | None = None) -> th.Tensor:
        """:param obs: observation tensor(s)
        :param deterministic: take the most likely legal action
        :param action_masks: legal actions or None
        :return: actions"""
        return self.get_distribution(obs, action_masks).get_actions(deterministic=deterministic)

    def _predict(
        self, observation: PyTorchObs, deterministic: bool = False, action_masks: np.ndarray | None = None
    ) -> th.Tensor:
        return self.forward(observation, deterministic=deterministic, action_masks=action_masks)

    def predict(
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """Action(s) for observation(s), as SB3's ``BasePolicy.predict`` plus sb3-contrib's ``action_masks``.

        :param observation: observation(s)
        :param state: unused (no recurrent state)
        :param episode_start: unused
        :param deterministic: take the most likely legal action
        :param action_masks: legal actions, bool, or None
        :return: the actions and ``state``
        """
        self.set_training_mode(False)
        obs_tensor, vectorized = self.obs_to_tensor(observation)
        if action_masks is not None:
            self._check_mask_shape(action_masks, obs_tensor, vectorized)
        with th.no_grad():
            actions = self._predict(obs_tensor, deterministic=deterministic, action_masks=action_masks)
        actions = actions.cpu().numpy().reshape((-1, *self.action_space.shape))
        if not vectorized:
            actions = actions.squeeze(axis=0)
        return actions, state


    def _check_mask_shape(self, action_masks: np.ndarray | th.Tensor, obs_tensor: PyTorchObs, vectorized: bool) -> None:
        """Refuse masks that do not have one entry per action for every observation.

        :param action_masks: the masks given to :meth:`predict`
        :param obs_tensor: the observations as a tensor (or dict of tensors)
        :param vectorized: whether the observations are a batch
        """
        first = next(iter(obs_tensor.values())) if isinstance(obs_tensor, dict) else obs_tensor
        n_obs, n_actions = int(first.shape[0]), int(self.action_dist.action_dim)
        shape = tuple(np.shape(action_masks))
        if int(np.prod(shape)) != n_obs * n_actions or (len(shape) > 1 and shape[-1] != n_actions):
            expected = f"({n_obs}, {n_actions})" if vectorized else f"({n_actions},)"
            raise ValueError(
                f"action_masks has shape {shape}, but the action space has {n_actions} actions: predict needs one boolean "
                f"per action for every observation, shape {expected}"
            )


class DirPGCnnPolicy(DirPGPolicy):
    """:class:`DirPGPolicy` with SB3's ``NatureCNN`` by default (images of at least 36×36)."""

    def __init__(self, *args: Any, features_extractor_class: type[BaseFeaturesExtractor] = NatureCNN, **kwargs: Any) -> None:
        super().__init__(*args, features_extractor_class=features_extractor_class, **kwargs)


class DirPGMultiInputPolicy(DirPGPolicy):
    """:class:`DirPGPolicy` with SB3's ``CombinedExtractor`` by default, for Dict observations."""

    def __init__(
        self, *args: Any, features_extractor_class: type[BaseFeaturesExtractor] = CombinedExtractor, **kwargs: Any
    ) -> None:
        super().__init__(*args, features_extractor_class=features_extractor_class, **kwargs)


MlpPolicy = DirPGPolicy
CnnPolicy = DirPGCnnPolicy
MultiInputPolicy = DirPGMultiInputPolicy
