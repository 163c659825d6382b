"""Admissibility of the MiniGrid return-to-go bounds, checked against exhaustive search over all reachable states."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from dataclasses import dataclass, field

import cloudpickle
import gymnasium as gym
import numpy as np
import pytest
from minigrid.core.constants import COLOR_NAMES
from minigrid.core.mission import MissionSpace
from minigrid.core.roomgrid import RoomGrid
from minigrid.core.world_object import Ball
from minigrid.envs.obstructedmaze import ObstructedMaze_1Dlhb, ObstructedMazeEnv

import sb3_dirpg.envs  # noqa: F401  (registers the envs)
from sb3_dirpg.envs import make_minigrid_env
from sb3_dirpg.envs.minigrid import MultiRoomBound
from sb3_dirpg.envs.minigrid.grid_bound import UNREACHABLE, MiniGridBound, success_targets
from sb3_dirpg.envs.minigrid.progress import MiniGridProgressBound, MiniGridProgressReward
from sb3_dirpg.envs.minigrid.seen import SeenCells
from sb3_dirpg.simulator.unwrap import wrapper_layers

GAMMAS = (1.0, 0.99)
N_ACTIONS = 7  # every MiniGrid action, including the no-ops (pickup/drop/done where nothing happens)


class MiniGridTestCloner:
    """Test-local exact snapshot/restore of a MiniGrid env without stochastic dynamics (agent, grid cells, objects).

    Independent of the package's simulator so that the search below does not trust the code under test.
    """

    def __init__(self, base) -> None:
        self.base = base
        self.objects = [obj for obj in base.grid.grid if obj is not None and obj.type != "wall"]
        if base.carrying is not None:
            self.objects.append(base.carrying)
        self.objects += [obj.contains for obj in self.objects if obj.type == "box" and obj.contains is not None]

    def snapshot(self) -> tuple:
        b = self.base
        return (
            tuple(int(c) for c in b.agent_pos),
            b.agent_dir,
            b.step_count,
            b.carrying,
            list(b.grid.grid),
            [obj.__dict__.copy() for obj in self.objects],
        )

    def restore(self, state: tuple) -> None:
        b = self.base
        b.agent_pos, b.agent_dir, b.step_count, b.carrying = state[:4]
        b.grid.grid[:] = state[4]
        for obj, attrs in zip(self.objects, state[5]):
            obj.__dict__.update(attrs)

    def key(self) -> tuple:
        """Everything the future depends on (the memo key of the exhaustive search)."""
        b = self.base
        parts = []
        for obj in self.objects:
            if obj.type == "door":
                parts.append((obj.is_open, obj.is_locked))
            elif obj.can_pickup():
                parts.append(None if obj.cur_pos is None else tuple(int(c) for c in obj.cur_pos))
        carrying = None if b.carrying is None else self._index(b.carrying)
        cells = tuple(-1 if cell is None or cell.type == "wall" else self._index(cell) for cell in b.grid.grid)
        return (int(b.agent_pos[0]), int(b.agent_pos[1]), b.agent_dir, b.step_count, carrying, tuple(parts), cells)

    def _index(self, obj) -> int:
        """:return: the object's place in ``objects`` (by identity: MiniGrid compares objects by type and colour)"""
        return next(i for i, known in enumerate(self.objects) if known is obj)


@dataclass
class StateRecord:
    """Exact best/worst return-to-go of one reachable state (per gamma) and the bounds there."""

    best: np.ndarray
    worst: np.ndarray
    bounds: dict[str, np.ndarray] = field(default_factory=dict)  # name -> array (len(GAMMAS), 2) of (lower, upper)


def exhaustive_search(env, bounds: dict[str, Callable], cloner: MiniGridTestCloner | None = None) -> dict[tuple, StateRecord]:
    """Best and worst discounted return-to-go of every state reachable from the env's current state.

    :param env: the wrapped MiniGrid env (shaped reward), just reset
    :param bounds: name -> function(env, gamma) -> (lower, upper), evaluated at every reachable non-terminal state
    :param cloner: the test cloner of the env's state (by default of the unwrapped env alone)
    :return: memo key -> record
    """
    cloner = cloner or MiniGridTestCloner(env.unwrapped)
    gammas = np.array(GAMMAS)
    memo: dict[tuple, StateRecord] = {}

    def visit() -> StateRecord:
        key = cloner.key()
        if key in memo:
            return memo[key]
        record = StateRecord(best=np.full(len(GAMMAS), -np.inf), worst=np.full(len(GAMMAS), np.inf))
        record.bounds = {name: np.array([fn(env, g) for g in GAMMAS], dtype=float) for name, fn in bounds.items()}
        snap = cloner.snapshot()
        for action in range(N_ACTIONS):
            cloner.restore(snap)
            _, reward, terminated, truncated, _ = env.step(action)
            future = StateRecord(np.zeros(len(GAMMAS)), np.zeros(len(GAMMAS))) if terminated or truncated else visit()
            record.best = np.maximum(record.best, reward + gammas * future.best)
            record.worst = np.minimum(record.worst, reward + gammas * future.worst)
        cloner.restore(snap)
        memo[key] = record
        return record

    visit()
    return memo


def as_pair(value: float | tuple[float, float]) -> tuple[float, float]:
    return (-np.inf, float(value)) if np.isscalar(value) else (float(value[0]), float(value[1]))


def bound_fn(scale: float = 1.0, step_limit: bool = False) -> Callable:
    def fn(env, gamma: float) -> tuple[float, float]:
        lower, upper = as_pair(MultiRoomBound.for_env(env, gamma, step_limit=step_limit)(env))
        return lower, scale * upper

    return fn


def off_by_one_goal_bound(env, gamma: float) -> tuple[float, float]:
    """A plausible mistake: discounting the goal reward by gamma^manhattan instead of gamma^(manhattan - 1)."""
    lower, upper = as_pair(MultiRoomBound(gamma, step_limit=True)(env))
    base = env.unwrapped
    m_goal = abs(int(base.agent_pos[0]) - int(base.goal_pos[0])) + abs(int(base.agent_pos[1]) - int(base.goal_pos[1]))
    if m_goal <= base.max_steps - base.step_count:
        upper -= 100.0 * gamma ** (m_goal - 1) * (1 - gamma)
    return lower, upper


# MultiRoom-N2-S4 maps: eight seeds at horizon 16; DoorKey-5x5 (key pickup, locked door) at horizon 14; Empty-5x5.
CASES = [("MiniGrid-MultiRoom-N2-S4-v0", seed, 16) for seed in range(8)]
CASES += [("MiniGrid-DoorKey-5x5-v0", seed, 14) for seed in range(2)]
CASES += [("MiniGrid-Empty-5x5-v0", 0, 12)]


@pytest.fixture(scope="module")
def searched() -> dict[tuple, dict[tuple, StateRecord]]:
    """Exhaustive search of every case once, with the real bound and the deliberately wrong ones."""
    results = {}
    for env_id, seed, horizon in CASES:
        env = make_minigrid_env(env_id, max_steps=horizon)
        env.reset(seed=seed)
        bounds = {"bound": bound_fn(), "step_limited": bound_fn(step_limit=True), "half": bound_fn(0.5)}
        if "MultiRoom" in env_id:
            bounds["off_by_one"] = off_by_one_goal_bound
        results[(env_id, seed, horizon)] = exhaustive_search(env, bounds)
    return results


def violations(memo: dict[tuple, StateRecord], name: str, tol: float = 1e-9) -> tuple[int, int]:
    """:return: number of (state, gamma) pairs where upper < best, and where lower > worst"""
    upper_bad = lower_bad = 0
    for record in memo.values():
        lower, upper = record.bounds[name][:, 0], record.bounds[name][:, 1]
        upper_bad += int(np.sum(upper < record.best - tol))
        lower_bad += int(np.sum(lower > record.worst + tol))
    return upper_bad, lower_bad


def test_test_cloner_matches_deepcopy() -> None:
    """The search's own snapshot/restore reproduces a deepcopy of the env under random branching."""
    rng = np.random.default_rng(0)
    for env_id, seed in (("MiniGrid-MultiRoom-N2-S4-v0", 1), ("MiniGrid-DoorKey-5x5-v0", 0)):
        env = make_minigrid_env(env_id, max_steps=200)
        env.reset(seed=seed)
        cloner = MiniGridTestCloner(env.unwrapped)
        for _ in range(20):
            for action in rng.integers(N_ACTIONS, size=rng.integers(0, 8)):
                env.step(int(action))
            snap, reference = cloner.snapshot(), copy.deepcopy(env)
            for action in rng.integers(N_ACTIONS, size=10):
                env.step(int(action))
            cloner.restore(snap)
            for action in rng.integers(N_ACTIONS, size=10):
                obs, reward, term, trunc, _ = env.step(int(action))
                ref_obs, ref_reward, ref_term, ref_trunc, _ = reference.step(int(action))
                assert np.array_equal(obs["image"], ref_obs["image"]) and obs["direction"] == ref_obs["direction"]
                assert (reward, term, trunc) == (ref_reward, ref_term, ref_trunc)
                if term:
                    break
            cloner.restore(snap)


@pytest.mark.parametrize("case", CASES, ids=[f"{e}-seed{s}-T{h}" for e, s, h in CASES])
def test_bound_is_admissible(searched, case) -> None:
    """upper >= best return-to-go and lower <= worst return-to-go at every reachable state, for gamma 1 and 0.99."""
    memo = searched[case]
    assert len(memo) > 50
    assert violations(memo, "bound") == (0, 0)
    assert violations(memo, "step_limited") == (0, 0)
    best_at_start = max(record.best[0] for record in memo.values())
    assert best_at_start >= 100.0, "the goal must be reachable within the horizon, or the goal term is never tested"


def test_bound_is_tight_somewhere(searched) -> None:
    """Next to the goal, facing it, with all doors open, the bound equals the true value (gamma = 1). Where the goal is
    out of reach the step-limited bound is tighter, never looser."""
    memo = searched[CASES[0]]
    assert any(abs(r.bounds["bound"][0, 1] - r.best[0]) < 1e-9 and r.best[0] >= 100.0 for r in memo.values())
    free = np.array([r.bounds["bound"][:, 1] for r in memo.values()])
    limited = np.array([r.bounds["step_limited"][:, 1] for r in memo.values()])
    assert (limited <= free + 1e-12).all() and (limited < free - 1.0).any()


def test_check_catches_too_small_bounds(searched) -> None:
    """The same check fails for half the bound, for a goal discount off by one step at gamma = 0.99, and for a lower
    bound of 0 (some continuations lose reward by closing doors or dropping the key)."""
    multiroom = [searched[c] for c in CASES if "MultiRoom" in c[0]]
    assert all(violations(memo, "half")[0] > 0 for memo in searched.values())
    assert sum(violations(memo, "off_by_one")[0] for memo in multiroom) > 0
    with_doors = [memo for (env_id, _, _), memo in searched.items() if "Empty" not in env_id]
    assert all(any(record.worst[0] < 0 for record in memo.values()) for memo in with_doors)


def test_bound_degenerate_states() -> None:
    """No steps left: both bounds are 0. A bad gamma is rejected."""
    env = make_minigrid_env("MiniGrid-MultiRoom-N2-S4-v0", max_steps=16)
    env.reset(seed=0)
    env.unwrapped.step_count = 16
    assert MultiRoomBound(0.9)(env) == (0.0, 0.0)
    with pytest.raises(ValueError):
        MultiRoomBound(gamma=0.0)
    with pytest.raises(ValueError):
        MultiRoomBound.for_env(env.unwrapped)


def test_bound_remembers_each_grid_and_copies_without_its_cache() -> None:
    """The bound caches MultiRoom's door and goal cells per grid: over resets (new grids), snapshots restored into
    other simulators and random play, it equals a new bound's value at every state; copies and pickles of a used bound
    give the same values."""
    env = make_minigrid_env("MiniGrid-MultiRoom-N6-v0")
    used = MultiRoomBound.for_env(env, gamma=0.99)
    rng = np.random.default_rng(0)
    states = 0
    for seed in range(5):
        env.reset(seed=seed)
        for _ in range(60):
            assert used(env) == MultiRoomBound.for_env(env, gamma=0.99)(env)
            states += 1
            _, _, terminated, truncated, _ = env.step(int(rng.integers(N_ACTIONS)))
            if terminated or truncated:
                break
    assert states >= 250
    for copied in (copy.deepcopy(used), pickle.loads(pickle.dumps(used)), cloudpickle.loads(cloudpickle.dumps(used))):
        assert copied(env) == used(env)


# -- the general grid bound -------------------------------------------------------------------------------------

# one case per family whose success rule MiniGridBound knows, each with the success reachable within the horizon
GRID_CASES = [
    ("MiniGrid-Fetch-5x5-N2-v0", 0, 10),
    ("MiniGrid-Fetch-5x5-N2-v0", 1, 10),
    ("MiniGrid-GoToDoor-5x5-v0", 0, 10),
    ("MiniGrid-KeyCorridorS3R1-v0", 0, 16),
    ("MiniGrid-PutNear-6x6-N2-v0", 0, 12),
    ("MiniGrid-PutNear-6x6-N2-v0", 1, 12),
    ("MiniGrid-Unlock-v0", 0, 22),
    ("MiniGrid-RedBlueDoors-6x6-v0", 0, 16),
    ("MiniGrid-Empty-Random-5x5-v0", 0, 10),
    ("MiniGrid-DoorKey-5x5-v0", 0, 14),
    ("MiniGrid-MultiRoom-N2-S4-v0", 0, 16),
    ("MiniGrid-MultiRoom-N2-S4-v0", 3, 16),
    ("MiniGrid-GoToObject-6x6-N2-v0", 0, 10),
    ("MiniGrid-MemoryS7-v0", 0, 12),
]


class OffByOneDistance(MiniGridBound):
    """A plausible mistake: path lengths one step too long."""

    @staticmethod
    def _distance(entry, ax, ay, x, y, locked=()) -> int:
        return MiniGridBound._distance(entry, ax, ay, x, y, locked) + 1


class KeyBlind(MiniGridBound):
    """The bound without the way through a key: looser where locked doors stand in the way."""

    def _target_distance(self, entry, ax, ay, x, y) -> int:
        return self._distance(entry, ax, ay, x, y)


class KeyTwoTooLong(MiniGridBound):
    """A mistake: the way through a key two steps too long (one more step, the door's toggle, is still admissible)."""

    def _target_distance(self, entry, ax, ay, x, y) -> int:
        through, plain = super()._target_distance(entry, ax, ay, x, y), self._distance(entry, ax, ay, x, y)
        return through + 2 if through != plain else through


@pytest.fixture(scope="module")
def grid_searched() -> dict[tuple, dict[tuple, StateRecord]]:
    """Exhaustive search of every family's case with the grid bound, its mutants and the MultiRoom bound."""
    results = {}
    for env_id, seed, horizon in GRID_CASES:
        env = make_minigrid_env(env_id, max_steps=horizon)
        env.reset(seed=seed)
        bounds = {
            "grid": lambda e, g: as_pair(MiniGridBound.for_env(e, g)(e)),
            "half": lambda e, g: (0.0, 0.5 * MiniGridBound.for_env(e, g)(e)[1]),
            "off_by_one": lambda e, g: as_pair(OffByOneDistance.for_env(e, g)(e)),
            "key_blind": lambda e, g: as_pair(KeyBlind.for_env(e, g)(e)),
            "key_too_long": lambda e, g: as_pair(KeyTwoTooLong.for_env(e, g)(e)),
            "counted": lambda e, g: as_pair(MiniGridBound.for_env(e, g, count_key_actions=True)(e)),
        }
        if env_id in ("MiniGrid-Empty-Random-5x5-v0", "MiniGrid-DoorKey-5x5-v0", "MiniGrid-MultiRoom-N2-S4-v0"):
            bounds["multiroom"] = bound_fn()
        results[(env_id, seed, horizon)] = exhaustive_search(env, bounds)
    return results


@pytest.mark.parametrize("case", GRID_CASES, ids=[f"{e}-seed{s}-T{h}" for e, s, h in GRID_CASES])
def test_grid_bound_is_admissible(grid_searched, case) -> None:
    """upper >= best and lower <= worst return-to-go at every reachable state of each family, for gamma 1 and 0.99, with
    and without ``count_key_actions``; the success is reachable in every case, so its term is tested."""
    memo = grid_searched[case]
    assert len(memo) > 100
    assert violations(memo, "grid") == (0, 0)
    assert violations(memo, "counted") == (0, 0)  # with the non-move actions of the way through a key counted
    assert max(record.best[0] for record in memo.values()) >= 100.0


def test_grid_check_catches_mistakes(grid_searched) -> None:
    """The same check fails for half the bound and for path lengths one step too long (gamma 0.99), except where the
    bound has slack to spare: on GoToDoor it counts 30 for each of the four doors although opening any door ends the
    episode, on PutNear the success needs one step more (the drop) than the bound charges, and on Memory every way into
    the cell of success turns first (it lies beside the hallway's end), a step that path lengths do not count."""
    half = {case[0] for case, memo in grid_searched.items() if violations(memo, "half")[0] == 0}
    off_by_one = {case[0] for case, memo in grid_searched.items() if violations(memo, "off_by_one")[0] == 0}
    assert half == {"MiniGrid-GoToDoor-5x5-v0"}
    assert off_by_one == {"MiniGrid-GoToDoor-5x5-v0", "MiniGrid-PutNear-6x6-N2-v0", "MiniGrid-MemoryS7-v0"}


def test_the_way_through_a_key(grid_searched) -> None:
    """Where a locked door stands between the agent and the success (DoorKey, Unlock, KeyCorridor), going through a key
    makes the bound tighter at many states (gamma 0.99) and it stays admissible (above); two steps too many through the
    key is caught on Unlock, whose success is the locked door itself."""
    for env_id in ("MiniGrid-DoorKey-5x5-v0", "MiniGrid-Unlock-v0", "MiniGrid-KeyCorridorS3R1-v0"):
        memo = next(memo for case, memo in grid_searched.items() if case[0] == env_id)
        aware = np.array([r.bounds["grid"][1, 1] for r in memo.values()])
        blind = np.array([r.bounds["key_blind"][1, 1] for r in memo.values()])
        assert (aware <= blind + 1e-9).all() and (aware < blind - 1e-6).mean() > 0.05, env_id
    unlock = next(memo for case, memo in grid_searched.items() if case[0] == "MiniGrid-Unlock-v0")
    assert violations(unlock, "key_too_long")[0] > 0


def test_grid_bound_is_tighter_than_manhattan(grid_searched) -> None:
    """Where both apply, the path-length bound is never looser than the Manhattan one (every reachable state of the
    exhaustive cases), and on MultiRoom-N6, whose walls stand between the agent and the goal, it is tighter at most
    states of random play (gamma 0.99: a longer way means a smaller discount)."""
    for (env_id, _, _), memo in grid_searched.items():
        if "multiroom" in next(iter(memo.values())).bounds:
            grid = np.array([r.bounds["grid"][:, 1] for r in memo.values()])
            manhattan = np.array([r.bounds["multiroom"][:, 1] for r in memo.values()])
            assert (grid <= manhattan + 1e-9).all(), env_id
    env = make_minigrid_env("MiniGrid-MultiRoom-N6-v0")
    grid_bound, manhattan_bound = MiniGridBound.for_env(env, 0.99), MultiRoomBound.for_env(env, 0.99)
    rng = np.random.default_rng(0)
    tighter = []
    for seed in range(5):
        env.reset(seed=seed)
        for _ in range(40):
            grid_upper, manhattan_upper = grid_bound(env)[1], manhattan_bound(env)[1]
            assert grid_upper <= manhattan_upper + 1e-9
            tighter.append(grid_upper < manhattan_upper - 1e-6)
            if any(env.step(int(rng.integers(N_ACTIONS)))[2:4]):
                break
    assert np.mean(tighter) > 0.5, np.mean(tighter)


def test_grid_bound_unknown_success_and_copies() -> None:
    """An env whose success rule is unknown gets the undiscounted success reward (still admissible); a bound copies
    and pickles without its cache and gives the same values."""
    env = make_minigrid_env("MiniGrid-MultiRoom-N2-S4-v0", max_steps=16)
    env.reset(seed=0)
    bound = MiniGridBound.for_env(env, gamma=0.99)
    assert success_targets(env.unwrapped)
    for copied in (copy.deepcopy(bound), pickle.loads(pickle.dumps(bound)), cloudpickle.loads(cloudpickle.dumps(bound))):
        assert copied(env) == bound(env)
    playground = make_minigrid_env("MiniGrid-Playground-v0", max_steps=16)  # it never succeeds
    playground.reset(seed=0)
    assert success_targets(playground.unwrapped) is None
    assert MiniGridBound.for_env(playground)(playground)[1] >= 100.0
    with pytest.raises(ValueError, match="gamma"):
        MiniGridBound(gamma=1.5)


# -- the non-move actions of the way through a key (count_key_actions) ------------------------------------------------


class TinyObstructedMaze(ObstructedMaze_1Dlhb):
    """ObstructedMaze-1Dlh in two rooms of 2x2 cells (a 7x4 grid): a locked door, its key in a box (which the agent
    may also carry), and the ball to pick up behind the door. Small enough for the exhaustive search with the success
    in reach: toggle the box, pick up the key, unlock the door, drop the key, pick up the ball."""

    def __init__(self, max_steps: int = 16, **kwargs) -> None:
        self.key_in_box, self.blocked = True, False
        mission = MissionSpace(mission_func=ObstructedMazeEnv._gen_mission, ordered_placeholders=[[COLOR_NAMES[0]]])
        RoomGrid.__init__(self, mission_space=mission, room_size=4, num_rows=1, num_cols=2, max_steps=max_steps, **kwargs)
        self.obj = Ball()


TINY = "SB3DirPGTest-TinyObstructedMaze-v0"
if TINY not in gym.registry:
    gym.register(TINY, entry_point=TinyObstructedMaze)
TINY_CASES = [(TINY, 0, 16), (TINY, 2, 16)]


class KeyActionsTwoTooMany(MiniGridBound):
    """A mistake: two actions more on every way through a key."""

    def _target_distance(self, entry, ax, ay, x, y) -> int:
        counted, plain = super()._target_distance(entry, ax, ay, x, y), self._distance(entry, ax, ay, x, y)
        return counted + 2 if counted not in (plain, UNREACHABLE) else counted


def carries_box(env, gamma: float) -> tuple[float, float]:
    """Not a bound: a flag kept with each state's bounds, ``(0, 1)`` where the agent carries a box."""
    carrying = env.unwrapped.carrying
    return 0.0, float(carrying is not None and carrying.type == "box")


@pytest.fixture(scope="module")
def key_searched() -> dict[tuple, dict[tuple, StateRecord]]:
    """Exhaustive search of the tiny mazes with the success reward alone (no door or pickup reward to hide a mistake),
    with and without the counted actions, and with a mistake."""
    results = {}
    for env_id, seed, horizon in TINY_CASES:
        env = make_minigrid_env(env_id, max_steps=horizon, door_reward=0.0, pickup_reward=0.0)
        env.reset(seed=seed)
        results[(env_id, seed, horizon)] = exhaustive_search(env, {
            "grid": lambda e, g: as_pair(MiniGridBound(g, 0.0, 100.0, 0.0)(e)),
            "counted": lambda e, g: as_pair(MiniGridBound(g, 0.0, 100.0, 0.0, count_key_actions=True)(e)),
            "two_too_many": lambda e, g: as_pair(KeyActionsTwoTooMany(g, 0.0, 100.0, 0.0, count_key_actions=True)(e)),
            "carries_box": carries_box,
        })  # fmt: skip
    return results


def test_counted_key_actions_are_admissible_and_tighter(key_searched) -> None:
    """On the tiny mazes (key in a box) the bound that counts the toggles and drops of the way through a key is
    admissible at every reachable state (gamma 1 and 0.99; the other families are in the grid cases above), tighter
    than the plain one at most states, and at most states where the agent carries the box, which the plain bound took
    to hide no key. Two actions too many are caught."""
    caught = 0
    for case, memo in key_searched.items():
        assert max(record.best[0] for record in memo.values()) == 100.0, case  # the success is in reach
        assert violations(memo, "grid") == (0, 0) and violations(memo, "counted") == (0, 0), case
        counted = np.array([r.bounds["counted"][1, 1] for r in memo.values()])
        plain = np.array([r.bounds["grid"][1, 1] for r in memo.values()])
        tighter = counted < plain - 1e-6
        assert (counted <= plain + 1e-9).all() and tighter.mean() > 0.5, case
        carrying = np.array([r.bounds["carries_box"][1, 1] == 1.0 for r in memo.values()])
        assert carrying.sum() > 50 and tighter[carrying].mean() > 0.5, (case, carrying.sum(), tighter[carrying].mean())
        caught += violations(memo, "two_too_many")[0] > 0
    assert caught > 0


# -- the progress reward and its bound ------------------------------------------------------------------------------

PROGRESS = 5.0
# the families whose steps to success have a way through a first cell (RedBlueDoors, PutNear) or a key (Unlock), and a
# pickup target (Fetch)
PROGRESS_CASES = [
    ("MiniGrid-Unlock-v0", 0, 22),
    ("MiniGrid-RedBlueDoors-6x6-v0", 0, 16),
    ("MiniGrid-PutNear-6x6-N2-v0", 0, 12),
    ("MiniGrid-Fetch-5x5-N2-v0", 1, 10),
    ("MiniGrid-KeyCorridorS3R1-v0", 0, 16),
]


class ProgressStepsTooFew(MiniGridProgressBound):
    """A mistake: the steps to success one too few, which withholds one step of progress that can be made."""

    def steps_to_success(self, env):
        steps = super().steps_to_success(env)
        return max(steps - 1, 0) if steps not in (None, UNREACHABLE) else steps


def progress_env(env_id: str, horizon: int, count_key_actions: bool = False):
    """:return: the env with the progress reward on the goal reward alone (doors and pickups 0, as the entries use)"""
    return MiniGridProgressReward(make_minigrid_env(env_id, max_steps=horizon, door_reward=0.0, pickup_reward=0.0),
                                  progress_reward=PROGRESS, count_key_actions=count_key_actions)  # fmt: skip


@pytest.fixture(scope="module")
def progress_searched() -> dict[tuple, dict[tuple, StateRecord]]:
    """Exhaustive search of the progress cases with the progress bound and two mistakes."""
    results = {}
    for env_id, seed, horizon in PROGRESS_CASES:
        env = progress_env(env_id, horizon)
        env.reset(seed=seed)

        def no_lower(e, g):  # the mistake of taking progress to be never negative
            lower, upper = MiniGridProgressBound.for_env(e, g)(e)
            inner = MiniGridBound(g, 0.0, 100.0, 0.0)(e)[0]
            return inner, upper

        bounds = {
            "progress": lambda e, g: as_pair(MiniGridProgressBound.for_env(e, g)(e)),
            "too_few": lambda e, g: as_pair(ProgressStepsTooFew.for_env(e, g)(e)),
            "no_lower": no_lower,
        }
        results[(env_id, seed, horizon)] = exhaustive_search(env, bounds)
    return results


@pytest.mark.parametrize("case", PROGRESS_CASES, ids=[f"{e}-seed{s}-T{h}" for e, s, h in PROGRESS_CASES])
def test_progress_bound_is_admissible(progress_searched, case) -> None:
    """upper >= best and lower <= worst return-to-go under the progress reward at every reachable state, gamma 1 and
    0.99; the success is reachable in every case."""
    memo = progress_searched[case]
    assert len(memo) > 100
    assert violations(memo, "progress") == (0, 0)
    assert max(record.best[0] for record in memo.values()) >= 100.0


def test_progress_check_catches_mistakes(progress_searched) -> None:
    """One step of progress too few is caught on every case (the bound is tight where the agent faces its way), and
    leaving out the progress the agent can lose is caught on every case too."""
    for case, memo in progress_searched.items():
        assert violations(memo, "too_few")[0] > 0, case
        assert violations(memo, "no_lower")[1] > 0, case


def test_progress_reward_telescopes() -> None:
    """Over random episodes the reward sums to the goal reward on success plus ``p * (d(s_0) - d(s_T))``, with
    ``d(s_T) = 0`` on success: the shaping is potential-based, so no loop pays (also with ``count_key_actions``)."""
    rng = np.random.default_rng(0)
    successes = 0
    cases = [(env_id, False) for env_id in ("MiniGrid-RedBlueDoors-6x6-v0", "MiniGrid-Fetch-5x5-N2-v0")]
    cases += [("MiniGrid-LockedRoom-v0", False)]
    cases += [(env_id, True) for env_id in ("MiniGrid-KeyCorridorS3R1-v0", "MiniGrid-ObstructedMaze-1Dlh-v0", TINY)]
    for env_id, count_key_actions in cases:
        env = progress_env(env_id, 60, count_key_actions)
        steps = MiniGridBound(count_key_actions=count_key_actions)
        for seed in range(15):
            env.reset(seed=seed)
            first, total, info, done = steps.steps_to_success(env), 0.0, {}, False
            while not done:
                _, reward, terminated, truncated, info = env.step(int(rng.integers(N_ACTIONS)))
                total, done = total + reward, terminated or truncated
            last = 0 if info["is_success"] else steps.steps_to_success(env)
            successes += info["is_success"]
            assert total == pytest.approx(100.0 * info["is_success"] + PROGRESS * (first - last)), (env_id, seed)
    assert successes > 0


def test_progress_with_counted_key_actions_is_admissible() -> None:
    """With ``count_key_actions`` the progress reward pays for the toggles and drops of the way through a key, and the
    progress bound (which takes the setting from the reward's wrapper) stays admissible on the tiny maze; one step of
    progress too few is caught."""
    env = progress_env(TINY, 16, count_key_actions=True)
    env.reset(seed=0)
    assert MiniGridProgressBound.for_env(env).count_key_actions
    memo = exhaustive_search(env, {
        "progress": lambda e, g: as_pair(MiniGridProgressBound.for_env(e, g)(e)),
        "too_few": lambda e, g: as_pair(ProgressStepsTooFew.for_env(e, g)(e)),
    })  # fmt: skip
    assert max(record.best[0] for record in memo.values()) >= 100.0
    assert violations(memo, "progress") == (0, 0)
    assert violations(memo, "too_few")[0] > 0


def test_progress_reward_bad_input() -> None:
    """Clear errors: no shaped-reward wrapper inside, a progress reward that is not positive, an env whose success
    rule is unknown (at reset, before any step)."""
    import gymnasium as gym

    with pytest.raises(ValueError, match="MiniGridShapedReward"):
        MiniGridProgressReward(gym.make("MiniGrid-Unlock-v0"))
    with pytest.raises(ValueError, match="progress_reward"):
        MiniGridProgressReward(make_minigrid_env("MiniGrid-Unlock-v0"), progress_reward=0.0)
    with pytest.raises(ValueError, match="progress_reward"):
        MiniGridProgressBound(progress_reward=-1.0)
    playground = MiniGridProgressReward(make_minigrid_env("MiniGrid-Playground-v0"))  # it never succeeds
    with pytest.raises(ValueError, match="PlaygroundEnv"):
        playground.reset(seed=0)
    with pytest.raises(ValueError, match="MiniGridProgressReward"):
        MiniGridProgressBound.for_env(make_minigrid_env("MiniGrid-Unlock-v0"))


def test_ways_through_a_first_cell() -> None:
    """RedBlueDoors (red door before the blue one) and PutNear (the object before its target) count the way through
    the first cell: more steps than to the success target alone on start maps (on PutNear only where the object lies
    five or more cells from the target, by Manhattan distance), and still admissible (the exhaustive cases above cover
    both families)."""
    bound = MiniGridBound()
    for env_id, share in (("MiniGrid-RedBlueDoors-6x6-v0", 0.5), ("MiniGrid-PutNear-6x6-N2-v0", 0.1)):
        env = make_minigrid_env(env_id)
        longer = []
        for seed in range(10):
            env.reset(seed=seed)
            base = env.unwrapped
            entry = bound.layout(env)
            ax, ay = int(base.agent_pos[0]), int(base.agent_pos[1])
            direct = min(max(bound._distance(entry, ax, ay, x, y) - slack, 0) for x, y, slack in success_targets(base))
            longer.append(bound.steps_to_success(env) > direct)
        assert np.mean(longer) >= share, (env_id, longer)


def test_the_drop_before_the_pickup() -> None:
    """On KeyCorridor the ball cannot be picked up while the agent holds the key: with the locked door open and the
    agent in the same cell, holding the key counts one step more (the drop) than holding nothing. The exhaustive
    KeyCorridor case above checks that this is still admissible."""
    from minigrid.core.world_object import Key

    env = make_minigrid_env("MiniGrid-KeyCorridorS3R1-v0")
    bound = MiniGridBound()
    for seed in range(5):
        env.reset(seed=seed)
        base = env.unwrapped
        for cell in base.grid.grid:
            if cell is not None and cell.type == "door":
                cell.is_locked = False
        empty = bound.steps_to_success(env)
        base.carrying = Key("yellow")
        assert bound.steps_to_success(env) == empty + 1, seed
        base.carrying = base.obj
        assert success_targets(base) == []


class RedDoorWayTooLong(MiniGridBound):
    """A mistake: two steps more on the way through the closed red door."""

    def steps_to_success(self, env):
        steps = super().steps_to_success(env)
        return steps + 2 if not env.unwrapped.red_door.is_open and steps != UNREACHABLE else steps


def test_the_way_through_the_red_door_is_tight() -> None:
    """With the success reward alone (no door reward to hide it), two steps more through the red door are caught, and
    the way through it is admissible. One step more is not caught: the bound leaves out the turn from the red door
    towards the blue one, so it has one step of slack at every state of this map."""
    env = make_minigrid_env("MiniGrid-RedBlueDoors-6x6-v0", max_steps=16, door_reward=0.0, pickup_reward=0.0)
    env.reset(seed=0)
    memo = exhaustive_search(env, {
        "grid": lambda e, g: as_pair(MiniGridBound(g, 0.0, 100.0, 0.0)(e)),
        "too_long": lambda e, g: as_pair(RedDoorWayTooLong(g, 0.0, 100.0, 0.0)(e)),
    })  # fmt: skip
    assert violations(memo, "grid") == (0, 0)
    assert violations(memo, "too_long")[0] > 0


# -- keys the agent has not seen (SeenCells) ---------------------------------------------------------------------------

SEEN_CASES = [("MiniGrid-KeyCorridorS3R1-v0", 0, 16), ("MiniGrid-Unlock-v0", 0, 22), (TINY, 0, 16), (TINY, 2, 16)]


class UnseenWayTooLong(MiniGridBound):
    """A mistake: the way through the cells not seen yet two steps too long."""

    @classmethod
    def _way_through_unseen(cls, entry, ax, ay, x, y, locked) -> int:
        way = super()._way_through_unseen(entry, ax, ay, x, y, locked)
        return way if way == UNREACHABLE else way + 2


def seen_layer(env) -> SeenCells:
    return next(layer for layer in wrapper_layers(env) if isinstance(layer, SeenCells))


def with_mask(bound_class: type, mask: Callable, **options) -> Callable:
    """:return: ``fn(env, gamma)``: the bound with the env's SeenCells mask set to ``mask(env)`` (any mask: the bound
    must be admissible whatever the agent has seen, since the true key lies at a seen key or an unseen cell)"""

    def fn(env, gamma: float) -> tuple[float, float]:
        layer = seen_layer(env)
        saved = layer.seen
        layer.seen = mask(env)
        try:
            return as_pair(bound_class(gamma, 0.0, 100.0, 0.0, **options)(env))
        finally:
            layer.seen = saved

    return fn


def hidden_keys(env) -> np.ndarray:
    """:return: every cell seen but those that hold a key or a box (the way through the unseen cells is then the way
    through those, which is tight where the way through the key is)"""
    grid = env.unwrapped.grid
    return np.array([cell is None or cell.type not in ("key", "box") for cell in grid.grid]).reshape(grid.height, grid.width)


@pytest.fixture(scope="module")
def seen_searched() -> dict[tuple, dict[tuple, StateRecord]]:
    """Exhaustive search of KeyCorridorS3R1 and the tiny mazes (the success reward alone) with the grid bound under
    masks of seen cells: none, all, and a random one at each state (fixed seed)."""
    rng = np.random.default_rng(0)
    results = {}
    for env_id, seed, horizon in SEEN_CASES:
        env = SeenCells(make_minigrid_env(env_id, max_steps=horizon, door_reward=0.0, pickup_reward=0.0))
        env.reset(seed=seed)
        none = lambda e: np.zeros(seen_layer(e).seen.shape, bool)  # noqa: E731
        every = lambda e: np.ones(seen_layer(e).seen.shape, bool)  # noqa: E731
        some = lambda e: rng.random(seen_layer(e).seen.shape) < 0.5  # noqa: E731
        results[(env_id, seed, horizon)] = exhaustive_search(env, {
            "plain": lambda e, g: as_pair(MiniGridBound(g, 0.0, 100.0, 0.0)(e.env)),  # the chain without SeenCells
            "none": with_mask(MiniGridBound, none),
            "every": with_mask(MiniGridBound, every),
            "some": with_mask(MiniGridBound, some),
            "counted_none": with_mask(MiniGridBound, none, count_key_actions=True),
            "counted_some": with_mask(MiniGridBound, some, count_key_actions=True),
            "too_long": with_mask(UnseenWayTooLong, hidden_keys),
        })  # fmt: skip
    return results


def test_bound_with_unseen_keys_is_admissible(seen_searched) -> None:
    """Whatever the agent has seen, the grid bound that counts an unseen key at the nearest unseen cell is admissible at
    every reachable state (gamma 1 and 0.99, with and without the counted key actions); with every cell seen it is the
    plain bound; with none seen it is looser at some states (it no longer knows where the key is). The way through the
    unseen cells two steps too long is caught (where only the key's cell is unseen)."""
    caught = 0
    for case, memo in seen_searched.items():
        assert max(record.best[0] for record in memo.values()) == 100.0, case
        for name in ("none", "every", "some", "counted_none", "counted_some"):
            assert violations(memo, name) == (0, 0), (case, name)
        every = np.array([r.bounds["every"] for r in memo.values()])
        plain = np.array([r.bounds["plain"] for r in memo.values()])
        none = np.array([r.bounds["none"][:, 1] for r in memo.values()])
        assert np.array_equal(every, plain), case
        assert (none >= plain[:, :, 1] - 1e-9).all() and (none > plain[:, :, 1] + 1e-6).any(), case
        caught += violations(memo, "too_long")[0] > 0
    assert caught > 0


def test_seen_cells_are_minigrids_view_and_snapshot_with_the_env() -> None:
    """``seen`` is the union of MiniGrid's own visible cells (``gen_obs_grid``'s mask, placed with ``get_view_coords``)
    over the episode's observations, on random play; a SimulatorWrapper snapshot restores it; bad input is refused."""
    from minigrid.minigrid_env import MiniGridEnv

    from sb3_dirpg.simulator import SimulatorWrapper

    def visible(base) -> np.ndarray:
        _, mask = MiniGridEnv.gen_obs_grid(base)
        cells = np.zeros((base.grid.height, base.grid.width), bool)
        for y in range(base.grid.height):
            for x in range(base.grid.width):
                vx, vy = base.get_view_coords(x, y)
                cells[y, x] = 0 <= vx < mask.shape[0] and 0 <= vy < mask.shape[1] and bool(mask[vx, vy])
        return cells

    rng = np.random.default_rng(0)
    grew = 0
    for env_id in ("MiniGrid-KeyCorridorS3R3-v0", "MiniGrid-ObstructedMaze-1Dlh-v0", "MiniGrid-FourRooms-v0"):
        env = SeenCells(make_minigrid_env(env_id))
        for seed in range(3):
            env.reset(seed=seed)
            union = visible(env.unwrapped)
            assert np.array_equal(env.seen, union)
            for _ in range(40):
                _, _, terminated, truncated, _ = env.step(int(rng.integers(N_ACTIONS)))
                if terminated or truncated:
                    break
                union |= visible(env.unwrapped)
                assert np.array_equal(env.seen, union), (env_id, seed)
            grew += int(union.sum() > visible(env.unwrapped).sum())
    assert grew > 3
    sim = SimulatorWrapper(SeenCells(make_minigrid_env("MiniGrid-KeyCorridorS3R3-v0")))
    sim.reset(seed=0)
    before = seen_layer(sim).seen
    snapshot = sim.snapshot()
    for action in (0, 0, 2, 2, 5, 1, 1, 2, 5):
        sim.step(action)
    assert not np.array_equal(seen_layer(sim).seen, before)
    sim.restore(snapshot)
    assert np.array_equal(seen_layer(sim).seen, before)
    with pytest.raises(ValueError, match="image"):
        SeenCells(gym.wrappers.FlattenObservation(gym.wrappers.FilterObservation(
            make_minigrid_env("MiniGrid-Unlock-v0"), ["image"])))  # fmt: skip


def test_progress_with_seen_cells_telescopes_and_stops_seeing_the_key() -> None:
    """With SeenCells inside the progress reward, the potential counts an unseen key at the nearest unseen cell: the
    reward still sums to ``p * (d(s_0) - d(s_T))`` plus the goal reward over random episodes (the bound reads the same
    potential), and at the start of KeyCorridorS3R3 the steps to success are fewer than with the key's true cell on
    most maps (the key lies behind a closed door)."""
    rng = np.random.default_rng(1)
    fewer = 0
    for seed in range(20):
        inner = SeenCells(make_minigrid_env("MiniGrid-KeyCorridorS3R3-v0", max_steps=60, door_reward=0.0, pickup_reward=0.0))
        env = MiniGridProgressReward(inner, progress_reward=PROGRESS)
        steps = MiniGridBound()
        env.reset(seed=seed)
        first = steps.steps_to_success(env)
        fewer += first < steps.steps_to_success(inner.env)  # the chain without SeenCells
        total, info, done = 0.0, {}, False
        while not done:
            _, reward, terminated, truncated, info = env.step(int(rng.integers(N_ACTIONS)))
            total, done = total + reward, terminated or truncated
        last = 0 if info["is_success"] else steps.steps_to_success(env)
        assert total == pytest.approx(100.0 * info["is_success"] + PROGRESS * (first - last)), seed
        assert MiniGridProgressBound.for_env(env).steps_to_success(env) == steps.steps_to_success(env)
    assert fewer >= 15


class SeenTestCloner(MiniGridTestCloner):
    """The test cloner with the SeenCells mask as part of the state (the progress reward reads it)."""

    def __init__(self, env) -> None:
        super().__init__(env.unwrapped)
        self.layer = seen_layer(env)

    def snapshot(self) -> tuple:
        return (*super().snapshot(), self.layer.seen)

    def restore(self, state: tuple) -> None:
        super().restore(state[:-1])
        self.layer.seen = state[-1]

    def key(self) -> tuple:
        return (*super().key(), self.layer.seen.tobytes())


def test_progress_that_pays_for_unseen_cells_is_admissible() -> None:
    """``unseen_cell_steps``: the progress reward also counts the cells not seen yet, so a view into a room without
    the key pays instead of costing. On KeyCorridorS3R1 (the mask is state: the exhaustive search restores it) the
    progress bound, which takes the setting from the wrapper, is admissible at every reachable state; one step of
    progress too few is caught; the reward telescopes over random S3R3 episodes; and the setting needs SeenCells."""
    def build(env_id: str, horizon: int):
        inner = SeenCells(make_minigrid_env(env_id, max_steps=horizon, door_reward=0.0, pickup_reward=0.0))
        return MiniGridProgressReward(inner, progress_reward=PROGRESS, unseen_cell_steps=2.0)

    env = build("MiniGrid-KeyCorridorS3R1-v0", 16)
    env.reset(seed=0)
    assert MiniGridProgressBound.for_env(env).unseen_cell_steps == 2.0
    memo = exhaustive_search(env, {
        "progress": lambda e, g: as_pair(MiniGridProgressBound.for_env(e, g)(e)),
        "too_few": lambda e, g: as_pair(ProgressStepsTooFew.for_env(e, g)(e)),
    }, SeenTestCloner(env))  # fmt: skip
    assert len(memo) > 100 and max(record.best[0] for record in memo.values()) >= 100.0
    assert violations(memo, "progress") == (0, 0)
    assert violations(memo, "too_few")[0] > 0
    rng = np.random.default_rng(2)
    paid = 0
    for seed in range(10):
        env = build("MiniGrid-KeyCorridorS3R3-v0", 60)
        env.reset(seed=seed)
        first, total, info, done = env._steps_left(), 0.0, {}, False
        while not done:
            before = seen_layer(env).seen.sum()
            _, reward, terminated, truncated, info = env.step(int(rng.integers(N_ACTIONS)))
            total, done = total + reward, terminated or truncated
            paid += seen_layer(env).seen.sum() > before and reward > 0
        last = 0 if info["is_success"] else env._steps_left()
        assert total == pytest.approx(100.0 * info["is_success"] + PROGRESS * (first - last)), seed
    assert paid > 10
    with pytest.raises(ValueError, match="SeenCells"):
        MiniGridProgressReward(make_minigrid_env("MiniGrid-KeyCorridorS3R1-v0"), unseen_cell_steps=1.0)
    with pytest.raises(ValueError, match="unseen_cell_steps"):
        MiniGridProgressBound(unseen_cell_steps=-1.0)
