"""``python -m benchmarks.progress_speed``: the entries that use the progress reward, on the env and compiled.

The table's DoorKey-5x5, KeyCorridorS3R1 and LockedRoom entries and the frontier's KeyCorridorS3R3 and
ObstructedMaze-2Dlh entries (``zoo_hyperparams/dirpg.yml``: ``MiniGridProgressReward`` with ``MiniGridProgressBound``,
KeyCorridor's and ObstructedMaze's success rule, boxes, LockedRoom's ``MissionObs``) train on the compiled simulator
since ``simulator_backend="auto"`` can run them; before, they stepped the env itself. Per env, rows built from the
entries as they ship, measured by ``learn``'s interactions per second, side by side and interleaved over rounds:

* ``dirpg``: DirPG's entry with ``simulator_backend="auto"`` (the compiled simulator);
* ``dirpg_env``: the same with ``simulator_backend="env"`` (the code path these entries ran on before);
* ``reinforce``: REINFORCE's entry for the env, where ``zoo_hyperparams/reinforce.yml`` has one.

*Early* is the untrained policy. *Late* (``--checkpoint``, a DirPG model zip trained on ``--checkpoint-env``, e.g.
``docs/results/frontier/c-S3R1-S3R3-ep4-s0.zip`` on KeyCorridorS3R3, the default) loads its policy weights into that
env's DirPG rows. The ratios are each row's median rate over ``dirpg_env``'s.
"""

from __future__ import annotations

import argparse
import platform
import statistics
from pathlib import Path
from typing import Any

import torch as th

from benchmarks.common import RESULTS
from benchmarks.shipped_speed import rate
from experiments.common import write_json
from experiments.held_out import build_env
from experiments.minigrid_table import entry
from sb3_dirpg import DirPG
from sb3_dirpg.baselines import Reinforce
from sb3_dirpg.integrations.zoo import algorithm_kwargs

ENVS = ("MiniGrid-DoorKey-5x5-v0", "MiniGrid-KeyCorridorS3R1-v0", "MiniGrid-LockedRoom-v0", "MiniGrid-KeyCorridorS3R3-v0",
        "MiniGrid-ObstructedMaze-2Dlh-v0")  # fmt: skip


def entry_model(env_id: str, algo: str, **changes: Any) -> DirPG | Reinforce | None:
    """:param env_id: an env of :data:`ENVS`
    :param algo: ``dirpg`` or ``reinforce``
    :param changes: settings that differ from the entry
    :return: the model of the algorithm's entry on the env the entry builds, or None where the algorithm has none"""
    try:
        settings = entry(env_id, algo)
    except KeyError:
        return None
    env = build_env(env_id, settings.get("env_kwargs"), settings.get("env_wrapper"))
    cls = {"dirpg": DirPG, "reinforce": Reinforce}[algo]
    return cls(settings["policy"], env, seed=0, device="cpu", **{**algorithm_kwargs(settings), **changes})


def measure(
    envs: tuple[str, ...], rounds: int, interactions: int, checkpoint: Path | None, checkpoint_env: str
) -> dict[str, Any]:
    """:param envs: the envs
    :param rounds: interleaved rounds
    :param interactions: interactions per row and round
    :param checkpoint: a trained DirPG model for the late phase of ``checkpoint_env``, or None
    :param checkpoint_env: the env the checkpoint was trained on
    :return: per env and phase, per row: the rates of every round, their median and the ratio to ``dirpg_env``'s"""
    th.set_num_threads(1)
    trained = DirPG.load(checkpoint, device="cpu") if checkpoint is not None else None
    results: dict[str, Any] = {}
    for env_id in envs:
        for phase in ("early", "late") if trained is not None and env_id == checkpoint_env else ("early",):
            models = {"dirpg": entry_model(env_id, "dirpg"),
                      "dirpg_env": entry_model(env_id, "dirpg", simulator_backend="env")}  # fmt: skip
            if phase == "late":
                for model in models.values():
                    model.policy.load_state_dict(trained.policy.state_dict())
            else:
                models["reinforce"] = entry_model(env_id, "reinforce")
            models = {name: model for name, model in models.items() if model is not None}
            rates: dict[str, list[float]] = {name: [] for name in models}
            for _ in range(rounds):
                for name, model in models.items():
                    rates[name].append(rate(model, interactions))
            medians = {name: statistics.median(values) for name, values in rates.items()}
            results.setdefault(env_id, {})[phase] = {
                name: {"simulator": type(models[name].simulator).__name__, "rates": [round(r) for r in rates[name]],
                       "median": round(medians[name]), "vs_env_path": round(medians[name] / medians["dirpg_env"], 2)}
                for name in models
            }  # fmt: skip
    return results


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """:param argv: command-line arguments
    :return: the results"""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=list(ENVS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--interactions", type=int, default=20_000, help="per row and round")
    parser.add_argument("--checkpoint", type=Path, default=None, help="a trained DirPG model zip (the late phase)")
    parser.add_argument("--checkpoint-env", default="MiniGrid-KeyCorridorS3R3-v0", help="the env it was trained on")
    parser.add_argument("--out", type=Path, default=RESULTS / "progress_speed.json")
    args = parser.parse_args(argv)
    envs = measure(tuple(args.envs), args.rounds, args.interactions, args.checkpoint, args.checkpoint_env)
    result = {"machine": platform.processor() or platform.machine(), "rounds": args.rounds,
              "interactions": args.interactions, "checkpoint": str(args.checkpoint), "envs": envs}  # fmt: skip
    print(f"{'env':32s} {'phase':6s} {'row':10s} {'simulator':26s} {'median/s':>9s} {'vs env path':>12s}")
    for env_id, phases in result["envs"].items():
        for phase, rows in phases.items():
            for name, row in rows.items():
                print(f"{env_id:32s} {phase:6s} {name:10s} {row['simulator']:26s} {row['median']:9d} "
                      f"{row['vs_env_path']:12.2f}")  # fmt: skip
    write_json(args.out, result, announce=True)
    return result


if __name__ == "__main__":
    main()
