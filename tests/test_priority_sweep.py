"""The priority sweep's report: curves on a common grid, the claims' verdicts (each able to go every way), and the
frozen-policy search from a run's 1.2M copy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from experiments import multiroom, priority_sweep
from experiments.priority_sweep import main, success_curve, summarize, verdicts


def record(method: str, seed: int, success_at: float, final: float = 1.0) -> dict:
    """A finished run whose greedy success jumps from 0 to ``final`` at ``success_at`` interactions."""
    points = [[int(t), final if t >= success_at else 0.0, 0.0] for t in range(0, 3_000_001, 100_000)]
    search = [[int(t), 1.0, 2.0, 0.5, 0.0] for t in range(100_000, 3_000_001, 100_000)]
    return {"method": method, "seed": seed, "points": points, "search": search, "wall_s": 1.0}


def runs_with(order: dict[str, float], seeds: int = 5) -> dict:
    """Runs of each arm reaching success at its interactions (seed ``s`` 50k later per seed, the same for every arm)."""
    return {m: {s: record(m, s, at + 50_000 * s) for s in range(seeds)} for m, at in order.items()}


def verdict_of(claims: list[dict], start: str) -> str:
    (claim,) = [c for c in claims if c["claim"].startswith(start)]
    return claim["verdict"]


def test_success_curve_interpolates_and_stops_at_the_last_evaluation() -> None:
    rec = {"points": [[0, 0.0, 0.0], [150_000, 0.6, 0.0], [250_000, 1.0, 0.0]]}
    curve = success_curve(rec)
    assert curve[1] == pytest.approx(0.4)
    assert curve[2] == pytest.approx(0.8)
    assert np.isnan(curve[3:]).all()


def test_verdicts_follow_the_measurements() -> None:
    """The paper's ordering gives 'holds'; the reverse ordering 'contradicted'; equal arms 'not shown'."""
    paper = runs_with({"sweep-a0": 2.0e6, "sweep-a0.1": 1.6e6, "sweep-a0.2": 1.2e6, "sweep-a0.3": 0.8e6, "sweep-a1": 2.6e6})
    claims = verdicts(summarize(paper), None)
    assert [c["verdict"] for c in claims] == ["holds", "holds", "holds"]
    reverse = runs_with({"sweep-a0": 0.5e6, "sweep-a0.1": 1.0e6, "sweep-a0.2": 1.5e6, "sweep-a0.3": 2.0e6, "sweep-a1": 0.2e6})
    claims = verdicts(summarize(reverse), None)
    assert verdict_of(claims, "raising") == "contradicted"
    assert verdict_of(claims, "past") == "contradicted"
    flat = runs_with(dict.fromkeys(("sweep-a0", "sweep-a0.1", "sweep-a0.2", "sweep-a0.3", "sweep-a1"), 1.0e6))
    claims = verdicts(summarize(flat), None)
    assert verdict_of(claims, "raising") == "not shown"
    assert verdict_of(claims, "past") == "not shown"
    never = runs_with({"sweep-a0": 4e6})
    assert verdict_of(verdicts(summarize(never), None), "α = 0") == "contradicted"


def test_frozen_claims() -> None:
    def frozen(counts: list[float], returns: list[float]) -> dict:
        alphas = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 1.0)
        return {f"astar α={a:g}": {"trajectories": c, "return": r} for a, c, r in zip(alphas, counts, returns)}

    summary = summarize(runs_with({"sweep-a0": 1e6}))
    paper = verdicts(summary, frozen([30, 25, 20, 15, 10, 8, 5], [10, 20, 30, 40, 50, 45, 30]))
    assert verdict_of(paper, "frozen at 1.2M: the smaller") == "holds"
    assert verdict_of(paper, "frozen at 1.2M: past") == "holds"
    other = verdicts(summary, frozen([10, 15, 20, 25, 30, 35, 40], [50, 40, 30, 20, 10, 20, 60]))
    assert verdict_of(other, "frozen at 1.2M: the smaller") == "contradicted"
    assert verdict_of(other, "frozen at 1.2M: past") == "contradicted"


def test_main_writes_the_report_and_the_frozen_search(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end on real runs: a short sweep-a0.3 run keeps its copy at the (lowered) freezing point, the frozen search
    runs every priority on the same maps, and the report names every arm that ran."""
    monkeypatch.setattr(multiroom, "FROZEN_AT", 3_000)
    runs = tmp_path / "runs"
    multiroom.run_one("sweep-a0.3", 0, 6_000, 3_000, runs, resume=False, eval_maps=2)
    multiroom.run_one("sweep-gumbel", 0, 3_000, 3_000, runs, resume=False, eval_maps=2)
    assert (runs / "sweep-a0.3-s0" / "model_3000.zip").exists()
    recorded = json.loads((runs / "sweep-a0.3-s0" / "curve.json").read_text())
    assert len(recorded["search"]) == len(recorded["points"]) - 1
    monkeypatch.setattr(priority_sweep, "FROZEN_PRIORITIES", (("gumbel", 0.0), ("astar", 0.3)))
    with pytest.raises(SystemExit):
        main(["--runs-dir", str(tmp_path / "absent"), "--out", str(tmp_path / "out")])
    data = main(["--runs-dir", str(runs), "--out", str(tmp_path / "out"), "--frozen-maps", "2"])
    assert set(data["summary"]) == {"sweep-a0.3", "sweep-gumbel"}
    assert set(data["frozen"]["results"]) == {"gumbel", "astar α=0.3"}
    assert all(r["trajectories"] >= 1 for r in data["frozen"]["results"].values())
    assert (tmp_path / "out" / "priority_sweep.png").exists()
    with pytest.raises(FileNotFoundError, match="model_3000.zip"):
        main(["--runs-dir", str(runs), "--out", str(tmp_path / "out"), "--frozen", "sweep-gumbel:1", "--frozen-maps", "2"])
