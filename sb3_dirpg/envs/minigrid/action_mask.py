"""Action masks for MiniGrid: the actions that the agent's own view shows would change nothing.

The rule reads two encoded cells, the one the agent faces and the one it stands on, where MiniGrid's view draws what it
carries. The env path reads them off the env's state; the compiled simulator reads them off the observations it makes
(the view's cells ``(V // 2, V - 2)`` and ``(V // 2, V - 1)``), also inside its compiled search loop. All call
:func:`fill_noop_action_masks`.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from minigrid.core.constants import OBJECT_TO_IDX, STATE_TO_IDX
from numba import njit

from sb3_dirpg.envs.minigrid.fast_obs import front_cell
from sb3_dirpg.envs.minigrid.move_window import (
    MAX_RETURN_WINDOW,
    NO_DROP,
    count_visit,
    forbid_repick,
    forbid_returns,
    forbid_revisits,
    pose_slots,
    push_move,
    remember_drop,
)

#: MiniGrid's actions, in order
N_MINIGRID_ACTIONS = 7
_FORWARD, _PICKUP, _DROP, _TOGGLE, _DONE = 2, 3, 4, 5, 6
_EMPTY, _FLOOR, _GOAL, _LAVA = (OBJECT_TO_IDX[name] for name in ("empty", "floor", "goal", "lava"))
_DOOR, _KEY, _BALL, _BOX = (OBJECT_TO_IDX[name] for name in ("door", "key", "ball", "box"))
_OPEN, _LOCKED = STATE_TO_IDX["open"], STATE_TO_IDX["locked"]
_EMPTY_CELL = np.array([_EMPTY, 0, 0], dtype=np.uint8)
#: :attr:`MiniGridNoOpMask.compiled_flags`' bit for ``no_revisit``, above ``return_window``'s five
NO_REVISIT_FLAG = 1 << 7
#: :attr:`MiniGridNoOpMask.compiled_flags`' bit for ``keep_doors_open``
KEEP_DOORS_OPEN_FLAG = 1 << 8
#: :attr:`MiniGridNoOpMask.compiled_flags`' bit for ``no_repick``
NO_REPICK_FLAG = 1 << 9
#: :attr:`MiniGridNoOpMask.compiled_flags`' bit for ``keep_key``
KEEP_KEY_FLAG = 1 << 10
_WINDOW_BITS = 31
#: the action that undoes each action right after it (left, right; pickup, drop; toggle a door), -1 for none
UNDO = np.array([1, 0, -1, _DROP, _PICKUP, _TOGGLE, -1], dtype=np.int64)


@njit(cache=True)
def fill_noop_action_masks(front: np.ndarray, carried: np.ndarray, keep_done: bool, out: np.ndarray) -> None:
    """MiniGrid's actions that can change something, from the encoded cells the agent sees.

    ``left`` and ``right`` always turn. ``forward`` needs a cell one can enter (empty, floor, goal, lava, an open door);
    ``pickup`` empty hands and a key, ball or box in front; ``drop`` a load and an empty cell in front; ``toggle`` a box
    or a door in front, locked doors only with a key of their colour. ``done`` does nothing in MiniGrid's own ``step``;
    ``keep_done`` keeps it for envs whose ``step`` reads it (GoToDoor, GoToObject).

    :param front: the encoded cell in front of the agent (type, colour, state), uint8, shape (n, 3)
    :param carried: the encoded object the agent carries (MiniGrid's view draws it on the agent's cell; ``empty``
        when it carries nothing), uint8, shape (n, 3)
    :param keep_done: leave ``done`` legal
    :param out: out: the legal actions, bool, shape (n, 7)
    """
    for r in range(front.shape[0]):
        kind, colour, state = front[r, 0], front[r, 1], front[r, 2]
        hands_empty = carried[r, 0] == _EMPTY
        door = kind == _DOOR
        out[r, 0] = True
        out[r, 1] = True
        out[r, _FORWARD] = kind == _EMPTY or kind == _FLOOR or kind == _GOAL or kind == _LAVA or (door and state == _OPEN)
        out[r, _PICKUP] = hands_empty and (kind == _KEY or kind == _BALL or kind == _BOX)
        out[r, _DROP] = not hands_empty and kind == _EMPTY
        own_key = carried[r, 0] == _KEY and carried[r, 1] == colour
        out[r, _TOGGLE] = kind == _BOX or (door and (state != _LOCKED or own_key))
        out[r, _DONE] = keep_done


@njit(cache=True)
def forbid_closing(front: np.ndarray, masks: np.ndarray) -> None:
    """Mask ``toggle`` where the agent faces an open door: closing a door never brings success nearer in MiniGrid's
    envs, and a greedy policy that closes and opens doors empties the memory of ``no_revisit`` and ``return_window``
    (both start again at every change) at each toggle.

    :param front: the encoded cell in front of the agent (type, colour, state), uint8, shape (n, 3)
    :param masks: in/out: the legal actions, bool, shape (n, 7)
    """
    for r in range(front.shape[0]):
        if front[r, 0] == _DOOR and front[r, 2] == _OPEN:
            masks[r, _TOGGLE] = False


@njit(cache=True)
def forbid_key_drop(carried: np.ndarray, grids: np.ndarray, grid_rows: np.ndarray, masks: np.ndarray) -> None:
    """Mask ``drop`` where the agent carries a key and a door of the key's colour is still locked: in KeyCorridor the
    key has one use, its door, and nothing stands in the way, so a key dropped before that is a key to fetch again. A
    greedy policy that drops the key and walks off fails there; one that drops it and takes it back loops. Not for
    ObstructedMaze, where a ball may block the locked door and the key must be put down to move it.

    :param carried: the encoded object the agent carries, uint8, shape (n, 3)
    :param grids: encoded grids (type, colour, state per cell, in any cell order), uint8, shape (G, H, W, 3)
    :param grid_rows: the row of each masked state's grid in ``grids``, -1 for a state that ended its trajectory (no
        mask to change there), int64, shape (n,)
    :param masks: in/out: the legal actions, bool, shape (n, 7)
    """
    for r in range(carried.shape[0]):
        g = grid_rows[r]
        if g < 0 or not masks[r, _DROP] or carried[r, 0] != _KEY:
            continue
        cells = grids[g].reshape(-1, 3)
        for c in range(cells.shape[0]):
            if cells[c, 0] == _DOOR and cells[c, 1] == carried[r, 1] and cells[c, 2] == _LOCKED:
                masks[r, _DROP] = False
                break


@njit(cache=True)
def forbid_undo(actions: np.ndarray, terminal: np.ndarray, masks: np.ndarray) -> None:
    """Mask, in each state reached by a step, the action that would undo that step (:data:`UNDO`): turning back, putting
    down what was just picked up, picking up what was just dropped, toggling a door back. A shortest way never has such a
    pair, and a memoryless greedy policy that has one repeats it for ever. Left and right stay legal in turn, so a mask
    never empties.

    :param actions: the action of each step, int64, shape (n,)
    :param terminal: whether each step ended its trajectory (no mask to change there), bool, shape (n,)
    :param masks: in/out: the legal actions of the states reached, bool, shape (n, 7)
    """
    for r in range(actions.shape[0]):
        undo = UNDO[actions[r]]
        if undo >= 0 and not terminal[r]:
            masks[r, undo] = False


def noop_action_masks(front: np.ndarray, carried: np.ndarray, keep_done: bool = False) -> np.ndarray:
    """:param front: the encoded cells in front of the agent, uint8, shape (n, 3) or (3,)
    :param carried: the encoded objects carried, uint8, shape (n, 3) or (3,)
    :param keep_done: leave ``done`` legal
    :return: the legal actions (see :func:`fill_noop_action_masks`), bool, shape (n, 7)"""
    front = np.asarray(front, dtype=np.uint8).reshape(-1, 3)
    masks = np.empty((len(front), N_MINIGRID_ACTIONS), dtype=np.bool_)
    fill_noop_action_masks(front, np.asarray(carried, dtype=np.uint8).reshape(-1, 3), bool(keep_done), masks)
    return masks


def encoded_cell(obj: Any) -> np.ndarray:
    """:param obj: a MiniGrid world object, or None
    :return: its encoding (type, colour, state) as MiniGrid's view draws it, uint8, shape (3,)"""
    return _EMPTY_CELL if obj is None else np.array(obj.encode(), dtype=np.uint8)


class MiniGridNoOpMask(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """sb3-contrib's ``action_masks()`` for MiniGrid: masks the actions that would change nothing (walking into a wall,
    a pickup with nothing in front, a drop with nothing in hand, toggling a wall or a locked door without its key,
    ``done``), as :func:`fill_noop_action_masks` says; with ``no_undo``, also the action that would undo the last one
    (:func:`forbid_undo`); with ``return_window``, also the moves that would bring the agent back to where it stood
    within its last moves (:func:`forbid_returns`); with ``no_revisit``, to where it stood at any time since its last
    pickup, drop or toggle, or where every move does, to the poses it left more often than others (:func:`forbid_revisits`);
    with ``keep_doors_open``, the toggle that would close a door (:func:`forbid_closing`); with ``no_repick``, picking up
    the object dropped with the agent's last change (:func:`~sb3_dirpg.envs.minigrid.move_window.forbid_repick`); with
    ``keep_key``, dropping a key while a door of its colour is locked (:func:`forbid_key_drop`).

    The no-op masks are a function of the agent's own observation (the cell it faces and what it carries are in its
    view), so a policy that applies them is still a policy of the observation; with ``no_undo`` it is a policy of the
    observation and the agent's last action, with ``return_window``, ``no_revisit`` or ``no_repick`` of its moves. A
    memoryless greedy policy whose most likely action does nothing, undoes the last one or closes a loop (turning four
    times, pacing, patrolling a corridor, dropping a key and taking it back) repeats it for ever; with the masks it
    cannot. DirPG's search and evaluation apply the masks; the compiled simulator computes the same masks from its
    observations and the actions it steps.

    The rule is that of ``MiniGridEnv.step``, which KeyCorridor, ObstructedMaze, DoorKey and the other envs of the
    compiled simulator keep (tests/test_noop_mask.py checks it by stepping every action). An env whose ``step`` gives an
    action another effect loses it where the rule masks it: GoToDoor ends the episode on ``toggle``.

    :param env: a MiniGrid env (possibly wrapped)
    :param keep_done: leave ``done`` legal, for envs whose ``step`` reads it (GoToDoor, GoToObject)
    :param no_undo: also mask the action that would undo the last step
    :param return_window: also mask the moves that would return the agent to a cell and direction it had within its last
        ``return_window`` moves (at most :data:`MAX_RETURN_WINDOW`; 0: off)
    :param no_revisit: also mask the moves that would return the agent to a cell and direction it had at any time since
        its last pickup, drop or toggle that changed something (a window with no bound; pass ``return_window`` 0), and
        where every legal action is such a move, those to the poses it left more often than the least left one
    :param keep_doors_open: also mask the toggle that would close an open door
    :param no_repick: also mask picking up the object the agent dropped with its last change (a drop, then only moves)
    :param keep_key: also mask dropping a key while a door of its colour is locked (for envs where nothing blocks that
        door, such as KeyCorridor; not ObstructedMaze)
    """

    def __init__(
        self,
        env: gym.Env,
        keep_done: bool = False,
        no_undo: bool = False,
        return_window: int = 0,
        no_revisit: bool = False,
        keep_doors_open: bool = False,
        no_repick: bool = False,
        keep_key: bool = False,
    ) -> None:
        gym.utils.RecordConstructorArgs.__init__(
            self, keep_done=keep_done, no_undo=no_undo, return_window=return_window, no_revisit=no_revisit,
            keep_doors_open=keep_doors_open, no_repick=no_repick, keep_key=keep_key,
        )  # fmt: skip
        gym.Wrapper.__init__(self, env)
        base = env.unwrapped
        if not hasattr(base, "grid") or not hasattr(base, "carrying"):
            raise ValueError(f"MiniGridNoOpMask needs a MiniGrid env, got {base!r}")
        if not isinstance(env.action_space, gym.spaces.Discrete) or env.action_space.n != N_MINIGRID_ACTIONS:
            raise ValueError(f"MiniGridNoOpMask needs MiniGrid's {N_MINIGRID_ACTIONS} actions, got {env.action_space}")
        inner = env
        while isinstance(inner, gym.Wrapper):
            if isinstance(inner, MiniGridNoOpMask):
                raise ValueError(
                    "MiniGridNoOpMask: the env already has a MiniGridNoOpMask layer, and only the outer layer's masks would "
                    "act: give all the rules to one layer, e.g. MiniGridNoOpMask(env, no_undo=True, no_revisit=True)"
                )
            inner = inner.env
        flags = {
            "keep_done": keep_done, "no_undo": no_undo, "no_revisit": no_revisit, "keep_doors_open": keep_doors_open,
            "no_repick": no_repick, "keep_key": keep_key,
        }  # fmt: skip
        for name, value in flags.items():
            if not isinstance(value, (bool, np.bool_)):
                raise ValueError(f"MiniGridNoOpMask: {name} must be a bool, got {value!r}")
        if isinstance(return_window, (bool, np.bool_)) or not isinstance(return_window, (int, np.integer)) or not (
            0 <= return_window <= MAX_RETURN_WINDOW
        ):
            raise ValueError(
                f"MiniGridNoOpMask: return_window must be an int from 0 to {MAX_RETURN_WINDOW}, got {return_window!r}"
            )
        if no_revisit and return_window:
            raise ValueError(
                f"MiniGridNoOpMask: no_revisit masks every return, so return_window={return_window} adds nothing: pass 0"
            )
        self.keep_done, self.no_undo, self.return_window = bool(keep_done), bool(no_undo), int(return_window)
        self.no_revisit, self.keep_doors_open, self.no_repick = bool(no_revisit), bool(keep_doors_open), bool(no_repick)
        self.keep_key = bool(keep_key)
        self._base = base
        # episode state (snapshots keep it): the action that would undo the last step (-1 for none), the recent moves,
        # the times each pose was left since the last change (bytes, which snapshots share; empty: none), the cell of the
        # object dropped with the last change (NO_DROP: none)
        self._undo = -1
        self._window = 0
        self._visits = b""
        self._dropped = NO_DROP

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """:param kwargs: ``reset``'s arguments
        :return: the first observation and info"""
        self._undo, self._window, self._visits, self._dropped = -1, 0, b"", NO_DROP
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """:param action: a MiniGrid action
        :return: the env's step"""
        base = self._base
        position, direction = tuple(int(v) for v in base.agent_pos), int(base.agent_dir)
        carried, front = encoded_cell(base.carrying), encoded_cell(front_cell(base))
        front_index = int(base.front_pos[1]) * base.width + int(base.front_pos[0]) if self.no_repick else NO_DROP
        result = self.env.step(action)
        action = int(action)
        self._undo = int(UNDO[action]) if self.no_undo else -1
        if self.return_window or self.no_revisit or self.no_repick:
            moved = tuple(base.agent_pos) != position
            changed = action in (_PICKUP, _DROP, _TOGGLE) and not (
                np.array_equal(encoded_cell(base.carrying), carried) and np.array_equal(encoded_cell(front_cell(base)), front)
            )
            if self.no_repick:
                self._dropped = remember_drop(self._dropped, action, changed, front_index)
            if self.return_window:
                self._window = push_move(self._window, action, moved, changed)
            elif self.no_revisit:
                visits = self._visit_counts()
                pose = np.array([*position, direction], dtype=np.int64)
                count_visit(visits, 0, 0, pose, base.width, moved or int(base.agent_dir) != direction, changed)
                self._visits = visits.tobytes()
        return result

    def _visit_counts(self) -> np.ndarray:
        """:return: the times each pose was left since the last change, as :func:`count_visit` keeps them, uint8,
            shape (1, :func:`pose_slots`)"""
        base = self._base
        if not self._visits:
            return np.zeros((1, pose_slots(base.width, base.height)), dtype=np.uint8)
        return np.frombuffer(self._visits, dtype=np.uint8).reshape(1, -1).copy()

    def action_masks(self) -> np.ndarray:
        """:return: the legal actions of the current state, bool, shape (7,)"""
        base = self._base
        front = encoded_cell(front_cell(base))
        masks = noop_action_masks(front, encoded_cell(base.carrying), self.keep_done)[0]
        if self.keep_doors_open:
            forbid_closing(front[None], masks[None])
        if self.keep_key and masks[_DROP] and base.carrying is not None and base.carrying.type == "key":
            forbid_key_drop(encoded_cell(base.carrying)[None], base.grid.encode()[None], np.zeros(1, np.int64), masks[None])
        if self._undo >= 0:
            masks[self._undo] = False
        if self.no_repick:
            poses = np.array([[*base.agent_pos, base.agent_dir, 0, 0, self._dropped]], dtype=np.int64)
            forbid_repick(poses, np.zeros(1, dtype=np.int64), base.width, masks[None])
        if self.return_window:
            forbid_returns(np.array([self._window]), np.zeros(1, dtype=np.bool_), self.return_window, masks[None])
        if self.no_revisit:
            pose = np.array([[*base.agent_pos, base.agent_dir]], dtype=np.int64)
            forbid_revisits(self._visit_counts(), pose, np.zeros(1, dtype=np.int64), base.width, masks[None])
        return masks

    @property
    def compiled_flags(self) -> int:
        """:return: the masks for the compiled simulator: bit 0 ``keep_done``, bit 1 ``no_undo``, bits 2-6
        ``return_window`` (:func:`return_window_of`), :data:`NO_REVISIT_FLAG` ``no_revisit``,
        :data:`KEEP_DOORS_OPEN_FLAG` ``keep_doors_open``, :data:`NO_REPICK_FLAG` ``no_repick``, :data:`KEEP_KEY_FLAG`
        ``keep_key``"""
        return (int(self.keep_done) | int(self.no_undo) << 1 | self.return_window << 2 | NO_REVISIT_FLAG * self.no_revisit
                | KEEP_DOORS_OPEN_FLAG * self.keep_doors_open | NO_REPICK_FLAG * self.no_repick
                | KEEP_KEY_FLAG * self.keep_key)  # fmt: skip


@njit(cache=True)
def return_window_of(flags: int) -> int:
    """:param flags: a :attr:`MiniGridNoOpMask.compiled_flags`
    :return: its ``return_window``"""
    return (flags >> 2) & _WINDOW_BITS


@njit(cache=True)
def fill_compiled_masks(
    front: np.ndarray,
    carried: np.ndarray,
    actions: np.ndarray,
    terminal: np.ndarray,
    reached: np.ndarray,
    agent: np.ndarray,
    visits: np.ndarray,
    grid_of: np.ndarray,
    grids: np.ndarray,
    width: int,
    flags: int,
    masks: np.ndarray,
) -> None:
    """The legal actions of the states a compiled step reached, under :class:`MiniGridNoOpMask` with ``flags``: the
    no-ops, then the closing toggles, the key drops, the undo, the repick, the returns within the window and the revisits
    (which never empty a mask, so they come last), in the env path's order; a terminal state keeps every action. The
    compiled simulator's step and its search loop both call it.

    :param front: the encoded cell in front of the agent, uint8, shape (n, 3)
    :param carried: the encoded object the agent carries, uint8, shape (n, 3)
    :param actions: the action of each step, int64, shape (n,)
    :param terminal: whether each step ended its trajectory, bool, shape (n,)
    :param reached: the state store's row of each reached state (-1: none kept), int64, shape (n,)
    :param agent: the state store's agent columns (column 4: the packed move window, 5: the cell of the last drop)
    :param visits: the state store's counts per pose (:func:`~sb3_dirpg.envs.minigrid.move_window.count_visit`)
    :param grid_of: the state store's grid row of each state
    :param grids: the state store's grids
    :param width: the grid's width
    :param flags: a :attr:`MiniGridNoOpMask.compiled_flags`
    :param masks: out: the legal actions, bool, shape (n, 7), all True on entry
    """
    fill_noop_action_masks(front, carried, (flags & 1) == 1, masks)
    if flags & KEEP_DOORS_OPEN_FLAG:
        forbid_closing(front, masks)
    if flags & KEEP_KEY_FLAG:
        grid_rows = np.full(reached.shape[0], -1, np.int64)
        for r in range(reached.shape[0]):
            if reached[r] >= 0:
                grid_rows[r] = grid_of[reached[r]]
        forbid_key_drop(carried, grids, grid_rows, masks)
    if flags & 2:
        forbid_undo(actions, terminal, masks)
    if flags & NO_REPICK_FLAG:
        forbid_repick(agent, reached, width, masks)
    window = return_window_of(flags)
    if window:
        windows = np.zeros(reached.shape[0], np.int64)
        for r in range(reached.shape[0]):
            if reached[r] >= 0:
                windows[r] = agent[reached[r], 4]
        forbid_returns(windows, terminal, window, masks)
    if flags & NO_REVISIT_FLAG:
        forbid_revisits(visits, agent, reached, width, masks)
    for r in range(terminal.shape[0]):
        if terminal[r]:
            masks[r, :] = True  # as the env path's: a terminal state has no actions to mask
