"""``python -m experiments.combinatorial``: learning across instances on 0/1 knapsack and maximum independent
set, a new random instance every episode, against MaskablePPO.

Every method trains on the same stream of instances for the same number of interactions; every 1/5 of the budget its
greedy policy (no search) is evaluated on 200 held-out instances (seeds 100000..100199), as the mean optimality gap
``(optimum - value) / optimum``. The optimum comes from scipy's MILP solver, the classic greedy heuristic is reported
beside it. At the end the trained DirPG policy also searches each held-out instance (``DirPG.solve``) for a range of
budgets: the gap of search at test time against the budget.

Methods: ``dirpg`` and ``reinforce`` with the pointer-style :class:`~sb3_dirpg.common.item_policy.ItemPolicy`,
``dirpg_mlp`` (DirPG with the flat MLP, to measure what the network changes), ``ppo`` (MaskablePPO with its defaults)
and ``ppo_item`` (MaskablePPO with the same per-item encoder as features). The gap "at equal wall time" reads each
curve at DirPG's mean training wall time (its last evaluation made by then). ``solve`` starts from the greedy
trajectory (budget 0) and searches with the Gumbel priority (samples without replacement) and pruning on the return.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from experiments.common import default_out, nonnegative_int, positive_int
from sb3_dirpg.envs.independent_set import (
    IndependentSetEnv,
    independent_set_bound,
    independent_set_greedy,
    independent_set_optimum,
)
from sb3_dirpg.envs.knapsack import KnapsackEnv, knapsack_bound, knapsack_greedy, knapsack_optimum

EVAL_SEEDS = list(range(100_000, 100_200))
METHODS = ("dirpg", "reinforce", "dirpg_mlp", "ppo", "ppo_item")
FAMILIES = ("knapsack", "independent_set")
SOLVE_BUDGETS = (0, 10, 100, 300)
SOLVE_EPSILON = 1000.0  # the search at test time maximises D = G + εR: a large ε makes it weigh the return


def make_env(family: str) -> KnapsackEnv | IndependentSetEnv:
    """:param family: ``"knapsack"`` (50 items) or ``"independent_set"`` (40 nodes, edge probability 0.15)
    :return: the env"""
    return KnapsackEnv(50) if family == "knapsack" else IndependentSetEnv(40, 0.15)


def references(family: str, seeds: list[int]) -> dict[str, list[float]]:
    """:param family: the problem family
    :param seeds: instance seeds
    :return: the exact optimum and the classic greedy heuristic's value of each instance"""
    env, optimum, greedy = make_env(family), [], []
    for seed in seeds:
        env.reset(seed=seed)
        if family == "knapsack":
            optimum.append(knapsack_optimum(env.values, env.weights, env.capacity))
            greedy.append(knapsack_greedy(env.values, env.weights, env.capacity))
        else:
            optimum.append(float(independent_set_optimum(env.adjacency)))
            greedy.append(float(independent_set_greedy(env.adjacency)))
    return {"optimum": optimum, "greedy": greedy}


def gap(values: list[float], optimum: list[float]) -> float:
    """:param values: the value found on each instance
    :param optimum: the optimum of each
    :return: the mean optimality gap"""
    return float(np.mean([(o - v) / o for v, o in zip(values, optimum)]))


def greedy_values(family: str, act: Callable[[np.ndarray, np.ndarray], int], seeds: list[int]) -> list[float]:
    """Play each instance with a policy's most likely legal action.

    :param family: the problem family
    :param act: (observation, mask) to action
    :param seeds: instance seeds
    :return: the value reached on each instance
    """
    env, values = make_env(family), []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        total, done = 0.0, False
        while not done:
            obs, reward, done, _, _ = env.step(act(obs, env.action_masks()))
            total += reward
        values.append(total)
    return values


def build(method: str, family: str, seed: int) -> Any:
    """:param method: one of :data:`METHODS`
    :param family: the problem family
    :param seed: the run's seed
    :return: the model"""
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.wrappers import ActionMasker

    from sb3_dirpg import DirPG
    from sb3_dirpg.baselines import Reinforce
    from sb3_dirpg.common.item_policy import ItemEncoder, ItemPolicy

    env = make_env(family)
    graph = {"adjacency": True, "gate": -2} if family == "independent_set" else {}
    bound = knapsack_bound if family == "knapsack" else independent_set_bound
    if method in ("dirpg", "dirpg_mlp"):
        policy, kwargs = (ItemPolicy, {"features_extractor_kwargs": graph}) if method == "dirpg" else ("MlpPolicy", {})
        return DirPG(
            policy, env, heuristic=bound, priority={"astar": {"alpha": 0.2}}, epsilon=1.0, search_budget=100,
            learning_rate=1e-3, policy_kwargs=kwargs, seed=seed, device="cpu",
        )  # fmt: skip
    if method == "reinforce":
        return Reinforce(ItemPolicy, env, learning_rate=1e-3, policy_kwargs={"features_extractor_kwargs": graph}, seed=seed,
                         device="cpu")  # fmt: skip
    masked = ActionMasker(env, lambda e: e.action_masks())
    kwargs = {"features_extractor_class": ItemEncoder, "features_extractor_kwargs": graph} if method == "ppo_item" else {}
    return MaskablePPO("MlpPolicy", masked, policy_kwargs=kwargs, seed=seed, device="cpu")


def run_one(
    family: str, method: str, seed: int, interactions: int, optimum: list[float],
    solve_budgets: tuple[int, ...] = SOLVE_BUDGETS,
) -> dict[str, Any]:  # fmt: skip
    """Train one model, evaluating its greedy policy 5 times; DirPG also searches at test time at the end.

    :return: the curve (interactions, training wall time, gap) and, for DirPG, the gap per search budget
    """
    import torch as th

    th.set_num_threads(1)
    model = build(method, family, seed)

    def act(obs: np.ndarray, mask: np.ndarray) -> int:
        return int(model.predict(obs, deterministic=True, action_masks=mask)[0])

    curve = [{"interactions": 0, "wall_s": 0.0, "gap": gap(greedy_values(family, act, EVAL_SEEDS), optimum)}]
    trained_s = 0.0
    for _ in range(5):
        start = time.perf_counter()
        model.learn(interactions // 5, reset_num_timesteps=False)
        trained_s += time.perf_counter() - start
        curve.append({"interactions": int(model.num_timesteps), "wall_s": trained_s,
                      "gap": gap(greedy_values(family, act, EVAL_SEEDS), optimum)})  # fmt: skip
        print(f"{family} {method} seed {seed}: {curve[-1]}", flush=True)
    result: dict[str, Any] = {"family": family, "method": method, "seed": seed, "curve": curve}
    result["interactions_budget"] = interactions
    if method == "dirpg":
        result["solve"] = {}
        for budget in solve_budgets:
            start = time.perf_counter()
            solutions = model.solve(EVAL_SEEDS, budget=budget, epsilon=SOLVE_EPSILON)
            result["solve"][str(budget)] = {
                "gap": gap([s.reward_sum for s in solutions], optimum), "wall_s": time.perf_counter() - start,
                "interactions": float(np.mean([s.interactions for s in solutions])),
            }  # fmt: skip
    return result


def gap_at(curve: list[dict[str, float]], wall_s: float) -> float:
    """:param curve: evaluation points
    :param wall_s: a training wall time
    :return: the gap of the last evaluation made by then"""
    return [point["gap"] for point in curve if point["wall_s"] <= wall_s + 1e-9][-1]


def summarise(runs: list[dict[str, Any]], refs: dict[str, dict[str, list[float]]]) -> dict[str, Any]:
    """:param runs: the results of :func:`run_one`
    :param refs: per family, the optimum and the greedy heuristic
    :return: per family and method: mean (and per-seed) gap at equal interactions, at equal wall time, and with search"""
    table: dict[str, Any] = {}
    for family in sorted({r["family"] for r in runs}):
        family_runs = [r for r in runs if r["family"] == family]
        reference = [r for r in family_runs if r["method"] == "dirpg"] or family_runs
        equal_wall = float(np.mean([r["curve"][-1]["wall_s"] for r in reference]))
        rows: dict[str, Any] = {"greedy heuristic": gap(refs[family]["greedy"], refs[family]["optimum"]),
                                "equal_wall_s": equal_wall}  # fmt: skip
        for method in sorted({r["method"] for r in family_runs}):
            mine = [r for r in family_runs if r["method"] == method]
            rows[method] = {
                "gap_start": float(np.mean([r["curve"][0]["gap"] for r in mine])),
                "gap_equal_interactions": float(np.mean([r["curve"][-1]["gap"] for r in mine])),
                "gap_equal_interactions_per_seed": [r["curve"][-1]["gap"] for r in mine],
                "gap_equal_wall_time": float(np.mean([gap_at(r["curve"], equal_wall) for r in mine])),
                "wall_s": float(np.mean([r["curve"][-1]["wall_s"] for r in mine])),
                "interactions": int(np.mean([r["curve"][-1]["interactions"] for r in mine])),
            }
            if "solve" in mine[0]:
                solved = {budget: [r["solve"][budget]["gap"] for r in mine] for budget in mine[0]["solve"]}
                rows[method]["gap_with_search"] = {budget: float(np.mean(gaps)) for budget, gaps in solved.items()}
        table[family] = rows
    return table


def plot(runs: list[dict[str, Any]], path: Path) -> None:
    """:param runs: the results of :func:`run_one`
    :param path: the PNG to write"""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    families = sorted({r["family"] for r in runs})
    figure, axes = plt.subplots(1, len(families), figsize=(6 * len(families), 4), squeeze=False)
    for ax, family in zip(axes[0], families):
        for method in sorted({r["method"] for r in runs if r["family"] == family}):
            mine = [r for r in runs if r["family"] == family and r["method"] == method]
            x = np.mean([[p["interactions"] for p in r["curve"]] for r in mine], axis=0)
            ys = np.array([[p["gap"] for p in r["curve"]] for r in mine])
            (line,) = ax.plot(x, ys.mean(axis=0), label=method)
            ax.fill_between(x, ys.min(axis=0), ys.max(axis=0), color=line.get_color(), alpha=0.2, linewidth=0)
        ax.set_yscale("symlog", linthresh=1e-3)
        ax.set(title=family, xlabel="interactions", ylabel="greedy optimality gap (200 held-out instances)")
        ax.legend()
    figure.savefig(path, dpi=90, bbox_inches="tight")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=["dirpg", "reinforce", "dirpg_mlp", "ppo"])
    parser.add_argument("--seeds", nargs="+", type=nonnegative_int, default=[0, 1, 2])
    parser.add_argument("--interactions", type=positive_int, default=100_000, help="interactions per run")
    parser.add_argument("--procs", type=positive_int, default=2, help="runs in parallel, one torch thread each")
    parser.add_argument("--solve-budgets", nargs="+", type=positive_int, default=list(SOLVE_BUDGETS),
                        help="budgets of DirPG.solve")
    parser.add_argument("--resume", action="store_true", help="keep the runs of the same budget already in the JSON file")
    parser.add_argument("--report", action="store_true", help="only rebuild the table and the figure from the JSON file")
    parser.add_argument("--out", type=Path, default=default_out(), help="folder of the JSON and PNG (%(default)s)")
    args = parser.parse_args()
    path = args.out / "combinatorial.json"
    kept = json.loads(path.read_text())["runs"] if (args.resume or args.report) and path.exists() else []
    if not args.report:
        kept = [r for r in kept if r["interactions_budget"] == args.interactions]
    done = {(r["family"], r["method"], r["seed"]) for r in kept}
    refs = {family: references(family, EVAL_SEEDS) for family in set(args.families) | {r["family"] for r in kept}}
    jobs = [
        (f, m, s, args.interactions, refs[f]["optimum"], tuple(args.solve_budgets))
        for f in args.families for m in args.methods for s in args.seeds if (f, m, s) not in done and not args.report
    ]  # fmt: skip
    with ProcessPoolExecutor(args.procs, mp_context=get_context("spawn")) as pool:
        runs = kept + list(pool.map(run_one, *zip(*jobs))) if jobs else kept
    args.out.mkdir(parents=True, exist_ok=True)
    table = summarise(runs, refs)
    budgets = sorted({r["interactions_budget"] for r in runs})
    settings = {"interactions": budgets, "eval_seeds": [EVAL_SEEDS[0], EVAL_SEEDS[-1]], "solve_budgets": args.solve_budgets,
                "solve_epsilon": SOLVE_EPSILON}  # fmt: skip
    path.write_text(json.dumps({"settings": settings, "table": table, "runs": runs}, indent=1))
    plot(runs, args.out / "combinatorial.png")
    print(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
