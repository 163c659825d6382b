"""The search's per-iteration bookkeeping, compiled with numba: three calls per lockstep iteration.

Inside the search a small numpy call costs about 5 µs (``python -m benchmarks.in_situ_cost`` in a source checkout), and one
iteration of the numpy core made some 150-200 of them. These kernels do the same work in three calls:
:func:`pop_regions` (before the policy), :func:`split_regions` (before the simulator) and :func:`add_children` (after
it). Python keeps the simulator, the policy, the random streams and the rare events (a complete trajectory, the switch
to the ``a_dir`` search).

The kernels take and give records, named tuples of arrays and scalars: the tree's
:class:`~sb3_dirpg.search.tree.Nodes` and :class:`~sb3_dirpg.search.tree.Regions`, the search's
:class:`~sb3_dirpg.search.state.Progress`, :class:`~sb3_dirpg.search.state.Queues` and
:class:`~sb3_dirpg.search.state.NoiseBlocks`, the settings :class:`~sb3_dirpg.search.config.Params`, and the
iteration's :class:`~sb3_dirpg.search.state.Popped`, :class:`~sb3_dirpg.search.state.Split` and
:class:`~sb3_dirpg.search.state.Reached`. Each kernel is a Python function that takes the records by keyword and
hands them to its compiled twin (``pop_regions_compiled`` for :func:`pop_regions`) as plain tuples, which the twin names again
on entry (``Nodes(*nodes)``, free once compiled). numba's dispatcher types a plain tuple of arrays in C but a named
tuple field by field in Python, and boxes a returned named tuple slowly: passing and returning the named tuples
themselves made a lockstep iteration of the free-simulator benchmark take twice as long.

Every kernel follows numpy's operations in numpy's order, as the numpy functions of :mod:`sb3_dirpg.search.gumbel`
do: sums add as numpy's pairwise sum does, and ``logaddexp(0, y)`` takes numpy's branches. ``exp``, ``log`` and
``log1p`` are the C library's; numpy gives the same floats where it calls them too, and may differ in the last bit
where it picks its own SIMD loops at run time (AVX-512). The queues are binary heaps ordered as Python's ``heapq``
orders the tuples ``(-priority, bound on D, region id)``, with ``heapq``'s own sift steps.

Shapes: ``n`` episodes, ``k`` episodes stepping this iteration, ``A`` actions, ``C`` the capacity of a queue.
The queue of episode ``e`` is row ``e`` of the queues' ``key`` (``-priority``), ``bound`` and ``region``, each of
shape (n, C), holding ``size[e]`` entries.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sb3_dirpg.search.config import ASTAR, GUMBEL, Params
from sb3_dirpg.search.state import DIR, DONE, OPT, NoiseBlocks, Popped, Progress, Queues, Reached, Split
from sb3_dirpg.search.tree import Nodes, Regions

__all__ = [
    "ASTAR", "DIR", "DONE", "GUMBEL", "OPT", "add_children", "add_children_compiled", "pop_regions", "pop_regions_compiled",
    "push_regions", "requeue", "split_regions", "split_regions_compiled",
]  # fmt: skip

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
def _move(queues: Queues, e: int, source: int, target: int) -> None:
    """Copy entry ``source`` of episode ``e``'s queue to position ``target``."""
    key, bound, region = queues.key, queues.bound, queues.region
    key[e, target], bound[e, target], region[e, target] = key[e, source], bound[e, source], region[e, source]


@njit(cache=True, inline="always")
def _sift_down(queues: Queues, e: int, pos: int, key: float, bound: float, region: int) -> None:
    """``heapq``'s ``_siftdown``: place ``(key, bound, region)`` at ``pos`` of episode ``e``'s queue or above it, moving
    the larger parents down."""
    while pos > 0:
        parent = (pos - 1) >> 1
        if not _less(key, bound, region, queues.key[e, parent], queues.bound[e, parent], queues.region[e, parent]):
            break
        _move(queues, e, parent, pos)
        pos = parent
    queues.key[e, pos], queues.bound[e, pos], queues.region[e, pos] = key, bound, region


@njit(cache=True)
def _heap_push(queues: Queues, e: int, key: float, bound: float, region: int) -> None:
    """``heapq.heappush`` of ``(key, bound, region)`` onto episode ``e``'s queue (capacity reserved by the caller)."""
    queues.size[e] += 1
    _sift_down(queues, e, queues.size[e] - 1, key, bound, region)


@njit(cache=True)
def _heap_pop(queues: Queues, e: int) -> tuple[float, int]:
    """``heapq.heappop`` from episode ``e``'s non-empty queue.

    :return: the bound and the region of the smallest entry
    """
    keys, bounds, regions = queues.key, queues.bound, queues.region
    end = queues.size[e] - 1
    queues.size[e] = end
    key, bound, region = keys[e, end], bounds[e, end], regions[e, end]
    if end == 0:
        return bound, region
    top_bound, top_region = bounds[e, 0], regions[e, 0]
    pos, child = 0, 1
    while child < end:  # heapq's _siftup: move the smaller child up, down to a leaf ...
        right = child + 1
        if right < end and not _less(
            keys[e, child], bounds[e, child], regions[e, child], keys[e, right], bounds[e, right], regions[e, right]
        ):
            child = right
        _move(queues, e, child, pos)
        pos = child
        child = 2 * pos + 1
    _sift_down(queues, e, pos, key, bound, region)  # ... then place the last entry from there
    return top_bound, top_region


@njit(cache=True)
def _push_region(
    region: int, e: int, follow: bool, params: Params, nodes: Nodes, regions: Regions, progress: Progress, queues: Queues
) -> None:
    """Queue one region of episode ``e`` (``TopDownSearch._push`` for one region), or prune it; with ``follow``, make
    it the episode's next region instead (depth-first).

    The bound on the return-to-go of the region's node is ``upper`` for ε > 0 and ``lower`` for ε < 0. An infinite one
    prunes nothing and adds nothing to the A* priority (the priority is then ``G + ε·L``, as with α = 0).
    """
    node, g, epsilon = regions.node[region], regions.G[region], params.epsilon
    ret = nodes.ret[node]
    rest_bound = nodes.upper[node] if epsilon > 0 else nodes.lower[node]
    bound = g + epsilon * (ret + rest_bound)
    phase = progress.phase[e]
    if phase == DIR and params.prune and bound <= progress.d_best[e]:
        progress.pruned[e] += 1
    elif follow:
        queues.follow_bound[e], queues.follow_region[e] = bound, region
    else:
        key = g
        if phase != OPT and params.priority == ASTAR:
            key = g + epsilon * ret
            # an infinite bound (no bound known, or a heuristic's ±inf) guides nothing: it adds nothing to the priority,
            # which would otherwise be infinite for every such region and lose its order (issue 46)
            if params.alpha > 0 and np.isfinite(rest_bound):
                key = key + (epsilon * params.alpha) * rest_bound
        _heap_push(queues, e, -key, bound, region)


def push_regions(
    ids: np.ndarray, episodes: np.ndarray, *, params: Params, nodes: Nodes, regions: Regions, progress: Progress,
    queues: Queues,
) -> None:  # fmt: skip
    """Queue regions onto their episodes' heaps, in order, pruning those that cannot beat the best ``D`` so far.

    :param ids: region ids, shape (m,)
    :param episodes: the episode of each, shape (m,)
    """
    _push_regions(ids, episodes, tuple(params), tuple(nodes), tuple(regions), tuple(progress), tuple(queues))


@njit(cache=True)
def _push_regions(
    ids: np.ndarray, episodes: np.ndarray, params: tuple, nodes: tuple, regions: tuple, progress: tuple, queues: tuple
) -> None:
    """:func:`push_regions`, compiled."""
    params, nodes, regions = Params(*params), Nodes(*nodes), Regions(*regions)
    progress, queues = Progress(*progress), Queues(*queues)
    for i in range(ids.size):
        _push_region(ids[i], episodes[i], False, params, nodes, regions, progress, queues)


def requeue(e: int, *, params: Params, nodes: Nodes, regions: Regions, progress: Progress, queues: Queues) -> None:
    """Rebuild episode ``e``'s queue with the priority of its current phase: its regions, in the heap's array order,
    pushed again onto an empty heap (pruning those that cannot beat the best ``D``).

    :param e: the episode
    """
    _requeue(e, tuple(params), tuple(nodes), tuple(regions), tuple(progress), tuple(queues))


@njit(cache=True)
def _requeue(e: int, params: tuple, nodes: tuple, regions: tuple, progress: tuple, queues: tuple) -> None:
    """:func:`requeue`, compiled."""
    queues = Queues(*queues)
    ids = queues.region[e, : queues.size[e]].copy()
    queues.size[e] = 0
    _push_regions(ids, np.full(ids.size, e), params, nodes, regions, progress, queues)


# -- one lockstep iteration --------------------------------------------------------------------------------------


def pop_regions(
    *, params: Params, nodes: Nodes, regions: Regions, progress: Progress, queues: Queues, noise: NoiseBlocks
) -> Popped:
    """End the ``a_dir`` search of the episodes that have spent their budget, then pop the next region of every
    episode still searching: the followed child (depth-first), else the heap's best, dropping on the way (while
    searching ``a_dir``, with pruning) the regions that can no longer beat the best ``D``. An episode with none left
    is done.

    :return: the popped regions, with the nodes that the policy has not evaluated yet and the episodes whose block of
        random numbers is used up
    """
    records = (tuple(params), tuple(nodes), tuple(regions), tuple(progress), tuple(queues), tuple(noise))
    return Popped(*pop_regions_compiled(*records))


@njit(cache=True)
def pop_regions_compiled(
    params: tuple, nodes: tuple, regions: tuple, progress: tuple, queues: tuple, noise: tuple
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`pop_regions`, compiled.

    :return: the fields of :class:`~sb3_dirpg.search.state.Popped`
    """
    params, nodes, regions = Params(*params), Nodes(*nodes), Regions(*regions)
    progress, queues, noise = Progress(*progress), Queues(*queues), NoiseBlocks(*noise)
    phase, d_best, pruned = progress.phase, progress.d_best, progress.pruned
    n = phase.size
    episodes = np.empty(n, np.int64)
    picked = np.empty(n, np.int64)
    k = 0
    for e in range(n):
        if phase[e] == DIR and progress.search_interactions[e] >= progress.budget[e]:
            phase[e] = DONE
        if phase[e] == DONE:
            continue
        pruning = params.prune and phase[e] == DIR
        region = -1
        if queues.follow_region[e] >= 0:
            if not (pruning and queues.follow_bound[e] <= d_best[e]):
                region = queues.follow_region[e]
            else:
                pruned[e] += 1
            queues.follow_region[e] = -1
        while region < 0 and queues.size[e] > 0:
            bound, candidate = _heap_pop(queues, e)
            if pruning and bound <= d_best[e]:
                pruned[e] += 1
            else:
                region = candidate
        if region < 0:
            phase[e] = DONE
            continue
        episodes[k], picked[k] = e, region
        k += 1
    at = regions.node[picked[:k]]
    todo = np.unique(at[~nodes.evaluated[at]])
    refill = episodes[:k][noise.used[episodes[:k]] >= noise.uniform.shape[1]]
    return episodes[:k], picked[:k], at, regions.G[picked[:k]], todo, refill


def split_regions(*, popped: Popped, logits: np.ndarray, nodes: Nodes, regions: Regions, noise: NoiseBlocks) -> Split:
    """Store the policy's log-probabilities at the newly evaluated nodes (``popped.todo``), then split each popped
    region in two: one action sampled within its legal set in proportion to the policy (inverse CDF; the first legal
    action when they all have probability 0) and the rest, whose Gumbel is drawn truncated below the region's
    (``TopDownSearch._split``). Each split uses the next uniform (the action) and the next exponential (the rest's
    Gumbel) of its episode's block of random numbers.

    :param popped: the popped regions
    :param logits: the policy's logits at ``popped.todo``, float64, shape (m, A)
    :return: the actions, the rests' legal actions and the rests' Gumbels
    """
    return Split(*split_regions_compiled(tuple(popped), logits, tuple(nodes), tuple(regions), tuple(noise)))


@njit(cache=True)
def split_regions_compiled(
    popped: tuple, logits: np.ndarray, nodes: tuple, regions: tuple, noise: tuple
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`split_regions`, compiled.

    :return: the fields of :class:`~sb3_dirpg.search.state.Split`
    """
    popped, nodes, regions, noise = Popped(*popped), Nodes(*nodes), Regions(*regions), NoiseBlocks(*noise)
    n_actions = regions.legal.shape[1]
    terms = np.empty(n_actions)
    for i in range(popped.todo.size):
        node = popped.todo[i]
        norm = _masked_logsumexp(logits[i], nodes.legal[node], terms)
        for a in range(n_actions):
            nodes.log_pi[node, a] = logits[i, a] - norm if nodes.legal[node, a] else -np.inf
        nodes.evaluated[node] = True
    k = popped.regions.size
    actions = np.empty(k, np.int64)
    rest = np.empty((k, n_actions), np.bool_)
    g_rest = np.empty(k)
    for r in range(k):
        region, e = popped.regions[r], popped.episodes[r]
        node = regions.node[region]
        uniform, exponential = noise.uniform[e, noise.used[e]], noise.exponential[e, noise.used[e]]
        noise.used[e] += 1
        total = 0.0
        first_legal = -1
        for a in range(n_actions):  # terms: the cumulative sum of the legal actions' probabilities
            legal = regions.legal[region, a]
            if legal and first_legal < 0:
                first_legal = a
            total += np.exp(nodes.log_pi[node, a]) if legal else 0.0
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
            rest[r, a] = regions.legal[region, a] and a != action
        mu = nodes.log_p[node] + _masked_logsumexp(nodes.log_pi[node], rest[r], terms)
        g = mu - np.log(exponential)
        upper = regions.G[region]
        g_rest[r] = -np.inf if g == -np.inf else upper - _logaddexp_zero(upper - g)
    return actions, rest, g_rest


def add_children(
    *, popped: Popped, split: Split, reached: Reached, params: Params, nodes: Nodes, regions: Regions,
    progress: Progress, queues: Queues,
) -> tuple[int, int]:  # fmt: skip
    """Add the states the simulator reached as the children of the popped nodes, count the interactions, and queue
    the non-empty rests, then one region per non-terminal child (depth-first: as its episode's next region).

    The children take the next ``k`` rows of the node columns and the new regions the next rows of the region columns
    (room reserved by the caller: ``k`` nodes, ``2k`` regions, 2 entries per queue). A child is terminal when
    ``reached.terminal`` says so or at the horizon.

    :return: the number of terminal children, and the position of a non-terminal child without legal actions (-1 if
        none; nothing is added then)
    """
    return add_children_compiled(
        tuple(popped), tuple(split), tuple(reached), tuple(params), tuple(nodes), tuple(regions), tuple(progress),
        tuple(queues),
    )  # fmt: skip


@njit(cache=True)
def add_children_compiled(
    popped: tuple, split: tuple, reached: tuple, params: tuple, nodes: tuple, regions: tuple, progress: tuple, queues: tuple
) -> tuple[int, int]:
    """:func:`add_children`, compiled."""
    popped, split, reached, params = Popped(*popped), Split(*split), Reached(*reached), Params(*params)
    nodes, regions, progress, queues = Nodes(*nodes), Regions(*regions), Progress(*progress), Queues(*queues)
    episodes, parents, actions = popped.episodes, popped.nodes, split.actions
    k = episodes.size
    n_actions = reached.masks.shape[1]
    horizon, gamma = params.horizon, params.gamma
    for i in range(k):
        if not (reached.terminal[i] or (horizon >= 0 and nodes.depth[parents[i]] + 1 >= horizon) or reached.masks[i].any()):
            return 0, i
    start = nodes.count[0]
    for i in range(k):
        child, parent = start + i, parents[i]
        depth = nodes.depth[parent] + 1
        last = reached.terminal[i] or (horizon >= 0 and depth >= horizon)
        discount_parent = 1.0 if gamma == 1.0 else gamma ** float(nodes.depth[parent])
        discount = 1.0 if gamma == 1.0 else gamma ** float(depth)
        reward, lower, upper = reached.rewards[i], reached.lower[i], reached.upper[i]
        nodes.episode[child], nodes.parent[child], nodes.depth[child] = episodes[i], parent, depth
        nodes.action[child] = actions[i]
        nodes.log_p[child] = nodes.log_p[parent] + nodes.log_pi[parent, actions[i]]
        nodes.reward[child] = reward
        nodes.ret[child] = nodes.ret[parent] + (reward if gamma == 1.0 else discount_parent * reward)
        nodes.lower[child] = 0.0 if last else (lower if gamma == 1.0 else discount * lower)
        nodes.upper[child] = 0.0 if last else (upper if gamma == 1.0 else discount * upper)
        nodes.terminal[child], nodes.success[child] = last, reached.success[i]
        for a in range(n_actions):
            nodes.legal[child, a] = reached.masks[i, a]
        if progress.phase[episodes[i]] == DIR:
            progress.search_interactions[episodes[i]] += 1
        else:
            progress.length_opt[episodes[i]] += 1
    nodes.count[0] = start + k
    for i in range(k):  # the rests, then the children's regions, each in batch order
        if not split.rest[i].any():
            continue
        region = regions.count[0]
        regions.count[0] = region + 1
        regions.node[region], regions.G[region] = parents[i], split.g_rest[i]
        for a in range(n_actions):
            regions.legal[region, a] = split.rest[i, a]
        _push_region(region, episodes[i], False, params, nodes, regions, progress, queues)
    n_ends = 0
    for i in range(k):
        child = start + i
        if nodes.terminal[child]:
            n_ends += 1
            continue
        region = regions.count[0]
        regions.count[0] = region + 1
        regions.node[region], regions.G[region] = child, popped.g[i]
        for a in range(n_actions):
            regions.legal[region, a] = reached.masks[i, a]
        _push_region(region, episodes[i], params.depth_first, params, nodes, regions, progress, queues)
    return n_ends, -1
