"""MiniGrid wrappers for the paper's MultiRoom experiments (section 6, appendix E.3): observations and shaped rewards."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from sb3_dirpg.envs.minigrid.fast_obs import front_cell
from sb3_dirpg.simulator.registry import register_wrapper_attrs

DEFAULT_DOOR_REWARD = 30.0
DEFAULT_GOAL_REWARD = 100.0
DEFAULT_PICKUP_REWARD = 5.0


class DirectionImageObs(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Keep MiniGrid's egocentric ``image`` (7 x 7 x 3 uint8 by default) and the agent's ``direction``; drop the mission.

    The observation space is ``Dict(image=Box(0, 255, (V, V, 3), uint8), direction=Discrete(4))`` where V is the
    env's ``agent_view_size``, which SB3's ``MultiInputPolicy`` accepts (the paper's policy takes the image and a
    one-hot of the direction).

    :param env: a MiniGrid env (possibly wrapped) whose observations are dicts with ``image`` and ``direction``
    """

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.ObservationWrapper.__init__(self, env)
        inner = env.observation_space
        if not isinstance(inner, spaces.Dict) or "image" not in inner.spaces or "direction" not in inner.spaces:
            raise ValueError(f"DirectionImageObs needs a Dict observation space with 'image' and 'direction', got {inner}")
        self.observation_space = spaces.Dict({"image": inner["image"], "direction": spaces.Discrete(4)})

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        """:param observation: MiniGrid's observation dict
        :return: the dict without the mission string"""
        return {"image": observation["image"], "direction": int(observation["direction"])}


MISSION_COLORS = ("red", "green", "blue", "purple", "yellow", "grey")
MISSION_OBJECTS = ("key", "ball", "box", "door", "room", "goal")
MISSION_SLOTS = 3


def encode_mission(mission: str) -> np.ndarray:
    """Encode a MiniGrid mission as the objects it names, in order: each "<colour> <object>" pair of its words fills
    one slot (a one-hot colour and a one-hot object type), up to :data:`MISSION_SLOTS` slots.

    "put the blue key near the purple box" gives (blue, key), (purple, box); "go to the green door" gives
    (green, door). Missions that name no coloured object (MultiRoom, DoorKey) encode as zeros.

    :param mission: the mission string
    :return: float32 vector of length ``MISSION_SLOTS * (len(MISSION_COLORS) + len(MISSION_OBJECTS))``
    """
    width = len(MISSION_COLORS) + len(MISSION_OBJECTS)
    code = np.zeros(MISSION_SLOTS * width, dtype=np.float32)
    words = mission.replace(",", " ").split()
    slot = 0
    for color, kind in zip(words, words[1:]):
        if slot < MISSION_SLOTS and color in MISSION_COLORS and kind in MISSION_OBJECTS:
            code[slot * width + MISSION_COLORS.index(color)] = 1.0
            code[slot * width + len(MISSION_COLORS) + MISSION_OBJECTS.index(kind)] = 1.0
            slot += 1
    return code


class MissionObs(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Add the mission to a Dict observation as a fixed vector (:func:`encode_mission`), under the key ``mission``.

    Mission-conditioned envs (Fetch, GoToDoor, PutNear, LockedRoom) need it: the view alone does not say which object
    to fetch. Wrap it outside :class:`DirectionImageObs`; :class:`~sb3_dirpg.envs.minigrid.MiniGridCNN` concatenates the
    vector to its features. The mission is read from the env at each observation (it is fixed for an episode, and the
    encoding of the last one is remembered), so the wrapper has no state a snapshot needs.

    :param env: a MiniGrid env (possibly wrapped) with Dict observations
    """

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.ObservationWrapper.__init__(self, env)
        if not isinstance(env.observation_space, spaces.Dict) or not hasattr(env.unwrapped, "mission"):
            raise ValueError(f"MissionObs needs a MiniGrid env with Dict observations, got {env}")
        size = MISSION_SLOTS * (len(MISSION_COLORS) + len(MISSION_OBJECTS))
        mission = spaces.Box(0.0, 1.0, (size,), np.float32)
        self.observation_space = spaces.Dict({**env.observation_space.spaces, "mission": mission})
        self._base = env.unwrapped
        self._last: tuple[str, np.ndarray] = ("", encode_mission(""))

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        """:param observation: the inner Dict observation
        :return: the same with ``mission``"""
        mission = self._base.mission
        if mission != self._last[0]:
            self._last = (mission, encode_mission(mission))
        return {**observation, "mission": self._last[1]}


class MiniGridShapedReward(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """The paper authors' MiniGrid reward: intermediate rewards for doors and pickups, a fixed goal reward.

    The reward of a step is the sum of

    * ``+door_reward`` (default 30) when the step opens a door (also unlocking a locked door), ``-door_reward`` when it
      closes an open door (so closing and re-opening nets 0);
    * ``+pickup_reward`` (default 5) when the agent picks an object up, ``-pickup_reward`` when it drops one;
    * ``+goal_reward`` (default 100) when MiniGrid reports success (a terminal step with positive reward, i.e. the
      agent entered the goal in MultiRoom, DoorKey, Empty ...).

    MiniGrid's own reward (``1 - 0.9 * step_count / max_steps`` on success) is replaced, and kept in
    ``info["minigrid_reward"]``; ``info["is_success"]`` (SB3's convention) says whether the step reached the goal.
    Everything is computed by comparing the state before and after the step (the door in front of the agent, which is
    the only one a step can toggle, and whether the agent carries something), so the wrapper has no state of its own
    and needs nothing in a simulator snapshot.

    :param env: a MiniGrid env (possibly wrapped)
    :param door_reward: reward for opening a door (minus this for closing one)
    :param goal_reward: reward for success
    :param pickup_reward: reward for a pickup (minus this for a drop)
    """

    def __init__(
        self,
        env: gym.Env,
        door_reward: float = DEFAULT_DOOR_REWARD,
        goal_reward: float = DEFAULT_GOAL_REWARD,
        pickup_reward: float = DEFAULT_PICKUP_REWARD,
    ) -> None:
        gym.utils.RecordConstructorArgs.__init__(
            self, door_reward=door_reward, goal_reward=goal_reward, pickup_reward=pickup_reward
        )
        gym.Wrapper.__init__(self, env)
        if not hasattr(env.unwrapped, "grid") or not hasattr(env.unwrapped, "carrying"):
            raise ValueError(f"MiniGridShapedReward needs a MiniGrid env, got {env.unwrapped!r}")
        self.door_reward = float(door_reward)
        self.goal_reward = float(goal_reward)
        self.pickup_reward = float(pickup_reward)
        self._base = env.unwrapped  # read at every step; gymnasium's ``unwrapped`` walks the chain each time

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """:param action: MiniGrid action
        :return: observation, shaped reward, terminated, truncated, info (with ``minigrid_reward`` and ``is_success``)"""
        base = self._base
        front = front_cell(base)
        door = front if front is not None and front.type == "door" else None
        was_open = door is not None and door.is_open
        was_carrying = base.carrying is not None
        obs, reward, terminated, truncated, info = self.env.step(action)
        shaped = 0.0
        if door is not None and door.is_open != was_open:
            shaped += self.door_reward if door.is_open else -self.door_reward
        carrying = base.carrying is not None
        if carrying != was_carrying:
            shaped += self.pickup_reward if carrying else -self.pickup_reward
        if terminated and reward > 0:
            shaped += self.goal_reward
        info = dict(info)
        info["minigrid_reward"] = reward
        info["is_success"] = bool(terminated and reward > 0)
        return obs, shaped, terminated, truncated, info


class MiniGridNoOpPenalty(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Subtracts ``penalty`` from the reward of a step that changed nothing: the agent kept its cell, its direction and
    what it carries, the cell it faces holds the same object in the same state, and the episode did not end.

    Toggling a locked door without its key, a pickup with nothing in front, walking into a wall: a policy that does
    these when sampled loses only a step, which no search objective without a time cost sees; its greedy policy repeats
    them for ever. No shortest way to success has such a step, so the best trajectories stay the best. A bound on the
    return without the penalty stays an upper bound (what the search uses with ``epsilon > 0``), but not a lower one
    (with ``epsilon < 0``). It compares the state before and after each step, so it has no
    state of its own and needs nothing in a simulator snapshot. It runs on the env path, not the compiled simulator.

    :param env: a MiniGrid env (possibly wrapped)
    :param penalty: what a step that changed nothing costs, > 0
    """

    def __init__(self, env: gym.Env, penalty: float = 1.0) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, penalty=penalty)
        gym.Wrapper.__init__(self, env)
        if not hasattr(env.unwrapped, "grid") or not hasattr(env.unwrapped, "carrying"):
            raise ValueError(f"MiniGridNoOpPenalty needs a MiniGrid env, got {env.unwrapped!r}")
        if not penalty > 0:
            raise ValueError(f"MiniGridNoOpPenalty: penalty must be > 0, got {penalty}")
        self.penalty = float(penalty)
        self._base = env.unwrapped

    def _pose(self) -> tuple[Any, ...]:
        """:return: what a step can change: the agent's cell, direction and load, the faced object and its state"""
        base = self._base
        front = front_cell(base)
        door = (front.is_open, front.is_locked) if front is not None and front.type == "door" else None
        return (*(int(v) for v in base.agent_pos), int(base.agent_dir), id(base.carrying), id(front), door)

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """:param action: MiniGrid action
        :return: observation, reward (less the penalty for a step that changed nothing), terminated, truncated, info"""
        before = self._pose()
        obs, reward, terminated, truncated, info = self.env.step(action)
        if not terminated and self._pose() == before:
            reward = float(reward) - self.penalty
        return obs, reward, terminated, truncated, info


def make_minigrid_env(
    env_id: str,
    shaped_reward: bool = True,
    door_reward: float = DEFAULT_DOOR_REWARD,
    goal_reward: float = DEFAULT_GOAL_REWARD,
    pickup_reward: float = DEFAULT_PICKUP_REWARD,
    fast_observation: bool = True,
    **kwargs: Any,
) -> gym.Env:
    """``gym.make(env_id, **kwargs)``, then :class:`~sb3_dirpg.envs.minigrid.fast_obs.FastObservation` (if
    ``fast_observation``), :class:`MiniGridShapedReward` (if ``shaped_reward``) and :class:`DirectionImageObs`.

    :param env_id: a registered MiniGrid id, e.g. ``"MiniGrid-MultiRoom-N6-v0"``
    :param shaped_reward: replace MiniGrid's reward by the shaped one
    :param door_reward: see :class:`MiniGridShapedReward`
    :param goal_reward: see :class:`MiniGridShapedReward`
    :param pickup_reward: see :class:`MiniGridShapedReward`
    :param fast_observation: compute the (identical) observations with the compiled simulator's kernel instead of
        MiniGrid's ``Grid`` methods
    :param kwargs: passed to ``gym.make`` (e.g. ``max_steps``, ``render_mode``)
    :return: the wrapped env
    """
    import minigrid  # noqa: F401  (registers the MiniGrid ids)

    env = gym.make(env_id, **kwargs)
    if fast_observation:
        from sb3_dirpg.envs.minigrid.fast_obs import FastObservation

        env = FastObservation(env)
    if shaped_reward:
        env = MiniGridShapedReward(env, door_reward=door_reward, goal_reward=goal_reward, pickup_reward=pickup_reward)
    return DirectionImageObs(env)


# both wrappers keep no state between steps: snapshots need not save anything for them
register_wrapper_attrs(DirectionImageObs, ())
register_wrapper_attrs(MiniGridShapedReward, ())
register_wrapper_attrs(MissionObs, ())  # its only attribute caches a pure function of the mission
