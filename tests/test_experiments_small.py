"""Smoke tests of the paper-reproduction experiments bandit, deepsea_risk and gaussian_choice at tiny settings."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from experiments import bandit, deepsea_risk, gaussian_choice

pytestmark = pytest.mark.integration


def _read(out: Path, name: str) -> dict:
    """:param out: output folder
    :param name: experiment name
    :return: the JSON written, after checking the PNG exists"""
    assert (out / f"{name}.png").stat().st_size > 0
    return json.loads((out / f"{name}.json").read_text())


def test_gaussian_choice_small(tmp_path: Path) -> None:
    gaussian_choice.main(["--out", str(tmp_path), "--grid", "41", "--epsilons", "-1", "1"])
    data = _read(tmp_path, "gaussian_choice")
    assert {"p", "curves", "argmax_l", "argmax_classical", "max_abs_error_vs_quad", "wall_time_s"} <= set(data)
    assert data["max_abs_error_vs_quad"] < 1e-6
    # controllable risk: l is maximised at p = 1/2 for ε > 0, the classical objective at p = 1
    assert data["curves"]["1"]["argmax_l"] == [0.5, 0.5]
    assert data["curves"]["1"]["argmax_classical"] == [1.0, 1.0]
    # environment noise alone (p = 1) is worth nothing to l, for either sign of ε
    assert abs(data["curves"]["-1"]["l_at_p1"]) < 1e-9


def test_gaussian_choice_objective_matches_quad() -> None:
    for p, eps in ((0.3, 2.0), (0.7, -0.5)):
        assert gaussian_choice.controllable_risk_objective(p, eps)[0] == pytest.approx(gaussian_choice.quad_objective(p, eps))


def test_deepsea_exact_objective_is_gaussian_choice() -> None:
    """Mixing only LLLL and RRRR with probability p of RRRR gives exactly the Gaussian choice objective."""
    import gymnasium as gym
    import torch as th

    env = gym.make(deepsea_risk.ENV_ID).unwrapped
    actions, _, base, corner = deepsea_risk.enumerate_paths(env)
    p = 0.3
    probs = np.zeros(len(actions))
    probs[actions.sum(1) == 0], probs[actions.min(1) == 1] = 1 - p, p
    with np.errstate(divide="ignore"):
        log_p = th.as_tensor(np.log(probs))
    value = float(deepsea_risk.exact_objective(log_p, base, corner, 1.0, env))
    assert value == pytest.approx(gaussian_choice.controllable_risk_objective(p, 1.0)[0], abs=1e-6)


def test_deepsea_risk_small(tmp_path: Path) -> None:
    args = ["--seeds", "1", "--episodes", "16", "--checkpoints", "2", "--epsilons", "-1", "1", "--flow-steps", "10"]
    deepsea_risk.main(["--out", str(tmp_path), *args, "--check-episodes", "20"])
    data = _read(tmp_path, "deepsea_risk")
    assert {"summary", "exact_gradient_flow", "runs", "epsilons", "wall_time_s"} <= set(data)
    run = data["runs"]["1"][0]
    assert len(run["pi_LLLL"]) == 3 and run["episodes"][-1] >= 16
    assert all(0.0 <= p <= 1.0 for p in run["pi_LLLL"] + run["pi_RRRR"])


def test_bandit_small(tmp_path: Path) -> None:
    bandit.main(["--out", str(tmp_path), "--seeds", "2", "--queries", "300", "--nodes", "5"])
    data = _read(tmp_path, "bandit")
    expected = {"curves", "final_return_last10pct", "grid_queries", "grid_steps", "best_expected_return", "wall_time_s"}
    assert expected <= set(data)
    for key in ("DirPG", "UCB semi-bandit", "UCB full-bandit"):
        assert len(data["curves"][key]["queries"]["mean"]) == len(data["grid_queries"])
    assert len(data["curves"]["search_spent"]["mean"]) == len(data["grid_episodes"])
