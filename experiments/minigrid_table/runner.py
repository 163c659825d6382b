"""Train the MiniGrid table's cells: one subprocess per cell (rl-zoo3's ``train`` or the project's bridge), from
scratch or from the cell's checkpoint."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from experiments.common import subprocess_env
from experiments.minigrid_table.cells import (
    KEPT_RECORD,
    POINTS,
    SAME_KEYS,
    STOP_AFTER,
    STOP_LEVEL,
    Cell,
    evaluation_env,
    masks_actions,
    overrides,
    progress,
    record_end,
    zoo_ppo_file,
)  # fmt: skip


def command(cell: Cell, runs: Path, offset: int = 0) -> list[str]:
    """The command line that trains a cell (from the start, or from its checkpoint when ``offset > 0``).

    :param cell: the cell
    :param runs: the folder of all cells
    :param offset: interactions already made (resume from the checkpoint)
    :return: the command
    """
    folder = cell.folder(runs)
    env_kwargs, env_wrapper = evaluation_env(cell.env_id, cell.method, cell.params)
    callback = {
        "experiments.held_out.HeldOutEvaluation": dict(
            record=str(folder / "record.json"),
            env_id=cell.env_id,
            budget=cell.budget,
            env_kwargs=env_kwargs,
            env_wrapper=env_wrapper,
            points=POINTS,
            offset=offset,
            stop_level=STOP_LEVEL,
            stop_after=STOP_AFTER,
        )
    }
    params = [f"callback:{callback!r}", *cell.params]
    extra = overrides(cell.env_id, cell.method)
    params += [f"{key}:{value!r}" for key, value in extra.items() if key in SAME_KEYS]
    if cell.method.startswith("ppo") and masks_actions(env_wrapper):  # rl-zoo3's PPO settings, learning with the masks
        head = [sys.executable, "-m", "sb3_dirpg.integrations.zoo", "train", "--algo", "ppo_mask"]
        head += ["--gym-packages", "minigrid", "--conf-file", str(zoo_ppo_file())]
    elif cell.method.startswith("ppo"):
        head = [sys.executable, "-m", "rl_zoo3.train", "--algo", "ppo", "--gym-packages", "minigrid"]
    else:
        head = [sys.executable, "-m", "sb3_dirpg.integrations.zoo", "train", "--algo", cell.method]
    cmd = [*head, "--env", cell.env_id, "--seed", str(cell.seed), "-n", str(cell.budget - offset)]
    cmd += ["--num-threads", str(cell.threads)]
    cmd += ["--eval-freq", "-1", "-f", str(folder / "zoo"), "--verbose", "0", "--device", "cpu", "-params", *params]
    if "env_kwargs" in extra and extra["env_kwargs"]:
        cmd += ["--env-kwargs", *[f"{key}:{value!r}" for key, value in extra["env_kwargs"].items()]]
    if offset:
        cmd += ["--trained-agent", str(folder / "model.zip")]
    return cmd



def _keep_unresumable_record(folder: Path) -> None:
    """Before a cell with a record but no checkpoint starts again from scratch (which rewrites ``record.json``), keep
    its record aside unless an even longer one is kept already; drop a kept record that the current one has passed.

    :param folder: the cell's folder
    """
    current, kept = folder / "record.json", folder / KEPT_RECORD
    if not current.exists() or "stopped_early" in json.loads(current.read_text()):  # finished: it needs no checkpoint
        return
    current_end = record_end(json.loads(current.read_text()))
    kept_end = record_end(json.loads(kept.read_text())) if kept.exists() else -1
    if not (folder / "model.zip").exists() and current_end > max(kept_end, 0):
        shutil.copyfile(current, kept)
    elif kept.exists() and current_end >= kept_end:
        kept.unlink()


def run_cell(cell: Cell, runs: Path, resume: bool) -> dict[str, Any]:
    """Train one cell to its budget in a subprocess (its output goes to ``train.log`` in the cell's folder).

    :param cell: the cell
    :param runs: the folder of all cells
    :param resume: skip a finished cell and continue an unfinished one; otherwise start afresh
    :return: the cell's record
    """
    folder = cell.folder(runs)
    done = progress(cell, runs) if resume else 0
    if not resume and folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if resume:
        _keep_unresumable_record(folder)
    if done < cell.budget:
        started = time.perf_counter()
        print(f"start {cell.env_id} {cell.name} seed {cell.seed} at {done}", flush=True)
        with open(folder / "train.log", "a") as log:
            result = subprocess.run(command(cell, runs, done), stdout=log, stderr=subprocess.STDOUT, check=False,
                                    env=subprocess_env())
        status = "done" if result.returncode == 0 else f"FAILED (exit {result.returncode}, see {folder / 'train.log'})"
        print(f"{status}: {cell.env_id} {cell.name} seed {cell.seed} in {time.perf_counter() - started:.0f} s", flush=True)
        _keep_unresumable_record(folder)
    return json.loads((folder / "record.json").read_text()) if (folder / "record.json").exists() else {}
