"""The settings of a search: :class:`SearchConfig`, the one place that checks them, and :class:`Params`, their form
for the compiled kernels."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from sb3_dirpg.search.stopping import ImprovementStop, StopRule, stop_rule

PRIORITIES = ("gumbel", "astar")
GUMBEL, ASTAR = 0, 1  # the a_dir priority, as the kernels see it


def check_flag(name: str, value: object, owner: str = "") -> bool:
    """Refuse a flag that is not a bool: a string such as ``"false"`` (quoted in YAML) is truthy, and would silently
    switch the flag on.

    :param name: the flag's name, for the message
    :param value: its value
    :param owner: who takes it (``"DirPG"``), for the message
    :return: the value as a Python bool (numpy bools are taken)
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    hint = " (in YAML write true or false without quotes)" if isinstance(value, str) else ""
    raise ValueError(
        f"{owner + ': ' if owner else ''}{name} must be a bool (True or False), got {value!r} of type "
        f"{type(value).__name__}{hint}"
    )


#: the flags of :class:`SearchConfig`
FLAGS = ("prune", "record_trajectories", "depth_first", "compiled_loop")



def breadth_first_astar(priority: str, epsilon: float, depth_first: bool) -> str | None:
    """Why the A* priority with ε < 0 searches breadth first, unless each popped region is followed to the end of a
    trajectory.

    With ε < 0, a step that earns reward r lowers the A* priority ``G + ε·(L + α·lower)`` of the path it extends by
    ``|ε|·r``, while the bound on the rest (``lower``) stays loose (0 for rewards that are never negative). So the
    search keeps leaving the path it extends for a shallower region: it spends a limited budget on partial paths and
    completes no trajectory after ``a_opt`` (on CartPole with ε = -1, budget 100 and a finite bound, 0 of 16 episodes
    improved; with ``depth_first=True``, 10 of 16, and 8 of 16 with the Gumbel priority). It is still exact: with the
    budget to finish, it finds the same ``a_dir``.

    :param priority: ``"astar"`` or ``"gumbel"``
    :param epsilon: ε of ``D = G + ε·R``
    :param depth_first: whether a popped region is followed to the end of a trajectory
    :return: the reason and the fix, for ``priority="astar"``, ``epsilon < 0`` and ``depth_first=False``; else None
    """
    if priority == "astar" and epsilon < 0 and not depth_first:
        return (
            f"priority='astar' with epsilon={epsilon} (risk averse) searches breadth first: each step's reward lowers the "
            "priority of the path it extends, so a limited budget completes few or no trajectories after a_opt. Pass "
            "depth_first=True (each popped region is followed to the end of a trajectory; DirPG: priority={'astar': "
            "{'depth_first': True}}), or priority='gumbel'"
        )
    return None


@dataclass(frozen=True)
class SearchConfig:
    """Settings of one DirPG search.

    :param epsilon: the ε of the direct objective ``D = G + ε·R`` (non-zero; negative is risk averse)
    :param budget: environment interactions allowed for the ``a_dir`` search, after the ``T`` spent on ``a_opt``
    :param priority: ``"gumbel"`` (priority ``G``) or ``"astar"`` (priority ``G + ε·(L + α·U)``)
    :param alpha: weight of the heuristic bound in the ``"astar"`` priority, in [0, 1]
    :param prune: drop regions whose bound on ``D`` cannot beat the best ``D`` found so far
    :param stop: when an episode's search ends before its budget (:mod:`sb3_dirpg.search.stopping`): a
        :class:`~sb3_dirpg.search.stopping.StopRule` or its spelling, ``"improvement"`` (at the first trajectory with
        ``D > D(a_opt)``), ``"budget"`` or ``"success"``
    :param gamma: discount of the return
    :param horizon: maximum trajectory length (a trajectory is cut there), or None to rely on the simulator
    :param max_trajectories: stop a search after this many complete trajectories (Gumbel top-K), or None
    :param record_trajectories: keep every complete trajectory (leaf, G, return, D) in the result
    :param depth_first: once a region is popped, follow its sampled child chain to the end of a trajectory before
        popping another region (the authors' depth-first option): every pop from the queue completes a trajectory.
        It changes nothing before ``a_opt`` is found (the child of the best region is the best region).
    :param compiled_loop: let a simulator that steps in compiled code run the lockstep iterations itself, many per call
        (:mod:`sb3_dirpg.search.fused`; the same search, with fewer Python calls); False runs one Python iteration per
        step, as with any other simulator
    """

    epsilon: float = 1.0
    budget: int = 100
    priority: str = "gumbel"
    alpha: float = 0.0
    prune: bool = True
    stop: StopRule | str = ImprovementStop()
    gamma: float = 1.0
    horizon: int | None = None
    max_trajectories: int | None = None
    record_trajectories: bool = False
    depth_first: bool = False
    compiled_loop: bool = True

    def __post_init__(self) -> None:
        for flag in FLAGS:
            check_flag(flag, getattr(self, flag))
        if not np.isfinite(self.epsilon) or self.epsilon == 0:
            raise ValueError(f"epsilon must be a finite non-zero number (negative is risk averse), got {self.epsilon!r}")
        if int(self.budget) != self.budget or self.budget < 0:
            raise ValueError(f"search budget must be a non-negative integer number of interactions, got {self.budget!r}")
        object.__setattr__(self, "stop", stop_rule(self.stop))
        if self.priority not in PRIORITIES:
            raise ValueError(f"priority must be one of {PRIORITIES}, got {self.priority!r}")
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1] (1 is A*, 0 ignores the heuristic), got {self.alpha!r}")
        if not 0.0 < self.gamma <= 1.0:
            raise ValueError(f"gamma must lie in (0, 1], got {self.gamma!r}")
        if self.horizon is not None and self.horizon < 1:
            raise ValueError(f"horizon must be a positive number of steps or None, got {self.horizon!r}")
        if self.max_trajectories is not None and self.max_trajectories < 1:
            raise ValueError(f"max_trajectories must be positive or None, got {self.max_trajectories!r}")
        if self.max_trajectories is not None and self.stop.ends_after_opt(True, False, False):
            raise ValueError(
                f"max_trajectories={self.max_trajectories} counts trajectories, and stop={self.stop!r} ends the search at "
                "the first improvement: pass stop='budget'"
            )

    def params(self) -> Params:
        """:return: the settings that the kernels use, with fixed types (one compiled version of each kernel)"""
        return Params(
            epsilon=float(self.epsilon), priority=ASTAR if self.priority == "astar" else GUMBEL, alpha=float(self.alpha),
            prune=bool(self.prune), gamma=float(self.gamma), horizon=-1 if self.horizon is None else int(self.horizon),
            depth_first=bool(self.depth_first), budget=int(self.budget),
        )  # fmt: skip


class Params(NamedTuple):
    """The settings of :class:`SearchConfig` that the compiled kernels use.

    :param epsilon: the ε of ``D = G + ε·R``, float
    :param priority: the ``a_dir`` priority, :data:`GUMBEL` or :data:`ASTAR`, int
    :param alpha: the weight of the bound in the A* priority, float
    :param prune: whether to prune against the best ``D``, bool
    :param gamma: the discount, float
    :param horizon: the maximum trajectory length, or -1 for none, int
    :param depth_first: whether a popped region's child is followed next, bool
    :param budget: the interactions allowed to the ``a_dir`` search, int
    """

    epsilon: float
    priority: int
    alpha: float
    prune: bool
    gamma: float
    horizon: int
    depth_first: bool
    budget: int
