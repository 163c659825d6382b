"""``python -m experiments.priority_sweep``: the paper's priority sweep on MultiRoom-N6, in the shipped setting.

The paper's MiniGrid figure compares the search priority of DirPG: the Gumbel priority alone, and A* with the bound
weighted by α = 0, 0.1, 0.2, 0.3 and 1. Its claims: α = 0 learns well; raising α up to 0.3 improves learning; past that
learning gets worse, α = 1 the worst. With a model trained for 1.2M interactions and then frozen: the smaller α, the more
trajectories the search completes but the lower their returns; past α = 0.4 both shrink.

The learning runs are :mod:`experiments.multiroom`'s methods ``sweep-gumbel``, ``sweep-a0`` ... ``sweep-a1``
(the shipped N6 entry, only the priority changed; ``sweep-a0.2`` is the shipped setting) and ``cem`` (30 rollouts)::

    python -m experiments.multiroom --methods sweep-gumbel sweep-a0 sweep-a0.1 sweep-a0.2 sweep-a0.3 \\
        sweep-a1 cem --seeds 0 1 2 3 4 --resume --runs-dir runs/sweep

This module reads their records, searches with the frozen 1.2M model of one run, and writes ``priority_sweep.json``,
``priority_sweep.png`` and ``priority_sweep.md`` (the table and the claim-by-claim verdicts).
"""

from __future__ import annotations

import argparse
import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from experiments.common import default_out, positive_int
from experiments.multiroom import greedy_interactions_to

ARMS = ("sweep-gumbel", "sweep-a0", "sweep-a0.1", "sweep-a0.2", "sweep-a0.3", "sweep-a1")
BASELINES = ("cem",)
RISING = ("sweep-a0", "sweep-a0.1", "sweep-a0.2", "sweep-a0.3")  # the claim: learning improves along these
FROZEN_PRIORITIES = (("gumbel", 0.0),) + tuple(("astar", alpha) for alpha in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 1.0))
GRID = np.arange(0, 3_000_001, 100_000)  # where the greedy success curves are compared
LEVEL = 0.05  # significance level of the verdicts' tests


def load_runs(runs_dir: Path, methods: Sequence[str]) -> dict[str, dict[int, dict[str, Any]]]:
    """:param runs_dir: folder of the learning runs' folders (``METHOD-sSEED/curve.json``)
    :param methods: the methods to read
    :return: per method and seed, the run's record"""
    runs: dict[str, dict[int, dict[str, Any]]] = {}
    for path in sorted(runs_dir.glob("*/curve.json")):
        record = json.loads(path.read_text())
        if record["method"] in methods:
            runs.setdefault(record["method"], {})[int(record["seed"])] = record
    return {m: dict(sorted(runs[m].items())) for m in methods if m in runs}


def success_curve(record: dict[str, Any]) -> np.ndarray:
    """:param record: a run's record
    :return: its greedy success on :data:`GRID`, linearly between evaluations (NaN past the run's last one)"""
    points = np.asarray(record["points"], dtype=np.float64)
    curve = np.interp(GRID, points[:, 0], points[:, 1])
    curve[GRID > points[-1, 0]] = np.nan
    return curve


def summarize(runs: dict[str, dict[int, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """:param runs: per method and seed, the record
    :return: per method: per seed the interactions to 0.9, the final success and the area under the greedy success
        curve (its mean over :data:`GRID`, finished runs only); the median and mean over seeds; the mean curves of
        success and, for DirPG, of ``D(a_opt)`` and ``D(a_dir)``"""
    out: dict[str, dict[str, Any]] = {}
    for method, by_seed in runs.items():
        curves = {seed: success_curve(record) for seed, record in by_seed.items()}
        finished = [seed for seed, curve in curves.items() if not np.isnan(curve).any()]
        per_seed = {
            seed: {
                "to_0.9": greedy_interactions_to(record["points"], 0.9),
                "final": float(record["points"][-1][1]),
                "interactions": int(record["points"][-1][0]),
                "auc": float(np.mean(curves[seed])) if seed in finished else None,
                "wall_s": float(record["wall_s"]),
            }
            for seed, record in by_seed.items()
        }
        aucs = [per_seed[seed]["auc"] for seed in finished]
        summary: dict[str, Any] = {
            "per_seed": per_seed,
            "finished": finished,
            "median_to_0.9": _median_or_none([per_seed[s]["to_0.9"] for s in finished]),
            "mean_auc": float(np.mean(aucs)) if aucs else None,
            "success_curve": np.nanmean([curves[s] for s in finished], axis=0).tolist() if finished else None,
        }
        searched = [np.asarray(record["search"]) for record in by_seed.values() if record.get("search")]
        if searched:
            for column, key in ((1, "d_opt"), (2, "d_dir")):
                with warnings.catch_warnings():  # points past every run's end stay NaN
                    warnings.simplefilter("ignore", RuntimeWarning)
                    summary[key] = np.nanmean([np.interp(GRID[1:], s[:, 0], s[:, column], right=np.nan) for s in searched],
                                              axis=0).tolist()  # fmt: skip
        out[method] = summary
    return out


def frozen_search(runs_dir: Path, method: str, seed: int, n_maps: int, budget: int = 2900) -> dict[str, dict[str, float]]:
    """Search held-out N6 maps with one run's model frozen at 1.2M interactions, with each priority of
    :data:`FROZEN_PRIORITIES` and the same budget, noise and maps (no early stop, no stop on success, no pruning).

    :param runs_dir: folder of the learning runs' folders
    :param method: the run's method
    :param seed: the run's seed
    :param n_maps: maps searched per priority
    :param budget: interactions of the ``a_dir`` search per map
    :return: per priority: the mean number of trajectories completed per map and the mean return of those
        trajectories, with their standard errors
    """
    from experiments.multiroom import FROZEN_AT, METHODS
    from experiments.multiroom_figure import quality_vs_quantity
    from experiments.multiroom_setup import ENV_ID, MAX_STEPS, make_model
    from sb3_dirpg import DirPG

    path = runs_dir / f"{method}-s{seed}" / f"model_{FROZEN_AT}.zip"
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: run {method} seed {seed} past {FROZEN_AT} interactions first")
    model = DirPG.load(path, env=make_model(METHODS[method], seed).get_env(), device="cpu")
    raw = quality_vs_quantity(model, FROZEN_PRIORITIES, n_maps, ENV_ID, MAX_STEPS, budget)

    def mean_and_error(values: list[float]) -> tuple[float, float]:
        return float(np.mean(values)), float(stats.sem(values)) if len(values) > 1 else 0.0

    out = {}
    for label, found in raw.items():
        (count, count_err), (ret, ret_err) = mean_and_error(found["trajectories"]), mean_and_error(found["returns"])
        out[label] = {"trajectories": count, "trajectories_sem": count_err, "return": ret, "return_sem": ret_err}
    return out


def _median_or_none(values: list[int | None]) -> float | None:
    """:param values: interactions to a level per run, None where never reached
    :return: their median (never reached counts as infinite), None if infinite or no runs"""
    median = float(np.median([np.inf if v is None else v for v in values])) if values else np.inf
    return median if np.isfinite(median) else None


def _alpha(method: str) -> float:
    return float(method.rsplit("-a", 1)[1])


def verdicts(summary: dict[str, dict[str, Any]], frozen: dict[str, dict[str, float]] | None) -> list[dict[str, str]]:
    """Judge each claim of the paper on the measurements: ``holds``, ``contradicted`` or ``not shown`` (a test at
    :data:`LEVEL` neither way).

    :param summary: :func:`summarize`'s output
    :param frozen: :func:`frozen_search`'s output, or None
    :return: one ``{"claim", "measured", "verdict"}`` per claim
    """
    out = []

    def auc(method: str) -> list[float]:
        info = summary.get(method, {})
        return [info["per_seed"][s]["auc"] for s in info.get("finished", [])]

    if auc("sweep-a0"):
        reached = [summary["sweep-a0"]["per_seed"][s]["to_0.9"] is not None for s in summary["sweep-a0"]["finished"]]
        out.append({
            "claim": "α = 0 learns well",
            "measured": f"{sum(reached)} of {len(reached)} seeds reach 0.9 greedy success by 3M",
            "verdict": "holds" if sum(reached) * 2 > len(reached) else "contradicted",
        })  # fmt: skip
    rising = [(a, v) for m in RISING for a, v in ((_alpha(m), x) for x in auc(m))]
    if len({a for a, _ in rising}) >= 3:
        rho, p = stats.spearmanr([a for a, _ in rising], [v for _, v in rising])
        out.append({
            "claim": "raising α from 0 to 0.3 improves learning",
            "measured": f"Spearman ρ = {rho:.2f} between α and the area under the success curve (p = {p:.3f}, "
                        f"{len(rising)} runs)",
            "verdict": "holds" if rho > 0 and p < LEVEL else "contradicted" if rho < 0 and p < LEVEL else "not shown",
        })  # fmt: skip
    best_low = max(RISING, key=lambda m: np.mean(auc(m)) if auc(m) else -np.inf)
    if auc("sweep-a1") and auc(best_low):
        p_worse = stats.mannwhitneyu(auc("sweep-a1"), auc(best_low), alternative="less").pvalue
        p_better = stats.mannwhitneyu(auc("sweep-a1"), auc(best_low), alternative="greater").pvalue
        worst = min((m for m in ARMS if m != "sweep-gumbel" and auc(m)), key=lambda m: np.mean(auc(m)))
        out.append({
            "claim": "past α = 0.3 learning gets worse, α = 1 the worst",
            "measured": f"area {np.mean(auc('sweep-a1')):.3f} at α = 1 against {np.mean(auc(best_low)):.3f} at the best "
                        f"of α ≤ 0.3 ({best_low}; one-sided Mann-Whitney p = {p_worse:.3f}); the lowest A* arm is {worst}",
            "verdict": "holds" if p_worse < LEVEL and worst == "sweep-a1" else "contradicted" if p_better < LEVEL
            else "not shown",
        })  # fmt: skip
    if frozen:
        alphas = [(float(label.split("=")[1]), info) for label, info in frozen.items() if label.startswith("astar")]
        low = [(a, info) for a, info in alphas if a <= 0.4]
        rho_count = stats.spearmanr([a for a, _ in low], [i["trajectories"] for _, i in low])[0]
        rho_ret = stats.spearmanr([a for a, _ in low], [i["return"] for _, i in low])[0]
        out.append({
            "claim": "frozen at 1.2M: the smaller α, the more trajectories and the lower their returns (α ≤ 0.4)",
            "measured": f"Spearman ρ(α, trajectories) = {rho_count:.2f}, ρ(α, mean return) = {rho_ret:.2f} over "
                        f"{len(low)} values of α",
            "verdict": "holds" if rho_count < 0 and rho_ret > 0 else "contradicted",
        })  # fmt: skip
        at = dict(alphas)
        if 0.4 in at and 1.0 in at:
            shrink = at[1.0]["trajectories"] < at[0.4]["trajectories"] and at[1.0]["return"] < at[0.4]["return"]
            out.append({
                "claim": "frozen at 1.2M: past α = 0.4 both quality and quantity shrink",
                "measured": f"α = 0.4: {at[0.4]['trajectories']:.1f} trajectories, return {at[0.4]['return']:.1f}; "
                            f"α = 1: {at[1.0]['trajectories']:.1f}, {at[1.0]['return']:.1f}",
                "verdict": "holds" if shrink else "contradicted",
            })  # fmt: skip
    return out


def markdown(summary: dict[str, dict[str, Any]], claims: list[dict[str, str]], frozen: dict[str, Any] | None) -> str:
    """:param summary: :func:`summarize`'s output
    :param claims: :func:`verdicts`' output
    :param frozen: :func:`frozen_search`'s output, or None
    :return: the results table, the frozen search's table and the verdicts, in markdown"""

    def millions(value: float | None) -> str:
        return "-" if value is None or not np.isfinite(value) else f"{value / 1e6:.2f}M"

    lines = ["| method | seeds (finished) | to 0.9 greedy, per seed | median to 0.9 | final success, per seed | "
             "area under the success curve |", "| --- | ---: | --- | ---: | --- | ---: |"]  # fmt: skip
    for method, info in summary.items():
        seeds = info["per_seed"].values()
        to_09 = " ".join(millions(s["to_0.9"]) for s in seeds)
        finals = " ".join(f"{s['final']:.2f}" for s in seeds)
        area = "-" if info["mean_auc"] is None else f"{info['mean_auc']:.3f}"
        lines.append(f"| {method} | {len(seeds)} ({len(info['finished'])}) | {to_09} | {millions(info['median_to_0.9'])} "
                     f"| {finals} | {area} |")  # fmt: skip
    if frozen:
        lines += ["", "| priority (frozen at 1.2M) | trajectories per map | mean return of a trajectory |",
                  "| --- | ---: | ---: |"]  # fmt: skip
        for label, f in frozen.items():
            count, ret = f"{f['trajectories']:.1f} ± {f['trajectories_sem']:.1f}", f"{f['return']:.1f} ± {f['return_sem']:.1f}"
            lines.append(f"| {label} | {count} | {ret} |")
    lines += ["", "| claim | measured | verdict |", "| --- | --- | --- |"]
    lines += [f"| {c['claim']} | {c['measured']} | **{c['verdict']}** |" for c in claims]
    return "\n".join(lines) + "\n"


def plot(summary: dict[str, dict[str, Any]], frozen: dict[str, Any] | None) -> Any:
    """:param summary: :func:`summarize`'s output
    :param frozen: :func:`frozen_search`'s output, or None
    :return: a figure: greedy success per arm, D(a_opt) and D(a_dir) per arm, and the frozen search"""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(17, 4.5))
    x = GRID / 1e6
    for method, info in summary.items():
        if info["success_curve"] is not None:
            axes[0].plot(x, info["success_curve"], label=f"{method} ({len(info['finished'])} seeds)")
        if "d_opt" in info:
            (line,) = axes[1].plot(x[1:], info["d_dir"], label=f"{method} D(a_dir)")
            axes[1].plot(x[1:], info["d_opt"], ls="--", color=line.get_color())
    axes[0].set(xlabel="interactions (M)", ylabel="greedy success, held-out maps", title="learning (mean over seeds)")
    axes[1].set(xlabel="interactions (M)", ylabel="D", title="D(a_dir) (solid) and D(a_opt) (dashed)")
    for ax in axes[:2]:
        if ax.lines:
            ax.legend(fontsize=7)
    if frozen:
        labels = list(frozen)
        axes[2].errorbar([frozen[k]["trajectories"] for k in labels], [frozen[k]["return"] for k in labels],
                         xerr=[frozen[k]["trajectories_sem"] for k in labels],
                         yerr=[frozen[k]["return_sem"] for k in labels], fmt="o")  # fmt: skip
        for label in labels:
            axes[2].annotate(label, (frozen[label]["trajectories"], frozen[label]["return"]), fontsize=7)
        axes[2].set(xlabel="trajectories completed per map", ylabel="mean return of a trajectory",
                    title="frozen at 1.2M: quantity and quality")  # fmt: skip
    fig.tight_layout()
    return fig


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Gather the sweep's runs, search with the frozen model, judge the claims and write the results.

    :param argv: command line (None: ``sys.argv``)
    :return: the JSON data written
    """
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs-dir", dest="runs_dir", type=Path, default=Path("runs") / "sweep")
    parser.add_argument("--out", type=Path, default=default_out(), help="folder of the results (default: %(default)s)")
    parser.add_argument("--frozen", default="sweep-a0.3:0", help="METHOD:SEED whose 1.2M model the frozen search uses, "
                        "or 'none' (default: %(default)s)")  # fmt: skip
    parser.add_argument("--frozen-maps", dest="frozen_maps", type=positive_int, default=50,
                        help="maps per priority (default: 50)")
    args = parser.parse_args(argv)
    if args.frozen_maps < 2:
        parser.error(f"--frozen-maps must be at least 2, got {args.frozen_maps}")
    if not args.runs_dir.is_dir():
        parser.error(f"--runs-dir {args.runs_dir} is not a folder: run the sweep first (see the module's help)")
    summary = summarize(load_runs(args.runs_dir, ARMS + BASELINES))
    frozen = None
    if args.frozen != "none":
        method, _, seed = args.frozen.partition(":")
        frozen = frozen_search(args.runs_dir, method, int(seed or 0), args.frozen_maps)
    claims = verdicts(summary, frozen)
    data = {"summary": summary, "frozen": {"run": args.frozen, "maps": args.frozen_maps, "results": frozen}, "claims": claims}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "priority_sweep.json").write_text(json.dumps(data, indent=1, default=float))
    table = markdown(summary, claims, frozen)
    (args.out / "priority_sweep.md").write_text(table)
    plot(summary, frozen).savefig(args.out / "priority_sweep.png", dpi=90, bbox_inches="tight")
    print(table)
    return data


if __name__ == "__main__":
    main()
