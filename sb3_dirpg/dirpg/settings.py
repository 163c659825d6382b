"""DirPG's settings: their checks, by name (run by the constructor, on assignment and after ``load``), and the checks
of :meth:`~sb3_dirpg.dirpg.DirPG.solve`'s arguments."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from sb3_dirpg.common.simulator_algorithm import yaml_number_hint
from sb3_dirpg.dirpg.workers import check_parallel_backend
from sb3_dirpg.search import PRIORITIES
from sb3_dirpg.search.config import check_flag
from sb3_dirpg.search.protocols import Heuristic
from sb3_dirpg.search.stopping import StopRule, SuccessStop, stop_rule

__all__ = [
    "FLAGS", "SETTING_CHECKS", "check_astar_heuristic", "check_greedy_coef", "check_refining", "check_seeds",
    "refine_settings_check", "refined_stop",
]  # fmt: skip

#: DirPG's bool flags (a string such as "false" is refused: it is truthy)
FLAGS = ("prune", "depth_first", "update_per_episode", "strict_heuristic", "compiled_loop")


def check_seeds(seeds: Any) -> list[int]:
    """:param seeds: the ``seeds`` argument of :meth:`DirPG.solve`: an integer or a sequence of integers (integral floats
        such as ``6.0`` are taken; numpy integers too)
    :return: the seeds, as a list of ints
    :raises ValueError: for a seed that is not an integer (``5.9`` would silently be the instance of 5)"""
    many = seeds if isinstance(seeds, (list, tuple, np.ndarray, range)) else [seeds]
    for seed in many:
        if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Real) or int(seed) != seed:
            raise ValueError(
                f"DirPG.solve: seeds must be an integer or a list of integers (each one an instance), got {seed!r} of type "
                f"{type(seed).__name__} in {seeds!r}"
            )
    return [int(seed) for seed in many]


def check_astar_heuristic(priority: str, alpha: float, heuristic: Heuristic | None) -> None:
    """:param priority: the ``priority`` setting
    :param alpha: the ``alpha`` setting
    :param heuristic: the ``heuristic`` setting
    :raises ValueError: when the A* priority weighs a heuristic that is not there"""
    if priority == "astar" and alpha > 0 and heuristic is None:
        raise ValueError(
            f"DirPG: priority='astar' with alpha={alpha} needs a heuristic(env) bound on the return-to-go: pass "
            "heuristic=... (or set model.heuristic), or alpha=0"
        )


def check_greedy_coef(greedy_coef: float, n_workers: int) -> None:
    """:param greedy_coef: the ``greedy_coef`` setting
    :param n_workers: the ``n_workers`` setting
    :raises ValueError: when the greedy contrast would miss the episodes that search workers search"""
    if greedy_coef > 0 and n_workers > 0:
        raise ValueError(
            f"DirPG: greedy_coef={greedy_coef} needs every episode's a_dir, which the search workers do not send back: "
            "pass n_workers=0, or greedy_coef=0"
        )


def check_refining(
    stop: StopRule, refine_from: float | None, refine_settings: dict[str, Any] | None, search_budget: int
) -> None:
    """Refuse the refining settings that would be accepted and then change nothing.

    :param stop: the ``stop`` setting
    :param refine_from: the ``refine_from`` setting
    :param refine_settings: the ``refine_settings`` setting
    :param search_budget: the ``search_budget`` setting
    :raises ValueError: for ``refine_from`` with a stopping rule other than ``"success"`` (refining changes only what a
        success that ends the search does), ``refine_settings`` without ``refine_from`` (nothing switches them on), or
        a refining budget above ``search_budget`` (a refinement never searches more than the search budget)"""
    for spelled in (stop, (refine_settings or {}).get("stop")):
        rule = None if spelled is None else stop_rule(spelled, "DirPG")
        if isinstance(rule, SuccessStop) and rule.refine > search_budget:
            raise ValueError(
                f"DirPG: stop={rule.spelling!r} refines within {rule.refine} interactions, above search_budget="
                f"{search_budget}, and a refining search never searches more than the search budget: pass a refine of at "
                f"most {search_budget}"
            )
    if refine_from is not None and not isinstance(stop, SuccessStop):
        raise ValueError(
            f"DirPG: refine_from={refine_from} switches the stopping rule 'success' to refining a successful a_opt, and "
            f"stop={stop.spelling!r}: pass stop='success', or refine_from=None"
        )
    if refine_settings is not None and refine_from is None:
        raise ValueError(
            f"DirPG: refine_settings={refine_settings} take effect when refine_from switches refining on, and "
            "refine_from is None: pass refine_from (a success rate), or refine_settings=None"
        )


def refined_stop(stop: StopRule, search_budget: int, refine_settings: dict[str, Any] | None) -> dict[str, Any]:
    """:param stop: the stopping rule before the switch (``"success"``)
    :param search_budget: the search budget
    :param refine_settings: the ``refine_settings`` setting
    :return: the settings that ``refine_from`` assigns: ``stop`` refining a successful ``a_opt`` (within the search
        budget, unless ``refine_settings`` give the rule), then ``refine_settings``"""
    improvement = stop.improvement if isinstance(stop, SuccessStop) else False
    return {"stop": SuccessStop(refine=search_budget, improvement=improvement), **(refine_settings or {})}


#: the settings that ``refine_settings`` may not change: the switch itself, and what the simulators or workers are built with
NOT_REFINE_SETTINGS = ("refine_from", "refine_settings", "heuristic", "simulator_backend", "n_workers", "parallel_backend")


def refine_settings_check(checks: dict[str, Any]) -> Any:
    """:param checks: the algorithm's setting checks, by name
    :return: the check of ``refine_settings``: a dict of settings, each checked as the constructor checks it"""

    def check(algo: str, value: Any) -> dict[str, Any] | None:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise ValueError(
                f"{algo}: refine_settings must be a dict of settings to assign when refine_from turns refining on "
                f"(e.g. {{'learning_rate': 3e-4, 'gamma': 0.99}}) or None, got {value!r} of type {type(value).__name__}"
            )
        allowed = sorted(set(checks) - set(NOT_REFINE_SETTINGS))
        unknown = [key for key in value if key not in allowed]
        if unknown:
            raise ValueError(f"{algo}: refine_settings cannot set {unknown}; it may set {allowed}")
        checked = {key: checks[key](algo, setting) for key, setting in value.items()}
        stop = checked.get("stop")
        if stop is not None and not (isinstance(stop, SuccessStop) and stop.refine > 0):
            raise ValueError(
                f"{algo}: refine_settings' stop={stop.spelling!r} does not refine a successful a_opt: give a success rule "
                "with a refining budget, e.g. {'success': {'refine': 100}}, or leave stop out (the search budget)"
            )
        return checked

    return check


def _real(name: str, convert: type = float) -> Any:
    """:param name: the setting
    :return: the check that it is a real number (not a bool or a string), converted"""

    def check(algo: str, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(
                f"{algo}: {name} must be a real number, got {value!r} of type {type(value).__name__}{yaml_number_hint(value)}"
            )
        return convert(value)

    return check


def _check_epsilon(algo: str, value: Any) -> float:
    value = _real("epsilon")(algo, value)
    if not np.isfinite(value) or value == 0:
        raise ValueError(f"{algo}: epsilon must be a finite non-zero number (negative is risk averse), got {value!r}")
    return value


def _check_search_budget(algo: str, value: Any) -> int:
    _real("search_budget")(algo, value)
    if int(value) != value or value < 0:
        raise ValueError(f"{algo}: search_budget must be a positive integer number of interactions, got {value!r}")
    if value == 0:
        raise ValueError(
            f"{algo}: search_budget=0 leaves no interactions to search for a_dir, so a_dir is always a_opt and the "
            "policy never updates; give a positive budget (e.g. 100)"
        )
    return int(value)


def _check_refine_from(algo: str, value: Any) -> float | None:
    if value is None:
        return None
    value = _real("refine_from")(algo, value)
    if not 0.0 < value <= 1.0:
        raise ValueError(
            f"{algo}: refine_from must be a success rate in (0, 1] (the fraction of recent maps whose a_opt succeeded) "
            f"or None, got {value!r}"
        )
    return value


def _check_priority(algo: str, value: Any) -> str:
    if not isinstance(value, str) or value not in PRIORITIES:
        raise ValueError(f"{algo}: priority must be one of {PRIORITIES}, got {value!r}")
    return value


def _check_alpha(algo: str, value: Any) -> float:
    value = _real("alpha")(algo, value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{algo}: alpha must lie in [0, 1] (1 is A*, 0 leaves the heuristic out), got {value!r}")
    return value


def _check_lookahead(algo: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{algo}: lookahead must be a positive integer number of batches (1: none), got {value!r}")
    return int(value)


def _check_n_epochs(algo: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(
            f"{algo}: n_epochs must be a positive integer number of optimizer steps per batch (1: the "
            f"paper's update), got {value!r}"
        )
    return int(value)


def _check_clip_range(algo: str, value: Any) -> float:
    value = _real("clip_range")(algo, value)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{algo}: clip_range must lie in (0, 1) (PPO's default is 0.2), got {value!r}")
    return value


def _check_ent_coef(algo: str, value: Any) -> float:
    value = _real("ent_coef")(algo, value)
    if value < 0:
        raise ValueError(f"{algo}: ent_coef must be >= 0 (0: the paper's update, no entropy bonus), got {value!r}")
    return value


def _check_greedy_coef(algo: str, value: Any) -> float:
    value = _real("greedy_coef")(algo, value)
    if value < 0:
        raise ValueError(f"{algo}: greedy_coef must be >= 0 (0: the paper's update, no greedy contrast), got {value!r}")
    return value


def _check_n_workers(algo: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or int(value) != value or value < 0:
        raise ValueError(f"{algo}: n_workers must be a non-negative integer number of processes, got {value!r}")
    return int(value)


def _flag(name: str) -> Any:
    """:param name: the flag
    :return: its check"""
    return lambda algo, value: check_flag(name, value, algo)


#: DirPG's own settings and their checks (on top of :class:`~sb3_dirpg.common.simulator_algorithm.SimulatorAlgorithm`'s)
SETTING_CHECKS: dict[str, Any] = {
    "epsilon": _check_epsilon,
    "search_budget": _check_search_budget,
    "stop": lambda algo, value: stop_rule(value, algo),
    "refine_from": _check_refine_from,
    "priority": _check_priority,
    "alpha": _check_alpha,
    "lookahead": _check_lookahead,
    "n_epochs": _check_n_epochs,
    "clip_range": _check_clip_range,
    "ent_coef": _check_ent_coef,
    "greedy_coef": _check_greedy_coef,
    "n_workers": _check_n_workers,
    "parallel_backend": lambda algo, value: check_parallel_backend(value),
    **{name: _flag(name) for name in FLAGS},
}
