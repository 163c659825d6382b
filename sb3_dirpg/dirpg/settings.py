"""DirPG's settings, each declared once in :data:`SETTINGS` (name, default, doc, group, check, how the search reads it),
and the checks of :meth:`~sb3_dirpg.dirpg.DirPG.solve`'s arguments.

``python docs/scripts/settings_page.py`` prints the docs' page of the settings (``docs/settings.md``)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from sb3_dirpg.common.settings import REQUIRED, Setting, setting_checks
from sb3_dirpg.common.simulator_algorithm import SimulatorAlgorithm, yaml_number_hint
from sb3_dirpg.dirpg.workers import search_workers
from sb3_dirpg.search.config import check_flag
from sb3_dirpg.search.priority import Priority, priority_rule
from sb3_dirpg.search.protocols import Heuristic
from sb3_dirpg.search.stopping import StopRule, SuccessStop, stop_rule

__all__ = [
    "FLAGS", "SETTINGS", "SETTING_CHECKS", "HeuristicViolationWarning", "check_astar_heuristic", "check_refining",
    "check_seeds",
]  # fmt: skip

#: DirPG's bool flags (a string such as "false" is refused: it is truthy)
FLAGS = ("prune",)


class HeuristicViolationWarning(UserWarning):
    """A complete trajectory broke the heuristic's bound: pruning is switched off for the rest of training.
    ``warnings.simplefilter("error", HeuristicViolationWarning)`` makes it an error."""


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


def _priority_fields(priority: Priority) -> dict[str, Any]:
    """:param priority: the ``priority`` setting
    :return: the search's fields it gives"""
    return {"priority": priority.name, "alpha": priority.alpha, "depth_first": priority.depth_first}


#: the checks of the settings that DirPG shares with the other simulator algorithms
BASE_CHECKS = SimulatorAlgorithm.SETTING_CHECKS

#: DirPG's settings, in the order of its constructor's arguments (a test holds the signature to it)
SETTINGS: tuple[Setting, ...] = (
    Setting(
        "policy",
        REQUIRED,
        (
            "policy class or alias (``MlpPolicy``, ``CnnPolicy``, ``MultiInputPolicy``)"
        ),
        "sb3",
    ),
    Setting(
        "env",
        REQUIRED,
        (
            "env, DummyVecEnv or registered env id"
        ),
        "sb3",
    ),
    Setting(
        "learning_rate",
        0.001,
        (
            "learning rate or schedule"
        ),
        "update",
        check=BASE_CHECKS["learning_rate"],
    ),
    Setting(
        "epsilon",
        1.0,
        (
            "ε of the direct objective, non-zero: > 0 seeks controllable risk, < 0 avoids it, → 0 is the plain "
            "policy gradient"
        ),
        "algorithm",
        check=_check_epsilon,
        search="epsilon",
    ),
    Setting(
        "search_budget",
        100,
        (
            "environment interactions allowed per episode for the ``a_dir`` search, after ``a_opt``"
        ),
        "search",
        check=_check_search_budget,
        search="budget",
    ),
    Setting(
        "priority",
        'gumbel',
        (
            "the order in which the ``a_dir`` search pops regions (:mod:`sb3_dirpg.search.priority`): "
            "``\"gumbel\"`` (priority ``G``), ``\"astar\"`` or ``AStarPriority(alpha=0.5)`` (priority ``G + ε·(L "
            "+ α·U)`` with the heuristic's bound ``U``, ``alpha`` in [0, 1], 1 is A*), in YAML ``{\"astar\": "
            "{\"alpha\": 0.5}}``. Either may take ``depth_first=True``: follow every popped region's sampled "
            "child chain to the end of a trajectory before popping another (the authors' depth-first option; "
            "every pop then completes a trajectory)"
        ),
        "search",
        check=lambda algo, value: priority_rule(value, algo),
        search=_priority_fields,
    ),
    Setting(
        "heuristic",
        None,
        (
            "``heuristic(env) -> upper`` or ``(lower, upper)``: bounds on the discounted return-to-go from the "
            "env's current state (discounted from that state); used for the ``\"astar\"`` priority and for "
            "pruning. An infinite bound (unknown) prunes nothing and adds nothing to the priority "
            "(docs/heuristics.md)"
        ),
        "search",
        check=BASE_CHECKS["heuristic"],
    ),
    Setting(
        "prune",
        True,
        (
            "drop regions whose bound on ``D`` cannot beat the best ``D`` so far (needs an admissible heuristic). "
            "Every complete trajectory is checked against the bounds on its path: when one is violated, a "
            ":class:`HeuristicViolationWarning` names the depth and the gap (once per model) and pruning is "
            "switched off for the rest of training (``warnings.simplefilter(\"error\", "
            "HeuristicViolationWarning)`` makes it an error)"
        ),
        "search",
        check=_flag("prune"),
    ),
    Setting(
        "stop",
        'improvement',
        (
            "when an episode's search ends before its budget (:mod:`sb3_dirpg.search.stopping`): "
            "``\"improvement\"`` (at the first trajectory with ``D > D(a_opt)``, appendix C), ``\"budget\"`` "
            "(never: ``a_dir`` is the exact argmax when the budget suffices), ``\"success\"`` (at the first "
            "trajectory that ends in success, ``info[\"is_success\"]``, the authors' \"break on goal\"; the "
            "budget left is neither spent nor counted in ``num_timesteps``), a rule object such as "
            "``SuccessStop(refine=100)`` (where ``a_opt`` itself succeeds, search on for up to 100 interactions "
            "for a larger ``D``, a shorter success, and stop at the first one, instead of stopping at once with a "
            "zero update; beyond the paper, docs/algorithm.md), or its YAML spelling ``{\"success\": {\"refine\": "
            "100}}``"
        ),
        "search",
        check=lambda algo, value: stop_rule(value, algo),
        search="stop",
    ),
    Setting(
        "batch_episodes",
        None,
        (
            "episodes searched in lockstep per update (None: ``max(8, n_envs)``)"
        ),
        "update",
        check=BASE_CHECKS["batch_episodes"],
    ),
    Setting(
        "n_epochs",
        1,
        (
            "optimizer steps on each batch's update steps (beyond the paper; docs/algorithm.md). The first is "
            "DirPG's update; each further one steps along PPO's clipped surrogate with the advantage +1 on "
            "``a_dir``'s steps and -1 on ``a_opt``'s, so that a step stops pushing once its probability ratio to "
            "the searched policy leaves ``[1 - CLIP_RANGE, 1 + CLIP_RANGE]`` (PPO's 0.2). 1 (the default) is the "
            "paper's estimator"
        ),
        "update",
        check=_check_n_epochs,
    ),
    Setting(
        "lookahead",
        1,
        (
            "search up to this many batches at once, in lockstep, and commit them one at a time; the algorithm "
            "does not change (only the policy is evaluated on batches of other sizes, which may round differently "
            "in the last bit). A batch whose update is zero leaves the policy as it was, so the next batch's "
            "search with it is the one it would have had anyway; after a batch that updates, the batches searched "
            "ahead are searched again with the new policy (same seeds and noise). The number searched at once "
            "follows the share of recent batches that updated (late in training, with ``stop=\"success\"``, few "
            "do). Searches thrown away are not counted in ``num_timesteps``; the callback is called once per "
            "committed batch"
        ),
        "run",
        check=_check_lookahead,
    ),
    Setting(
        "max_episode_steps",
        None,
        (
            "cut trajectories after this many steps (needed when the env has no time limit; a value above the "
            "env's own limit is warned about, and ``horizon`` reports the smaller)"
        ),
        "algorithm",
        check=BASE_CHECKS["max_episode_steps"],
    ),
    Setting(
        "gamma",
        1.0,
        (
            "discount of the return ``R``"
        ),
        "algorithm",
        check=BASE_CHECKS["gamma"],
        search="gamma",
    ),
    Setting(
        "max_grad_norm",
        None,
        (
            "clip the gradient norm of each update, or None"
        ),
        "update",
        check=BASE_CHECKS["max_grad_norm"],
    ),
    Setting(
        "policy_kwargs",
        None,
        (
            "keyword arguments of the policy (``net_arch``, ``features_extractor_class``, ``optimizer_class``, "
            "...)"
        ),
        "sb3",
    ),
    Setting(
        "stats_window_size",
        100,
        (
            "episodes averaged in ``rollout/`` statistics"
        ),
        "sb3",
    ),
    Setting(
        "tensorboard_log",
        None,
        (
            "tensorboard log folder, or None"
        ),
        "sb3",
    ),
    Setting(
        "seed",
        None,
        (
            "seed of the policy initialisation, the episode seeds and the search noise"
        ),
        "sb3",
    ),
    Setting(
        "verbose",
        0,
        (
            "0 silent, 1 training logs, 2 debug"
        ),
        "sb3",
    ),
    Setting(
        "device",
        'auto',
        (
            "torch device"
        ),
        "sb3",
    ),
    Setting(
        "_init_setup_model",
        True,
        (
            "build the networks now (False when loading)"
        ),
        "sb3",
    ),
    Setting(
        "n_workers",
        0,
        (
            "extra workers that search shares of each batch with a copy of the policy (0: search in this process "
            "only): a count of worker processes on this machine, or ``{\"ray\": k}`` for ``k`` Ray actors on the "
            "cluster named by ``RAY_ADDRESS``, else on a local Ray instance (``pip install sb3-dirpg[ray]``; a "
            ":class:`~sb3_dirpg.dirpg.workers.SearchWorkers`). The results do not depend on it; callbacks see the "
            "share searched in this process."
        ),
        "run",
        check=lambda algo, value: search_workers(value, algo),
    ),
    Setting(
        "simulator_backend",
        'auto',
        (
            "what steps the search's states: ``\"env\"`` the sub-envs, ``\"compiled\"`` a compiled copy of their "
            "dynamics on array-held states (MiniGrid), ``\"auto\"`` the compiled one where it fits. The results "
            "do not depend on it"
        ),
        "run",
        check=BASE_CHECKS["simulator_backend"],
    ),
    Setting(
        "ema_decay",
        None,
        (
            "act in :meth:`predict` with an exponential moving average of the policy's weights, moved after every "
            "optimizer step with this decay (e.g. 0.999), instead of the trained weights; the search, the updates "
            "and :meth:`solve` use the trained policy. It steadies the greedy policy, whose argmax may flip at a "
            "few decisive states from one update to the next (beyond the paper; docs/algorithm.md). None (the "
            "default): the trained policy"
        ),
        "update",
        check=BASE_CHECKS["ema_decay"],
    ),
)


#: the checks of DirPG's settings, by name (run by the constructor, on assignment and in ``load``)
SETTING_CHECKS: dict[str, Any] = setting_checks(SETTINGS)
