"""Statistical and exact-enumeration tests of the top-down search (Algorithms 1 and 2, appendices A and C).

Every statistical test uses a fixed seed and a family-wise false-alarm rate of 1e-3; where it makes sense the same
test is also run against a wrong target to show that it has the power to fail.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from scipy import stats

from sb3_dirpg.dirpg.update import update_steps
from sb3_dirpg.search import SearchConfig, TopDownSearch, gumbel_top_k, masked_log_softmax, truncated_gumbel
from tests.tabular import TabularMDP, log_prob_torch, tabular_policy

ALPHA = 1e-3
N_SAMPLES = 20_000


def masked_mdp(**kwargs) -> TabularMDP:
    """Three actions; action 2 is illegal in odd states and state 0 at t=2 has a forced move."""

    def mask_fn(t: int, s: int) -> np.ndarray:
        if t == 2 and s == 0:
            return np.array([True, False, False])
        return np.array([True, True, s % 2 == 0])

    return TabularMDP(n_states=3, n_actions=3, horizon=3, mask_fn=mask_fn, **kwargs)


def random_theta(mdp: TabularMDP, seed: int, scale: float = 0.7) -> np.ndarray:
    return np.random.default_rng(seed).normal(scale=scale, size=(mdp.n_obs, mdp.n_actions))


def trajectory_probs(mdp: TabularMDP, theta: np.ndarray, realisation: int = 0) -> dict[tuple[int, ...], float]:
    log_pi = masked_log_softmax(theta, mdp.mask_table())
    trajs = mdp.trajectories(realisation)
    return {acts: float(np.exp(sum(log_pi[o, a] for o, a in zip(obs, acts)))) for acts, obs, _ in trajs}


def run_search(mdp: TabularMDP, theta: np.ndarray, n: int, seed: int, **config) -> tuple:
    search = TopDownSearch(mdp, tabular_policy(theta), SearchConfig(**config))
    seeds = np.random.default_rng(seed + 1).integers(0, 2**31, size=n).tolist()
    return search.run(seeds, np.random.default_rng(seed))


def chi_square_pvalue(counts: dict, probs: dict, n: int) -> float:
    keys = sorted(probs)
    observed = np.array([counts.get(k, 0) for k in keys], dtype=float)
    expected = np.array([probs[k] * n for k in keys])
    assert sum(counts.values()) == n and set(counts) <= set(keys), "search produced an illegal trajectory"
    return stats.chisquare(observed, expected).pvalue


# -- top-down sampling --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("make_mdp", [lambda: TabularMDP(3, 3, 3, seed=4), masked_mdp], ids=["unmasked", "masked"])
def test_a_opt_is_a_sample_of_the_policy(make_mdp) -> None:
    mdp = make_mdp()
    theta = random_theta(mdp, seed=1)
    result = run_search(mdp, theta, N_SAMPLES, seed=2, budget=0)
    counts: dict = {}
    for ep in result.episodes:
        key = tuple(result.actions(ep.opt_leaf))
        counts[key] = counts.get(key, 0) + 1
    probs = trajectory_probs(mdp, theta)
    assert chi_square_pvalue(counts, probs, N_SAMPLES) > ALPHA
    # power: the same counts reject the uniform distribution over legal trajectories
    uniform = {k: 1.0 / len(probs) for k in probs}
    assert chi_square_pvalue(counts, uniform, N_SAMPLES) < ALPHA


def test_g_of_a_opt_is_standard_gumbel() -> None:
    mdp = masked_mdp()
    result = run_search(mdp, random_theta(mdp, seed=3), N_SAMPLES, seed=4, budget=0)
    g = np.array([ep.g_opt for ep in result.episodes])
    assert stats.kstest(g, "gumbel_r").pvalue > ALPHA
    assert stats.kstest(g, "gumbel_r", args=(0.1,)).pvalue < ALPHA  # power against a shifted location


def test_first_trajectory_after_exactly_t_interactions() -> None:
    mdp = TabularMDP(4, 5, horizon=7, n_realisations=3, seed=5)
    result = run_search(mdp, random_theta(mdp, seed=6), 500, seed=7, budget=0)
    assert mdp.steps == 500 * 7
    assert all(ep.length_opt == 7 and ep.interactions == 7 and ep.trajectories == 1 for ep in result.episodes)


def test_truncated_gumbel_is_stable_and_correct() -> None:
    rng = np.random.default_rng(0)
    # deep in a tree: location far below the truncation point, and both large in magnitude
    out = truncated_gumbel(rng, np.full(5, -800.0), np.full(5, 700.0))
    assert np.all(np.isfinite(out)) and np.all(out <= 700.0)
    # conditional distribution: P(Z <= z | Z <= b) = F(z)/F(b) for Z ~ Gumbel(mu)
    mu, b = 0.3, 0.5
    samples = truncated_gumbel(rng, np.full(N_SAMPLES, mu), np.full(N_SAMPLES, b))
    assert samples.max() <= b

    def cdf(z: np.ndarray) -> np.ndarray:
        return np.exp(-np.exp(-(np.minimum(z, b) - mu))) / np.exp(-np.exp(-(b - mu)))

    assert stats.kstest(samples, cdf).pvalue > ALPHA
    assert np.isneginf(truncated_gumbel(rng, np.array([-np.inf]), np.array([1.0]))).all()


def test_gumbel_top_k_is_sampling_without_replacement() -> None:
    mdp = TabularMDP(2, 2, horizon=2, seed=8)
    theta = random_theta(mdp, seed=9, scale=0.8)
    samples = gumbel_top_k(mdp, tabular_policy(theta), list(range(N_SAMPLES)), k=3, rng=np.random.default_rng(10))
    probs = trajectory_probs(mdp, theta)
    pair_counts: dict = {}
    for trajs in samples:
        acts = [tuple(a) for a, _, _ in trajs]
        gs = [g for _, g, _ in trajs]
        assert len(acts) == 3 and len(set(acts)) == 3, "top-K must return distinct trajectories"
        assert gs == sorted(gs, reverse=True), "top-K must come in descending G"
        pair_counts[acts[0], acts[1]] = pair_counts.get((acts[0], acts[1]), 0) + 1
    pair_probs = {(i, j): probs[i] * probs[j] / (1 - probs[i]) for i, j in itertools.permutations(probs, 2)}
    assert chi_square_pvalue(pair_counts, pair_probs, N_SAMPLES) > ALPHA
    # power: independent draws (with replacement, renormalised off the diagonal) are rejected
    with_replacement = {(i, j): probs[i] * probs[j] / (1 - sum(p * p for p in probs.values())) for i, j in pair_probs}
    assert chi_square_pvalue(pair_counts, with_replacement, N_SAMPLES) < ALPHA


# -- exact gradient (appendix A) ----------------------------------------------------------------------------------


def exact_objective_gradient(mdp: TabularMDP, theta: np.ndarray, epsilon: float | None) -> np.ndarray:
    """∇l(θ,ε) by enumeration and autograd; ``epsilon=None`` gives ∇E[R]."""
    theta_t = torch.tensor(theta, requires_grad=True)
    mask_t = torch.tensor(mdp.mask_table())
    total = 0.0
    for k in range(mdp.n_realisations):
        trajs = mdp.trajectories(k)
        logp = torch.stack([log_prob_torch(theta_t, mask_t, obs, acts) for acts, obs, _ in trajs])
        ret = torch.tensor([r for _, _, r in trajs], dtype=torch.float64)
        if epsilon is None:
            total = total + (logp.exp() * ret).sum()
        else:
            total = total + torch.logsumexp(logp + epsilon * ret, dim=0) / epsilon
    (total / mdp.n_realisations).backward()
    return theta_t.grad.numpy().ravel()


def dirpg_updates(mdp: TabularMDP, theta: np.ndarray, epsilon: float, n: int, seed: int, **config) -> np.ndarray:
    """Per-episode DirPG updates (1/ε)[∇log P(a_dir) − ∇log P(a_opt)], shape (n, n_obs * n_actions)."""
    result = run_search(mdp, theta, n, seed, epsilon=epsilon, **config)
    steps = update_steps(result)
    pi = np.exp(masked_log_softmax(theta, mdp.mask_table()))
    obs = np.asarray(steps.obs, dtype=np.int64)
    score = -pi[obs] * mdp.mask_table()[obs]
    score[np.arange(len(obs)), steps.actions] += 1.0
    updates = np.zeros((n, mdp.n_obs, mdp.n_actions))
    np.add.at(updates, (steps.episodes, obs), (steps.signs / epsilon)[:, None] * score)
    return updates.reshape(n, -1), result


def max_abs_z(samples: np.ndarray, target: np.ndarray) -> tuple[float, float]:
    """Largest |z| of the sample mean against ``target`` over coordinates, and the Bonferroni threshold."""
    mean = samples.mean(axis=0)
    se = samples.std(axis=0, ddof=1) / np.sqrt(len(samples))
    fixed = se == 0
    assert np.allclose(mean[fixed], target[fixed], atol=1e-9), "a coordinate with no variance disagrees with the target"
    z = np.abs(mean[~fixed] - target[~fixed]) / se[~fixed]
    return float(z.max()), float(stats.norm.isf(ALPHA / (2 * max(1, (~fixed).sum()))))


STOCHASTIC = dict(n_states=3, n_actions=2, horizon=3, n_realisations=3, seed=11)


@pytest.mark.parametrize("epsilon", [1.0, -1.0, 0.1])
@pytest.mark.parametrize("mdp_kind", ["stochastic", "masked"])
def test_mean_update_equals_exact_gradient(mdp_kind: str, epsilon: float) -> None:
    mdp = TabularMDP(**STOCHASTIC) if mdp_kind == "stochastic" else masked_mdp(n_realisations=2, seed=12)
    theta = random_theta(mdp, seed=13)
    updates, _ = dirpg_updates(mdp, theta, epsilon, N_SAMPLES, seed=14, budget=10**9, stop="budget", prune=False)
    z, threshold = max_abs_z(updates, exact_objective_gradient(mdp, theta, epsilon))
    assert z < threshold
    if epsilon == 1.0:  # power: at ε = 1 the update is measurably not the plain policy gradient
        z_wrong, _ = max_abs_z(updates, exact_objective_gradient(mdp, theta, None))
        assert z_wrong > threshold


@pytest.mark.parametrize("depth_first", [False, True], ids=["best-first", "depth-first"])
@pytest.mark.parametrize("epsilon", [1.0, -1.0])
def test_pruned_astar_search_keeps_the_exact_gradient(epsilon: float, depth_first: bool) -> None:
    """A* priority with admissible bounds and pruning still finds argmax D, so the mean update is unchanged; so does
    the depth-first order, which only changes the order in which regions are expanded."""
    mdp = TabularMDP(**STOCHASTIC, bounds=True)
    theta = random_theta(mdp, seed=13)
    config = dict(budget=10**9, stop="budget", prune=True, priority="astar", alpha=0.5, depth_first=depth_first)
    updates, result = dirpg_updates(mdp, theta, epsilon, N_SAMPLES, seed=15, **config)
    z, threshold = max_abs_z(updates, exact_objective_gradient(mdp, theta, epsilon))
    assert z < threshold
    assert sum(ep.pruned for ep in result.episodes) > 0
    n_trajectories = len(mdp.trajectories(0))
    assert np.mean([ep.trajectories for ep in result.episodes]) < n_trajectories  # pruning skipped work


def test_small_epsilon_approaches_policy_gradient() -> None:
    mdp = TabularMDP(**STOCHASTIC)
    theta = random_theta(mdp, seed=13)
    pg = exact_objective_gradient(mdp, theta, None)
    errors = [np.abs(exact_objective_gradient(mdp, theta, eps) - pg).max() for eps in (1.0, 0.1, 0.01)]
    assert errors[0] > errors[1] > errors[2] and errors[2] < 0.02 * np.abs(pg).max()


# -- approximate search (appendix C) ------------------------------------------------------------------------------


def test_early_stop_search_converges_to_best_arm() -> None:
    n_arms = 8
    mdp = TabularMDP(n_states=1, n_actions=n_arms, horizon=1, seed=16)
    mdp.reward[0, 0, 0] = np.random.default_rng(17).permutation(n_arms) / n_arms
    best = int(mdp.reward[0, 0, 0].argmax())
    theta = np.zeros((mdp.n_obs, n_arms))
    search = TopDownSearch(mdp, tabular_policy(theta), SearchConfig(epsilon=1.0, budget=10**9, stop="improvement"))
    rng = np.random.default_rng(18)
    for _ in range(400):
        result = search.run(list(range(32)), rng)
        steps = update_steps(result)
        pi = np.exp(masked_log_softmax(theta[:1], np.ones((1, n_arms), bool)))[0]
        grad = np.zeros(n_arms)
        for a, sign in zip(steps.actions, steps.signs):
            grad += sign * (np.eye(n_arms)[a] - pi)
        theta[0] += 1.0 * grad / 32
    pi = np.exp(masked_log_softmax(theta[:1], np.ones((1, n_arms), bool)))[0]
    assert pi[best] > 0.9, pi


def test_search_validates_config() -> None:
    for bad in (dict(epsilon=0.0), dict(budget=-1), dict(priority="bfs"), dict(alpha=1.5), dict(gamma=0.0)):
        with pytest.raises(ValueError):
            SearchConfig(**bad)


def test_all_false_mask_raises() -> None:
    mdp = TabularMDP(2, 2, horizon=3, mask_fn=lambda t, s: np.array([t < 1, False]))
    with pytest.raises(ValueError, match="all-false action mask"):
        run_search(mdp, random_theta(mdp, seed=0), 4, seed=0, budget=0)


def test_outcome_of_an_episode_does_not_depend_on_its_batch() -> None:
    """Each episode draws from its own generator: searching it alone or in a batch gives the same a_opt and a_dir."""
    mdp = TabularMDP(**STOCHASTIC)
    theta = random_theta(mdp, seed=21)
    config = SearchConfig(epsilon=1.0, budget=6, stop="improvement")
    seeds = [5, 6, 7, 8]
    streams = np.random.default_rng(22).spawn(len(seeds))
    together = TopDownSearch(mdp, tabular_policy(theta), config).run(
        seeds, [np.random.default_rng(s.bit_generator.seed_seq) for s in streams]
    )
    for i, seed in enumerate(seeds):
        alone = TopDownSearch(mdp, tabular_policy(theta), config).run(
            [seed], [np.random.default_rng(streams[i].bit_generator.seed_seq)]
        )
        a, b = together.episodes[i], alone.episodes[0]
        assert together.actions(a.opt_leaf) == alone.actions(b.opt_leaf)
        assert together.actions(a.dir_leaf) == alone.actions(b.dir_leaf)
        assert (a.g_opt, a.d_dir, a.interactions) == (b.g_opt, b.d_dir, b.interactions)


# -- depth-first order and stop on success ------------------------------------------------------------------------

WIDE = dict(n_states=4, n_actions=3, horizon=6, n_realisations=4, seed=31)


def unfinished_nodes(result) -> list[int]:
    """Per episode: the nodes that lie on no completed trajectory (prefixes the search left half-explored)."""
    tree, out = result.tree, []
    for e, ep in enumerate(result.episodes):
        on_paths = {node for t in ep.recorded for node in tree.path(t.leaf)}
        nodes = np.flatnonzero(tree.nodes.episode[: tree.nodes.size] == e)
        out.append(sum(int(n) not in on_paths for n in nodes))
    return out


def test_depth_first_leaves_at_most_one_trajectory_unfinished() -> None:
    """Depth-first, every region popped from the queue is followed to a leaf: when the budget runs out at most one
    chain (fewer than T nodes) is unfinished. The best-first A* order leaves many prefixes half-explored."""
    mdp = TabularMDP(**WIDE, bounds=True)
    theta = random_theta(mdp, seed=32)
    common = dict(budget=40, stop="budget", prune=False, priority="astar", alpha=1.0, record_trajectories=True)
    depth = run_search(mdp, theta, 64, seed=33, depth_first=True, **common)
    best = run_search(mdp, theta, 64, seed=33, depth_first=False, **common)
    assert max(unfinished_nodes(depth)) < mdp.horizon
    assert max(unfinished_nodes(best)) >= mdp.horizon
    assert np.mean([ep.trajectories for ep in depth.episodes]) > np.mean([ep.trajectories for ep in best.episodes])
    for a, b in zip(depth.episodes, best.episodes):  # a_opt does not depend on the order of the a_dir search
        assert depth.actions(a.opt_leaf) == best.actions(b.opt_leaf) and a.g_opt == b.g_opt


def test_depth_first_search_keeps_the_exact_gradient_without_pruning() -> None:
    mdp = TabularMDP(**STOCHASTIC)
    theta = random_theta(mdp, seed=13)
    config = dict(budget=10**9, stop="budget", prune=False, priority="gumbel", depth_first=True)
    updates, _ = dirpg_updates(mdp, theta, 1.0, N_SAMPLES, seed=34, **config)
    z, threshold = max_abs_z(updates, exact_objective_gradient(mdp, theta, 1.0))
    assert z < threshold


@pytest.mark.parametrize("depth_first", [False, True], ids=["best-first", "depth-first"])
def test_stop_on_success_ends_the_search_at_the_first_success(depth_first: bool) -> None:
    """No trajectory is completed after a successful one, an a_opt that succeeds ends the search after T interactions,
    and the budget left is not counted; without the flag the same searches go on past their first success."""
    mdp = TabularMDP(**WIDE, bounds=True, success_states={0})
    theta = random_theta(mdp, seed=35)
    common = dict(budget=200, stop="budget", prune=False, priority="astar", alpha=0.5, gamma=0.99,
                  record_trajectories=True, depth_first=depth_first)  # fmt: skip
    stopped = run_search(mdp, theta, 200, seed=36, **{**common, "stop": "success"})
    full = run_search(mdp, theta, 200, seed=36, **common)
    successes = [[bool(stopped.tree.nodes.success[t.leaf]) for t in ep.recorded] for ep in stopped.episodes]
    assert all(not any(flags[:-1]) for flags in successes)
    opt_succeeded = [ep for ep in stopped.episodes if ep.success_opt]
    assert 0 < len(opt_succeeded) < len(stopped.episodes)
    assert all(ep.trajectories == 1 and ep.interactions == mdp.horizon and not ep.improved for ep in opt_succeeded)
    found_later = [ep for ep, flags in zip(stopped.episodes, successes) if flags[-1] and not ep.success_opt]
    assert found_later and all(ep.interactions < mdp.horizon + 200 for ep in found_later)
    assert sum(ep.interactions for ep in stopped.episodes) < sum(ep.interactions for ep in full.episodes)
    full_successes = [sum(bool(full.tree.nodes.success[t.leaf]) for t in ep.recorded) for ep in full.episodes]
    assert max(full_successes) > 1
