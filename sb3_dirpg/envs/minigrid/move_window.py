"""The agent's recent moves, packed in one int per state, and the rule that masks the moves returning to where the
agent stood among them (``MiniGridNoOpMask(return_window=...)``); the poses it held since its last change, a bit set
per state, and the same rule over all of them (``MiniGridNoOpMask(no_revisit=True)``). The env path and the compiled
simulator (its step kernel keeps the packed moves and the bit sets in its state store) call the same functions."""

from __future__ import annotations

import numpy as np
from numba import njit

#: the most recent moves a packed move window holds (:func:`push_move`), the largest ``return_window``
MAX_RETURN_WINDOW = 24
_COUNT_BITS = 5  # the count's bits, below the moves
_COUNT = (1 << _COUNT_BITS) - 1
_FORWARD = 2
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
def visit_words(width: int, height: int) -> int:
    """:param width: the grid's width
    :param height: its height
    :return: the uint64 words of a set of the grid's poses (cell and direction; :func:`mark_visit`)"""
    return (width * height * 4 + 63) // 64


@njit(cache=True)
def mark_visit(
    visited: np.ndarray, source: int, target: int, pose: np.ndarray, width: int, moved: bool, changed: bool
) -> None:
    """The poses the agent held since its last change, after one more step: row ``target`` of ``visited`` gets row
    ``source``'s set, with the pose before the step added where the step turned or moved the agent, or an empty set
    where the step changed the grid or the load (as :func:`push_move`'s ``changed``).

    :param visited: in/out: sets of poses, bit ``4 * (y * width + x) + direction``, uint64, shape (n, words)
    :param source: the row of the state stepped from
    :param target: the row of the state reached (may be ``source``)
    :param pose: the agent's x, y and direction before the step, int64, shape (3,)
    :param width: the grid's width
    :param moved: whether the step turned or moved the agent
    :param changed: whether the step changed the grid or what the agent carries
    """
    if changed:
        visited[target, :] = 0
        return
    if target != source:
        visited[target, :] = visited[source, :]
    if moved:
        bit = 4 * (pose[1] * width + pose[0]) + pose[2]
        visited[target, bit >> 6] |= np.uint64(1) << np.uint64(bit & 63)


@njit(cache=True)
def forbid_revisits(visited: np.ndarray, poses: np.ndarray, rows: np.ndarray, width: int, masks: np.ndarray) -> None:
    """Mask the moves (left, right, forward) that would bring the agent back to a cell and direction it had since its
    last pickup, drop or toggle that changed something: :func:`forbid_returns` with no bound on the moves looked back
    on. A shortest way never repeats a state, so it stays legal. Where the rule would leave no legal action it masks
    nothing.

    :param visited: the sets of poses held (:func:`mark_visit`), uint64, shape (S, words)
    :param poses: the agent's x, y and direction in each state (more columns are ignored), int64, shape (S, >= 3)
    :param rows: the row of each masked state in ``visited`` and ``poses``, -1 for a state that ended its trajectory
        (no mask to change there), int64, shape (n,)
    :param width: the grid's width
    :param masks: in/out: the legal actions, bool, shape (n, 7)
    """
    back = np.zeros(3, dtype=np.bool_)  # left, right, forward: the move returns
    target = np.zeros(3, dtype=np.int64)  # the poses the moves reach, as bits
    for r in range(rows.shape[0]):
        s = rows[r]
        if s < 0:
            continue
        x, y, d = poses[s, 0], poses[s, 1], poses[s, 2]
        cell = 4 * (y * width + x)
        target[0] = cell + (d + 3) % 4
        target[1] = cell + (d + 1) % 4
        target[2] = 4 * ((y + _DIR_Y[d]) * width + x + _DIR_X[d]) + d
        for a in range(3):
            back[a] = masks[r, a] and (visited[s, target[a] >> 6] >> np.uint64(target[a] & 63)) & np.uint64(1) == 1
        left = False
        for a in range(masks.shape[1]):
            left = left or (masks[r, a] and not (a < 3 and back[a]))
        if left:
            for a in range(3):
                if back[a]:
                    masks[r, a] = False
