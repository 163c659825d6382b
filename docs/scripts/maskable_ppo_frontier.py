"""Train sb3-contrib's MaskablePPO on a hard-exploration env with exactly the information of its DirPG entry.

The MiniGrid table's ``ppo_same``, on an env for which rl-zoo3 has no PPO entry: rl-zoo3's MiniGrid PPO settings (all
its MiniGrid entries share them) with the DirPG entry's wrappers (reward, masks, views), ``env_kwargs``, policy and
``MiniGridCNN``, the reward normalized and the observation not. It trains through the zoo bridge (``--algo
ppo_mask``) with the table's held-out evaluation (200 seeds from 10000, sampled and greedy, the table's early stop),
so its record reads like a table cell's. A second call continues from the last checkpoint.

Usage: ``python docs/scripts/maskable_ppo_frontier.py MiniGrid-KeyCorridorS6R3-v0 --seed 0 --budget 2500000
--points 10 --out docs/results/frontier_ppo_mask``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import yaml

from experiments.minigrid_table.cells import (
    SAME_NORMALIZE,
    STOP_AFTER,
    STOP_LEVEL,
    entry,
    importable,
    load_yaml,
    zoo_ppo_file,
)  # fmt: skip
from sb3_dirpg.integrations.zoo import main as zoo_main

ZOO_MINIGRID_ENTRY = "MiniGrid-KeyCorridorS3R1-v0"  # any of rl-zoo3's MiniGrid PPO entries: they are all the same


def ppo_entry(env_id: str, budget: int) -> dict[str, Any]:
    """:param env_id: an env with a DirPG entry
    :param budget: interactions
    :return: rl-zoo3's MiniGrid PPO entry with the DirPG entry's information"""
    ours = entry(env_id, "dirpg")
    settings = dict(load_yaml(zoo_ppo_file())[ZOO_MINIGRID_ENTRY])
    settings.update(env_wrapper=ours["env_wrapper"], policy=ours["policy"], policy_kwargs=importable(ours["policy_kwargs"]),
                    normalize=SAME_NORMALIZE, n_timesteps=budget)  # fmt: skip
    if ours.get("env_kwargs"):
        settings["env_kwargs"] = ours["env_kwargs"]
    return settings


def train(env_id: str, seed: int, budget: int, points: int, out: Path) -> Path:
    """Train (or continue) one run.

    :param env_id: the env
    :param seed: the training seed
    :param budget: interactions in all
    :param points: evaluations after the first (one every ``budget / points``)
    :param out: the folder of the runs
    :return: the run's record
    """
    folder = out / f"{env_id}-ppo_mask-s{seed}"
    folder.mkdir(parents=True, exist_ok=True)
    settings = ppo_entry(env_id, budget)
    conf = folder / "conf.yml"
    conf.write_text(yaml.dump({env_id: settings}))
    record = folder / "record.json"
    offset = 0
    if record.exists() and (folder / "model.zip").exists():
        offset = int(json.loads(record.read_text())["points"][-1]["interactions"])
    evaluation = dict(record=str(record), env_id=env_id, budget=budget, env_kwargs=dict(settings.get("env_kwargs") or {}),
                      env_wrapper=settings["env_wrapper"], points=points, offset=offset, stop_level=STOP_LEVEL,
                      stop_after=STOP_AFTER)  # fmt: skip
    callback = {"experiments.held_out.HeldOutEvaluation": evaluation}
    args = ["train", "--algo", "ppo_mask", "--env", env_id, "--gym-packages", "minigrid", "--conf-file", str(conf),
            "--seed", str(seed), "-n", str(budget - offset), "--num-threads", "1", "--eval-freq", "-1",
            "-f", str(folder / "zoo"), "--verbose", "0", "--device", "cpu", "-params", f"callback:{callback!r}"]  # fmt: skip
    if offset:
        args += ["--trained-agent", str(folder / "model.zip")]
    zoo_main(args)
    return record


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("env", help="an env with a DirPG entry in zoo_hyperparams/dirpg.yml")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=int, default=2_500_000)
    parser.add_argument("--points", type=int, default=10, help="evaluations after the first")
    parser.add_argument("--out", type=Path, default=Path("docs/results/frontier_ppo_mask"))
    args = parser.parse_args()
    print(train(args.env, args.seed, args.budget, args.points, args.out))
