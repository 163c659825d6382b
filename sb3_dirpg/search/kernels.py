"""The search's per-iteration bookkeeping, compiled with numba: three calls per lockstep iteration.

Inside the search a small numpy call costs about 5 µs (``python -m sb3_dirpg.experiments.in_situ_cost``), and one
iteration of the numpy core made some 150-200 of them. These kernels do the same work in three calls:
:func:`pop_regions` (before the policy), :func:`split_regions` (before the simulator) and :func:`add_children` (after
it). Python keeps the simulator, the policy, the random streams and the rare events (a complete trajectory, the switch
to the ``a_dir`` search).

Every kernel follows numpy's operations in numpy's order, so that the search gives the floats that the numpy
functions of :mod:`sb3_dirpg.search.gumbel` give: sums add as numpy's pairwise sum does, and ``logaddexp(0, y)``
takes numpy's branches. The queues are binary heaps ordered as Python's ``heapq`` orders the tuples
``(-priority, bound on D, region id)``, with ``heapq``'s own sift steps.

Shapes: ``n`` episodes, ``k`` episodes stepping this iteration, ``A`` actions, ``C`` the capacity of a queue.
The queue of episode ``e`` is row ``e`` of ``heap_key`` (``-priority``), ``heap_bound`` and ``heap_region``, each of
shape (n, C), holding ``heap_size[e]`` entries.
"""

from __future__ import annotations

import numpy as np
from numba import njit

OPT, DIR, DONE = 0, 1, 2  # an episode's phase: sampling a_opt, searching a_dir, finished
GUMBEL, ASTAR = 0, 1  # the a_dir priority
LOG_2 = 0.6931471805599453
PAIRWISE_BLOCK = 128  # numpy's PW_BLOCKSIZE


@njit(cache=True)
def _block_sum(values: np.ndarray, start: int, n: int) -> float:
    """:param values: shape (m,)
    :param start: first index
    :param n: number of values, at most :data:`PAIRWISE_BLOCK`
    :return: their sum, added as numpy adds a block: in order below 8 values, else in 8 interleaved partial sums"""
    if n < 8:
        total = 0.0
        for i in range(start, start + n):
            total += values[i]
        return total
    r = values[start : start + 8].copy()
    i = 8
    while i < n - (n % 8):
        for j in range(8):
            r[j] += values[start + i + j]
        i += 8
    total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    while i < n:
        total += values[start + i]
        i += 1
    return total


@njit(cache=True)
def _pairwise_sum(values: np.ndarray, start: int, n: int) -> float:
    """:param values: shape (m,)
    :param start: first index
    :param n: number of values
    :return: their sum, added in the order of numpy's pairwise summation: longer runs are split in two halves (the
        first a multiple of 8 long) down to blocks. numpy recurses; this walks the same tree with an explicit stack
        (numba's cache fails on recursive functions)."""
    if n <= PAIRWISE_BLOCK:
        return _block_sum(values, start, n)
    frame_start, frame_n = np.empty(64, np.int64), np.empty(64, np.int64)
    frame_left, left_done = np.empty(64), np.zeros(64, np.bool_)
    top = 0
    frame_start[0], frame_n[0] = start, n
    while True:
        if frame_n[top] > PAIRWISE_BLOCK:  # descend into the first half
            half = frame_n[top] // 2
            half -= half % 8
            left_done[top] = False
            frame_start[top + 1], frame_n[top + 1] = frame_start[top], half
            top += 1
            continue
        value = _block_sum(values, frame_start[top], frame_n[top])
        while True:  # climb, adding each finished second half to its first half
            top -= 1
            if top < 0:
                return value
            if not left_done[top]:
                frame_left[top], left_done[top] = value, True
                half = frame_n[top] // 2
                half -= half % 8
                frame_start[top + 1], frame_n[top + 1] = frame_start[top] + half, frame_n[top] - half
                top += 1
                break
            value = frame_left[top] + value


@njit(cache=True)
def _masked_logsumexp(values: np.ndarray, mask: np.ndarray, terms: np.ndarray) -> float:
    """:param values: shape (A,)
    :param mask: bool, shape (A,)
    :param terms: scratch, shape (A,)
    :return: ``log(sum(exp(values[mask])))`` as :func:`~sb3_dirpg.search.gumbel.masked_logsumexp` computes it"""
    top = -np.inf
    for a in range(values.size):
        if mask[a] and values[a] > top:
            top = values[a]
    shift = top if np.isfinite(top) else 0.0
    for a in range(values.size):
        terms[a] = np.exp((values[a] if mask[a] else -np.inf) - shift)
    return np.log(_pairwise_sum(terms, 0, values.size)) + shift


@njit(cache=True)
def _logaddexp_zero(y: float) -> float:
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


# -- queues ------------------------------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _less(key: float, bound: float, region: int, other_key: float, other_bound: float, other_region: int) -> bool:
    """:return: whether ``(key, bound, region) < (other_key, other_bound, other_region)`` as Python orders tuples"""
    if key != other_key:
        return key < other_key
    if bound != other_bound:
        return bound < other_bound
    return region < other_region


@njit(cache=True, inline="always")
def _move(heap_key: np.ndarray, heap_bound: np.ndarray, heap_region: np.ndarray, e: int, source: int, target: int) -> None:
    """Copy entry ``source`` of episode ``e``'s queue to position ``target``."""
    heap_key[e, target], heap_bound[e, target], heap_region[e, target] = (
        heap_key[e, source], heap_bound[e, source], heap_region[e, source]
    )  # fmt: skip


@njit(cache=True, inline="always")
def _sift_down(
    heap_key: np.ndarray, heap_bound: np.ndarray, heap_region: np.ndarray, e: int, pos: int,
    key: float, bound: float, region: int,
) -> None:  # fmt: skip
    """``heapq``'s ``_siftdown``: place ``(key, bound, region)`` at ``pos`` of episode ``e``'s queue or above it, moving
    the larger parents down."""
    while pos > 0:
        parent = (pos - 1) >> 1
        if not _less(key, bound, region, heap_key[e, parent], heap_bound[e, parent], heap_region[e, parent]):
            break
        _move(heap_key, heap_bound, heap_region, e, parent, pos)
        pos = parent
    heap_key[e, pos], heap_bound[e, pos], heap_region[e, pos] = key, bound, region


@njit(cache=True)
def _heap_push(
    heap_key: np.ndarray, heap_bound: np.ndarray, heap_region: np.ndarray, heap_size: np.ndarray, e: int,
    key: float, bound: float, region: int,
) -> None:  # fmt: skip
    """``heapq.heappush`` of ``(key, bound, region)`` onto episode ``e``'s queue (capacity reserved by the caller)."""
    heap_size[e] += 1
    _sift_down(heap_key, heap_bound, heap_region, e, heap_size[e] - 1, key, bound, region)


@njit(cache=True)
def _heap_pop(
    heap_key: np.ndarray, heap_bound: np.ndarray, heap_region: np.ndarray, heap_size: np.ndarray, e: int
) -> tuple[float, int]:
    """``heapq.heappop`` from episode ``e``'s non-empty queue.

    :return: the bound and the region of the smallest entry
    """
    end = heap_size[e] - 1
    heap_size[e] = end
    key, bound, region = heap_key[e, end], heap_bound[e, end], heap_region[e, end]
    if end == 0:
        return bound, region
    top_bound, top_region = heap_bound[e, 0], heap_region[e, 0]
    pos, child = 0, 1
    while child < end:  # heapq's _siftup: move the smaller child up, down to a leaf ...
        right = child + 1
        if right < end and not _less(
            heap_key[e, child], heap_bound[e, child], heap_region[e, child],
            heap_key[e, right], heap_bound[e, right], heap_region[e, right],
        ):  # fmt: skip
            child = right
        _move(heap_key, heap_bound, heap_region, e, child, pos)
        pos = child
        child = 2 * pos + 1
    _sift_down(heap_key, heap_bound, heap_region, e, pos, key, bound, region)  # ... then place the last entry from there
    return top_bound, top_region


@njit(cache=True)
def _push_region(
    region: int, e: int, follow: bool, g: float, ret: float, rest_bound: float,
    epsilon: float, priority: int, alpha: float, prune: bool,
    phase: np.ndarray, d_best: np.ndarray, pruned: np.ndarray, follow_bound: np.ndarray, follow_region: np.ndarray,
    heap_key: np.ndarray, heap_bound: np.ndarray, heap_region: np.ndarray, heap_size: np.ndarray,
) -> None:  # fmt: skip
    """Queue one region of episode ``e`` (``TopDownSearch._push`` for one region), or prune it.

    :param g: the region's Gumbel
    :param ret: the discounted return of its node's prefix
    :param rest_bound: the bound on its node's return-to-go (``upper`` for ε > 0, ``lower`` for ε < 0)
    """
    bound = g + epsilon * (ret + rest_bound)
    if phase[e] == DIR and prune and bound <= d_best[e]:
        pruned[e] += 1
    elif follow:
        follow_bound[e], follow_region[e] = bound, region
    else:
        key = g
        if phase[e] != OPT and priority == ASTAR:
            key = g + epsilon * ret
            if alpha > 0:
                key = key + (epsilon * alpha) * rest_bound
        _heap_push(heap_key, heap_bound, heap_region, heap_size, e, -key, bound, region)


@njit(cache=True)
def push_regions(
    regions: np.ndarray, episodes: np.ndarray, region_node: np.ndarray, region_g: np.ndarray,
    node_ret: np.ndarray, node_rest_bound: np.ndarray, epsilon: float, priority: int, alpha: float, prune: bool,
    phase: np.ndarray, d_best: np.ndarray, pruned: np.ndarray, follow_bound: np.ndarray, follow_region: np.ndarray,
    heap_key: np.ndarray, heap_bound: np.ndarray, heap_region: np.ndarray, heap_size: np.ndarray,
) -> None:  # fmt: skip
    """Queue regions onto their episodes' heaps, in order, pruning those that cannot beat the best ``D`` so far.

    :param regions: region ids, shape (m,)
    :param episodes: the episode of each, shape (m,)
    :param node_rest_bound: the nodes' bounds on the return-to-go (``upper`` for ε > 0, ``lower`` for ε < 0)
    """
    for i in range(regions.size):
        node = region_node[regions[i]]
        _push_region(
            regions[i], episodes[i], False, region_g[regions[i]], node_ret[node], node_rest_bound[node],
            epsilon, priority, alpha, prune, phase, d_best, pruned, follow_bound, follow_region,
            heap_key, heap_bound, heap_region, heap_size,
        )  # fmt: skip


@njit(cache=True)
def requeue(
    e: int, region_node: np.ndarray, region_g: np.ndarray, node_ret: np.ndarray, node_rest_bound: np.ndarray,
    epsilon: float, priority: int, alpha: float, prune: bool,
    phase: np.ndarray, d_best: np.ndarray, pruned: np.ndarray, follow_bound: np.ndarray, follow_region: np.ndarray,
    heap_key: np.ndarray, heap_bound: np.ndarray, heap_region: np.ndarray, heap_size: np.ndarray,
) -> None:  # fmt: skip
    """Rebuild episode ``e``'s queue with the priority of its current phase: its regions, in the heap's array order,
    pushed again onto an empty heap (pruning those that cannot beat the best ``D``)."""
    regions = heap_region[e, : heap_size[e]].copy()
    heap_size[e] = 0
    push_regions(
        regions, np.full(regions.size, e), region_node, region_g, node_ret, node_rest_bound, epsilon, priority, alpha,
        prune, phase, d_best, pruned, follow_bound, follow_region, heap_key, heap_bound, heap_region, heap_size,
    )  # fmt: skip


# -- one lockstep iteration --------------------------------------------------------------------------------------


@njit(cache=True)
def pop_regions(
    budget: int, prune: bool, phase: np.ndarray, d_best: np.ndarray, pruned: np.ndarray, search_interactions: np.ndarray,
    follow_bound: np.ndarray, follow_region: np.ndarray,
    heap_key: np.ndarray, heap_bound: np.ndarray, heap_region: np.ndarray, heap_size: np.ndarray,
    region_node: np.ndarray, region_g: np.ndarray, node_evaluated: np.ndarray, noise_used: np.ndarray, noise_block: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """End the ``a_dir`` search of the episodes that have spent their budget, then pop the next region of every
    episode still searching: the followed child (depth-first), else the heap's best, dropping on the way (while
    searching ``a_dir``, with pruning) the regions that can no longer beat the best ``D``. An episode with none left
    is done.

    :param noise_used: the random numbers of each episode's block already used, shape (n,)
    :param noise_block: the size of a block
    :return: the episodes that popped a region, their regions, the regions' nodes and Gumbels, shape (k,) each, the
        nodes among them that the policy has not evaluated yet, sorted and unique, shape (m,), and the episodes among
        them whose block of random numbers is used up
    """
    n = phase.size
    episodes = np.empty(n, np.int64)
    regions = np.empty(n, np.int64)
    k = 0
    for e in range(n):
        if phase[e] == DIR and search_interactions[e] >= budget:
            phase[e] = DONE
        if phase[e] == DONE:
            continue
        pruning = prune and phase[e] == DIR
        region = -1
        if follow_region[e] >= 0:
            if not (pruning and follow_bound[e] <= d_best[e]):
                region = follow_region[e]
            else:
                pruned[e] += 1
            follow_region[e] = -1
        while region < 0 and heap_size[e] > 0:
            bound, popped = _heap_pop(heap_key, heap_bound, heap_region, heap_size, e)
            if pruning and bound <= d_best[e]:
                pruned[e] += 1
            else:
                region = popped
        if region < 0:
            phase[e] = DONE
            continue
        episodes[k], regions[k] = e, region
        k += 1
    nodes = region_node[regions[:k]]
    todo = np.unique(nodes[~node_evaluated[nodes]])
    refill = episodes[:k][noise_used[episodes[:k]] >= noise_block]
    return episodes[:k], regions[:k], nodes, region_g[regions[:k]], todo, refill


@njit(cache=True)
def split_regions(
    todo: np.ndarray, logits: np.ndarray, node_legal: np.ndarray, node_log_pi: np.ndarray, node_evaluated: np.ndarray,
    node_log_p: np.ndarray, region_node: np.ndarray, region_legal: np.ndarray, region_g: np.ndarray,
    episodes: np.ndarray, regions: np.ndarray, noise_uniform: np.ndarray, noise_exponential: np.ndarray,
    noise_used: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Store the policy's log-probabilities at the newly evaluated nodes, then split each region in two: one action
    sampled within its legal set in proportion to the policy (inverse CDF; the first legal action when they all have
    probability 0) and the rest, whose Gumbel is drawn truncated below the region's (``TopDownSearch._split``).

    :param todo: the newly evaluated nodes, shape (m,)
    :param logits: the policy's logits at them, float64, shape (m, A)
    :param episodes: the episode of each region, shape (k,)
    :param regions: region ids, shape (k,)
    :param noise_uniform: each episode's block of uniforms in [0, 1) (one per expansion: the action), shape (n, B)
    :param noise_exponential: each episode's block of standard exponentials (one per expansion: the rest's Gumbel),
        shape (n, B)
    :param noise_used: the numbers of each episode's block already used (one more after this call), shape (n,)
    :return: the actions, int64, shape (k,); the rests' legal actions, bool, shape (k, A); the rests' Gumbels, (k,)
    """
    n_actions = region_legal.shape[1]
    terms = np.empty(n_actions)
    for i in range(todo.size):
        node = todo[i]
        norm = _masked_logsumexp(logits[i], node_legal[node], terms)
        for a in range(n_actions):
            node_log_pi[node, a] = logits[i, a] - norm if node_legal[node, a] else -np.inf
        node_evaluated[node] = True
    k = regions.size
    actions = np.empty(k, np.int64)
    rest = np.empty((k, n_actions), np.bool_)
    g_rest = np.empty(k)
    for r in range(k):
        region, e = regions[r], episodes[r]
        node = region_node[region]
        uniform, exponential = noise_uniform[e, noise_used[e]], noise_exponential[e, noise_used[e]]
        noise_used[e] += 1
        total = 0.0
        first_legal = -1
        for a in range(n_actions):  # terms: the cumulative sum of the legal actions' probabilities
            legal = region_legal[region, a]
            if legal and first_legal < 0:
                first_legal = a
            total += np.exp(node_log_pi[node, a]) if legal else 0.0
            terms[a] = total
        action = max(first_legal, 0)
        if total > 0:
            threshold = uniform * total
            action = 0  # numpy's argmax of an all-false row
            for a in range(n_actions):
                if terms[a] > threshold:
                    action = a
                    break
        actions[r] = action
        for a in range(n_actions):
            rest[r, a] = region_legal[region, a] and a != action
        mu = node_log_p[node] + _masked_logsumexp(node_log_pi[node], rest[r], terms)
        g = mu - np.log(exponential)
        upper = region_g[region]
        g_rest[r] = -np.inf if g == -np.inf else upper - _logaddexp_zero(upper - g)
    return actions, rest, g_rest


@njit(cache=True)
def add_children(
    episodes: np.ndarray, parents: np.ndarray, actions: np.ndarray, g: np.ndarray, rest: np.ndarray, g_rest: np.ndarray,
    rewards: np.ndarray, terminal: np.ndarray, masks: np.ndarray, lower: np.ndarray, upper: np.ndarray,
    success: np.ndarray, gamma: float, horizon: int, epsilon: float, priority: int, alpha: float, prune: bool,
    depth_first: bool, node_start: int, node_episode: np.ndarray, node_parent: np.ndarray, node_action: np.ndarray,
    node_depth: np.ndarray, node_log_p: np.ndarray, node_reward: np.ndarray, node_ret: np.ndarray,
    node_lower: np.ndarray, node_upper: np.ndarray, node_terminal: np.ndarray, node_success: np.ndarray,
    node_legal: np.ndarray, node_log_pi: np.ndarray, region_start: int, region_node: np.ndarray,
    region_legal: np.ndarray, region_g: np.ndarray, phase: np.ndarray, d_best: np.ndarray, pruned: np.ndarray,
    search_interactions: np.ndarray, length_opt: np.ndarray, follow_bound: np.ndarray, follow_region: np.ndarray,
    heap_key: np.ndarray, heap_bound: np.ndarray, heap_region: np.ndarray, heap_size: np.ndarray,
) -> tuple[int, int, int]:  # fmt: skip
    """Add the states the simulator reached as the children of the stepped nodes, count the interactions, and queue
    the non-empty rests, then one region per non-terminal child (depth-first: as its episode's next region).

    The children take rows ``node_start ..`` of the node columns and the new regions rows ``region_start ..`` of the
    region columns (reserved by the caller: ``k`` nodes, ``2k`` regions, 2 entries per queue).

    :param episodes: the episodes that stepped, shape (k,)
    :param parents: the nodes they stepped from, shape (k,)
    :param actions: the actions taken, shape (k,)
    :param g: the Gumbels of the regions expanded (the children's regions inherit them), shape (k,)
    :param rest: the rests' legal actions, bool, shape (k, A)
    :param g_rest: the rests' Gumbels, shape (k,)
    :param rewards: the step rewards, shape (k,)
    :param terminal: whether each child ends its trajectory (the horizon is applied here), bool, shape (k,)
    :param masks: the children's legal actions, bool, shape (k, A)
    :param lower: the simulator's lower bounds on the children's return-to-go (``-inf`` when unknown), shape (k,)
    :param upper: the simulator's upper bounds on it (``inf`` when unknown), shape (k,)
    :param success: whether each step ended the episode in success, bool, shape (k,)
    :param horizon: the maximum trajectory length, or -1 for none
    :return: the number of regions added, the number of terminal children, and the position of a non-terminal child
        without legal actions (-1 if none; nothing is added then)
    """
    k = episodes.size
    n_actions = masks.shape[1]
    for i in range(k):
        if not (terminal[i] or (horizon >= 0 and node_depth[parents[i]] + 1 >= horizon) or masks[i].any()):
            return 0, 0, i
    for i in range(k):
        child, parent = node_start + i, parents[i]
        depth = node_depth[parent] + 1
        ends = terminal[i] or (horizon >= 0 and depth >= horizon)
        discount_parent = 1.0 if gamma == 1.0 else gamma ** float(node_depth[parent])
        discount = 1.0 if gamma == 1.0 else gamma ** float(depth)
        node_episode[child], node_parent[child], node_action[child], node_depth[child] = episodes[i], parent, actions[i], depth
        node_log_p[child] = node_log_p[parent] + node_log_pi[parent, actions[i]]
        node_reward[child] = rewards[i]
        node_ret[child] = node_ret[parent] + (rewards[i] if gamma == 1.0 else discount_parent * rewards[i])
        node_lower[child] = 0.0 if ends else (lower[i] if gamma == 1.0 else discount * lower[i])
        node_upper[child] = 0.0 if ends else (upper[i] if gamma == 1.0 else discount * upper[i])
        node_terminal[child], node_success[child] = ends, success[i]
        for a in range(n_actions):
            node_legal[child, a] = masks[i, a]
        if phase[episodes[i]] == DIR:
            search_interactions[episodes[i]] += 1
        else:
            length_opt[episodes[i]] += 1
    node_rest_bound = node_upper if epsilon > 0 else node_lower
    region = region_start
    for i in range(k):  # the rests, then the children's regions, each in batch order
        if not rest[i].any():
            continue
        region_node[region], region_g[region] = parents[i], g_rest[i]
        for a in range(n_actions):
            region_legal[region, a] = rest[i, a]
        _push_region(
            region, episodes[i], False, g_rest[i], node_ret[parents[i]], node_rest_bound[parents[i]], epsilon, priority,
            alpha, prune, phase, d_best, pruned, follow_bound, follow_region, heap_key, heap_bound, heap_region, heap_size,
        )  # fmt: skip
        region += 1
    ends = 0
    for i in range(k):
        child = node_start + i
        if node_terminal[child]:
            ends += 1
            continue
        region_node[region], region_g[region] = child, g[i]
        for a in range(n_actions):
            region_legal[region, a] = masks[i, a]
        _push_region(
            region, episodes[i], depth_first, g[i], node_ret[child], node_rest_bound[child], epsilon, priority, alpha,
            prune, phase, d_best, pruned, follow_bound, follow_region, heap_key, heap_bound, heap_region, heap_size,
        )  # fmt: skip
        region += 1
    return region - region_start, ends, -1
