"""Risk sensitivity on DeepSea (DirPG paper, section 6, Fig. 3c): learned Π(LLLL) and Π(RRRR) against ε.

DirPG with a linear policy on the one-hot cell (``net_arch=[]``, the paper's ``FC(25, 2)``) is trained on
``sb3_dirpg/DeepSeaRisk-v0`` for a sweep of ε, several seeds each. LLLL returns exactly 0, RRRR returns ``N(0, 1)``:
both have mean 0. The probabilities of the two paths are computed exactly from the policy's action probabilities along
each path. Beside the learned policies, the script computes the objective ``l(θ, ε) = E_S[(1/ε) log E_a exp(ε R)]``
of appendix A exactly (enumeration of the 16 paths, Gauss–Hermite quadrature over the Gaussian corner reward) and
follows its exact gradient from the same (uniform) initial policy: the "noise-free" endpoint DirPG estimates.

The search looks for the exact ``a_dir`` (no early stop: the whole tree has only 30 prefixes, within the budget of
100), which makes the update an unbiased estimate of the gradient of ``l``; ``--early-stop`` takes the first
improvement instead (the paper's approximation, biased here: see :func:`gradient_check`, whose results are saved).

Scale: the paper trains 400,000 episodes per ε with Adam at learning rate 1e-3. The default here trains 6,000 episodes
per (ε, seed), 32 episodes per update, with Adam at learning rate 0.02 (``--lr``, ``--batch``) so that 6 ε × 3 seeds
finish in a few minutes; ``--full`` uses the paper's 400,000 episodes and learning rate 1e-3, 8 episodes per update
(hours).

    python -m experiments.deepsea_risk
    python -m experiments.deepsea_risk --full --seeds 5
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Sequence

import gymnasium as gym
import numpy as np
import torch as th

from experiments.common import experiment_parser, mean_and_spread, plot_band, positive_int, save_results, setup_run
from experiments.gaussian_choice import hermite_nodes
from sb3_dirpg import DirPG
from sb3_dirpg.envs.deepsea import DeepSeaRiskEnv

NAME = "deepsea_risk"
ENV_ID = "sb3_dirpg/DeepSeaRisk-v0"
DEFAULT_EPSILONS = (-3.0, -1.0, -0.3, 0.3, 1.0, 3.0)


def enumerate_paths(env: DeepSeaRiskEnv) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """All ``2^(N-1)`` action sequences of the grid with the cells they visit and their returns.

    The return of a path is ``base + corner · goal_reward``: ``corner`` is 1 only for the all-R path.

    :param env: the unwrapped env (its state is changed)
    :return: ``actions`` (n_paths, T), ``cells`` (n_paths, T) cell index before each action, ``base`` and ``corner``
    """
    actions = np.array(list(itertools.product((0, 1), repeat=env.horizon)), dtype=np.int64)
    cells = np.zeros_like(actions)
    base, corner = np.zeros(len(actions)), np.zeros(len(actions))
    for k, path in enumerate(actions):
        env.reset(seed=0)
        env.goal_reward = 0.0
        total = 0.0
        for t, action in enumerate(path):
            cells[k, t] = env.row * env.size + env.col
            _, reward, _, _, _ = env.step(int(action))
            total += reward
        base[k] = total
        corner[k] = float(env.row == env.size - 1 and env.col == env.size - 1)
    return actions, cells, base, corner


def path_log_probs(log_pi: th.Tensor, actions: np.ndarray, cells: np.ndarray) -> th.Tensor:
    """Log-probability of every path under a tabular policy.

    :param log_pi: log action probabilities per cell, shape (n_cells, 2)
    :param actions: the paths' actions, shape (n_paths, T)
    :param cells: the cells where the actions are taken, shape (n_paths, T)
    :return: ``log P(a)`` per path, shape (n_paths,)
    """
    return log_pi[th.as_tensor(cells), th.as_tensor(actions)].sum(dim=1)


def exact_objective(log_p: th.Tensor, base: np.ndarray, corner: np.ndarray, epsilon: float, env: DeepSeaRiskEnv) -> th.Tensor:
    """``l(θ, ε) = E_x[(1/ε) log Σ_a P(a) exp(ε R(a, x))]`` by Gauss–Hermite quadrature over the corner reward.

    :param log_p: log-probabilities of the paths (differentiable)
    :param base: returns of the paths without the corner reward
    :param corner: 1 for the path that collects the corner reward
    :param epsilon: ε
    :param env: the env (mean and standard deviation of the corner reward)
    :return: the objective (scalar tensor)
    """
    x, w = hermite_nodes(61)
    goal = env.goal_mean + env.goal_std * x
    returns = th.as_tensor(base[None, :] + corner[None, :] * goal[:, None], dtype=log_p.dtype)  # (nodes, paths)
    inner = th.logsumexp(log_p[None, :] + epsilon * returns, dim=1)
    return (th.as_tensor(w, dtype=log_p.dtype) * inner).sum() / epsilon


def model_log_pi(model: DirPG, n_cells: int) -> th.Tensor:
    """The policy's log action probabilities in every cell.

    :param model: a DirPG model on DeepSea
    :param n_cells: number of cells (the size of the one-hot observation)
    :return: shape (n_cells, 2)
    """
    with th.no_grad():
        obs = th.eye(n_cells, device=model.device)
        return th.log_softmax(model.policy.action_logits(obs), dim=1).cpu().double()


def extreme_paths(log_p: th.Tensor, actions: np.ndarray) -> tuple[float, float]:
    """:param log_p: log-probabilities of the paths
    :param actions: the paths' actions
    :return: ``(Π(all L), Π(all R))``"""
    p = log_p.exp()
    return float(p[int(np.flatnonzero(actions.sum(1) == 0)[0])]), float(p[int(np.flatnonzero(actions.min(1) == 1)[0])])


def exact_gradient_flow(env: DeepSeaRiskEnv, epsilon: float, steps: int, lr: float) -> dict[str, float]:
    """Follow the exact gradient of ``l(θ, ε)`` (Adam) from the uniform tabular policy.

    :param env: the unwrapped env
    :param epsilon: ε
    :param steps: number of Adam steps
    :param lr: Adam learning rate
    :return: Π(LLLL), Π(RRRR) and ``l`` at the end
    """
    actions, cells, base, corner = enumerate_paths(env)
    logits = th.zeros(env.size * env.size, 2, dtype=th.float64, requires_grad=True)
    optimizer = th.optim.Adam([logits], lr=lr)
    for _ in range(steps):
        optimizer.zero_grad()
        loss = -exact_objective(path_log_probs(th.log_softmax(logits, 1), actions, cells), base, corner, epsilon, env)
        loss.backward()
        optimizer.step()
    log_p = path_log_probs(th.log_softmax(logits.detach(), 1), actions, cells)
    p_l, p_r = extreme_paths(log_p, actions)
    return {"pi_LLLL": p_l, "pi_RRRR": p_r, "l": float(exact_objective(log_p, base, corner, epsilon, env))}


def train_one(
    epsilon: float,
    seed: int,
    episodes: int,
    checkpoints: int,
    lr: float,
    budget: int,
    early_stop: bool = True,
    optimizer: str = "adam",
    batch_episodes: int = 8,
) -> dict[str, list[float]]:
    """Train DirPG for one (ε, seed) and record Π(LLLL), Π(RRRR) and the exact objective along the way.

    :param epsilon: ε
    :param seed: seed of the model
    :param episodes: training episodes
    :param checkpoints: number of evaluation points
    :param lr: Adam learning rate
    :param budget: search budget (interactions after ``a_opt``)
    :param early_stop: stop each search at the first improvement over ``a_opt`` (else search for the exact ``a_dir``)
    :param optimizer: ``"adam"`` (the paper's) or ``"sgd"``
    :param batch_episodes: episodes per update
    :return: per checkpoint: ``episodes``, ``interactions``, ``pi_LLLL``, ``pi_RRRR``, ``l``
    """
    env = gym.make(ENV_ID).unwrapped
    actions, cells, base, corner = enumerate_paths(env)
    model = DirPG(
        "MlpPolicy", ENV_ID, learning_rate=lr, epsilon=epsilon, search_budget=budget,
        stop="improvement" if early_stop else "budget",
        max_episode_steps=env.horizon, batch_episodes=batch_episodes, seed=seed, device="cpu",
        policy_kwargs=dict(net_arch=[], optimizer_class=th.optim.SGD if optimizer == "sgd" else th.optim.Adam),
    )  # fmt: skip
    record: dict[str, list[float]] = {"episodes": [], "interactions": [], "pi_LLLL": [], "pi_RRRR": [], "l": []}

    def snapshot() -> None:
        log_p = path_log_probs(model_log_pi(model, env.size * env.size), actions, cells)
        p_l, p_r = extreme_paths(log_p, actions)
        record["episodes"].append(model._episode_num)
        record["interactions"].append(model.num_timesteps)
        record["pi_LLLL"].append(p_l)
        record["pi_RRRR"].append(p_r)
        record["l"].append(float(exact_objective(log_p, base, corner, epsilon, env)))

    snapshot()
    targets = np.linspace(0, episodes, checkpoints + 1)[1:]
    for target in targets:
        while model._episode_num < target:  # learn in chunks sized by the interactions per episode seen so far
            per_episode = model.num_timesteps / max(1, model._episode_num) if model._episode_num else 32.0
            chunk = max(1, int((target - model._episode_num) * per_episode))
            model.learn(chunk, reset_num_timesteps=model.num_timesteps == 0)
        snapshot()
    return record


def gradient_check(epsilon: float, n_episodes: int, early_stop: bool, chunks: int = 10) -> dict[str, float]:
    """Compare DirPG's update direction with the exact gradient of ``l`` at the initial (uniform) linear policy.

    :param epsilon: ε
    :param n_episodes: episodes averaged (split into ``chunks`` for a standard error)
    :param early_stop: search option
    :param chunks: number of chunks
    :return: the exact and estimated derivative of ``l`` w.r.t. the first cell's ``R - L`` logit, with a standard error
    """
    from sb3_dirpg.dirpg.update import SearchShare

    env = gym.make(ENV_ID).unwrapped
    actions, cells, base, corner = enumerate_paths(env)
    model = DirPG(
        "MlpPolicy", ENV_ID, epsilon=epsilon, search_budget=100,
        stop="improvement" if early_stop else "budget", max_episode_steps=env.horizon,
        policy_kwargs=dict(net_arch=[]), seed=0, device="cpu",
    )  # fmt: skip
    weight = model.policy.action_net.weight
    log_pi = th.log_softmax(model.policy.action_logits(th.eye(env.size * env.size)).double(), dim=1)
    exact = exact_objective(path_log_probs(log_pi, actions, cells), base, corner, epsilon, env)
    (g_exact,) = th.autograd.grad(exact, [weight])
    estimates = []
    per_chunk = n_episodes // chunks
    for k in range(chunks):
        steps = SearchShare.of(model.search(list(range(k * per_chunk, (k + 1) * per_chunk)))).steps
        if len(steps.actions) == 0:  # no episode of the chunk improved: the update is exactly zero
            estimates.append(0.0)
            continue
        dist = model.policy.get_distribution(model.obs_to_policy_tensor(steps.obs), action_masks=steps.masks)
        log_prob = dist.log_prob(th.as_tensor(steps.actions))
        estimate = (th.as_tensor(steps.signs, dtype=log_prob.dtype) * log_prob).sum() / (epsilon * per_chunk)
        (g_est,) = th.autograd.grad(estimate, [weight])
        estimates.append(float(g_est[1, 0] - g_est[0, 0]))
    return {
        "exact": float(g_exact[1, 0] - g_exact[0, 0]),
        "dirpg_mean": float(np.mean(estimates)),
        "dirpg_stderr": float(np.std(estimates, ddof=1) / np.sqrt(chunks)),
        "episodes": per_chunk * chunks,
        "early_stop": early_stop,
    }


def main(argv: Sequence[str] | None = None) -> dict:
    """Run the ε sweep, plot the learned extreme-path probabilities and save.

    :param argv: command line (default: ``sys.argv[1:]``)
    :return: the results written to JSON
    """
    parser = experiment_parser(__doc__)
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(DEFAULT_EPSILONS), help="ε values")
    parser.add_argument("--episodes", type=positive_int, default=None,
                        help="training episodes per run (default 6000, --full 400000)")
    parser.add_argument("--lr", type=float, default=None, help="Adam learning rate (default 0.02, --full 1e-3 as the paper)")
    parser.add_argument("--batch", type=positive_int, default=None, help="episodes per update (default 32, --full 8)")
    parser.add_argument("--early-stop", action="store_true", help="stop each search at the first improvement")
    parser.add_argument("--check-episodes", type=positive_int, default=10_000, help="episodes of the gradient check (0: skip)")
    parser.add_argument("--budget", type=positive_int, default=100, help="search budget per episode")
    parser.add_argument("--checkpoints", type=positive_int, default=20, help="evaluation points along training")
    parser.add_argument("--name", default=NAME, help="base name of the JSON and PNG files")
    parser.add_argument("--flow-steps", type=positive_int, default=2000, help="Adam steps of the exact-gradient reference")
    args = parser.parse_args(argv)
    started = setup_run(args)
    n_seeds = args.seeds or (5 if args.full else 3)
    episodes = args.episodes or (400_000 if args.full else 6000)
    lr = args.lr or (1e-3 if args.full else 0.02)
    batch = args.batch or (8 if args.full else 32)
    env = gym.make(ENV_ID).unwrapped

    runs: dict[str, list[dict[str, list[float]]]] = {}
    exact: dict[str, dict[str, float]] = {}
    for eps in args.epsilons:
        runs[f"{eps:g}"] = [
            train_one(eps, seed, episodes, args.checkpoints, lr, args.budget, args.early_stop, "adam", batch)
            for seed in range(n_seeds)
        ]
        exact[f"{eps:g}"] = exact_gradient_flow(env, eps, steps=args.flow_steps, lr=0.05)
        final = runs[f"{eps:g}"]
        print(
            f"ε={eps:g}: Π(LLLL)={np.mean([r['pi_LLLL'][-1] for r in final]):.3f} "
            f"Π(RRRR)={np.mean([r['pi_RRRR'][-1] for r in final]):.3f} "
            f"(exact gradient flow {exact[f'{eps:g}']['pi_LLLL']:.3f} / {exact[f'{eps:g}']['pi_RRRR']:.3f})",
            flush=True,
        )

    checks = [gradient_check(1.0, args.check_episodes, es) for es in (False, True)] if args.check_episodes else []
    for check in checks:
        print(f"gradient check (ε=1, early_stop={check['early_stop']}): exact {check['exact']:.4f}, "
              f"DirPG {check['dirpg_mean']:.4f} ± {check['dirpg_stderr']:.4f}", flush=True)  # fmt: skip
    summary = {}
    for key, rs in runs.items():
        summary[key] = {
            name: mean_and_spread([[r[name][-1]] for r in rs], band="minmax") | {"per_seed": [r[name][-1] for r in rs]}
            for name in ("pi_LLLL", "pi_RRRR", "l")
        }

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    eps_values = np.asarray(args.epsilons)
    pos = np.arange(len(eps_values))
    for name, color, marker in (("pi_LLLL", "C0", "o"), ("pi_RRRR", "C3", "s")):
        mean = np.array([summary[f"{e:g}"][name]["mean"][0] for e in eps_values])
        low = np.array([summary[f"{e:g}"][name]["low"][0] for e in eps_values])
        high = np.array([summary[f"{e:g}"][name]["high"][0] for e in eps_values])
        label = "Π(LLLL) safe" if name == "pi_LLLL" else "Π(RRRR) risky"
        axes[0].errorbar(pos, mean, yerr=[mean - low, high - mean], fmt=marker + "-", color=color, capsize=3, label=label)
        axes[0].plot(pos, [exact[f"{e:g}"][name] for e in eps_values], marker, color=color, fillstyle="none", ms=10,
                     label=label.split()[0] + " exact-gradient flow")  # fmt: skip
        for k, e in enumerate(eps_values):  # every seed, slightly shifted
            seeds_values = summary[f"{e:g}"][name]["per_seed"]
            shift = 0.12 if name == "pi_RRRR" else -0.12
            axes[0].plot(np.full(len(seeds_values), k + shift), seeds_values, ".", color=color, alpha=0.5, ms=4)
    axes[0].set_xticks(pos, [f"{e:g}" for e in eps_values])
    axes[0].set(xlabel="ε", ylabel="probability", ylim=(-0.03, 1.03))
    axes[0].set_title(f"learned policy after {episodes} episodes (mean, min-max, dots: seeds)", fontsize=9)
    axes[0].legend(fontsize=7)
    for key, color in zip(runs, plt.cm.coolwarm(np.linspace(0, 1, len(runs)))):
        x = np.asarray(runs[key][0]["episodes"])
        plot_band(axes[1], x, mean_and_spread([r["pi_RRRR"] for r in runs[key]], band="minmax"), f"ε={key}", color=color)
    axes[1].set(xlabel="episodes", ylabel="Π(RRRR)", title="Π(RRRR) during training (mean, min-max)")
    axes[1].legend(fontsize=7)
    fig.tight_layout()

    data = {
        "experiment": NAME,
        "scale": "full" if args.full else "default",
        "env": ENV_ID,
        "epsilons": args.epsilons,
        "seeds": n_seeds,
        "episodes": episodes,
        "learning_rate": lr,
        "search_budget": args.budget,
        "batch_episodes": batch,
        "early_stop": args.early_stop,
        "gradient_check_eps1": checks,
        "summary": summary,
        "exact_gradient_flow": exact,
        "runs": runs,
    }
    save_results(args.out, args.name, data, fig, started)
    plt.close(fig)
    return data


if __name__ == "__main__":
    main(sys.argv[1:])
