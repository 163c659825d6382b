"""What the FourRooms entry's stack of 4 views costs DirPG: ``DirPG.learn`` for a fixed number of interactions from a
fresh seeded model, with the shipped entry of ``zoo_hyperparams/dirpg.yml`` and with the same entry less its
``FrameStackObservation`` (one view), in alternating rounds, one torch thread.

Run from a source checkout: ``OMP_NUM_THREADS=1 python -m benchmarks.frame_stack_speed --rounds 2``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import torch as th

from experiments.held_out import build_env
from experiments.minigrid_table import entry
from sb3_dirpg import DirPG
from sb3_dirpg.integrations.zoo import algorithm_kwargs

ENV_ID = "MiniGrid-FourRooms-v0"
STACK = "gymnasium.wrappers.FrameStackObservation"


def interactions_per_second(wrappers: list[Any], interactions: int) -> float:
    """:param wrappers: the env wrappers, as in the entry
    :param interactions: how many interactions to train for
    :return: the training interactions per second"""
    settings = entry(ENV_ID, "dirpg")
    env = build_env(ENV_ID, dict(settings.get("env_kwargs") or {}), wrappers)
    model = DirPG(settings["policy"], env, seed=0, device="cpu", **algorithm_kwargs(settings))
    start = time.perf_counter()
    model.learn(interactions)
    return interactions / (time.perf_counter() - start)


def main() -> None:
    """Print the rate of each setting and their ratio, round by round."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--interactions", type=int, default=30_000)
    args = parser.parse_args()
    th.set_num_threads(1)
    stacked = entry(ENV_ID, "dirpg")["env_wrapper"]
    one_view = [w for w in stacked if STACK not in w]
    if len(one_view) != len(stacked) - 1:
        raise SystemExit(f"the {ENV_ID} entry has no {STACK}: nothing to compare")
    for round_ in range(args.rounds):
        one, four = interactions_per_second(one_view, args.interactions), interactions_per_second(stacked, args.interactions)
        print(f"round {round_}: one view {one:,.0f}/s, 4 views {four:,.0f}/s, 4 views / one view {four / one:.2f}")


if __name__ == "__main__":
    main()
