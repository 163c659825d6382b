"""The compiled kernels give what their Python and numpy counterparts give, bit for bit."""

from __future__ import annotations

import heapq

import numpy as np
import pytest

from sb3_dirpg.search import kernels
from sb3_dirpg.search.gumbel import masked_log_softmax, masked_logsumexp
from sb3_dirpg.search.state import NOISE_BLOCK, NoiseBlocks
from tests.reference.naive_search import naive_split

ACTION_COUNTS = [1, 2, 3, 7, 8, 9, 16, 17, 130, 300]  # numpy sums below 8 in order, then by blocks, then recursively


@pytest.mark.parametrize("n", list(range(1, 40)) + [127, 128, 129, 200, 256, 1000, 4099])
def test_pairwise_sum_adds_in_numpys_order(n: int) -> None:
    rng = np.random.default_rng(n)
    for _ in range(20):
        values = rng.standard_normal(n) * 10.0 ** rng.uniform(-8, 8, n)  # magnitudes far apart: order shows
        assert kernels._pairwise_sum(values, 0, n) == values.sum()


def test_heaps_pop_in_heapq_order_with_ties_infinities_and_nan() -> None:
    rng = np.random.default_rng(0)
    n_episodes, capacity = 3, 4000
    key, bound = np.empty((n_episodes, capacity)), np.empty((n_episodes, capacity))
    region, size = np.empty((n_episodes, capacity), np.int64), np.zeros(n_episodes, np.int64)
    reference: list[list[tuple[float, float, int]]] = [[] for _ in range(n_episodes)]
    choices = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 0.5])  # many exact ties
    popped = 0
    for step in range(20_000):
        e = int(rng.integers(n_episodes))
        if rng.random() < 0.55 or not reference[e]:
            entry = (float(rng.choice(choices)), float(rng.choice(choices)), step)
            heapq.heappush(reference[e], entry)
            kernels._heap_push(key, bound, region, size, e, *entry)
        else:
            _, expected_bound, expected_region = heapq.heappop(reference[e])
            got_bound, got_region = kernels._heap_pop(key, bound, region, size, e)
            assert got_region == expected_region
            assert got_bound == expected_bound or (np.isnan(got_bound) and np.isnan(expected_bound))
            popped += 1
        assert size[e] == len(reference[e])
        # the whole array layout matches, not only the pops: NaN bounds compare as heapq compares them
        assert region[e, : size[e]].tolist() == [r for _, _, r in reference[e]]
    assert popped > 5_000


@pytest.mark.parametrize("n_actions", ACTION_COUNTS)
def test_split_and_log_softmax_equal_the_numpy_functions(n_actions: int) -> None:
    rng = np.random.default_rng(n_actions)
    n_nodes, n_regions = 40, 200
    node_legal = rng.random((n_nodes, n_actions)) < 0.7
    node_legal[np.arange(n_nodes), rng.integers(n_actions, size=n_nodes)] = True
    logits = rng.standard_normal((n_nodes, n_actions)) * 4
    logits[: n_nodes // 4] -= 800.0  # underflowing probabilities: every legal action has probability 0 at some nodes
    node_log_pi, evaluated = np.full((n_nodes, n_actions), np.nan), np.zeros(n_nodes, bool)
    node_log_p = -rng.exponential(3.0, n_nodes)
    region_node = rng.integers(n_nodes, size=n_regions)
    region_legal = node_legal[region_node] & (rng.random((n_regions, n_actions)) < 0.8)
    region_legal[np.arange(n_regions), rng.integers(n_actions, size=n_regions)] = True
    region_legal &= node_legal[region_node] | ~region_legal.any(axis=1, keepdims=True)
    region_legal[~region_legal.any(axis=1)] = node_legal[region_node[~region_legal.any(axis=1)]]
    region_g = rng.gumbel(size=n_regions)
    episodes = np.arange(n_regions) % 5
    noise = NoiseBlocks.empty(5)
    noise.refill(np.arange(5), list(np.random.default_rng(1).spawn(5)))
    regions = np.arange(n_regions)
    todo = np.arange(n_nodes)
    actions, rest, g_rest = kernels.split_regions(
        todo, logits, node_legal, node_log_pi, evaluated, node_log_p, region_node, region_legal, region_g, episodes,
        regions, noise.uniform, noise.exponential, noise.used,
    )  # fmt: skip
    expected_log_pi = masked_log_softmax(logits, node_legal)
    assert np.array_equal(node_log_pi, expected_log_pi) and evaluated.all()
    assert np.array_equal(node_log_pi[node_legal], expected_log_pi[node_legal])  # -inf elsewhere, no NaN
    used = np.zeros(5, np.int64)
    for r in range(n_regions):
        e = episodes[r]
        u, exponential = noise.uniform[e, used[e]], noise.exponential[e, used[e]]
        used[e] += 1
        node = region_node[r]
        log_pi, log_p = expected_log_pi[node], node_log_p[node]
        action, rest_r, g_r = naive_split(log_pi, region_legal[r], log_p, region_g[r], u, exponential)
        assert actions[r] == action and np.array_equal(rest[r], rest_r)
        assert g_rest[r] == g_r or (np.isneginf(g_r) and np.isneginf(g_rest[r]))
    assert np.array_equal(noise.used, used)


def test_masked_logsumexp_matches_numpy_on_rows_of_any_length() -> None:
    rng = np.random.default_rng(3)
    for n in ACTION_COUNTS + [1000]:
        values = rng.standard_normal((5, n)) * 30
        mask = rng.random((5, n)) < 0.6
        mask[0] = False  # no legal entry: -inf
        expected = masked_logsumexp(values, mask)
        got = [kernels._masked_logsumexp(values[i], mask[i], np.empty(n)) for i in range(5)]
        assert np.array_equal(np.array(got), expected)


def test_noise_blocks_are_refilled_from_each_episodes_own_stream() -> None:
    streams = np.random.default_rng(5).spawn(2)
    copies = [np.random.default_rng(s.bit_generator.seed_seq) for s in streams]
    noise = NoiseBlocks.empty(2)
    assert (noise.used == NOISE_BLOCK).all()  # nothing drawn before the first expansion
    noise.refill(np.array([1]), streams)
    assert np.array_equal(noise.uniform[1], copies[1].random(NOISE_BLOCK))
    assert np.array_equal(noise.exponential[1], copies[1].standard_exponential(NOISE_BLOCK))
    assert noise.used.tolist() == [NOISE_BLOCK, 0]
