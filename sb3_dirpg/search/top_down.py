"""Lazy top-down A* sampling of trajectories (Algorithms 1 and 2 of the DirPG paper), in lockstep over a batch.

Every search of the batch pops one region per iteration; the simulator steps all popped regions together and the
policy is evaluated once per iteration on every popped node that has not been evaluated yet.
"""

from __future__ import annotations

import contextlib
import gc
import heapq
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from sb3_dirpg.search.gumbel import masked_log_softmax, masked_logsumexp, truncate_gumbel
from sb3_dirpg.search.protocols import BatchSimulator, PolicyFunction, Transitions
from sb3_dirpg.search.state import Phase, SearchState
from sb3_dirpg.search.tree import SearchTree

PRIORITIES = ("gumbel", "astar")
BOUND_TOLERANCE = 1e-6  # relative (to max(1, |return-to-go|)) slack before a bound counts as violated


@dataclass(frozen=True)
class SearchConfig:
    """Settings of one DirPG search.

    :param epsilon: the ε of the direct objective ``D = G + ε·R`` (non-zero; negative is risk averse)
    :param budget: environment interactions allowed for the ``a_dir`` search, after the ``T`` spent on ``a_opt``
    :param priority: ``"gumbel"`` (priority ``G``) or ``"astar"`` (priority ``G + ε·(L + α·U)``)
    :param alpha: weight of the heuristic bound in the ``"astar"`` priority, in [0, 1]
    :param prune: drop regions whose bound on ``D`` cannot beat the best ``D`` found so far
    :param early_stop: stop at the first trajectory with ``D > D(a_opt)``
    :param gamma: discount of the return
    :param horizon: maximum trajectory length (a trajectory is cut there), or None to rely on the simulator
    :param max_trajectories: stop a search after this many complete trajectories (Gumbel top-K), or None
    :param record_trajectories: keep every complete trajectory (leaf, G, return, D) in the result
    :param depth_first: once a region is popped, follow its sampled child chain to the end of a trajectory before
        popping another region (the authors' depth-first option): every pop from the queue completes a trajectory.
        It changes nothing before ``a_opt`` is found (the child of the best region is the best region).
    :param stop_on_success: end an episode's search as soon as a trajectory ends in success (the simulator's
        ``success`` flag, SB3's ``info["is_success"]``; the authors' "break on goal"). When ``a_opt`` succeeds the
        search ends at once and the episode adds nothing to the update; the budget left is neither spent nor counted.
    """

    epsilon: float = 1.0
    budget: int = 100
    priority: str = "gumbel"
    alpha: float = 0.0
    prune: bool = True
    early_stop: bool = True
    gamma: float = 1.0
    horizon: int | None = None
    max_trajectories: int | None = None
    record_trajectories: bool = False
    depth_first: bool = False
    stop_on_success: bool = False

    def __post_init__(self) -> None:
        if not np.isfinite(self.epsilon) or self.epsilon == 0:
            raise ValueError(f"epsilon must be a finite non-zero number (negative is risk averse), got {self.epsilon!r}")
        if int(self.budget) != self.budget or self.budget < 0:
            raise ValueError(f"search budget must be a non-negative integer number of interactions, got {self.budget!r}")
        if self.priority not in PRIORITIES:
            raise ValueError(f"priority must be one of {PRIORITIES}, got {self.priority!r}")
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1] (1 is A*, 0 ignores the heuristic), got {self.alpha!r}")
        if not 0.0 < self.gamma <= 1.0:
            raise ValueError(f"gamma must lie in (0, 1], got {self.gamma!r}")
        if self.horizon is not None and self.horizon < 1:
            raise ValueError(f"horizon must be a positive number of steps or None, got {self.horizon!r}")
        if self.max_trajectories is not None and self.max_trajectories < 1:
            raise ValueError(f"max_trajectories must be positive or None, got {self.max_trajectories!r}")


@dataclass
class CompletedTrajectory:
    """A trajectory yielded by the search.

    :param leaf: id of its last node in the tree
    :param g: its Gumbel ``G(a) = log P(a) + Γ(a)``
    :param ret: its discounted return
    :param d: its direct objective ``G + ε·R``
    """

    leaf: int
    g: float
    ret: float
    d: float


@dataclass
class EpisodeSearch:
    """Outcome of the search of one episode.

    :param seed: the episode's seed
    :param opt_leaf: last node of ``a_opt`` (a sample of the policy)
    :param dir_leaf: last node of ``a_dir`` (``opt_leaf`` when nothing improved)
    :param g_opt: ``G(a_opt)``, distributed as ``Gumbel(0)``
    :param return_opt: return of ``a_opt``
    :param reward_sum_opt: undiscounted sum of the rewards of ``a_opt`` (what SB3 reports as the episode reward)
    :param return_dir: return of ``a_dir``
    :param d_opt: ``D(a_opt) = G(a_opt) + ε·R(a_opt)``
    :param d_dir: ``D(a_dir)``
    :param success_opt: whether ``a_opt`` ended in success (False when the simulator does not report success)
    :param success_dir: whether ``a_dir`` ended in success
    :param length_opt: number of actions of ``a_opt``
    :param interactions: environment interactions spent, ``a_opt`` included
    :param interactions_to_improvement: search interactions (after ``a_opt``) until the first improvement, or None
    :param trajectories: number of complete trajectories found, ``a_opt`` included
    :param pruned: number of regions pruned
    :param recorded: every complete trajectory, in the order found (when ``record_trajectories``)
    :param bound_gap: the largest violation of the heuristic's bound seen on the nodes of the complete trajectories
        (realised return-to-go minus ``upper`` for ε > 0, ``lower`` minus it for ε < 0, discounted from the node);
        0 when every bound held or there is no heuristic
    :param bound_gap_depth: the depth of the node with that violation, or -1
    """

    seed: int
    opt_leaf: int = -1
    dir_leaf: int = -1
    g_opt: float = float("nan")
    return_opt: float = float("nan")
    reward_sum_opt: float = float("nan")
    return_dir: float = float("nan")
    d_opt: float = float("nan")
    d_dir: float = float("nan")
    success_opt: bool = False
    success_dir: bool = False
    length_opt: int = 0
    interactions: int = 0
    interactions_to_improvement: int | None = None
    trajectories: int = 0
    pruned: int = 0
    recorded: list[CompletedTrajectory] = field(default_factory=list)
    bound_gap: float = 0.0
    bound_gap_depth: int = -1

    @property
    def improved(self) -> bool:
        """:return: whether ``a_dir`` differs from ``a_opt``"""
        return self.dir_leaf != self.opt_leaf


@dataclass
class UpdateSteps:
    """The (state, action) pairs on which ``a_dir`` and ``a_opt`` differ, for all episodes of a batch.

    ``sign`` is +1 for steps of ``a_dir`` and -1 for steps of ``a_opt``; shared prefixes are left out since their
    log-probabilities cancel in ``log P(a_dir) - log P(a_opt)``.
    """

    obs: list
    masks: np.ndarray
    actions: np.ndarray
    signs: np.ndarray
    episodes: np.ndarray


@dataclass
class SearchResult:
    """The tree and per-episode outcomes of a batch of searches (``stopped``: interrupted by ``on_iteration``)."""

    tree: SearchTree
    episodes: list[EpisodeSearch]
    stopped: bool = False

    def actions(self, leaf: int) -> list[int]:
        """:param leaf: a node id
        :return: the actions leading to it"""
        return self.tree.actions(leaf)

    def update_steps(self) -> UpdateSteps:
        """:return: the steps where ``a_dir`` and ``a_opt`` differ, over all improved episodes"""
        nodes, acts, signs, eps = [], [], [], []
        for index, ep in enumerate(self.episodes):
            if not ep.improved:
                continue
            path_opt, path_dir = self.tree.path(ep.opt_leaf), self.tree.path(ep.dir_leaf)
            common = 0
            while common < min(len(path_opt), len(path_dir)) and path_opt[common] == path_dir[common]:
                common += 1
            for path, sign in ((path_dir, 1.0), (path_opt, -1.0)):
                for i in range(common - 1, len(path) - 1):
                    nodes.append(path[i])
                    acts.append(self.tree.nodes.action[path[i + 1]])
                    signs.append(sign)
                    eps.append(index)
        nodes_arr = np.asarray(nodes, dtype=np.int64)
        return UpdateSteps(
            obs=[self.tree.obs[i] for i in nodes],
            masks=self.tree.nodes.legal[nodes_arr],
            actions=np.asarray(acts, dtype=np.int64),
            signs=np.asarray(signs, dtype=np.float64),
            episodes=np.asarray(eps, dtype=np.int64),
        )


@contextlib.contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector: a search allocates many small acyclic objects (snapshots, observations)
    that reference counting frees, and full collections over a large tree cost more than the search itself."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _check_masks(masks: np.ndarray, terminal: np.ndarray, episodes: np.ndarray, where: str) -> None:
    empty = ~masks.any(axis=1) & ~terminal
    if empty.any():
        raise ValueError(
            f"all-false action mask {where} (episode {int(episodes[np.argmax(empty)])}): every non-terminal state needs "
            "at least one legal action; check the env's action_masks()"
        )


class TopDownSearch:
    """Runs Algorithms 1 and 2 of the paper for a batch of episodes in lockstep.

    :param simulator: steps snapshots (see :class:`~sb3_dirpg.search.protocols.BatchSimulator`)
    :param policy_fn: observations and masks to logits (see :class:`~sb3_dirpg.search.protocols.PolicyFunction`)
    :param config: search settings
    """

    def __init__(self, simulator: BatchSimulator, policy_fn: PolicyFunction, config: SearchConfig) -> None:
        self.simulator = simulator
        self.policy_fn = policy_fn
        self.config = config
        self.n_actions = int(simulator.n_actions)

    # -- priorities and bounds, vectorised over regions ------------------------------------------------------

    def _bound(self, tree: SearchTree, g: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """:param tree: the search tree
        :param g: the regions' Gumbels
        :param nodes: the regions' nodes
        :return: an upper bound of ``D`` over the trajectories of each region"""
        eps = self.config.epsilon
        rest = tree.nodes.upper[nodes] if eps > 0 else tree.nodes.lower[nodes]
        return g + eps * (tree.nodes.ret[nodes] + rest)

    def _dir_priority(self, tree: SearchTree, g: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """Priority of regions with Gumbels ``g`` at ``nodes`` in the ``a_dir`` search (``a_opt`` is sampled by ``G``)."""
        cfg = self.config
        if cfg.priority == "gumbel":
            return g
        prio = g + cfg.epsilon * tree.nodes.ret[nodes]
        if cfg.alpha > 0:
            rest = tree.nodes.upper[nodes] if cfg.epsilon > 0 else tree.nodes.lower[nodes]
            prio = prio + cfg.epsilon * cfg.alpha * rest
        return prio

    def _push(self, state: SearchState, regions: np.ndarray, episodes: np.ndarray, follow: bool = False) -> None:
        """Push regions onto the heaps of their episodes, pruning those that cannot beat the best ``D`` so far.

        :param state: the search state
        :param regions: region ids
        :param episodes: the episode of each region
        :param follow: make each region its episode's next region to expand instead (depth-first; at most one region
            per episode)
        """
        if regions.size == 0:
            return
        tree = state.tree
        g_arr = tree.regions.G[regions]
        nodes = tree.regions.node[regions]
        prio_dir = self._dir_priority(tree, g_arr, nodes).tolist()
        bound = self._bound(tree, g_arr, nodes).tolist()
        g = g_arr.tolist()
        prune = self.config.prune
        phase, d_best, heaps, outcomes = state.phase, state.d_best, state.heaps, state.outcomes
        for i, (r, e) in enumerate(zip(regions.tolist(), episodes.tolist())):
            if phase[e] is Phase.DIR and prune and bound[i] <= d_best[e]:
                outcomes[e].pruned += 1
            elif follow:
                state.follow[e] = (bound[i], r)
            else:
                heapq.heappush(heaps[e], (-(g[i] if phase[e] is Phase.OPT else prio_dir[i]), bound[i], r))

    def _pop(self, state: SearchState, e: int) -> int:
        """Take episode ``e``'s next region: the followed child (depth-first), else the heap's best; regions that can no
        longer beat the best ``D`` are pruned on the way.

        :param state: the search state
        :param e: the episode
        :return: the region, or -1 when none is left
        """
        prune = self.config.prune and state.phase[e] is Phase.DIR
        d_best, outcome = state.d_best[e], state.outcomes[e]
        followed, state.follow[e] = state.follow[e], None
        if followed is not None:
            if not (prune and followed[0] <= d_best):
                return followed[1]
            outcome.pruned += 1
        heap = state.heaps[e]
        while heap:
            _, bound, region = heapq.heappop(heap)
            if prune and bound <= d_best:
                outcome.pruned += 1
                continue
            return region
        return -1

    def _reprioritise(self, state: SearchState, e: int) -> None:
        """Rebuild the heap of episode ``e`` with the ``a_dir`` priority.

        :param state: the search state
        :param e: the episode
        """
        heap = state.heaps[e]
        regions = np.fromiter((entry[2] for entry in heap), dtype=np.int64, count=len(heap))
        state.heaps[e] = []
        self._push(state, regions, np.full(regions.size, e))

    # -- the search ------------------------------------------------------------------------------------------

    def run(
        self,
        seeds: Sequence[int],
        rng: np.random.Generator | Sequence[np.random.Generator],
        on_iteration: Callable[[int], bool] | None = None,
    ) -> SearchResult:
        """Search ``a_opt`` and ``a_dir`` for one episode per seed.

        :param seeds: one seed per episode, passed to the simulator's reset
        :param rng: source of the Gumbel noise and action sampling: one generator per episode, or one generator that
            is spawned into one per episode. Each episode draws only from its own generator, so its outcome does not
            depend on which other episodes share the batch.
        :param on_iteration: called after every lockstep iteration with the number of interactions it made;
            returning False stops every search of the batch (``SearchResult.stopped`` is then True)
        :return: the tree and the per-episode outcomes
        """
        with _cyclic_gc_paused():
            return self._run(seeds, rng, on_iteration)

    def _run(
        self,
        seeds: Sequence[int],
        rng: np.random.Generator | Sequence[np.random.Generator],
        on_iteration: Callable[[int], bool] | None,
    ) -> SearchResult:
        cfg = self.config
        n_eps = len(seeds)
        tree = SearchTree(self.n_actions, capacity=n_eps * (min(cfg.budget, 256) + (cfg.horizon or 32) + 1))
        root = self.simulator.reset(seeds)
        episodes_idx = np.arange(n_eps)
        _check_masks(np.asarray(root.masks, dtype=bool), np.zeros(n_eps, bool), episodes_idx, "at the root")
        lower, upper = self._bounds_of(root, np.zeros(n_eps, dtype=np.int64))
        root_ids = tree.add_nodes(
            episode=episodes_idx, parent=np.full(n_eps, -1), action=np.full(n_eps, -1), depth=np.zeros(n_eps, np.int64),
            log_p=np.zeros(n_eps), reward=np.zeros(n_eps), ret=np.zeros(n_eps), terminal=np.zeros(n_eps, bool),
            legal=root.masks, lower=lower, upper=upper, obs=root.obs, snapshots=root.snapshots,
        )  # fmt: skip
        rngs = rng.spawn(n_eps) if isinstance(rng, np.random.Generator) else list(rng)
        if len(rngs) != n_eps:
            raise ValueError(f"need one random generator per episode: {len(rngs)} for {n_eps} seeds")
        g_root = -np.log(np.array([r.standard_exponential() for r in rngs]))  # Gumbel(0)
        root_regions = tree.add_regions(root_ids, np.asarray(root.masks, dtype=bool), g_root)

        check_bounds = root.upper is not None if cfg.epsilon > 0 else root.lower is not None
        state = SearchState.start(tree, rngs, [EpisodeSearch(seed=int(s)) for s in seeds], check_bounds)
        self._push(state, root_regions, episodes_idx)
        stopped = False

        while True:
            popped_eps, popped_regions = [], []
            for e in range(n_eps):
                if state.phase[e] is Phase.DONE:
                    continue
                region = self._pop(state, e)
                if region < 0:
                    state.phase[e] = Phase.DONE
                    continue
                popped_eps.append(e)
                popped_regions.append(region)
            if not popped_eps:
                break
            eps_arr = np.asarray(popped_eps, dtype=np.int64)
            regs = np.asarray(popped_regions, dtype=np.int64)
            self._expand(state, eps_arr, regs)
            if on_iteration is not None and on_iteration(len(popped_eps)) is False:
                stopped = True
                break

        for e, ep in enumerate(state.outcomes):
            ep.interactions = int(ep.length_opt + state.search_interactions[e])
        return SearchResult(tree=tree, episodes=state.outcomes, stopped=stopped)

    def _bounds_of(self, trans: Transitions, depth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = len(trans.obs)
        lower = np.full(n, -np.inf) if trans.lower is None else np.asarray(trans.lower, dtype=np.float64)
        upper = np.full(n, np.inf) if trans.upper is None else np.asarray(trans.upper, dtype=np.float64)
        discount = self.config.gamma ** depth.astype(np.float64)
        terminal = np.asarray(trans.terminal, dtype=bool)
        return np.where(terminal, 0.0, discount * lower), np.where(terminal, 0.0, discount * upper)

    def _evaluate(self, tree: SearchTree, nodes: np.ndarray) -> None:
        todo = np.unique(nodes[~tree.nodes.evaluated[nodes]])
        if todo.size == 0:
            return
        legal = tree.nodes.legal[todo]
        logits = np.asarray(self.policy_fn([tree.obs[i] for i in todo], legal), dtype=np.float64)
        tree.nodes.log_pi[todo] = masked_log_softmax(logits, legal)
        tree.nodes.evaluated[todo] = True

    def _expand(self, state: SearchState, eps_arr: np.ndarray, regs: np.ndarray) -> None:
        cfg = self.config
        tree, rngs, results, phase, search_interactions = (
            state.tree, state.rngs, state.outcomes, state.phase, state.search_interactions
        )
        uniforms = np.empty(len(regs))
        exponentials = np.empty(len(regs))
        for i, e in enumerate(eps_arr.tolist()):  # each episode draws from its own stream, in a fixed order
            uniforms[i] = rngs[e].random()
            exponentials[i] = rngs[e].standard_exponential()
        nodes = tree.regions.node[regs]
        self._evaluate(tree, nodes)
        legal_set = tree.regions.legal[regs]
        log_pi = tree.nodes.log_pi[nodes]
        g = tree.regions.G[regs]
        rows = np.arange(len(regs))

        # sample the next action within the region's legal set, proportionally to the policy
        probs = np.where(legal_set, np.exp(log_pi), 0.0)
        cum = np.cumsum(probs, axis=1)
        total = cum[:, -1]
        u = uniforms * total
        actions = np.where(total > 0, (cum > u[:, None]).argmax(axis=1), legal_set.argmax(axis=1))

        # the remainder region (same prefix, the sampled action removed) gets a truncated Gumbel
        rest = legal_set.copy()
        rest[rows, actions] = False
        has_rest = rest.any(axis=1)
        mu = tree.nodes.log_p[nodes] + masked_logsumexp(log_pi, rest)
        g_rest = truncate_gumbel(mu - np.log(exponentials), g)

        # one environment interaction per popped region
        trans = self.simulator.step([tree.snapshots[i] for i in nodes], actions, eps_arr)
        parent_depth = tree.nodes.depth[nodes]
        depth = parent_depth + 1
        rewards = np.asarray(trans.rewards, dtype=np.float64)
        terminal = np.asarray(trans.terminal, dtype=bool)
        if cfg.horizon is not None:
            terminal = terminal | (depth >= cfg.horizon)
        masks = np.asarray(trans.masks, dtype=bool)
        _check_masks(masks, terminal, eps_arr, "after a step")
        reached = Transitions(trans.obs, rewards, terminal, masks, trans.snapshots, trans.lower, trans.upper, trans.success)
        lower, upper = self._bounds_of(reached, depth)
        children = tree.add_nodes(
            episode=eps_arr, parent=nodes, action=actions, depth=depth,
            log_p=tree.nodes.log_p[nodes] + log_pi[rows, actions], reward=rewards,
            ret=tree.nodes.ret[nodes] + cfg.gamma ** parent_depth.astype(np.float64) * rewards,
            terminal=terminal, legal=masks, lower=lower, upper=upper, obs=trans.obs, snapshots=trans.snapshots,
            success=trans.success,
        )  # fmt: skip
        for e in eps_arr.tolist():
            if phase[e] is Phase.DIR:
                search_interactions[e] += 1
            else:
                results[e].length_opt += 1

        rest_regions = tree.add_regions(nodes[has_rest], rest[has_rest], g_rest[has_rest])
        open_children = ~terminal
        child_regions = tree.add_regions(children[open_children], masks[open_children], g[open_children])
        self._push(state, rest_regions, eps_arr[has_rest])
        self._push(state, child_regions, eps_arr[open_children], follow=cfg.depth_first)

        returns = tree.nodes.ret[children]
        d_values = g + cfg.epsilon * returns
        for i in np.flatnonzero(terminal).tolist():
            e = int(eps_arr[i])
            self._on_trajectory(state, e, int(children[i]), float(g[i]), float(returns[i]), float(d_values[i]))
        for e in eps_arr.tolist():
            if phase[e] is Phase.DIR and search_interactions[e] >= cfg.budget:
                phase[e] = Phase.DONE

    def _record_bound_violation(self, tree: SearchTree, ep: EpisodeSearch, leaf: int) -> None:
        """Runtime admissibility check: compare the bound of every node on a complete trajectory with the return-to-go
        the trajectory realised from that node, and keep the largest violation in ``ep``."""
        path = np.asarray(tree.path(leaf)[:-1], dtype=np.int64)  # the leaf's own bound is 0
        if path.size == 0:
            return
        nodes, ret_leaf = tree.nodes, tree.nodes.ret[leaf]
        realised = ret_leaf - nodes.ret[path]  # discounted from the root, like the stored bounds
        gap = realised - nodes.upper[path] if self.config.epsilon > 0 else nodes.lower[path] - realised
        worst = int(np.argmax(gap))
        if not gap[worst] > BOUND_TOLERANCE * max(1.0, abs(float(realised[worst]))):
            return
        depth = int(nodes.depth[path[worst]])
        gap_at_node = float(gap[worst]) / self.config.gamma**depth  # in the node's own discounting
        if gap_at_node > ep.bound_gap:
            ep.bound_gap, ep.bound_gap_depth = gap_at_node, depth

    def _on_trajectory(self, state: SearchState, e: int, leaf: int, g: float, ret: float, d: float) -> None:
        cfg = self.config
        tree, phase, d_best = state.tree, state.phase, state.d_best
        ep = state.outcomes[e]
        ep.trajectories += 1
        if state.check_bounds:
            self._record_bound_violation(tree, ep, leaf)
        if cfg.record_trajectories:
            ep.recorded.append(CompletedTrajectory(leaf=leaf, g=g, ret=ret, d=d))
        success = bool(tree.nodes.success[leaf])
        if phase[e] is Phase.OPT:
            ep.opt_leaf = ep.dir_leaf = leaf
            ep.reward_sum_opt = tree.undiscounted_return(leaf)
            ep.g_opt, ep.return_opt, ep.return_dir, ep.d_opt, ep.d_dir = g, ret, ret, d, d
            ep.success_opt = ep.success_dir = success
            d_best[e] = d
            phase[e] = Phase.DIR
            if cfg.priority != "gumbel" and not (cfg.stop_on_success and success):
                self._reprioritise(state, e)
        elif phase[e] is Phase.DIR and d > d_best[e]:
            if ep.interactions_to_improvement is None:
                ep.interactions_to_improvement = int(state.search_interactions[e])
            ep.dir_leaf, ep.return_dir, ep.d_dir, ep.success_dir = leaf, ret, d, success
            d_best[e] = d
            if cfg.early_stop and cfg.max_trajectories is None:
                phase[e] = Phase.DONE
        if cfg.max_trajectories is not None and ep.trajectories >= cfg.max_trajectories:
            phase[e] = Phase.DONE
        if cfg.stop_on_success and success:
            phase[e] = Phase.DONE


def gumbel_top_k(
    simulator: BatchSimulator,
    policy_fn: PolicyFunction,
    seeds: Sequence[int],
    k: int,
    rng: np.random.Generator,
    gamma: float = 1.0,
    horizon: int | None = None,
    max_interactions: int | None = None,
) -> list[list[tuple[list[int], float, float]]]:
    """Sample ``k`` distinct trajectories per episode without replacement (Gumbel top-K), in descending ``G``.

    This is the top-down search with priority ``G``, stopped after ``k`` complete trajectories.

    :param simulator: the batch simulator
    :param policy_fn: the policy function
    :param seeds: one seed per episode
    :param k: number of trajectories per episode
    :param rng: source of randomness
    :param gamma: discount of the returns reported
    :param horizon: maximum trajectory length, or None
    :param max_interactions: cap on the interactions per episode after the first trajectory, or None
    :return: per episode, a list of ``(actions, G, return)`` in the order found (descending ``G``)
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k!r}")
    budget = np.iinfo(np.int64).max if max_interactions is None else max_interactions
    config = SearchConfig(
        epsilon=1.0, budget=budget, priority="gumbel", prune=False, early_stop=False, gamma=gamma, horizon=horizon,
        max_trajectories=k, record_trajectories=True,
    )  # fmt: skip
    result = TopDownSearch(simulator, policy_fn, config).run(seeds, rng)
    return [[(result.actions(t.leaf), t.g, t.ret) for t in ep.recorded] for ep in result.episodes]
