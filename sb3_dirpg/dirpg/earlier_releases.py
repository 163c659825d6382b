"""The settings of earlier releases: what each became, and how hyperparameter files, ``load`` keywords and models
saved by those releases are read (as what replaced them, with a FutureWarning, or refused naming what to do)."""

from __future__ import annotations

import warnings
from typing import Any

from sb3_dirpg.dirpg.workers import SearchWorkers, replace_legacy_backend
from sb3_dirpg.search.priority import LEGACY_PRIORITY_SETTINGS, replace_legacy_priority
from sb3_dirpg.search.stopping import LEGACY_STOP_FLAGS, replace_legacy_flags

__all__ = ["DROPPED_SETTINGS", "FORMER_SETTINGS", "dropped_settings_message", "read_earlier_settings", "upgrade_saved_model"]

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


#: the settings of earlier releases, and what replaced them: assigning one is refused with this
FORMER_SETTINGS = {
    **DROPPED_SETTINGS,
    **{name: "the stopping rule replaced it, e.g. model.stop = {'success': {'refine': 100}}" for name in LEGACY_STOP_FLAGS},
    **{name: f"the priority rule holds it, e.g. model.priority = {{'astar': {{'{name}': ...}}}}"
       for name in LEGACY_PRIORITY_SETTINGS},
    "parallel_backend": "n_workers holds the backend, e.g. model.n_workers = {'ray': 8}",
}  # fmt: skip


#: who reads a saved model's settings, for the messages
SAVED = "DirPG.load (a model saved by an earlier release)"


def read_earlier_settings(settings: dict[str, Any], owner: str) -> dict[str, Any]:
    """:param settings: settings by name, as ``load`` or a hyperparameter file gives them
    :param owner: who reads them, for the message
    :return: the settings, with the stopping flags, ``alpha``, ``depth_first`` and ``parallel_backend`` of earlier
        releases read as the rules they spelled (with a FutureWarning)
    :raises ValueError: for a setting this release dropped or moved out of the model, naming what to do instead"""
    dropped = {name: value for name, value in settings.items() if name in DROPPED_SETTINGS}
    if dropped:
        raise ValueError(dropped_settings_message(dropped, owner))
    return replace_legacy_backend(replace_legacy_priority(replace_legacy_flags(settings, owner), owner), owner)


def upgrade_saved_model(model: Any, overrides: dict[str, Any]) -> None:
    """Give a model saved by an earlier release (SB3's ``load`` put its saved settings in its ``__dict__``) the
    settings as this release spells them, and drop those this release dropped, with a FutureWarning naming each.

    :param model: the loaded DirPG model
    :param overrides: the keyword arguments given to ``load`` (they win over the saved settings)
    """
    legacy = {name: model.__dict__.pop(name) for name in LEGACY_STOP_FLAGS if name in model.__dict__}
    if legacy and "stop" not in overrides:
        saved = {**legacy, "search_budget": model.search_budget}
        model.stop = replace_legacy_flags(saved, SAVED)["stop"]
    legacy = {name: model.__dict__.pop(name) for name in LEGACY_PRIORITY_SETTINGS if name in model.__dict__}
    if isinstance(model.priority, str) and "priority" not in overrides:  # saved before the priority rule
        model.priority = replace_legacy_priority({"priority": model.priority, **legacy}, SAVED)["priority"]  # fmt: skip
    if not isinstance(model.n_workers, SearchWorkers) and "n_workers" not in overrides:  # saved before SearchWorkers
        saved = {"n_workers": model.n_workers, "parallel_backend": model.__dict__.pop("parallel_backend", "process")}
        model.n_workers = replace_legacy_backend(saved, SAVED)["n_workers"]
    model.__dict__.pop("parallel_backend", None)
    dropped = {name: model.__dict__.pop(name) for name in DROPPED_SETTINGS if name in model.__dict__}
    if dropped:
        warnings.warn(dropped_settings_message(dropped, f"{SAVED}; they are ignored"), FutureWarning, stacklevel=4)
