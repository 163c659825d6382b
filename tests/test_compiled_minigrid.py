"""The compiled MiniGrid simulator gives the env's transitions, and DirPG learns the same parameters on it."""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import gymnasium as gym
import minigrid
import numpy as np
import pytest
import torch as th
from minigrid.core.constants import DIR_TO_VEC
from minigrid.core.grid import Grid
from minigrid.core.mission import MissionSpace
from minigrid.core.world_object import Ball, Box, Door, Floor, Goal, Key, Lava
from minigrid.envs import KeyCorridorEnv
from minigrid.minigrid_env import MiniGridEnv
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_dirpg import DirPG
from sb3_dirpg.baselines import Reinforce
from sb3_dirpg.common import simulator_backends
from sb3_dirpg.common.simulator_backends import make_vec_simulator
from sb3_dirpg.common.vec_simulator import VecSimulator
from sb3_dirpg.envs import (
    DirectionImageObs,
    FastObservation,
    MiniGridBound,
    MiniGridNoOpMask,
    MiniGridProgressReward,
    MiniGridShapedReward,
    MissionObs,
    make_minigrid_env,
)
from sb3_dirpg.envs.minigrid import CompiledMiniGridSimulator, MiniGridCNN, MiniGridProgressBound, MultiRoomBound
from sb3_dirpg.simulator import SimulatorWrapper


class ObjectsRoomEnv(MiniGridEnv):
    """Two rooms with every object the compiled step supports: keys and balls to carry, a locked and a closed door, a
    floor tile, lava and two goals, placed at random."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            mission_space=MissionSpace(mission_func=lambda: "reach the goal"), grid_size=7, max_steps=60, **kwargs
        )

    def _gen_grid(self, width: int, height: int) -> None:
        self.grid = Grid(width, height)
        self.grid.wall_rect(0, 0, width, height)
        self.grid.vert_wall(3, 0)
        self.grid.set(3, 2, Door("yellow", is_locked=True))
        self.grid.set(3, 4, Door("red"))
        for obj in (Key("yellow"), Key("red"), Ball("blue"), Floor("purple"), Lava(), Goal()):
            self.place_obj(obj, top=(1, 1), size=(2, 5))
        self.place_obj(Ball("green"), top=(4, 1), size=(2, 5))
        self.place_obj(Goal(), top=(4, 1), size=(2, 5))
        self.place_agent(top=(1, 1), size=(2, 5))
        self.mission = "reach the goal"


class LockedDoorEnv(MiniGridEnv):
    """A corridor: the agent faces a key of ``key_color``, then a locked yellow door, then the goal."""

    def __init__(self, key_color: str = "yellow", **kwargs: Any) -> None:
        self.key_color = key_color
        super().__init__(mission_space=MissionSpace(mission_func=lambda: "open"), width=6, height=3, max_steps=10, **kwargs)

    def _gen_grid(self, width: int, height: int) -> None:
        self.grid = Grid(width, height)
        self.grid.wall_rect(0, 0, width, height)
        self.grid.set(2, 1, Key(self.key_color))
        self.grid.set(3, 1, Door("yellow", is_locked=True))
        self.grid.set(4, 1, Goal())
        self.agent_pos, self.agent_dir = (1, 1), 0
        self.mission = "open"


class KeyCorridorAtBallEnv(KeyCorridorEnv):
    """KeyCorridor (rooms of 2 x 2 cells, 2 rows) with the agent next to the ball, facing it, and the key beside the
    agent: a pickup is the success at once, and after the key's pickup it needs a drop first."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(num_rows=2, room_size=4, max_steps=40, **kwargs)

    def _gen_grid(self, width: int, height: int) -> None:
        super()._gen_grid(width, height)
        ox, oy = (int(v) for v in self.obj.cur_pos)
        direction, (dx, dy) = next((d, v) for d, v in enumerate(DIR_TO_VEC) if self.grid.get(ox - v[0], oy - v[1]) is None)
        self.agent_pos, self.agent_dir = (ox - dx, oy - dy), direction
        key = next(cell for cell in self.grid.grid if cell is not None and cell.type == "key")
        beside = [(ox - dx + vx, oy - dy + vy) for vx, vy in DIR_TO_VEC]
        free = [cell for cell in beside if cell != (ox, oy) and self.grid.get(*cell) is None]
        if free:
            self.grid.set(*key.cur_pos, None)
            self.grid.set(*free[0], key)
            key.cur_pos = np.array(free[0])


class BoxesEnv(MiniGridEnv):
    """A room of boxes that hold a key, a ball or nothing, a locked door and a goal behind it; the agent faces a box."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(mission_space=MissionSpace(mission_func=lambda: "open"), grid_size=7, max_steps=60, **kwargs)

    def _gen_grid(self, width: int, height: int) -> None:
        self.grid = Grid(width, height)
        self.grid.wall_rect(0, 0, width, height)
        self.grid.vert_wall(4, 0)
        self.grid.set(4, 2, Door("yellow", is_locked=True))
        self.grid.set(2, 2, Box("red", Key("yellow")))
        self.agent_pos, self.agent_dir = (1, 2), 0
        for contents in (Ball("blue"), None, Key("green")):
            self.place_obj(Box("purple", contents), top=(1, 1), size=(3, 5))
        self.place_obj(Goal(), top=(5, 1), size=(1, 5))
        self.mission = "open"


gym.register("SB3DirPGTest/ObjectsRoom-v0", entry_point=ObjectsRoomEnv)
gym.register("SB3DirPGTest/Boxes-v0", entry_point=BoxesEnv)
gym.register("SB3DirPGTest/LockedDoor-v0", entry_point=LockedDoorEnv)
gym.register("SB3DirPGTest/KeyCorridorAtBall-v0", entry_point=KeyCorridorAtBallEnv)

# per env: the events random play from every reached state must produce, so that each rule of the step is compared
FAMILIES = {
    "MiniGrid-MultiRoom-N2-S4-v0": ({}, {"door opened", "door closed"}),
    "MiniGrid-MultiRoom-N6-v0": ({}, {"door opened", "door closed"}),
    "MiniGrid-MultiRoom-N12-S10-v0": ({}, {"door opened", "door closed"}),
    "MiniGrid-DoorKey-5x5-v0": ({}, {"pickup", "drop", "door opened"}),
    "MiniGrid-DoorKey-6x6-v0": ({"max_steps": 6}, {"pickup", "truncated"}),
    "MiniGrid-LockedRoom-v0": ({}, {"door opened", "door closed"}),
    "MiniGrid-LavaGapS7-v0": ({}, {"lava"}),
    "MiniGrid-LavaCrossingS9N1-v0": ({}, {"lava"}),
    "MiniGrid-DistShift1-v0": ({}, {"lava"}),
    "MiniGrid-Empty-Random-6x6-v0": ({}, {"goal"}),
    "MiniGrid-FourRooms-v0": ({}, set()),
    "SB3DirPGTest/ObjectsRoom-v0": ({}, {"pickup", "drop", "door opened", "door closed", "lava", "goal"}),
    "SB3DirPGTest/ObjectsRoom-v0 small view": ({"agent_view_size": 5}, {"pickup", "drop", "door opened"}),
    "SB3DirPGTest/Boxes-v0": ({}, {"box opened", "pickup", "drop", "door opened"}),
}
# per env: the events of the progress reward's chain too ("progress", "regress": its steps to success fell or rose by
# one; "jump": by more, as where a key's way starts or ends, or in lava)
PROGRESS_FAMILIES = {
    "MiniGrid-DoorKey-5x5-v0": {"pickup", "drop", "door opened", "progress", "regress"},
    "MiniGrid-KeyCorridorS3R3-v0": {"door opened", "door closed", "progress", "regress"},
    "SB3DirPGTest/KeyCorridorAtBall-v0": {"pickup", "drop", "goal", "progress", "regress"},
    "MiniGrid-LavaGapS7-v0": {"lava", "jump"},
    "MiniGrid-FourRooms-v0": {"progress", "regress"},
    "SB3DirPGTest/ObjectsRoom-v0": {"pickup", "drop", "door opened", "lava", "goal", "progress", "regress"},
    "SB3DirPGTest/Boxes-v0": {"box opened", "pickup", "door opened", "progress", "regress"},
    "MiniGrid-ObstructedMaze-1Dlh-v0": {"box opened", "pickup", "progress", "regress"},
    "MiniGrid-UnlockPickup-v0": {"pickup", "drop", "progress", "regress"},
    "MiniGrid-BlockedUnlockPickup-v0": {"pickup", "drop", "progress", "regress"},
}
PROGRESS_REWARD = 0.001  # small: a reward is a multiple of 5 (door, pickup and goal) plus the progress's part
ACTION_WEIGHTS = np.array([1.0, 1.0, 3.0, 1.0, 1.0, 2.0, 0.3])  # more forward and toggle moves: play gets further


def _events(
    trans: Any, row: int, steps: int, max_steps: int, door_reward: float, pickup_reward: float, progress_reward: float = 0.0
) -> set[str]:  # fmt: skip
    """:param steps: the step count of the state reached
    :param progress_reward: the progress reward of the chain (0: none)
    :return: what the env's transition of ``row`` shows happened"""
    reward, found = trans.rewards[row], set()
    if progress_reward:
        shaped = 5.0 * round(reward / 5.0)
        change = round((reward - shaped) / progress_reward)
        found |= {1: {"progress"}, 0: set(), -1: {"regress"}}.get(change, {"jump"})
        reward = shaped
    if trans.success[row]:
        found.add("goal")
        reward -= 100.0
    elif trans.terminal[row]:
        found.add("truncated" if steps >= max_steps else "lava")  # the only other ends of the base dynamics
    if reward in (door_reward, door_reward + pickup_reward):
        found.add("door opened")
    if reward == -door_reward:
        found.add("door closed")
    if reward == pickup_reward:
        found.add("pickup")
    if reward == -pickup_reward:
        found.add("drop")
    return found


def _progress_chain(env_id: str, mission: bool = False, noop_mask: list[Any] | None = None) -> gym.Env:
    """:param mission: wrap MissionObs outside
    :param noop_mask: put MiniGridNoOpMask in the chain, with these rules (None: no mask)
    :return: the env with the frontier entries' wrappers, the door and pickup rewards kept, and MiniGridProgressReward"""
    env = MiniGridShapedReward(FastObservation(gym.make(env_id)))
    env = MiniGridProgressReward(env, progress_reward=PROGRESS_REWARD)
    env = DirectionImageObs(MiniGridNoOpMask(env, rules=noop_mask) if noop_mask is not None else env)
    return MissionObs(env) if mission else env


def _play_both(
    env_id: str, env_kwargs: dict[str, Any], gamma: float, step_limit: bool, seed: int, iterations: int,
    bound_class: type = MultiRoomBound, mission: bool = False, noop_mask: list[Any] | None = None,
) -> set[str]:  # fmt: skip
    """Step the env and the compiled simulator from the same randomly chosen reached states, comparing every output.

    :param bound_class: the bound: ``MultiRoomBound`` (with ``step_limit``), ``MiniGridBound``, or
        ``MiniGridProgressBound`` on :func:`_progress_chain`
    :param mission: wrap MissionObs outside the chain (its vector is compared too)
    :param noop_mask: put MiniGridNoOpMask in the chain with these rules (None: no mask); its masks are compared too
    :return: the events seen
    """
    progress = bound_class is MiniGridProgressBound

    def make() -> gym.Env:
        if progress:
            return _progress_chain(env_id, mission, noop_mask)
        env = make_minigrid_env(env_id.split(" ")[0], **env_kwargs)
        env = DirectionImageObs(MiniGridNoOpMask(env.env, rules=noop_mask)) if noop_mask is not None else env
        return MissionObs(env) if mission else env

    options = {"step_limit": step_limit} if bound_class is MultiRoomBound else {}
    bound = bound_class.for_env(make(), gamma=gamma, **options)
    reference = VecSimulator([SimulatorWrapper(make()) for _ in range(2)], bound)
    compiled = CompiledMiniGridSimulator([SimulatorWrapper(make())], bound)
    rng = np.random.default_rng(seed)
    seeds = rng.integers(10_000, size=4).tolist()
    roots = reference.reset(seeds), compiled.reset(seeds)
    assert compiled.runs_search_iterations
    if mission:
        missions = [o["mission"] for o in roots[0].obs]
        assert len({m.tobytes() for m in missions}) > 1 and all(m.any() for m in missions), "the missions do not vary"
        for got, want in zip(compiled.row_observations(compiled.observation_rows(roots[0].obs)), roots[0].obs):
            np.testing.assert_array_equal(got["mission"], want["mission"], err_msg="a byte row's mission")
    max_steps = reference.simulators[0].env.unwrapped.max_steps
    view = reference.simulators[0].env.unwrapped.agent_view_size

    def front(obs: Any) -> int:
        return int(obs["image"][view // 2, view - 2, 0])  # the type of the cell ahead

    pool = [(a, b, e, 0, front(o)) for e, (a, b, o) in enumerate(zip(roots[0].snapshots, roots[1].snapshots, roots[0].obs))]
    seen: set[str] = set()
    for _ in range(iterations):
        # half of the rows from anywhere in the tree (restores), half from its newest states (deeper play)
        rows = np.concatenate([rng.integers(len(pool), size=8), len(pool) - 1 - rng.integers(min(32, len(pool)), size=8)])
        actions = rng.choice(7, size=len(rows), p=ACTION_WEIGHTS / ACTION_WEIGHTS.sum())
        episodes = np.array([pool[i][2] for i in rows])
        want = reference.step([pool[i][0] for i in rows], actions, episodes)
        got = compiled.step([pool[i][1] for i in rows], actions, episodes)
        for name in ("rewards", "terminal", "success", "masks", "lower", "upper"):
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=f"{name} on {env_id}")
        for r in range(len(rows)):
            assert got.obs[r]["direction"] == want.obs[r]["direction"]
            assert got.obs[r].keys() == want.obs[r].keys()
            if mission:
                assert got.obs[r]["mission"].dtype == want.obs[r]["mission"].dtype
                np.testing.assert_array_equal(got.obs[r]["mission"], want.obs[r]["mission"], err_msg=f"mission on {env_id}")
            np.testing.assert_array_equal(got.obs[r]["image"], want.obs[r]["image"], err_msg=f"image on {env_id}")
            steps = pool[rows[r]][3] + 1
            seen |= _events(want, r, steps, max_steps, bound.door_reward, bound.pickup_reward, PROGRESS_REWARD * progress)
            if actions[r] == 5 and pool[rows[r]][4] == 7:  # a toggle that faced a box
                seen.add("box opened")
            hands_empty = want.obs[r]["image"][view // 2, view - 1, 0] == 1
            if not want.terminal[r] and actions[r] != 4 and hands_empty and front(want.obs[r]) in (5, 6, 7):
                seen |= set() if want.masks[r, 3] else {"repick masked"}  # not the undo of a drop: no_repick's mask
            carries_key = want.obs[r]["image"][view // 2, view - 1, 0] == 5
            if not want.terminal[r] and actions[r] != 3 and carries_key and front(want.obs[r]) == 1:
                seen |= set() if want.masks[r, 4] else {"key drop masked"}  # not the undo of a pickup: keep_key's mask
            if want.terminal[r]:
                assert got.snapshots[r] is None
            else:
                pool.append((want.snapshots[r], got.snapshots[r], episodes[r], steps, front(want.obs[r])))
        pool = pool[-2000:]
    return seen


@pytest.mark.parametrize("env_id", list(FAMILIES))
def test_compiled_steps_give_the_env_transitions(env_id: str) -> None:
    """Observations, rewards, ends, successes and both bounds equal the env's, bit for bit, from random reached states
    (with restores all over the tree), with the default bound and with a discounted, step-limited one."""
    env_kwargs, events = FAMILIES[env_id]
    seen = _play_both(env_id, env_kwargs, 1.0, False, seed=0, iterations=80)
    seen |= _play_both(env_id, env_kwargs, 0.95, True, seed=1, iterations=80)
    assert events <= seen, f"random play on {env_id} never showed {events - seen}: the comparison missed those rules"


@pytest.mark.parametrize("env_id", list(PROGRESS_FAMILIES))
def test_compiled_progress_reward_and_grid_bound_give_the_env_transitions(env_id: str) -> None:
    """With MiniGridProgressReward and MiniGridProgressBound (shortest paths, through a key where locked doors stand
    in the way), and with MiniGridBound alone, the compiled simulator's outputs equal the env's, bit for bit: KeyCorridor's
    success (its object picked up) included."""
    seen = _play_both(env_id, {}, 1.0, False, seed=0, iterations=80, bound_class=MiniGridProgressBound)
    seen |= _play_both(env_id, {}, 0.95, False, seed=1, iterations=80, bound_class=MiniGridProgressBound)
    _play_both(env_id, {}, 0.99, False, seed=2, iterations=40, bound_class=MiniGridBound)
    events = PROGRESS_FAMILIES[env_id]
    assert events <= seen, f"random play on {env_id} never showed {events - seen}: the comparison missed those rules"


@pytest.mark.parametrize("env_id", ["MiniGrid-LockedRoom-v0", "MiniGrid-KeyCorridorS3R3-v0"])
def test_compiled_steps_with_the_mission_give_the_env_observations(env_id: str) -> None:
    """With MissionObs outside the chain (LockedRoom's and KeyCorridor's missions name coloured objects), the
    observations, the mission's vector included, and every other output equal the env's, bit for bit."""
    _play_both(env_id, {}, 0.99, False, seed=0, iterations=40, bound_class=MiniGridBound, mission=True)
    _play_both(env_id, {}, 0.95, False, seed=1, iterations=40, bound_class=MiniGridProgressBound, mission=True)


def _learn_alike(models: dict[str, Any], interactions: int) -> None:
    """Train the ``"env"`` and the ``"compiled"`` model for ``interactions``: they count the same interactions and learn
    bit-identical parameters, which did change.

    :param models: the two models, same seed and settings, by backend
    :param interactions: the training budget
    """
    assert type(models["compiled"].simulator) is CompiledMiniGridSimulator
    start = [p.detach().clone() for p in models["env"].policy.parameters()]
    for model in models.values():
        model.learn(interactions)
    assert models["env"].num_timesteps == models["compiled"].num_timesteps
    env_params = list(models["env"].policy.parameters())
    assert not all(th.equal(a, b) for a, b in zip(start, env_params)), "no update happened: the comparison is empty"
    for a, b in zip(env_params, models["compiled"].policy.parameters()):
        assert th.equal(a, b)


@pytest.mark.parametrize("env_id", ["SB3DirPGTest/ObjectsRoom-v0", "SB3DirPGTest/Boxes-v0", "MiniGrid-DoorKey-5x5-v0"])
def test_compiled_noop_masks_are_the_envs(env_id: str) -> None:
    """With MiniGridNoOpMask in the chain, the compiled simulator's masks (read off its observations and the actions it
    steps) equal the env's (read off its state and its last step), bit for bit, with every other output; with and
    without ``no_undo``, with ``return_window`` or ``no_revisit``, with ``no_repick`` (which must mask a pickup), and on
    DoorKey with ``keep_key`` (which must mask a key's drop)."""
    env_kwargs, events = FAMILIES[env_id]
    seen = _play_both(env_id, env_kwargs, 1.0, False, seed=0, iterations=80, noop_mask=[])
    seen |= _play_both(env_id, {}, 0.99, False, seed=1, iterations=40, bound_class=MiniGridProgressBound,
                       noop_mask=["no_undo"])  # fmt: skip
    seen |= _play_both(env_id, {}, 1.0, False, seed=2, iterations=40, noop_mask=[{"return_window": 24}])
    memory = ["no_undo", "no_revisit", "keep_doors_open"]
    seen |= _play_both(env_id, {}, 1.0, False, seed=3, iterations=40, noop_mask=memory)
    assert events <= seen, f"random play on {env_id} never showed {events - seen}: the comparison missed those rules"
    assert "repick masked" not in seen, "a pickup was masked without no_repick"
    repick = _play_both(env_id, {}, 1.0, False, seed=4, iterations=120, noop_mask=["no_repick", {"return_window": 8}])
    repick |= _play_both(env_id, {}, 1.0, False, seed=5, iterations=120, noop_mask=[*memory, "no_repick"])
    assert "repick masked" in repick, f"random play on {env_id} never met no_repick's mask: the comparison missed it"
    assert "key drop masked" not in seen | repick, "a key drop was masked without keep_key"
    if env_id == "MiniGrid-DoorKey-5x5-v0":  # the family with a locked door
        kept = _play_both(env_id, {}, 1.0, False, seed=6, iterations=120, noop_mask=["keep_key", "no_repick"])
        kept |= _play_both(env_id, {}, 1.0, False, seed=7, iterations=120, noop_mask=[*memory, "keep_key"])
        assert "key drop masked" in kept, f"random play on {env_id} never met keep_key's mask: the comparison missed it"


def _shipped_rule_combinations() -> list[list[Any]]:
    """:return: every combination of the shipped mask rules: any subset of the flag rules, with no return rule, a window
        of 8 or ``no_revisit`` (which replaces the window)"""
    flags = ["keep_done", "keep_doors_open", "keep_key", "no_undo", "no_repick"]
    subsets = [[name for name, on in zip(flags, bits) if on] for bits in itertools.product([False, True], repeat=len(flags))]
    return [subset + memory for subset in subsets for memory in ([], [{"return_window": 8}], ["no_revisit"])]


def test_every_combination_of_the_shipped_rules_gives_the_env_masks_on_the_compiled_simulator() -> None:
    """For each of the 96 combinations of the shipped rules, the compiled simulator's masks equal the env path's, bit
    for bit, from random reached states of DoorKey-5x5 (a key, a locked door, walls to walk into), restores all over the
    tree included. The registry's rules are the ones combined, and the comparison meets the masks of ``no_repick`` and
    ``keep_key`` (the others mask on most steps), never where the rule is off."""
    from sb3_dirpg.envs.minigrid.mask_rules import mask_rules

    combinations = _shipped_rule_combinations()
    names = {spec if isinstance(spec, str) else next(iter(spec)) for rules in combinations for spec in rules}
    assert names == {rule.name for rule in mask_rules()} and len(combinations) == 96
    met = {"repick masked": 0, "key drop masked": 0}
    for seed, rules in enumerate(combinations):
        seen = _play_both("MiniGrid-DoorKey-5x5-v0", {}, 1.0, False, seed=seed, iterations=10, noop_mask=rules)
        for event, rule in (("repick masked", "no_repick"), ("key drop masked", "keep_key")):
            assert event not in seen or rule in rules, f"{event} without {rule}: {rules}"
            met[event] += event in seen
    assert min(met.values()) >= 2, met


@pytest.mark.parametrize(
    "returns",
    [
        [{"return_window": 24}], ["no_revisit", "keep_doors_open"], [{"return_window": 8}, "no_repick"],
        ["no_revisit", "keep_doors_open", "keep_key"],
    ],
)  # fmt: skip
def test_the_compiled_loop_learns_the_same_parameters_with_noop_masks(returns: list[Any]) -> None:
    """KeyCorridorS3R3 with MiniGridNoOpMask (``no_undo``, and ``return_window``, ``no_revisit``, ``no_repick`` or
    ``keep_key``): the same seed learns bit-identical parameters on the env and in the compiled search loop, whose masks
    come from its own observations, actions, recent moves and grids, and the masks kept the search off the no-ops. The
    repick is masked before the window's returns, which never empty a mask; the other way round, a state whose one legal
    action left was a pickup lost it, and the search refused the empty mask."""

    def make() -> gym.Env:
        return _progress_chain("MiniGrid-KeyCorridorS3R3-v0", noop_mask=["no_undo", *returns])

    policy_kwargs = dict(features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False)
    models = {
        backend: DirPG("MultiInputPolicy", make_vec_env(make, n_envs=2, vec_env_cls=DummyVecEnv), max_episode_steps=40,
                       batch_episodes=8, seed=5, simulator_backend=backend, search_budget=300, policy_kwargs=policy_kwargs)
        for backend in ("env", "compiled")
    }  # fmt: skip
    _learn_alike(models, 3000)
    result = models["compiled"].search(list(range(4)), config=models["compiled"].search_config(budget=500))
    nodes = result.tree.nodes
    actions = nodes.action[: int(nodes.count[0])]
    actions = actions[actions >= 0]  # the roots have none
    assert len(actions) > 100 and not (actions == 6).any(), "the search stepped done, which the mask forbids"


def test_the_compiled_simulator_learns_the_same_parameters_with_the_mission() -> None:
    """LockedRoom with MissionObs and a mission-gated MiniGridCNN (whose forward the compiled loop hands back to Python):
    the same seed learns bit-identical parameters on the env and on the compiled simulator, and they did change."""

    def make() -> gym.Env:
        return MissionObs(_progress_chain("MiniGrid-LockedRoom-v0"))

    policy_kwargs = dict(
        features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False,
        features_extractor_kwargs=dict(mission_gates=2),
    )  # fmt: skip
    models = {
        backend: DirPG(
            "MultiInputPolicy", make_vec_env(make, n_envs=2, vec_env_cls=DummyVecEnv), max_episode_steps=60,
            batch_episodes=8, seed=3, search_budget=200, simulator_backend=backend,
            heuristic=MiniGridProgressBound.for_env(make()), policy_kwargs=policy_kwargs,
        )  # fmt: skip
        for backend in ("env", "compiled")
    }
    _learn_alike(models, 4000)
    assert models["compiled"].simulator.runs_search_iterations


def _minigrid_model(backend: str, algo: type = DirPG, **kwargs: Any) -> Any:
    def make() -> gym.Env:
        return make_minigrid_env("MiniGrid-MultiRoom-N2-S4-v0")

    venv = make_vec_env(make, n_envs=2, vec_env_cls=DummyVecEnv)
    policy_kwargs = dict(features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False)
    if algo is DirPG:
        bound = MultiRoomBound.for_env(make())
        kwargs = dict(search_budget=300, priority={"astar": {"alpha": 0.2}}, heuristic=bound, **kwargs)
    return algo(
        "MultiInputPolicy", venv, max_episode_steps=40, batch_episodes=8, seed=5, simulator_backend=backend,
        policy_kwargs=policy_kwargs, **kwargs,
    )  # fmt: skip


@pytest.mark.parametrize("algo", [DirPG, Reinforce])
def test_the_compiled_simulator_learns_the_same_parameters(algo: type) -> None:
    """The same seed learns bit-identical parameters on the env and on the compiled simulator, and they did change."""
    extra = {} if algo is DirPG else {"n_rollouts": 4}
    models = {backend: _minigrid_model(backend, algo, **extra) for backend in ("env", "compiled")}
    assert type(models["env"].simulator) is VecSimulator
    _learn_alike(models, 6000)


def test_auto_uses_the_compiled_simulator_where_it_fits_and_compiled_says_why_not() -> None:
    """``auto`` picks the compiled simulator for the paper's MiniGrid chain and the env elsewhere; ``compiled`` names the
    reason it cannot run an env."""
    assert type(_minigrid_model("auto").simulator) is CompiledMiniGridSimulator
    unlock = [SimulatorWrapper(make_minigrid_env("MiniGrid-Unlock-v0"))]
    assert type(make_vec_simulator(unlock, None, "auto")) is VecSimulator
    with pytest.raises(ValueError, match="UnlockEnv overrides MiniGridEnv.step.*simulator_backend='auto' or 'env'"):
        make_vec_simulator(unlock, None, "compiled")
    plain = [SimulatorWrapper(gym.make("MiniGrid-Empty-5x5-v0"))]
    with pytest.raises(ValueError, match="outermost wrapper is not DirectionImageObs"):
        make_vec_simulator(plain, None, "compiled")
    multiroom = [SimulatorWrapper(make_minigrid_env("MiniGrid-MultiRoom-N2-S4-v0"))]
    with pytest.raises(ValueError, match="the heuristic is a function"):
        make_vec_simulator(multiroom, lambda env: (0.0, 1.0), "compiled")
    with pytest.raises(ValueError, match="simulator_backend must be one of"):
        _minigrid_model("numba")


def test_an_untested_minigrid_is_refused_by_compiled_and_stepped_on_the_env_by_auto(monkeypatch: Any) -> None:
    """On a MiniGrid release series the compiled rules were not tested on, ``compiled`` raises naming the installed and
    the tested versions, and ``auto`` warns and steps the env; envs the compiled simulator cannot run anyway are not
    warned about the version, and a patch release of a tested series is used."""
    multiroom = [SimulatorWrapper(make_minigrid_env("MiniGrid-MultiRoom-N2-S4-v0"))]
    unlock = [SimulatorWrapper(make_minigrid_env("MiniGrid-Unlock-v0"))]
    monkeypatch.setattr(simulator_backends, "_WARNED", {_unlock_warning()})
    monkeypatch.setattr(minigrid, "__version__", "4.0.0")
    with pytest.raises(ValueError, match=r"tested on minigrid 2\.5\.0, .*3\.2\.0, not on 4\.0\.0 .*simulator_backend='env'"):
        make_vec_simulator(multiroom, None, "compiled")
    with pytest.warns(UserWarning, match=r"not on 4\.0\.0 .*the env itself is stepped"):
        assert type(make_vec_simulator(multiroom, None, "auto")) is VecSimulator
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert type(make_vec_simulator(multiroom, None, "env")) is VecSimulator
        assert type(make_vec_simulator(unlock, None, "auto")) is VecSimulator
        monkeypatch.setattr(minigrid, "__version__", "3.2.9")
        assert type(make_vec_simulator(multiroom, None, "auto")) is CompiledMiniGridSimulator


def _unlock_warning() -> str:
    """:return: the warning ``auto`` gives once for MiniGrid-Unlock-v0 (its step is not MiniGrid's)"""
    return (
        "DirPG: CompiledMiniGridSimulator cannot run the env MiniGrid-Unlock-v0: UnlockEnv overrides MiniGridEnv.step; "
        "the env itself is stepped instead (simulator_backend='env': the same results, more slowly)"
    )


def test_envs_built_the_sb3_way_run_the_compiled_simulator_and_auto_warns_once_where_it_cannot(monkeypatch: Any) -> None:
    """``make_vec_env`` with an env id builds every env with ``render_mode="rgb_array"`` and a ``Monitor``: the search
    never renders, so ``auto`` still picks the compiled simulator. A MiniGrid env that the compiled simulator cannot
    run gets one warning that says why, not one per model; a non-MiniGrid env gets none."""
    from rl_zoo3.utils import get_wrapper_class

    from sb3_dirpg.envs.minigrid.setting import minigrid_setting

    monkeypatch.setattr(simulator_backends, "_WARNED", set())

    def model(env_id: str, vec_env_cls: type = DummyVecEnv) -> DirPG:
        setting = minigrid_setting(env_id)
        wrapper = get_wrapper_class({"env_wrapper": setting.env_wrapper})
        venv = make_vec_env(env_id, n_envs=2, wrapper_class=wrapper, vec_env_cls=vec_env_cls)
        assert venv.get_attr("render_mode") == ["rgb_array"] * 2
        return DirPG(setting.policy, venv, **setting.algorithm_kwargs())

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert type(model("MiniGrid-DoorKey-5x5-v0").simulator) is CompiledMiniGridSimulator
        assert type(DirPG("MlpPolicy", "CartPole-v1", search_budget=10).simulator) is VecSimulator
    with pytest.warns(UserWarning) as caught:
        assert type(model("MiniGrid-Unlock-v0").simulator) is VecSimulator
        assert type(model("MiniGrid-Unlock-v0").simulator) is VecSimulator
    assert [str(w.message) for w in caught if "CompiledMiniGridSimulator" in str(w.message)] == [_unlock_warning()]


def test_a_batch_the_arrays_cannot_hold_is_searched_on_the_env() -> None:
    """With MiniGridBound, an env whose success rule the bound does not know (Playground: no goal, no object to fetch)
    gets the undiscounted goal reward as its bound, which the arrays do not hold: its batches step the env itself, and
    give the env's transitions."""

    def make() -> gym.Env:
        return make_minigrid_env("MiniGrid-Playground-v0")

    bound = MiniGridBound.for_env(make())
    reference = VecSimulator([SimulatorWrapper(make())], bound)
    compiled = CompiledMiniGridSimulator([SimulatorWrapper(make())], bound)
    rng = np.random.default_rng(0)
    for seed in range(3):
        want, got = reference.reset([seed]), compiled.reset([seed])
        assert not compiled.runs_search_iterations
        for action in rng.integers(7, size=30).tolist():
            want = reference.step(want.snapshots, np.array([action]), np.array([0]))
            got = compiled.step(got.snapshots, np.array([action]), np.array([0]))
            np.testing.assert_array_equal(got.obs[0]["image"], want.obs[0]["image"])
            for name in ("rewards", "lower", "upper"):
                np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
            if want.terminal[0]:
                break


@pytest.mark.parametrize("key_color", ["yellow", "red"])
def test_a_locked_door_opens_only_with_its_key(key_color: str) -> None:
    """Pick up a key, toggle a locked door of the key's colour or another one, then walk on: the same as the env."""

    def make() -> gym.Env:
        return make_minigrid_env("SB3DirPGTest/LockedDoor-v0", key_color=key_color)

    bound = MultiRoomBound.for_env(make())
    reference = VecSimulator([SimulatorWrapper(make())], bound)
    compiled = CompiledMiniGridSimulator([SimulatorWrapper(make())], bound)
    want, got = reference.reset([0]), compiled.reset([0])
    rewards = []
    for action in (3, 2, 5, 2, 2):  # pickup, forward, toggle, forward into the doorway, forward onto the goal
        want = reference.step(want.snapshots, np.array([action]), np.array([0]))
        got = compiled.step(got.snapshots, np.array([action]), np.array([0]))
        np.testing.assert_array_equal(got.obs[0]["image"], want.obs[0]["image"])
        for name in ("rewards", "terminal", "success", "lower", "upper"):
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
        rewards.append(float(want.rewards[0]))
    assert rewards == ([5.0, 0.0, 30.0, 0.0, 100.0] if key_color == "yellow" else [5.0, 0.0, 0.0, 0.0, 0.0])


def test_snapshots_of_an_earlier_reset_are_refused() -> None:
    """A snapshot is a row of the store that the next reset reuses: stepping an old one raises instead of stepping
    another state."""
    compiled = CompiledMiniGridSimulator([SimulatorWrapper(make_minigrid_env("MiniGrid-MultiRoom-N2-S4-v0"))])
    old = compiled.reset([0]).snapshots
    compiled.reset([1])
    with pytest.raises(ValueError, match="before the last reset"):
        compiled.step(old, np.array([2]), np.array([0]))


def test_the_backend_is_saved_with_the_model(tmp_path: Any) -> None:
    """A loaded model keeps the saved ``simulator_backend`` and builds that simulator for its new env."""
    model = _minigrid_model("env")
    model.save(tmp_path / "model")
    loaded = DirPG.load(tmp_path / "model", env=model.get_env())
    assert loaded.simulator_backend == "env"
    assert type(loaded.simulator) is VecSimulator
    assert type(DirPG.load(tmp_path / "model", env=model.get_env(), simulator_backend="auto").simulator) is (
        CompiledMiniGridSimulator
    )


def test_search_workers_run_the_compiled_simulator_with_the_same_results() -> None:
    """With the compiled simulator, as with the env, the parameters do not depend on the number of search workers."""
    alone, with_worker = _minigrid_model("compiled"), _minigrid_model("compiled", n_workers=1)
    for model in (alone, with_worker):
        model.learn(3000)
    with_worker.close_workers()
    assert alone.num_timesteps == with_worker.num_timesteps
    for a, b in zip(alone.policy.parameters(), with_worker.policy.parameters()):
        assert th.equal(a, b)
