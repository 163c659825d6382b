"""Lazy top-down A* sampling of trajectories (Algorithms 1 and 2 of the DirPG paper), in lockstep over a batch.

Every search of the batch pops one region per iteration; the simulator steps all popped regions together and the
policy is evaluated once per iteration on every popped node that has not been evaluated yet.

The state of a batch lives in one :class:`~sb3_dirpg.search.state.SearchState`. One iteration is ``_pop_regions``
(which also ends the searches that have spent their budget) then ``_expand``: ``_evaluate``, the split
(sample an action, split off the rest of the region), the simulator's step, ``_add_children`` (add the children, count
the interactions, queue the rests and the children's regions) and, when trajectories end, ``_settle_trajectories``
(``a_opt``, a better ``a_dir``, stopping rules). The bookkeeping runs in the compiled kernels of
:mod:`sb3_dirpg.search.kernels`, three calls per iteration.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from sb3_dirpg.search import fused, kernels
from sb3_dirpg.search.config import PRIORITIES, SearchConfig
from sb3_dirpg.search.fused import Exit, LoopExit
from sb3_dirpg.search.protocols import (
    BatchSimulator,
    CompiledPolicyFunction,
    CompiledSearchSimulator,
    PolicyFunction,
    Transitions,
)
from sb3_dirpg.search.results import CompletedTrajectory, EpisodeSearch, SearchResult
from sb3_dirpg.search.state import DIR, DONE, NOISE_BLOCK, OPT, Popped, Reached, SearchState, Split
from sb3_dirpg.search.tree import SearchTree

# SearchConfig, PRIORITIES and the result types live in config.py and results.py; they stay importable from here
__all__ = [
    "PRIORITIES", "CompletedTrajectory", "EpisodeSearch", "SearchConfig", "SearchResult", "TopDownSearch", "cyclic_gc_paused",
    "gumbel_top_k",
]  # fmt: skip

BOUND_TOLERANCE = 1e-6  # relative (to max(1, |return-to-go|)) slack before a bound counts as violated
COMPILED_ITERATIONS = 256  # the most lockstep iterations of one call of a compiled loop (search/fused.py)


@contextlib.contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector (nested pauses resume it only at the outermost exit).

    A search allocates many small acyclic objects (snapshots, observations) that reference counting frees, and full
    collections over a large tree cost more than the search itself. The first collection after the pause walks every
    object that is still alive, so a caller that keeps only part of the result should free the tree inside its own
    pause (:meth:`~sb3_dirpg.dirpg.update.SearchShare.from_search` does).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def reached_of(trans: Transitions) -> Reached:
    """:param trans: a simulator's step
    :return: its arrays, with the kernels' dtypes and the defaults of the optional ones filled in"""
    k = len(trans.rewards)
    return Reached(
        rewards=np.asarray(trans.rewards, dtype=np.float64), terminal=np.asarray(trans.terminal, dtype=bool),
        masks=np.asarray(trans.masks, dtype=bool),
        lower=np.full(k, -np.inf) if trans.lower is None else np.asarray(trans.lower, dtype=np.float64),
        upper=np.full(k, np.inf) if trans.upper is None else np.asarray(trans.upper, dtype=np.float64),
        success=np.zeros(k, bool) if trans.success is None else np.asarray(trans.success, dtype=bool),
    )  # fmt: skip


def empty_mask_message(episode: int, where: str) -> str:
    """:param episode: the episode that reached a non-terminal state without legal actions
    :param where: where the state comes from
    :return: the error message for it"""
    return (
        f"all-false action mask {where} (episode {episode}): every non-terminal state needs at least one legal action; "
        "check the env's action_masks()"
    )


def _check_masks(masks: np.ndarray, terminal: np.ndarray, episodes: np.ndarray, where: str) -> None:
    """Refuse a non-terminal state without legal actions.

    :param masks: legal actions, bool, shape (k, n_actions)
    :param terminal: whether each state ends its trajectory, bool, shape (k,)
    :param episodes: the episode of each state, shape (k,)
    :param where: where the states come from, for the message
    """
    has_legal = masks.any(axis=1)
    if has_legal.all():
        return
    empty = ~has_legal & ~terminal
    if empty.any():
        raise ValueError(empty_mask_message(int(episodes[np.argmax(empty)]), where))


class TopDownSearch:
    """Runs Algorithms 1 and 2 of the paper for a batch of episodes in lockstep.

    The per-iteration bookkeeping runs in the compiled kernels of :mod:`sb3_dirpg.search.kernels`; this class keeps the
    simulator, the policy, the random streams and the rare events (a complete trajectory, the switch to ``a_dir``).

    :param simulator: steps snapshots (see :class:`~sb3_dirpg.search.protocols.BatchSimulator`)
    :param policy_fn: observations and masks to logits (see :class:`~sb3_dirpg.search.protocols.PolicyFunction`)
    :param config: search settings
    """

    def __init__(self, simulator: BatchSimulator, policy_fn: PolicyFunction, config: SearchConfig) -> None:
        self.simulator = simulator
        self.policy_fn = policy_fn
        self.config = config
        self.n_actions = int(simulator.n_actions)
        self._params = config.params()
        self._no_logits = np.empty((0, self.n_actions))

    # -- queues ----------------------------------------------------------------------------------------------

    def _push(self, state: SearchState, regions: np.ndarray, episodes: np.ndarray) -> None:
        """Queue regions onto their episodes' heaps, pruning those that cannot beat the best ``D`` so far.

        :param state: the search state
        :param regions: region ids, shape (m,)
        :param episodes: the episode of each region, shape (m,)
        """
        state.reserve_queues(int(np.bincount(episodes).max(initial=0)))
        tree = state.tree
        kernels.push_regions(
            regions, episodes, params=self._params, nodes=tree.nodes, regions=tree.regions, progress=state.progress,
            queues=state.queues,
        )  # fmt: skip

    def _reprioritise(self, state: SearchState, e: int) -> None:
        """Rebuild the heap of episode ``e`` with the ``a_dir`` priority.

        :param state: the search state
        :param e: the episode
        """
        tree = state.tree
        kernels.requeue(
            e, params=self._params, nodes=tree.nodes, regions=tree.regions, progress=state.progress, queues=state.queues
        )

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
            is spawned into one per episode. Each episode draws only from its own generator (one exponential for its
            root's Gumbel, then blocks of uniforms and exponentials, see :class:`~sb3_dirpg.search.state.NoiseBlocks`),
            so its outcome does not depend on which other episodes share the batch.
        :param on_iteration: called after every lockstep iteration with the number of interactions it made;
            returning False stops every search of the batch (``SearchResult.stopped`` is then True)
        :return: the tree and the per-episode outcomes
        """
        with cyclic_gc_paused():
            state = self._start(seeds, rng)
            if self._compiled_loop():
                return self._finish(state, self._run_compiled(state, on_iteration))
            stopped = False
            while True:
                popped = self._pop_regions(state)
                if popped.episodes.size == 0:
                    break
                self._expand(state, popped)
                if on_iteration is not None and on_iteration(len(popped.episodes)) is False:
                    stopped = True
                    break
            return self._finish(state, stopped)

    def _compiled_loop(self) -> bool:
        """:return: whether the simulator runs this batch's iterations in a compiled loop"""
        return (
            self.config.compiled_loop and isinstance(self.simulator, CompiledSearchSimulator)
            and self.simulator.runs_search_iterations
        )  # fmt: skip

    def _run_compiled(self, state: SearchState, on_iteration: Callable[[int], bool] | None) -> bool:
        """The search's loop on a :class:`~sb3_dirpg.search.protocols.CompiledSearchSimulator`: the simulator runs the
        iterations in compiled code (:mod:`sb3_dirpg.search.fused`) and returns here to forward new observations, to
        settle complete trajectories and to refill random numbers. ``on_iteration`` is called once per iteration, as in
        the Python loop, after each call.

        :param state: the search state, after :meth:`_start`
        :param on_iteration: see :meth:`run`
        :return: whether ``on_iteration`` stopped the search
        """
        sim: CompiledSearchSimulator = self.simulator  # type: ignore[assignment]
        tree, n = state.tree, state.n_episodes
        table = fused.ObsTable.empty(sim.observation_width, self.n_actions, capacity=max(1024, 64 * n))
        node_obs = np.empty(len(tree.nodes.episode), np.int64)
        node_snapshot = np.empty(len(tree.nodes.episode), np.int64)
        node_obs[:n] = fused.add_observations(table, sim.observation_rows(tree.obs[:n]))
        node_snapshot[:n] = [-1 if s is None else s for s in tree.snapshots[:n]]
        counts = np.empty(COMPILED_ITERATIONS, np.int64)
        policy_weights = self.policy_fn.compiled_weights if isinstance(self.policy_fn, CompiledPolicyFunction) else None
        pending: Popped | None = None
        while True:
            tree.reserve(nodes=n * COMPILED_ITERATIONS, regions=2 * n * COMPILED_ITERATIONS)
            state.reserve_queues(2 * COMPILED_ITERATIONS)
            table = table.reserve(n * COMPILED_ITERATIONS)
            if len(node_obs) < len(tree.nodes.episode):
                node_obs, node_snapshot = (np.resize(column, len(tree.nodes.episode)) for column in (node_obs, node_snapshot))
            loop = fused.LoopState(
                params=self._params, nodes=tree.nodes, regions=tree.regions, progress=state.progress, queues=state.queues,
                noise=state.noise, table=table, node_obs=node_obs, node_snapshot=node_snapshot,
            )  # fmt: skip
            exit = sim.search_iterations(loop, pending, COMPILED_ITERATIONS, counts, policy_weights)
            pending = None
            if on_iteration is not None:
                for interactions in counts[: exit.iterations].tolist():
                    if on_iteration(interactions) is False:
                        self._keep_columns(tree, table, node_obs, node_snapshot)
                        return True
            if exit.status is Exit.DONE_ALL:
                break
            pending = self._settle_exit(state, table, node_obs, exit)
        self._keep_columns(tree, table, node_obs, node_snapshot)
        return False

    def _settle_exit(self, state: SearchState, table: fused.ObsTable, node_obs: np.ndarray, exit: LoopExit) -> Popped | None:
        """Do what the compiled loop handed back for.

        :param state: the search state
        :param table: the observation table
        :param node_obs: each node's observation id
        :param exit: why the loop returned
        :return: the popped regions the next call expands first (after a ``MISS``), else None
        """
        tree, popped = state.tree, exit.popped
        if exit.status is Exit.MISS:
            self._forward_misses(tree, table, node_obs, popped.todo, exit.misses)
            return popped
        if exit.status is Exit.ENDS:
            start = exit.start
            ends = tree.nodes.terminal[start : start + len(popped.episodes)]
            leaves = np.arange(start, start + len(popped.episodes))[ends]
            self._settle_trajectories(state, popped.episodes[ends], leaves, popped.g[ends])
        elif exit.status is Exit.REFILL:
            noise = state.noise
            noise.refill(np.flatnonzero((state.progress.phase != DONE) & (noise.used >= NOISE_BLOCK)), state.rngs)
        elif exit.status is Exit.STALE:
            raise ValueError("the search stepped a snapshot from before the simulator's last reset()")
        elif exit.status is Exit.EMPTY_MASK:
            raise ValueError(empty_mask_message(int(popped.episodes[exit.misses[0]]), "after a step"))
        return None

    def _forward_misses(
        self, tree: SearchTree, table: fused.ObsTable, node_obs: np.ndarray, todo: np.ndarray, misses: np.ndarray
    ) -> None:
        """Forward the observations the policy has not seen and store their logits in the table.

        :param tree: the search tree
        :param table: the observation table
        :param node_obs: each node's observation id
        :param todo: the popped nodes not yet evaluated
        :param misses: the observations to forward, in the order of their first node in ``todo``
        """
        first_node = {}
        for node, oid in zip(todo.tolist(), node_obs[todo].tolist()):
            first_node.setdefault(oid, node)
        nodes = [first_node[oid] for oid in misses.tolist()]
        obs = self.simulator.row_observations(table.rows[misses])  # type: ignore[attr-defined]
        table.logits[misses] = self.policy_fn(obs, tree.nodes.legal[nodes])
        table.has_logits[misses] = True

    def _keep_columns(self, tree: SearchTree, table: fused.ObsTable, node_obs: np.ndarray, node_snapshot: np.ndarray) -> None:
        """Give the tree its nodes' observations and snapshots, which the compiled loop kept in arrays.

        :param tree: the search tree
        :param table: the observation table
        :param node_obs: each node's observation id
        :param node_snapshot: each node's snapshot
        """
        size = tree.nodes.size
        sim: CompiledSearchSimulator = self.simulator  # type: ignore[assignment]
        tree.obs.read_from(size, fused.observation_reader(table, node_obs, sim.row_observations))
        tree.snapshots.read_from(size, fused.snapshot_reader(node_snapshot))

    def _start(self, seeds: Sequence[int], rng: np.random.Generator | Sequence[np.random.Generator]) -> SearchState:
        """Reset the simulator, add one root node and one root region per episode, and queue the root regions.

        :param seeds: one seed per episode
        :param rng: one generator per episode, or one to spawn them from
        :return: the state of the batch, every episode sampling ``a_opt``
        """
        cfg = self.config
        n_eps = len(seeds)
        tree = SearchTree(self.n_actions, capacity=n_eps * (min(cfg.budget, 256) + (cfg.horizon or 32) + 1))
        root = self.simulator.reset(seeds)
        episodes = np.arange(n_eps)
        _check_masks(np.asarray(root.masks, dtype=bool), np.zeros(n_eps, bool), episodes, "at the root")
        lower, upper = self._root_bounds(root)
        root_ids = tree.add_roots(root.masks, lower, upper, root.obs, root.snapshots)
        rngs = rng.spawn(n_eps) if isinstance(rng, np.random.Generator) else list(rng)
        if len(rngs) != n_eps:
            raise ValueError(f"need one random generator per episode: {len(rngs)} for {n_eps} seeds")
        g_root = -np.log(np.array([r.standard_exponential() for r in rngs]))  # Gumbel(0)
        root_regions = tree.add_regions(root_ids, np.asarray(root.masks, dtype=bool), g_root)
        check_bounds = root.upper is not None if cfg.epsilon > 0 else root.lower is not None
        state = SearchState.start(tree, rngs, [EpisodeSearch(seed=int(s)) for s in seeds], check_bounds, cfg.budget)
        self._push(state, root_regions, episodes)
        return state

    def _pop_regions(self, state: SearchState) -> Popped:
        """End the ``a_dir`` search of the episodes that have spent their budget, then pop the next region of every
        episode still searching; an episode with none left is done.

        :param state: the search state
        :return: the popped regions
        """
        tree = state.tree
        return kernels.pop_regions(
            params=self._params, nodes=tree.nodes, regions=tree.regions, progress=state.progress, queues=state.queues,
            noise=state.noise,
        )  # fmt: skip

    def _finish(self, state: SearchState, stopped: bool) -> SearchResult:
        """Count each episode's interactions and hand the outcomes over.

        :param state: the search state
        :param stopped: whether ``on_iteration`` interrupted the batch
        :return: the search result
        """
        progress = state.progress
        for ep, length_opt, searched, pruned in zip(
            state.outcomes, progress.length_opt.tolist(), progress.search_interactions.tolist(), progress.pruned.tolist()
        ):
            ep.length_opt, ep.interactions, ep.pruned = length_opt, length_opt + searched, pruned
            if ep.opt_leaf >= 0:
                ep.entropy_opt = state.tree.mean_entropy(ep.opt_leaf)
        return SearchResult(tree=state.tree, episodes=state.outcomes, stopped=stopped)

    # -- one lockstep iteration ------------------------------------------------------------------------------

    def _expand(self, state: SearchState, popped: Popped) -> None:
        """Expand one popped region per episode: split it into a sampled action and the rest, step the simulator with
        the action, add the child, queue the rest and the child's region, and settle the trajectories that end there.

        :param state: the search state
        :param popped: the popped regions
        """
        tree, noise = state.tree, state.noise
        if popped.refill.size:
            noise.refill(popped.refill, state.rngs)
        logits = self._evaluate(tree, popped.todo)
        split = kernels.split_regions(popped=popped, logits=logits, nodes=tree.nodes, regions=tree.regions, noise=noise)
        trans = self.simulator.step([tree.snapshots[i] for i in popped.nodes.tolist()], split.actions, popped.episodes)
        children, n_ends = self._add_children(state, popped, split, trans)
        if n_ends:
            ends = tree.nodes.terminal[children]
            leaves = np.arange(children.start, children.stop)[ends]
            self._settle_trajectories(state, popped.episodes[ends], leaves, popped.g[ends])

    def _evaluate(self, tree: SearchTree, todo: np.ndarray) -> np.ndarray:
        """Evaluate the policy at the nodes that do not have its log-probabilities yet (one call for all of them).

        :param tree: the search tree
        :param todo: the nodes, unique, shape (m,)
        :return: the logits, float64, shape (m, n_actions)
        """
        if todo.size == 0:
            return self._no_logits
        logits = self.policy_fn([tree.obs[i] for i in todo.tolist()], tree.nodes.legal[todo])
        return np.ascontiguousarray(logits, dtype=np.float64)

    def _add_children(self, state: SearchState, popped: Popped, split: Split, trans: Transitions) -> tuple[slice, int]:
        """Add the states the simulator reached as children of the popped nodes, count the interactions, and queue the
        non-empty rests and the children's regions (depth-first: each child's region as its episode's next region).

        :param state: the search state
        :param popped: the popped regions
        :param split: the actions taken and the rests
        :param trans: the states reached
        :return: the children's node ids, as a slice, and the number of them that end their trajectory
        """
        tree, k = state.tree, len(popped.episodes)
        tree.reserve(nodes=k, regions=2 * k)
        state.reserve_queues(2)
        start = tree.nodes.size
        n_ends, empty = kernels.add_children(
            popped=popped, split=split, reached=reached_of(trans), params=self._params, nodes=tree.nodes,
            regions=tree.regions, progress=state.progress, queues=state.queues,
        )  # fmt: skip
        if empty >= 0:
            raise ValueError(empty_mask_message(int(popped.episodes[empty]), "after a step"))
        tree.obs.extend(trans.obs)
        tree.snapshots.extend(trans.snapshots)
        return slice(start, start + k), n_ends

    @staticmethod
    def _root_bounds(root: Transitions) -> tuple[np.ndarray, np.ndarray]:
        """:param root: the states after reset (depth 0, where discounting to the root changes nothing)
        :return: the simulator's bounds on their return-to-go (infinite when not reported, 0 at terminal states),
            shape (n,) each (deeper nodes get theirs in :func:`~sb3_dirpg.search.kernels.add_children`)"""
        n = len(root.obs)
        lower = np.full(n, -np.inf) if root.lower is None else np.asarray(root.lower, dtype=np.float64)
        upper = np.full(n, np.inf) if root.upper is None else np.asarray(root.upper, dtype=np.float64)
        terminal = np.asarray(root.terminal, dtype=bool)
        return np.where(terminal, 0.0, lower), np.where(terminal, 0.0, upper)

    def _settle_trajectories(self, state: SearchState, episodes: np.ndarray, leaves: np.ndarray, g: np.ndarray) -> None:
        """Settle the trajectories completed by this iteration's steps, in batch order.

        :param state: the search state
        :param episodes: the episodes, shape (m,)
        :param leaves: the terminal children their steps reached, shape (m,)
        :param g: the trajectories' Gumbels (those of the regions they were sampled from), shape (m,)
        """
        returns = state.tree.nodes.ret[leaves]
        d_values = g + self.config.epsilon * returns
        successes = state.tree.nodes.success[leaves]
        columns = (episodes, leaves, g, returns, d_values, successes)
        for e, leaf, g_i, ret, d, success in zip(*(column.tolist() for column in columns)):
            self._settle_trajectory(state, e, CompletedTrajectory(leaf, g_i, ret, d), success)

    # -- complete trajectories -------------------------------------------------------------------------------

    def _settle_trajectory(self, state: SearchState, e: int, trajectory: CompletedTrajectory, success: bool) -> None:
        """Count, check and record one complete trajectory of episode ``e``; take it as ``a_opt`` (the first one) or as
        a better ``a_dir``; end the episode's search when a stopping rule says so.

        :param state: the search state
        :param e: the episode
        :param trajectory: the trajectory
        :param success: whether it ended in success
        """
        cfg = self.config
        ep = state.outcomes[e]
        ep.trajectories += 1
        if state.check_bounds:
            self._record_bound_violation(state.tree, ep, trajectory.leaf)
        if cfg.record_trajectories:
            ep.recorded.append(trajectory)
        phase = state.progress.phase[e]
        improved = False
        if phase == OPT:
            self._set_opt(state, e, trajectory, success)
        elif phase == DIR and trajectory.d > state.progress.d_best[e]:
            self._improve_dir(state, e, trajectory, success)
            improved = True
        enough = cfg.max_trajectories is not None and ep.trajectories >= cfg.max_trajectories
        if phase == OPT:
            ends = cfg.stop.ends_at_opt(success)
        else:
            ends = phase == DIR and cfg.stop.ends_after_opt(improved, success, ep.success_opt)
        if enough or ends:
            state.progress.phase[e] = DONE

    def _set_opt(self, state: SearchState, e: int, trajectory: CompletedTrajectory, success: bool) -> None:
        """Take episode ``e``'s first trajectory as ``a_opt`` (and as ``a_dir`` until a better one) and start the
        ``a_dir`` search, re-queueing the open regions with its priority.

        :param state: the search state
        :param e: the episode
        :param trajectory: the trajectory
        :param success: whether it ended in success
        """
        cfg = self.config
        ep = state.outcomes[e]
        leaf, g, ret, d = trajectory.leaf, trajectory.g, trajectory.ret, trajectory.d
        ep.opt_leaf = ep.dir_leaf = leaf
        ep.reward_sum_opt = state.tree.undiscounted_return(leaf)
        ep.g_opt, ep.return_opt, ep.return_dir, ep.d_opt, ep.d_dir = g, ret, ret, d, d
        ep.success_opt = ep.success_dir = success
        state.progress.d_best[e] = d
        state.progress.phase[e] = DIR
        if cfg.priority != "gumbel" and not cfg.stop.ends_at_opt(success):
            self._reprioritise(state, e)
        state.progress.budget[e] = cfg.stop.budget_after_opt(cfg.budget, success)

    def _improve_dir(self, state: SearchState, e: int, trajectory: CompletedTrajectory, success: bool) -> None:
        """Take a trajectory with a larger ``D`` than the best so far as episode ``e``'s ``a_dir``.

        :param state: the search state
        :param e: the episode
        :param trajectory: the trajectory
        :param success: whether it ended in success
        """
        ep = state.outcomes[e]
        if ep.interactions_to_improvement is None:
            ep.interactions_to_improvement = int(state.progress.search_interactions[e])
        ep.dir_leaf, ep.return_dir, ep.d_dir, ep.success_dir = trajectory.leaf, trajectory.ret, trajectory.d, success
        state.progress.d_best[e] = trajectory.d

    def _record_bound_violation(self, tree: SearchTree, ep: EpisodeSearch, leaf: int) -> None:
        """Runtime admissibility check: compare the bound of every node on a complete trajectory with the return-to-go
        the trajectory realised from that node, and keep the largest violation in ``ep``.

        :param tree: the search tree
        :param ep: the episode's outcome
        :param leaf: the trajectory's last node
        """
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
        epsilon=1.0, budget=budget, priority="gumbel", prune=False, stop="budget", gamma=gamma, horizon=horizon,
        max_trajectories=k, record_trajectories=True,
    )  # fmt: skip
    result = TopDownSearch(simulator, policy_fn, config).run(seeds, rng)
    return [[(result.actions(t.leaf), t.g, t.ret) for t in ep.recorded] for ep in result.episodes]
