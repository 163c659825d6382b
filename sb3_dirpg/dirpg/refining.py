"""RefineOnSuccess: a callback that switches DirPG from stopping at a successful sample to refining it, once the samples
succeed often enough (a schedule of settings, as SB3 schedules learning rates, beyond the paper; docs/algorithm.md)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from sb3_dirpg.search.stopping import SuccessStop

__all__ = ["NOT_SCHEDULED", "RefineOnSuccess", "refined_settings"]

#: the settings a switch may not assign: what the simulators or the search workers are built with
NOT_SCHEDULED = ("heuristic", "simulator_backend", "n_workers")


def refined_settings(stop: Any, search_budget: int, settings: dict[str, Any] | None) -> dict[str, Any]:
    """:param stop: the model's stopping rule before the switch (``"success"``)
    :param search_budget: the model's search budget
    :param settings: the settings given to the switch, or None
    :return: the settings the switch assigns: ``stop`` refining a successful ``a_opt`` within the search budget (unless
        ``settings`` give the rule), then ``settings``"""
    improvement = stop.improvement if isinstance(stop, SuccessStop) else False
    return {"stop": SuccessStop(refine=search_budget, improvement=improvement), **(settings or {})}


class RefineOnSuccess(BaseCallback):
    """Switch DirPG's stopping rule ``"success"`` to refining a successful ``a_opt`` once ``a_opt`` has succeeded on at
    least ``success_rate`` of a full window of the last ``stats_window_size`` searched maps (``rollout/success_rate``),
    and keep refining: the search learns fast while its samples fail, then refines the samples that succeed.

    The switch assigns settings of the model (checked as the constructor checks them), so a model saved after it is
    saved refining. A run resumed with the settings from before the switch (rl-zoo3's ``-i`` passes the entry's) switches
    again at its first full window. In a hyperparameter file::

        callback:
          - sb3_dirpg.dirpg.RefineOnSuccess:
              success_rate: 0.6
              settings: {epsilon: 1.0, stop: {success: {refine: 100}}}

    :param success_rate: the success rate of ``a_opt`` over the window that switches refining on, in (0, 1]
    :param settings: other settings to assign at the switch, e.g. ``{"learning_rate": 3e-4, "stop": {"success":
        {"refine": 100}}}``, or None: refine within the search budget
    :param verbose: 1 prints the switch
    """

    def __init__(self, success_rate: float, settings: dict[str, Any] | None = None, verbose: int = 0) -> None:
        super().__init__(verbose)
        if isinstance(success_rate, bool) or not isinstance(success_rate, numbers.Real) or not 0.0 < success_rate <= 1.0:
            raise ValueError(
                f"RefineOnSuccess: success_rate must be a success rate in (0, 1] (the fraction of recent maps whose a_opt "
                f"succeeded), got {success_rate!r}"
            )
        if settings is not None and not isinstance(settings, dict):
            raise ValueError(
                f"RefineOnSuccess: settings must be a dict of settings to assign at the switch (e.g. {{'learning_rate': "
                f"3e-4, 'gamma': 0.99}}) or None, got {settings!r} of type {type(settings).__name__}"
            )
        self.success_rate = float(success_rate)
        self.settings = settings
        #: the interactions at which the switch happened, or None
        self.started_at: int | None = None

    def _init_callback(self) -> None:
        """Check the settings against the model's, before any search.

        :raises ValueError: for a model without the stopping rule ``"success"``, a setting the model does not have or
            refuses, a stop rule that does not refine, or a refining budget above the search budget"""
        model = self.model
        if model.num_timesteps == 0 and getattr(model, "refining", False):
            raise ValueError(
                f"RefineOnSuccess switches to refining, and the model refines from the start (stop={model.stop.spelling!r}): "
                "pass stop='success' to the model, or leave the callback out"
            )
        if not isinstance(getattr(model, "stop", None), SuccessStop):
            raise ValueError(
                f"RefineOnSuccess switches the stopping rule 'success' to refining a successful a_opt, and the model's "
                f"stop is {getattr(getattr(model, 'stop', None), 'spelling', None)!r}: pass stop='success' to the model"
            )
        checks = type(model).SETTING_CHECKS
        allowed = sorted(set(checks) - set(NOT_SCHEDULED))
        unknown = [key for key in (self.settings or {}) if key not in allowed]
        if unknown:
            raise ValueError(f"RefineOnSuccess: settings cannot set {unknown}; they may set {allowed}")
        checked = {key: model.check_setting(key, value) for key, value in (self.settings or {}).items()}
        stop = checked.get("stop")
        if stop is not None and not (isinstance(stop, SuccessStop) and stop.refine > 0):
            raise ValueError(
                f"RefineOnSuccess: settings' stop={stop.spelling!r} does not refine a successful a_opt: give a success rule "
                "with a refining budget, e.g. {'success': {'refine': 100}}, or leave stop out (the search budget)"
            )
        budget = checked.get("search_budget", model.search_budget)
        if stop is not None and stop.refine > budget:
            raise ValueError(
                f"RefineOnSuccess: settings' stop={stop.spelling!r} refines within {stop.refine} interactions, above "
                f"search_budget={budget}, and a refining search never searches more than the search budget"
            )
        self.settings = checked or None
        if self.started_at is None and model.refining:  # a model saved after the switch refines already
            self.started_at = model.num_timesteps

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        """Switch at the first full window of recent maps whose ``a_opt`` succeeded on ``success_rate`` of them."""
        model = self.model
        window = model.ep_success_buffer
        full = len(window) == window.maxlen
        if self.started_at is None and full and float(np.mean(window)) >= self.success_rate:
            for name, value in refined_settings(model.stop, model.search_budget, self.settings).items():
                setattr(model, name, value)
            self.started_at = model.num_timesteps
            if self.verbose >= 1:
                print(f"RefineOnSuccess: a_opt succeeded on {np.mean(window):.0%} of the last {len(window)} maps; refining "
                      f"from {model.num_timesteps} interactions, with stop={model.stop.spelling!r}")  # fmt: skip
        self.logger.record("search/refining", float(model.refining))
