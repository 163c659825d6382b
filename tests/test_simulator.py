"""Tests of the simulator-cloning wrapper: exact snapshot/restore, cloners, self-check, masks, strip_monitor."""

from __future__ import annotations

import copy

import gymnasium as gym
import minigrid  # noqa: F401  (registers the MiniGrid envs)
import numpy as np
import pytest
from gymnasium import spaces
from sb3_contrib.common.wrappers import ActionMasker
from stable_baselines3.common.monitor import Monitor

from sb3_dirpg.envs.minigrid import MiniGridCloner
from sb3_dirpg.simulator import (
    DeepcopyCloner,
    FieldsCloner,
    NondeterministicEnvError,
    NotClonableError,
    SimulatorWrapper,
    register_cloner,
    strip_monitor,
)
from tests.helpers import CounterEnv, LockedEnv, cells_of, face

# MiniGrid directions: 0 = +x, 1 = +y, 2 = -x, 3 = -y
TAXI_ID = "Taxi-v4" if "Taxi-v4" in gym.registry else "Taxi-v3"


def assert_obs_equal(a, b) -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_obs_equal(a[k], b[k])
    else:
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def step_both(sim: gym.Env, ref: gym.Env, actions) -> None:
    for a in actions:
        o1, r1, te1, tr1, _ = sim.step(a)
        o2, r2, te2, tr2, _ = ref.step(a)
        assert_obs_equal(o1, o2)
        assert (r1, te1, tr1) == (r2, te2, tr2)
        if te1 or tr1:
            return


# ---------------------------------------------------------------------------- MiniGrid


def test_minigrid_multiroom_doors_and_branching():
    sim = SimulatorWrapper(gym.make("MiniGrid-MultiRoom-N6-v0"))
    assert isinstance(sim.cloner, MiniGridCloner)
    obs0, _ = sim.reset(seed=3)
    s0 = sim.snapshot()  # runs the self-check, which must leave the env as it was
    assert_obs_equal(sim.unwrapped.gen_obs(), obs0)
    assert sim.horizon == sim.unwrapped.max_steps
    ref = copy.deepcopy(sim.env)
    base = sim.unwrapped
    doors = cells_of(sim, "door")
    assert len(doors) >= 2
    door_objs = [base.grid.get(*p) for p in doors]
    assert not any(d.is_open for d in door_objs)

    for p in doors:  # open every door through env.step (in-place mutation of the Door objects)
        face(sim, p)
        sim.step(5)
    assert all(d.is_open for d in door_objs)

    sim.restore(s0)
    assert not any(d.is_open for d in door_objs)
    assert [base.grid.get(*p) for p in doors] == door_objs
    assert base.agent_pos == ref.unwrapped.agent_pos and base.agent_dir == ref.unwrapped.agent_dir
    assert base.step_count == 0
    np.testing.assert_array_equal(base.grid.encode(), ref.unwrapped.grid.encode())

    # random branching compared against the deepcopy reference
    rng = np.random.default_rng(0)
    choices = [0, 1, 2, 2, 2, 5]
    for p in doors[:2]:  # same teleports on both, so that the random walks go through doors
        face(sim, p)
        face(ref, p)
    step_both(sim, ref, [5])
    s1 = sim.snapshot()
    ref1 = copy.deepcopy(ref)
    step_both(sim, ref, rng.choice(choices, size=40))
    for _ in range(3):
        sim.restore(s1)
        sim.step(5)
        for a in rng.choice(choices, size=30):  # a divergent branch, not compared
            sim.step(a)
        sim.restore(s1)
        ref = copy.deepcopy(ref1)
        np.testing.assert_array_equal(base.grid.encode(), ref.unwrapped.grid.encode())
        step_both(sim, ref, rng.choice(choices, size=30))
        np.testing.assert_array_equal(base.grid.encode(), ref.unwrapped.grid.encode())
        assert base.step_count == ref.unwrapped.step_count


def test_minigrid_doorkey_pickup_and_toggle():
    sim = SimulatorWrapper(gym.make("MiniGrid-DoorKey-5x5-v0"))
    sim.reset(seed=1)
    base = sim.unwrapped
    (key_pos,) = cells_of(sim, "key")
    (door_pos,) = cells_of(sim, "door")
    key, door = base.grid.get(*key_pos), base.grid.get(*door_pos)
    assert door.is_locked and not door.is_open

    face(sim, key_pos)
    obs_before = base.gen_obs()
    s_key = sim.snapshot()
    sim.step(3)  # pickup
    assert base.carrying is key and base.grid.get(*key_pos) is None
    assert tuple(key.cur_pos) == (-1, -1)

    face(sim, door_pos)
    s_door = sim.snapshot()
    _, _, _, _, _ = sim.step(5)  # toggle: unlocks and opens with the key
    assert door.is_open and not door.is_locked

    sim.restore(s_door)
    assert door.is_locked and not door.is_open and base.carrying is key
    sim.restore(s_key)
    assert base.carrying is None
    assert base.grid.get(*key_pos) is key
    assert tuple(key.cur_pos) == key_pos
    assert_obs_equal(base.gen_obs(), obs_before)
    # the same actions give the same result after restore
    sim.step(3)
    face(sim, door_pos)
    sim.step(5)
    assert door.is_open and not door.is_locked and base.carrying is key


# ---------------------------------------------------------------------------- classic control and toy text


def test_cartpole_time_limit_restored():
    sim = SimulatorWrapper(gym.make("CartPole-v1", max_episode_steps=20))
    assert isinstance(sim.cloner, FieldsCloner)
    assert sim.horizon == 20
    sim.reset(seed=0)
    for t in range(5):
        sim.step(t % 2)
    s5 = sim.snapshot()
    state5 = sim.unwrapped.state.copy()

    def run() -> tuple[int, list[np.ndarray]]:
        observations = []
        for t in range(100):
            obs, _, terminated, truncated, _ = sim.step(t % 2)
            observations.append(obs)
            if terminated or truncated:
                assert truncated and not terminated
                return t + 1, observations
        raise AssertionError("no truncation")

    n1, obs1 = run()
    assert n1 == 15
    sim.restore(s5)
    np.testing.assert_array_equal(sim.unwrapped.state, state5)
    assert sim.get_wrapper_attr("_elapsed_steps") == 5
    n2, obs2 = run()
    assert n2 == n1
    np.testing.assert_array_equal(np.array(obs1), np.array(obs2))


def test_frozenlake_slippery_rng_restored():
    sim = SimulatorWrapper(gym.make("FrozenLake-v1", is_slippery=True))
    sim.reset(seed=0)
    s0 = sim.snapshot()
    actions = [2, 1, 2, 1, 2, 2, 1, 1]

    def trajectory() -> list[tuple]:
        out = []
        for a in actions:
            obs, r, te, tr, _ = sim.step(a)
            out.append((obs, r, te, tr))
            if te or tr:
                break
        return out

    first = trajectory()
    for _ in range(30):
        sim.restore(s0)
        assert trajectory() == first
    for _ in range(10):  # moving the RNG after a restore is undone by the next restore
        sim.restore(s0)
        sim.unwrapped.np_random.random()
        sim.restore(s0)
        assert sim.step(2)[0] == first[0][0]
    # without the RNG in the snapshot, the same state and action give different outcomes
    sim.restore(s0)
    fields = sim.cloner.snapshot(sim.unwrapped)
    rng_free = set()
    for _ in range(30):
        sim.cloner.restore(sim.unwrapped, fields)
        rng_free.add(sim.step(2)[0])
    assert len(rng_free) > 1


def test_taxi_rainy_fickle():
    sim = SimulatorWrapper(gym.make(TAXI_ID, is_rainy=True, fickle_passenger=True))
    sim.reset(seed=4)
    s0 = sim.snapshot()
    ref = copy.deepcopy(sim.env)
    rng = np.random.default_rng(1)
    for _ in range(5):
        for a in rng.integers(0, 6, size=25):  # divergent branch
            sim.step(a)
        sim.restore(s0)
        assert sim.unwrapped.s == ref.unwrapped.s
        ref_branch = copy.deepcopy(ref)
        step_both(sim, ref_branch, rng.integers(0, 6, size=25))
        assert (sim.unwrapped.s, sim.unwrapped.fickle_step) == (ref_branch.unwrapped.s, ref_branch.unwrapped.fickle_step)
        sim.restore(s0)


# ---------------------------------------------------------------------------- custom envs


def test_deepcopy_fallback_custom_env():
    env = CounterEnv()
    table, space = env.P, env.action_space
    sim = SimulatorWrapper(env)
    assert isinstance(sim.cloner, DeepcopyCloner)
    sim.reset(seed=0)
    sim.step(1)
    s = sim.snapshot()
    outs = [sim.step(a)[:2] for a in (0, 1, 2, 2)]
    for _ in range(3):
        sim.restore(s)
        assert env.history == [1]
        again = [sim.step(a)[:2] for a in (0, 1, 2, 2)]
        for (o1, r1), (o2, r2) in zip(outs, again):
            np.testing.assert_array_equal(o1, o2)
            assert r1 == r2
    assert env.P is table and env.action_space is space  # static objects are shared, not copied


def test_not_clonable_error():
    with pytest.raises(NotClonableError, match="LockedEnv") as info:
        SimulatorWrapper(LockedEnv())
    assert "replay" in str(info.value) and "register_cloner" in str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("seed", [7, None])
def test_replay_fallback(seed):
    env = LockedEnv()
    sim = SimulatorWrapper(env, cloner="replay")
    sim.reset(seed=seed)
    for a in (0, 1):
        sim.step(a)
    s2 = sim.snapshot()
    outs = [sim.step(a) for a in (2, 1, 0)]
    s5 = sim.snapshot()
    after5 = sim.step(2)
    for _ in range(2):
        sim.restore(s2)
        assert env.history == [0, 1]
        for a, expected in zip((2, 1, 0), outs):
            got = sim.step(a)
            np.testing.assert_array_equal(got[0], expected[0])
            assert got[1:4] == expected[1:4]
        sim.restore(s2)
        sim.restore(s5)  # a descendant of the current state: reached by stepping on
        obs, reward, *_ , new = sim.step_from(s5, 2)
        np.testing.assert_array_equal(obs, after5[0])
        assert reward == after5[1] and env.history == [0, 1, 2, 1, 0, 2]
        sim.restore(new)
        assert env.history == [0, 1, 2, 1, 0, 2]


class ForgottenCounterEnv(gym.Env):
    """Its ``bonus_left`` counter changes the reward; the cloner registered for it forgets that counter."""

    def __init__(self) -> None:
        self.observation_space = spaces.Discrete(100)
        self.action_space = spaces.Discrete(2)
        self.pos = 0
        self.bonus_left = 3

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos, self.bonus_left = 0, 3
        return self.pos, {}

    def step(self, action):
        self.pos = min(self.pos + int(action), 99)
        reward = 1.0 if self.bonus_left > 0 else 0.0
        self.bonus_left -= 1
        return self.pos, reward, False, False, {}


def test_self_check_names_the_leaky_attribute():
    register_cloner(ForgottenCounterEnv, FieldsCloner(("pos",)))
    sim = SimulatorWrapper(ForgottenCounterEnv())
    assert isinstance(sim.cloner, FieldsCloner)
    sim.reset(seed=0)
    with pytest.raises(NondeterministicEnvError) as info:
        sim.snapshot()
    message = str(info.value)
    assert "ForgottenCounterEnv" in message and "bonus_left" in message
    assert "register_cloner" in message and "replay" in message
    # the check put the env back as it was
    assert (sim.unwrapped.pos, sim.unwrapped.bonus_left) == (0, 3)
    # the same env is fine with the replay cloner
    sim = SimulatorWrapper(ForgottenCounterEnv(), cloner="replay")
    sim.reset(seed=0)
    sim.snapshot()


def test_self_check_names_obs_field():
    class HiddenObj:
        def __init__(self) -> None:
            self.value = 0

    class ObsLeakEnv(ForgottenCounterEnv):
        def __init__(self) -> None:
            super().__init__()
            self.observation_space = spaces.Dict({"pos": spaces.Discrete(100), "hidden": spaces.Discrete(1000)})
            self.hidden = HiddenObj()  # not a simple value: only the observation shows the leak

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return {"pos": self.pos, "hidden": self.hidden.value}, {}

        def step(self, action):
            self.hidden.value += 1
            self.pos = min(self.pos + int(action), 99)
            return {"pos": self.pos, "hidden": self.hidden.value}, 0.0, False, False, {}

    register_cloner(ObsLeakEnv, FieldsCloner(("pos", "bonus_left")))
    sim = SimulatorWrapper(ObsLeakEnv())
    sim.reset(seed=0)
    with pytest.raises(NondeterministicEnvError, match=r"obs\['hidden'\]"):
        sim.snapshot()


# ---------------------------------------------------------------------------- wrappers, masks, monitor


class MaskedEnv(gym.Env):
    def __init__(self) -> None:
        self.observation_space = spaces.Discrete(10)
        self.action_space = spaces.Discrete(4)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.t, {}

    def step(self, action):
        self.t += 1
        return self.t % 10, float(action), False, False, {}

    def legal(self) -> np.ndarray:
        return np.arange(4) != self.t % 4


class StepLog(gym.Wrapper):
    """An undeclared stateful wrapper: its attributes are saved generically."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.count = 0
        self.log: list[int] = []

    def step(self, action):
        self.count += 1
        self.log.append(int(action))
        return self.env.step(action)


def test_action_masker_masks_and_generic_wrapper_state():
    sim = SimulatorWrapper(StepLog(ActionMasker(MaskedEnv(), lambda env: env.unwrapped.legal())))
    assert sim.has_action_masks
    sim.reset(seed=0)
    np.testing.assert_array_equal(sim.action_masks(), [False, True, True, True])
    assert sim.action_masks().dtype == bool
    s = sim.snapshot()
    sim.step(1)
    sim.step(2)
    np.testing.assert_array_equal(sim.action_masks(), [True, True, False, True])
    layer = sim.env
    assert (layer.count, layer.log) == (2, [1, 2])
    sim.restore(s)
    np.testing.assert_array_equal(sim.action_masks(), [False, True, True, True])
    assert (layer.count, layer.log) == (0, [])
    sim.step(3)
    sim.restore(s)
    assert layer.log == []  # the snapshot's list is not aliased by the env

    plain = SimulatorWrapper(MaskedEnv())
    assert not plain.has_action_masks
    np.testing.assert_array_equal(plain.action_masks(), np.ones(4, dtype=bool))


def test_frame_stack_restores_its_frames():
    """gymnasium's FrameStackObservation keeps its frames in a deque, which the generic layer state copies: after a
    restore, the stack holds the frames of the snapshot's history, not those of the branch taken since."""
    from sb3_dirpg.envs import DirectionImageObs

    def make() -> gym.Env:
        return gym.wrappers.FrameStackObservation(DirectionImageObs(gym.make("MiniGrid-FourRooms-v0")), 4)

    sim, ref = SimulatorWrapper(make()), make()
    sim.reset(seed=5)
    ref.reset(seed=5)
    rng = np.random.default_rng(0)
    step_both(sim, ref, [1, 2, 2])  # turn, then walk: the frames differ
    s = sim.snapshot()
    ref_at_s = copy.deepcopy(ref)
    for _ in range(3):
        for a in rng.integers(0, 3, size=6):  # a divergent branch, long enough to push every frame out of the stack
            sim.step(a)
        sim.restore(s)
        ref = copy.deepcopy(ref_at_s)
        step_both(sim, ref, rng.integers(0, 3, size=8))
        sim.restore(s)


def test_strip_monitor_leaves_original_chain_untouched():
    inner = gym.make("CartPole-v1")
    monitor = Monitor(inner)
    outer = gym.wrappers.TransformReward(monitor, lambda r: 2.0 * r)
    with pytest.raises(ValueError, match="strip_monitor"):
        SimulatorWrapper(outer)
    stripped = strip_monitor(outer)
    assert outer.env is monitor and monitor.env is inner  # the user's chain is unchanged
    assert stripped is not outer and isinstance(stripped, gym.wrappers.TransformReward)
    assert stripped.env is inner and stripped.unwrapped is inner.unwrapped
    chain, layer = [], stripped
    while isinstance(layer, gym.Wrapper):
        chain.append(layer)
        layer = layer.env
    assert not any(isinstance(x, Monitor) for x in chain)
    sim = SimulatorWrapper(stripped)
    sim.reset(seed=0)
    assert sim.step(0)[1] == 2.0
    assert strip_monitor(inner) is inner


def test_snapshot_belongs_to_its_wrapper():
    a = SimulatorWrapper(gym.make("CartPole-v1"))
    b = SimulatorWrapper(gym.make("CartPole-v1"))
    a.reset(seed=0)
    b.reset(seed=0)
    with pytest.raises(ValueError, match="another SimulatorWrapper"):
        b.restore(a.snapshot())
