"""DirPG's diagnostics of each searched batch: the ``rollout/`` and ``search/`` log, the runtime check of the heuristic's
bounds, and the warning where refining a successful sample cannot improve it."""

from __future__ import annotations

import warnings
from statistics import fmean
from typing import Any

import numpy as np
import torch as th

from sb3_dirpg.dirpg.settings import HeuristicViolationWarning
from sb3_dirpg.search import EpisodeSearch
from sb3_dirpg.search.stopping import SuccessStop
from sb3_dirpg.simulator.cloners import env_name


def _mean(values: list[float]) -> float:
    """:param values: a batch's values (a few: one per searched map)
    :return: their mean (NaN for none), without numpy's per-call overhead"""
    return fmean(values) if values else float("nan")


class SearchLog:
    """Mixed into :class:`~sb3_dirpg.dirpg.DirPG`: what it logs and checks after each batch's search."""

    simulator: Any
    heuristic: Any
    heuristic_violation: str | None

    def _check_heuristic(self, episodes: list[EpisodeSearch]) -> None:
        """Runtime admissibility check: the search reports, per episode, the largest gap by which a bound on its
        complete trajectories was violated. Warn once (a :class:`HeuristicViolationWarning`) and stop pruning.

        :param episodes: the searched episodes of a batch
        """
        worst = max(episodes, key=lambda ep: ep.bound_gap, default=None)
        if worst is None or worst.bound_gap <= 0 or self.simulator is None:
            return
        bound = "upper" if self.epsilon > 0 else "lower"
        what = (
            f"the heuristic {self.heuristic!r} is not admissible on the env {env_name(self.simulator.simulators[0])}: in the "
            f"episode with seed {worst.seed}, the return-to-go a complete trajectory realised from a node at depth "
            f"{worst.bound_gap_depth} {'exceeds its upper' if self.epsilon > 0 else 'falls below its lower'} bound by "
            f"{worst.bound_gap:.6g}"
        )
        if self.heuristic_violation is None:
            pruning = "pruning is switched off for the rest of training" if self.prune else "pruning was already off"
            warnings.warn(
                f"DirPG: {what}; {pruning} (pruning with a bound that is too tight cuts the best trajectories). "
                f"Fix the heuristic's {bound} bound (warnings.simplefilter('error', HeuristicViolationWarning) raises "
                "instead)",
                HeuristicViolationWarning,
                stacklevel=2,
            )
            self.heuristic_violation = what

    #: maps refined after a successful a_opt, without one improvement, before the warning that refining cannot act
    REFINED_WITHOUT_GAIN = 20

    def _watch_refining(self, found: list[EpisodeSearch]) -> None:
        """Warn once where the stopping rule refines successful ``a_opt`` and never improves: with
        ``gamma=1`` and a success reward that does not depend on the way (a goal-only reward), every success ties on
        the return, and none can beat ``a_opt``, which holds the largest Gumbel.

        :param found: the batch's searched episodes
        """
        if not self.refining or getattr(self, "_refining_warned", False):
            return
        refined = [ep for ep in found if ep.success_opt and ep.interactions > ep.length_opt]
        tally = getattr(self, "_refining_tally", (0, 0))
        tally = (tally[0] + len(refined), tally[1] + sum(ep.improved for ep in refined))
        self._refining_tally = tally
        if tally[0] >= self.REFINED_WITHOUT_GAIN and tally[1] == 0:
            self._refining_warned = True
            cause = (
                "with gamma=1 every success ties on the return where the reward does not depend on the way (a goal-only "
                "reward), so none can beat a_opt: pass gamma < 1 (e.g. 0.99) to make a shorter success worth more, "
                if self.gamma == 1
                else "the successes found score no higher D than a_opt: "
            )
            warnings.warn(
                f"DirPG: stop={self.stop.spelling!r} searched on after {tally[0]} successful a_opt and improved none; "
                f"{cause}or pass stop='success' to stop at the first success",
                UserWarning,
                stacklevel=3,
            )

    def _log_search(self, episodes: list[EpisodeSearch]) -> None:
        """Record the batch's ``a_opt`` episodes in the ``rollout/`` statistics and log the ``search/`` values.

        :param episodes: the searched episodes of a batch
        """
        found = [ep for ep in episodes if ep.opt_leaf >= 0]
        simulator = self.simulator  # trajectories cut by max_episode_steps are not the env's ends: they say nothing
        unreported = simulator is not None and simulator.ends_without_success and not simulator.reports_success
        if isinstance(self.stop, SuccessStop) and found and unreported:
            warnings.warn(
                f"DirPG: stop={self.stop.spelling!r}, but the episode ends of {env_name(simulator.simulators[0])} report no "
                "info['is_success'], so the search never stops on success; add the key in a wrapper (MiniGrid: "
                "sb3_dirpg.envs.MiniGridShapedReward) or pass stop='improvement'",
                stacklevel=2,
            )
        for ep in found:
            self._record_episode(ep.reward_sum_opt, ep.length_opt, ep.success_opt)
        improved = [ep for ep in found if ep.improved]
        self._watch_refining(found)
        log = self.logger.record_mean
        log("search/improved_fraction", len(improved) / max(1, len(found)))
        log("search/interactions_per_episode", _mean([ep.interactions for ep in found]))
        search_interactions = [ep.interactions - ep.length_opt for ep in found]
        log("search/search_interactions_per_episode", _mean(search_interactions))
        log("search/budget_unspent", _mean([self.search_budget - n for n in search_interactions]))
        log("search/success_opt", _mean([ep.success_opt for ep in found]))
        # issue 44's diagnostics: how often a_opt itself succeeded and the search added nothing (a zero update), how
        # sure the policy is along its own samples, and how many interactions each optimizer step costs
        log("search/unchanged_fraction", 1.0 - len(improved) / max(1, len(found)))
        log("search/unchanged_success_fraction", _mean([ep.success_opt and not ep.improved for ep in found]))
        entropies = [ep.entropy_opt for ep in found if np.isfinite(ep.entropy_opt)]  # NaN: a_opt had no step to score
        if entropies:
            log("search/entropy_opt", _mean(entropies))
        log("search/success_dir", _mean([ep.success_dir for ep in found]))
        if improved:
            log("search/interactions_to_improvement", _mean([ep.interactions_to_improvement for ep in improved]))
        log("search/d_opt", _mean([ep.d_opt for ep in found]))
        log("search/d_dir", _mean([ep.d_dir for ep in found]))
        log("search/return_opt", _mean([ep.return_opt for ep in found]))
        log("search/return_dir", _mean([ep.return_dir for ep in found]))
        log("search/trajectories_completed", _mean([ep.trajectories for ep in found]))
        log("search/regions_pruned", _mean([ep.pruned for ep in found]))
        budget_spent = th.as_tensor([ep.interactions - ep.length_opt for ep in found], dtype=th.float32)
        self.logger.record("search/budget_spent", budget_spent, exclude=("stdout", "log", "json", "csv"))
