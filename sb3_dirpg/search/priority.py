"""Which region the ``a_dir`` search pops next: the priorities, one named choice each (as the stopping rules).

* ``"gumbel"`` (:class:`GumbelPriority`, the default): the region's Gumbel ``G``, the order of top-down sampling;
* ``"astar"`` (:class:`AStarPriority`): ``G + ε·(L + α·U)``, with ``L`` the return so far and ``U`` the heuristic's
  bound on the return-to-go, weighted by ``alpha`` in [0, 1] (1 is A*, 0 leaves the heuristic out).

Each may follow a popped region down its sampled child chain to the end of a trajectory before popping another
(``depth_first=True``, the authors' option), so that every pop completes a trajectory.

A priority is spelled as its object, its name, or, in YAML files, a one-key mapping ``{astar: {alpha: 0.5}}``
(:func:`priority_rule`).
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar

from sb3_dirpg.search.choices import NamedChoice, read_choice
from sb3_dirpg.search.config import check_flag

__all__ = [
    "LEGACY_PRIORITY_SETTINGS", "PRIORITY_RULES", "AStarPriority", "GumbelPriority", "Priority", "priority_rule",
    "replace_legacy_priority",
]  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Priority(NamedChoice):
    """The order in which the ``a_dir`` search pops regions (base class: the Gumbel's).

    :param depth_first: follow every popped region's sampled child chain to the end of a trajectory before popping
        another (the authors' depth-first option)
    """

    name: ClassVar[str] = "gumbel"
    depth_first: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "depth_first", check_flag("depth_first", self.depth_first, type(self).__name__))

    @property
    def alpha(self) -> float:
        """:return: the weight of the heuristic in the priority (0: none)"""
        return 0.0


@dataclass(frozen=True, kw_only=True)
class GumbelPriority(Priority):
    """Pop the region with the largest Gumbel ``G``: the order of top-down sampling (the paper's default)."""

    name: ClassVar[str] = "gumbel"


@dataclass(frozen=True, kw_only=True)
class AStarPriority(Priority):
    """Pop the region with the largest ``G + ε·(L + α·U)``: ``L`` the return so far, ``U`` the heuristic's bound on the
    return-to-go.

    :param alpha: the weight of the bound, in [0, 1] (1 is A*; 0 leaves the heuristic out, which then only prunes)
    :param depth_first: see :class:`Priority`
    """

    name: ClassVar[str] = "astar"
    alpha: float = 0.0  # type: ignore[assignment]

    def __post_init__(self) -> None:
        super().__post_init__()
        alpha = self.alpha
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0.0 <= alpha <= 1.0:
            raise ValueError(f"AStarPriority: alpha must lie in [0, 1] (1 is A*, 0 leaves the heuristic out), got {alpha!r}")
        object.__setattr__(self, "alpha", float(alpha))


#: the priorities by name
PRIORITY_RULES: dict[str, type[Priority]] = {rule.name: rule for rule in (GumbelPriority, AStarPriority)}


def priority_rule(value: Any, owner: str = "") -> Priority:
    """Read a priority from how it is spelled.

    :param value: a :class:`Priority`, a name (``"gumbel"``, ``"astar"``), or a one-key mapping of a name to the rule's
        fields, as a YAML file writes it (``{"astar": {"alpha": 0.5}}``)
    :param owner: who takes it (``"DirPG"``), for the message
    :return: the priority
    :raises ValueError: naming the priorities, for anything else
    """
    if isinstance(value, Priority):
        return value
    return read_choice(value, PRIORITY_RULES, "priority", owner, "AStarPriority(alpha=0.5)")


#: the settings that spelled the priority before it was one setting
LEGACY_PRIORITY_SETTINGS = ("alpha", "depth_first")


def replace_legacy_priority(settings: dict[str, Any], owner: str) -> dict[str, Any]:
    """Settings with ``alpha`` and ``depth_first`` of earlier releases folded into the ``priority`` they spelled, with a
    warning that names it (for hyperparameter files, ``load`` keywords and saved models written before the rule).

    :param settings: the settings (not modified)
    :param owner: who reads them, for the message
    :return: a new dict, with ``priority`` in place of ``alpha`` and ``depth_first`` (unchanged when it has neither)
    :raises ValueError: for ``alpha`` or ``depth_first`` beside a priority object or mapping, or an ``alpha`` above 0
        with the Gumbel priority
    """
    legacy = {name: settings[name] for name in LEGACY_PRIORITY_SETTINGS if name in settings}
    if not legacy:
        return dict(settings)
    named = settings.get("priority", "gumbel")
    if not isinstance(named, str):
        raise ValueError(f"{owner}: priority={named!r} and {legacy}, which it replaces, are both given: keep priority")
    out = {key: value for key, value in settings.items() if key not in LEGACY_PRIORITY_SETTINGS}
    fields = dict(legacy) if named == "astar" else {k: v for k, v in legacy.items() if k != "alpha"}
    if named != "astar" and legacy.get("alpha", 0.0) not in (0, 0.0):
        raise ValueError(f"{owner}: alpha={legacy['alpha']!r} weighs the heuristic in priority 'astar' only, and priority "
                         f"is {named!r}: write priority: {{astar: {{alpha: {legacy['alpha']!r}}}}}")  # fmt: skip
    rule = priority_rule({named: fields} if fields else named, owner)
    out["priority"] = rule
    warnings.warn(
        f"{owner}: {legacy} with priority={named!r} are the settings of releases before the priority rule; they are read "
        f"as priority={rule.spelling!r}, the same searches. Write priority: {rule.spelling!r} instead "
        "(sb3_dirpg.search.priority)",
        FutureWarning,
        stacklevel=3,
    )
    return out
