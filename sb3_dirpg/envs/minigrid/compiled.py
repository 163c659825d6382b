"""A batch simulator for MiniGrid that holds states as arrays and steps them in compiled code (``simulator_backend``).

The search spends most of an interaction in the simulator: MiniGrid's Python step, the snapshot and restore of its
objects, and the bound (``python -m sb3_dirpg.experiments.throughput`` profiles it). For MiniGrid envs that use the
base class's dynamics, the state is small: the agent's cell, direction, step count and carried object, and the grid's
cells as MiniGrid encodes them. :class:`CompiledMiniGridSimulator` keeps every state the search reaches as a row of
arrays (a grid is shared until a step changes a cell), and steps a whole batch of rows, with the observation, the
shaped reward and the bound, in one call of :func:`~sb3_dirpg.envs.minigrid.compiled_kernels.step_states`. Episodes
are still reset by the env itself, so the layouts are MiniGrid's own.

It gives the transitions the env gives (``tests/test_compiled_minigrid.py`` compares them on every supported MiniGrid
family, and compares learned parameters). Envs it cannot run are found before any training work
(:func:`compiled_unsupported`); a batch whose grid holds a box (toggling one replaces it by its contents) is searched
on the env instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from minigrid.minigrid_env import MiniGridEnv

from sb3_dirpg.common.simulator_backends import register_compiled_simulator
from sb3_dirpg.common.vec_simulator import VecSimulator
from sb3_dirpg.envs.minigrid import compiled_kernels as kernels
from sb3_dirpg.envs.minigrid.bound import MultiRoomBound
from sb3_dirpg.envs.minigrid.fast_obs import FastObservation, fast_gen_obs
from sb3_dirpg.envs.minigrid.wrappers import DirectionImageObs, MiniGridShapedReward
from sb3_dirpg.search.protocols import Heuristic, Transitions
from sb3_dirpg.simulator import SimulatorWrapper
from sb3_dirpg.simulator.unwrap import wrapper_layers

#: object types the compiled step supports (MiniGrid's OBJECT_TO_IDX): empty, wall, floor, door, key, ball, goal, lava
SUPPORTED_OBJECTS = frozenset({1, 2, 3, 4, 5, 6, 8, 9})
_GENERATION_SHIFT = 32  # a snapshot is (generation << 32) | row: rows of an earlier reset are refused


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
    if cls.step is not MiniGridEnv.step:
        return f"{cls.__name__} overrides MiniGridEnv.step"
    if cls.gen_obs not in (MiniGridEnv.gen_obs, fast_gen_obs) or cls.gen_obs_grid is not MiniGridEnv.gen_obs_grid:
        return f"{cls.__name__} computes its observation its own way"
    if base.render_mode is not None:
        return f"the env renders (render_mode={base.render_mode!r})"
    layers = wrapper_layers(simulator.env)
    if not layers or type(layers[0]) is not DirectionImageObs:
        return "the outermost wrapper is not DirectionImageObs (build the env with sb3_dirpg.envs.make_minigrid_env)"
    allowed = (DirectionImageObs, MiniGridShapedReward, FastObservation, *_gymnasium_passive_layers())
    others = [type(layer).__name__ for layer in layers if type(layer) not in allowed]
    if others:
        return f"the wrapper chain holds {', '.join(others)}"
    if not any(type(layer) is MiniGridShapedReward for layer in layers):
        return "the env has no MiniGridShapedReward"
    if heuristic is not None and type(heuristic) is not MultiRoomBound:
        return f"the heuristic is a {type(heuristic).__name__}, not a MultiRoomBound"
    if simulator.has_action_masks:
        return "the env chain has action masks"
    return None


class CompiledMiniGridSimulator(VecSimulator):
    """A :class:`~sb3_dirpg.common.vec_simulator.VecSimulator` for MiniGrid whose steps run in compiled code.

    ``reset`` resets the envs (MiniGrid draws the layout), then copies each episode's grid into arrays; ``step`` runs
    on the arrays only. A snapshot is an int: a row of the state store, valid until the next ``reset``. Build it with
    :func:`~sb3_dirpg.common.simulator_backends.make_vec_simulator` (``simulator_backend="compiled"``), which checks
    :func:`compiled_unsupported` first.

    :param simulators: the simulators (sub-envs) that reset the episodes
    :param heuristic: a :class:`~sb3_dirpg.envs.minigrid.MultiRoomBound`, or None
    """

    def __init__(self, simulators: Sequence[SimulatorWrapper], heuristic: Heuristic | None = None) -> None:
        super().__init__(simulators, heuristic)
        for sim in self.simulators:
            reason = compiled_unsupported(sim, heuristic)
            if reason is not None:
                raise ValueError(f"the compiled MiniGrid simulator cannot run this env: {reason}")
        first = self.simulators[0]
        base = first.env.unwrapped
        self._width, self._height = int(base.width), int(base.height)
        self._view = int(base.agent_view_size)
        self._see_through_walls = bool(base.see_through_walls)
        shaped = next(layer for layer in wrapper_layers(first.env) if type(layer) is MiniGridShapedReward)
        self._rewards_of = np.array([shaped.door_reward, shaped.goal_reward, shaped.pickup_reward], dtype=np.float64)
        bound = self._bound = heuristic
        self._bound_of = np.zeros(4) if bound is None else np.array(
            [bound.gamma, bound.door_reward, bound.goal_reward, bound.pickup_reward], dtype=np.float64
        )  # fmt: skip
        self._step_limit = bool(bound is not None and bound.step_limit)
        self._generation = 0
        self._compiled_batch = False  # whether the current batch runs on the arrays (False: on the envs)
        self._reserve_store(1024, 64)

    @property
    def runs_compiled(self) -> bool:
        """:return: whether the batch of the last ``reset`` runs on the arrays (False: its grids hold a box, so the envs
        step it)"""
        return self._compiled_batch

    def _reserve_store(self, states: int, grids: int) -> None:
        """Make room for at least ``states`` states and ``grids`` grids (capacities double, contents are kept).

        :param states: states needed in all
        :param grids: grids needed in all
        """
        store = getattr(self, "_agent", None)
        if store is None:
            self._agent = np.zeros((states, 4), dtype=np.int32)
            self._carry = np.zeros((states, 3), dtype=np.uint8)
            self._grid_of = np.zeros(states, dtype=np.int32)
            self._grids = np.zeros((grids, self._width * self._height, 3), dtype=np.uint8)
            self._n_states = self._n_grids = 0
            return
        if states > len(self._agent):
            size = max(states, 2 * len(self._agent))
            self._agent = _grown(self._agent, size)
            self._carry = _grown(self._carry, size)
            self._grid_of = _grown(self._grid_of, size)
        if grids > len(self._grids):
            self._grids = _grown(self._grids, max(grids, 2 * len(self._grids)))

    def _encode_episode(self, env: SimulatorWrapper) -> tuple[int, list[int], list[int], bool] | None:
        """Copy an env's state just after reset into the store.

        :param env: the simulator, reset
        :return: the state's row, the door and goal cells of the bound and whether it scans for pickable objects; None
            if the grid holds an object the compiled step does not support
        """
        base = env.env.unwrapped
        grid = base.grid
        if grid.width != self._width or grid.height != self._height:
            return None
        cells = grid.encode().transpose(1, 0, 2).reshape(-1, 3)  # row y * W + x
        if not set(np.unique(cells[:, 0]).tolist()) <= SUPPORTED_OBJECTS:
            return None
        carried = base.carrying.encode() if base.carrying is not None else (0, 0, 0)
        if carried[0] not in (0, kernels.KEY, kernels.BALL):
            return None
        if self._bound is not None:
            door_xy, goal_xy, scans = self._bound.static_cells(env)
        else:
            door_xy, goal_xy, scans = [], [], False
        s, g = self._n_states, self._n_grids
        self._reserve_store(s + 1, g + 1)
        self._grids[g] = cells
        self._agent[s] = (int(base.agent_pos[0]), int(base.agent_pos[1]), int(base.agent_dir), int(base.step_count))
        self._carry[s] = carried
        self._grid_of[s] = g
        self._n_states, self._n_grids = s + 1, g + 1
        width = self._width
        return s, [y * width + x for x, y in door_xy], [y * width + x for x, y in goal_xy], scans

    def reset(self, seeds: Sequence[int]) -> Transitions:
        """:param seeds: one seed per episode
        :return: the root states (their snapshots are ints, valid until the next reset)"""
        self._generation += 1
        self._n_states = self._n_grids = 0
        n_sims = len(self.simulators)
        rows, episodes = [], []
        for episode, seed in enumerate(seeds):
            env = self.simulators[episode % n_sims]
            obs, _ = env.reset(seed=int(seed))
            encoded = self._encode_episode(env)
            if encoded is None:  # e.g. a box: this batch steps the envs themselves
                self._compiled_batch = False
                return super().reset(seeds)
            bounds = self._bounds(env) if self.heuristic is not None else (-np.inf, np.inf)
            rows.append((obs, 0.0, False, env.action_masks(), self._snapshot_id(encoded[0]), bounds))
            episodes.append(encoded)
        self._compiled_batch = True
        n = len(episodes)
        most_doors = max([1, *[len(e[1]) for e in episodes]])
        most_goals = max([1, *[len(e[2]) for e in episodes]])
        self._doors = np.zeros((n, most_doors), dtype=np.int64)
        self._goals = np.zeros((n, most_goals), dtype=np.int64)
        for e, (_, doors, goals, _) in enumerate(episodes):
            self._doors[e, : len(doors)] = doors
            self._goals[e, : len(goals)] = goals
        self._n_doors = np.array([len(e[1]) for e in episodes], dtype=np.int64)
        self._n_goals = np.array([len(e[2]) for e in episodes], dtype=np.int64)
        self._scan_pickables = np.array([e[3] for e in episodes], dtype=np.bool_)
        self._max_steps = np.array([int(self.simulators[e % n_sims].env.unwrapped.max_steps) for e in range(n)])
        trans = self._transitions(rows, [False] * n)
        self._check_finite(rows, trans.rewards, range(n), f"at reset(seed={list(seeds)})")
        return trans

    def _snapshot_id(self, row: int) -> int:
        """:param row: a row of the state store
        :return: the snapshot the search holds for it"""
        return (self._generation << _GENERATION_SHIFT) | row

    def step(self, snapshots: Sequence[Any], actions: np.ndarray, episodes: np.ndarray) -> Transitions:
        """:param snapshots: states to step from (ints returned by this simulator since its last reset)
        :param actions: one action index per row (0-based)
        :param episodes: the episode of each row
        :return: the states reached (terminal states get no snapshot)"""
        if not self._compiled_batch:
            return super().step(snapshots, actions, episodes)
        k = len(snapshots)
        ids = np.fromiter(snapshots, dtype=np.int64, count=k)
        if k and not (ids >> _GENERATION_SHIFT == self._generation).all():
            raise ValueError("CompiledMiniGridSimulator.step(): a snapshot from before the last reset() was passed")
        self._reserve_store(self._n_states + k, self._n_grids + k)
        view = self._view
        images = np.empty((k, view, view, 3), dtype=np.uint8)
        directions = np.empty(k, dtype=np.int64)
        rewards, lower, upper = np.empty(k), np.empty(k), np.empty(k)
        terminal, success = np.empty(k, dtype=np.bool_), np.empty(k, dtype=np.bool_)
        reached = np.empty(k, dtype=np.int64)
        episodes = np.asarray(episodes, dtype=np.int64)
        self._n_states, self._n_grids = kernels.step_states(
            ids & ((1 << _GENERATION_SHIFT) - 1), np.asarray(actions, dtype=np.int64) + self._start, episodes,
            self._agent, self._carry, self._grid_of, self._grids, self._n_states, self._n_grids, self._width, self._height,
            self._see_through_walls, self._max_steps, self._rewards_of, self.heuristic is not None, self._bound_of,
            self._step_limit, self._doors, self._n_doors, self._goals, self._n_goals, self._scan_pickables,
            images, directions, rewards, terminal, success, lower, upper, reached,
        )  # fmt: skip
        if terminal.any():
            self.reports_success = True  # MiniGridShapedReward reports success on every episode end
        base = self._generation << _GENERATION_SHIFT
        with_bounds = self.heuristic is not None
        return Transitions(
            obs=[{"image": image, "direction": direction} for image, direction in zip(images, directions.tolist())],
            rewards=rewards, terminal=terminal, masks=np.ones((k, self.n_actions), dtype=bool),
            snapshots=[None if row < 0 else base | row for row in reached.tolist()],
            lower=lower if with_bounds else None, upper=upper if with_bounds else None, success=success,
        )  # fmt: skip


def _grown(array: np.ndarray, size: int) -> np.ndarray:
    """:param array: an array
    :param size: its new length (at least the old one)
    :return: a copy with ``size`` rows, the old rows first"""
    out = np.zeros((size, *array.shape[1:]), dtype=array.dtype)
    out[: len(array)] = array
    return out


register_compiled_simulator(compiled_unsupported, CompiledMiniGridSimulator)
