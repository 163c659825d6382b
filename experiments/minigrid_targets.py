"""The MiniGrid table's targets, judged from the table's summary (:func:`~experiments.minigrid_table.summarize`).

The targets (issue 25):

1. DirPG reaches 0.9 success (sampled actions) on every env where a baseline (REINFORCE, rl-zoo3's PPO, or PPO with
   DirPG's reward and step limit) reaches it, within the table's budget for the env;
2. on at least two thirds of those envs, DirPG's median interactions to 0.9 are lower than the best baseline's;
3. DirPG reaches 0.9 on at least two of the three envs rl-zoo3 marks Unsolved within 1e7 interactions (one seed may
   go past the table's 3M cap).

A method "reaches" 0.9 on an env when the median over its seeds of the interactions to 0.9 is finite, i.e. more than
half of its seeds got there; a tie is not "lower", and two medians at the same evaluation mark are a tie (an evaluation
lands a few interactions past its mark, by a different amount for each method). Points a run made past the env's
budget count only for target 3. A median that is not reached while seeds are still running is shown as "not reached
yet" when those seeds could still bring it under the budget; the targets count it as not reached until they finish.
Each env also lists the cells the targets still lack (:func:`missing_cells`): seeds short of 3 (for rl-zoo3's PPO on
an env past 1M, 3 seeds to 1M and one run on to the budget where all are far from 0.9 at 1M), and PPO with DirPG's
reward where rl-zoo3's PPO does not reach 0.9 or the env is Unsolved.

The table evaluates every 5 % of the budget (50k on a 1M env), so two methods can tie at an evaluation. Such a tie is
broken by the ``@fine`` cells (:data:`TIE_BREAKS`): the same training runs (same entry, same seeds; the evaluation
leaves training alone) to a shorter budget, so their evaluations come every 5 % of that. Target 2 then compares the
medians of those, for DirPG and every baseline it tied with. A tie there is broken the same way by the ``@finer`` cells
(a shorter budget again), where they have been run.

Wall times from cells run at different times are not comparable on a shared machine, so issue 44's wall-time target
is judged on the ``@side`` cells (:data:`SIDE_BY_SIDE`) only: DirPG and both PPOs trained on the same seed at the same
time, one process each, with the same evaluations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

LEVEL = 0.9
BASELINES = ("reinforce", "ppo", "ppo_same", "ppo_shaped")
#: the two PPO runs of issue 43: rl-zoo3's (repaired) and PPO with DirPG's reward, observation and network
PPOS = ("ppo", "ppo_same")
UNSOLVED_LIMIT = 10_000_000
MIN_SEEDS = 3
#: past 1M, one rl-zoo3 PPO seed of three is enough where all are below this at 1M ("far from 0.9")
PPO_FAR = 0.5
#: the tags of the cells that break a tie at the table's resolution (``--tag fine --budget B``), then at theirs
TIE_BREAKS = ("fine", "finer")
#: the tag of the cells that measure wall time side by side: DirPG and the PPOs on one seed at once, on the same machine
#: (``--tag side --methods dirpg ppo ppo_same --seeds S --procs 3``)
SIDE_BY_SIDE = "side"


def overshoot(interactions: Sequence[float]) -> float:
    """How far past its mark an evaluation may land and still count as the mark's: a quarter of the median interval.

    An evaluation runs at the first update at or after its mark (every 5 % of the budget), so its interactions exceed
    the mark by up to an episode or a search (a few hundred to a few thousand); the last one of a run lands a little
    past the budget.

    :param interactions: the interactions of a run's evaluations, in order
    :return: the slack, 0 for fewer than two evaluations
    """
    return 0.25 * float(np.median(np.diff(interactions))) if len(interactions) > 1 else 0.0


def first_reach(curve: Sequence[Sequence[float]], limit: float, level: float = LEVEL, column: int = 1) -> float:
    """:param curve: ``[interactions, sampled success, greedy success]`` rows of one run
    :param limit: the last interactions that count (an evaluation for this mark that landed just past it counts)
    :param level: the success level
    :param column: 1 for sampled success, 2 for greedy
    :return: the interactions of the first evaluation at or above ``level`` within ``limit`` (inf if none)"""
    limit += overshoot([point[0] for point in curve])
    return next((float(point[0]) for point in curve if point[0] <= limit and point[column] >= level), float("inf"))


def median_reach(curves: Sequence[Sequence[Sequence[float]]], limit: float, column: int = 1) -> float:
    """:param curves: one curve per seed
    :param limit: the last interactions that count
    :param column: 1 for sampled success, 2 for greedy
    :return: the median over seeds of :func:`first_reach` (inf when half of the seeds or more never got there)"""
    return float(np.median([first_reach(curve, limit, column=column) for curve in curves]))


def undecided(curves: Sequence[Sequence[Sequence[float]]], limit: float, budgets: Sequence[float] | None = None) -> bool:
    """Whether a median that is not reached may still be: the seeds still short of ``limit`` could reach 0.9 later.

    :param curves: one curve per seed
    :param limit: the last interactions that count
    :param budgets: each seed's own budget, where seeds were stopped short of ``limit`` (PPO's 1M rule): such a seed
        is finished at its budget, and one still running can reach 0.9 only by its budget
    :return: True when :func:`median_reach` is inf but would be finite were every running seed to reach 0.9 at its
        next evaluation"""
    ends = [min(limit, budget) for budget in budgets] if budgets is not None else [limit] * len(curves)
    hopeful = [first_reach(curve, limit) if curve and curve[-1][0] >= end else
               min(first_reach(curve, limit), end) for curve, end in zip(curves, ends)]  # fmt: skip
    return not np.isfinite(median_reach(curves, limit)) and bool(np.isfinite(np.median(hopeful)))


def success_at(curve: Sequence[Sequence[float]], interactions: float, column: int = 1) -> float | None:
    """:param curve: one run's ``[interactions, sampled success, greedy success]`` rows
    :param interactions: where to read it
    :param column: 1 for sampled success, 2 for greedy
    :return: the success of the last evaluation at or before ``interactions``, or of the one made for that mark if it
        landed just past it (:func:`overshoot`); None before the run got there"""
    if not curve or curve[-1][0] < interactions:
        return None
    limit = interactions + overshoot([point[0] for point in curve])
    return float([point for point in curve if point[0] <= limit][-1][column])


class PPOSeeds(NamedTuple):
    """What rl-zoo3's PPO has, and needs, on an env whose budget is over 1M.

    :param to_1m: seeds run to 1M
    :param to_end: seeds run to the budget
    :param wanted_end: seeds it needs run to the budget: one where all seeds are far from 0.9 at 1M, else
        :data:`MIN_SEEDS`
    """

    to_1m: int
    to_end: int
    wanted_end: int


def ppo_seeds(curves: Sequence[Sequence[Sequence[float]]], budget: float) -> PPOSeeds:
    """The issue's rule for rl-zoo3's PPO past 1M: :data:`MIN_SEEDS` seeds to 1M and, where all are far from 0.9
    there (below :data:`PPO_FAR`), one of them run on to the budget; otherwise all of them.

    :param curves: PPO's ``[interactions, sampled, greedy]`` rows, one curve per seed
    :param budget: the env's budget
    :return: the seeds it has and needs
    """
    at_1m = [success_at(curve, 1_000_000) for curve in curves]
    far = all(value < PPO_FAR for value in at_1m if value is not None)
    return PPOSeeds(
        to_1m=sum(value is not None for value in at_1m),
        to_end=sum(bool(curve) and curve[-1][0] >= budget for curve in curves),
        wanted_end=1 if far else MIN_SEEDS,
    )


def missing_cells(env_id: str, row: dict[str, Any]) -> list[str]:
    """The cells the targets still lack.

    Every method needs :data:`MIN_SEEDS` seeds run to the env's budget, except rl-zoo3's PPO on an env whose budget is
    over 1M: it needs :data:`MIN_SEEDS` seeds to 1M and, where all of them are far from 0.9 there (below
    :data:`PPO_FAR`), only one of them run on to the budget.

    :param env_id: the env
    :param row: the env's row of the summary
    :return: e.g. ``reinforce: 1 of 3 seeds``, ``ppo: 2 of 3 seeds to 1M``, ``ppo: one seed to 3.00M``,
        ``ppo_same: 0 of 1 seed`` (PPO with DirPG's information: one seed, three where it reaches 0.9 before DirPG)
    """
    methods, budget, missing = row["methods"], row["budget"], []
    for method in ("dirpg", "reinforce", "ppo"):
        if method == "ppo" and budget > 1_000_000 and method in methods:
            have = ppo_seeds(methods[method]["curves"], budget)
            if have.to_1m < MIN_SEEDS:
                missing.append(f"{method}: {have.to_1m} of {MIN_SEEDS} seeds to 1M")
            if have.to_end < have.wanted_end:
                missing.append(f"{method}: one seed to {format_count(budget)}" if have.wanted_end == 1
                               else f"{method}: {have.to_end} of {MIN_SEEDS} seeds to {format_count(budget)}")  # fmt: skip
            continue
        seeds = methods.get(method, {}).get("finished", 0)
        if seeds < MIN_SEEDS:
            missing.append(f"{method}: {seeds} of {MIN_SEEDS} seeds")
    same = methods.get("ppo_same", {})
    if not same.get("finished", 0):
        missing.append("ppo_same: 0 of 1 seed")
    elif same.get("finished", 0) < MIN_SEEDS and "dirpg" in methods:  # 3 seeds where it reaches 0.9 before DirPG
        # the same evaluation mark is not "before" (it lands a few interactions past the mark, by a different amount)
        if median_reach(same["curves"], budget) < median_reach(methods["dirpg"]["curves"], budget) - _slack(same["curves"]):
            missing.append(f"ppo_same: {same['finished']} of {MIN_SEEDS} seeds (it reaches 0.9 before DirPG)")
    return missing


def break_tie(
    methods: dict[str, Any], tied: Sequence[str], budget: float, tag: str = TIE_BREAKS[0]
) -> tuple[dict[str, float], list[str]]:
    """:param methods: an env's methods in the summary, with the tie-breaking cells
    :param tied: DirPG and the baselines whose medians tie with it
    :param budget: the env's budget
    :param tag: the tie-breaking cells' tag (one of :data:`TIE_BREAKS`)
    :return: the medians to 0.9 of the ``@tag`` cells of ``tied`` (empty unless all have :data:`MIN_SEEDS` finished
        seeds), and the ``@tag`` cells still missing"""
    names = [f"{method}@{tag}" for method in tied]
    missing = [f"{n}: {methods.get(n, {}).get('finished', 0)} of {MIN_SEEDS} seeds" for n in names
               if methods.get(n, {}).get("finished", 0) < MIN_SEEDS]  # fmt: skip
    if missing:
        return {}, missing
    return {method: median_reach(methods[name]["curves"], budget) for method, name in zip(tied, names)}, []


def _slack(curves: Sequence[Sequence[Sequence[float]]]) -> float:
    """:param curves: one method's curves on an env
    :return: how far apart two interactions-to-0.9 may be and still be the same evaluation mark"""
    return overshoot([point[0] for point in curves[0]]) if curves else 0.0


def _break_ties(methods: dict[str, Any], tied: Sequence[str], budget: float) -> tuple[bool, dict[str, Any], list[str]]:
    """Break a tie at the table's evaluations with the ``@fine`` cells, and a tie there with the ``@finer`` ones.

    :param methods: an env's methods in the summary, with the tie-breaking cells
    :param tied: the baselines whose medians tie with DirPG's (none ahead of it)
    :param budget: the env's budget
    :return: whether DirPG is faster, the medians of each tie-breaking tag used (``{tag: {method: median}}``), and the
        tie-breaking cells still missing
    """
    faster, medians = False, {}
    for tag in TIE_BREAKS:
        found, missing = break_tie(methods, ["dirpg", *tied], budget, tag)
        if not found:
            return faster, medians, missing if tag == TIE_BREAKS[0] or f"dirpg@{tag}" in methods else []
        medians[tag], slack = found, _slack(methods[f"dirpg@{tag}"]["curves"])
        others = {m: v for m, v in found.items() if m != "dirpg"}
        faster = bool(found["dirpg"] < min(others.values()) - slack)
        tied = [m for m, v in others.items() if abs(v - found["dirpg"]) <= slack]
        if faster or not tied or any(v < found["dirpg"] - slack for v in others.values()):
            break
    return faster, medians, []


def judge(summary: dict[str, Any]) -> dict[str, Any]:
    """:param summary: :func:`~experiments.minigrid_table.summarize`'s output (the four methods, and the
        ``@fine`` cells where there are any)
    :return: per env: DirPG's and each baseline's median interactions to 0.9 within the budget, whether DirPG reaches
        0.9 and is faster than the best baseline that does (a tie broken by the ``@fine`` cells), the Unsolved verdict
        and the missing cells, and the wall times measured side by side (:func:`wall_no_more`); and the targets' counts"""
    envs: dict[str, Any] = {}
    for env_id, row in summary.items():
        methods, budget = row["methods"], row["budget"]
        if "dirpg" not in methods:
            continue
        baselines = {m: median_reach(methods[m]["curves"], budget) for m in BASELINES if m in methods}
        reached = {m: value for m, value in baselines.items() if np.isfinite(value)}
        dirpg = median_reach(methods["dirpg"]["curves"], budget)
        best = min(reached.values(), default=float("inf"))
        slack = _slack(methods["dirpg"]["curves"])
        faster, tie_break, missing = (bool(dirpg < best - slack) if reached else None), {}, missing_cells(env_id, row)
        tied = [m for m, v in reached.items() if abs(v - dirpg) <= slack]
        if tied and all(v >= dirpg - slack for v in reached.values()):
            faster, tie_break, missing_fine = _break_ties(methods, tied, budget)
            missing += missing_fine
        ppos = {m: (median_reach(methods[m]["curves"], budget), median_reach(methods[m]["curves"], budget, column=2))
                for m in PPOS if m in methods}  # fmt: skip
        side = {m: methods[f"{m}@{SIDE_BY_SIDE}"]["wall_to_level"] for m in ("dirpg", *PPOS)
                if f"{m}@{SIDE_BY_SIDE}" in methods}  # fmt: skip
        envs[env_id] = {
            "dirpg_greedy": median_reach(methods["dirpg"]["curves"], budget, column=2),
            "ppo_best": min((v[0] for v in ppos.values()), default=float("inf")),
            "ppo_best_greedy": min((v[1] for v in ppos.values()), default=float("inf")),
            "dirpg": dirpg,
            "baselines": baselines,
            "baseline_reaches": bool(reached),
            "dirpg_reaches": bool(np.isfinite(dirpg)),
            "faster": faster,
            "tie_break": tie_break,
            "unsolved": row["unsolved"],
            "unsolved_solved": any(np.isfinite(first_reach(c, UNSOLVED_LIMIT)) for c in methods["dirpg"]["curves"]),
            "missing": missing,
            "wall_side": side,
            "wall_no_more": wall_no_more(side),
            "undecided": [m for m in ("dirpg", *baselines)
                          if undecided(methods[m]["curves"], budget, methods[m].get("budgets"))],  # fmt: skip
        }
    contested = [e for e in envs.values() if e["baseline_reaches"]]
    unsolved = [e for e in envs.values() if e["unsolved"]]
    return {
        "envs": envs,
        "reaches": [sum(e["dirpg_reaches"] for e in contested), len(contested)],
        "faster": [sum(bool(e["faster"]) for e in contested), len(contested)],
        "unsolved": [sum(e["unsolved_solved"] for e in unsolved), len(unsolved)],
        "wall": [sum(e["wall_no_more"] is True for e in envs.values()),
                 sum(e["wall_no_more"] is not None for e in envs.values())],
    }


def wall_no_more(side: dict[str, float]) -> bool | None:
    """:param side: median training wall time to 0.9 (sampled and greedy) of the ``@side`` cells, by method
    :return: whether DirPG's is no more than every PPO's that reaches 0.9; None where DirPG and a PPO were not
        measured side by side, or none of them reached 0.9"""
    ppos = [side[m] for m in PPOS if m in side]
    if "dirpg" not in side or not ppos or not np.isfinite(min([side["dirpg"], *ppos])):
        return None
    return bool(side["dirpg"] <= min(ppos))


def format_count(value: float, running: bool = False) -> str:
    """:param value: interactions (inf: never)
    :param running: whether seeds still running may reach it (:func:`undecided`)
    :return: ``150k``, ``1.80M``, ``not reached`` or ``not reached yet``"""
    if not np.isfinite(value):
        return "not reached yet" if running else "not reached"
    return f"{value / 1e6:.2f}M" if value >= 1e6 else f"{value / 1e3:.0f}k"


def _fmt_side(side: dict[str, float], no_more: bool | None) -> str:
    """:param side: median wall time to 0.9 of the ``@side`` cells, by method
    :param no_more: :func:`wall_no_more`'s verdict
    :return: e.g. ``0.1 min / ppo 0.3 min, ppo_same 0.3 min (yes)``, or ``–`` where not measured"""
    if "dirpg" not in side:
        return "–"
    ppos = ", ".join(f"{m} {format_minutes(v)}" for m, v in side.items() if m != "dirpg") or "none run"
    verdict = "" if no_more is None else (" (yes)" if no_more else " (**no**)")
    return f"{format_minutes(side['dirpg'])} / {ppos}{verdict}"


def format_minutes(seconds: float) -> str:
    """:param seconds: a wall time (inf: 0.9 never reached)
    :return: ``1.3 min`` or ``not reached``"""
    return f"{seconds / 60:.1f} min" if np.isfinite(seconds) else "not reached"


def targets_table(verdict: dict[str, Any]) -> str:
    """:param verdict: :func:`judge`'s output
    :return: a Markdown table, one row per env, and the three targets' counts"""
    lines = ["| env | DirPG, median to 0.9 | baselines, median to 0.9 | greedy to 0.9: DirPG / better PPO | "
             "DirPG reaches where a baseline does | DirPG faster than the best baseline | Unsolved: DirPG 0.9 within 1e7 | "
             "wall time to 0.9 side by side: DirPG / PPOs | cells missing |",
             "| --- | ---: | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for env_id, e in verdict["envs"].items():
        running = e.get("undecided", [])
        baselines = ", ".join(f"{m} {format_count(v, m in running)}" for m, v in e["baselines"].items()) or "none run"
        reaches = ("yes" if e["dirpg_reaches"] else "**no**") if e["baseline_reaches"] else "– (no baseline reaches)"
        faster = "–" if e["faster"] is None else ("yes" if e["faster"] else "**no**")
        if e.get("tie_break"):
            faster += " (tie at the table's evaluations; " + "; ".join(
                f"@{tag}: " + ", ".join(f"{m} {format_count(v)}" for m, v in medians.items())
                for tag, medians in e["tie_break"].items()
            ) + ")"
        unsolved = ("yes" if e["unsolved_solved"] else "**no**") if e["unsolved"] else "–"
        name = env_id.removeprefix("MiniGrid-").removesuffix("-v0")
        dirpg, missing = format_count(e["dirpg"], "dirpg" in running), "; ".join(e["missing"]) or "–"
        greedy = f"{format_count(e['dirpg_greedy'])} / {format_count(e['ppo_best_greedy'])}"
        wall = _fmt_side(e.get("wall_side", {}), e.get("wall_no_more"))
        lines.append(f"| {name} | {dirpg} | {baselines} | {greedy} | {reaches} | {faster} | {unsolved} | {wall} | {missing} |")
    (r, n), (f, m), (u, k) = verdict["reaches"], verdict["faster"], verdict["unsolved"]
    lines += [
        "",
        f"* Target 1, DirPG reaches 0.9 wherever a baseline does: {r} of {n} envs ({'met' if r == n else 'not met'}).",
        f"* Target 2, DirPG faster than the best baseline on two thirds of those: {f} of {m} "
        f"({'met' if m and 3 * f >= 2 * m else 'not met'}).",
        f"* Target 3, two of the three Unsolved: {u} of {k} ({'met' if u >= 2 else 'not met'}).",
    ]
    w, j = verdict.get("wall", (0, 0))
    if j:
        lines.append(f"* Wall time to 0.9, side by side (`@{SIDE_BY_SIDE}` cells): DirPG's no more than the PPOs' on {w} of "
                     f"the {j} envs measured.")  # fmt: skip
    incomplete = sum(bool(e["missing"]) for e in verdict["envs"].values())
    if incomplete:
        lines.append(f"* {incomplete} envs still lack cells (last column): these counts can change as they are run.")
    return "\n".join(lines) + "\n"
