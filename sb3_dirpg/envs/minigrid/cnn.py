"""The DirPG paper's MiniGrid network, as an SB3 features extractor."""

from __future__ import annotations

import numpy as np
import torch as th
from gymnasium import spaces
from minigrid.core.constants import COLOR_TO_IDX, OBJECT_TO_IDX
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from sb3_dirpg.envs.minigrid.cnn_kernels import ARCHITECTURE, VIEW, CompiledForward, conv_taps

#: MiniGrid's object types (unseen .. agent) and colours, one-hot in the mission gates
N_OBJECT_TYPES, N_COLORS = len(OBJECT_TO_IDX), len(COLOR_TO_IDX)


class MiniGridCNN(BaseFeaturesExtractor):
    """The DirPG paper's MiniGrid network: conv 3→32→48→64 on the 7×7 egocentric view, concatenated with the
    one-hot agent direction (features dimension 64 + 4), and the mission vector of
    :class:`~sb3_dirpg.envs.minigrid.MissionObs` where the observation has one.

    Concatenated after the convolutions, the mission can only shift the action logits; it cannot say *which* object
    in the view matters. ``mission_gates > 0`` adds that (a FiLM-like multiplicative conditioning of the input): each
    gate is a learned bilinear score ``mission @ W_g @ onehot(cell)`` of every view cell's object type and colour,
    fed to the first convolution as an extra input channel. One gate can score "is this the red ball the mission
    names"; PutNear's two objects need two.

    Works on ``Dict(image=Box(7, 7, 3) or Box(3, 7, 7), direction=Discrete(4))`` observations (see
    :class:`sb3_dirpg.envs.DirectionImageObs`). SB3's ``NatureCNN`` needs images of at least 36×36.
    Pass ``normalize_images=False`` in ``policy_kwargs`` to feed MiniGrid's small integer codes unscaled.
    Frames stacked by gymnasium's ``FrameStackObservation(k)`` (image ``Box(k, 7, 7, 3)``, direction
    ``MultiDiscrete([4] * k)``) enter the first convolution as ``3 k`` channels, oldest first, with all ``k`` directions;
    the mission gates score the newest frame.

    :param observation_space: the Dict observation space
    :param mission_gates: mission-scored input channels (0: the paper's network; needs a ``mission`` key otherwise)
    """

    def __init__(self, observation_space: spaces.Dict, mission_gates: int = 0) -> None:
        if not isinstance(observation_space, spaces.Dict) or "image" not in observation_space.spaces:
            raise ValueError(f"MiniGridCNN needs a Dict observation space with an 'image' key, got {observation_space}")
        image_shape = observation_space["image"].shape
        frame_shape = image_shape[-3:]
        self._channels_last = frame_shape[-1] == 3 and frame_shape[0] != 3
        n_frames = image_shape[0] if len(image_shape) == 4 else 1
        n_channels = n_frames * (frame_shape[-1] if self._channels_last else frame_shape[0])
        direction = observation_space.spaces.get("direction")
        if isinstance(direction, spaces.Discrete):
            n_direction = int(direction.n)
        elif isinstance(direction, spaces.MultiDiscrete):
            n_direction = int(np.sum(direction.nvec))
        else:
            n_direction = 0
        mission = observation_space.spaces.get("mission")
        n_mission = int(np.prod(mission.shape)) if isinstance(mission, spaces.Box) else 0
        if mission_gates < 0 or (mission_gates and not n_mission):
            raise ValueError(
                f"mission_gates={mission_gates}: needs a 'mission' key in the observation (wrap the env in MissionObs) "
                "and a count >= 0"
            )
        super().__init__(observation_space, features_dim=64 + n_direction + n_mission)
        self.mission_gates = mission_gates
        if mission_gates:
            self.gates = nn.Linear(n_mission, mission_gates * (N_OBJECT_TYPES + N_COLORS), bias=False)
        self.cnn = nn.Sequential(
            nn.Conv2d(n_channels + mission_gates, 32, kernel_size=2),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 48, kernel_size=2),
            nn.ReLU(),
            nn.Conv2d(48, 64, kernel_size=2),
            nn.Flatten(),
        )
        with th.no_grad():
            sample = self._to_channels_first(th.zeros(1, *image_shape))
            sample = th.cat([sample, th.zeros(1, mission_gates, *sample.shape[2:])], dim=1)
            n_flat = self.cnn(sample).shape[1]
        if n_flat != 64:
            raise ValueError(f"MiniGridCNN expects a 7x7 view (64 conv features), got image shape {image_shape}")
        self.n_direction = n_direction
        self.n_mission = n_mission

    def _to_channels_first(self, image: th.Tensor) -> th.Tensor:
        """:param image: a batch of views, (batch, [frames,] 7, 7, 3) or (batch, [frames,] 3, 7, 7)
        :return: the views channels first, the frames' channels one after the other, (batch, frames * 3, 7, 7)"""
        if self._channels_last:
            image = image.movedim(-1, -3)
        return image.reshape(image.shape[0], -1, *image.shape[-2:])

    def forward(self, observations: dict[str, th.Tensor]) -> th.Tensor:
        """:param observations: preprocessed Dict observation (direction one-hot)
        :return: features, shape (batch, 64 + 4)"""
        image = self._to_channels_first(observations["image"].float())
        if self.mission_gates:
            image = th.cat([image, self._gate_channels(image, observations["mission"].float())], dim=1)
        features = self.cnn(image)
        if self.n_direction:
            # SB3 buffers store a Discrete observation with shape (1,), so its one-hot can arrive as (batch, 1, 4)
            features = th.cat([features, observations["direction"].float().reshape(features.shape[0], -1)], dim=1)
        if self.n_mission:
            features = th.cat([features, observations["mission"].float().reshape(features.shape[0], -1)], dim=1)
        return features

    def _gate_channels(self, image: th.Tensor, mission: th.Tensor) -> th.Tensor:
        """:param image: the views, channels first (batch, frames * 3, 7, 7): object type, colour, state codes per frame
        :param mission: the mission vectors (batch, n_mission)
        :return: the gates' scores of every cell of the newest view, (batch, mission_gates, 7, 7)"""
        kinds = nn.functional.one_hot(image[:, -3].long().clamp(0, N_OBJECT_TYPES - 1), N_OBJECT_TYPES)
        colors = nn.functional.one_hot(image[:, -2].long().clamp(0, N_COLORS - 1), N_COLORS)
        cells = th.cat([kinds, colors], dim=-1).float()  # (batch, 7, 7, 17)
        weights = self.gates(mission.reshape(mission.shape[0], -1)).reshape(mission.shape[0], self.mission_gates, -1)
        return th.einsum("bhwc,bgc->bghw", cells, weights)

    def compiled_forward(self, policy_net: nn.Module, action_net: nn.Module, normalize_images: bool) -> CompiledForward | None:
        """The search's hook for a forward in compiled code (:mod:`~sb3_dirpg.envs.minigrid.cnn_kernels`): this network
        with no hidden layer after it and a linear action head, on CPU, copied as it is now.

        :param policy_net: the policy's hidden layers (``mlp_extractor.policy_net``)
        :param action_net: the action head
        :param normalize_images: whether the policy divides images by 255 (not supported)
        :return: the copied weights, or None where the compiled forward does not apply
        """
        image_shape = self._observation_space["image"].shape
        plain_head = isinstance(action_net, nn.Linear) and isinstance(policy_net, nn.Sequential) and len(policy_net) == 0
        square = image_shape in ((VIEW, VIEW, 3), (3, VIEW, VIEW))
        if normalize_images or self.n_mission or self.n_direction != 4 or not plain_head or not square:
            return None
        conv1, _, _, conv2, _, conv3, _ = self.cnn
        if conv1.weight.device.type != "cpu":
            return None
        with th.no_grad():
            taps = [conv_taps(conv.weight.numpy()) for conv in (conv1, conv2, conv3)]
            biases = [conv.bias.numpy().astype(np.float32) for conv in (conv1, conv2, conv3)]
            head = np.ascontiguousarray(action_net.weight.numpy(), np.float32), action_net.bias.numpy().astype(np.float32)
        return CompiledForward((ARCHITECTURE, taps[0], biases[0], taps[1], biases[1], taps[2], biases[2], *head))
