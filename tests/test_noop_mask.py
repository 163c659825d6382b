"""``MiniGridNoOpMask``: an action is masked exactly when stepping it would change nothing, and DirPG's search,
training and evaluation take only the legal ones."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import minigrid  # noqa: F401  (registers MiniGrid's ids)
import numpy as np
import pytest
from minigrid.core.constants import DIR_TO_VEC

from experiments.held_out import action_masks_of, evaluate_held_out
from sb3_dirpg import DirPG, MiniGridCNN
from sb3_dirpg.envs import DirectionImageObs, MiniGridNoOpMask, make_minigrid_env
from sb3_dirpg.envs.minigrid.mask_rules import (
    MaskRule,
    MaskView,
    StepFacts,
    mask_rule,
    register_mask_rule,
    unregister_mask_rule,
)

PICKUP, DROP, TOGGLE, DONE = 3, 4, 5, 6


def _state(env: gym.Env) -> tuple:
    """:return: everything a step can change but the step count: the agent's cell, direction and load, and the grid"""
    base = env.unwrapped
    carrying = None if base.carrying is None else base.carrying.encode()
    return tuple(int(v) for v in base.agent_pos), int(base.agent_dir), carrying, base.grid.encode().tobytes()


MASKED_ENVS = [
    "MiniGrid-KeyCorridorS3R3-v0", "MiniGrid-ObstructedMaze-2Dlh-v0", "MiniGrid-DoorKey-5x5-v0", "MiniGrid-LavaGapS5-v0",
]  # fmt: skip


@pytest.mark.parametrize("env_id", MASKED_ENVS)
def test_an_action_is_masked_exactly_when_it_changes_nothing(env_id: str) -> None:
    """From the states of random walks (mostly legal actions, some masked ones), step every action on a copy of the
    env: the masked ones leave the state as it was and do not end the episode; every legal one changes the state or
    ends the episode."""
    env = MiniGridNoOpMask(gym.make(env_id))
    rng = np.random.default_rng(0)
    checked = np.zeros(7, dtype=int)  # per action, states where it was masked
    for seed in range(6):
        env.reset(seed=seed)
        for _ in range(40):
            masks = env.action_masks()
            for action in range(7):
                trial = copy.deepcopy(env)
                before = _state(trial)
                _, _, terminated, truncated, _ = trial.step(action)
                changed = terminated or _state(trial) != before
                assert changed == masks[action], f"{env_id}, seed {seed}: action {action} masked={not masks[action]}"
                checked[action] += not masks[action]
            legal = np.flatnonzero(masks)
            action = int(rng.choice(legal) if rng.random() < 0.9 else rng.integers(7))
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                break
    assert checked[2:6].min() > 0, f"random play on {env_id} masked no forward, pickup, drop or toggle: {checked}"
    assert checked[DONE] > 0


def test_keep_done_leaves_done_legal_for_the_envs_that_read_it() -> None:
    """GoToDoor's ``step`` reads ``done`` (and ends the episode on it): with ``keep_done`` it stays legal."""
    for keep_done in (True, False):
        env = MiniGridNoOpMask(gym.make("MiniGrid-GoToDoor-5x5-v0"), rules=["keep_done"] if keep_done else [])
        env.reset(seed=0)
        assert env.action_masks()[DONE] == keep_done


@pytest.mark.parametrize("env_id", ["MiniGrid-KeyCorridorS3R3-v0", "MiniGrid-MultiRoom-N2-S4-v0"])
def test_keep_doors_open_masks_exactly_the_toggles_that_close_a_door(env_id: str) -> None:
    """With ``keep_doors_open``, after each step of random walks the masks are the no-op masks but for ``toggle``, which
    is masked exactly when stepping it on a copy closes the door in front. The walks must meet open doors."""
    env, plain = MiniGridNoOpMask(gym.make(env_id), rules=["keep_doors_open"]), MiniGridNoOpMask(gym.make(env_id))
    rng = np.random.default_rng(3)
    closing, opening = 0, 0
    for seed in range(16):
        env.reset(seed=seed)
        plain.reset(seed=seed)
        for _ in range(100):
            masks, free = env.action_masks(), plain.action_masks()
            closes = False
            if free[TOGGLE]:
                trial = copy.deepcopy(plain)
                door = trial.unwrapped.grid.get(*trial.unwrapped.front_pos)
                was_open = door is not None and door.type == "door" and door.is_open
                trial.step(TOGGLE)
                closes = was_open and not door.is_open
                closing, opening = closing + int(closes), opening + int(not closes and door.type == "door")
            np.testing.assert_array_equal(masks, free & ~(np.arange(7) == TOGGLE) if closes else free)
            action = int(rng.choice(np.flatnonzero(masks)))
            _, _, terminated, truncated, _ = env.step(action)
            plain.step(action)
            if terminated or truncated:
                break
    assert closing > 5 and opening > 5, f"random play on {env_id} met {closing} open and {opening} closed doors to toggle"


@pytest.mark.parametrize("env_id", ["MiniGrid-KeyCorridorS3R3-v0", "MiniGrid-DoorKey-5x5-v0"])
def test_no_undo_masks_the_action_that_would_undo_the_last_step(env_id: str) -> None:
    """With ``no_undo``, after each step of random walks the masked undo (right after left, drop after pickup...) is the
    action that would put the state back as it was (toggle: a door toggled back); without it the masks are the no-op
    masks alone; a reset forgets the last step."""
    from sb3_dirpg.envs.minigrid.action_mask import UNDO

    env, plain = MiniGridNoOpMask(gym.make(env_id), rules=["no_undo"]), MiniGridNoOpMask(gym.make(env_id))
    rng = np.random.default_rng(1)
    undone = np.zeros(7, dtype=int)
    for seed in range(8):
        env.reset(seed=seed)
        plain.reset(seed=seed)
        np.testing.assert_array_equal(env.action_masks(), plain.action_masks())
        for _ in range(60):
            masks = env.action_masks()
            action = int(rng.choice(np.flatnonzero(masks)))
            before = _state(env)
            _, _, terminated, truncated, _ = env.step(action)
            plain.step(action)
            if terminated or truncated:
                break
            masks, free = env.action_masks(), plain.action_masks()
            undo = int(UNDO[action])
            if undo < 0 or not free[undo]:
                np.testing.assert_array_equal(masks, free)
                continue
            assert not masks[undo] and (masks | np.eye(7, dtype=bool)[undo] == free).all()
            trial = copy.deepcopy(env)
            trial.step(undo)
            door_back = action == 5 and env.unwrapped.grid.get(*env.unwrapped.front_pos).type == "door"
            assert door_back or _state(trial) == before, f"{env_id}: action {undo} does not undo {action}"
            undone[action] += 1
    assert undone[[0, 1, 3]].min() > 0, f"random play on {env_id} undid too little: {undone}"


def _grid_and_load(env: gym.Env) -> tuple:
    """:return: the grid and the agent's load (what a pickup, drop or toggle changes)"""
    base = env.unwrapped
    return None if base.carrying is None else tuple(base.carrying.encode()), base.grid.encode().tobytes()


def _paired_walks(
    env_id: str, rules: list[Any], seed: int, weights: Sequence[float], maps: int, steps: int
) -> Iterator[tuple[gym.Env, np.ndarray, np.ndarray, int | None]]:
    """Random walks on ``maps`` maps of ``env_id`` with the rule under test and with the no-op mask alone, the same
    legal actions drawn with ``weights``.

    :param env_id: a MiniGrid env id
    :param rules: the rules under test (``MiniGridNoOpMask``'s ``rules``)
    :param seed: the walks' seed
    :param weights: each action's weight among the legal ones, shape (7,)
    :param maps: the maps walked (their seeds 0, 1, ...)
    :param steps: the most steps a map
    :return: before each step, the env with the rule, its masks, the no-op masks, and the action stepped before (None
        at a map's start)
    """
    env, plain = MiniGridNoOpMask(gym.make(env_id), rules=rules), MiniGridNoOpMask(gym.make(env_id))
    rng, weights = np.random.default_rng(seed), np.asarray(weights)
    for map_seed in range(maps):
        env.reset(seed=map_seed)
        plain.reset(seed=map_seed)
        action = None
        for _ in range(steps):
            masks = env.action_masks()
            yield env, masks, plain.action_masks(), action
            legal = np.flatnonzero(masks)
            action = int(rng.choice(legal, p=weights[legal] / weights[legal].sum()))
            _, _, terminated, truncated, _ = env.step(action)
            plain.step(action)
            if terminated or truncated:
                break


@pytest.mark.parametrize("env_id", ["MiniGrid-KeyCorridorS3R3-v0", "MiniGrid-ObstructedMaze-2Dlh-v0"])
def test_no_repick_masks_exactly_the_pickups_that_undo_the_last_drop(env_id: str) -> None:
    """With ``no_repick``, after each step of random walks (pickups and drops favoured) the masks are the no-op masks but
    for ``pickup``, which is masked exactly when the last change was a drop and stepping the pickup on a copy gives back
    the grid and the load from before that drop. The walks must meet that after moves, and on ObstructedMaze (keys and
    balls out of their rooms) pickups of another object after a drop."""
    repicks, others = 0, 0
    walks = _paired_walks(env_id, ["no_repick"], 4, [1.0, 1.0, 1.0, 6.0, 3.0, 1.0, 1.0], maps=12, steps=120)
    previous, before_drop = None, None  # the grid and load before the last step, and before the last change if a drop
    for env, masks, free, last in walks:
        now = _grid_and_load(env)
        if last is None or now != previous:
            before_drop = previous if last == DROP else None
        previous = now
        undoes = False
        if free[PICKUP]:
            trial = copy.deepcopy(env)
            trial.unwrapped.step(PICKUP)
            undoes = before_drop is not None and _grid_and_load(trial) == before_drop
            repicks, others = repicks + int(undoes), others + int(before_drop is not None and not undoes)
        np.testing.assert_array_equal(masks, free & ~(np.arange(7) == PICKUP) if undoes else free)
    assert repicks > 5 and (others > 2 or "KeyCorridor" in env_id), f"{env_id}: {repicks} repicks, {others} other pickups"


@pytest.mark.parametrize("env_id", ["MiniGrid-KeyCorridorS3R3-v0", "MiniGrid-DoorKey-5x5-v0"])
def test_keep_key_masks_exactly_the_drops_of_a_key_whose_door_is_locked(env_id: str) -> None:
    """With ``keep_key``, after each step of random walks (pickups, drops and toggles favoured) the masks are the no-op
    masks but for ``drop``, which is masked exactly when the agent carries a key and the grid holds a locked door of its
    colour (read off the env's objects). The walks must meet such drops, and key drops after the door opened."""
    kept, freed = 0, 0
    for env, masks, free, _ in _paired_walks(env_id, ["keep_key"], 5, [1, 1, 1, 6, 2, 6, 1], maps=16, steps=150):
        base = env.unwrapped
        key = base.carrying is not None and base.carrying.type == "key"
        locked = key and any(
            obj is not None and obj.type == "door" and obj.is_locked and obj.color == base.carrying.color
            for obj in base.grid.grid
        )
        keeps = bool(free[DROP]) and locked
        kept, freed = kept + int(keeps), freed + int(bool(free[DROP]) and key and not locked)
        np.testing.assert_array_equal(masks, free & ~(np.arange(7) == DROP) if keeps else free)
    assert kept > 5 and freed > 5, f"{env_id}: {kept} key drops masked, {freed} left legal"


def test_keep_key_frees_the_drop_of_a_key_of_another_colour_and_after_its_door_opens() -> None:
    """``keep_key`` on a set-up DoorKey state (a locked yellow door, the agent facing an empty cell): the drop is masked
    with a yellow key in hand, legal with a red one, and legal with the yellow one once the door is unlocked."""
    from minigrid.core.world_object import Key

    env = MiniGridNoOpMask(gym.make("MiniGrid-DoorKey-5x5-v0"), rules=["keep_key"])
    base = env.unwrapped
    for seed in range(10):  # a map where the agent has an empty cell beside it
        env.reset(seed=seed)
        free = [d for d in range(4) if base.grid.get(*(base.agent_pos + DIR_TO_VEC[d])) is None]
        if free:
            break
    base.agent_dir = free[0]
    door = next(obj for obj in base.grid.grid if obj is not None and obj.type == "door")
    assert door.is_locked and door.color == "yellow"
    legal = {}
    for colour in ("yellow", "red"):
        base.carrying = Key(colour)
        legal[colour] = bool(env.action_masks()[DROP])
    door.is_locked, door.is_open = False, True
    base.carrying = Key("yellow")
    assert legal == {"yellow": False, "red": True} and env.action_masks()[DROP]


@pytest.mark.parametrize(
    "env_id, window",
    [
        ("MiniGrid-KeyCorridorS3R3-v0", 8), ("MiniGrid-ObstructedMaze-2Dlh-v0", 8), ("MiniGrid-KeyCorridorS3R3-v0", 24),
        ("MiniGrid-KeyCorridorS3R3-v0", None), ("MiniGrid-ObstructedMaze-2Dlh-v0", None),
    ],
)  # fmt: skip
def test_return_window_masks_exactly_the_moves_that_repeat_a_recent_state(env_id: str, window: int | None) -> None:
    """With ``return_window`` W, after each step of random walks a move is masked exactly when stepping it gives back a
    full state (cell, direction, load, grid) that the agent had before one of its last W moves since its last pickup,
    drop or toggle; where that would mask every action, nothing more is masked. With ``no_revisit`` (W None) a move is
    masked exactly when it gives back a state left more often, since the last change, than the least left one that a
    legal action reaches (any action but a move reaches a new state). The walks must meet the rule often, a move forward
    included, and ``no_revisit`` must also meet walks where every move returns."""
    # a move forward can return only after 5 moves or more; a window of 24 fills only on walks of 24 moves with no change
    rule = "no_revisit" if window is None else {"return_window": window}
    env, plain = MiniGridNoOpMask(gym.make(env_id), rules=[rule]), MiniGridNoOpMask(gym.make(env_id))
    rng = np.random.default_rng(2)
    returned, kept, forward, ranked = 0, 0, 0, 0
    for seed in range(6):
        env.reset(seed=seed)
        plain.reset(seed=seed)
        trail = [_state(env)]  # the states since the last change of the grid or the load, one per move
        for _ in range(80):
            masks, free = env.action_masks(), plain.action_masks()
            recent = trail[:-1] if window is None else trail[-1 - window : -1]
            left = np.zeros(7, dtype=int)  # the times each legal move's state was left
            for move in np.flatnonzero(free[:3]):
                trial = copy.deepcopy(plain)
                trial.step(int(move))
                left[move] = recent.count(_state(trial))
            back = left > 0
            if window is None:
                expected = free & ~(left > left[free].min())
                ranked += int(left[free].min() > 0 and (expected != free).any())
            else:
                expected = free & ~back if (free & ~back).any() else free
            np.testing.assert_array_equal(masks, expected)
            returned += int(back.any() and (free & ~back).any())
            kept += int(back.any() and not (free & ~back).any())
            forward += int(back[2] and (free & ~back).any())
            action = int(rng.choice(np.flatnonzero(masks)))
            _, _, terminated, truncated, _ = env.step(action)
            plain.step(action)
            if terminated or truncated:
                break
            trail = trail + [_state(env)] if action < 3 else [_state(env)]
    assert returned > 20 and forward > 0, f"random play on {env_id} met the rule {returned} times, {forward} forward"
    assert window is not None or ranked > 5, f"random play on {env_id} never had every move return to unequal counts"


def test_noop_mask_refuses_what_it_cannot_mask() -> None:
    """Bad input is refused with an error that names the argument, the rule or the spelling to use instead."""

    def make(*args: Any, **kwargs: Any) -> MiniGridNoOpMask:
        return MiniGridNoOpMask(gym.make("MiniGrid-Empty-5x5-v0"), *args, **kwargs)

    with pytest.raises(ValueError, match="needs a MiniGrid env"):
        MiniGridNoOpMask(gym.make("CartPole-v1"))
    with pytest.raises(ValueError, match=r"no mask rule named 'no_undoo'; the rules are \['keep_done', "):
        make(rules=["no_undoo"])
    for rules in ("no_undo", {"no_undo": None}, 3):
        with pytest.raises(ValueError, match="rules must be a list of rules"):
            make(rules=rules)
    with pytest.raises(ValueError, match="a rule is a name, {name: argument} or a MaskRule, got 3"):
        make(rules=[3])
    for length in (25, 0, -1, 2.0, True):
        with pytest.raises(ValueError, match="return_window must be an int from 1 to 24"):
            make(rules=[{"return_window": length}])
    with pytest.raises(ValueError, match=r"'return_window' needs its length: rules=\[\{'return_window': 8\}\]"):
        make(rules=["return_window"])
    with pytest.raises(ValueError, match="the rule 'no_undo' takes no argument, got True: name it alone"):
        make(rules=[{"no_undo": True}])
    with pytest.raises(ValueError, match="one-key mapping"):
        make(rules=[{"no_undo": None, "no_revisit": None}])
    with pytest.raises(ValueError, match="the rule 'no_undo' is given twice"):
        make(rules=["no_undo", "keep_key", "no_undo"])
    with pytest.raises(ValueError, match=r"no_revisit masks what return_window does and more, so \{'return_window': 8\}"):
        make(rules=["no_revisit", {"return_window": 8}])
    inner = make(rules=["no_undo"])
    for outer in (inner, DirectionImageObs(inner)):  # issue 81: the inner layer's no_undo was silently lost
        with pytest.raises(ValueError, match="already has a MiniGridNoOpMask layer.*give all the rules to one layer"):
            MiniGridNoOpMask(outer, rules=["no_revisit"])


def test_the_previous_releases_flags_warn_and_mean_their_rules() -> None:
    """``no_undo=True``, ``return_window=8`` and the other flags of the previous release still work: a
    DeprecationWarning names the ``rules=[...]`` they mean, the layer holds those rules and records them in the new
    spelling, and its masks are those of the new spelling. Flags that are off add nothing; a keyword that is not a rule's
    name is refused, naming ``rules=[...]``; a flag that is not a bool, or a window out of range, names itself."""
    flags = dict(keep_done=True, no_undo=True, return_window=8, keep_doors_open=True, no_repick=False, keep_key=True)
    rules = ["keep_done", "no_undo", {"return_window": 8}, "keep_doors_open", "keep_key"]
    with pytest.warns(DeprecationWarning, match=r"deprecated: pass rules=\['keep_done', 'no_undo', \{'return_window': 8\}"):
        old = MiniGridNoOpMask(gym.make("MiniGrid-DoorKey-5x5-v0"), **flags)
    new = MiniGridNoOpMask(gym.make("MiniGrid-DoorKey-5x5-v0"), rules=rules)
    assert old.rules == new.rules and old.compiled_flags == new.compiled_flags
    recorded = ["keep_done", "keep_doors_open", "keep_key", "no_undo", {"return_window": 8}]  # the registry's order
    assert old.spec.additional_wrappers[-1].kwargs == {"rules": recorded}
    with pytest.warns(DeprecationWarning):
        revisit = MiniGridNoOpMask(gym.make("MiniGrid-DoorKey-5x5-v0"), no_revisit=True, return_window=0)
    assert [rule.name for rule in revisit.rules] == ["no_revisit"]
    rng = np.random.default_rng(0)
    for seed in range(3):
        old.reset(seed=seed)
        new.reset(seed=seed)
        for _ in range(40):
            masks = old.action_masks()
            np.testing.assert_array_equal(masks, new.action_masks())
            action = int(rng.choice(np.flatnonzero(masks)))
            if old.step(action)[2] | new.step(action)[2]:
                break
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'no_undoo': the rules go in rules=\[\.\.\.\]"):
        MiniGridNoOpMask(gym.make("MiniGrid-Empty-5x5-v0"), no_undoo=True)
    for name, value in (("keep_done", "no"), ("no_undo", 1), ("keep_doors_open", None), ("no_repick", 1),
                        ("keep_key", "yes"), ("no_revisit", "yes")):  # fmt: skip
        with pytest.raises(ValueError, match=f"{name} must be a bool"):
            MiniGridNoOpMask(gym.make("MiniGrid-Empty-5x5-v0"), **{name: value})
    for window in (25, -1, 2.0, True):
        with pytest.raises(ValueError, match="return_window must be an int from 0 to 24"):
            MiniGridNoOpMask(gym.make("MiniGrid-Empty-5x5-v0"), return_window=window)


def test_rl_zoo_yaml_spells_the_rules() -> None:
    """rl-zoo3's hyperparameter YAML spells the rules as a list of names and one-key mappings; every MiniGridNoOpMask of
    the shipped ``dirpg.yml`` (and of the one setting) uses ``rules`` and builds without a DeprecationWarning."""
    import warnings
    from pathlib import Path

    import yaml

    from sb3_dirpg.envs.minigrid.setting import MASK_RULES, minigrid_setting

    kwargs = yaml.safe_load("rules: [no_undo, no_revisit, keep_doors_open, {return_window: 8}]")
    with pytest.raises(ValueError, match="no_revisit masks what return_window does"):
        MiniGridNoOpMask(gym.make("MiniGrid-DoorKey-5x5-v0"), **kwargs)
    kwargs = yaml.safe_load("rules: [no_undo, keep_doors_open, {return_window: 8}]")
    assert [rule.spec() for rule in MiniGridNoOpMask(gym.make("MiniGrid-DoorKey-5x5-v0"), **kwargs).rules] == [
        "keep_doors_open", "no_undo", {"return_window": 8}
    ]  # fmt: skip
    text = (Path(__file__).resolve().parents[1] / "sb3_dirpg" / "zoo_hyperparams" / "dirpg.yml").read_text()
    entries = yaml.load(text, Loader=yaml.UnsafeLoader)  # its numbers are tagged !!float
    found = [
        spec["sb3_dirpg.envs.MiniGridNoOpMask"]
        for entry in entries.values() if isinstance(entry, dict)
        for spec in entry.get("env_wrapper") or [] if isinstance(spec, dict) and "sb3_dirpg.envs.MiniGridNoOpMask" in spec
    ]  # fmt: skip
    assert len(found) >= 3 and all(list(kwargs) == ["rules"] for kwargs in found), found  # S5R3 (two lists), 2Dlh
    settings = (("MiniGrid-DoorKey-5x5-v0", list(MASK_RULES)), ("MiniGrid-GoToDoor-5x5-v0", [*MASK_RULES, "keep_done"]))
    for env_id, rules in settings:
        wrappers = minigrid_setting(env_id).env_wrapper
        kwargs = next(spec[key] for spec in wrappers if isinstance(spec, dict) for key in spec if key.endswith("NoOpMask"))
        assert kwargs == {"rules": rules}
        found.append(kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for kwargs in found:
            MiniGridNoOpMask(gym.make("MiniGrid-DoorKey-5x5-v0"), **kwargs)


def test_the_registry_holds_the_shipped_rules_in_the_order_they_act() -> None:
    """The registry's order (the order the rules act on both paths) is the one the module's and the page's tables give;
    every shipped rule has a compiled check, and its bits lie among those ``fill_compiled_masks`` dispatches on, apart
    from every other rule's."""
    from pathlib import Path

    from sb3_dirpg.envs.minigrid import mask_rules

    names = [rule.name for rule in mask_rules.mask_rules()]
    assert names == ["keep_done", "keep_doors_open", "keep_key", "no_undo", "no_repick", "return_window", "no_revisit"]
    page = (Path(__file__).resolve().parents[1] / "docs" / "action_masks.md").read_text()
    for text, pattern in ((mask_rules.__doc__, r"^``\{?(\w+)"), (page, r"^\| `\{?(\w+)")):
        assert [name for name in re.findall(pattern, text, re.MULTILINE) if name != "rule"] == names
    seen = 0
    for rule in mask_rules.mask_rules():
        assert rule.compiled is not None and rule.bit and not rule.bit & ~mask_rules.COMPILED_BITS and not rule.bit & seen
        seen |= rule.bit
    assert seen == mask_rules.COMPILED_BITS


@dataclass(frozen=True)
class _NoSameTurn(MaskRule):
    """A test-local rule: the turn just taken may not be taken again right away (its memory: that turn, -1 for none)."""

    remembers: ClassVar[bool] = True

    def start(self) -> int:
        return -1

    def remember(self, memory: int, step: StepFacts) -> int:
        return step.action if step.action in (0, 1) else -1

    def restrict(self, memory: int, view: MaskView, masks: np.ndarray) -> None:
        if memory >= 0:
            masks[memory] = False


@pytest.fixture
def no_same_turn() -> Iterator[MaskRule]:
    """:return: the test-local rule, registered through the public registry for the test only"""
    rule = register_mask_rule(_NoSameTurn("no_same_turn", "mask the turn just taken"))
    try:
        yield rule
    finally:
        unregister_mask_rule("no_same_turn")


def test_a_rule_added_in_one_place_acts_on_the_env_path_and_the_compiled_path_refuses_it(no_same_turn: MaskRule) -> None:
    """A rule is one object: a ``MaskRule`` subclass with its env-path check and its memory, registered with
    ``register_mask_rule``, is spelled by name in ``rules`` like the shipped ones and acts after them, its memory kept
    by the layer and restored by snapshots. It has no compiled check, so the compiled simulator refuses the chain and
    names the rule; a compiled check whose bit ``fill_compiled_masks`` does not dispatch on, or a bit taken, is refused
    on registration."""
    from sb3_dirpg.envs.minigrid.compiled import compiled_unsupported
    from sb3_dirpg.envs.minigrid.mask_rules import KEEP_KEY_BIT, mask_rules
    from sb3_dirpg.simulator import SimulatorWrapper

    assert mask_rules()[-1] is no_same_turn and mask_rule("no_same_turn") is no_same_turn
    env = MiniGridNoOpMask(make_minigrid_env("MiniGrid-DoorKey-5x5-v0").env, rules=["no_same_turn", "keep_doors_open"])
    assert [rule.name for rule in env.rules] == ["keep_doors_open", "no_same_turn"]  # the registry's order
    plain = MiniGridNoOpMask(make_minigrid_env("MiniGrid-DoorKey-5x5-v0").env, rules=["keep_doors_open"])
    rng = np.random.default_rng(0)
    masked = 0
    for seed in range(4):
        env.reset(seed=seed)
        plain.reset(seed=seed)
        last = None
        for _ in range(40):
            masks, free = env.action_masks(), plain.action_masks()
            expected = free.copy()
            if last in (0, 1):
                expected[last] = False
            np.testing.assert_array_equal(masks, expected)
            masked += int(last in (0, 1) and bool(free[last]))
            last = int(rng.choice(np.flatnonzero(masks)))
            if env.step(last)[2] | plain.step(last)[2]:
                break
    assert masked > 10
    simulator = SimulatorWrapper(DirectionImageObs(MiniGridNoOpMask(
        make_minigrid_env("MiniGrid-DoorKey-5x5-v0").env, rules=["no_same_turn", "keep_doors_open"]
    )))  # fmt: skip
    simulator.reset(seed=0)
    simulator.step(0)
    snapshot = simulator.snapshot()
    assert not simulator.action_masks()[0]
    simulator.step(1)
    assert simulator.action_masks()[0] and not simulator.action_masks()[1]
    simulator.restore(snapshot)
    assert not simulator.action_masks()[0] and simulator.action_masks()[1]
    reason = compiled_unsupported(simulator, None)
    assert reason is not None and "rules ['no_same_turn'] have no compiled check" in reason
    with pytest.raises(ValueError, match=r"the rules \['no_same_turn'\] have no compiled check"):
        _ = simulator.env.env.compiled_flags
    with pytest.raises(ValueError, match="the name 'no_same_turn' is taken"):
        register_mask_rule(_NoSameTurn("no_same_turn", "again"))
    with pytest.raises(ValueError, match=r"overlap those of \['keep_key'\]"):
        register_mask_rule(_NoSameTurn("other_turn", "a taken bit", bit=KEEP_KEY_BIT))
    with pytest.raises(ValueError, match="fill_compiled_masks dispatches on no bit 0x800: give it a branch there"):
        register_mask_rule(_NoSameTurn("other_turn", "an unknown bit", bit=1 << 11, compiled=lambda *args: None))
    with pytest.raises(ValueError, match="is not the registered 'no_undo'"):
        MiniGridNoOpMask(gym.make("MiniGrid-Empty-5x5-v0"), rules=[_NoSameTurn("no_undo", "an impostor")])
    assert "other_turn" not in [rule.name for rule in mask_rules()]


def test_dirpg_trains_and_evaluates_among_the_legal_actions_only() -> None:
    """With the mask in the chain: the search never steps a masked action, the update's steps carry the masks, and the
    held-out evaluation's greedy and sampled actions are legal (the evaluation reads the envs' masks)."""

    def make() -> gym.Env:
        env = make_minigrid_env("MiniGrid-DoorKey-5x5-v0")
        return DirectionImageObs(MiniGridNoOpMask(env.env))

    model = DirPG("MultiInputPolicy", make(), seed=0, search_budget=300, batch_episodes=4, max_episode_steps=40,
                  policy_kwargs=dict(features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False))  # fmt: skip
    result = model.search(list(range(4)))
    nodes = result.tree.nodes
    count = int(nodes.count[0])
    parents, actions = nodes.parent[:count], nodes.action[:count]
    stepped = actions >= 0
    assert stepped.sum() > 100
    assert nodes.legal[parents[stepped], actions[stepped]].all(), "the search stepped a masked action"
    assert not nodes.legal[:count].all(), "no state had a masked action: the check is empty"
    model.learn(600)

    class Recording(gym.Wrapper):
        """Records whether each action taken was legal."""

        def __init__(self, env: gym.Env) -> None:
            super().__init__(env)
            self.legal: list[bool] = []

        def step(self, action: int) -> tuple:
            self.legal.append(bool(action_masks_of(self.env)[action]))
            return self.env.step(action)

    envs = [Recording(make()) for _ in range(6)]
    for greedy in (True, False):
        evaluate_held_out(model, envs, list(range(500, 506)), deterministic=greedy)
    taken = [legal for env in envs for legal in env.legal]
    assert len(taken) > 100 and all(taken)
