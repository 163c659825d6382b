"""``python -m experiments.control_variate``: the ``∇log P(a_opt)`` term as a control variate (appendix A.2).

DirPG's per-map update is ``(1/ε)·[∇log P(a_dir) − ∇log P(a_opt)]``. Since ``E[∇log P(a_opt)] = 0`` (``a_opt`` is a
sample of the policy), ``(1/ε)·∇log P(a_dir)`` alone has the same mean; the paper interprets the second term as a
control variate and reports that it reduces the variance of the update, more so later in training.

A DirPG model is trained on MiniGrid MultiRoom (weighted-A* priority with the MultiRoomBound heuristic). At
checkpoints during training the policy is frozen and searched on fresh maps; for every map the two per-map update
vectors are computed with autograd (one backward per path), and the total variance (trace of the empirical
covariance over maps) of each estimator is reported. Three searches are measured on the same maps at every
checkpoint: the training search itself (ε = 1, full budget, no early stop), the same with early stop (``a_dir`` is
the first improvement, appendix C), and a smaller ε (``--small-epsilon``, default 0.1), since the paper argues that
the term helps when ``a_dir`` and ``a_opt`` are similar (small ε).

Default (a few minutes): MultiRoom-N2-S4, the quick settings of ``python -m experiments.multiroom_figure`` (40-step
trajectories, 360 interactions of search per map, 2 maps per update), 60k training interactions, 4 checkpoints (0, 20k,
40k, 60k), 32 maps per checkpoint, 2 seeds. ``--full``: MultiRoom-N6 with the paper's 100 + 2900 interactions per
map, one map per update, 3M training interactions, 16 checkpoints, 200 maps, 3 seeds.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch as th

from experiments.common import (
    experiment_parser,
    mean_and_spread,
    plot_band,
    positive_int,
    save_results,
    scaled_settings,
    setup_run,
)
from experiments.multiroom_figure import figure_common, figure_method
from experiments.multiroom_setup import make_model
from sb3_dirpg import DirPG
from sb3_dirpg.search import SearchResult


def path_log_prob_grad(model: DirPG, result: SearchResult, leaf: int) -> th.Tensor:
    """``∇_θ log P(a)`` of the trajectory ending at ``leaf`` (masked policy), flattened.

    :param model: the DirPG model whose policy is differentiated
    :param result: the search result holding the trajectory's tree
    :param leaf: the trajectory's last node
    :return: the gradient, concatenated over the policy's parameters
    """
    tree = result.tree
    path = tree.path(leaf)
    params = [p for p in model.policy.parameters() if p.requires_grad]
    if len(path) < 2:
        return th.zeros(sum(p.numel() for p in params))
    nodes = path[:-1]
    obs = model.obs_to_policy_tensor([tree.obs[i] for i in nodes])
    masks = tree.nodes.legal[np.asarray(nodes, dtype=np.int64)]
    actions = th.as_tensor([int(tree.nodes.action[i]) for i in path[1:]], device=model.device)
    log_prob = model.policy.get_distribution(obs, action_masks=masks).log_prob(actions).sum()
    grads = th.autograd.grad(log_prob, params, allow_unused=True)
    return th.cat([(g if g is not None else th.zeros_like(p)).reshape(-1) for g, p in zip(grads, params)]).detach()


def update_variances(
    model: DirPG, seeds: Sequence[int], batch: int = 4, rng_seed: int = 0, **overrides: Any
) -> dict[str, float]:
    """Search ``seeds`` with the frozen policy and measure the total variance of both per-map update estimators.

    Since ``Var(a − b) = Var(a) + Var(b) − 2·Cov(a, b)`` (traces), the control variate helps exactly when
    ``2·tr Cov(∇log P(a_dir), ∇log P(a_opt)) > tr Var(∇log P(a_opt))``; both traces are reported.

    :param model: the DirPG model
    :param seeds: map seeds
    :param batch: maps searched in lockstep
    :param rng_seed: seed of the search noise
    :param overrides: search settings that differ from the model's (e.g. ``epsilon``, ``stop``)
    :return: ``var_with_cv`` (of ``(1/ε)[∇log P(a_dir) − ∇log P(a_opt)]``), ``var_without_cv`` (of
        ``(1/ε)∇log P(a_dir)``), their ratio, ``var_opt`` and ``cov_dir_opt`` (traces, same 1/ε² scale), the squared
        norms of the means, the improved fraction, the mean ``D(a_dir) − D(a_opt)`` and the mean fraction of
        ``a_dir``'s steps shared with ``a_opt`` (common prefix, over the maps where they differ)
    """
    rng = np.random.default_rng(rng_seed)
    config = model.search_config(**overrides)
    eps = config.epsilon
    with_cv, without_cv, improved, gap, shared = [], [], [], [], []
    model.policy.set_training_mode(False)
    for start in range(0, len(seeds), batch):
        result = model.search(list(seeds[start : start + batch]), config=config, rng=rng)
        for ep in result.episodes:
            if ep.opt_leaf < 0:
                continue
            g_dir = path_log_prob_grad(model, result, ep.dir_leaf)
            g_opt = g_dir if ep.dir_leaf == ep.opt_leaf else path_log_prob_grad(model, result, ep.opt_leaf)
            with_cv.append((g_dir - g_opt) / eps)
            without_cv.append(g_dir / eps)
            improved.append(float(ep.improved))
            gap.append(float(ep.d_dir - ep.d_opt))
            if ep.improved:
                path_dir, path_opt = result.tree.path(ep.dir_leaf), result.tree.path(ep.opt_leaf)
                common = next(i for i, (u, v) in enumerate(zip(path_dir, path_opt)) if u != v)
                shared.append((common - 1) / max(1, len(path_dir) - 1))
    a, b = th.stack(with_cv).double(), th.stack(without_cv).double()
    c = b - a  # (1/ε)∇log P(a_opt)
    var_a, var_b = float(a.var(dim=0, unbiased=True).sum()), float(b.var(dim=0, unbiased=True).sum())
    n = len(b)
    cov = float(((b - b.mean(dim=0)) * (c - c.mean(dim=0))).sum() / max(1, n - 1))
    return {
        "var_with_cv": var_a,
        "var_without_cv": var_b,
        "ratio_without_over_with": var_b / var_a if var_a > 0 else float("inf"),
        "var_opt": float(c.var(dim=0, unbiased=True).sum()),
        "cov_dir_opt": cov,
        "mean_sq_norm_with_cv": float(a.mean(dim=0).pow(2).sum()),
        "mean_sq_norm_without_cv": float(b.mean(dim=0).pow(2).sum()),
        "improved_fraction": float(np.mean(improved)),
        "mean_d_gap": float(np.mean(gap)),
        "shared_prefix_fraction": float(np.mean(shared)) if shared else 0.0,
        "n_maps": n,
    }


def measurement_variants(settings: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """:param settings: the run's settings
    :return: label -> search overrides of the measurements: the training search itself, the same with early stop
        (``a_dir`` = first improvement, the approximate search of appendix C) and a smaller ε"""
    return {
        "training search (ε=1, no early stop)": {},
        "ε=1, early stop": {"stop": "improvement"},
        f"ε={settings['small_epsilon']:g}, no early stop": {"epsilon": settings["small_epsilon"]},
    }


def build_parser() -> argparse.ArgumentParser:
    """:return: the command line of this experiment"""
    parser = experiment_parser(__doc__)
    parser.add_argument("--env-id", dest="env_id", default=None, help="MiniGrid MultiRoom id")
    parser.add_argument("--interactions", type=positive_int, default=None, help="training interactions per seed")
    parser.add_argument("--checkpoints", type=positive_int, default=None,
                        help="measurements after training starts (plus one at 0)")
    parser.add_argument("--maps", type=positive_int, default=None, help="maps searched per measurement")
    parser.add_argument("--horizon", type=positive_int, default=None, help="trajectory length")
    parser.add_argument("--search-budget", dest="search_budget", type=positive_int, default=None, help="a_dir budget per map")
    parser.add_argument("--batch-episodes", dest="batch_episodes", type=positive_int, default=None, help="maps per update")
    parser.add_argument("--alpha", type=float, default=0.3, help="α of the weighted-A* priority")
    parser.add_argument("--small-epsilon", dest="small_epsilon", type=float, default=0.1, help="ε of the third measurement")
    return parser


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the experiment.

    :param argv: command line (None: ``sys.argv``)
    :return: the results written to JSON
    """
    args = build_parser().parse_args(argv)
    started = setup_run(args)
    full = dict(env_id="MiniGrid-MultiRoom-N6-v0", horizon=100, search_budget=2900, batch_episodes=1,
                interactions=3_000_000, checkpoints=15, maps=200, seeds=3)  # fmt: skip
    quick = dict(env_id="MiniGrid-MultiRoom-N2-S4-v0", horizon=40, search_budget=360, batch_episodes=2,
                 interactions=60_000, checkpoints=3, maps=32, seeds=2)  # fmt: skip
    settings = scaled_settings(args, quick, full)
    settings.update(learning_rate=1e-3, early_stop=False, n_rollouts=1, alpha=args.alpha, epsilon=1.0,
                    small_epsilon=args.small_epsilon)  # fmt: skip
    variants = measurement_variants(settings)
    x = np.linspace(0, settings["interactions"], settings["checkpoints"] + 1).round().astype(int).tolist()
    per_seed: dict[str, list[list[dict[str, float]]]] = {label: [] for label in variants}
    for seed in range(settings["seeds"]):
        method = figure_method(f"dirpg-{args.alpha:g}", settings)
        model = make_model(method, seed, settings["env_id"], None, figure_common(settings))
        rows: dict[str, list[dict[str, float]]] = {label: [] for label in variants}
        for i, target in enumerate(x):
            if target > model.num_timesteps:
                model.learn(target - model.num_timesteps, reset_num_timesteps=False)
            # fresh maps at every checkpoint, disjoint from the training seeds' range with high probability
            seeds = [2_000_000_000 + 100_000 * seed + 1_000 * i + k for k in range(settings["maps"])]
            for label, overrides in variants.items():
                row = update_variances(model, seeds, rng_seed=1000 * seed + i, **overrides)
                row["interactions"] = model.num_timesteps
                rows[label].append(row)
                print(f"seed {seed} @ {model.num_timesteps:>8d} {label:38s}: var with CV {row['var_with_cv']:10.4g}, "
                      f"without {row['var_without_cv']:10.4g} (ratio {row['ratio_without_over_with']:.2f}), improved "
                      f"{row['improved_fraction']:.2f}, shared {row['shared_prefix_fraction']:.2f}", flush=True)  # fmt: skip
        for label in variants:
            per_seed[label].append(rows[label])
    keys = ("var_with_cv", "var_without_cv", "ratio_without_over_with", "improved_fraction", "var_opt", "cov_dir_opt",
            "shared_prefix_fraction")  # fmt: skip
    curves = {
        label: {k: mean_and_spread([[r[k] for r in rows] for rows in per_seed[label]], band="minmax") for k in keys}
        for label in variants
    }
    figure = plot(x, curves, settings)
    data = {"settings": dict(settings, threads=args.threads), "x_interactions": x, "curves": curves, "per_seed": per_seed}
    save_results(args.out, "control_variate", data, figure, started)
    return data


def plot(x: list[int], curves: dict[str, dict[str, dict[str, list[float]]]], settings: dict[str, Any]) -> Any:
    """:param x: training interactions of the checkpoints
    :param curves: per measurement variant, per quantity, mean and spread over seeds
    :param settings: the run's settings
    :return: a figure: per variant, the two total variances (log scale); and the ratios"""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"axes.titlesize": 9, "axes.labelsize": 8, "xtick.labelsize": 7, "ytick.labelsize": 7})
    n = len(curves)
    fig, axes = plt.subplots(1, n + 1, figsize=(3.4 * (n + 1), 3.4))
    env_name = settings["env_id"].replace("MiniGrid-", "").replace("-v0", "")
    for ax, (label, stats) in zip(axes, curves.items()):
        plot_band(ax, x, stats["var_without_cv"], "without CV: (1/ε)∇logP(a_dir)")
        plot_band(ax, x, stats["var_with_cv"], "with CV (DirPG): (1/ε)[∇logP(a_dir)−∇logP(a_opt)]")
        ax.set_yscale("log")
        ax.set(title=f"{env_name}: {label}", xlabel="training interactions", ylabel="total variance (trace)")
        ax.legend(fontsize=6)
    ax_ratio = axes[-1]
    for label, stats in curves.items():
        plot_band(ax_ratio, x, stats["ratio_without_over_with"], label)
    ax_ratio.axhline(1.0, color="gray", linewidth=0.8)
    ax_ratio.set_yscale("log")
    ax_ratio.set(title="variance without / with CV (>1: CV helps)", xlabel="training interactions")
    ax_ratio.legend(fontsize=6)
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    main()
