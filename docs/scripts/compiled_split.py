"""Compare ``TopDownSearch._split`` with the same split compiled by numba, on every lockstep iteration of N6 searches.

DirPG's search of MultiRoom-N6 batches (the paper's CNN, batch 32) runs both versions on each iteration, in
alternating order, and uses the shipped one's result. The script counts the
iterations whose actions, rests or Gumbels differ in any bit, and prints µs per call of each version inside the search
(the first call, which compiles or loads the numba function, is not timed). The figures are in ``docs/results.md``
("Why the same code runs slower inside the search").

numba is not a dependency of the package: ``pip install numba`` first. Usage: ``python docs/scripts/compiled_split.py
[BATCHES]`` (default 2 batches of 32 episodes), best pinned to one core (``taskset -c 0``).

The compiled split follows numpy's operations in numpy's order, so that it can agree bit for bit: the cumulative sum
and the log-sum-exp add left to right (numpy's pairwise sum is sequential below 8 actions), and ``np.logaddexp(0, y)``
is written out with numpy's branches.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np
import torch as th
from numba import njit

from sb3_dirpg.experiments.throughput import make_dirpg, multiroom_workload
from sb3_dirpg.search.top_down import TopDownSearch
from sb3_dirpg.search.tree import SearchTree

LOG_2 = 0.6931471805599453


@njit(cache=True)
def logaddexp_zero(y: float) -> float:
    """:param y: a float
    :return: ``np.logaddexp(0.0, y)``, with numpy's branches"""
    if y == 0.0:
        return LOG_2
    tmp = 0.0 - y
    if tmp > 0:
        return 0.0 + np.log1p(np.exp(-tmp))
    if tmp <= 0:
        return y + np.log1p(np.exp(tmp))
    return tmp  # nan


@njit(cache=True)
def split_compiled(
    region_node: np.ndarray,
    region_legal: np.ndarray,
    region_g: np.ndarray,
    log_pi: np.ndarray,
    log_p: np.ndarray,
    regions: np.ndarray,
    uniforms: np.ndarray,
    exponentials: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``TopDownSearch._split`` on the tree's columns.

    :param region_node: the regions' nodes, shape (n_regions,)
    :param region_legal: the regions' legal actions, bool, shape (n_regions, n_actions)
    :param region_g: the regions' Gumbels, shape (n_regions,)
    :param log_pi: the nodes' log-probabilities, shape (n_nodes, n_actions)
    :param log_p: the nodes' prefix log-probabilities, shape (n_nodes,)
    :param regions: the regions to split, shape (k,)
    :param uniforms: one uniform per region, shape (k,)
    :param exponentials: one standard exponential per region, shape (k,)
    :return: the actions, shape (k,); the rests' legal actions, shape (k, n_actions); the rests' Gumbels, shape (k,)
    """
    k = regions.size
    n_actions = region_legal.shape[1]
    actions = np.empty(k, np.int64)
    rest = np.empty((k, n_actions), np.bool_)
    g_rest = np.empty(k)
    cum = np.empty(n_actions)
    for r in range(k):
        region = regions[r]
        node = region_node[region]
        total = 0.0
        first_legal = -1
        for a in range(n_actions):
            legal = region_legal[region, a]
            if legal and first_legal < 0:
                first_legal = a
            p = np.exp(log_pi[node, a]) if legal else 0.0
            total = p if a == 0 else total + p
            cum[a] = total
        action = first_legal if first_legal >= 0 else 0
        if total > 0:
            threshold = uniforms[r] * total
            for a in range(n_actions):
                if cum[a] > threshold:
                    action = a
                    break
            else:
                action = 0  # numpy's argmax of an all-false row
        actions[r] = action
        top = -np.inf
        for a in range(n_actions):
            kept = region_legal[region, a] and a != action
            rest[r, a] = kept
            if kept and log_pi[node, a] > top:
                top = log_pi[node, a]
        shift = top if np.isfinite(top) else 0.0
        mass = 0.0
        for a in range(n_actions):
            term = np.exp((log_pi[node, a] if rest[r, a] else -np.inf) - shift)
            mass = term if a == 0 else mass + term
        g = log_p[node] + (np.log(mass) + shift) - np.log(exponentials[r])
        upper = region_g[region]
        g_rest[r] = -np.inf if g == -np.inf else upper - logaddexp_zero(upper - g)
    return actions, rest, g_rest


def split_with_numba(
    tree: SearchTree, regions: np.ndarray, uniforms: np.ndarray, exponentials: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:param tree: the search tree
    :param regions: region ids, shape (k,)
    :param uniforms: shape (k,)
    :param exponentials: shape (k,)
    :return: what ``TopDownSearch._split`` returns"""
    regions_, nodes = tree.regions, tree.nodes
    return split_compiled(
        regions_.node, regions_.legal, regions_.G, nodes.log_pi, nodes.log_p, regions, uniforms, exponentials
    )


class ComparingSearch(TopDownSearch):
    """The shipped search, whose split also runs the compiled version, in alternating order, and keeps the shipped
    result; it times both and counts the calls where they differ in any bit."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.seconds = {"numpy": 0.0, "numba": 0.0}
        self.calls = 0
        self.differing = 0

    def _split(
        self, tree: SearchTree, regions: np.ndarray, uniforms: np.ndarray, exponentials: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:return: the shipped split's result"""
        versions = [("numpy", TopDownSearch._split), ("numba", split_with_numba)]
        out = {}
        for name, split in versions if self.calls % 2 == 0 else versions[::-1]:
            start = time.perf_counter()
            out[name] = split(tree, regions, uniforms, exponentials)
            if self.calls > 0:  # the first call compiles or loads the numba function
                self.seconds[name] += time.perf_counter() - start
        if not all(np.array_equal(a, b) for a, b in zip(out["numpy"], out["numba"])):
            self.differing += 1
        self.calls += 1
        return out["numpy"]


def main() -> None:
    """Search batches of MultiRoom-N6 episodes with the paper's CNN, as DirPG does, and print the comparison."""
    th.set_num_threads(1)
    batches = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    model = make_dirpg(multiroom_workload(1.0), 32)
    model.simulator.ensure_simulators(32)
    search = ComparingSearch(model.simulator, model.search_policy_function(), model.search_config())
    interactions = 0
    for batch in range(batches):
        result = search.run(model.episode_seeds(), np.random.default_rng(batch))
        interactions += sum(ep.interactions for ep in result.episodes)
    timed = max(search.calls - 1, 1)
    print(f"{interactions:,} interactions, {search.calls:,} iterations, {search.differing} with any difference; µs per "
          f"call inside the search: numpy {search.seconds['numpy'] / timed * 1e6:.1f}, "
          f"numba {search.seconds['numba'] / timed * 1e6:.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
