"""The MiniGrid table's report: the table, its figure and the targets judged on it, from the cells' records."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from experiments.common import refresh_block, write_json
from experiments.minigrid_table.cells import (
    METHODS,
    UNSOLVED,
    as_list,
    cell_budget,
    curve,
    entry,
    finished,
    masks_actions,
    overrides,
    read_record,
    zoo_budget,
)  # fmt: skip
from experiments.minigrid_targets import (
    LEVEL,
    SIDE_BY_SIDE,
    TIE_BREAKS,
    format_count,
    format_minutes,
    judge,
    success_at,
    targets_table,
)


def interactions_to(points: Sequence[dict[str, Any]], level: float = LEVEL, mode: str = "sampled") -> float:
    """:param points: a record's points
    :param level: the success level
    :param mode: ``sampled`` or ``greedy``
    :return: interactions of the first evaluation at or above ``level`` (inf if none)"""
    for point in points:
        if point[mode]["success"] >= level:
            return float(point["interactions"])
    return float("inf")


def wall_to(points: Sequence[dict[str, Any]], level: float = LEVEL) -> float:
    """:param points: a record's points
    :param level: the success level
    :return: training wall time (evaluations excluded) to the first evaluation at or above ``level`` with sampled and
        with greedy actions (inf if none)"""
    for point in points:
        if min(point["sampled"]["success"], point["greedy"]["success"]) >= level:
            return float(point["wall_s"])
    return float("inf")


def _name(spec: Any) -> str:
    """:param spec: an import path, or a one-key dict of an import path and its keyword arguments
    :return: the class or function name"""
    return str(next(iter(spec)) if isinstance(spec, dict) else spec).rsplit(".", 1)[-1]


def _kwargs(spec: Any) -> dict[str, Any]:
    """:param spec: an import path, or a one-key dict of an import path and its keyword arguments
    :return: the keyword arguments (empty for a bare import path)"""
    return dict(next(iter(spec.values())) or {}) if isinstance(spec, dict) else {}


def _label(spec: Any) -> str:
    """:param spec: an import path, or a one-key dict of an import path and its keyword arguments
    :return: the class or function name, with its keyword arguments if any: ``FrameStackObservation(stack_size=4)``"""
    kwargs = _kwargs(spec)
    return _name(spec) + (f"({', '.join(f'{key}={value!r}' for key, value in kwargs.items())})" if kwargs else "")


def _reward_terms(specs: Sequence[Any]) -> str:
    """:param specs: an entry's ``env_wrapper`` list
    :return: the reward the reward wrappers in it give, e.g. ``goal 100, door 30, pickup 5``"""
    from sb3_dirpg.envs.minigrid.progress import DEFAULT_PROGRESS_REWARD
    from sb3_dirpg.envs.minigrid.wrappers import DEFAULT_DOOR_REWARD, DEFAULT_GOAL_REWARD, DEFAULT_PICKUP_REWARD

    terms = []
    for spec in specs:
        kwargs = _kwargs(spec)
        if _name(spec) == "MiniGridShapedReward":
            values = {"goal": kwargs.get("goal_reward", DEFAULT_GOAL_REWARD),
                      "door": kwargs.get("door_reward", DEFAULT_DOOR_REWARD),
                      "pickup": kwargs.get("pickup_reward", DEFAULT_PICKUP_REWARD)}  # fmt: skip
            terms += [f"{name} {value:g}" for name, value in values.items() if value]
        elif _name(spec) == "MiniGridProgressReward":
            terms.append(f"progress {kwargs.get('progress_reward', DEFAULT_PROGRESS_REWARD):g}")
    return ", ".join(terms)


def describe(env_id: str, method: str) -> dict[str, str]:
    """:param env_id: the env
    :param method: one of :data:`METHODS`
    :return: the reward, observation and heuristic the method uses (a ``ppo`` method on an env whose wrappers mask
        actions says that it trains MaskablePPO)"""
    settings = {**entry(env_id, method), **overrides(env_id, method)}
    specs = as_list(settings.get("env_wrapper"))
    terms = _reward_terms(specs)
    steps = (settings.get("env_kwargs") or {}).get("max_steps", "env default")
    heuristic = settings.get("heuristic", "none")
    learner = "; MaskablePPO, learns with the masks" if method.startswith("ppo") and masks_actions(specs) else ""
    return {
        "reward": f"{f'shaped ({terms})' if terms else 'MiniGrid sparse'}, max_steps {steps}",
        "observation": "+".join(_label(w) for w in specs if not _name(w).endswith("Reward")) or "raw",
        "heuristic": _name(heuristic) + (
            f" ({settings['priority']})" if "priority" in settings else ""
        ) + learner,
    }


# a variant's settings are those of its --params (docs/hyperparameters.md lists them), not stored with its runs
VARIANT_SETTINGS = {"reward": "variant, see hyperparameters", "observation": "", "heuristic": ""}


def mean_success(curves: Sequence[Any], budgets: Sequence[float], mark: float, column: int = 1) -> float | None:
    """:param curves: one method's ``[interactions, sampled, greedy]`` rows per seed
    :param budgets: each seed's budget (seeds whose budget is short of ``mark`` are left out)
    :param mark: interactions where to read the success
    :param column: 1 for sampled success, 2 for greedy
    :return: the mean success there, None while a seed has not got there"""
    values = [success_at(curve, mark, column) for curve, budget in zip(curves, budgets) if budget >= mark]
    known = [value for value in values if value is not None]
    return float(np.mean(known)) if known and len(known) == len(values) else None


def summarize(runs: Path, envs: Sequence[str], methods: Sequence[str]) -> dict[str, Any]:
    """:param runs: the folder of all cells
    :param envs: the envs to report
    :param methods: the methods to report (``method@tag`` for a variant)
    :return: per env and method: seeds, median interactions to 0.9 (sampled), success at rl-zoo3's budget and at the
        end (mean over seeds, sampled and greedy), mean wall time and training interactions per second (both without
        the evaluations), and the settings"""
    summary: dict[str, Any] = {}
    for env_id in envs:
        budget, zoo = cell_budget(env_id), zoo_budget(env_id)
        rows = {}
        for method in methods:
            records, seed_ids = [], []
            for folder in sorted((runs / env_id).glob(f"{method}-s*")):
                record = read_record(folder) if method == folder.name.rsplit("-s", 1)[0] else None
                if record is not None:
                    records.append(record)
                    seed_ids.append(int(folder.name.rsplit("-s", 1)[1]))
            if not records:
                continue
            reach = [interactions_to(r["points"]) for r in records]
            reach_greedy = [interactions_to(r["points"], mode="greedy") for r in records]
            curves = [curve(r) for r in records]

            end = max(r["budget"] for r in records)  # seeds stopped short of it (PPO's 1M rule) are left out
            budgets = [r["budget"] for r in records]
            rows[method] = {
                "seeds": len(records),
                "seed_ids": seed_ids,
                "finished": int(sum(finished(r) for r in records if r["points"])),
                "stopped_early": int(sum("stopped_early" in r for r in records)),
                "budgets": [int(budget) for budget in budgets],
                "to_level": float(np.median(reach)),
                "reached": int(np.isfinite(reach).sum()),
                "to_level_greedy": float(np.median(reach_greedy)),
                "reached_greedy": int(np.isfinite(reach_greedy).sum()),
                "wall_to_level": float(np.median([wall_to(r["points"]) for r in records])),
                "at_zoo_budget": mean_success(curves, budgets, min(zoo, end)),
                "at_end": mean_success(curves, budgets, end),
                "at_end_greedy": mean_success(curves, budgets, end, column=2),
                "wall_s": float(np.mean([r["points"][-1]["wall_s"] for r in records if r["points"] and r["budget"] >= end])),
                "rate": float(np.mean([r["points"][-1]["interactions"] / r["points"][-1]["wall_s"]
                                       for r in records if r["points"] and r["points"][-1]["wall_s"] > 0] or [np.nan])),
                "curves": curves,
                **(describe(env_id, method) if "@" not in method else VARIANT_SETTINGS),
            }
        summary[env_id] = {"zoo_budget": zoo, "budget": budget, "unsolved": env_id in UNSOLVED, "methods": rows}
    return summary


def _fmt_rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"



def _seeds(method: dict[str, Any]) -> str:
    """:param method: one method's row of the summary
    :return: ``3 (3)``: seeds (finished), how many were stopped short of the others' budget, and how many stopped early
        by the rule (:data:`STOP_LEVEL`)"""
    end = max(method["budgets"])
    short = {budget: method["budgets"].count(budget) for budget in sorted(set(method["budgets"])) if budget < end}
    early = f"; {method['stopped_early']} stopped early" if method.get("stopped_early") else ""
    shorts = "".join(f"; {n} to {format_count(b)}" for b, n in short.items())
    return f"{method['seeds']} ({method['finished']}{shorts}{early})"


def markdown_table(summary: dict[str, Any]) -> str:
    """:param summary: :func:`summarize`'s output
    :return: the table in Markdown"""
    lines = [
        "| env | budget (rl-zoo3) | method | seeds (finished) | median interactions to 0.9, sampled | greedy | "
        "median wall time to 0.9, both | success at rl-zoo3 budget | success at end, sampled / greedy | wall time | "
        "interactions/s | reward | observation | heuristic |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |",
    ]
    for env_id, row in summary.items():
        name = env_id.removeprefix("MiniGrid-").removesuffix("-v0") + (" (Unsolved)" if row["unsolved"] else "")
        for method, m in row["methods"].items():
            lines.append(
                f"| {name} | {format_count(row['budget'])} ({format_count(row['zoo_budget'])}) | {method} | {_seeds(m)} | "
                f"{format_count(m['to_level'])} ({m['reached']}/{m['seeds']}) | "
                f"{format_count(m['to_level_greedy'])} ({m['reached_greedy']}/{m['seeds']}) | "
                f"{format_minutes(m['wall_to_level'])} | "
                f"{_fmt_rate(m['at_zoo_budget'])} | {_fmt_rate(m['at_end'])} / {_fmt_rate(m['at_end_greedy'])} | "
                f"{m['wall_s'] / 60:.1f} min | {m['rate']:,.0f} | {m['reward']} | {m['observation']} | {m['heuristic']} |"
            )
    return "\n".join(lines) + "\n"


def plot(summary: dict[str, Any]) -> Any:
    """:param summary: :func:`summarize`'s output
    :return: a figure: sampled success against interactions, one panel per env, mean over seeds"""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = list(summary)
    cols = 4
    rows = max(1, int(np.ceil(len(envs) / cols)))
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3 * rows), squeeze=False)
    for ax, env_id in zip(axes.flat, envs):
        for method, m in summary[env_id]["methods"].items():
            length = min(len(c) for c in m["curves"])
            curves = np.array([c[:length] for c in m["curves"]], dtype=float)
            if length:
                ax.plot(curves[0, :, 0] / 1e6, curves[:, :, 1].mean(axis=0), label=f"{method} ({m['seeds']})")
        ax.axvline(summary[env_id]["zoo_budget"] / 1e6, color="grey", lw=0.5, ls="--")
        ax.set_title(env_id.removeprefix("MiniGrid-").removesuffix("-v0"), fontsize=9)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("interactions (M)", fontsize=8)
    for ax in list(axes.flat)[len(envs):]:
        ax.axis("off")
    axes.flat[0].set_ylabel("success (sampled actions)")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def methods_in(runs: Path, envs: Sequence[str]) -> list[str]:
    """The methods and variants that have a cell in ``runs``, the table's methods first.

    :param runs: the folder of all cells
    :param envs: the envs to look in
    :return: e.g. ``["dirpg", "reinforce", "ppo", "dirpg@fine"]``
    """
    found = {folder.parent.name.rsplit("-s", 1)[0] for env_id in envs for folder in (runs / env_id).glob("*-s*/record.json")}
    return [method for method in METHODS if method in found] + sorted(found - set(METHODS))


def report(runs: Path, out: Path, envs: Sequence[str], methods: Sequence[str], page: Path | None = None) -> dict[str, Any]:
    """Write ``minigrid_table.{json,md,png}`` into ``out``, and the targets judged on them
    (:mod:`~experiments.minigrid_targets`) into ``minigrid_targets.{json,md}``.

    :param runs: the folder of all cells
    :param out: the results folder
    :param envs: the envs to report
    :param methods: the methods to report
    :param page: a results page whose ``minigrid table`` and ``minigrid targets`` blocks show these tables (they are
        rewritten)
    :return: the summary
    """
    summary = summarize(runs, envs, methods)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "minigrid_table.json", summary)
    (out / "minigrid_table.md").write_text(markdown_table(summary))
    judged = [*METHODS, *[f"{method}@{tag}" for tag in (*TIE_BREAKS, SIDE_BY_SIDE) for method in METHODS]]
    verdict = judge(summarize(runs, envs, judged))
    write_json(out / "minigrid_targets.json", verdict)
    (out / "minigrid_targets.md").write_text(targets_table(verdict))
    if page is not None:
        refresh_block(page, "minigrid table", markdown_table(summary))
        refresh_block(page, "minigrid targets", targets_table(verdict))
    if any(row["methods"] for row in summary.values()):
        plot(summary).savefig(out / "minigrid_table.png", dpi=110)
    print(markdown_table(summary))
    return summary
