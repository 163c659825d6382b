"""A batch simulator for MiniGrid that holds states as arrays and steps them in compiled code (``simulator_backend``).

The search spends most of an interaction in the simulator: MiniGrid's Python step, the snapshot and restore of its
objects, and the bound (``python -m benchmarks.throughput`` from a source checkout profiles it). For MiniGrid envs that
use the base class's dynamics (with KeyCorridor's and ObstructedMaze's success rule), the state is small: the agent's
cell, direction, step count and carried object, and the grid's cells as MiniGrid encodes them (a box's state numbers
its contents). :class:`CompiledMiniGridSimulator` keeps every state the search reaches as a row of arrays (a grid is
shared until a step changes a cell), and steps a whole batch of rows, with the observation, the shaped (and progress)
reward and the bound, in one call of :func:`~sb3_dirpg.envs.minigrid.compiled_kernels.step_states`. Episodes
are still reset by the env itself, so the layouts are MiniGrid's own. A :class:`~sb3_dirpg.envs.minigrid.MissionObs`
outside the chain is supported: the mission is fixed for an episode, so its vector is read once at reset.

It gives the transitions the env gives (``tests/test_compiled_minigrid.py`` compares them on every supported MiniGrid
family, and compares learned parameters). Envs it cannot run are found before any training work
(:func:`compiled_unsupported`); a batch it cannot hold as arrays (a box inside a box, or with the grid bound, an env
whose success it does not know) is searched on the env instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import minigrid
import numpy as np
from minigrid.minigrid_env import MiniGridEnv

from sb3_dirpg.common.simulator_backends import register_compiled_simulator
from sb3_dirpg.common.vec_simulator import VecSimulator
from sb3_dirpg.envs.minigrid import cnn_kernels
from sb3_dirpg.envs.minigrid import compiled_kernels as kernels
from sb3_dirpg.envs.minigrid.action_mask import MiniGridNoOpMask
from sb3_dirpg.envs.minigrid.bound import MultiRoomBound
from sb3_dirpg.envs.minigrid.compiled_grid_bound import new_paths, steps_to_success
from sb3_dirpg.envs.minigrid.compiled_search import LoopSimulator, search_iterations
from sb3_dirpg.envs.minigrid.fast_obs import FastObservation, encode_cells, fast_gen_obs
from sb3_dirpg.envs.minigrid.grid_bound import MiniGridBound, success_targets
from sb3_dirpg.envs.minigrid.mask_rules import ReachedRows, fill_compiled_masks
from sb3_dirpg.envs.minigrid.move_window import NO_DROP, pose_slots
from sb3_dirpg.envs.minigrid.progress import MiniGridProgressBound, MiniGridProgressReward
from sb3_dirpg.envs.minigrid.wrappers import DirectionImageObs, MiniGridShapedReward, MissionObs, encode_mission
from sb3_dirpg.search import fused
from sb3_dirpg.search.fused import LoopExit, LoopState
from sb3_dirpg.search.protocols import Heuristic, Transitions
from sb3_dirpg.search.state import Popped
from sb3_dirpg.simulator import SimulatorWrapper
from sb3_dirpg.simulator.unwrap import wrapper_layers

_NO_WEIGHTS = tuple(np.zeros((0,) * (2 - i % 2), np.float32) for i in range(8))  # no compiled policy: the loop returns MISS
#: object types the compiled step supports (MiniGrid's OBJECT_TO_IDX): empty, wall, floor, door, key, ball, box, goal,
#: lava
SUPPORTED_OBJECTS = frozenset({1, 2, 3, 4, 5, 6, 7, 8, 9})
#: what a box may hold: nothing (empty), a key or a ball
BOX_CONTENTS = frozenset({kernels.EMPTY, kernels.KEY, kernels.BALL})
#: the MiniGrid releases on which the compiled step gave the env's transitions (``tests/test_compiled_minigrid.py``);
#: MiniGrid 2.3 does not register its envs with gymnasium 1
TESTED_MINIGRID = ("2.5.0", "3.0.0", "3.1.0", "3.2.0")


class EpisodeCells(NamedTuple):
    """An episode's root state in the store and what its step and bound read of its first grid.

    :param row: the root state's row in the store
    :param doors: the door cells of a ``MultiRoomBound`` (``y * W + x``)
    :param goals: its goal cells
    :param scans: whether it scans for pickable objects
    :param pickup: the cell of the object whose pickup is the success, -1 for none
    :param targets: the success cells of the grid bound
    :param boxes: each box's contents, MiniGrid's encoding, in the order of the boxes' states in the store
    """

    row: int
    doors: list[int]
    goals: list[int]
    scans: bool
    pickup: int
    targets: list[int]
    boxes: list[tuple[int, int, int]]


def minigrid_untested() -> str | None:
    """Whether the compiled step was tested on the installed MiniGrid's release series (its major and minor version).

    :return: why the compiled step may not follow the installed MiniGrid, or None
    """
    installed = minigrid.__version__
    if installed.split(".")[:2] in [tested.split(".")[:2] for tested in TESTED_MINIGRID]:
        return None
    return f"the compiled MiniGrid rules were tested on minigrid {', '.join(TESTED_MINIGRID)}, not on {installed} (installed)"


def pickup_success_steps() -> tuple[Any, ...]:
    """:return: the ``step`` of KeyCorridor, ObstructedMaze, UnlockPickup and BlockedUnlockPickup: the base dynamics,
        then success when the agent picks up ``obj``"""
    from minigrid.envs import BlockedUnlockPickupEnv, KeyCorridorEnv, UnlockPickupEnv
    from minigrid.envs.obstructedmaze import ObstructedMazeEnv

    return KeyCorridorEnv.step, ObstructedMazeEnv.step, UnlockPickupEnv.step, BlockedUnlockPickupEnv.step


def _gymnasium_passive_layers() -> tuple[type, ...]:
    """:return: the wrappers ``gym.make`` adds that change nothing in a step"""
    from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker

    return OrderEnforcing, PassiveEnvChecker


def compiled_unsupported(simulator: SimulatorWrapper, heuristic: Heuristic | None) -> str | None:
    """Why :class:`CompiledMiniGridSimulator` cannot stand in for an env chain, or None if it can.

    :param simulator: the simulator of one sub-env
    :param heuristic: the algorithm's heuristic
    :return: the reason, or None
    """
    base = simulator.env.unwrapped
    if not isinstance(base, MiniGridEnv):
        return f"{type(base).__name__} is not a MiniGrid env"
    cls = type(base)
    if cls.step is not MiniGridEnv.step and cls.step not in pickup_success_steps():
        return f"{cls.__name__} overrides MiniGridEnv.step"
    if cls.gen_obs not in (MiniGridEnv.gen_obs, fast_gen_obs) or cls.gen_obs_grid is not MiniGridEnv.gen_obs_grid:
        return f"{cls.__name__} computes its observation its own way"
    if base.agent_view_size > kernels.MAX_VIEW:
        return f"its agent_view_size {base.agent_view_size} is above {kernels.MAX_VIEW}"
    layers = wrapper_layers(simulator.env)
    if layers and type(layers[0]) is MissionObs:
        layers = layers[1:]  # its vector is fixed for an episode: the simulator reads it at reset
    if not layers or type(layers[0]) is not DirectionImageObs:
        return (
            "the outermost wrapper is not DirectionImageObs (or MissionObs around it): build the env with "
            "sb3_dirpg.envs.make_minigrid_env"
        )
    allowed = (DirectionImageObs, MiniGridShapedReward, MiniGridProgressReward, FastObservation, MiniGridNoOpMask,
               *_gymnasium_passive_layers())  # fmt: skip
    others = [type(layer).__name__ for layer in layers if type(layer) not in allowed]
    if others:
        return f"the wrapper chain holds {', '.join(others)}"
    if not any(type(layer) is MiniGridShapedReward for layer in layers):
        return "the env has no MiniGridShapedReward"
    if any(type(layer) is MiniGridProgressReward and layer.count_key_actions for layer in layers):
        return "its MiniGridProgressReward counts the key actions (count_key_actions)"
    bounds = (MultiRoomBound, MiniGridBound, MiniGridProgressBound)
    if heuristic is not None and type(heuristic) not in bounds:
        return f"the heuristic is a {type(heuristic).__name__}, not one of {', '.join(b.__name__ for b in bounds)}"
    if isinstance(heuristic, MiniGridBound) and heuristic.count_key_actions:
        return f"its {type(heuristic).__name__} counts the key actions (count_key_actions)"
    if isinstance(heuristic, MiniGridProgressBound) and heuristic.unseen_cell_steps:
        return f"its {type(heuristic).__name__} counts the cells not seen yet (unseen_cell_steps)"
    if simulator.has_action_masks and not any(type(layer) is MiniGridNoOpMask for layer in layers):
        return "the env chain has action masks other than MiniGridNoOpMask's"
    masks = [layer for layer in layers if type(layer) is MiniGridNoOpMask]
    uncompiled = [rule.name for layer in masks for rule in layer.rules if rule.compiled is None]
    if uncompiled:
        return f"its MiniGridNoOpMask rules {uncompiled} have no compiled check (mask_rules.fill_compiled_masks)"
    return None


class CompiledMiniGridSimulator(VecSimulator):
    """A :class:`~sb3_dirpg.common.vec_simulator.VecSimulator` for MiniGrid whose steps run in compiled code.

    ``reset`` resets the envs (MiniGrid draws the layout), then copies each episode's grid into arrays; ``step`` runs
    on the arrays only. A snapshot is an int: a row of the state store, valid until the next ``reset``. Build it with
    :func:`~sb3_dirpg.common.simulator_backends.make_vec_simulator` (``simulator_backend="compiled"``), which checks
    :func:`compiled_unsupported` and :func:`minigrid_untested` first.

    :param simulators: the simulators (sub-envs) that reset the episodes
    :param heuristic: a :class:`~sb3_dirpg.envs.minigrid.MultiRoomBound`,
        :class:`~sb3_dirpg.envs.minigrid.MiniGridBound` or :class:`~sb3_dirpg.envs.minigrid.MiniGridProgressBound`
        (without ``count_key_actions``), or None
    """

    def __init__(self, simulators: Sequence[SimulatorWrapper], heuristic: Heuristic | None = None) -> None:
        super().__init__(simulators, heuristic)
        for sim in self.simulators:
            reason = compiled_unsupported(sim, heuristic)
            if reason is not None:
                raise ValueError(f"the compiled MiniGrid simulator cannot run this env: {reason}")
        first = self.simulators[0]
        base = first.env.unwrapped
        width, height = int(base.width), int(base.height)
        self._view = int(base.agent_view_size)
        layers = wrapper_layers(first.env)
        shaped = next(layer for layer in layers if type(layer) is MiniGridShapedReward)
        progress = next((layer.progress_reward for layer in layers if type(layer) is MiniGridProgressReward), 0.0)
        bound = self._bound = heuristic
        grid_bound = isinstance(bound, MiniGridBound)
        self._rules = kernels.Rules(
            width, height, bool(base.see_through_walls), self._start, shaped.door_reward, shaped.goal_reward,
            shaped.pickup_reward, progress, progress > 0 or grid_bound,
        )  # fmt: skip
        self._bound_params = kernels.BoundParams(False, 1.0, 0.0, 0.0, 0.0, False, False, 0.0)  # no bound: 0 and 0
        if bound is not None:
            self._bound_params = kernels.BoundParams(
                True, bound.gamma, bound.door_reward, bound.goal_reward, bound.pickup_reward,
                getattr(bound, "step_limit", False), grid_bound, getattr(bound, "progress_reward", 0.0),
            )  # fmt: skip
        self._paths = new_paths(width * height)
        noop = next((layer for layer in layers if type(layer) is MiniGridNoOpMask), None)
        self._noop_mask = -1 if noop is None else noop.compiled_flags  # see LoopSimulator.noop_mask
        self._mission_width = len(encode_mission("")) if type(layers[0]) is MissionObs else 0
        self._image_width = self._view * self._view * 3
        # the image's bytes, the direction, then the mission's (0 or 1 each)
        self.observation_width = self._image_width + 1 + self._mission_width
        self._missions = np.zeros((0, self._mission_width), dtype=np.uint8)  # the batch's, one row per episode
        self._generation = 0
        self._episodes: kernels.Episodes | None = None  # set by each reset whose batch runs on the arrays
        self._compiled_batch = False  # whether the current batch runs on the arrays (False: on the envs)
        slots = pose_slots(width, height) if noop is not None and noop.counts_poses else 0
        self._store = kernels.Store(
            np.zeros((1024, 6), dtype=np.int64), np.zeros((1024, 3), dtype=np.uint8), np.zeros(1024, dtype=np.int32),
            np.zeros((64, height, width, 3), dtype=np.uint8), np.zeros(2, dtype=np.int64), np.zeros(1024, dtype=np.int64),
            np.zeros((1024, slots), dtype=np.uint8),
        )  # fmt: skip

    @property
    def runs_search_iterations(self) -> bool:
        """:return: whether the batch of the last reset runs on the arrays (False: the envs step it, see
        :meth:`_encode_episode`), so that the search can run its iterations in
        :func:`~sb3_dirpg.envs.minigrid.compiled_search.search_iterations`"""
        return self._compiled_batch

    def observation_rows(self, obs: list[Any]) -> np.ndarray:
        """:param obs: observations of this simulator (``{"image", "direction"}``, and ``"mission"`` under MissionObs)
        :return: them as byte rows: the image's bytes, the direction, then the mission's, uint8,
            shape (m, observation_width)"""
        rows = np.empty((len(obs), self.observation_width), dtype=np.uint8)
        image = self._image_width
        for row, o in zip(rows, obs):
            row[:image] = np.asarray(o["image"], dtype=np.uint8).ravel()
            row[image] = int(o["direction"])
            if self._mission_width:
                row[image + 1 :] = o["mission"]
        return rows

    def row_observations(self, rows: np.ndarray) -> list[Any]:
        """:param rows: byte rows of :meth:`observation_rows`
        :return: the observations they hold"""
        view, image = self._view, self._image_width
        obs = [{"image": row[:image].reshape(view, view, 3), "direction": int(row[image])} for row in rows]
        if self._mission_width:
            for o, row in zip(obs, rows):
                o["mission"] = row[image + 1 :].astype(np.float32)
        return obs

    def search_iterations(
        self, state: LoopState, pending: Popped | None, max_iterations: int, counts: np.ndarray,
        policy_weights: tuple | None = None,
    ) -> LoopExit:  # fmt: skip
        """Run up to ``max_iterations`` lockstep iterations of a search on the arrays
        (:func:`~sb3_dirpg.envs.minigrid.compiled_search.search_iterations`, with room reserved in the store).

        :param state: the search's records
        :param pending: popped regions to expand first (those of the ``MISS`` that ended the last call), or None
        :param max_iterations: the most iterations
        :param counts: out: the interactions of each iteration
        :param policy_weights: a policy function's ``compiled_weights``: those of
            :mod:`~sb3_dirpg.envs.minigrid.cnn_kernels` are evaluated in the loop (on a 7x7 view)
        :return: why it returned, and what the search needs to go on
        """
        own_forward = policy_weights is not None and policy_weights[0] == cnn_kernels.ARCHITECTURE and self._view == 7
        rows = len(self._episodes.max_steps) * max_iterations
        used = self._store.used
        self._reserve_store(int(used[0]) + rows, int(used[1]) + rows)
        sim = LoopSimulator(
            store=tuple(self._store), rules=tuple(self._rules), episodes=tuple(self._episodes),
            bound=tuple(self._bound_params), generation=self._generation, view_size=self._view, n_actions=self.n_actions,
            with_bounds=self.heuristic is not None, missions=self._missions, noop_mask=self._noop_mask,
        )  # fmt: skip
        policy = policy_weights[1:] if own_forward else _NO_WEIGHTS
        expand = fused.NO_POPPED if pending is None else tuple(pending)
        has_pending = pending is not None
        exit = fused.exit_of(
            search_iterations(state.packed(), tuple(sim), expand, has_pending, max_iterations, counts, policy, own_forward)
        )
        if exit.status is fused.Exit.ENDS:
            self.reports_success = True  # MiniGridShapedReward reports success on every episode end
        return exit

    def _reserve_store(self, states: int, grids: int) -> None:
        """Make room for at least ``states`` states and ``grids`` grids (capacities double, contents are kept).

        :param states: states needed in all
        :param grids: grids needed in all
        """
        store = self._store
        if states > len(store.agent):
            size = max(states, 2 * len(store.agent))
            store = store._replace(
                agent=_grown(store.agent, size), carry=_grown(store.carry, size), grid_of=_grown(store.grid_of, size),
                to_success=_grown(store.to_success, size), visits=_grown(store.visits, size),
            )  # fmt: skip
        if grids > len(store.grids):
            store = store._replace(grids=_grown(store.grids, max(grids, 2 * len(store.grids))))
        self._store = store

    def _encode_episode(self, env: SimulatorWrapper) -> EpisodeCells | None:
        """Copy an env's state just after reset into the store (each box's state numbers its contents).

        :param env: the simulator, reset
        :return: the root's row and what the step and the bound read of the episode; None if the grid holds an object
            the compiled step does not support (a box in a box), or if the grid bound does not know where its success
            happens
        """
        base = env.env.unwrapped
        grid = base.grid
        width = self._rules.width
        if grid.width != width or grid.height != self._rules.height:
            return None
        cells = encode_cells(grid)  # cell (x, y) at [y, x]
        if not set(np.unique(cells[..., 0]).tolist()) <= SUPPORTED_OBJECTS:
            return None
        carried = base.carrying.encode() if base.carrying is not None else (0, 0, 0)
        if carried[0] not in (0, kernels.KEY, kernels.BALL):
            return None
        boxes = []
        for index in np.flatnonzero(cells[..., 0] == kernels.BOX).tolist():  # cell y * W + x, as grid.grid
            contents = grid.grid[index].contains
            code = (kernels.EMPTY, 0, 0) if contents is None else tuple(contents.encode())
            if code[0] not in BOX_CONTENTS:
                return None
            cells[index // width, index % width, 2] = len(boxes)
            boxes.append(code)
        if isinstance(self._bound, MultiRoomBound):
            door_xy, goal_xy, scans = self._bound.static_cells(env)
        else:
            door_xy, goal_xy, scans = [], [], False
        obj = base.obj if type(base).step in pickup_success_steps() else None
        pickup = -1 if obj is None else int(obj.cur_pos[1]) * width + int(obj.cur_pos[0])
        targets = []
        if self._rules.uses_paths:
            found = success_targets(base)
            if found is None:
                return None
            targets = [y * width + x for x, y, _ in found]
        x, y = int(base.agent_pos[0]), int(base.agent_pos[1])
        s, g = (int(n) for n in self._store.used)
        self._reserve_store(s + 1, g + 1)
        store = self._store
        store.grids[g] = cells
        store.agent[s] = (x, y, int(base.agent_dir), int(base.step_count), 0, NO_DROP)
        store.visits[s] = 0
        store.carry[s] = carried
        store.grid_of[s] = g
        store.to_success[s] = kernels.UNREACHABLE
        if self._rules.uses_paths:
            store.to_success[s] = steps_to_success(
                cells, x, y, carried[0], np.array(targets, dtype=np.int64), pickup >= 0, tuple(self._paths)
            )
        store.used[:] = s + 1, g + 1
        doors, goals = [y * width + x for x, y in door_xy], [y * width + x for x, y in goal_xy]
        return EpisodeCells(s, doors, goals, scans, pickup, targets, boxes)

    def reset(self, seeds: Sequence[int]) -> Transitions:
        """:param seeds: one seed per episode
        :return: the root states (their snapshots are ints, valid until the next reset)"""
        self._generation += 1
        self._store.used[:] = 0
        n_sims = len(self.simulators)
        rows, episodes, missions = [], [], []
        for episode, seed in enumerate(seeds):
            env = self.simulators[episode % n_sims]
            obs, _ = env.reset(seed=int(seed))
            encoded = self._encode_episode(env)
            if encoded is None:  # this batch steps the envs themselves
                self._compiled_batch = False
                return super().reset(seeds)
            bounds = self._bounds(env) if self.heuristic is not None else (-np.inf, np.inf)
            rows.append((obs, 0.0, False, env.action_masks(), self._snapshot_id(encoded.row), bounds))
            episodes.append(encoded)
            if self._mission_width:
                missions.append(encode_mission(env.env.unwrapped.mission))
        self._compiled_batch = True
        n = len(episodes)
        self._missions = np.array(missions, dtype=np.uint8).reshape(n, self._mission_width)  # (n, 0) without MissionObs
        doors = np.zeros((n, max([1, *[len(e.doors) for e in episodes]])), dtype=np.int64)
        goals = np.zeros((n, max([1, *[len(e.goals) for e in episodes]])), dtype=np.int64)
        targets = np.zeros((n, max([1, *[len(e.targets) for e in episodes]])), dtype=np.int64)
        boxes = np.zeros((n, max([1, *[len(e.boxes) for e in episodes]]), 3), dtype=np.uint8)
        for e, cells in enumerate(episodes):
            doors[e, : len(cells.doors)] = cells.doors
            goals[e, : len(cells.goals)] = cells.goals
            targets[e, : len(cells.targets)] = cells.targets
            if cells.boxes:
                boxes[e, : len(cells.boxes)] = cells.boxes
        self._episodes = kernels.Episodes(
            self._generation,
            max_steps=np.array([int(self.simulators[e % n_sims].env.unwrapped.max_steps) for e in range(n)], dtype=np.int64),
            doors=doors, n_doors=np.array([len(e.doors) for e in episodes], dtype=np.int64),
            goals=goals, n_goals=np.array([len(e.goals) for e in episodes], dtype=np.int64),
            scan_pickables=np.array([e.scans for e in episodes], dtype=np.bool_),
            pickup_target=np.array([e.pickup for e in episodes], dtype=np.int64),
            targets=targets, n_targets=np.array([len(e.targets) for e in episodes], dtype=np.int64), box_contents=boxes,
        )  # fmt: skip
        trans = self._transitions(rows, [False] * n)
        self._check_finite(rows, trans.rewards, range(n), f"at reset(seed={list(seeds)})")
        return trans

    def _snapshot_id(self, row: int) -> int:
        """:param row: a row of the state store
        :return: the snapshot the search holds for it"""
        return (self._generation << kernels.GENERATION_SHIFT) | row

    def step(self, snapshots: Sequence[Any], actions: np.ndarray, episodes: np.ndarray) -> Transitions:
        """:param snapshots: states to step from (ints returned by this simulator since its last reset)
        :param actions: one action index per row (0-based)
        :param episodes: the episode of each row
        :return: the states reached (terminal states get no snapshot)"""
        if not self._compiled_batch:
            return super().step(snapshots, actions, episodes)
        k = len(snapshots)
        used = self._store.used
        self._reserve_store(int(used[0]) + k, int(used[1]) + k)
        view = self._view
        batch = kernels.Batch(
            np.fromiter(snapshots, dtype=np.int64, count=k), np.asarray(actions, dtype=np.int64),
            np.asarray(episodes, dtype=np.int64), np.empty((k, view, view, 3), dtype=np.uint8), np.empty(k, dtype=np.int64),
            np.empty(k), np.empty(k, dtype=np.bool_), np.empty(k, dtype=np.bool_), np.empty(k), np.empty(k),
            np.empty(k, dtype=np.int64),
        )  # fmt: skip
        records = batch, self._store, self._rules, self._episodes, self._bound_params
        ended = kernels.step_states(*map(tuple, records))  # plain tuples: numba types them faster
        if ended < 0:
            raise ValueError("CompiledMiniGridSimulator.step(): a snapshot from before the last reset() was passed")
        if ended:
            self.reports_success = True  # MiniGridShapedReward reports success on every episode end
        base = self._generation << kernels.GENERATION_SHIFT
        with_bounds = self.heuristic is not None
        obs = [{"image": image, "direction": direction} for image, direction in zip(batch.images, batch.directions.tolist())]
        if self._mission_width:
            for o, episode in zip(obs, batch.episodes.tolist()):
                o["mission"] = self._missions[episode].astype(np.float32)
        masks = np.ones((k, self.n_actions), dtype=bool)
        if self._noop_mask >= 0:
            front, carried = batch.images[:, view // 2, view - 2], batch.images[:, view // 2, view - 1]
            reached = ReachedRows(front, carried, batch.actions, batch.terminal, batch.reached)
            fill_compiled_masks(tuple(reached), tuple(self._store), self._rules.width, self._noop_mask, masks)
        return Transitions(
            obs=obs, rewards=batch.rewards, terminal=batch.terminal, masks=masks,
            snapshots=[None if row < 0 else base | row for row in batch.reached.tolist()],
            lower=batch.lower if with_bounds else None, upper=batch.upper if with_bounds else None, success=batch.success,
        )  # fmt: skip


def _grown(array: np.ndarray, size: int) -> np.ndarray:
    """:param array: an array
    :param size: its new length (at least the old one)
    :return: a copy with ``size`` rows, the old rows first"""
    out = np.zeros((size, *array.shape[1:]), dtype=array.dtype)
    out[: len(array)] = array
    return out


def is_minigrid(simulator: SimulatorWrapper) -> bool:
    """:param simulator: the simulator of one sub-env
    :return: whether its env is a MiniGrid env (the family :class:`CompiledMiniGridSimulator` copies)"""
    return isinstance(simulator.env.unwrapped, MiniGridEnv)


register_compiled_simulator(compiled_unsupported, CompiledMiniGridSimulator, minigrid_untested, is_minigrid)
