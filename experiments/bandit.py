"""Spanning-tree combinatorial bandit (DirPG paper, section 6, Fig. 3a-b): DirPG against semi- and full-bandit UCB.

DirPG uses the paper's parametrisation: the observation of ``sb3_dirpg/SpanningTreeBandit-v0`` is the one-hot of the
decision index, so a linear policy (``net_arch=[]``) gives each edge its own include-logit ``θ_e`` (plus a shared
bias), i.e. ``P(include e) = σ(θ_e)`` where both actions are legal. The search uses priority ``G`` (``"gumbel"``),
a budget of 100 interactions and early stopping, as in the paper.

Interaction accounting. UCB queries a whole tree per round and sees one reward: one interaction per round (the
paper's convention, and ``UCB.num_timesteps``). DirPG steps the simulator one edge decision at a time and also spends
search interactions, all under the same reward realisation. Two x-axes are reported:

* **tree queries** (main panel): complete trees whose reward was observed — one per UCB round; for DirPG every
  complete trajectory of the search (``a_opt`` and the candidates for ``a_dir``). This is the bandit's own unit.
* **environment steps**: every simulator step, i.e. DirPG's ``num_timesteps``; a UCB round is counted as the ``|E|``
  include/exclude steps it takes through the same env.

Returns are the realised tree rewards of ``a_opt`` (an on-policy sample, as in the paper) and of the UCB rounds,
smoothed by a moving average and interpolated onto a common grid; bands are 95% intervals over runs.

    python -m experiments.bandit             # 10 runs of 10,000 tree queries, about 5 minutes
    python -m experiments.bandit --full      # 100,000 tree queries per run
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback

from experiments.common import (
    experiment_parser,
    mean_and_spread,
    nonnegative_int,
    plot_band,
    positive_int,
    save_results,
    setup_run,
)
from sb3_dirpg import DirPG
from sb3_dirpg.baselines import UCB

NAME = "bandit"
ENV_ID = "sb3_dirpg/SpanningTreeBandit-v0"


class SearchLog(BaseCallback):
    """Keep one record per searched episode (in the order searched) in ``episodes``."""

    def __init__(self) -> None:
        super().__init__()
        self.episodes: list[dict[str, Any]] = []

    def _on_step(self) -> bool:
        """:return: True (never stops training)"""
        return True

    def _on_rollout_end(self) -> None:
        """Record each episode of the batch that DirPG hands its callbacks in ``locals["search"]``."""
        for ep in self.locals["search"]:
            if ep.opt_leaf < 0:
                continue
            self.episodes.append(
                {
                    "return_opt": float(ep.reward_sum_opt),
                    "interactions": int(ep.interactions),
                    "search_interactions": int(ep.interactions - ep.length_opt),
                    "trajectories": int(ep.trajectories),
                    "improved": bool(ep.improved),
                    "interactions_to_improvement": ep.interactions_to_improvement,
                }
            )


class RoundRewards(BaseCallback):
    """Collect the reward of every UCB round."""

    def __init__(self) -> None:
        super().__init__()
        self.rewards: list[float] = []

    def _on_step(self) -> bool:
        """:return: True (never stops training)"""
        self.rewards.append(float(self.locals["reward"]))
        return True


def moving_average(values: Sequence[float], window: int) -> np.ndarray:
    """Trailing moving average (shorter windows at the start).

    :param values: the series
    :param window: window length
    :return: the smoothed series, same length
    """
    values = np.asarray(values, dtype=np.float64)
    cumsum = np.concatenate([[0.0], np.cumsum(values)])
    idx = np.arange(1, len(values) + 1)
    start = np.maximum(0, idx - window)
    return (cumsum[idx] - cumsum[start]) / (idx - start)


def on_grid(x: np.ndarray, y: np.ndarray, grid: np.ndarray) -> list[float]:
    """Step interpolation of ``y(x)`` (last value at or before each grid point).

    :param x: increasing x values
    :param y: the values
    :param grid: where to evaluate
    :return: ``y`` on the grid (the first value before ``x[0]``, nan after ``x[-1]``: no extrapolation)
    """
    k = np.searchsorted(x, grid, side="right") - 1
    values = y[np.clip(k, 0, len(y) - 1)].astype(np.float64)
    values[grid > x[-1]] = np.nan
    return values.tolist()


def nan_to_none(stats: dict[str, list[float]]) -> dict[str, list[float | None]]:
    """:param stats: lists of floats
    :return: the same with nan replaced by None (valid JSON)"""
    return {key: [None if np.isnan(v) else v for v in values] for key, values in stats.items()}


def run_dirpg(env_kwargs: dict[str, Any], seed: int, queries: int, lr: float, budget: int) -> dict[str, np.ndarray]:
    """Train DirPG until it has made ``queries`` tree queries.

    :param env_kwargs: keyword arguments of the bandit env
    :param seed: seed of the run
    :param queries: tree queries (complete trajectories) to train for
    :param lr: Adam learning rate
    :param budget: search budget per episode
    :return: per episode: cumulative ``queries`` and ``steps``, ``return``, ``search_interactions``,
        ``interactions_to_improvement`` (nan when not improved)
    """
    env = gym.make(ENV_ID, **env_kwargs)
    search_log = SearchLog()
    model = DirPG(
        "MlpPolicy", env, learning_rate=lr, epsilon=1.0, search_budget=budget, priority="gumbel", stop="improvement",
        max_episode_steps=env.unwrapped.horizon, policy_kwargs=dict(net_arch=[]), seed=seed, device="cpu",
    )  # fmt: skip
    done = 0
    while done < queries:
        per_query = model.num_timesteps / done if done else env.unwrapped.horizon
        first = model.num_timesteps == 0
        model.learn(max(1, int((queries - done) * per_query)), callback=search_log, reset_num_timesteps=first)
        done = sum(e["trajectories"] for e in search_log.episodes)
    log = search_log.episodes
    itoi = [np.nan if e["interactions_to_improvement"] is None else e["interactions_to_improvement"] for e in log]
    return {
        "queries": np.cumsum([e["trajectories"] for e in log]),
        "steps": np.cumsum([e["interactions"] for e in log]),
        "return": np.array([e["return_opt"] for e in log]),
        "search_interactions": np.array([e["search_interactions"] for e in log], dtype=np.float64),
        "interactions_to_improvement": np.array(itoi, dtype=np.float64),
    }


def run_ucb(env_kwargs: dict[str, Any], seed: int, rounds: int, feedback: str) -> np.ndarray:
    """Run UCB for ``rounds`` rounds.

    :param env_kwargs: keyword arguments of the bandit env
    :param seed: seed of the run
    :param rounds: rounds (one tree query each)
    :param feedback: ``"semi"`` or ``"full"``
    :return: the reward of every round
    """
    callback = RoundRewards()
    UCB("TreePolicy", gym.make(ENV_ID, **env_kwargs), feedback=feedback, seed=seed).learn(rounds, callback=callback)
    return np.asarray(callback.rewards)


def main(argv: Sequence[str] | None = None) -> dict:
    """Run DirPG and both UCB variants for several seeds, plot and save.

    :param argv: command line (default: ``sys.argv[1:]``)
    :return: the results written to JSON
    """
    parser = experiment_parser(__doc__)
    parser.add_argument("--queries", type=positive_int, default=None,
                        help="tree queries per run (default 10000, --full 100000)")
    parser.add_argument("--nodes", type=positive_int, default=6, help="nodes of the random graph (the env's default)")
    parser.add_argument("--edge-prob", type=float, default=0.5, help="edge probability of the random graph")
    parser.add_argument("--name", default=NAME, help="base name of the JSON and PNG files")
    parser.add_argument("--graph-seed", type=nonnegative_int, default=0, help="seed of the graph and of the edge means mu")
    parser.add_argument("--lr", type=float, default=0.05, help="DirPG Adam learning rate")
    parser.add_argument("--budget", type=positive_int, default=100, help="DirPG search budget per episode")
    parser.add_argument("--window", type=positive_int, default=None,
                        help="moving-average window in episodes (default: 2%% of the run)")
    args = parser.parse_args(argv)
    started = setup_run(args)
    n_seeds = args.seeds or 10
    queries = args.queries or (100_000 if args.full else 10_000)
    env_kwargs = dict(n_nodes=args.nodes, edge_prob=args.edge_prob, graph_seed=args.graph_seed)
    bandit = gym.make(ENV_ID, **env_kwargs).unwrapped
    n_edges = bandit.n_edges
    best = float(bandit.mu[bandit.max_spanning_tree()].sum())
    mean_uniform_edge = float(bandit.mu.mean() * (bandit.n_nodes - 1))

    grid_q = np.linspace(0, queries, 101)[1:]
    curves: dict[str, dict[str, list[list[float]]]] = {"DirPG": {}, "UCB semi-bandit": {}, "UCB full-bandit": {}}
    for key in curves:
        curves[key] = {"queries": [], "steps": []}
    search_q: list[list[float]] = []
    search_spent: list[list[float]] = []
    finals: dict[str, list[float]] = {key: [] for key in curves}
    dirpg_runs = []
    for seed in range(n_seeds):
        th.manual_seed(seed)
        dirpg_runs.append(run_dirpg(env_kwargs, seed, queries, args.lr, args.budget))
        print(f"DirPG run {seed}: {len(dirpg_runs[-1]['return'])} episodes, {dirpg_runs[-1]['steps'][-1]} steps", flush=True)
    max_steps = max(int(r["steps"][-1]) for r in dirpg_runs)
    grid_s = np.linspace(0, max_steps, 101)[1:]
    n_episodes = min(len(r["return"]) for r in dirpg_runs)
    grid_e = np.linspace(1, n_episodes, 100).astype(int) - 1
    for run in dirpg_runs:
        window = args.window or max(10, len(run["return"]) // 50)
        smooth = moving_average(run["return"], window)
        curves["DirPG"]["queries"].append(on_grid(run["queries"], smooth, grid_q))
        curves["DirPG"]["steps"].append(on_grid(run["steps"], smooth, grid_s))
        finals["DirPG"].append(float(run["return"][-len(run["return"]) // 10 :].mean()))
        improvement = run["interactions_to_improvement"]
        filled = np.where(np.isnan(improvement), 0.0, improvement)
        counts = moving_average(~np.isnan(improvement), window)
        sums = moving_average(filled, window)
        search_q.append((sums / np.maximum(counts, 1e-12))[grid_e].tolist())
        search_spent.append(moving_average(run["search_interactions"], window)[grid_e].tolist())
    ucb_rounds = queries
    for feedback, key in (("semi", "UCB semi-bandit"), ("full", "UCB full-bandit")):
        for seed in range(n_seeds):
            rewards = run_ucb(env_kwargs, seed, ucb_rounds, feedback)
            window = args.window or max(10, queries // 50)
            smooth = moving_average(rewards, window)
            rounds = np.arange(1, len(rewards) + 1)
            curves[key]["queries"].append(on_grid(rounds, smooth, grid_q))
            curves[key]["steps"].append(on_grid(rounds * n_edges, smooth, grid_s))
            finals[key].append(float(rewards[queries - queries // 10 : queries].mean()))
        print(f"{key}: mean return over the last 10% = {np.mean(finals[key]):.3f}", flush=True)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
    stats: dict[str, Any] = {}
    for (key, c), color in zip(curves.items(), ("C0", "C1", "C2")):
        stats[key] = {axis: mean_and_spread(c[axis]) for axis in ("queries", "steps")}
        plot_band(axes[0], grid_q, stats[key]["queries"], key, color=color)
        plot_band(axes[1], grid_s, stats[key]["steps"], key, color=color)
        stats[key] = {axis: nan_to_none(value) for axis, value in stats[key].items()}
    for ax, xlabel in ((axes[0], "tree queries (UCB rounds, DirPG trajectories)"),
                       (axes[1], "environment steps (UCB: |E| per round)")):  # fmt: skip
        ax.axhline(best, color="k", ls=":", lw=1, label="best tree (expected)")
        ax.set(xlabel=xlabel, ylabel="average return (moving avg.)")
        ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 0))
        ax.legend(fontsize=7)
    axes[0].set_title(f"spanning-tree bandit, {bandit.n_nodes} nodes, {n_edges} edges, {n_seeds} runs")
    episodes_axis = (grid_e + 1).tolist()
    stats["search_to_improvement"] = mean_and_spread(search_q)
    stats["search_spent"] = mean_and_spread(search_spent)
    plot_band(axes[2], episodes_axis, stats["search_to_improvement"], "interactions to find a_dir (improved episodes)")
    plot_band(axes[2], episodes_axis, stats["search_spent"], "search interactions spent (all episodes)")
    axes[2].set(xlabel="DirPG episode", ylabel="search interactions", title="search effort of DirPG")
    axes[2].legend(fontsize=7)
    fig.tight_layout()

    data = {
        "experiment": NAME,
        "scale": "full" if args.full else "default",
        "env": ENV_ID,
        "env_kwargs": env_kwargs,
        "n_edges": n_edges,
        "best_expected_return": best,
        "uniform_tree_edge_mean_return": mean_uniform_edge,
        "seeds": n_seeds,
        "queries": queries,
        "ucb_rounds": ucb_rounds,
        "dirpg": {"learning_rate": args.lr, "search_budget": args.budget, "epsilon": 1.0, "priority": "gumbel"},
        "grid_queries": grid_q.tolist(),
        "grid_steps": grid_s.tolist(),
        "grid_episodes": episodes_axis,
        "curves": stats,
        "final_return_last10pct": {k: mean_and_spread([[v] for v in vals]) | {"per_seed": vals} for k, vals in finals.items()},
        "dirpg_episodes": [len(r["return"]) for r in dirpg_runs],
        "dirpg_steps": [int(r["steps"][-1]) for r in dirpg_runs],
        "dirpg_improved_fraction": [float(np.mean(~np.isnan(r["interactions_to_improvement"]))) for r in dirpg_runs],
    }
    save_results(args.out, args.name, data, fig, started)
    plt.close(fig)
    return data


if __name__ == "__main__":
    main(sys.argv[1:])
