"""A naive reference implementation of the DirPG search, for benchmarks and cross-checks only.

It runs Algorithms 1 and 2 one episode at a time the way the authors' code does: a Python object per node, a
``copy.deepcopy`` of the env at every expansion, and one policy call on a batch of one per expansion. It draws its
random numbers in the same order as :class:`sb3_dirpg.search.TopDownSearch` (per episode: one exponential for the root
Gumbel, then blocks of :data:`~sb3_dirpg.search.state.NOISE_BLOCK` uniforms and as many exponentials, one of each per
expansion), so for the same seeds and generators both give the same ``a_opt`` and ``a_dir``.
"""

from __future__ import annotations

import copy
import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from sb3_dirpg.dirpg import DirPG
from sb3_dirpg.dirpg.update import UpdateSteps, update_steps
from sb3_dirpg.search import EpisodeSearch, SearchConfig, masked_log_softmax, masked_logsumexp, truncate_gumbel
from sb3_dirpg.search.state import NOISE_BLOCK
from sb3_dirpg.simulator import strip_monitor


@dataclass
class _Node:
    env: gym.Env | None
    obs: Any
    legal: np.ndarray
    parent: _Node | None = None
    action: int = -1
    reward: float = 0.0
    depth: int = 0
    log_p: float = 0.0
    ret: float = 0.0
    lower: float = -np.inf
    upper: float = np.inf
    log_pi: np.ndarray | None = None
    children: list = field(default_factory=list)

    def path(self) -> list[_Node]:
        nodes, node = [], self
        while node is not None:
            nodes.append(node)
            node = node.parent
        return nodes[::-1]


class _NodeIndex:
    """Maps leaf ids to nodes (duck-types the parts of ``SearchTree`` that DirPG's logging uses)."""

    def __init__(self) -> None:
        self.nodes: list[_Node] = []

    def add(self, node: _Node) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1

    def undiscounted_return(self, leaf: int) -> float:
        return float(sum(n.reward for n in self.nodes[leaf].path()))


@dataclass
class NaiveSearchResult:
    """Same interface as :class:`sb3_dirpg.search.SearchResult` where DirPG uses it."""

    tree: _NodeIndex
    episodes: list[EpisodeSearch]
    stopped: bool = False

    def actions(self, leaf: int) -> list[int]:
        return [n.action for n in self.tree.nodes[leaf].path()[1:]]


@update_steps.register(NaiveSearchResult)
def naive_update_steps(result: NaiveSearchResult) -> UpdateSteps:
    """The update steps of the naive search, built from its node objects (what DirPG's update gets from it)."""
    obs, masks, acts, signs, eps = [], [], [], [], []
    for index, ep in enumerate(result.episodes):
        if not ep.improved:
            continue
        path_opt, path_dir = result.tree.nodes[ep.opt_leaf].path(), result.tree.nodes[ep.dir_leaf].path()
        common = 0
        while common < min(len(path_opt), len(path_dir)) and path_opt[common] is path_dir[common]:
            common += 1
        for path, sign in ((path_dir, 1.0), (path_opt, -1.0)):
            for i in range(common - 1, len(path) - 1):
                obs.append(path[i].obs)
                masks.append(path[i].legal)
                acts.append(path[i + 1].action)
                signs.append(sign)
                eps.append(index)
    n_actions = len(result.tree.nodes[0].legal) if result.tree.nodes else 0
    return UpdateSteps(
        obs=obs, masks=np.asarray(masks, dtype=bool).reshape(-1, n_actions), actions=np.asarray(acts, dtype=np.int64),
        signs=np.asarray(signs), episodes=np.asarray(eps, dtype=np.int64),
    )  # fmt: skip


def _legal(env: gym.Env, n_actions: int) -> np.ndarray:
    try:
        return np.asarray(env.get_wrapper_attr("action_masks")(), dtype=bool)
    except AttributeError:
        return np.ones(n_actions, dtype=bool)


def naive_search(
    env: gym.Env,
    policy_fn: Callable[[list[Any], np.ndarray], np.ndarray],
    seeds: Sequence[int],
    rngs: Sequence[np.random.Generator],
    config: SearchConfig,
    heuristic: Callable[[gym.Env], Any] | None = None,
) -> NaiveSearchResult:
    """Search ``a_opt`` and ``a_dir`` for each seed, one episode after the other.

    :param env: the env (a Monitor layer is bypassed); it is deep-copied, never stepped itself
    :param policy_fn: observations and masks to logits (called on one observation at a time)
    :param seeds: episode seeds
    :param rngs: one generator per episode
    :param config: the search settings
    :param heuristic: ``heuristic(env) -> upper`` or ``(lower, upper)``, or None
    :return: the per-episode outcomes
    """
    index = _NodeIndex()
    episodes = [_search_episode(strip_monitor(env), policy_fn, s, r, config, heuristic, index) for s, r in zip(seeds, rngs)]
    return NaiveSearchResult(tree=index, episodes=episodes)


def naive_split(
    log_pi: np.ndarray, legal: np.ndarray, log_p: float, g: float, u: float, exponential: float
) -> tuple[int, np.ndarray, float]:
    """Split one region with numpy's array functions, one region at a time.

    :param log_pi: the policy's log-probabilities at the region's node, shape (A,)
    :param legal: the region's legal actions, bool, shape (A,)
    :param log_p: the log-probability of the node's prefix
    :param g: the region's Gumbel
    :param u: a uniform in [0, 1)
    :param exponential: a standard exponential
    :return: the sampled action, the rest's legal actions and the rest's Gumbel
    """
    probs = np.where(legal[None], np.exp(log_pi[None]), 0.0)
    cum = np.cumsum(probs, axis=1)
    total = cum[:, -1]
    action = int(np.where(total > 0, (cum > (u * total)[:, None]).argmax(axis=1), legal[None].argmax(axis=1))[0])
    rest = legal.copy()
    rest[action] = False
    mu = log_p + masked_logsumexp(log_pi[None], rest[None])
    return action, rest, float(truncate_gumbel(mu - np.log(np.array([exponential])), np.array([g]))[0])


def _bounds(env: gym.Env, heuristic: Callable[[gym.Env], Any] | None) -> tuple[float, float]:
    if heuristic is None:
        return -np.inf, np.inf
    value = heuristic(env)
    return (float(value[0]), float(value[1])) if isinstance(value, tuple) else (-np.inf, float(value))


def _search_episode(
    env: gym.Env,
    policy_fn: Callable[[list[Any], np.ndarray], np.ndarray],
    seed: int,
    rng: np.random.Generator,
    cfg: SearchConfig,
    heuristic: Callable[[gym.Env], Any] | None,
    index: _NodeIndex,
) -> EpisodeSearch:
    n_actions = int(env.action_space.n)
    root_env = copy.deepcopy(env)
    obs, _ = root_env.reset(seed=int(seed))
    lower, upper = _bounds(root_env, heuristic)
    root = _Node(env=root_env, obs=obs, legal=_legal(root_env, n_actions), lower=lower, upper=upper)
    index.add(root)
    result = EpisodeSearch(seed=int(seed))
    eps = cfg.epsilon

    def bound(node: _Node, g: float) -> float:
        return g + eps * (node.ret + (node.upper if eps > 0 else node.lower))

    def priority(node: _Node, g: float, searching_dir: bool) -> float:
        if not searching_dir or cfg.priority == "gumbel":
            return g
        prio = g + eps * node.ret
        if cfg.alpha > 0:
            prio = prio + eps * cfg.alpha * (node.upper if eps > 0 else node.lower)
        return prio

    counter = 0
    heap: list = []

    def push(node: _Node, legal: np.ndarray, g: float, searching_dir: bool, d_best: float) -> None:
        nonlocal counter
        b = bound(node, g)
        if searching_dir and cfg.prune and b <= d_best:
            result.pruned += 1
            return
        heapq.heappush(heap, (-priority(node, g, searching_dir), b, counter, node, legal, g))
        counter += 1

    g_root = -np.log(rng.standard_exponential())
    push(root, root.legal, float(g_root), False, -np.inf)
    searching_dir, d_best, search_interactions, expansions = False, -np.inf, 0, 0
    while heap:
        _, b, _, node, legal, g = heapq.heappop(heap)
        if searching_dir and cfg.prune and b <= d_best:
            result.pruned += 1
            continue
        if node.log_pi is None:  # one unbatched policy call per expanded node
            node.log_pi = masked_log_softmax(
                np.asarray(policy_fn([node.obs], node.legal[None]), np.float64), node.legal[None]
            )[0]
        if expansions % NOISE_BLOCK == 0:
            uniforms, exponentials = rng.random(NOISE_BLOCK), rng.standard_exponential(NOISE_BLOCK)
        u, exponential = uniforms[expansions % NOISE_BLOCK], exponentials[expansions % NOISE_BLOCK]
        expansions += 1
        action, rest, g_rest = naive_split(node.log_pi, legal, node.log_p, g, u, exponential)

        child_env = copy.deepcopy(node.env)  # the reference code copies the whole env at every expansion
        obs, reward, terminated, truncated, _ = child_env.step(action)
        depth = node.depth + 1
        terminal = bool(terminated or truncated) or (cfg.horizon is not None and depth >= cfg.horizon)
        lower, upper = (0.0, 0.0) if terminal else _bounds(child_env, heuristic)
        discount = cfg.gamma**depth
        legal_next = np.ones(n_actions, bool) if terminal else _legal(child_env, n_actions)
        child = _Node(
            env=None if terminal else child_env, obs=obs, legal=legal_next, parent=node, action=action,
            reward=float(reward), depth=depth, log_p=node.log_p + float(node.log_pi[action]),
            ret=node.ret + cfg.gamma**node.depth * float(reward), lower=discount * lower, upper=discount * upper,
        )  # fmt: skip
        leaf = index.add(child)
        if searching_dir:
            search_interactions += 1
        else:
            result.length_opt += 1
        if rest.any():
            push(node, rest, g_rest, searching_dir, d_best)
        if not terminal:
            push(child, child.legal, g, searching_dir, d_best)
        else:
            d = g + eps * child.ret
            result.trajectories += 1
            if not searching_dir:
                result.opt_leaf = result.dir_leaf = leaf
                result.reward_sum_opt = index.undiscounted_return(leaf)
                result.g_opt, result.return_opt, result.return_dir, result.d_opt, result.d_dir = g, child.ret, child.ret, d, d
                d_best, searching_dir = d, True
                if cfg.priority != "gumbel":
                    entries, heap = heap, []
                    for entry in sorted(entries, key=lambda e: e[2]):
                        push(entry[3], entry[4], entry[5], True, d_best)
            elif d > d_best:
                if result.interactions_to_improvement is None:
                    result.interactions_to_improvement = search_interactions
                result.dir_leaf, result.return_dir, result.d_dir, d_best = leaf, child.ret, d, d
                if cfg.stop.ends_after_opt(improved=True, success=False, success_opt=False):
                    break
        if searching_dir and search_interactions >= cfg.budget:
            break
    result.interactions = result.length_opt + search_interactions
    return result


class NaiveDirPG(DirPG):
    """DirPG whose search is the naive reference (same update, logging and learn loop), for throughput comparisons."""

    def search(
        self,
        seeds: list[int],
        config: SearchConfig | None = None,
        callback: BaseCallback | None = None,
        rng: np.random.Generator | list[np.random.Generator] | None = None,
    ) -> NaiveSearchResult:
        """:param seeds: episode seeds
        :param config: search settings (default: the model's)
        :param callback: called once per search (after it), or None
        :param rng: one generator per episode, or one to spawn them from (default: the model's)
        :return: the search result"""
        rng = self._search_rng if rng is None else rng
        rngs = rng.spawn(len(seeds)) if isinstance(rng, np.random.Generator) else list(rng)
        env = self.get_env().unwrapped.envs[0]
        result = naive_search(env, self.policy_logits, seeds, rngs, config or self.search_config(), self.heuristic)
        if callback is not None:
            result.stopped = self._iteration_hook(callback)(sum(ep.interactions for ep in result.episodes)) is False
        return result
