"""When an episode's search ends before its budget: the stopping rules, one named choice each.

The search asks its rule three questions (in the spirit of mctx's injected policies): does ``a_opt`` end the search, how
many interactions may the ``a_dir`` search spend after it, and does a trajectory found after it end the search. Every
rule also ends at an empty queue or a spent budget.

* ``"improvement"`` (:class:`ImprovementStop`, the default): at the first trajectory with ``D > D(a_opt)``
  (appendix C of the paper);
* ``"budget"`` (:class:`BudgetStop`): never before the budget is spent, so ``a_dir`` is the exact argmax of ``D`` when
  the budget suffices;
* ``"success"`` (:class:`SuccessStop`): at the first trajectory that ends in success (the authors' "break on goal").
  ``SuccessStop(refine=n)``: where ``a_opt`` itself succeeds, search on for up to ``n`` interactions for a larger ``D``
  (a shorter success, where the return is discounted) and end at the first one (beyond the paper; docs/algorithm.md);
  ``SuccessStop(improvement=True)`` also ends at the first improvement.

A rule is spelled as its object, its name, or, in YAML files, a one-key mapping ``{success: {refine: 100}}``
(:func:`stop_rule`).
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from sb3_dirpg.search.choices import NamedChoice, read_choice

__all__ = [
    "LEGACY_STOP_FLAGS", "STOP_RULES", "BudgetStop", "ImprovementStop", "StopRule", "SuccessStop", "replace_legacy_flags",
    "stop_from_flags", "stop_rule",
]  # fmt: skip


@dataclass(frozen=True)
class StopRule(NamedChoice):
    """The rule that ends an episode's search before its budget is spent (base class: never, as ``"budget"``).

    The search calls its three methods; a subclass overrides those it changes.
    """

    #: the name the rule is spelled with
    name: ClassVar[str] = "budget"

    def ends_at_opt(self, success: bool) -> bool:
        """:param success: whether ``a_opt`` ended in success
        :return: whether ``a_opt`` ends the search (the update of the episode is then zero)"""
        return False

    def budget_after_opt(self, budget: int, success: bool) -> int:
        """:param budget: the search budget (interactions after ``a_opt``)
        :param success: whether ``a_opt`` ended in success
        :return: the interactions the ``a_dir`` search may spend"""
        return budget

    def ends_after_opt(self, improved: bool, success: bool, success_opt: bool) -> bool:
        """:param improved: whether the trajectory found after ``a_opt`` has the largest ``D`` so far, above ``a_opt``'s
        :param success: whether it ended in success
        :param success_opt: whether ``a_opt`` ended in success
        :return: whether it ends the search"""
        return False


@dataclass(frozen=True)
class BudgetStop(StopRule):
    """Spend the whole budget (or empty the queue): ``a_dir`` is the exact argmax of ``D`` when the budget suffices."""

    name: ClassVar[str] = "budget"


@dataclass(frozen=True)
class ImprovementStop(StopRule):
    """End at the first trajectory with ``D > D(a_opt)`` (appendix C of the paper; the default)."""

    name: ClassVar[str] = "improvement"

    def ends_after_opt(self, improved: bool, success: bool, success_opt: bool) -> bool:
        """:param improved: see :meth:`StopRule.ends_after_opt`
        :param success: see :meth:`StopRule.ends_after_opt`
        :param success_opt: see :meth:`StopRule.ends_after_opt`
        :return: whether the trajectory improved on ``a_opt``'s ``D``"""
        return improved


@dataclass(frozen=True)
class SuccessStop(StopRule):
    """End at the first trajectory that ends in success (``info["is_success"]``; the authors' "break on goal"). The
    budget left is neither spent nor counted.

    :param refine: where ``a_opt`` itself succeeds, the interactions to search on for a larger ``D`` (a shorter success,
        where the return is discounted), ending at the first success that improves (capped at the search budget; beyond
        the paper, docs/algorithm.md). 0: end at ``a_opt``, with a zero update for the episode
    :param improvement: also end at the first trajectory with ``D > D(a_opt)``, as ``"improvement"`` does
    """

    name: ClassVar[str] = "success"
    refine: int = 0
    improvement: bool = False

    def __post_init__(self) -> None:
        refine = self.refine
        if isinstance(refine, bool) or not isinstance(refine, numbers.Real) or int(refine) != refine or refine < 0:
            raise ValueError(
                f"SuccessStop: refine must be a non-negative integer number of interactions (0: end at a successful "
                f"a_opt), got {refine!r} of type {type(refine).__name__}"
            )
        if not isinstance(self.improvement, bool):
            raise ValueError(f"SuccessStop: improvement must be a bool (True or False), got {self.improvement!r}")
        object.__setattr__(self, "refine", int(refine))

    def ends_at_opt(self, success: bool) -> bool:
        """:param success: see :meth:`StopRule.ends_at_opt`
        :return: whether ``a_opt`` succeeded and is not refined"""
        return success and self.refine == 0

    def budget_after_opt(self, budget: int, success: bool) -> int:
        """:param budget: see :meth:`StopRule.budget_after_opt`
        :param success: see :meth:`StopRule.budget_after_opt`
        :return: the refining budget after a successful ``a_opt`` (at most ``budget``), else ``budget``"""
        return min(budget, self.refine) if success and self.refine > 0 else budget

    def ends_after_opt(self, improved: bool, success: bool, success_opt: bool) -> bool:
        """:param improved: see :meth:`StopRule.ends_after_opt`
        :param success: see :meth:`StopRule.ends_after_opt`
        :param success_opt: see :meth:`StopRule.ends_after_opt`
        :return: whether it is a success (an improving one, when refining a successful ``a_opt``), or an improvement
            with ``improvement``"""
        if self.improvement and improved:
            return True
        if not success:
            return False
        return improved if success_opt and self.refine > 0 else True


#: the rules by name
STOP_RULES: dict[str, type[StopRule]] = {rule.name: rule for rule in (ImprovementStop, BudgetStop, SuccessStop)}


def stop_rule(value: Any, owner: str = "") -> StopRule:
    """Read a stopping rule from how it is spelled.

    :param value: a :class:`StopRule`, a name (``"improvement"``, ``"budget"``, ``"success"``), or a one-key mapping of a
        name to the rule's fields, as a YAML file writes it (``{"success": {"refine": 100}}``)
    :param owner: who takes it (``"DirPG"``), for the message
    :return: the rule
    :raises ValueError: naming the rules, for anything else
    """
    if isinstance(value, StopRule):
        return value
    return read_choice(value, STOP_RULES, "stop", owner, "SuccessStop(refine=100)")


def stop_from_flags(
    early_stop: bool, stop_on_success: bool, refine_success: bool, refine_budget: int | None, budget: int
) -> StopRule:
    """The rule that the four flags of earlier releases (DirPG's settings until the stop rule) spelled.

    :param early_stop: stop at the first improvement over ``a_opt``
    :param stop_on_success: stop at the first success
    :param refine_success: with ``stop_on_success``, refine a successful ``a_opt``
    :param refine_budget: the refining budget (None: ``budget``)
    :param budget: the search budget
    :return: the rule with the same searches
    :raises ValueError: for a ``refine_budget`` that is not a positive integer or None
    """
    if refine_budget is not None and (
        isinstance(refine_budget, bool) or not isinstance(refine_budget, numbers.Real) or int(refine_budget) != refine_budget
        or refine_budget < 1
    ):  # fmt: skip
        raise ValueError(f"refine_budget must be a positive number of interactions or None, got {refine_budget!r}")
    if not stop_on_success:
        return ImprovementStop() if early_stop else BudgetStop()
    refine = (int(budget) if refine_budget is None else int(refine_budget)) if refine_success else 0
    return SuccessStop(refine=refine, improvement=bool(early_stop))


#: the settings that spelled the stopping rule before it was one setting, with their defaults then
LEGACY_STOP_FLAGS: dict[str, Any] = {
    "early_stop": True, "stop_on_success": False, "refine_success": False, "refine_budget": None,
}  # fmt: skip


def replace_legacy_flags(settings: dict[str, Any], owner: str, budget: int = 100) -> dict[str, Any]:
    """Settings with the four flags of earlier releases replaced by the ``stop`` rule they spelled, with a warning that
    names it (for hyperparameter files and saved models written before the rule).

    :param settings: the settings (not modified)
    :param owner: who reads them, for the message (``"DirPG.load"``, a YAML entry)
    :param budget: the search budget where ``settings`` give none (``refine_success`` without ``refine_budget`` refines
        within it)
    :return: a new dict, with ``stop`` in place of the flags (unchanged when it has none)
    :raises ValueError: for flags given beside ``stop``
    """
    legacy = {name: settings[name] for name in LEGACY_STOP_FLAGS if name in settings}
    if not legacy:
        return dict(settings)
    if "stop" in settings:
        raise ValueError(f"{owner}: stop={settings['stop']!r} and the flags it replaces, {legacy}, are both given: keep stop")
    for name, value in legacy.items():
        if name != "refine_budget" and not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"{owner}: {name} must be a bool (True or False), got {value!r} of type {type(value).__name__}")
    out = {key: value for key, value in settings.items() if key not in LEGACY_STOP_FLAGS}
    rule = stop_from_flags(**{**LEGACY_STOP_FLAGS, **legacy}, budget=int(settings.get("search_budget", budget)))
    out["stop"] = rule
    warnings.warn(
        f"{owner}: {legacy} are the stopping flags of releases before the stopping rule; they are read as "
        f"stop={rule.spelling!r}, the same searches. Write stop: {rule.spelling!r} instead (sb3_dirpg.search.stopping)",
        FutureWarning,
        stacklevel=3,
    )
    return out
