"""The agent's recent moves, packed in one int per state, and the rule that masks the moves returning to where the
agent stood among them (``MiniGridNoOpMask(rules=[{"return_window": W}])``); the times it left each pose since its last
change, and the same rule over all of them (the rule ``no_revisit``); the cell where it last dropped an object, and the
rule that masks picking it up again (``no_repick``). The env path (the rules of
:mod:`~sb3_dirpg.envs.minigrid.mask_rules`) and the compiled simulator (its step kernel keeps the packed moves, the
counts and the cell in its state store) call the same functions."""

from __future__ import annotations

import numpy as np
from numba import njit

#: the most recent moves a packed move window holds (:func:`push_move`), the largest ``return_window``
MAX_RETURN_WINDOW = 24
_COUNT_BITS = 5  # the count's bits, below the moves
_COUNT = (1 << _COUNT_BITS) - 1
_FORWARD, _PICKUP, _DROP = 2, 3, 4
#: :func:`remember_drop`'s cell when the agent has dropped nothing since its last change
NO_DROP = -1
#: MiniGrid's direction vectors (0 right, 1 down, 2 left, 3 up; a right turn adds 1)
_DIR_X, _DIR_Y = np.array([1, 0, -1, 0], dtype=np.int64), np.array([0, 1, 0, -1], dtype=np.int64)


@njit(cache=True)
def push_move(window: int, action: int, moved: bool, changed: bool) -> int:
    """The agent's recent moves after one more step, packed in an int64: the count (at most :data:`MAX_RETURN_WINDOW`)
    in bits 0-4, then two bits a move, the newest first (0 left, 1 right, 2 forward: MiniGrid's action numbers).

    :param window: the packed moves before the step (0: none)
    :param action: the step's MiniGrid action
    :param moved: whether a ``forward`` moved the agent
    :param changed: whether the step changed the grid or what the agent carries (a pickup, drop or toggle that did
        something); the window starts again empty
    :return: the packed moves after the step (a step that changed nothing leaves them as they were)
    """
    if changed:
        return 0
    if action == 0 or action == 1 or (action == _FORWARD and moved):
        count = min((window & _COUNT) + 1, MAX_RETURN_WINDOW)
        moves = (((window >> _COUNT_BITS) << 2) | action) & ((1 << (2 * MAX_RETURN_WINDOW)) - 1)
        return (moves << _COUNT_BITS) | count
    return window


@njit(cache=True)
def forbid_returns(windows: np.ndarray, terminal: np.ndarray, length: int, masks: np.ndarray) -> None:
    """Mask the moves (left, right, forward) that would bring the agent back to a cell and direction it had within its
    last ``length`` moves, with nothing picked up, dropped or toggled since: the full state would repeat (a period-4 spin,
    pacing back and forth). A shortest way never repeats a state, so it stays legal. With the no-op masks a legal
    ``forward`` always moves, so the agent's own moves tell where it was. Where the rule would leave no legal action it
    masks nothing.

    :param windows: the packed recent moves of each state (:func:`push_move`), int64, shape (n,)
    :param terminal: whether each state ended its trajectory (no mask to change there), bool, shape (n,)
    :param length: the moves to look back on, 1 to :data:`MAX_RETURN_WINDOW`
    :param masks: in/out: the legal actions, bool, shape (n, 7)
    """
    back = np.zeros(3, dtype=np.bool_)  # left, right, forward: the move returns
    for r in range(windows.shape[0]):
        count = min(windows[r] & _COUNT, length)
        if terminal[r] or count == 0:
            continue
        moves = windows[r] >> _COUNT_BITS
        x, y, d = 0, 0, 0  # the agent's pose before each move, relative to its pose now (direction 0)
        back[:] = False
        for i in range(count):
            move = (moves >> (2 * i)) & 3
            if move == 0:
                d = (d + 1) % 4
            elif move == 1:
                d = (d + 3) % 4
            else:
                x, y = x - _DIR_X[d], y - _DIR_Y[d]
            if x == 0 and y == 0 and d == 3:
                back[0] = True
            elif x == 0 and y == 0 and d == 1:
                back[1] = True
            elif x == _DIR_X[0] and y == _DIR_Y[0] and d == 0:
                back[2] = True
        left = False
        for a in range(masks.shape[1]):
            left = left or (masks[r, a] and not (a < 3 and back[a]))
        if left:
            for a in range(3):
                if back[a]:
                    masks[r, a] = False


@njit(cache=True)
def pose_slots(width: int, height: int) -> int:
    """:param width: the grid's width
    :param height: its height
    :return: the poses (cell and direction) of the grid: the columns of the visit counts (:func:`count_visit`)"""
    return width * height * 4


@njit(cache=True)
def count_visit(
    visits: np.ndarray, source: int, target: int, pose: np.ndarray, width: int, moved: bool, changed: bool
) -> None:
    """The times the agent left each pose since its last change, after one more step: row ``target`` of ``visits`` gets
    row ``source``'s counts, with one more for the pose before the step where the step turned or moved the agent (at most
    255), or all 0 where the step changed the grid or the load (as :func:`push_move`'s ``changed``).

    :param visits: in/out: the counts, column ``4 * (y * width + x) + direction``, uint8, shape (n, :func:`pose_slots`)
    :param source: the row of the state stepped from
    :param target: the row of the state reached (may be ``source``)
    :param pose: the agent's x, y and direction before the step, int64, shape (3,)
    :param width: the grid's width
    :param moved: whether the step turned or moved the agent
    :param changed: whether the step changed the grid or what the agent carries
    """
    if changed:
        visits[target, :] = 0
        return
    if target != source:
        visits[target, :] = visits[source, :]
    slot = 4 * (pose[1] * width + pose[0]) + pose[2]
    if moved and visits[target, slot] < 255:
        visits[target, slot] += 1


@njit(cache=True)
def forbid_revisits(visits: np.ndarray, poses: np.ndarray, rows: np.ndarray, width: int, masks: np.ndarray) -> None:
    """Mask the moves (left, right, forward) that would bring the agent back to a cell and direction it held since its
    last pickup, drop or toggle that changed something, while another legal action does not: :func:`forbid_returns`
    with no bound on the moves looked back on. Where every legal action is such a move, only those to the poses left the
    fewest times stay legal, so that a deterministic policy still cannot close the same loop for ever. A shortest way
    never repeats a state, so it stays legal.

    :param visits: the times each pose was left (:func:`count_visit`), uint8, shape (S, :func:`pose_slots`)
    :param poses: the agent's x, y and direction in each state (more columns are ignored), int64, shape (S, >= 3)
    :param rows: the row of each masked state in ``visits`` and ``poses``, -1 for a state that ended its trajectory
        (no mask to change there), int64, shape (n,)
    :param width: the grid's width
    :param masks: in/out: the legal actions, bool, shape (n, 7)
    """
    counts = np.zeros(3, dtype=np.int64)  # left, right, forward: the times the pose each reaches was left
    for r in range(rows.shape[0]):
        s = rows[r]
        if s < 0:
            continue
        x, y, d = poses[s, 0], poses[s, 1], poses[s, 2]
        cell = 4 * (y * width + x)
        fewest = 256
        for a in range(masks.shape[1]):
            if not masks[r, a]:
                continue
            if a == 0:
                counts[0] = visits[s, cell + (d + 3) % 4]
            elif a == 1:
                counts[1] = visits[s, cell + (d + 1) % 4]
            elif a == 2:
                counts[2] = visits[s, 4 * ((y + _DIR_Y[d]) * width + x + _DIR_X[d]) + d]
            fewest = min(fewest, counts[a] if a < 3 else 0)
        for a in range(3):
            if masks[r, a] and counts[a] > fewest:
                masks[r, a] = False


@njit(cache=True)
def remember_drop(dropped: int, action: int, changed: bool, front: int) -> int:
    """The cell where the agent dropped an object with its last change, after one more step.

    :param dropped: the cell before the step (``y * width + x``), or :data:`NO_DROP`
    :param action: the step's MiniGrid action
    :param changed: whether the step changed the grid or what the agent carries (as :func:`push_move`'s)
    :param front: the cell the agent faced before the step (``y * width + x``)
    :return: ``front`` after a drop; :data:`NO_DROP` after any other change (a pickup, a toggle that did something);
        ``dropped`` after a step that changed nothing
    """
    if not changed:
        return dropped
    return front if action == _DROP else NO_DROP


@njit(cache=True)
def forbid_repick(poses: np.ndarray, rows: np.ndarray, width: int, masks: np.ndarray) -> None:
    """Mask ``pickup`` where the agent faces the object it dropped with its last change: picking it up again would give
    back the grid and the load it had before that drop. A greedy policy that drops a key and picks it up again, walking
    between, repeats that for ever, and every pickup or drop empties the memory of ``no_revisit`` and
    ``return_window``. Another pickup or a toggle that did something makes the object free again, so the legitimate
    swap (drop the key, move the ball out of the way, take the key back) stays open. ``left`` and ``right`` stay legal.

    :param poses: the agent's x, y and direction in each state, then (column 5) its :func:`remember_drop` cell, int64,
        shape (S, 6)
    :param rows: the row of each masked state in ``poses``, -1 for a state that ended its trajectory (no mask to change
        there), int64, shape (n,)
    :param width: the grid's width
    :param masks: in/out: the legal actions, bool, shape (n, 7)
    """
    for r in range(rows.shape[0]):
        s = rows[r]
        if s < 0 or poses[s, 5] == NO_DROP:
            continue
        d = poses[s, 2]
        if (poses[s, 1] + _DIR_Y[d]) * width + poses[s, 0] + _DIR_X[d] == poses[s, 5]:
            masks[r, _PICKUP] = False
