"""Many lockstep iterations per compiled call, for simulators that step their states in compiled code.

A lockstep iteration of :class:`~sb3_dirpg.search.top_down.TopDownSearch` makes about twenty Python calls around its
three kernels. With one episode per search (the shipped setting) and a simulator that steps in compiled code, those
calls are most of an interaction's cost. A simulator that implements
:class:`~sb3_dirpg.search.protocols.CompiledSearchSimulator` runs the iterations itself, in one compiled loop made of
the pieces here, and hands control back only for what needs Python: observations the policy has not seen (the
policy's forward), trajectories that end (settled by the search), used-up blocks of random numbers, and the end of the
search. The pieces are the kernels' own compiled functions, called in the same order on the same arrays, so the tree,
the queues and the outcomes are the ones the Python loop builds.

Observations are held once per distinct observation, as byte rows of an :class:`ObsTable`, each with the policy's
logits once forwarded: the memo of :meth:`~sb3_dirpg.common.batched_policy.BatchedPolicy.search_function`, in arrays.
The observations the policy has not seen yet are forwarded in one call per iteration, in the order the Python loop
forwards them, so the policy sees the same batches.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from sb3_dirpg.search.config import Params
from sb3_dirpg.search.kernels import add_children_compiled, pop_regions_compiled, split_regions_compiled
from sb3_dirpg.search.state import DONE, NoiseBlocks, Popped, Progress, Queues
from sb3_dirpg.search.tree import Nodes, Regions

__all__ = [
    "DONE_ALL", "EMPTY_MASK", "ENDS", "LIMIT", "MISS", "NO_POPPED", "OK", "REFILL", "STALE", "Exit", "LoopExit", "LoopState",
    "ObsTable", "add_children_compiled", "add_observations", "begin_iteration", "exit_of", "observation_reader",
    "record_children", "snapshot_reader", "split_regions_compiled", "todo_logits",
]  # fmt: skip


class Exit(IntEnum):
    """Why a compiled run of iterations handed control back to Python."""

    OK = 0  #: (inside the loop only) the popped regions can be expanded
    MISS = 1  #: the popped regions' nodes hold observations the policy has not seen: forward them, then expand
    ENDS = 2  #: the last iteration completed trajectories: settle them
    DONE_ALL = 3  #: no episode popped a region: every search is done
    LIMIT = 4  #: ``max_iterations`` ran
    REFILL = 5  #: an episode that may pop has used up its block of random numbers
    STALE = 6  #: a snapshot from before the simulator's last reset was stepped
    EMPTY_MASK = 7  #: a non-terminal state without legal actions was reached


# the same codes as plain ints, which compiled code compares and returns
OK, MISS, ENDS, DONE_ALL, LIMIT, REFILL, STALE, EMPTY_MASK = (int(status) for status in Exit)
_EXITS = tuple(Exit)  # by code: a tuple lookup, where Exit(code) costs a microsecond


class LoopState(NamedTuple):
    """The records a compiled loop works on, as plain tuples at the numba call (the twin names them again with
    ``LoopState(*state)``, so this definition is the one source of their order).

    ``N`` is the capacity of the node columns; the records' own shapes are documented with them.

    :param params: the settings, :class:`~sb3_dirpg.search.config.Params`
    :param nodes: the tree's :class:`~sb3_dirpg.search.tree.Nodes`
    :param regions: the tree's :class:`~sb3_dirpg.search.tree.Regions`
    :param progress: the search's :class:`~sb3_dirpg.search.state.Progress`
    :param queues: the search's :class:`~sb3_dirpg.search.state.Queues`
    :param noise: the search's :class:`~sb3_dirpg.search.state.NoiseBlocks`
    :param table: the search's :class:`ObsTable`
    :param node_obs: each node's observation id in ``table``, int64, shape (N,)
    :param node_snapshot: each node's snapshot (-1: none), int64, shape (N,)
    """

    params: Params
    nodes: Nodes
    regions: Regions
    progress: Progress
    queues: Queues
    noise: NoiseBlocks
    table: ObsTable
    node_obs: np.ndarray
    node_snapshot: np.ndarray

    def packed(self) -> tuple:
        """:return: the state as numba's fast path takes it: every record a plain tuple"""
        return (*(tuple(record) for record in self[:7]), self.node_obs, self.node_snapshot)


class LoopExit(NamedTuple):
    """What a compiled run of iterations hands back.

    :param status: why it returned
    :param iterations: the iterations run
    :param popped: the regions popped by the last iteration
    :param misses: with ``MISS``, the observation ids to forward, in the order the Python loop forwards them; with
        ``EMPTY_MASK``, the position in ``popped`` of the child without legal actions; else empty
    :param start: with ``ENDS`` and ``EMPTY_MASK``, the first node the last iteration added (-1 otherwise)
    """

    status: Exit
    iterations: int
    popped: Popped
    misses: np.ndarray
    start: int


# no popped regions to expand first, as the compiled loop takes them (the fields of Popped)
NO_POPPED = (*(np.empty(0, np.int64),) * 3, np.empty(0), *(np.empty(0, np.int64),) * 2)


def exit_of(result: tuple) -> LoopExit:
    """:param result: a compiled loop's plain return ``(status, iterations, popped, misses, start)``
    :return: it as a :class:`LoopExit`"""
    status, iterations, popped, misses, start = result
    return LoopExit(_EXITS[status], iterations, Popped(*popped), misses, start)  # numba returns Python ints


_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


class ObsTable(NamedTuple):
    """The distinct observations of one search, as byte rows, with the policy's logits where forwarded.

    ``U`` is the capacity in observations, ``B`` the bytes of a row and ``S`` the number of hash slots (a power of two,
    at least twice ``U``).

    :param rows: the observations' bytes, uint8, shape (U, B)
    :param logits: the policy's logits at each, float64, shape (U, A)
    :param has_logits: whether they were forwarded, bool, shape (U,)
    :param slots: open-addressing hash slots holding observation ids, or -1, int64, shape (S,)
    :param count: the number of observations held, int64, shape (1,)
    """

    rows: np.ndarray
    logits: np.ndarray
    has_logits: np.ndarray
    slots: np.ndarray
    count: np.ndarray

    @classmethod
    def empty(cls, width: int, n_actions: int, capacity: int = 1024) -> ObsTable:
        """:param width: bytes per observation
        :param n_actions: the number of actions
        :param capacity: the initial number of observations
        :return: an empty table"""
        return cls(
            rows=np.zeros((capacity, width), np.uint8), logits=np.zeros((capacity, n_actions)),
            has_logits=np.zeros(capacity, np.bool_), slots=np.full(_slots_for(capacity), -1, np.int64),
            count=np.zeros(1, np.int64),
        )  # fmt: skip

    def reserve(self, n: int) -> ObsTable:
        """:param n: observations to make room for
        :return: this table when it has room for ``n`` more, else a copy with twice the capacity (or more)"""
        size, capacity = int(self.count[0]), len(self.has_logits)
        if size + n <= capacity:
            return self
        grown = ObsTable.empty(self.rows.shape[1], self.logits.shape[1], max(size + n, 2 * capacity))
        for old, new in zip(self[:3], grown[:3]):
            new[:size] = old[:size]
        grown.count[0] = size
        _rehash(grown.rows, grown.slots, size)
        return grown


def _slots_for(capacity: int) -> int:
    """:param capacity: observations
    :return: the hash slots for them: the smallest power of two at least twice as many"""
    return 1 << max(4, int(2 * capacity - 1).bit_length())


@njit(cache=True)
def _hash_row(rows: np.ndarray, i: int) -> np.uint64:
    """:param rows: byte rows, shape (m, B)
    :param i: a row
    :return: its 64-bit FNV-1a hash"""
    h = _FNV_OFFSET
    for b in range(rows.shape[1]):
        h = (h ^ np.uint64(rows[i, b])) * _FNV_PRIME
    return h


@njit(cache=True)
def _rehash(rows: np.ndarray, slots: np.ndarray, size: int) -> None:
    """Fill empty ``slots`` with the first ``size`` rows of a table (rows assumed distinct)."""
    mask = np.uint64(slots.size - 1)
    for i in range(size):
        s = _hash_row(rows, i) & mask
        while slots[s] >= 0:
            s = (s + np.uint64(1)) & mask
        slots[s] = i


@njit(cache=True)
def _find_or_add(table: ObsTable, source: np.ndarray, i: int) -> int:
    """:param table: the table (room for one more observation reserved)
    :param source: byte rows, shape (m, B)
    :param i: the row to look up
    :return: the id of the observation, added to the table if new"""
    rows, slots = table.rows, table.slots
    mask = np.uint64(slots.size - 1)
    s = _hash_row(source, i) & mask
    width = rows.shape[1]
    while slots[s] >= 0:
        held = slots[s]
        same = True
        for b in range(width):
            if rows[held, b] != source[i, b]:
                same = False
                break
        if same:
            return held
        s = (s + np.uint64(1)) & mask
    new = table.count[0]
    rows[new] = source[i]
    table.has_logits[new] = False
    table.count[0] = new + 1
    slots[s] = new
    return new


def add_observations(table: ObsTable, rows: np.ndarray) -> np.ndarray:
    """:param table: the table, with room for the rows
    :param rows: observations as byte rows, uint8, shape (m, B)
    :return: their ids, int64, shape (m,)"""
    return _add_observations(tuple(table), np.ascontiguousarray(rows, dtype=np.uint8))


@njit(cache=True)
def _add_observations(table: tuple, rows: np.ndarray) -> np.ndarray:
    """:func:`add_observations`, compiled."""
    table = ObsTable(*table)
    ids = np.empty(rows.shape[0], np.int64)
    for i in range(rows.shape[0]):
        ids[i] = _find_or_add(table, rows, i)
    return ids


@njit(cache=True)
def begin_iteration(
    params: tuple, nodes: tuple, regions: tuple, progress: tuple, queues: tuple, noise: tuple, table: tuple,
    node_obs: np.ndarray,
) -> tuple[int, tuple, np.ndarray]:  # fmt: skip
    """Pop the next region of every episode still searching, as :func:`~sb3_dirpg.search.kernels.pop_regions` does,
    unless an episode that may pop needs a new block of random numbers first.

    :param node_obs: each node's observation id, int64
    :return: ``OK``, ``MISS`` (the popped regions' nodes hold observations without logits), ``DONE_ALL`` (no episode
        popped) or ``REFILL`` (nothing popped); the popped regions (the fields of
        :class:`~sb3_dirpg.search.state.Popped`); and, with ``MISS``, the observations to forward, in the order the
        Python loop forwards them
    """
    progress_, noise_ = Progress(*progress), NoiseBlocks(*noise)
    block = noise_.uniform.shape[1]
    no_misses = np.empty(0, np.int64)
    for e in range(progress_.phase.size):  # an episode that may pop and has no numbers left: refill first
        if progress_.phase[e] != DONE and noise_.used[e] >= block:
            empty = np.empty(0, np.int64)  # fresh arrays: a global tuple would type every popped region read-only
            return REFILL, (empty, empty, empty, np.empty(0), empty, empty), no_misses
    popped = pop_regions_compiled(params, nodes, regions, progress, queues, noise)
    if popped[0].size == 0:
        return DONE_ALL, popped, no_misses
    table_ = ObsTable(*table)
    todo = popped[4]
    misses = np.empty(todo.size, np.int64)
    m = 0
    for i in range(todo.size):
        oid = node_obs[todo[i]]
        if table_.has_logits[oid]:
            continue
        seen = False
        for j in range(m):
            if misses[j] == oid:
                seen = True
                break
        if not seen:
            misses[m] = oid
            m += 1
    return (MISS if m else OK), popped, misses[:m]


@njit(cache=True)
def todo_logits(popped: Popped, table: ObsTable, node_obs: np.ndarray) -> np.ndarray:
    """:param popped: the popped regions
    :param table: the observation table (every ``popped.todo`` node's observation forwarded)
    :param node_obs: each node's observation id
    :return: the logits at ``popped.todo``, float64, shape (m, A)"""
    todo = popped.todo
    out = np.empty((todo.size, table.logits.shape[1]))
    for i in range(todo.size):
        out[i] = table.logits[node_obs[todo[i]]]
    return out


@njit(cache=True)
def record_children(
    start: int, obs_rows: np.ndarray, snapshots: np.ndarray, table: ObsTable, node_obs: np.ndarray, node_snapshot: np.ndarray
) -> None:
    """Give the children added from node ``start`` on their observation ids and snapshots.

    :param start: the first child's node id
    :param obs_rows: the children's observations as byte rows, shape (k, B)
    :param snapshots: their snapshots (-1: none), int64, shape (k,)
    :param table: the observation table (room reserved)
    :param node_obs: each node's observation id
    :param node_snapshot: each node's snapshot
    """
    for i in range(obs_rows.shape[0]):
        node_obs[start + i] = _find_or_add(table, obs_rows, i)
        node_snapshot[start + i] = snapshots[i]


def observation_reader(
    table: ObsTable, node_obs: np.ndarray, decode: Callable[[np.ndarray], list[Any]]
) -> Callable[[int], Any]:  # fmt: skip
    """:param table: a compiled search's observation table
    :param node_obs: each node's observation id
    :param decode: byte rows to observations (the simulator's ``row_observations``)
    :return: a node's observation, decoded from its byte row when read (for
        :meth:`~sb3_dirpg.search.tree.NodeColumn.read_from`)
    """
    return lambda node: decode(table.rows[node_obs[node]][None])[0]


def snapshot_reader(node_snapshot: np.ndarray) -> Callable[[int], int | None]:
    """:param node_snapshot: each node's snapshot, -1 for none
    :return: a node's snapshot (None at terminal nodes), for :meth:`~sb3_dirpg.search.tree.NodeColumn.read_from`"""

    def read(node: int) -> int | None:
        snapshot = int(node_snapshot[node])
        return None if snapshot < 0 else snapshot

    return read
