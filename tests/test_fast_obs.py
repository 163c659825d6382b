"""The fast MiniGrid observation equals MiniGrid's own, cell for cell, on every state that random play reaches."""

from __future__ import annotations

import copy

import cloudpickle
import gymnasium as gym
import minigrid  # noqa: F401  (registers the ids)
import numpy as np
import pytest
from minigrid.minigrid_env import MiniGridEnv

from sb3_dirpg.envs import FastObservation, make_minigrid_env
from sb3_dirpg.envs.minigrid.compiled_kernels import visibility
from sb3_dirpg.envs.minigrid.fast_obs import encode_cells, encode_view, fast_observation_class, front_cell
from sb3_dirpg.simulator import SimulatorWrapper

# doors (open, closed, locked), keys carried and dropped, boxes, balls, lava, moving obstacles, outside-the-grid views
ENV_IDS = [
    "MiniGrid-MultiRoom-N6-v0",
    "MiniGrid-DoorKey-8x8-v0",
    "MiniGrid-KeyCorridorS3R3-v0",
    "MiniGrid-LavaGapS7-v0",
    "MiniGrid-ObstructedMaze-2Dlh-v0",
    "MiniGrid-BlockedUnlockPickup-v0",
    "MiniGrid-Fetch-8x8-N3-v0",
    "MiniGrid-Dynamic-Obstacles-8x8-v0",
]


def minigrid_image(env: MiniGridEnv) -> np.ndarray:
    """:return: the image MiniGrid's own code computes"""
    grid, vis_mask = MiniGridEnv.gen_obs_grid(env)
    return grid.encode(vis_mask)


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("attrs", [{}, {"agent_view_size": 5}, {"see_through_walls": True}])
def test_fast_view_equals_minigrid_on_random_play(env_id: str, attrs: dict) -> None:
    env = gym.make(env_id)
    base = env.unwrapped
    base.__dict__.update(attrs)  # not every env takes these as arguments
    rng = np.random.default_rng(0)
    states = 0
    for episode in range(6):
        env.reset(seed=episode)
        for _ in range(150):
            expected = minigrid_image(base)
            got = encode_view(base)
            assert got.dtype == expected.dtype and got.shape == expected.shape
            np.testing.assert_array_equal(got, expected, err_msg=f"{env_id} episode {episode} dir {base.agent_dir}")
            assert front_cell(base) is base.grid.get(*base.front_pos)
            states += 1
            _, _, terminated, truncated, _ = env.step(int(rng.integers(base.action_space.n)))
            if terminated or truncated:
                break
    assert states >= 50


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_fast_view_follows_restores_that_undo_doors_pickups_and_moves(env_id: str) -> None:
    # restores put keys back, close doors and move obstacles backwards, in place: the view must follow them
    sim = SimulatorWrapper(FastObservation(gym.make(env_id)))
    base = sim.unwrapped
    rng = np.random.default_rng(3)
    checked = restored = 0
    for episode in range(3):
        sim.reset(seed=episode)
        saved = [sim.snapshot()]
        for _ in range(200):
            if rng.random() < 0.3:
                sim.restore(saved[int(rng.integers(len(saved)))])
                restored += 1
            elif sim.step(int(rng.integers(base.action_space.n)))[2:4] != (False, False):
                sim.restore(saved[0])
            else:
                saved.append(sim.snapshot())
            np.testing.assert_array_equal(encode_view(base), minigrid_image(base), err_msg=f"{env_id} episode {episode}")
            checked += 1
    assert checked == 600 and restored > 100


def test_visibility_equals_minigrid_process_vis_on_random_see_through_patterns() -> None:
    from minigrid.core.grid import Grid
    from minigrid.core.world_object import Wall

    rng = np.random.default_rng(1)
    for size in (3, 5, 7, 9):
        for _ in range(300):
            see = rng.random((size, size)) < rng.uniform(0.3, 1.0)
            grid = Grid(size, size)
            for i in range(size):
                for j in range(size):
                    if not see[i, j]:
                        grid.set(i, j, Wall())
            expected = grid.process_vis((size // 2, size - 1))
            rows = np.empty(size, dtype=np.int64)
            visibility(np.array([sum(int(see[i, j]) << i for i in range(size)) for j in range(size)]), rows)
            got = np.array([[bool(rows[j] >> i & 1) for j in range(size)] for i in range(size)])
            np.testing.assert_array_equal(got, expected)


def test_views_with_objects_of_other_classes_or_wider_than_the_kernel_are_minigrids_own() -> None:
    from minigrid.core.world_object import Wall

    class Glass(Wall):
        """A wall that lets sight through: its encoding says wall, its ``see_behind`` says otherwise."""

        def see_behind(self) -> bool:
            return True

    env = gym.make("MiniGrid-FourRooms-v0")
    base = env.unwrapped
    env.reset(seed=0)
    for k, cell in enumerate(base.grid.grid):
        if type(cell) is Wall and k % 2:
            base.grid.grid[k] = Glass()
    for direction in range(4):
        base.agent_dir = direction
        np.testing.assert_array_equal(encode_view(base), minigrid_image(base))
    base.agent_view_size = 65
    np.testing.assert_array_equal(encode_view(base), minigrid_image(base))


def test_wrapped_env_gives_the_same_observations_rewards_and_ends_as_minigrid() -> None:
    fast, slow = (make_minigrid_env("MiniGrid-DoorKey-8x8-v0", fast_observation=flag) for flag in (True, False))
    assert isinstance(fast.unwrapped, type(slow.unwrapped)) and type(fast.unwrapped) is not type(slow.unwrapped)
    rng = np.random.default_rng(2)
    for seed in range(5):
        obs_fast, _ = fast.reset(seed=seed)
        obs_slow, _ = slow.reset(seed=seed)
        for _ in range(100):
            np.testing.assert_array_equal(obs_fast["image"], obs_slow["image"])
            assert obs_fast["direction"] == obs_slow["direction"]
            action = int(rng.integers(7))
            obs_fast, r_fast, term_fast, trunc_fast, _ = fast.step(action)
            obs_slow, r_slow, term_slow, trunc_slow, _ = slow.step(action)
            assert (r_fast, term_fast, trunc_fast) == (r_slow, term_slow, trunc_slow)
            if term_fast or trunc_fast:
                break


def test_fast_env_snapshots_copies_and_pickles() -> None:
    env = make_minigrid_env("MiniGrid-MultiRoom-N6-v0")
    sim = SimulatorWrapper(env)
    sim.reset(seed=3)
    state = sim.snapshot()
    first = [sim.step(a)[0]["image"] for a in (2, 2, 1, 2)]
    sim.restore(state)
    again = [sim.step(a)[0]["image"] for a in (2, 2, 1, 2)]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    for clone in (copy.deepcopy(env), cloudpickle.loads(cloudpickle.dumps(env))):
        assert type(clone.unwrapped).gen_obs is type(env.unwrapped).gen_obs
        np.testing.assert_array_equal(clone.unwrapped.gen_obs()["image"], env.unwrapped.gen_obs()["image"])


def test_envs_with_their_own_observation_code_keep_it() -> None:
    class OwnObservation(MiniGridEnv):
        def gen_obs(self) -> dict:
            return {}

    assert fast_observation_class(OwnObservation) is OwnObservation
    empty = type(gym.make("MiniGrid-Empty-5x5-v0").unwrapped)
    assert fast_observation_class(empty) is not empty and issubclass(fast_observation_class(empty), empty)


def test_fast_observation_refuses_an_env_that_is_not_minigrid() -> None:
    with pytest.raises(ValueError, match="FastObservation needs a MiniGrid env"):
        FastObservation(gym.make("CartPole-v1"))


@pytest.mark.parametrize(
    "env_id",
    ["MiniGrid-MultiRoom-N6-v0", "MiniGrid-KeyCorridorS3R1-v0", "MiniGrid-ObstructedMaze-2Dlh-v0", "MiniGrid-LavaGapS7-v0",
     "MiniGrid-PutNear-6x6-N2-v0", "MiniGrid-BlockedUnlockPickup-v0"],
)  # fmt: skip
def test_encode_cells_equals_minigrids_grid_encode(env_id: str) -> None:
    """The whole grid's codes equal MiniGrid's ``grid.encode()`` (transposed) on fresh layouts and after doors were
    opened and objects picked up by random play (boxes, locked doors, keys, balls, lava, goals)."""
    env = gym.make(env_id).unwrapped
    rng = np.random.default_rng(0)
    for seed in range(12):
        env.reset(seed=seed)
        for _ in range(40 * (seed % 3)):
            env.step(int(rng.integers(env.action_space.n)))
        np.testing.assert_array_equal(encode_cells(env.grid), env.grid.encode().transpose(1, 0, 2))
