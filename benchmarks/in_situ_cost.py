"""``python -m benchmarks.in_situ_cost``: what a small piece of work costs alone and inside DirPG's search.

A micro-benchmark runs code in a tight loop, where its instructions and data stay in the CPU's caches. Inside the
search, every lockstep iteration runs the simulators, the network and the search core in turn over a tree of tens of
megabytes, and the same code runs slower. This module measures by how much, for the same job done two ways: sample
one action per region for 16 regions of 7 actions, either with five small numpy calls (as the numpy search core did) or
with a plain Python loop. Each probe runs once per lockstep iteration from an SB3 callback (``on_step``) while DirPG
trains, and alone in a tight loop before and after; it prints µs per probe both ways and their ratio.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from benchmarks.throughput import WORKLOADS, make_dirpg
from experiments.common import write_json

N_REGIONS = 16  # about the number of episodes still searching per lockstep iteration on MultiRoom-N6 at batch 32
N_ACTIONS = 7  # MiniGrid's actions


class SamplingProbes:
    """The same job, sampling one action per region by inverse CDF, done with numpy and in plain Python.

    :param seed: seeds the logits, the uniforms and the region ids
    :param column_size: length of the tree column the regions' nodes are read from
    """

    def __init__(self, seed: int = 0, column_size: int = 100_000) -> None:
        rng = np.random.default_rng(seed)
        self.column = rng.random(column_size)
        self.ids = rng.integers(column_size, size=N_REGIONS)
        self.logits = rng.normal(size=(N_REGIONS, N_ACTIONS)) - math.log(N_ACTIONS)
        self.uniforms = rng.random((N_REGIONS, 1)) * np.exp(self.logits).sum(axis=1, keepdims=True)
        self.column_list = self.column.tolist()
        self.ids_list = self.ids.tolist()
        self.logits_list = self.logits.tolist()
        self.uniforms_list = self.uniforms[:, 0].tolist()

    def with_numpy(self) -> np.ndarray:
        """:return: the sampled actions, from five numpy calls: a gather, exp, cumsum, a comparison, argmax"""
        self.column[self.ids]
        cum = np.cumsum(np.exp(self.logits), axis=1)
        return np.greater(cum, self.uniforms).argmax(axis=1)

    def with_python(self) -> list[int]:
        """:return: the sampled actions, from a Python loop over the regions and their actions"""
        actions = []
        column = self.column_list
        for node, logits, u in zip(self.ids_list, self.logits_list, self.uniforms_list):
            column[node]
            total = 0.0
            chosen = len(logits) - 1
            for action, logit in enumerate(logits):
                total += math.exp(logit)
                if total > u:
                    chosen = action
                    break
            actions.append(chosen)
        return actions

    def probes(self) -> dict[str, Callable[[], Any]]:
        """:return: the probes by name"""
        return {"numpy (5 calls)": self.with_numpy, "python loop": self.with_python}


def time_alone(probes: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """:param probes: the probes by name
    :param repeats: calls of each probe, interleaved
    :return: µs per call of each probe in a tight loop"""
    seconds = dict.fromkeys(probes, 0.0)
    for _ in range(repeats):
        for name, probe in probes.items():
            start = time.perf_counter()
            probe()
            seconds[name] += time.perf_counter() - start
    return {name: s / repeats * 1e6 for name, s in seconds.items()}


class ProbeCallback(BaseCallback):
    """Runs every probe once per ``on_step`` (once per lockstep iteration of DirPG's search) and times it.

    :param probes: the probes by name
    """

    def __init__(self, probes: dict[str, Callable[[], Any]]) -> None:
        super().__init__()
        self.probes = probes
        self.seconds = dict.fromkeys(probes, 0.0)
        self.calls = 0

    def _on_step(self) -> bool:
        """:return: True (training goes on)"""
        for name, probe in self.probes.items():
            start = time.perf_counter()
            probe()
            self.seconds[name] += time.perf_counter() - start
        self.calls += 1
        return True

    def per_call_us(self) -> dict[str, float]:
        """:return: µs per call of each probe"""
        return {name: s / max(self.calls, 1) * 1e6 for name, s in self.seconds.items()}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Print the table and optionally write it as JSON.

    :param argv: command-line arguments (default: ``sys.argv``)
    :return: µs per probe alone (before and after training) and inside the search, with the number of iterations
    """
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="multiroom", choices=sorted(WORKLOADS), help="the throughput benchmark's workload")
    parser.add_argument("--interactions", type=int, default=60_000, help="DirPG interactions to train while probing")
    parser.add_argument("--batch", type=int, default=32, help="episodes per lockstep batch")
    parser.add_argument("--repeats", type=int, default=20_000, help="calls of each probe when timed alone")
    parser.add_argument("--json", default=None, help="where to write the results")
    args = parser.parse_args(argv)
    import torch as th

    th.set_num_threads(1)
    probes = SamplingProbes().probes()
    before = time_alone(probes, args.repeats)
    callback = ProbeCallback(probes)
    model = make_dirpg(WORKLOADS[args.env](1.0), args.batch)
    model.learn(args.interactions, callback=callback)
    inside = callback.per_call_us()
    after = time_alone(probes, args.repeats)
    alone = {name: (before[name] + after[name]) / 2 for name in probes}
    result = {
        "env": args.env, "batch": args.batch, "interactions": model.num_timesteps, "iterations": callback.calls,
        "alone_before_us": before, "alone_after_us": after, "inside_us": inside,
        "inside_over_alone": {name: inside[name] / alone[name] for name in probes},
    }  # fmt: skip
    print(f"{model.num_timesteps:,} interactions, {callback.calls:,} lockstep iterations probed")
    print(f"{'probe':16s} {'alone µs':>9s} {'inside µs':>10s} {'ratio':>6s}")
    for name in probes:
        print(f"{name:16s} {alone[name]:9.2f} {inside[name]:10.2f} {result['inside_over_alone'][name]:6.2f}")
    if args.json:
        write_json(args.json, result, announce=True)
    return result


if __name__ == "__main__":
    main()
