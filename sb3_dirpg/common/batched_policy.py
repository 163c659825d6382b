"""Batched, gradient-free policy evaluation for the search, from raw sub-env observations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.utils import obs_as_tensor
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper, VecTransposeImage

from sb3_dirpg.common.policies import DirPGPolicy
from sb3_dirpg.search.protocols import PolicyFunction

#: below this batch size a search forward runs torch's own CPU kernels instead of oneDNN's, whose convolutions cost
#: 3-4 times as much at batches of 2 to 4 (``python -m benchmarks.conv_batch``); the results agree up to float rounding
ONEDNN_MIN_BATCH = 8


def stack_observations(obs: Sequence[Any], space: spaces.Space) -> np.ndarray | dict[str, np.ndarray]:
    """Stack single observations into a batch the way a ``VecEnv`` would.

    :param obs: observations of single envs
    :param space: the observation space
    :return: a batched array, or a dict of batched arrays for Dict spaces
    """
    if isinstance(space, spaces.Dict):
        return {key: np.stack([np.asarray(o[key]) for o in obs]) for key in space.spaces}
    return np.stack([np.asarray(o) for o in obs])


class ObservationTransform:
    """The image transposition a ``VecTransposeImage`` applies, as a picklable function of a stacked batch.

    :param transposed: for each VecTransposeImage layer (outermost first), the Dict keys it transposes, or None when
        it transposes the whole (Box) observation
    """

    def __init__(self, transposed: list[list[str] | None]) -> None:
        self.transposed = transposed

    @classmethod
    def of(cls, venv: VecEnv) -> ObservationTransform:
        """:param venv: a VecEnv, possibly wrapped
        :return: the transformation its VecTransposeImage layers apply"""
        layers = []
        while isinstance(venv, VecEnvWrapper):
            if isinstance(venv, VecTransposeImage):
                layers.append(list(venv.image_space_keys) if hasattr(venv, "image_space_keys") else None)
            venv = venv.venv
        return cls(layers)

    def __call__(self, batch: Any) -> Any:
        """:param batch: stacked raw observations
        :return: what the policy sees"""
        for keys in reversed(self.transposed):
            if keys is None:
                batch = VecTransposeImage.transpose_image(batch)
            else:
                batch = dict(batch)
                for key in keys:
                    batch[key] = VecTransposeImage.transpose_image(batch[key])
        return batch


def _small_sample(space: spaces.Space, rng: np.random.Generator) -> Any:
    """:param space: an observation space
    :param rng: the random source
    :return: a sample whose integer boxes hold small codes (at most 10 above their low), as MiniGrid's views do, so that
        a check against torch is not swamped by huge activations"""
    if isinstance(space, spaces.Dict):
        return {key: _small_sample(sub, rng) for key, sub in space.spaces.items()}
    if isinstance(space, spaces.Box) and np.issubdtype(space.dtype, np.integer):
        low = np.broadcast_to(space.low, space.shape)
        return rng.integers(low, np.minimum(space.high, low + 10), endpoint=True).astype(space.dtype)
    space.seed(int(rng.integers(2**31)))
    return space.sample()


class BatchedPolicy:
    """Evaluates a :class:`~sb3_dirpg.common.policies.DirPGPolicy` on lists of raw observations.

    :param policy: the policy
    :param observation_space: the raw (sub-env) observation space
    :param transform: the VecEnv's observation transformation
    """

    def __init__(self, policy: DirPGPolicy, observation_space: spaces.Space, transform: ObservationTransform) -> None:
        self.policy = policy
        self.observation_space = observation_space
        self.transform = transform
        subspaces = observation_space.spaces.values() if isinstance(observation_space, spaces.Dict) else [observation_space]
        self.integer_observations = all(np.issubdtype(sub.dtype, np.integer) for sub in subspaces)
        self._compiled_agrees: bool | None = None  # whether the extractor's compiled forward was checked, and agreed

    def compiled_forward(self) -> Any:
        """The features extractor's forward in compiled code, if it offers one for this policy (its
        ``compiled_forward(policy_net, action_net, normalize_images)`` hook, e.g.
        :meth:`~sb3_dirpg.envs.minigrid.MiniGridCNN.compiled_forward`), with the policy's current weights. The first
        time, it is checked against the torch forward with every parameter perturbed for the check (so that no weight or
        bias is zero, as SB3 initialises biases) on random observations of the raw space; it is used only if it agrees
        to float32 rounding.

        :return: an object with ``weights`` and ``logits(obs)``, or None
        """
        if self._compiled_agrees is False:
            return None
        forward = self._hooked_forward(self.policy)
        if forward is not None and self._compiled_agrees is None:
            self._compiled_agrees = self._agrees()
        return forward if self._compiled_agrees else None

    @staticmethod
    def _hooked_forward(policy: DirPGPolicy) -> Any:
        """:param policy: a policy
        :return: its features extractor's compiled forward, or None"""
        hook = getattr(policy.features_extractor, "compiled_forward", None)
        if hook is None:
            return None
        return hook(policy.mlp_extractor.policy_net, policy.action_net, policy.normalize_images)

    def _agrees(self) -> bool:
        """:return: whether the compiled forward gives the torch forward's logits, on a copy of the policy with every
            parameter perturbed (the live weights are never written: a search worker may be reading them), on 16 random
            observations of the raw space with small integer codes (up to float32 rounding)"""
        with th.random.fork_rng(devices=[]):  # the copy's initialisation leaves torch's global generator as it was
            probe = type(self.policy)(**self.policy._get_constructor_parameters()).to(self.policy.device)
        probe.load_state_dict(self.policy.state_dict())
        generator = th.Generator().manual_seed(0)
        obs = [_small_sample(self.observation_space, np.random.default_rng(i)) for i in range(16)]
        with th.no_grad():
            for parameter in probe.parameters():
                noise = th.randn(parameter.shape, generator=generator, dtype=parameter.dtype)
                parameter.add_(0.3 * noise.to(parameter.device))
        forward = self._hooked_forward(probe)
        try:
            got = forward.logits(obs)
        except (KeyError, IndexError, TypeError, ValueError):
            return False
        masks = np.ones((len(obs), got.shape[1]), dtype=bool)
        want = BatchedPolicy(probe, self.observation_space, self.transform).logits(obs, masks)
        scale = max(1.0, float(np.abs(want).max()))
        return got.shape == want.shape and bool(np.allclose(got, want, rtol=1e-4, atol=1e-4 * scale))

    def to_tensor(self, obs: list[Any], device: th.device | None = None) -> th.Tensor | dict[str, th.Tensor]:
        """:param obs: raw observations
        :param device: the policy's device (None: look it up)
        :return: the batch as the policy sees it"""
        device = self.policy.device if device is None else device
        return obs_as_tensor(self.transform(stack_observations(obs, self.observation_space)), device)

    def logits(self, obs: list[Any], masks: np.ndarray, device: th.device | None = None) -> np.ndarray:
        """One batched forward without gradients.

        :param obs: raw observations
        :param masks: legal actions (the search applies them)
        :param device: the policy's device (None: look it up; SB3 finds it by walking the parameters)
        :return: action logits, shape (n, n_actions)
        """
        device = self.policy.device if device is None else device
        small = len(obs) < ONEDNN_MIN_BATCH and device.type == "cpu" and th.backends.mkldnn.enabled
        if small:
            th.backends.mkldnn.enabled = False
        try:
            with th.inference_mode():  # no autograd bookkeeping at all: the logits leave torch at once
                return self.policy.action_logits(self.to_tensor(obs, device)).cpu().numpy()
        finally:
            if small:
                th.backends.mkldnn.enabled = True

    def search_function(self) -> PolicyFunction:
        """The policy function for one search (the policy is fixed during a search, on the device it has now).

        With integer-valued observations (MiniGrid views, one-hot or discrete states), identical observations recur
        often in a search tree, so logits are memoised by observation bytes and only unseen observations are forwarded.
        Where the features extractor has a compiled forward (:meth:`compiled_forward`), the forwards run in it, and the
        function's ``compiled_weights`` hand its weights to a compiled search loop (None otherwise).

        :return: a function from raw observations and masks to logits
        """
        device = self.policy.device
        compiled = self.compiled_forward()

        def forward(obs: list[Any], masks: np.ndarray) -> np.ndarray:
            return self.logits(obs, masks, device) if compiled is None else compiled.logits(obs)

        if not self.integer_observations:
            return forward
        cache: dict[Any, np.ndarray] = {}
        if isinstance(self.observation_space, spaces.Dict):

            def key_of(obs: Any) -> Any:
                return tuple(np.asarray(v).tobytes() for v in obs.values())
        else:

            def key_of(obs: Any) -> Any:
                return np.asarray(obs).tobytes()

        def memoised(obs: list[Any], masks: np.ndarray) -> np.ndarray:
            keys = [key_of(o) for o in obs]
            todo: dict[Any, int] = {}
            for i, k in enumerate(keys):
                if k not in cache and k not in todo:
                    todo[k] = i
            if todo:
                rows = list(todo.values())
                cache.update(zip(todo.keys(), forward([obs[i] for i in rows], masks[rows])))
            return np.stack([cache[k] for k in keys])

        memoised.compiled_weights = None if compiled is None else compiled.weights  # type: ignore[attr-defined]
        return memoised
