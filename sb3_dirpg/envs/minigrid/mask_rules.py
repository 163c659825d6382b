"""The rules of :class:`~sb3_dirpg.envs.MiniGridNoOpMask`, each one object in one registry.

The no-op masks (:func:`fill_noop_action_masks`) always act. Each rule on top of them is a :class:`MaskRule`: its
name (what ``MiniGridNoOpMask(rules=[...])`` and rl-zoo3's YAML spell), its doc, its env-path check
(:meth:`MaskRule.restrict`, with the memory of the agent's own steps that :meth:`MaskRule.remember` keeps), its
compiled check (an ``@njit`` function of the uniform signature of :data:`CompiledCheck`, which
:func:`fill_compiled_masks` calls where the rule's bit is set: numba cannot call Python objects, so that kernel is the
one place that dispatches on the bits) and its bit in :attr:`MiniGridNoOpMask.compiled_flags
<sb3_dirpg.envs.MiniGridNoOpMask.compiled_flags>`. The shipped rules, in the order they act (registry order, which
is also the compiled kernel's):

========================  =====================  ====================================================================
rule                      bit(s)                 masks
========================  =====================  ====================================================================
``keep_done``             ``1 << 0``             nothing: leaves ``done`` legal (GoToDoor, GoToObject read it)
``keep_doors_open``       ``1 << 8``             the toggle that would close an open door
``keep_key``              ``1 << 10``            dropping a key while a door of its colour is locked
``no_undo``               ``1 << 1``             the action that would undo the last step
``no_repick``             ``1 << 9``             picking up the object dropped with the last change
``{return_window: W}``    ``W << 2`` (bits 2-6)  moves back to a pose of the last ``W`` moves
``no_revisit``            ``1 << 7``             moves back to a pose held since the last change
========================  =====================  ====================================================================

Adding a rule touches this module: a :class:`MaskRule` subclass with its env-path check, registered with
:func:`register_mask_rule`; for the compiled simulator also an ``@njit`` check, a free bit, and one branch in
:func:`fill_compiled_masks` (whose :data:`COMPILED_BITS` lists the bits it dispatches). A rule without a compiled check
runs on the env path; the compiled simulator refuses a chain that uses it, and says why. A compiled check that needs a
memory of the steps which the state store does not keep yet (it keeps the packed recent moves, the cell of the last
drop and the counts per pose) also needs that column in :class:`~sb3_dirpg.envs.minigrid.compiled_kernels.Store` and
its update in :func:`~sb3_dirpg.envs.minigrid.compiled_kernels.step_states`.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np
from minigrid.core.constants import OBJECT_TO_IDX, STATE_TO_IDX
from numba import njit

from sb3_dirpg.envs.minigrid.compiled_kernels import Store
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
#: the action that undoes each action right after it (left, right; pickup, drop; toggle a door), -1 for none
UNDO = np.array([1, 0, -1, _DROP, _PICKUP, _TOGGLE, -1], dtype=np.int64)

#: the shipped rules' bits in :attr:`MiniGridNoOpMask.compiled_flags <sb3_dirpg.envs.MiniGridNoOpMask.compiled_flags>`
KEEP_DONE_BIT = 1 << 0
NO_UNDO_BIT = 1 << 1
_WINDOW_SHIFT = 2
RETURN_WINDOW_BITS = 31 << _WINDOW_SHIFT  # the window's length, 1 to MAX_RETURN_WINDOW, in bits 2-6
NO_REVISIT_BIT = 1 << 7
KEEP_DOORS_OPEN_BIT = 1 << 8
NO_REPICK_BIT = 1 << 9
KEEP_KEY_BIT = 1 << 10
#: the bits :func:`fill_compiled_masks` dispatches on (a rule's compiled check acts only where its branch is there)
COMPILED_BITS = (
    KEEP_DONE_BIT | NO_UNDO_BIT | RETURN_WINDOW_BITS | NO_REVISIT_BIT | KEEP_DOORS_OPEN_BIT | NO_REPICK_BIT | KEEP_KEY_BIT
)


# ---------------------------------------------------------------------------------------------------------------------
# the no-op masks


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


# ---------------------------------------------------------------------------------------------------------------------
# what the env path's checks read


class MaskView(NamedTuple):
    """The state whose legal actions the env path computes, as its checks read it.

    :param base: the unwrapped MiniGrid env
    :param front: the encoded cell in front of the agent, uint8, shape (3,)
    :param carried: the encoded object the agent carries, uint8, shape (3,)
    """

    base: Any
    front: np.ndarray
    carried: np.ndarray


class StepFacts:
    """What one step of the env did, as the rules' memories read it (:meth:`MaskRule.remember`).

    :param base: the unwrapped MiniGrid env, after the step
    :param action: the step's MiniGrid action
    :param before: the agent's x, y and direction before the step
    :param front_index: the cell the agent faced before the step (``y * width + x``)
    :param front: the encoded cell the agent faced before the step, uint8, shape (3,)
    :param carried: the encoded object it carried before the step, uint8, shape (3,)
    """

    __slots__ = ("base", "action", "before", "front_index", "moved", "turned_or_moved", "_front", "_carried", "_changed")

    def __init__(
        self, base: Any, action: int, before: tuple[int, int, int], front_index: int, front: np.ndarray, carried: np.ndarray
    ) -> None:
        self.base, self.action, self.before, self.front_index = base, action, before, front_index
        x, y = base.agent_pos
        #: whether the step moved the agent to another cell
        self.moved: bool = x != before[0] or y != before[1]
        #: whether the step moved or turned the agent
        self.turned_or_moved: bool = self.moved or base.agent_dir != before[2]
        self._front, self._carried = front, carried
        self._changed: bool | None = None

    @property
    def changed(self) -> bool:
        """:return: whether the step changed the grid or what the agent carries (a pickup, drop or toggle that did
            something), computed once"""
        if self._changed is None:
            base = self.base
            self._changed = self.action in (_PICKUP, _DROP, _TOGGLE) and not (
                np.array_equal(encoded_cell(base.carrying), self._carried)
                and np.array_equal(encoded_cell(front_cell(base)), self._front)
            )
        return self._changed


# ---------------------------------------------------------------------------------------------------------------------
# the compiled path's records and the uniform signature of a compiled check


class ReachedRows(NamedTuple):
    """What a compiled step gives the masks of the states it reached (a plain tuple at the numba call).

    :param front: the encoded cell in front of the agent, read off the observation, uint8, shape (n, 3)
    :param carried: the encoded object the agent carries, read off the observation, uint8, shape (n, 3)
    :param actions: the action of each step, int64, shape (n,)
    :param terminal: whether each step ended its trajectory, bool, shape (n,)
    :param rows: the state store's row of each reached state (-1: none kept), int64, shape (n,)
    """

    front: np.ndarray
    carried: np.ndarray
    actions: np.ndarray
    terminal: np.ndarray
    rows: np.ndarray


#: a rule's compiled check: ``check(reached, store, width, flags, masks)``, an ``@njit`` function that masks, in place,
#: the legal actions ``masks`` (bool, shape (n, 7)) of the states in ``reached`` (:class:`ReachedRows`, a plain tuple),
#: reading the state store ``store`` (:class:`~sb3_dirpg.envs.minigrid.compiled_kernels.Store`, a plain tuple), the
#: grid's ``width`` and the layer's ``flags``
CompiledCheck = Callable[[tuple, tuple, int, int, np.ndarray], None]


# ---------------------------------------------------------------------------------------------------------------------
# the rules


#: the value of :meth:`MaskRule.resolve`'s ``argument`` when none is given
NO_ARGUMENT: Any = object()


@dataclass(frozen=True)
class MaskRule:
    """One rule of :class:`~sb3_dirpg.envs.MiniGridNoOpMask` on top of the no-op masks. Subclass it, override
    :meth:`restrict` (and, for a rule with a memory of the agent's steps, :meth:`start` and :meth:`remember`), and
    register an instance with :func:`register_mask_rule`.

    :param name: how ``rules=[...]`` and rl-zoo3's YAML spell it
    :param doc: what it masks, in a sentence
    :param bit: its bits in the compiled flags (0: no compiled check)
    :param compiled: its compiled check (:data:`CompiledCheck`), None where the compiled simulator cannot run it
    :param excludes: the names of the rules it makes redundant (passing both is refused)
    :param counts_poses: whether it reads the times each pose was left (the compiled store then keeps those counts)
    """

    name: str
    doc: str = dataclasses.field(repr=False)
    bit: int = 0
    compiled: CompiledCheck | None = dataclasses.field(default=None, repr=False, compare=False)
    excludes: tuple[str, ...] = ()
    counts_poses: bool = False
    #: whether the rule keeps a memory of the agent's own steps (:meth:`remember` is called after each)
    remembers: ClassVar[bool] = False

    def resolve(self, argument: Any = NO_ARGUMENT) -> MaskRule:
        """:param argument: the rule's argument, as ``{name: argument}`` spells it (most rules take none)
        :return: the rule to apply
        :raises ValueError: where the rule takes no argument and got one"""
        if argument is not NO_ARGUMENT:
            raise ValueError(f"MiniGridNoOpMask: the rule {self.name!r} takes no argument, got {argument!r}: name it alone")
        return self

    def spec(self) -> str | dict[str, Any]:
        """:return: how ``rules=[...]`` spells this rule (its name, or ``{name: argument}``)"""
        return self.name

    def compiled_value(self) -> int:
        """:return: its part of the compiled flags"""
        return self.bit

    def start(self) -> Any:
        """:return: the rule's memory at an episode's start (immutable: snapshots keep it by reference)"""
        return None

    def remember(self, memory: Any, step: StepFacts) -> Any:
        """:param memory: the rule's memory before a step
        :param step: what the step did
        :return: its memory after the step (immutable)"""
        return memory

    def restrict(self, memory: Any, view: MaskView, masks: np.ndarray) -> None:
        """The env-path check: mask, in place, the actions the rule forbids in the env's current state.

        :param memory: the rule's memory (:meth:`remember`)
        :param view: the state, as the checks read it
        :param masks: in/out: the legal actions so far, bool, shape (7,)
        """
        raise NotImplementedError(f"the mask rule {self.name!r} has no env-path check (restrict)")


# ---------------------------------------------------------------------------------------------------------------------
# the registry

_REGISTRY: dict[str, MaskRule] = {}

#: how one rule is spelled in ``rules=[...]``: its name, ``{name: argument}``, or the rule object
RuleSpec = str | Mapping[str, Any] | MaskRule


def register_mask_rule(rule: MaskRule) -> MaskRule:
    """Register a rule under its name; rules act in the order they were registered (after the shipped ones).

    :param rule: the rule
    :return: the rule
    :raises ValueError: where its name is taken, its bits overlap another rule's, or it has a compiled check whose
        bits :func:`fill_compiled_masks` does not dispatch on
    """
    if not isinstance(rule, MaskRule):
        raise TypeError(f"register_mask_rule: rule must be a MaskRule, got {rule!r}")
    if not isinstance(rule.name, str) or not rule.name.isidentifier():
        raise ValueError(f"register_mask_rule: a rule's name must be an identifier, got {rule.name!r}")
    if rule.name in _REGISTRY:
        raise ValueError(f"register_mask_rule: the name {rule.name!r} is taken")
    if not isinstance(rule.bit, int) or rule.bit < 0:
        raise ValueError(f"register_mask_rule: {rule.name}'s bit must be a non-negative int, got {rule.bit!r}")
    taken = {other.name: other.bit for other in _REGISTRY.values() if other.bit & rule.bit}
    if taken:
        raise ValueError(f"register_mask_rule: {rule.name}'s bits {rule.bit:#x} overlap those of {sorted(taken)}")
    if rule.compiled is not None and (rule.bit == 0 or rule.bit & ~COMPILED_BITS):
        raise ValueError(
            f"register_mask_rule: {rule.name} has a compiled check, but fill_compiled_masks dispatches on no bit "
            f"{rule.bit:#x}: give it a branch there (and add its bit to COMPILED_BITS), or register it with compiled=None"
        )
    _REGISTRY[rule.name] = rule
    return rule


def unregister_mask_rule(name: str) -> None:
    """:param name: a registered rule's name (for tests and plugins that register a rule for a while)
    :raises KeyError: where no rule has that name"""
    if name not in _REGISTRY:
        raise KeyError(f"unregister_mask_rule: no mask rule named {name!r}")
    del _REGISTRY[name]


def mask_rules() -> tuple[MaskRule, ...]:
    """:return: the registered rules, in the order they act"""
    return tuple(_REGISTRY.values())


def mask_rule(name: str) -> MaskRule:
    """:param name: a registered rule's name
    :return: the rule
    :raises ValueError: naming the registered rules, where none has that name"""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"MiniGridNoOpMask: no mask rule named {name!r}; the rules are {list(_REGISTRY)}") from None


def _one_rule(spec: RuleSpec) -> MaskRule:
    """:param spec: a rule's name, ``{name: argument}`` or rule object
    :return: the registered rule it spells, with its argument"""
    if isinstance(spec, MaskRule):
        registered = mask_rule(spec.name)
        if type(registered) is not type(spec):
            raise ValueError(
                f"MiniGridNoOpMask: the rule {spec!r} is not the registered {spec.name!r}: register it with register_mask_rule"
            )
        return spec.resolve()
    if isinstance(spec, Mapping):
        if len(spec) != 1:
            raise ValueError(f"MiniGridNoOpMask: a rule with an argument is a one-key mapping {{name: argument}}, got {spec}")
        ((name, argument),) = spec.items()
        return mask_rule(name).resolve(argument)
    if isinstance(spec, str):
        return mask_rule(spec).resolve()
    raise ValueError(f"MiniGridNoOpMask: a rule is a name, {{name: argument}} or a MaskRule, got {spec!r}")


def _from_flags(flags: Mapping[str, Any]) -> list[RuleSpec]:
    """The rules the keywords of the previous release spell (``no_undo=True``, ``return_window=8``), with a
    DeprecationWarning that names the new spelling.

    :param flags: the keywords
    :return: the rules they switch on
    """
    specs: list[RuleSpec] = []
    for name, value in flags.items():
        if name not in _REGISTRY:
            raise TypeError(
                f"MiniGridNoOpMask() got an unexpected keyword argument {name!r}: the rules go in rules=[...], "
                f"of {list(_REGISTRY)}"
            )
        if isinstance(_REGISTRY[name], ReturnWindow):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not (
                0 <= value <= MAX_RETURN_WINDOW
            ):
                raise ValueError(f"MiniGridNoOpMask: {name} must be an int from 0 to {MAX_RETURN_WINDOW}, got {value!r}")
            specs += [{name: int(value)}] if value else []
        elif isinstance(value, (bool, np.bool_)):
            specs += [name] if value else []
        else:
            raise ValueError(f"MiniGridNoOpMask: {name} must be a bool, got {value!r}")
    warnings.warn(
        f"MiniGridNoOpMask({', '.join(f'{k}={v!r}' for k, v in flags.items())}) spells the rules as flags, which is "
        f"deprecated: pass rules={specs!r}",
        DeprecationWarning,
        stacklevel=4,
    )
    return specs


def resolve_rules(rules: Iterable[RuleSpec] | str, flags: Mapping[str, Any]) -> tuple[MaskRule, ...]:
    """:param rules: ``MiniGridNoOpMask``'s ``rules``: names, ``{name: argument}`` mappings or rule objects
    :param flags: its other keywords: the previous release's flags (deprecated)
    :return: the rules, in the order they act
    :raises ValueError: where a rule is unknown, given twice, or made redundant by another"""
    if isinstance(rules, (str, Mapping, MaskRule)) or not isinstance(rules, Iterable):
        raise ValueError(f"MiniGridNoOpMask: rules must be a list of rules, e.g. ['no_undo', 'no_revisit'], got {rules!r}")
    specs = list(rules) + (_from_flags(flags) if flags else [])
    chosen: dict[str, MaskRule] = {}
    for spec in specs:
        rule = _one_rule(spec)
        if rule.name in chosen:
            raise ValueError(f"MiniGridNoOpMask: the rule {rule.name!r} is given twice")
        chosen[rule.name] = rule
    for rule in chosen.values():
        for other in rule.excludes:
            if other in chosen:
                raise ValueError(
                    f"MiniGridNoOpMask: {rule.name} masks what {other} does and more, so {chosen[other].spec()!r} adds "
                    f"nothing: leave it out"
                )
    order = list(_REGISTRY)
    return tuple(sorted(chosen.values(), key=lambda rule: order.index(rule.name)))


# ---------------------------------------------------------------------------------------------------------------------
# the shipped rules, each one unit: its compiled check, its class (the env-path check and its memory), its registration


# keep_done


@njit(cache=True)
def keep_done_compiled(reached: tuple, store: tuple, width: int, flags: int, masks: np.ndarray) -> None:
    """``keep_done``'s compiled check (:data:`CompiledCheck`): ``done`` legal again."""
    for r in range(masks.shape[0]):
        masks[r, _DONE] = True


@dataclass(frozen=True)
class KeepDone(MaskRule):
    """``done`` stays legal (the no-op masks forbid it: MiniGrid's own ``step`` ignores it)."""

    def restrict(self, memory: Any, view: MaskView, masks: np.ndarray) -> None:
        """:param memory: none
        :param view: the state
        :param masks: in/out: the legal actions"""
        masks[_DONE] = True


KEEP_DONE = register_mask_rule(KeepDone(
    "keep_done", "leave done legal, for envs whose step reads it (GoToDoor, GoToObject)", KEEP_DONE_BIT,
    keep_done_compiled,
))  # fmt: skip


# keep_doors_open


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
def keep_doors_open_compiled(reached: tuple, store: tuple, width: int, flags: int, masks: np.ndarray) -> None:
    """``keep_doors_open``'s compiled check (:data:`CompiledCheck`): :func:`forbid_closing`."""
    forbid_closing(ReachedRows(*reached).front, masks)


@dataclass(frozen=True)
class KeepDoorsOpen(MaskRule):
    """The toggle that would close an open door is masked (:func:`forbid_closing`)."""

    def restrict(self, memory: Any, view: MaskView, masks: np.ndarray) -> None:
        """:param memory: none
        :param view: the state
        :param masks: in/out: the legal actions"""
        forbid_closing(view.front[None], masks[None])


KEEP_DOORS_OPEN = register_mask_rule(KeepDoorsOpen(
    "keep_doors_open", "mask the toggle that would close an open door", KEEP_DOORS_OPEN_BIT, keep_doors_open_compiled,
))  # fmt: skip


# keep_key


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
def keep_key_compiled(reached: tuple, store: tuple, width: int, flags: int, masks: np.ndarray) -> None:
    """``keep_key``'s compiled check (:data:`CompiledCheck`): :func:`forbid_key_drop` on the store's grids."""
    states, kept = ReachedRows(*reached), Store(*store)
    grid_rows = np.full(states.rows.shape[0], -1, np.int64)
    for r in range(states.rows.shape[0]):
        if states.rows[r] >= 0:
            grid_rows[r] = kept.grid_of[states.rows[r]]
    forbid_key_drop(states.carried, kept.grids, grid_rows, masks)


@dataclass(frozen=True)
class KeepKey(MaskRule):
    """Dropping a key is masked while a door of its colour is locked (:func:`forbid_key_drop`)."""

    def restrict(self, memory: Any, view: MaskView, masks: np.ndarray) -> None:
        """:param memory: none
        :param view: the state
        :param masks: in/out: the legal actions"""
        carrying = view.base.carrying
        if masks[_DROP] and carrying is not None and carrying.type == "key":
            forbid_key_drop(view.carried[None], view.base.grid.encode()[None], np.zeros(1, np.int64), masks[None])


KEEP_KEY = register_mask_rule(KeepKey(
    "keep_key", "mask dropping a key while a door of its colour is locked (not for ObstructedMaze)", KEEP_KEY_BIT,
    keep_key_compiled,
))  # fmt: skip


# no_undo


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


@njit(cache=True)
def no_undo_compiled(reached: tuple, store: tuple, width: int, flags: int, masks: np.ndarray) -> None:
    """``no_undo``'s compiled check (:data:`CompiledCheck`): :func:`forbid_undo` of the actions stepped."""
    states = ReachedRows(*reached)
    forbid_undo(states.actions, states.terminal, masks)


@dataclass(frozen=True)
class NoUndo(MaskRule):
    """The action that would undo the last step is masked (:func:`forbid_undo`); the memory is that action (-1: none)."""

    remembers: ClassVar[bool] = True

    def start(self) -> int:
        """:return: no action to undo"""
        return -1

    def remember(self, memory: int, step: StepFacts) -> int:
        """:param memory: the undo of the step before
        :param step: the step
        :return: the undo of this step"""
        return int(UNDO[step.action])

    def restrict(self, memory: int, view: MaskView, masks: np.ndarray) -> None:
        """:param memory: the action that would undo the last step (-1: none)
        :param view: the state
        :param masks: in/out: the legal actions"""
        if memory >= 0:
            masks[memory] = False


NO_UNDO = register_mask_rule(NoUndo(
    "no_undo", "mask the action that would undo the last step", NO_UNDO_BIT, no_undo_compiled,
))  # fmt: skip


# no_repick


@njit(cache=True)
def no_repick_compiled(reached: tuple, store: tuple, width: int, flags: int, masks: np.ndarray) -> None:
    """``no_repick``'s compiled check (:data:`CompiledCheck`): :func:`forbid_repick` with the store's drop cells."""
    forbid_repick(Store(*store).agent, ReachedRows(*reached).rows, width, masks)


@dataclass(frozen=True)
class NoRepick(MaskRule):
    """Picking up the object dropped with the last change is masked (:func:`forbid_repick`); the memory is the cell of
    that drop (:func:`remember_drop`)."""

    remembers: ClassVar[bool] = True

    def start(self) -> int:
        """:return: no drop"""
        return NO_DROP

    def remember(self, memory: int, step: StepFacts) -> int:
        """:param memory: the cell of the last drop before the step
        :param step: the step
        :return: the cell after it"""
        return remember_drop(memory, step.action, step.changed, step.front_index)

    def restrict(self, memory: int, view: MaskView, masks: np.ndarray) -> None:
        """:param memory: the cell of the object dropped with the last change (:data:`NO_DROP`: none)
        :param view: the state
        :param masks: in/out: the legal actions"""
        base = view.base
        poses = np.array([[*base.agent_pos, base.agent_dir, 0, 0, memory]], dtype=np.int64)
        forbid_repick(poses, np.zeros(1, dtype=np.int64), base.width, masks[None])


NO_REPICK = register_mask_rule(NoRepick(
    "no_repick", "mask picking up the object dropped with the last change", NO_REPICK_BIT, no_repick_compiled,
))  # fmt: skip


# return_window


@njit(cache=True)
def return_window_compiled(reached: tuple, store: tuple, width: int, flags: int, masks: np.ndarray) -> None:
    """``return_window``'s compiled check (:data:`CompiledCheck`): :func:`forbid_returns` with the store's packed
    moves, over the window's length in ``flags``' :data:`RETURN_WINDOW_BITS`."""
    states, agent = ReachedRows(*reached), Store(*store).agent
    windows = np.zeros(states.rows.shape[0], np.int64)
    for r in range(states.rows.shape[0]):
        if states.rows[r] >= 0:
            windows[r] = agent[states.rows[r], 4]
    forbid_returns(windows, states.terminal, (flags & RETURN_WINDOW_BITS) >> _WINDOW_SHIFT, masks)


@dataclass(frozen=True)
class ReturnWindow(MaskRule):
    """The moves back to a pose of the agent's last ``length`` moves are masked (:func:`forbid_returns`); the memory is
    those moves, packed (:func:`push_move`). Spelled ``{return_window: length}``.

    :param length: the moves looked back on, 1 to :data:`MAX_RETURN_WINDOW` (None: not given yet)
    """

    length: int | None = None
    remembers: ClassVar[bool] = True

    def resolve(self, argument: Any = NO_ARGUMENT) -> MaskRule:
        """:param argument: the window's length
        :return: the rule with that length
        :raises ValueError: where the length is missing or not an int from 1 to :data:`MAX_RETURN_WINDOW`"""
        length = self.length if argument is NO_ARGUMENT else argument
        if length is None:
            raise ValueError(f"MiniGridNoOpMask: the rule {self.name!r} needs its length: rules=[{{{self.name!r}: 8}}]")
        if isinstance(length, (bool, np.bool_)) or not isinstance(length, (int, np.integer)) or not (
            1 <= length <= MAX_RETURN_WINDOW
        ):
            raise ValueError(
                f"MiniGridNoOpMask: {self.name} must be an int from 1 to {MAX_RETURN_WINDOW}, got {length!r}"
            )
        return self if length == self.length else dataclasses.replace(self, length=int(length))

    def spec(self) -> dict[str, Any]:
        """:return: ``{name: length}``"""
        return {self.name: self.length}

    def compiled_value(self) -> int:
        """:return: the length in :data:`RETURN_WINDOW_BITS`"""
        return int(self.length) << _WINDOW_SHIFT

    def start(self) -> int:
        """:return: no moves"""
        return 0

    def remember(self, memory: int, step: StepFacts) -> int:
        """:param memory: the packed moves before the step
        :param step: the step
        :return: the packed moves after it"""
        return push_move(memory, step.action, step.moved, step.changed)

    def restrict(self, memory: int, view: MaskView, masks: np.ndarray) -> None:
        """:param memory: the packed recent moves
        :param view: the state
        :param masks: in/out: the legal actions"""
        forbid_returns(np.array([memory]), np.zeros(1, dtype=np.bool_), self.length, masks[None])


RETURN_WINDOW = register_mask_rule(ReturnWindow(
    "return_window", "mask the moves back to a pose of the last W moves (spelled {return_window: W})",
    RETURN_WINDOW_BITS, return_window_compiled,
))  # fmt: skip


# no_revisit


@njit(cache=True)
def no_revisit_compiled(reached: tuple, store: tuple, width: int, flags: int, masks: np.ndarray) -> None:
    """``no_revisit``'s compiled check (:data:`CompiledCheck`): :func:`forbid_revisits` with the store's counts."""
    kept = Store(*store)
    forbid_revisits(kept.visits, kept.agent, ReachedRows(*reached).rows, width, masks)


@dataclass(frozen=True)
class NoRevisit(MaskRule):
    """The moves back to a pose held since the last change are masked, or where every move returns, those to the poses
    left more often than others (:func:`forbid_revisits`); the memory is the times each pose was left
    (:func:`count_visit`), as bytes (empty: none yet)."""

    remembers: ClassVar[bool] = True

    def start(self) -> bytes:
        """:return: no counts"""
        return b""

    def remember(self, memory: bytes, step: StepFacts) -> bytes:
        """:param memory: the counts before the step
        :param step: the step
        :return: the counts after it"""
        visits = _visit_counts(memory, step.base)
        pose = np.array(step.before, dtype=np.int64)
        count_visit(visits, 0, 0, pose, step.base.width, step.turned_or_moved, step.changed)
        return visits.tobytes()

    def restrict(self, memory: bytes, view: MaskView, masks: np.ndarray) -> None:
        """:param memory: the times each pose was left
        :param view: the state
        :param masks: in/out: the legal actions"""
        base = view.base
        pose = np.array([[*base.agent_pos, base.agent_dir]], dtype=np.int64)
        forbid_revisits(_visit_counts(memory, base), pose, np.zeros(1, dtype=np.int64), base.width, masks[None])


def _visit_counts(memory: bytes, base: Any) -> np.ndarray:
    """:param memory: a :class:`NoRevisit` memory
    :param base: the unwrapped env
    :return: the times each pose was left since the last change, as :func:`count_visit` keeps them, uint8,
        shape (1, :func:`pose_slots`)"""
    if not memory:
        return np.zeros((1, pose_slots(base.width, base.height)), dtype=np.uint8)
    return np.frombuffer(memory, dtype=np.uint8).reshape(1, -1).copy()


NO_REVISIT = register_mask_rule(NoRevisit(
    "no_revisit", "mask the moves back to a pose held since the last change (or, where all return, to the most left)",
    NO_REVISIT_BIT, no_revisit_compiled, excludes=("return_window",), counts_poses=True,
))  # fmt: skip


# ---------------------------------------------------------------------------------------------------------------------
# the one place that dispatches on the bits


@njit(cache=True)
def fill_compiled_masks(reached: tuple, store: tuple, width: int, flags: int, masks: np.ndarray) -> None:
    """The legal actions of the states a compiled step reached, under the rules of ``flags``: the no-ops, then each
    rule's compiled check whose bit is set, in the registry's order (the env path's); a terminal state keeps every
    action. The one place that dispatches on the bits (:data:`COMPILED_BITS`); the compiled simulator's step and its
    search loop both call it.

    :param reached: the states reached, :class:`ReachedRows` as a plain tuple
    :param store: the state store, :class:`~sb3_dirpg.envs.minigrid.compiled_kernels.Store` as a plain tuple (its
        agent columns 4 and 5 hold the packed move window and the cell of the last drop, its ``visits`` the counts
        per pose)
    :param width: the grid's width
    :param flags: a :attr:`MiniGridNoOpMask.compiled_flags <sb3_dirpg.envs.MiniGridNoOpMask.compiled_flags>`
    :param masks: out: the legal actions, bool, shape (n, 7)
    """
    states = ReachedRows(*reached)
    fill_noop_action_masks(states.front, states.carried, False, masks)
    if flags & KEEP_DONE_BIT:
        keep_done_compiled(reached, store, width, flags, masks)
    if flags & KEEP_DOORS_OPEN_BIT:
        keep_doors_open_compiled(reached, store, width, flags, masks)
    if flags & KEEP_KEY_BIT:
        keep_key_compiled(reached, store, width, flags, masks)
    if flags & NO_UNDO_BIT:
        no_undo_compiled(reached, store, width, flags, masks)
    if flags & NO_REPICK_BIT:
        no_repick_compiled(reached, store, width, flags, masks)
    if flags & RETURN_WINDOW_BITS:
        return_window_compiled(reached, store, width, flags, masks)
    if flags & NO_REVISIT_BIT:
        no_revisit_compiled(reached, store, width, flags, masks)
    for r in range(states.terminal.shape[0]):
        if states.terminal[r]:
            masks[r, :] = True  # as the env path's: a terminal state has no actions to mask
