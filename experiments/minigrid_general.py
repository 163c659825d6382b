"""The one MiniGrid setting on MiniGrid envs that no entry was tuned on, beside rl-zoo3's MiniGrid PPO block.

``python -m experiments.minigrid_general --envs ... --seeds 0 1 2 --methods dirpg ppo`` trains each cell in a
subprocess through rl-zoo3's own entry points, evaluated on 200 held-out maps, sampled and greedy, at 20 points of the
budget (:class:`~experiments.held_out.HeldOutEvaluation`; a cell stops once both are at 0.95 three times):

* ``dirpg``: the one setting (:func:`~sb3_dirpg.envs.minigrid.setting.minigrid_setting`), through the zoo bridge, with
  a hyperparameter file that holds only the setting's entry (so a tuned entry of ``dirpg.yml`` never stands in);
* ``ppo``: rl-zoo3's MiniGrid block (its ``MiniGrid-Empty-Random-5x5-v0`` entry, which its other MiniGrid entries
  merge, with only ``n_timesteps`` changed), repaired with the float32 cast after ``FlatObsWrapper``
  (:data:`~experiments.minigrid_table.cells.FLOAT32_CAST`), trained by ``rl_zoo3.train``.

Both are evaluated on the env as ``gym.make`` builds it, with MiniGrid's own step limit, and the method's observation
wrappers. ``--report`` writes ``minigrid_general.{json,md,png}`` and the ``minigrid general`` block of the results
page, for every env with a cell (the table's and the frontier's envs too, where the one setting ran beside their tuned
entries).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from experiments.common import (
    default_out,
    key_value,
    nonnegative_int,
    parse_params,
    positive_int,
    refresh_block,
    subprocess_env,
    write_json,
)

#: MiniGrid envs outside the MiniGrid table and the frontier, one or two per family: the generality check, 3 seeds,
#: beside rl-zoo3's PPO block
ENVS = (
    "MiniGrid-DoorKey-6x6-v0",
    "MiniGrid-DoorKey-8x8-v0",
    "MiniGrid-Empty-16x16-v0",
    "MiniGrid-LavaGapS6-v0",
    "MiniGrid-SimpleCrossingS9N1-v0",
    "MiniGrid-LavaCrossingS9N1-v0",
    "MiniGrid-DistShift1-v0",
    "MiniGrid-Dynamic-Obstacles-6x6-v0",
    "MiniGrid-UnlockPickup-v0",
    "MiniGrid-BlockedUnlockPickup-v0",
    "MiniGrid-GoToObject-6x6-N2-v0",
    "MiniGrid-Fetch-6x6-N2-v0",
)
#: a second check, chosen after the setting was fixed: MiniGrid envs that neither the issues nor the first check name
#: (seed 0; the WFC envs cannot reset with minigrid 3.2.0's wheel)
SECOND_CHECK = (
    "MiniGrid-Empty-6x6-v0",
    "MiniGrid-DistShift2-v0",
    "MiniGrid-LavaGapS7-v0",
    "MiniGrid-DoorKey-16x16-v0",
    "MiniGrid-LavaCrossingS9N2-v0",
    "MiniGrid-SimpleCrossingS11N5-v0",
    "MiniGrid-GoToDoor-8x8-v0",
    "MiniGrid-Dynamic-Obstacles-Random-6x6-v0",
    "MiniGrid-GoToObject-8x8-N2-v0",
    "MiniGrid-MultiRoom-N4-S5-v1",
    "MiniGrid-Fetch-8x8-N3-v0",
    "MiniGrid-PutNear-8x8-N3-v0",
    "MiniGrid-Dynamic-Obstacles-8x8-v0",
    "MiniGrid-MemoryS7-v0",
    "MiniGrid-ObstructedMaze-2Dl-v0",
    "MiniGrid-Empty-Random-6x6-v0",
    "MiniGrid-LavaGapS5-v0",
    "MiniGrid-GoToDoor-6x6-v0",
    "MiniGrid-Dynamic-Obstacles-5x5-v0",
    "MiniGrid-SimpleCrossingS9N3-v0",
    "MiniGrid-LavaCrossingS9N3-v0",
    "MiniGrid-ObstructedMaze-1Dlhb-v0",
    "MiniGrid-LavaCrossingS11N5-v0",
)
METHODS = ("dirpg", "ppo")
BUDGET = 1_000_000
POINTS = 20
LEVEL = 0.9
#: rl-zoo3's entry that holds its MiniGrid block (the others merge it)
PPO_BLOCK_ENTRY = "MiniGrid-Empty-Random-5x5-v0"


def method_entry(env_id: str, method: str, budget: int, params: Sequence[str] = ()) -> dict[str, Any]:
    """:param env_id: a MiniGrid id
    :param method: ``dirpg`` or ``ppo``
    :param budget: interactions
    :param params: a variant's ``KEY:VALUE`` changes of the entry
    :return: the hyperparameter entry the method trains with on the env"""
    from experiments.minigrid_table.cells import load_yaml, repaired, zoo_ppo_file
    from sb3_dirpg.envs.minigrid.setting import minigrid_setting

    if method == "dirpg":
        entry = minigrid_setting(env_id).zoo_entry()
    elif method == "ppo":
        block = dict(load_yaml(zoo_ppo_file())[PPO_BLOCK_ENTRY])
        entry = {**block, "env_wrapper": repaired(block.get("env_wrapper"))}
    else:
        raise ValueError(f"method {method!r}: choose from {', '.join(METHODS)}")
    return {**entry, **parse_params(params), "n_timesteps": float(budget)}


def label(method: str, tag: str = "") -> str:
    """:return: the name of a method's cells: the method, or ``method-tag`` for a variant"""
    return f"{method}-{tag}" if tag else method


def cell_folder(runs: Path, env_id: str, method: str, seed: int) -> Path:
    """:return: where a cell keeps its configuration, log, checkpoint and record"""
    return runs / env_id / f"{method}-s{seed}"


def command(
    runs: Path, env_id: str, method: str, seed: int, budget: int, tag: str = "", params: Sequence[str] = ()
) -> list[str]:
    """Write the cell's hyperparameter file and return the command that trains it.

    :param runs: the folder of all cells
    :param env_id: the env
    :param method: ``dirpg`` or ``ppo``
    :param seed: the training seed
    :param budget: interactions
    :param tag: names a variant of the method ("" for none)
    :param params: the variant's ``KEY:VALUE`` changes of the entry
    :return: the command line
    """
    folder = cell_folder(runs, env_id, label(method, tag), seed)
    folder.mkdir(parents=True, exist_ok=True)
    settings = method_entry(env_id, method, budget, params)
    conf = folder / "hyperparams.yml"
    conf.write_text(yaml.safe_dump({env_id: settings}))
    evaluation = dict(record=str(folder / "record.json"), env_id=env_id, budget=budget, env_kwargs={},
                      env_wrapper=settings.get("env_wrapper"), points=POINTS, stop_level=0.95, stop_after=3)  # fmt: skip
    callback = {"experiments.held_out.HeldOutEvaluation": evaluation}
    head = [sys.executable, "-m", "sb3_dirpg.integrations.zoo", "train", "--algo", "dirpg"] if method == "dirpg" else \
        [sys.executable, "-m", "rl_zoo3.train", "--algo", "ppo", "--gym-packages", "minigrid"]  # fmt: skip
    return [*head, "--conf-file", str(conf), "--env", env_id, "--seed", str(seed), "-n", str(budget), "--num-threads", "1",
            "--eval-freq", "-1", "-f", str(folder / "zoo"), "--verbose", "0", "--device", "cpu",
            "-params", f"callback:{callback!r}"]  # fmt: skip


def finished(folder: Path, budget: int) -> bool:
    """:return: whether the cell's record stopped early or reached the budget"""
    path = folder / "record.json"
    if not path.exists():
        return False
    record = json.loads(path.read_text())
    return "stopped_early" in record or bool(record["points"]) and record["points"][-1]["interactions"] >= budget


def run_cell(runs: Path, env_id: str, method: str, seed: int, budget: int, tag: str = "", params: Sequence[str] = ()) -> None:
    """Train one cell unless it has finished (its output goes to ``train.log``)."""
    folder = cell_folder(runs, env_id, label(method, tag), seed)
    if finished(folder, budget):
        return
    cmd = command(runs, env_id, method, seed, budget, tag, params)
    method = label(method, tag)
    print(f"start {env_id} {method} seed {seed}", flush=True)
    with open(folder / "train.log", "w") as log:
        result = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, check=False, env=subprocess_env())
    print(f"{'done' if result.returncode == 0 else 'FAILED'}: {env_id} {method} seed {seed}", flush=True)


def labels_present(runs: Path, envs: Sequence[str]) -> list[str]:
    """:return: the methods and variants with a cell on any of the envs, the plain methods first"""
    found = {path.name.rsplit("-s", 1)[0] for env_id in envs for path in (runs / env_id).glob("*-s*") if path.is_dir()}
    return [*[m for m in METHODS if m in found], *sorted(found - set(METHODS))]


def summarize(runs: Path, envs: Sequence[str], methods: Sequence[str]) -> dict[str, Any]:
    """:param methods: the methods and variants (``method-tag``) to summarize
    :return: per env and method, each seed's first interactions to 0.9 (sampled, greedy), end success and training
    wall time to 0.9 on both"""
    from experiments.frontier import first_at

    out: dict[str, Any] = {}
    for env_id in envs:
        for method in methods:
            cells = sorted(path for path in (runs / env_id).glob(f"{method}-s*/record.json")
                           if path.parent.name.rsplit("-s", 1)[0] == method)  # not METHOD-sTAG's cells  # fmt: skip
            seeds = []
            for path in cells:
                record = json.loads(path.read_text())
                points = record["points"]
                if not points:
                    continue
                both = next((p for p in points if min(p["sampled"]["success"], p["greedy"]["success"]) >= LEVEL), None)
                seeds.append({
                    "seed": int(path.parent.name.rsplit("-s", 1)[1]),
                    "sampled": first_at(points, "sampled"),
                    "greedy": first_at(points, "greedy"),
                    "both_wall_s": None if both is None else float(both["wall_s"]),
                    "end": [int(points[-1]["interactions"]), points[-1]["sampled"]["success"],
                            points[-1]["greedy"]["success"]],
                    "stopped_early": "stopped_early" in record,
                    "curve": [[p["interactions"], p["sampled"]["success"], p["greedy"]["success"]] for p in points],
                })  # fmt: skip
            if seeds:
                out.setdefault(env_id, {})[method] = seeds
    return out


def _median(values: Sequence[int | None]) -> float | None:
    """:return: the median, with a run that never reached counted as infinite (None where that is the median)"""
    finite = sorted(np.inf if v is None else v for v in values)
    middle = float(np.median(finite)) if finite else np.inf
    return None if not np.isfinite(middle) else middle


#: the groups of envs, in the report's order
GROUPS = ("table", "frontier", "entry", "untuned", "second check")


def group(env_id: str) -> str:
    """:param env_id: an env
    :return: ``table`` or ``frontier`` where the project's tuned entries were made for those experiments, ``untuned``
        for :data:`ENVS`, ``second check`` for :data:`SECOND_CHECK`, ``entry`` for another env with an entry in
        ``dirpg.yml`` (the paper's MultiRoom-N6, curriculum stages, small envs)"""
    from experiments.frontier import TARGETS
    from experiments.minigrid_table import ENVS as TABLE_ENVS

    if env_id in TABLE_ENVS:
        return "table"
    if env_id in TARGETS:
        return "frontier"
    if env_id in ENVS:
        return "untuned"
    return "second check" if env_id in SECOND_CHECK else "entry"


def table(summary: dict[str, Any]) -> str:
    """:return: the markdown table of the summary"""
    def k(value: float | None) -> str:
        return "not reached" if value is None else f"{value / 1000:.0f}k"

    lines = ["| env | where | method | seeds | median to 0.9, sampled | greedy | median training wall to 0.9 (both) "
             "| end, sampled / greedy (each seed) |", "| --- | --- | --- | ---: | ---: | ---: | ---: | --- |"]  # fmt: skip
    for env_id, methods in summary.items():
        for method, seeds in methods.items():
            where = group(env_id)
            wall = _median([s["both_wall_s"] for s in seeds])
            ends = ", ".join(f"{s['end'][1]:.2f} / {s['end'][2]:.2f} at {s['end'][0] / 1000:.0f}k" for s in seeds)
            lines.append(f"| {env_id.removeprefix('MiniGrid-')} | {where} | {method} | {len(seeds)} | "
                         f"{k(_median([s['sampled'] for s in seeds]))} | {k(_median([s['greedy'] for s in seeds]))} | "
                         f"{'not reached' if wall is None else f'{wall:.0f} s'} | {ends} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def figure(summary: dict[str, Any]) -> Any:
    """:return: one panel per env: each seed's sampled (solid) and greedy (dashed) success against interactions"""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = list(summary)
    cols = 5
    rows = max(1, -(-len(envs) // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False)
    labels = sorted({method for methods in summary.values() for method in methods}, key=lambda m: (m not in METHODS, m))
    tab20 = plt.get_cmap("tab20").colors
    palette = [*tab20[::2], *tab20[1::2]]  # the ten dark colours, then the ten light ones
    # PPO in black, and the setting's earlier version (``dirpg-refine``) in the second dark colour: no light shade of
    # another label's colour stands for either
    variants = sorted((m for m in labels if m != "ppo"), key=lambda m: (m != "dirpg", m != "dirpg-refine", m))
    colors = {method: palette[i % len(palette)] for i, method in enumerate(variants)}
    colors.update({"ppo": "black"} if "ppo" in labels else {})
    for ax, env_id in zip(axes.flat, envs):
        for method, seeds in summary[env_id].items():
            for seed in seeds:
                curve = np.array(seed["curve"], dtype=float)
                ax.plot(curve[:, 0], curve[:, 1], color=colors.get(method))
                ax.plot(curve[:, 0], curve[:, 2], color=colors.get(method), linestyle="--")
        ax.set_title(env_id.removeprefix("MiniGrid-").removesuffix("-v0"), fontsize=9)
        ax.set_ylim(-0.02, 1.02)
        ax.tick_params(labelsize=7)
        ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 0))
    for ax in list(axes.flat)[len(envs):]:
        ax.axis("off")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=color, label=method) for method, color in colors.items()]
    axes.flat[0].legend(handles=handles, fontsize=7)
    fig.supxlabel("interactions (solid: sampled, dashed: greedy success on 200 held-out maps)", fontsize=9)
    fig.tight_layout()
    return fig


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """:param argv: command-line arguments
    :return: the summary"""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=None,
                        help="MiniGrid ids to train (default: the module's ENVS); with --report, those printed (the report "
                        "files cover every cell)")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--seeds", nargs="+", type=nonnegative_int, default=[0, 1, 2])
    parser.add_argument("--budget", type=positive_int, default=BUDGET, help="interactions per cell (%(default)s)")
    parser.add_argument("--procs", type=positive_int, default=2, help="cells trained at once, one core each")
    parser.add_argument("--tag", default="", help="names a variant of the methods (with --params): its cells are METHOD-TAG")
    parser.add_argument("--params", type=key_value, nargs="+", default=[], metavar="KEY:VALUE",
                        help="the variant's changes of the methods' entries (rl-zoo3's -params syntax)")
    parser.add_argument("--report", action="store_true",
                        help="only write the report of the cells run so far (every method and variant with a cell)")
    parser.add_argument("--out", type=Path, default=default_out(), help="results folder (%(default)s)")
    args = parser.parse_args(argv)
    if args.budget < POINTS:
        parser.error(f"--budget must be at least {POINTS} (one evaluation per point)")
    if bool(args.tag) != bool(args.params) or (args.tag and not args.tag.isalnum()):
        parser.error("--tag (letters and digits) goes with --params: a variant has a name and the settings it changes")
    runs = args.out / "minigrid_general"
    present = sorted(path.name for path in runs.iterdir() if path.is_dir()) if runs.is_dir() else []
    if not args.report:
        envs = args.envs or list(ENVS)
        for env_id in envs:  # a bad id or setting fails here, before any training
            for method in args.methods:
                method_entry(env_id, method, args.budget, args.params)
        cells = [(env_id, method, seed) for seed in args.seeds for env_id in envs for method in args.methods]
        with ThreadPoolExecutor(max_workers=args.procs) as pool:
            list(pool.map(lambda cell: run_cell(runs, *cell, args.budget, args.tag, args.params), cells))
        present = sorted(path.name for path in runs.iterdir() if path.is_dir())
    # the report covers every cell on disk, whatever this run trained
    envs = sorted(present, key=lambda env_id: (GROUPS.index(group(env_id)), env_id))
    summary = summarize(runs, envs, labels_present(runs, envs))
    write_json(args.out / "minigrid_general.json", summary)
    text = table(summary)
    (args.out / "minigrid_general.md").write_text(text)
    if summary:
        figure(summary).savefig(args.out / "minigrid_general.png", dpi=110)
    page = args.out.parent / "results.md"
    if page.is_file():
        refresh_block(page, "minigrid general", text)
    if args.envs:
        summary = {env_id: methods for env_id, methods in summary.items() if env_id in args.envs}
        text = table(summary)
    print(text)
    return summary


if __name__ == "__main__":
    main()
