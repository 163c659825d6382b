"""``python -m benchmarks.paired_speed OLD NEW``: is one source tree's DirPG faster than another's?

On a shared VM the rate of the same code drifts by a quarter within seconds, so two benchmark runs made one after the
other cannot tell a 10 % change from noise. Here two source trees (directories that hold an ``sb3_dirpg`` package,
such as two ``git worktree`` checkouts) train the same model at the same time, one process per core, swapping cores
every round. Each round gives one ratio NEW/OLD of CPU-time rates, measured under the same conditions.

It prints the ratios, their median and geometric mean, and how many rounds NEW won. It also gives a sign test and a
Wilcoxon signed-rank test on the log ratios, and whether both trees trained the same parameters, which holds when a
speed-up changes nothing in what DirPG computes. Each tree runs its own throughput workload (``WORKLOADS`` and
``make_dirpg``): ``benchmarks/throughput.py``, or ``sb3_dirpg/experiments/throughput.py`` in a tree from before the
benchmarks left the package, so that a new tree can be raced against an old one.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from experiments.common import write_json

# where a tree keeps its throughput workload: the benchmarks folder, or the package in trees from before the move
WORKLOAD_MODULES = (
    ("benchmarks/throughput.py", "benchmarks.throughput"),
    ("sb3_dirpg/experiments/throughput.py", "sb3_dirpg.experiments.throughput"),
)

# run in each tree's own Python process: train, then print the CPU-time rate and a hash of the parameters
RUNNER = """
import hashlib, importlib, json, os, sys, time
import torch as th
th.set_num_threads(1)
interactions, workload, batch, module = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
throughput = importlib.import_module(module)
tree = os.path.abspath(os.getcwd())
for name in (module, "sb3_dirpg"):  # both from this tree, never from an installed copy or the other tree
    path = os.path.abspath(sys.modules[name].__file__)
    if os.path.commonpath([path, tree]) != tree:
        sys.exit(f"{name} was imported from {path}, outside the tree {tree}")
model = throughput.make_dirpg(throughput.WORKLOADS[workload](1.0), batch)
model.learn(max(1, interactions // 10))  # warm-up: first allocations, lazy imports
steps, start = model.num_timesteps, time.process_time()
model.learn(interactions, reset_num_timesteps=False)
rate = (model.num_timesteps - steps) / (time.process_time() - start)
params = th.nn.utils.parameters_to_vector(model.policy.parameters()).detach().numpy().tobytes()
print(json.dumps({"rate": rate, "params": hashlib.sha256(params).hexdigest(), "timesteps": model.num_timesteps}))
"""


def workload_module(tree: Path) -> str:
    """:param tree: the root of a source tree
    :return: the module of the tree's throughput workload: ``benchmarks.throughput``, or
        ``sb3_dirpg.experiments.throughput`` in a tree from before the benchmarks left the package"""
    for path, module in WORKLOAD_MODULES:
        if (tree / path).is_file():
            return module
    raise ValueError(f"{tree} holds no throughput workload: neither of {', '.join(path for path, _ in WORKLOAD_MODULES)}")


def _launch(tree: Path, cpu: int | None, args: list[str]) -> subprocess.Popen:
    """:param tree: the source tree to import ``sb3_dirpg`` from
    :param cpu: the core to pin the process to, or None
    :param args: the runner's arguments: interactions, workload, batch size, the tree's workload module
    :return: the running process"""
    env = dict(os.environ, PYTHONPATH=str(tree))
    process = subprocess.Popen([sys.executable, "-c", RUNNER, *args], cwd=tree, env=env, stdout=subprocess.PIPE, text=True)
    if cpu is not None:  # pinned while it is still importing, long before it trains
        os.sched_setaffinity(process.pid, {cpu})
    return process


def _result(process: subprocess.Popen, tree: Path) -> dict[str, Any]:
    """:param process: a runner process
    :param tree: its source tree, for the message
    :return: what it printed last, as a dict"""
    out, _ = process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"the run in {tree} failed with exit code {process.returncode} (its error is printed above)")
    return json.loads(out.strip().splitlines()[-1])


def compare(
    old: Path, new: Path, rounds: int, interactions: int, workload: str, batch: int, verbose: bool = True
) -> dict[str, Any]:
    """Train OLD and NEW side by side for ``rounds`` rounds.

    :param old: the reference source tree
    :param new: the source tree to compare with it
    :param rounds: rounds; each gives one paired ratio
    :param interactions: interactions timed per run, after a warm-up of a tenth of that
    :param workload: ``multiroom`` or ``cartpole`` (the throughput benchmark's workloads)
    :param batch: lockstep batch size
    :param verbose: print each round
    :return: the rates, ratios, their summary and tests, whether the trees trained the same parameters, and the
        module of each tree's workload
    """
    for tree in (old, new):
        if not (tree / "sb3_dirpg" / "__init__.py").is_file():
            raise ValueError(f"{tree} holds no sb3_dirpg package: pass the root of a source checkout (e.g. a git worktree)")
    args = {tree: [str(interactions), workload, str(batch), workload_module(tree)] for tree in (old, new)}
    side_by_side = hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) >= 2
    cpus = sorted(os.sched_getaffinity(0))[:2] if side_by_side else [None, None]
    runs: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
    for r in range(rounds):
        first, second = (cpus[0], cpus[1]) if r % 2 == 0 else (cpus[1], cpus[0])  # swap cores every round
        if side_by_side:
            processes = {"old": _launch(old, first, args[old]), "new": _launch(new, second, args[new])}
            runs["old"].append(_result(processes["old"], old))
            runs["new"].append(_result(processes["new"], new))
        else:  # one core: alternate which tree goes first
            order = ("old", "new") if r % 2 == 0 else ("new", "old")
            for name in order:
                tree = old if name == "old" else new
                runs[name].append(_result(_launch(tree, None, args[tree]), tree))
        if verbose:
            print(f"round {r + 1}/{rounds}: old {runs['old'][-1]['rate']:,.0f}/s, new {runs['new'][-1]['rate']:,.0f}/s, "
                  f"new/old {runs['new'][-1]['rate'] / runs['old'][-1]['rate']:.3f}", flush=True)  # fmt: skip
    ratios = np.array([n["rate"] / o["rate"] for o, n in zip(runs["old"], runs["new"])])
    wins = int((ratios > 1).sum())
    logs = np.log(ratios)
    return {
        "old": str(old), "new": str(new), "workload": workload, "batch": batch, "interactions": interactions,
        "workload_modules": {"old": args[old][-1], "new": args[new][-1]}, "side_by_side": side_by_side,
        "ratios": ratios.tolist(),
        "rates_old": [o["rate"] for o in runs["old"]], "rates_new": [n["rate"] for n in runs["new"]],
        "median_ratio": float(np.median(ratios)), "geometric_mean_ratio": float(np.exp(logs.mean())),
        "new_faster_rounds": wins, "sign_test_p": float(stats.binomtest(wins, rounds, 0.5).pvalue),
        "wilcoxon_p": float(stats.wilcoxon(logs).pvalue) if rounds >= 2 and np.any(logs != 0) else math.nan,
        "same_parameters": len({run["params"] for run in runs["old"] + runs["new"]}) == 1,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Compare two source trees and print the summary.

    :param argv: command-line arguments (default: ``sys.argv``)
    :return: see :func:`compare`
    """
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", type=Path, help="the reference source tree (holds sb3_dirpg/)")
    parser.add_argument("new", type=Path, help="the source tree to compare with it")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--interactions", type=int, default=40_000, help="interactions timed per run")
    parser.add_argument("--workload", choices=("multiroom", "cartpole", "doorkey"), default="multiroom")
    parser.add_argument("--batch", type=int, default=32, help="lockstep batch size")
    parser.add_argument("--json", default=None, help="where to write the results")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.interactions < 1:
        parser.error("--rounds and --interactions must be positive")
    result = compare(args.old.resolve(), args.new.resolve(), args.rounds, args.interactions, args.workload, args.batch)
    print(f"new/old over {args.rounds} rounds ({'side by side' if result['side_by_side'] else 'alternating on one core'}): "
          f"median {result['median_ratio']:.3f}, geometric mean {result['geometric_mean_ratio']:.3f}; "
          f"new faster in {result['new_faster_rounds']} of {args.rounds} (sign test p = {result['sign_test_p']:.3f}, "
          f"Wilcoxon p = {result['wilcoxon_p']:.3f}); same parameters: {result['same_parameters']}")  # fmt: skip
    if args.json:
        write_json(args.json, result, announce=True)
    return result


if __name__ == "__main__":
    main()
