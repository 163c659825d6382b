"""The search's lockstep iterations on the compiled MiniGrid simulator, many per compiled call.

:func:`search_iterations` is the loop of :meth:`~sb3_dirpg.search.top_down.TopDownSearch.run` for a batch that
:class:`~sb3_dirpg.envs.minigrid.compiled.CompiledMiniGridSimulator` steps: pop (and find the observations the
policy has not seen), split, :func:`~sb3_dirpg.envs.minigrid.compiled_kernels.step_states`, add the children. It is
built from the search's own compiled pieces (:mod:`sb3_dirpg.search.fused`) and returns to Python whenever the search
needs it (see :data:`~sb3_dirpg.search.fused.MISS` and the other reasons). It lives here rather than in
``search/`` because numba caches a compiled function only when the functions it calls are module globals.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit

from sb3_dirpg.envs.minigrid.cnn_kernels import cnn_logits
from sb3_dirpg.envs.minigrid.compiled_kernels import GENERATION_SHIFT, step_states
from sb3_dirpg.envs.minigrid.mask_rules import fill_compiled_masks
from sb3_dirpg.search import fused
from sb3_dirpg.search.fused import ObsTable
from sb3_dirpg.search.state import Popped
from sb3_dirpg.search.tree import Nodes


class LoopSimulator(NamedTuple):
    """The compiled simulator's records that :func:`search_iterations` steps with (plain tuples at the numba call).

    :param store: the states, :class:`~sb3_dirpg.envs.minigrid.compiled_kernels.Store`
    :param rules: the env's :class:`~sb3_dirpg.envs.minigrid.compiled_kernels.Rules`
    :param episodes: the batch's :class:`~sb3_dirpg.envs.minigrid.compiled_kernels.Episodes`
    :param bound: the bound's :class:`~sb3_dirpg.envs.minigrid.compiled_kernels.BoundParams`
    :param generation: the reset's generation, stamped on the snapshots
    :param view_size: the side of the agent's view
    :param n_actions: the number of actions
    :param with_bounds: whether the search uses the bounds (else they are -inf and inf)
    :param missions: each episode's mission vector as bytes (``MissionObs``), uint8, shape (episodes, mission width);
        width 0 without one
    :param noop_mask: -1 when every action is legal; else the chain's :class:`~sb3_dirpg.envs.minigrid.MiniGridNoOpMask`
        masks the no-ops, with its ``compiled_flags``: the bits of its rules
        (:func:`~sb3_dirpg.envs.minigrid.mask_rules.fill_compiled_masks` dispatches on them)
    """

    store: Any
    rules: Any
    episodes: Any
    bound: Any
    generation: int
    view_size: int
    n_actions: int
    with_bounds: bool
    missions: Any
    noop_mask: int


@njit(cache=True)
def search_iterations(
    search: tuple, sim: tuple, pending: tuple, has_pending: bool, max_iterations: int, counts: np.ndarray, policy: tuple,
    own_forward: bool,
) -> tuple[int, int, tuple, np.ndarray, int]:  # fmt: skip
    """Run lockstep iterations until the search needs Python, at most ``max_iterations``.

    :param search: the search's :class:`~sb3_dirpg.search.fused.LoopState`, packed (room reserved for
        ``max_iterations`` iterations)
    :param sim: the simulator's :class:`LoopSimulator`, its records plain tuples
    :param pending: popped regions to expand first (the fields of :class:`~sb3_dirpg.search.state.Popped`), when
        ``has_pending``: those of the ``MISS`` that ended the last call, whose observations are now forwarded
    :param has_pending: whether to expand ``pending`` before popping
    :param max_iterations: the most iterations to run
    :param counts: out: the interactions of each iteration run, int64, shape (max_iterations,)
    :param policy: the weights of :func:`~sb3_dirpg.envs.minigrid.cnn_kernels.cnn_logits`, with ``own_forward``
    :param own_forward: evaluate the policy here at the observations it has not seen, instead of returning ``MISS``
    :return: the fields of a :class:`~sb3_dirpg.search.fused.LoopExit` (its status a plain int)
    """
    # unpacked once into locals, in the order of the records' fields (tests/test_fused_search.py checks the names):
    # packing records into new tuples inside the loop costs a reference count per array at every iteration
    params, nodes, regions, progress, queues, noise, table, node_obs, node_snapshot = search
    store, rules, episodes, bound, generation, view_size, n_actions, with_bounds, missions, noop_mask = sim
    table_, node_count = ObsTable(*table), Nodes(*nodes).count
    no_misses = np.empty(0, np.int64)
    base = generation << GENERATION_SHIFT
    view = view_size
    image_width = view * view * 3
    width = image_width + 1 + missions.shape[1]
    popped = pending
    iteration = 0
    while iteration < max_iterations:
        if has_pending:
            has_pending = False
        else:
            status, popped, misses = fused.begin_iteration(params, nodes, regions, progress, queues, noise, table, node_obs)
            if status == fused.MISS and own_forward:
                cnn_logits(table_.rows, misses, policy, table_.logits)
                table_.has_logits[misses] = True
                status = fused.OK
            if status != fused.OK:
                return status, iteration, popped, misses, -1
        expanding = Popped(*popped)
        logits = fused.todo_logits(expanding, table_, node_obs)
        split = fused.split_regions_compiled(popped, logits, nodes, regions, noise)
        k = expanding.episodes.size
        images = np.empty((k, view, view, 3), np.uint8)
        batch = (
            node_snapshot[expanding.nodes], split[0], expanding.episodes, images, np.empty(k, np.int64), np.empty(k),
            np.empty(k, np.bool_), np.empty(k, np.bool_), np.empty(k), np.empty(k), np.empty(k, np.int64),
        )  # fmt: skip
        if step_states(batch, store, rules, episodes, bound) < 0:
            return fused.STALE, iteration, popped, no_misses, -1
        directions, rewards, terminal, success, lower, upper, reached = batch[4:]
        if not with_bounds:
            lower[:] = -np.inf
            upper[:] = np.inf
        rows = np.empty((k, width), np.uint8)
        snapshots = np.empty(k, np.int64)
        for r in range(k):
            rows[r, :image_width] = images[r].ravel()
            rows[r, image_width] = directions[r]
            rows[r, image_width + 1 :] = missions[expanding.episodes[r]]
            snapshots[r] = -1 if reached[r] < 0 else base | reached[r]
        start = node_count[0]
        masks = np.ones((k, n_actions), np.bool_)
        if noop_mask >= 0:
            front, carried = images[:, view // 2, view - 2], images[:, view // 2, view - 1]
            fill_compiled_masks((front, carried, split[0], terminal, reached), store, rules[0], noop_mask, masks)
        reached_ = (rewards, terminal, masks, lower, upper, success)
        n_ends, empty = fused.add_children_compiled(popped, split, reached_, params, nodes, regions, progress, queues)
        if empty >= 0:
            return fused.EMPTY_MASK, iteration, popped, np.array([empty], np.int64), start
        fused.record_children(start, rows, snapshots, table_, node_obs, node_snapshot)
        counts[iteration] = k
        iteration += 1
        if n_ends:
            return fused.ENDS, iteration, popped, no_misses, start
    return fused.LIMIT, iteration, popped, no_misses, -1
