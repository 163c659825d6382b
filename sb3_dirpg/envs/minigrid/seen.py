"""The cells of a MiniGrid episode that the agent has seen so far, as env state, so that the grid bound and the progress
reward can stop using what the agent could not know (where a hidden key lies)."""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np
from minigrid.core.constants import DIR_TO_VEC
from minigrid.minigrid_env import MiniGridEnv

from sb3_dirpg.simulator.registry import register_wrapper_attrs


@functools.cache
def view_offsets(size: int, direction: int) -> tuple[np.ndarray, np.ndarray]:
    """Where each cell of the agent's view lies, relative to the agent.

    Cell ``(i, j)`` of MiniGrid's ``image`` is ``size - 1 - j`` cells ahead of the agent and ``i - size // 2`` to its
    right (MiniGrid's ``get_view_coords`` inverted).

    :param size: the view's side (``agent_view_size``)
    :param direction: the agent's direction (0 right, 1 down, 2 left, 3 up)
    :return: the column and row offsets, int arrays of shape (size, size) indexed like the image's first two axes
    """
    fx, fy = (int(c) for c in DIR_TO_VEC[direction])
    rx, ry = -fy, fx  # MiniGrid's right_vec
    i, j = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
    ahead, right = size - 1 - j, i - size // 2
    return ahead * fx + right * rx, ahead * fy + right * ry


class SeenCells(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Keeps ``seen``, the grid cells the agent has seen since the episode's reset (its view, with MiniGrid's occlusion:
    nothing behind a closed door or a wall).

    It is state of the env chain: :class:`~sb3_dirpg.simulator.SimulatorWrapper` saves and restores it with every
    snapshot (the array is replaced, never changed in place, so a snapshot keeps a reference). With it in the chain,
    :class:`~sb3_dirpg.envs.minigrid.MiniGridBound` and :class:`~sb3_dirpg.envs.minigrid.progress.MiniGridProgressReward`
    count a key or box the agent has not seen at the nearest cell it has not seen (a lower bound on the steps still),
    so that neither the search's priority nor the progress reward leads to a hidden key. Put it inside the wrappers
    that drop the ``image`` (:class:`~sb3_dirpg.envs.DirectionImageObs`): it reads the ``image`` of each observation.

    :param env: a MiniGrid env whose observations are dicts with MiniGrid's ``image``
    """

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        base = env.unwrapped
        if not isinstance(base, MiniGridEnv):
            raise ValueError(f"SeenCells needs a MiniGrid env, got {type(base).__name__}")
        space = env.observation_space
        if not isinstance(space, gym.spaces.Dict) or "image" not in space.spaces:
            raise ValueError(
                f"SeenCells reads MiniGrid's 'image' observation, but the env's observation space is {space}; put it "
                "inside the wrappers that change the observation (DirectionImageObs, FlatObsWrapper, ...)"
            )
        self.seen = np.zeros((0, 0), dtype=bool)

    def _add_view(self, image: np.ndarray) -> None:
        """Mark the cells of the agent's current view that the image shows (MiniGrid encodes an unseen cell as 0).

        :param image: MiniGrid's ``image`` observation, (size, size, 3)
        """
        base = self.env.unwrapped
        dx, dy = view_offsets(image.shape[0], int(base.agent_dir))
        xs, ys = dx + int(base.agent_pos[0]), dy + int(base.agent_pos[1])
        height, width = self.seen.shape
        shown = (image[:, :, 0] != 0) & (xs >= 0) & (xs < width) & (ys >= 0) & (ys < height)
        xs, ys = xs[shown], ys[shown]
        if self.seen[ys, xs].all():
            return
        seen = self.seen.copy()
        seen[ys, xs] = True
        seen.flags.writeable = False
        self.seen = seen

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """:param kwargs: passed to the env's ``reset``
        :return: the first observation and info"""
        obs, info = self.env.reset(**kwargs)
        grid = self.env.unwrapped.grid
        self.seen = np.zeros((grid.height, grid.width), dtype=bool)
        self._add_view(obs["image"])
        return obs, info

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """:param action: MiniGrid action
        :return: the env's step, after the new view is added to ``seen``"""
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._add_view(obs["image"])
        return obs, reward, terminated, truncated, info


def seen_cells_layer(env: gym.Env) -> SeenCells | None:
    """:param env: an env chain
    :return: the :class:`SeenCells` layer in it, or None"""
    layer = env
    while isinstance(layer, gym.Wrapper):
        if isinstance(layer, SeenCells):
            return layer
        layer = layer.env
    return None


register_wrapper_attrs(SeenCells, ("seen",))
