"""Optuna samplers for rl-zoo3's ``--optimize`` with DirPG, REINFORCE and CEM.

rl-zoo3 calls a sampler as ``sampler(trial, n_actions, n_envs, additional_args)`` and merges the returned keyword
arguments into the YAML entry's. The bridge (:mod:`sb3_dirpg.integrations.zoo`) also passes ``defaults``, the entry's
preprocessed hyperparameters, so that a sampler can keep the entry's features extractor when it samples the
network size, sample α only where the entry searches with a heuristic, and keep the sign of the entry's ε.

The converters turn the raw trial parameters (what ``optuna`` stores, and what rl-zoo3's ``--trial-id`` reloads into
the YAML entry) into keyword arguments, except for two keys that only make sense against an entry and that
:func:`apply_to_entry` resolves: ``net_arch`` (moved into the entry's ``policy_kwargs``) and ``abs_epsilon`` (given the
sign of the entry's ε).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import optuna

from sb3_dirpg.search.priority import AStarPriority, priority_rule

NET_ARCHS: dict[str, list[int]] = {"none": [], "tiny": [64], "small": [64, 64], "medium": [256, 256]}
SEARCH_BUDGETS = [10, 30, 100, 300, 1000, 3000]
N_ROLLOUTS = [8, 16, 30, 64]


def apply_to_entry(params: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    """Resolve the entry-relative keys of sampled parameters.

    * ``net_arch`` (top level) goes into a copy of the entry's ``policy_kwargs``, keeping its features extractor;
    * ``abs_epsilon`` becomes ``epsilon`` with the sign of the entry's ``epsilon`` (positive when it has none), so
      tuning never turns a risk-averse entry into a risk-seeking one;
    * ``astar_alpha`` becomes the ``alpha`` of the entry's A* ``priority`` (keeping its ``depth_first``).

    :param params: keyword arguments, possibly with ``net_arch``, ``abs_epsilon`` and ``astar_alpha``
    :param entry: the entry's hyperparameters (``policy_kwargs`` as a dict, if any)
    :return: a new dict with those keys resolved
    """
    out = dict(params)
    if "net_arch" in out:
        base = entry.get("policy_kwargs") or {}
        if not isinstance(base, dict):
            raise ValueError(f"policy_kwargs must be a dict by now (rl-zoo3 evaluates strings first), got {base!r}")
        out["policy_kwargs"] = {**base, "net_arch": out.pop("net_arch")}
    if "abs_epsilon" in out:
        sign = -1.0 if float(entry.get("epsilon", 1.0)) < 0 else 1.0
        out["epsilon"] = sign * float(out.pop("abs_epsilon"))
    if "astar_alpha" in out:
        depth_first = priority_rule(entry.get("priority", "astar")).depth_first
        out["priority"] = AStarPriority(alpha=float(out.pop("astar_alpha")), depth_first=depth_first)
    return out


def _net_arch(params: dict[str, Any]) -> dict[str, Any]:
    """:param params: trial parameters, ``net_arch`` as a name of :data:`NET_ARCHS`
    :return: a copy with ``net_arch`` as a list of layer sizes"""
    out = dict(params)
    if "net_arch" in out:
        out["net_arch"] = list(NET_ARCHS[out["net_arch"]])
    return out


def convert_dirpg_params(params: dict[str, Any]) -> dict[str, Any]:
    """Raw trial parameters of :func:`sample_dirpg_params` to DirPG keyword arguments.

    :param params: the trial's parameters
    :return: keyword arguments, ``net_arch`` (a list) and ``abs_epsilon`` still to resolve with :func:`apply_to_entry`
    """
    return _net_arch(params)


def sample_dirpg_params(
    trial: optuna.Trial,
    n_actions: int,
    n_envs: int,
    additional_args: dict[str, Any],
    defaults: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Sample ε (its magnitude; the sign is the entry's), the search budget, α (only with ``priority="astar"``),
    the learning rate, early stop and the size of the MLP head.

    :param trial: the optuna trial
    :param n_actions: unused (rl-zoo3's signature)
    :param n_envs: unused
    :param additional_args: unused
    :param defaults: the entry's preprocessed hyperparameters, or None
    :return: DirPG keyword arguments
    """
    defaults = defaults or {}
    params: dict[str, Any] = {
        "abs_epsilon": trial.suggest_float("abs_epsilon", 0.01, 10.0, log=True),
        "search_budget": trial.suggest_categorical("search_budget", SEARCH_BUDGETS),
        "learning_rate": trial.suggest_float("learning_rate", 1e-4, 3e-2, log=True),
        "stop": trial.suggest_categorical("stop", ["improvement", "budget"]),
        "net_arch": trial.suggest_categorical("net_arch", list(NET_ARCHS)),
    }
    if defaults.get("priority") is not None and priority_rule(defaults["priority"]).name == "astar":
        params["astar_alpha"] = trial.suggest_float("astar_alpha", 0.0, 1.0)
    resolved = apply_to_entry(convert_dirpg_params(params), defaults)
    trial.set_user_attr("epsilon", resolved["epsilon"])
    return resolved


def convert_rollout_params(params: dict[str, Any]) -> dict[str, Any]:
    """Raw trial parameters of the REINFORCE and CEM samplers to keyword arguments.

    :param params: the trial's parameters
    :return: keyword arguments, ``net_arch`` (a list) still to resolve with :func:`apply_to_entry`
    """
    return _net_arch(params)


def _rollout_params(
    trial: optuna.Trial, sample_specific: Callable[[optuna.Trial], dict[str, Any]], defaults: dict[str, Any] | None
) -> dict[str, Any]:
    """Sample what the rollout baselines share (learning rate, rollouts per episode, MLP head) and their own values.

    :param trial: the optuna trial
    :param sample_specific: samples the algorithm's own values (called between the shared ones, in a fixed order)
    :param defaults: the entry's preprocessed hyperparameters, or None
    :return: keyword arguments
    """
    params = {
        "learning_rate": trial.suggest_float("learning_rate", 1e-4, 3e-2, log=True),
        "n_rollouts": trial.suggest_categorical("n_rollouts", N_ROLLOUTS),
        **sample_specific(trial),
        "net_arch": trial.suggest_categorical("net_arch", list(NET_ARCHS)),
    }
    return apply_to_entry(convert_rollout_params(params), defaults or {})


def sample_reinforce_params(
    trial: optuna.Trial,
    n_actions: int,
    n_envs: int,
    additional_args: dict[str, Any],
    defaults: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Sample the learning rate, the rollouts per episode, the REINFORCE variant and the size of the MLP head.

    :param trial: the optuna trial
    :param n_actions: unused (rl-zoo3's signature)
    :param n_envs: unused
    :param additional_args: unused
    :param defaults: the entry's preprocessed hyperparameters, or None
    :return: Reinforce keyword arguments
    """
    return _rollout_params(trial, lambda t: {"variant": t.suggest_categorical("variant", ["trajectory", "action"])}, defaults)


def sample_cem_params(
    trial: optuna.Trial,
    n_actions: int,
    n_envs: int,
    additional_args: dict[str, Any],
    defaults: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Sample the learning rate, the rollouts per episode, the elite size and the size of the MLP head.

    :param trial: the optuna trial
    :param n_actions: unused (rl-zoo3's signature)
    :param n_envs: unused
    :param additional_args: unused
    :param defaults: the entry's preprocessed hyperparameters, or None
    :return: CEM keyword arguments
    """
    return _rollout_params(trial, lambda t: {"n_elite": t.suggest_categorical("n_elite", [1, 2, 4])}, defaults)


SAMPLERS = {"dirpg": sample_dirpg_params, "reinforce": sample_reinforce_params, "cem": sample_cem_params}
CONVERTERS = {"dirpg": convert_dirpg_params, "reinforce": convert_rollout_params, "cem": convert_rollout_params}
