"""``python -m benchmarks.ray_scaling``: DirPG's interactions per second with search workers on a Ray
cluster, against one process and against the process backend.

It joins the cluster named by ``RAY_ADDRESS``, or else starts a local multi-node cluster on this machine with
``ray.cluster_utils.Cluster`` (a head and ``--nodes - 1`` worker nodes, ``--cpus-per-node`` CPUs each, on the loopback
interface). The workload is :mod:`~benchmarks.throughput`'s (MiniGrid MultiRoom-N6 with the paper's CNN and
search settings, or CartPole). Rows, measured side by side and interleaved over rounds so that machine drift hits all
of them alike (medians reported):

* ``n_workers=0``: the search in the learner's process only;
* ``ray, n_workers=k``: the learner searches one share of each batch and ``k`` Ray actors the others;
* ``process, n_workers=k``: the same with worker processes on this machine.

It prints a table with each row's ratio to one process and writes everything to JSON. The nodes of a local cluster
share this machine's cores: the speedup cannot exceed what the cores allow, whatever the number of nodes.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import statistics
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import torch as th

from benchmarks.common import RESULTS
from benchmarks.throughput import WORKLOADS, learn_rate, make_dirpg
from sb3_dirpg import DirPG


def start_cluster(stack: ExitStack, nodes: int, cpus_per_node: int) -> str:
    """Start a local multi-node Ray cluster (stopped when ``stack`` closes) unless ``RAY_ADDRESS`` names one.

    :param stack: closes the cluster
    :param nodes: nodes of a local cluster, the head included
    :param cpus_per_node: CPUs each node offers Ray
    :return: a description of the cluster
    """
    import ray
    from ray.cluster_utils import Cluster

    from sb3_dirpg.dirpg.workers.ray_actors import loopback

    if os.environ.get("RAY_ADDRESS"):
        return f"the cluster at RAY_ADDRESS={os.environ['RAY_ADDRESS']}"
    stack.enter_context(loopback())
    cluster = Cluster(initialize_head=True, head_node_args=dict(num_cpus=cpus_per_node))
    stack.callback(cluster.shutdown)
    stack.callback(ray.shutdown)
    for _ in range(nodes - 1):
        cluster.add_node(num_cpus=cpus_per_node)
    stack.enter_context(_environ("RAY_ADDRESS", cluster.address))
    return f"a local cluster of {nodes} nodes with {cpus_per_node} CPU each, on this machine's {os.cpu_count()} cores"


@contextmanager
def _environ(name: str, value: str) -> Iterator[None]:
    """Set an environment variable within the block."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def measure(work_name: str, scale: float, batch: int, workers: list[int], backends: list[str], rounds: int) -> dict[str, Any]:
    """Measure every row, interleaved over ``rounds``.

    :param work_name: a workload of :mod:`~benchmarks.throughput`
    :param scale: multiplies the interactions of each measurement
    :param batch: the lockstep batch size (episodes per update, split over the learner and the workers)
    :param workers: the numbers of workers (0: one process)
    :param backends: the backends to measure for each positive number of workers
    :param rounds: interleaved rounds
    :return: rates, samples and ratios
    """
    work = WORKLOADS[work_name](scale)
    n = work.interactions["workers"]
    models: dict[str, DirPG] = {}
    for k in workers:
        for backend in backends if k > 0 else ["process"]:
            name = f"{backend}, n_workers={k}" if k > 0 else "n_workers=0 (one process)"
            models[name] = make_dirpg(work, batch, n_workers={backend: k})
    print(f"== {work.name}: batch_episodes={batch}, {n:,} interactions per measurement; warming up ...", flush=True)
    for model in models.values():
        model.learn(batch * 200, reset_num_timesteps=False)  # starts the workers; first allocations
    samples: dict[str, list[float]] = collections.defaultdict(list)
    for r in range(rounds):
        for name, model in models.items():
            samples[name].append(learn_rate(model, n))
        print(f"   round {r + 1}/{rounds}: " + ", ".join(f"{k}: {v[-1]:,.0f}/s" for k, v in samples.items()), flush=True)
    for model in models.values():
        model.close_workers()
    rates = {name: statistics.median(values) for name, values in samples.items()}
    single = rates["n_workers=0 (one process)"]
    return dict(env=work.name, batch_episodes=batch, interactions_per_measurement=n, rates=rates, samples=samples,
                ratios={name: rate / single for name, rate in rates.items()})  # fmt: skip


def print_table(result: dict[str, Any], cluster: str) -> None:
    """Print the rows as a markdown table.

    :param result: what :func:`measure` returned
    :param cluster: the description of the cluster
    """
    print(f"\n{result['env']} (batch_episodes={result['batch_episodes']}; {cluster}; median of rounds)\n")
    print("| search workers | interactions/s | rounds (min-max) | vs one process |")
    print("| --- | ---: | ---: | ---: |")
    for name, rate in result["rates"].items():
        low, high = min(result["samples"][name]), max(result["samples"][name])
        print(f"| {name} | {rate:,.0f} | {low:,.0f}-{high:,.0f} | {result['ratios'][name]:.2f} |")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark.

    :param argv: command-line arguments
    :return: the results
    """
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="multiroom", choices=sorted(WORKLOADS))
    parser.add_argument("--nodes", type=int, default=3, help="nodes of a local cluster, the head included")
    parser.add_argument("--cpus-per-node", type=int, default=1, help="CPUs each node of a local cluster offers Ray")
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2], help="numbers of search workers")
    parser.add_argument("--backends", nargs="+", default=["ray", "process"], choices=["ray", "process"])
    parser.add_argument("--batch", type=int, default=24, help="episodes per update, split over learner and workers")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per row (the median is reported)")
    parser.add_argument("--scale", type=float, default=0.5, help="multiplies the interactions of each measurement")
    parser.add_argument("--json", type=Path, default=RESULTS / "ray_scaling.json", help="where to write the results")
    args = parser.parse_args(argv)
    if args.batch < max(args.workers) + 1:
        parser.error(f"--batch {args.batch} leaves some of {max(args.workers)} workers without an episode")
    th.set_num_threads(1)
    import ray

    with ExitStack() as stack:
        cluster = start_cluster(stack, args.nodes, args.cpus_per_node)
        result = measure(args.env, args.scale, args.batch, args.workers, args.backends, args.rounds)
        nodes = len([node for node in ray.nodes() if node["Alive"]]) if ray.is_initialized() else None
    print_table(result, cluster)
    results = dict(result, cluster=cluster, ray_nodes=nodes, rounds=args.rounds, scale=args.scale, cpus=os.cpu_count(),
                   python=platform.python_version(), torch=th.__version__, ray=ray.__version__, torch_threads=1)  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2))
    print(f"\nwrote {args.json}")
    return results


if __name__ == "__main__":
    main()
