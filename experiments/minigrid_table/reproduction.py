"""rl-zoo3's PPO against its own published figures: the check a baseline passes before its cells count in the table.

rl-zoo3's ``benchmark.md`` gives, for each MiniGrid env, the mean MiniGrid return of its PPO agent after
``n_timesteps``, played by ``rl_zoo3.enjoy`` with sampled actions (its rule for MiniGrid). The table's ``ppo`` cells are
rl-zoo3's PPO with one change (:data:`~experiments.minigrid_table.cells.FLOAT32_CAST`), evaluated on 200
held-out seeds with sampled and greedy actions, so their sampled MiniGrid return at the same budget is the figure to
compare. The gate is issue 43's: seed 0 within :data:`TOLERANCE` at 100k on :data:`GATE`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from experiments.minigrid_table.cells import ENVS, read_record
from experiments.minigrid_targets import MIN_SEEDS, format_count

#: rl-zoo3's ``benchmark.md``, its ``ppo`` rows for MiniGrid: mean MiniGrid return and ``n_timesteps`` (it has no Fetch row)
ZOO_BENCHMARK: dict[str, tuple[float, int]] = {
    "MiniGrid-Empty-Random-5x5-v0": (0.968, 100_000),
    "MiniGrid-DoorKey-5x5-v0": (0.964, 100_000),
    "MiniGrid-Unlock-v0": (0.963, 100_000),
    "MiniGrid-KeyCorridorS3R1-v0": (0.949, 500_000),
    "MiniGrid-RedBlueDoors-6x6-v0": (0.860, 1_000_000),
    "MiniGrid-FourRooms-v0": (0.573, 5_000_000),
    "MiniGrid-GoToDoor-5x5-v0": (0.525, 5_000_000),
    "MiniGrid-PutNear-6x6-N2-v0": (0.612, 10_000_000),
    "MiniGrid-MultiRoom-N4-S5-v0": (0.000, 10_000_000),
    "MiniGrid-LockedRoom-v0": (0.000, 10_000_000),
    "MiniGrid-ObstructedMaze-2Dlh-v0": (0.000, 10_000_000),
}
#: the envs where rl-zoo3's PPO must match its figure on seed 0 before any PPO cell enters the table
GATE = ("MiniGrid-Empty-Random-5x5-v0", "MiniGrid-DoorKey-5x5-v0", "MiniGrid-Unlock-v0")
TOLERANCE = 0.05
SEEDS = tuple(range(MIN_SEEDS))  # the table's seeds


def return_at(record: dict[str, Any], mark: int) -> dict[str, Any] | None:
    """The MiniGrid return of a cell at a budget: its last evaluation at or before ``mark``. A cell that stopped early
    by the table's rule holds its last evaluation to its budget; a cell whose record ends before ``mark`` gives its last
    evaluation, and says where it is.

    :param record: a cell's record
    :param mark: the budget to read it at
    :return: ``sampled`` and ``greedy`` MiniGrid return, ``at`` (the interactions of that evaluation) and
        ``stopped_early`` (whether it is the last evaluation of a cell that stopped early); ``None`` if it has none
        (records written before the evaluation kept MiniGrid's own return have none)
    """
    points = [point for point in record.get("points", []) if "minigrid_return" in point["sampled"]]
    points = [point for point in points if point["interactions"] <= mark]
    if not points:
        return None
    last = points[-1]
    return {
        "sampled": last["sampled"]["minigrid_return"],
        "greedy": last["greedy"]["minigrid_return"],
        "at": int(last["interactions"]),
        "stopped_early": "stopped_early" in record and last is record["points"][-1],
    }


def reproduction(runs: Path) -> dict[str, Any]:
    """:param runs: the folder of all cells
    :return: by env with a benchmark figure: ``benchmark``, ``budget``, each seed's :func:`return_at` the benchmark's
        budget (``None`` where the seed has no record) and, on :data:`GATE`, ``within`` (seed 0 within
        :data:`TOLERANCE` of the benchmark)"""
    check = {}
    for env_id in ENVS:
        if env_id not in ZOO_BENCHMARK:
            continue
        benchmark, budget = ZOO_BENCHMARK[env_id]
        seeds = {}
        for seed in SEEDS:
            record = read_record(runs / env_id / f"ppo-s{seed}")
            seeds[seed] = return_at(record, budget) if record is not None else None
        row: dict[str, Any] = {"benchmark": benchmark, "budget": budget, "seeds": seeds}
        if env_id in GATE:
            row["within"] = seeds[0] is not None and abs(seeds[0]["sampled"] - benchmark) <= TOLERANCE
        check[env_id] = row
    return check


def _cell(value: dict[str, Any] | None, budget: int) -> str:
    """:param value: a seed's :func:`return_at`
    :param budget: the benchmark's budget
    :return: e.g. ``0.967 / 0.970``, ``0.951 / 1.000 (stopped early at 250k)``, ``0.000 / 0.000 (at 3.00M)`` or ``–``"""
    if value is None:
        return "–"
    text = f"{value['sampled']:.3f} / {value['greedy']:.3f}"
    if value["at"] < budget:
        text += f" ({'stopped early at' if value['stopped_early'] else 'at'} {format_count(value['at'])})"
    return text


def reproduction_table(check: dict[str, Any]) -> str:
    """:param check: :func:`reproduction`
    :return: the check in Markdown: the benchmark's figure and budget beside each seed's sampled / greedy return, and
        the gate's verdict"""
    lines = [
        f"| env | benchmark.md (n_timesteps) | seed 0 | seed 1 | seed 2 | seed 0 within {TOLERANCE} |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for env_id, row in check.items():
        name = env_id.removeprefix("MiniGrid-").removesuffix("-v0")
        seeds = " | ".join(_cell(row["seeds"][seed], row["budget"]) for seed in SEEDS)
        within = ("yes" if row["within"] else "**no**") if "within" in row else "–"
        lines.append(f"| {name} | {row['benchmark']:.3f} ({format_count(row['budget'])}) | {seeds} | {within} |")
    passed = [env_id for env_id in GATE if check.get(env_id, {}).get("within")]
    names = ", ".join(env_id.removeprefix("MiniGrid-").removesuffix("-v0") for env_id in GATE)
    at = " or ".join(sorted({format_count(ZOO_BENCHMARK[env_id][1]) for env_id in GATE}))
    lines += ["", f"Seed 0 within {TOLERANCE} of the benchmark at {at} on {names}: {len(passed)} of {len(GATE)}."]
    return "\n".join(lines) + "\n"
