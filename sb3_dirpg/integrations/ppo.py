"""Start SB3's PPO (or sb3-contrib's MaskablePPO) from a policy trained by DirPG, REINFORCE or CEM."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.utils import is_masking_supported
from stable_baselines3 import PPO
from stable_baselines3.common.type_aliases import GymEnv
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper, VecNormalize

from sb3_dirpg.common.item_policy import ItemPolicy
from sb3_dirpg.common.policies import DirPGPolicy
from sb3_dirpg.common.simulator_algorithm import SimulatorAlgorithm

# the parameters the actor of an ActorCriticPolicy shares with a DirPGPolicy
ACTOR_PREFIXES = ("features_extractor.", "pi_features_extractor.", "mlp_extractor.policy_net.", "action_net.")


def ppo_policy_kwargs(policy: DirPGPolicy, vf_arch: list[int] | None = None) -> dict[str, Any]:
    """The ``policy_kwargs`` of a PPO policy whose actor has the shapes of ``policy``.

    :param policy: the trained DirPG policy
    :param vf_arch: hidden layers of the value network (None: the same as the actor's)
    :return: ``net_arch``, ``activation_fn``, ``features_extractor_class`` and its kwargs, ``normalize_images``
    """
    return {
        "net_arch": {"pi": list(policy.net_arch), "vf": list(policy.net_arch if vf_arch is None else vf_arch)},
        "activation_fn": policy.activation_fn,
        "features_extractor_class": policy.features_extractor_class,
        "features_extractor_kwargs": dict(policy.features_extractor_kwargs),
        "normalize_images": policy.normalize_images,
        "share_features_extractor": True,
    }


def ppo_from_dirpg(
    model: SimulatorAlgorithm,
    env: GymEnv | str | None = None,
    maskable: bool | None = None,
    vf_arch: list[int] | None = None,
    **ppo_kwargs: Any,
) -> PPO:
    """A PPO whose actor is a copy of the model's policy, ready to fine-tune with ``learn``.

    The PPO policy gets the model's ``net_arch`` (as ``pi``), activation, features extractor (shared between actor
    and critic, as in SB3's default) and ``normalize_images``; the features extractor, ``mlp_extractor.policy_net``
    and ``action_net`` weights of the policy the model acts with (:attr:`acting_policy`: the average of its weights with
    ``ema_decay``) are copied, so the PPO policy gives exactly the model's action probabilities. The value
    network (``mlp_extractor.value_net`` and ``value_net``) starts from PPO's own initialisation, and the optimizer
    starts fresh. Since the features extractor is shared, the first PPO updates also move the actor's features
    while the critic is still poor: consider a smaller ``learning_rate`` or pass ``policy_kwargs=dict(
    share_features_extractor=False)`` (the copied weights then go to the actor's extractor only).

    :param model: a trained :class:`~sb3_dirpg.DirPG` (or :class:`~sb3_dirpg.baselines.Reinforce`,
        :class:`~sb3_dirpg.baselines.CEM`)
    :param env: the env, VecEnv or env id to fine-tune on (None: the model's env); its spaces must be the model's
    :param maskable: build sb3-contrib's ``MaskablePPO`` (None: when the env provides ``action_masks()``)
    :param vf_arch: hidden layers of the value network (None: the same as the actor's)
    :param ppo_kwargs: other arguments of ``PPO`` / ``MaskablePPO`` (``learning_rate``, ``n_steps``, ``seed``, ...);
        a ``policy_kwargs`` entry is merged over the copied network settings (it may not change the actor's shapes)
    :return: the new PPO or MaskablePPO
    """
    policy = model.acting_policy  # what the model acts with: the average of its weights with ema_decay
    if isinstance(policy, ItemPolicy):
        raise TypeError(
            "ppo_from_dirpg: an ItemPolicy scores each row of the observation with one network, which has no PPO "
            "counterpart (SB3's PPO policies map the whole observation to the actions): fine-tuning it is not supported"
        )
    if not isinstance(policy, DirPGPolicy):
        raise TypeError(f"ppo_from_dirpg needs a model with a DirPGPolicy, got {type(policy).__name__}")
    env = model.get_env() if env is None else env
    if env is None:
        raise ValueError("ppo_from_dirpg: the model has no env; pass env=... to fine-tune on")
    policy_kwargs = {**ppo_policy_kwargs(policy, vf_arch), **(ppo_kwargs.pop("policy_kwargs", None) or {})}
    alias = "MultiInputPolicy" if isinstance(policy.observation_space, spaces.Dict) else "MlpPolicy"
    ppo_kwargs.setdefault("device", policy.device)
    if isinstance(env, str):
        env = gym.make(env)
    if isinstance(env, VecEnv):
        check_normalized_storage(env)
    if maskable is None:
        maskable = is_masking_supported(env)
    algo_class = MaskablePPO if maskable else PPO
    ppo = algo_class(alias, env, policy_kwargs=policy_kwargs, **ppo_kwargs)
    if ppo.observation_space != policy.observation_space or ppo.action_space != policy.action_space:
        raise ValueError(
            f"ppo_from_dirpg: the env's spaces ({ppo.observation_space}, {ppo.action_space}) differ from the model's "
            f"({policy.observation_space}, {policy.action_space})"
        )
    copy_actor(policy, ppo.policy)
    return ppo


def check_normalized_storage(env: GymEnv) -> None:
    """Refuse a ``VecNormalize`` whose normalized observations would be stored in an integer buffer.

    SB3 >= 2.7.1 stores rollout observations in the observation space's dtype, and ``VecNormalize`` rewrites the space
    to float32 for image spaces only: a normalized non-image integer space (MiniGrid's ``FlatObsWrapper`` declares uint8
    since minigrid 2.5) makes PPO act on the normalized floats but train on them wrapped around into integers.

    :param env: an env or VecEnv (a plain env passes)
    :raises ValueError: naming the space and the fix, when a normalized observation has an integer dtype
    """
    while isinstance(env, VecEnvWrapper) and not isinstance(env, VecNormalize):
        env = env.venv
    if not isinstance(env, VecNormalize) or not env.norm_obs:
        return
    space = env.observation_space
    named = {key: space[key] for key in env.norm_obs_keys or []} if isinstance(space, spaces.Dict) else {"": space}
    for key, sub in named.items():
        if not np.issubdtype(sub.dtype, np.floating):
            where = f"the observation key {key!r}" if key else "the observation"
            raise ValueError(
                f"VecNormalize normalizes {where}, whose space has dtype {sub.dtype}: SB3 (>= 2.7.1) stores rollout "
                "observations in that dtype, so the normalized floats would be wrapped around into integers and the "
                "policy trained on garbage. Cast the observation to float32 before VecNormalize, e.g. "
                "gymnasium.wrappers.DtypeObservation(env, np.float32) after minigrid.wrappers.FlatObsWrapper (rl-zoo3: "
                "env_wrapper: [minigrid.wrappers.FlatObsWrapper, {gymnasium.wrappers.DtypeObservation: {dtype: float32}}])"
            )


def copy_actor(source: DirPGPolicy, target: Any) -> None:
    """Copy the actor weights of a DirPG policy into an ``ActorCriticPolicy`` (or a maskable one) of the same shapes.

    :param source: the DirPG policy
    :param target: the PPO policy
    """
    state = source.state_dict()
    target_state = target.state_dict()
    copied = {}
    for name, tensor in state.items():
        if name.startswith("features_extractor."):
            # with a shared extractor the three names alias one module; otherwise the actor's is pi_features_extractor
            for alias in ("features_extractor.", "pi_features_extractor."):
                key = alias + name[len("features_extractor.") :]
                if key in target_state:
                    copied[key] = tensor
        elif name in target_state:
            copied[name] = tensor
        else:
            raise ValueError(f"the PPO policy has no parameter {name!r}: its network does not match the DirPG policy's")
    for key, tensor in copied.items():
        if target_state[key].shape != tensor.shape:
            raise ValueError(f"shape mismatch for {key!r}: PPO {tuple(target_state[key].shape)}, DirPG {tuple(tensor.shape)}")
    missing = [k for k in target_state if k.startswith(ACTOR_PREFIXES) and k not in copied]
    if missing:
        raise ValueError(f"actor parameters of the PPO policy left uncopied: {missing}")
    target.load_state_dict(copied, strict=False)
