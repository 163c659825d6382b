"""Which cells the MiniGrid table still lacks (``--fill``): those the targets need, in the order to run them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.minigrid_table.cells import (
    METHODS,
    MIN_BUDGET,
    Cell,
    curve,
    progress,
    read_record,
    record_end,
)
from experiments.minigrid_table.report import summarize
from experiments.minigrid_targets import (
    MIN_SEEDS,
    format_count,
    missing_cells,
    ppo_seeds,
    success_at,
)


def _ppo_cells(runs: Path, env_id: str, seeds: dict[int, Any], budget: int) -> list[Cell]:
    """:param runs: the folder of all cells
    :param env_id: an env whose budget is over 1M
    :param seeds: rl-zoo3's PPO curves there, by seed
    :param budget: the env's budget
    :return: the PPO cells the issue's rule still needs (:func:`~experiments.minigrid_targets.ppo_seeds`)"""
    have = ppo_seeds(list(seeds.values()), budget)
    at_1m = {seed for seed, curve in seeds.items() if success_at(curve, MIN_BUDGET) is not None}
    pool = sorted(set(seeds) | set(range(MIN_SEEDS)))
    open_seeds = [seed for seed in pool if not seeds.get(seed) or seeds[seed][-1][0] < budget]
    # the furthest checkpoint first, then a seed that also fills a place at 1M
    open_seeds.sort(key=lambda seed: (-progress(Cell(env_id, "ppo", seed, budget), runs), seed in at_1m, seed))
    long = open_seeds[: max(0, have.wanted_end - have.to_end)]
    short = [seed for seed in open_seeds if seed not in at_1m and seed not in long]
    short = short[: max(0, MIN_SEEDS - len(at_1m) - len(set(long) - at_1m))]
    return [Cell(env_id, "ppo", seed, budget) for seed in long] + [Cell(env_id, "ppo", seed, MIN_BUDGET) for seed in short]


def cells_to_run(runs: Path, envs: Sequence[str]) -> list[Cell]:
    """The cells the targets still lack (:func:`~experiments.minigrid_targets.missing_cells`), as cells to
    train: unfinished seeds are continued from their checkpoints, and rl-zoo3's PPO past 1M runs its seeds to 1M, the
    one that goes on to the budget being the one with the latest checkpoint (else one that lacks 1M, else the lowest).

    :param runs: the folder of all cells
    :param envs: the envs to fill
    :return: the cells: those with a checkpoint first, the nearest to their end first (so that a session's end leaves
        fewer cells unfinished), then the others, the longest first
    """
    summary = summarize(runs, envs, list(METHODS))
    cells = []
    for env_id, row in summary.items():
        budget, methods = row["budget"], row["methods"]
        for method in ("dirpg", "reinforce", "ppo"):
            seeds = dict(zip(methods[method]["seed_ids"], methods[method]["curves"])) if method in methods else {}
            if method == "ppo" and budget > MIN_BUDGET:
                cells += _ppo_cells(runs, env_id, seeds, budget)
                continue
            done = {seed for seed, curve in seeds.items() if curve and curve[-1][0] >= budget}
            todo = [seed for seed in sorted(set(seeds) | set(range(MIN_SEEDS))) if seed not in done]
            cells += [Cell(env_id, method, seed, budget) for seed in todo[: max(0, MIN_SEEDS - len(done))]]
        same = [text for text in missing_cells(env_id, row) if text.startswith("ppo_same")]
        if same:
            seeds = dict(zip(methods["ppo_same"]["seed_ids"], methods["ppo_same"]["curves"])) if "ppo_same" in methods else {}
            done = {seed for seed, rows in seeds.items() if rows and rows[-1][0] >= budget}
            wanted = 1 if not done else MIN_SEEDS
            todo = [seed for seed in sorted(set(seeds) | set(range(MIN_SEEDS))) if seed not in done]
            cells += [Cell(env_id, "ppo_same", seed, budget) for seed in todo[: max(0, wanted - len(done))]]

    def order(cell: Cell) -> tuple[bool, int]:
        made = progress(cell, runs)
        return not made, cell.budget - made if made else made - cell.budget

    return sorted(cells, key=order)


def plan_table(runs: Path, cells: Sequence[Cell]) -> str:
    """What ``--fill`` still has to train, as it prints it and the results page shows it: one row per cell, with how
    far its record reaches and its last evaluation. The figures come from the records, which git holds, not
    from the checkpoints, which it may not (a checkpoint only shortens the training left).

    :param runs: the folder of all cells
    :param cells: the cells to run (:func:`cells_to_run`)
    :return: the table in Markdown, with the interactions left under it (a rerun from scratch counts from where it
        is); a sentence when nothing is left
    """
    if not cells:
        return "None: every cell the targets need has run to its budget or stopped early by the rule.\n"
    lines = [
        "| env | method | seed | to | evaluated so far | last evaluation, sampled / greedy |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    left = 0
    for cell in cells:
        record = read_record(cell.folder(runs))  # the table's: an earlier run's while a rerun from scratch is behind it
        rows = curve(record) if record is not None else []
        reach, last = (rows[-1][0], f"{rows[-1][1]:.2f} / {rows[-1][2]:.2f}") if rows else (0, "–")
        current = cell.folder(runs) / "record.json"
        rerun = max(record_end(json.loads(current.read_text())), 0) if current.exists() else reach
        behind = f" (an earlier run; the rerun is at {format_count(rerun)})" if rerun < reach else ""
        left += max(cell.budget - int(rerun), 0)
        name = cell.env_id.removeprefix("MiniGrid-").removesuffix("-v0")
        lines.append(f"| {name} | {cell.name} | {cell.seed} | {format_count(cell.budget)} | {format_count(reach)}{behind} | "
                     f"{last} |")
    count = f"{len(cells)} cell{'s' if len(cells) > 1 else ''}"
    return "\n".join(lines) + f"\n\n{count}, {format_count(left)} interactions from their last evaluations.\n"
