"""``python -m benchmarks.mask_window_speed``: what the return rules of ``MiniGridNoOpMask`` cost in training.

Every row is KeyCorridorS5R3's DirPG entry of ``zoo_hyperparams/dirpg.yml`` as it ships (the compiled simulator and
its compiled search loop), with the mask's memory rules set per row: ``return_window`` 0 (the no-op, undo and
closing masks alone), 8 and 24, ``no_revisit`` (every pose since the last change), and ``no_revisit`` with
``no_repick`` (the cell of the last drop in each state) or ``keep_key`` (a look over the grid while a key is carried;
the entry's own setting; the figures in docs/results.md were measured on S4R3's entry, which had the same settings with
an 80-step horizon until S4R3 took the one MiniGrid setting). The rows train side by side, interleaved over rounds,
from the same untrained policy, and each is measured by ``learn``'s interactions per second; the ratios are each row's
median rate over the window-8 row's.
"""

from __future__ import annotations

import argparse
import copy
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
from sb3_dirpg.integrations.zoo import algorithm_kwargs

ENV_ID = "MiniGrid-KeyCorridorS5R3-v0"
#: the rules each row varies (the entry's other rules, ``no_undo`` and ``keep_doors_open``, stay in every row)
VARIED = ("return_window", "no_revisit", "no_repick", "keep_key")
#: the rows: the varied rules of the mask, by the row's name (in the order they act)
RULES: dict[str, list[Any]] = {
    "0": [],
    "8": [{"return_window": 8}],
    "24": [{"return_window": 24}],
    "no_revisit": ["no_revisit"],
    "+no_repick": ["no_repick", "no_revisit"],
    "+keep_key": ["keep_key", "no_revisit"],
}
MASK = "sb3_dirpg.envs.MiniGridNoOpMask"


def windowed_model(rule: str, seed: int = 0) -> DirPG:
    """:param rule: the row's name in :data:`RULES`
    :param seed: the model's seed
    :return: a DirPG model of the S5R3 entry whose mask has the row's rules"""
    settings = entry(ENV_ID, "dirpg")
    wrappers = copy.deepcopy(settings["env_wrapper"])
    layers = [layer for layer in wrappers if isinstance(layer, dict) and MASK in layer]
    if len(layers) != 1:
        raise ValueError(f"{ENV_ID}'s entry has {len(layers)} {MASK} layers; this benchmark needs exactly one")
    kept = [spec for spec in layers[0][MASK]["rules"] if (spec if isinstance(spec, str) else next(iter(spec))) not in VARIED]
    layers[0][MASK] = {"rules": kept + RULES[rule]}
    env = build_env(ENV_ID, dict(settings.get("env_kwargs") or {}), wrappers)
    return DirPG(settings["policy"], env, seed=seed, device="cpu", **algorithm_kwargs(settings))


def measure(rounds: int, interactions: int) -> dict[str, Any]:
    """:param rounds: interleaved rounds (the first, which compiles, is left out)
    :param interactions: interactions per row and round
    :return: per row, the rates of every round, their median and the ratio to the window-8 row's median"""
    th.set_num_threads(1)
    models = {rule: windowed_model(rule) for rule in RULES}
    for model in models.values():
        rate(model, interactions)  # warm-up: numba compiles, the first maps are searched
    rates: dict[str, list[float]] = {rule: [] for rule in RULES}
    for _ in range(rounds):
        for rule, model in models.items():
            rates[rule].append(rate(model, interactions))
    medians = {rule: statistics.median(values) for rule, values in rates.items()}
    return {rule: {"simulator": type(models[rule].simulator).__name__, "rates": [round(r) for r in rates[rule]],
                   "median": round(medians[rule]), "vs_window_8": round(medians[rule] / medians["8"], 3)}
            for rule in RULES}  # fmt: skip


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """:param argv: command-line arguments
    :return: the results"""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--interactions", type=int, default=20_000, help="per row and round")
    parser.add_argument("--out", type=Path, default=RESULTS / "mask_window_speed.json")
    args = parser.parse_args(argv)
    result = {"machine": platform.processor() or platform.machine(), "env": ENV_ID, "rounds": args.rounds,
              "interactions": args.interactions, "windows": measure(args.rounds, args.interactions)}  # fmt: skip
    print(f"{'return rule':>13s} {'median/s':>9s} {'vs 8':>6s}")
    for rule, row in result["windows"].items():
        print(f"{rule:>13s} {row['median']:9d} {row['vs_window_8']:6.3f}")
    write_json(args.out, result, announce=True)
    return result


if __name__ == "__main__":
    main()
