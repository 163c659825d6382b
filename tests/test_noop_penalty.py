"""``MiniGridNoOpPenalty``: a step that changes nothing costs ``penalty``; every other step keeps its reward."""

from __future__ import annotations

import gymnasium as gym
import minigrid  # noqa: F401  (registers MiniGrid's ids)
import numpy as np
import pytest
from minigrid.core.world_object import Door, Key

from sb3_dirpg.common.simulator_backends import make_vec_simulator
from sb3_dirpg.envs import DirectionImageObs, MiniGridNoOpPenalty, MiniGridShapedReward
from sb3_dirpg.simulator import SimulatorWrapper

LEFT, RIGHT, FORWARD, PICKUP, DROP, TOGGLE, DONE = range(7)


def penalised(penalty: float = 2.0) -> gym.Env:
    """:return: Empty-5x5 (agent at (1, 1) facing east, goal at (3, 3)) with the shaped reward and the penalty"""
    env = MiniGridNoOpPenalty(MiniGridShapedReward(gym.make("MiniGrid-Empty-5x5-v0")), penalty=penalty)
    env.reset(seed=0)
    return env


def test_only_the_steps_that_change_nothing_cost_the_penalty() -> None:
    env = penalised()
    rewards = [env.step(action)[1] for action in (PICKUP, DROP, TOGGLE, DONE, LEFT, FORWARD, RIGHT, FORWARD, FORWARD, FORWARD)]
    # north of (1, 1) is the wall: the forward after LEFT goes nowhere; the last one walks into the east wall
    assert rewards == [-2.0, -2.0, -2.0, -2.0, 0.0, -2.0, 0.0, 0.0, 0.0, -2.0]
    assert tuple(env.unwrapped.agent_pos) == (3, 1)


def test_a_locked_door_toggled_without_its_key_costs_and_with_it_opens() -> None:
    env = penalised(0.5)
    base = env.unwrapped
    door = Door("yellow", is_locked=True)
    base.grid.set(*base.front_pos, door)
    assert env.step(TOGGLE)[1] == -0.5 and door.is_locked
    base.carrying = Key("yellow")
    assert env.step(TOGGLE)[1] == MiniGridShapedReward(gym.make("MiniGrid-Empty-5x5-v0")).door_reward and door.is_open
    assert env.step(FORWARD)[1] == 0.0  # into the open door's cell


def test_the_successful_step_is_never_penalised() -> None:
    env = penalised()
    rewards = [env.step(action) for action in (FORWARD, FORWARD, RIGHT, FORWARD, FORWARD)]
    *_, (_, reward, terminated, _, info) = rewards
    assert terminated and info["is_success"] and reward == 100.0
    assert all(r[1] == 0.0 for r in rewards[:-1])


def test_bad_penalties_are_refused_and_the_compiled_simulator_says_why_not() -> None:
    with pytest.raises(ValueError, match="penalty must be > 0"):
        penalised(0.0)
    with pytest.raises(ValueError, match="needs a MiniGrid env"):
        MiniGridNoOpPenalty(gym.make("CartPole-v1"))
    env = DirectionImageObs(MiniGridNoOpPenalty(MiniGridShapedReward(gym.make("MiniGrid-Empty-5x5-v0"))))
    with pytest.raises(ValueError, match="the wrapper chain holds MiniGridNoOpPenalty"):
        make_vec_simulator([SimulatorWrapper(env)], None, "compiled")


def test_restored_snapshots_give_the_same_penalties() -> None:
    """The wrapper keeps no state, so a simulator that restores a snapshot replays the same rewards."""
    simulator = SimulatorWrapper(penalised())
    simulator.reset(seed=3)
    snapshot = simulator.snapshot()
    actions = np.random.default_rng(0).integers(0, 7, size=30)
    first = [simulator.step(int(a))[1] for a in actions]
    simulator.restore(snapshot)
    assert [simulator.step(int(a))[1] for a in actions] == first and min(first) == -2.0
