"""DirPG's settings: their checks, by name (run by the constructor, on assignment and after ``load``), and the checks
of :meth:`~sb3_dirpg.dirpg.DirPG.solve`'s arguments."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from sb3_dirpg.common.simulator_algorithm import yaml_number_hint
from sb3_dirpg.dirpg.workers import search_workers
from sb3_dirpg.search.config import check_flag
from sb3_dirpg.search.priority import Priority, priority_rule
from sb3_dirpg.search.protocols import Heuristic
from sb3_dirpg.search.stopping import StopRule, SuccessStop, stop_rule

__all__ = [
    "DROPPED_SETTINGS", "FLAGS", "SETTING_CHECKS", "HeuristicViolationWarning", "check_astar_heuristic", "check_refining",
    "check_seeds", "dropped_settings_message",
]  # fmt: skip

#: DirPG's bool flags (a string such as "false" is refused: it is truthy)
FLAGS = ("prune",)


class HeuristicViolationWarning(UserWarning):
    """A complete trajectory broke the heuristic's bound: pruning is switched off for the rest of training.
    ``warnings.simplefilter("error", HeuristicViolationWarning)`` makes it an error."""


#: the settings of earlier releases that this one dropped or moved out of the model, and what to do instead
DROPPED_SETTINGS = {
    "refine_from": "the switch to refining is the callback sb3_dirpg.dirpg.RefineOnSuccess(success_rate, settings): pass "
    "it to learn() (in a hyperparameter file, under callback:)",
    "refine_settings": "they are RefineOnSuccess's settings",
    "refine_started_at": "RefineOnSuccess keeps started_at",
    "greedy_coef": "the greedy contrast is gone; the one MiniGrid setting keeps greedy success at sampled success without "
    "it (stop={'success': {'refine': 100}})",
    "ent_coef": "the entropy bonus is gone (no entry used it)",
    "clip_range": "the further epochs (n_epochs) clip at PPO's 0.2",
    "update_per_episode": "one optimizer step per map is batch_episodes=1",
    "strict_heuristic": "warnings.simplefilter('error', HeuristicViolationWarning) turns the warning into an error",
    "compiled_loop": "the search's own setting, SearchConfig(compiled_loop=...): model.search_config(compiled_loop=False)",
}


def dropped_settings_message(settings: dict[str, Any], owner: str) -> str:
    """:param settings: dropped settings by name, with their values
    :param owner: who read them, for the message
    :return: the message naming each and what to do instead"""
    named = "; ".join(f"{name}={value!r}: {DROPPED_SETTINGS[name]}" for name, value in settings.items())
    return f"{owner}: this release dropped or moved these settings: {named}"


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


def check_astar_heuristic(priority: Priority, heuristic: Heuristic | None) -> None:
    """:param priority: the ``priority`` setting
    :param heuristic: the ``heuristic`` setting
    :raises ValueError: when the A* priority weighs a heuristic that is not there"""
    if priority.alpha > 0 and heuristic is None:
        raise ValueError(
            f"DirPG: priority={priority.spelling!r} with alpha={priority.alpha} needs a heuristic(env) bound on the "
            "return-to-go: pass heuristic=... (or set model.heuristic), or priority='astar' (alpha 0)"
        )


def check_refining(stop: StopRule, search_budget: int) -> None:
    """:param stop: the ``stop`` setting
    :param search_budget: the ``search_budget`` setting
    :raises ValueError: for a refining budget above ``search_budget`` (a refinement never searches more than the search
        budget)"""
    if isinstance(stop, SuccessStop) and stop.refine > search_budget:
        raise ValueError(
            f"DirPG: stop={stop.spelling!r} refines within {stop.refine} interactions, above search_budget={search_budget}, "
            f"and a refining search never searches more than the search budget: pass a refine of at most {search_budget}"
        )


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


def _flag(name: str) -> Any:
    """:param name: the flag
    :return: its check"""
    return lambda algo, value: check_flag(name, value, algo)


#: DirPG's own settings and their checks (on top of :class:`~sb3_dirpg.common.simulator_algorithm.SimulatorAlgorithm`'s)
SETTING_CHECKS: dict[str, Any] = {
    "epsilon": _check_epsilon,
    "search_budget": _check_search_budget,
    "stop": lambda algo, value: stop_rule(value, algo),
    "priority": lambda algo, value: priority_rule(value, algo),
    "lookahead": _check_lookahead,
    "n_epochs": _check_n_epochs,
    "n_workers": lambda algo, value: search_workers(value, algo),
    **{name: _flag(name) for name in FLAGS},
}
