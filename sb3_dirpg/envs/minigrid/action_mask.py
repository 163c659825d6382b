"""Action masks for MiniGrid: the actions that the agent's own view shows would change nothing, and the rules on top.

The no-op rule reads two encoded cells, the one the agent faces and the one it stands on, where MiniGrid's view draws
what it carries. The env path reads them off the env's state; the compiled simulator reads them off the observations it
makes (the view's cells ``(V // 2, V - 2)`` and ``(V // 2, V - 1)``), also inside its compiled search loop. The rules
on top (``rules=[...]``) are the objects of :mod:`~sb3_dirpg.envs.minigrid.mask_rules`, one registry for both paths.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import gymnasium as gym
import numpy as np

from sb3_dirpg.envs.minigrid.fast_obs import front_cell
from sb3_dirpg.envs.minigrid.mask_rules import (  # noqa: F401 (re-exported)
    N_MINIGRID_ACTIONS,
    UNDO,
    MaskRule,
    MaskView,
    RuleSpec,
    StepFacts,
    encoded_cell,
    fill_compiled_masks,
    fill_noop_action_masks,
    noop_action_masks,
    resolve_rules,
)


class MiniGridNoOpMask(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """sb3-contrib's ``action_masks()`` for MiniGrid: masks the actions that would change nothing (walking into a wall,
    a pickup with nothing in front, a drop with nothing in hand, toggling a wall or a locked door without its key,
    ``done``), as :func:`~sb3_dirpg.envs.minigrid.mask_rules.fill_noop_action_masks` says, and what each of its
    ``rules`` masks on top (:mod:`~sb3_dirpg.envs.minigrid.mask_rules`):

    * ``keep_done``: leave ``done`` legal, for envs whose ``step`` reads it (GoToDoor, GoToObject);
    * ``keep_doors_open``: the toggle that would close an open door;
    * ``keep_key``: dropping a key while a door of its colour is locked (for envs where nothing blocks that door, such
      as KeyCorridor; not ObstructedMaze);
    * ``no_undo``: the action that would undo the last step;
    * ``no_repick``: picking up the object the agent dropped with its last change (a drop, then only moves);
    * ``{return_window: W}``: the moves that would return the agent to a cell and direction it had within its last
      ``W`` moves (1 to 24);
    * ``no_revisit``: the moves that would return it to a cell and direction it had at any time since its last pickup,
      drop or toggle that changed something (a window with no bound: leave ``return_window`` out), and where every
      legal action is such a move, those to the poses it left more often than the least left one.

    The no-op masks are a function of the agent's own observation (the cell it faces and what it carries are in its
    view), so a policy that applies them is still a policy of the observation; with ``no_undo`` it is a policy of the
    observation and the agent's last action, with ``return_window``, ``no_revisit`` or ``no_repick`` of its moves, with
    ``keep_key`` of the state. A memoryless greedy policy whose most likely action does nothing, undoes the last one or
    closes a loop (turning four times, pacing, patrolling a corridor, dropping a key and taking it back) repeats it for
    ever; with the masks it cannot. DirPG's search and evaluation apply the masks; the compiled simulator computes the
    same masks from its observations and the actions it steps.

    The rule is that of ``MiniGridEnv.step``, which KeyCorridor, ObstructedMaze, DoorKey and the other envs of the
    compiled simulator keep (tests/test_noop_mask.py checks it by stepping every action). An env whose ``step`` gives an
    action another effect loses it where the rule masks it: GoToDoor ends the episode on ``toggle``.

    The previous release's keywords (``no_undo=True``, ``return_window=8``, ...) are still accepted, with a
    DeprecationWarning that names the ``rules=[...]`` they mean.

    :param env: a MiniGrid env (possibly wrapped)
    :param rules: the rules on top of the no-op masks: registered names (``"no_undo"``), ``{name: argument}``
        mappings (``{"return_window": 8}``) or :class:`~sb3_dirpg.envs.minigrid.mask_rules.MaskRule` objects; they act
        in the registry's order, whatever the order given
    :param flags: deprecated: the previous release's ``keep_done``, ``no_undo``, ``return_window``, ``no_revisit``,
        ``keep_doors_open``, ``no_repick`` and ``keep_key`` keywords
    """

    def __init__(self, env: gym.Env, rules: Iterable[RuleSpec] = (), **flags: Any) -> None:
        chosen = resolve_rules(rules, flags)
        gym.utils.RecordConstructorArgs.__init__(self, rules=[rule.spec() for rule in chosen])
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
                    "act: give all the rules to one layer, e.g. MiniGridNoOpMask(env, rules=['no_undo', 'no_revisit'])"
                )
            inner = inner.env
        #: the rules on top of the no-op masks, in the order they act
        self.rules: tuple[MaskRule, ...] = chosen
        self._base = base
        self._remembers = any(rule.remembers for rule in chosen)
        # episode state (snapshots keep it): each rule's memory of the agent's own steps (immutable values)
        self._memory: tuple[Any, ...] = tuple(rule.start() for rule in chosen)

    def rule(self, name: str) -> MaskRule | None:
        """:param name: a rule's name
        :return: the layer's rule of that name (with its argument), None where the layer does not apply it"""
        return next((rule for rule in self.rules if rule.name == name), None)

    @property
    def counts_poses(self) -> bool:
        """:return: whether a rule reads the times each pose was left (the compiled simulator keeps them then)"""
        return any(rule.counts_poses for rule in self.rules)

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """:param kwargs: ``reset``'s arguments
        :return: the first observation and info"""
        self._memory = tuple(rule.start() for rule in self.rules)
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """:param action: a MiniGrid action
        :return: the env's step"""
        if not self._remembers:
            return self.env.step(action)
        base = self._base
        before = (int(base.agent_pos[0]), int(base.agent_pos[1]), int(base.agent_dir))
        carried, front = encoded_cell(base.carrying), encoded_cell(front_cell(base))
        front_index = int(base.front_pos[1]) * base.width + int(base.front_pos[0])
        result = self.env.step(action)
        facts = StepFacts(base, int(action), before, front_index, front, carried)
        self._memory = tuple(
            [rule.remember(memory, facts) if rule.remembers else memory for rule, memory in zip(self.rules, self._memory)]
        )
        return result

    def action_masks(self) -> np.ndarray:
        """:return: the legal actions of the current state, bool, shape (7,)"""
        base = self._base
        view = MaskView(base, encoded_cell(front_cell(base)), encoded_cell(base.carrying))
        masks = noop_action_masks(view.front, view.carried)[0]
        for rule, memory in zip(self.rules, self._memory):
            rule.restrict(memory, view, masks)
        return masks

    @property
    def compiled_flags(self) -> int:
        """:return: the rules for the compiled simulator: each rule's bits
            (:meth:`~sb3_dirpg.envs.minigrid.mask_rules.MaskRule.compiled_value`), which
            :func:`~sb3_dirpg.envs.minigrid.mask_rules.fill_compiled_masks` dispatches on
        :raises ValueError: where a rule has no compiled check"""
        missing = [rule.name for rule in self.rules if rule.compiled is None]
        if missing:
            raise ValueError(f"MiniGridNoOpMask: the rules {missing} have no compiled check: run the env path")
        value = 0
        for rule in self.rules:
            value |= rule.compiled_value()
        return value
