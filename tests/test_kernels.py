"""The compiled kernels against their Python and numpy counterparts: bit for bit where both sides run the same
operations (sums in numpy's order, ``heapq``'s sift steps), within a few ulps where numpy may compute ``exp`` and
``log`` with other code than the C library that the kernels call."""

from __future__ import annotations

import heapq
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sb3_dirpg.search import kernels
from sb3_dirpg.search.gumbel import masked_log_softmax, masked_logsumexp
from sb3_dirpg.search.state import NOISE_BLOCK, NoiseBlocks, Popped, Queues
from sb3_dirpg.search.tree import Nodes, Regions, SearchTree
from tests.reference.naive_search import naive_split

try:
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
except ImportError:  # numpy < 2
    from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__

ACTION_COUNTS = [1, 2, 3, 7, 8, 9, 16, 17, 130, 300]  # numpy sums below 8 in order, then by blocks, then recursively

# numpy picks its exp, log and log1p loops when it is imported: on a CPU with AVX-512 they are numpy's own SIMD code,
# elsewhere the C library's, which the kernels call. The two differ by at most 1 ulp (measured: 2·10^6 arguments of
# each function over the ranges used here). A log-sum-exp and the truncated Gumbel after it chain a few such calls and
# a pairwise sum, so where numpy uses other code the results differ by a few ulps of the largest magnitude in the
# computation, not of the result: log π(a) = logit(a) - logsumexp is close to 0 for a dominant action, as its two
# operands cancel. 8 ulps of that magnitude bounds the differences with room (at most 2 seen over 400 random
# cases of 1 to 300 actions); a wrong formula or summation order is off by far more.
EXP_LOG_ULPS = 8


def assert_within_ulps(got: np.ndarray, expected: np.ndarray, scale: np.ndarray, n_ulps: int = EXP_LOG_ULPS) -> None:
    """Assert that two arrays are equal where ``expected`` is not finite, and elsewhere differ by at most ``n_ulps``
    units in the last place of ``scale`` (the magnitude of what they were computed from), elementwise."""
    got, expected, scale = np.broadcast_arrays(np.asarray(got, float), np.asarray(expected, float), scale)
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(got[~finite], expected[~finite])
    gap = np.abs(got[finite] - expected[finite]) / np.spacing(np.abs(scale[finite]))
    assert gap.max(initial=0.0) <= n_ulps, f"{gap.max()} ulps of the operands apart"


@pytest.mark.parametrize("n", list(range(1, 40)) + [127, 128, 129, 200, 256, 1000, 4099])
def test_pairwise_sum_adds_in_numpys_order(n: int) -> None:
    rng = np.random.default_rng(n)
    for _ in range(20):
        values = rng.standard_normal(n) * 10.0 ** rng.uniform(-8, 8, n)  # magnitudes far apart: order shows
        assert kernels._pairwise_sum(values, 0, n) == values.sum()


def test_heaps_pop_in_heapq_order_with_ties_infinities_and_nan() -> None:
    rng = np.random.default_rng(0)
    n_episodes = 3
    queues = Queues.empty(n_episodes, capacity=4000)
    reference: list[list[tuple[float, float, int]]] = [[] for _ in range(n_episodes)]
    choices = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 0.5])  # many exact ties
    popped = 0
    for step in range(20_000):
        e = int(rng.integers(n_episodes))
        if rng.random() < 0.55 or not reference[e]:
            entry = (float(rng.choice(choices)), float(rng.choice(choices)), step)
            heapq.heappush(reference[e], entry)
            kernels._heap_push(queues, e, *entry)
        else:
            _, expected_bound, expected_region = heapq.heappop(reference[e])
            got_bound, got_region = kernels._heap_pop(queues, e)
            assert got_region == expected_region
            assert got_bound == expected_bound or (np.isnan(got_bound) and np.isnan(expected_bound))
            popped += 1
        assert queues.size[e] == len(reference[e])
        # the whole array layout matches, not only the pops: NaN bounds compare as heapq compares them
        assert queues.region[e, : queues.size[e]].tolist() == [r for _, _, r in reference[e]]
    assert popped > 5_000


def random_split(n_actions: int, seed: int = 0) -> tuple[Nodes, Regions, Popped, np.ndarray, NoiseBlocks]:
    """:return: 40 nodes, a quarter of them with underflowing probabilities (every legal action has probability 0
    at some), 200 regions over 5 episodes (all the nodes newly evaluated), their logits, and fresh noise blocks"""
    rng = np.random.default_rng([n_actions, seed] if seed else n_actions)
    n_nodes, n_regions = 40, 200
    nodes, regions = Nodes.empty(n_nodes, n_actions), Regions.empty(n_regions, n_actions)
    legal = rng.random((n_nodes, n_actions)) < 0.7
    legal[np.arange(n_nodes), rng.integers(n_actions, size=n_nodes)] = True
    nodes.legal[:] = legal
    logits = rng.standard_normal((n_nodes, n_actions)) * 4
    logits[: n_nodes // 4] -= 800.0
    nodes.log_p[:] = -rng.exponential(3.0, n_nodes)
    region_node = rng.integers(n_nodes, size=n_regions)
    region_legal = legal[region_node] & (rng.random((n_regions, n_actions)) < 0.8)
    region_legal[np.arange(n_regions), rng.integers(n_actions, size=n_regions)] = True
    region_legal &= legal[region_node] | ~region_legal.any(axis=1, keepdims=True)
    region_legal[~region_legal.any(axis=1)] = legal[region_node[~region_legal.any(axis=1)]]
    regions.node[:], regions.legal[:], regions.G[:] = region_node, region_legal, rng.gumbel(size=n_regions)
    episodes = np.arange(n_regions) % 5
    ids = np.arange(n_regions)
    popped = Popped(episodes, ids, region_node, regions.G.copy(), np.arange(n_nodes), np.arange(5))
    noise = NoiseBlocks.empty(5)
    noise.refill(np.arange(5), list(np.random.default_rng(1).spawn(5)))
    return nodes, regions, popped, logits, noise


@pytest.mark.parametrize("n_actions", ACTION_COUNTS)
def test_split_and_log_softmax_equal_the_numpy_functions(n_actions: int) -> None:
    nodes, regions, popped, logits, noise = random_split(n_actions)
    split = kernels.split_regions(popped=popped, logits=logits, nodes=nodes, regions=regions, noise=noise)
    assert nodes.evaluated.all()
    expected_log_pi = masked_log_softmax(logits, nodes.legal)
    assert not np.isnan(nodes.log_pi).any()
    row_scale = 1.0 + np.abs(np.where(nodes.legal, logits, 0.0)).max(axis=1, keepdims=True)  # 1: log of a sum >= 1
    assert_within_ulps(nodes.log_pi, expected_log_pi, row_scale)
    used = np.zeros(5, np.int64)
    for r in range(len(popped.regions)):  # each region split by numpy, from the log-probabilities the kernel stored
        e, node, g = popped.episodes[r], popped.nodes[r], regions.G[r]
        u, exponential = noise.uniform[e, used[e]], noise.exponential[e, used[e]]
        used[e] += 1
        log_pi, log_p = nodes.log_pi[node], nodes.log_p[node]
        action, rest, g_rest = naive_split(log_pi, regions.legal[r], log_p, g, u, exponential)
        # the action is exact: an exp 1 ulp apart moves a cumulative sum across the uniform's threshold with a chance
        # of about 1e-16 per action
        assert split.actions[r] == action and np.array_equal(split.rest[r], rest)
        scale = 1.0 + abs(g) + abs(log_p) + abs(np.log(exponential)) + np.abs(log_pi[rest]).max(initial=0.0)
        assert_within_ulps(split.g_rest[r], g_rest, scale)
    assert np.array_equal(noise.used, used)


def test_masked_logsumexp_matches_numpy_on_rows_of_any_length() -> None:
    rng = np.random.default_rng(3)
    for n in ACTION_COUNTS + [1000]:
        values = rng.standard_normal((5, n)) * 30
        mask = rng.random((5, n)) < 0.6
        mask[0] = False  # no legal entry: -inf
        expected = masked_logsumexp(values, mask)
        got = [kernels._masked_logsumexp(values[i], mask[i], np.empty(n)) for i in range(5)]
        assert_within_ulps(np.array(got), expected, 1.0 + np.abs(np.where(mask, values, 0.0)).max(axis=1))


def test_noise_blocks_are_refilled_from_each_episodes_own_stream() -> None:
    streams = np.random.default_rng(5).spawn(2)
    copies = [np.random.default_rng(s.bit_generator.seed_seq) for s in streams]
    noise = NoiseBlocks.empty(2)
    assert (noise.used == NOISE_BLOCK).all()  # nothing drawn before the first expansion
    noise.refill(np.array([1]), streams)
    assert np.array_equal(noise.uniform[1], copies[1].random(NOISE_BLOCK))
    assert np.array_equal(noise.exponential[1], copies[1].standard_exponential(NOISE_BLOCK))
    assert noise.used.tolist() == [NOISE_BLOCK, 0]


def test_tree_columns_grow_by_doubling_and_keep_their_rows() -> None:
    tree = SearchTree(n_actions=3, capacity=16)
    roots = tree.add_roots(np.eye(3, dtype=bool), np.zeros(3), np.arange(3.0), ["a", "b", "c"], [None] * 3)
    regions = tree.add_regions(roots, np.eye(3, dtype=bool), np.array([0.5, 1.5, 2.5]))
    tree.reserve(nodes=14, regions=40)  # 17 nodes: the capacity doubles; 43 regions: more than double
    assert tree.nodes.legal.shape == (32, 3) and tree.regions.legal.shape == (43, 3)
    assert (tree.nodes.size, tree.regions.size) == (3, 3) and regions.tolist() == [0, 1, 2]
    assert tree.nodes.episode[:4].tolist() == [0, 1, 2, -1] and tree.nodes.upper[:4].tolist() == [0.0, 1.0, 2.0, np.inf]
    assert np.isnan(tree.nodes.log_pi[:4]).all() and not tree.nodes.evaluated.any()  # fresh rows keep their fill
    assert tree.regions.G[:4].tolist() == [0.5, 1.5, 2.5, -np.inf] and tree.regions.node[:3].tolist() == [0, 1, 2]


def dispatched_features() -> list[str]:
    """:return: the CPU features beyond its baseline that numpy was built to dispatch to and that this CPU has"""
    return [name for name in __cpu_dispatch__ if __cpu_features__.get(name)]


@pytest.mark.integration
def test_kernel_tests_pass_with_numpys_baseline_loops() -> None:
    """The tests above, in a process where numpy's dispatch is limited to its baseline: the other mode of its exp and
    log (the C library's instead of AVX-512 SIMD code, or the other way round)."""
    features = dispatched_features()
    if not features:
        pytest.skip("numpy dispatches nothing beyond its baseline on this CPU: this run is the baseline mode")
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": " ".join(features), "OMP_NUM_THREADS": "1"}
    check = "from tests.test_kernels import dispatched_features; assert not dispatched_features(), dispatched_features()"
    root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-c", check], cwd=root, env=env, check=True)
    tests = [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider", __file__, "-k", "not baseline"]
    run = subprocess.run(tests, cwd=root, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
