"""Train zoo entries through the rl-zoo3 bridge and measure what each one reached (the table in ``docs/results.md``).

Every run is ``python -m sb3_dirpg.integrations.zoo train --algo ALGO --env ENV -n STEPS --seed 0 --num-threads 1
--eval-freq -1``
in its own process (one at a time), timed from start to end (process start-up of about 5 s included). The saved
model is then evaluated without search on 100 fresh episodes, the way ``enjoy`` plays it: stochastic actions in
MiniGrid (rl-zoo3's rule), deterministic elsewhere, with the env's action masks where it has them. Extra figures:
MiniGrid's success rate, the spanning-tree bandit's reward relative to the best tree in expectation on the same
episodes, and DeepSea's probabilities of the safe (LLLL) and risky (RRRR) paths.

Usage: ``python docs/scripts/zoo_results.py --runs dirpg:CartPole-v1:150000 ... [--out results.jsonl]``; a run may end
with ``:key=value,...`` to override hyperparameters (rl-zoo3's ``-params``), e.g.
``dirpg:sb3_dirpg/DeepSeaRisk-v0:200000:epsilon=-1.0``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
import yaml
from rl_zoo3.utils import get_wrapper_class

import sb3_dirpg  # noqa: F401  (registers the sb3_dirpg/ env ids)
from sb3_dirpg.envs import SpanningTreeBanditEnv
from sb3_dirpg.envs.minigrid.setting import completed_entry, is_minigrid_id
from sb3_dirpg.integrations.zoo import ZOO_ALGOS, default_conf_file


def train(algo: str, env_id: str, steps: int, folder: Path, params: list[str]) -> float:
    """:return: wall-clock seconds of the training command"""
    command = [sys.executable, "-m", "sb3_dirpg.integrations.zoo", "train", "--algo", algo, "--env", env_id, "-n", str(steps),
               "--seed", "0", "--num-threads", "1", "--eval-freq", "-1", "-f", str(folder), "--verbose", "0"]  # fmt: skip
    if params:
        command += ["-params", *params]
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def make_env(algo: str, env_id: str) -> gym.Env:
    """:return: the entry's env (its wrappers and env_kwargs), without rl-zoo3's Monitor; a DirPG MiniGrid entry without
    a ``policy`` is completed by the one MiniGrid setting, as the bridge completes it"""
    entry = yaml.safe_load(default_conf_file(algo).read_text()).get(env_id)
    if algo == "dirpg" and is_minigrid_id(env_id):
        entry = completed_entry(env_id, entry)
    env = gym.make(env_id, **entry.get("env_kwargs", {}))
    wrapper = get_wrapper_class(entry)
    return wrapper(env) if wrapper is not None else env


def evaluate(model: Any, env: gym.Env, n_episodes: int, deterministic: bool) -> dict[str, float]:
    """:return: mean and standard deviation of the return, and the success rate (MiniGrid)"""
    returns, successes = [], []
    has_masks = env.has_wrapper_attr("action_masks")
    for episode in range(n_episodes):
        obs, _ = env.reset(seed=10_000 + episode)
        total, done, success = 0.0, False, False
        while not done:
            masks = env.get_wrapper_attr("action_masks")() if has_masks else None
            action, _ = model.predict(obs, deterministic=deterministic, action_masks=masks)
            obs, reward, terminated, truncated, info = env.step(int(action))
            total += float(reward)
            success = success or (terminated and info.get("minigrid_reward", 0.0) > 0)
            done = terminated or truncated
        returns.append(total)
        successes.append(success)
    return {"return_mean": float(np.mean(returns)), "return_std": float(np.std(returns)),
            "success_rate": float(np.mean(successes))}  # fmt: skip


def path_probabilities(model: Any, size: int = 5) -> dict[str, float]:
    """:return: the policy's probabilities of the all-L and all-R paths of DeepSea"""
    probs = {}
    for name, action in (("p_LLLL", 0), ("p_RRRR", 1)):
        p, row, col = 1.0, 0, 0
        for _ in range(size - 1):
            obs = np.zeros(size * size, np.float32)
            obs[row * size + col] = 1.0
            with th.no_grad():
                dist = model.policy.get_distribution(model.policy.obs_to_tensor(obs)[0])
            p *= float(dist.distribution.probs[0, action])
            row, col = row + 1, min(max(col + (1 if action else -1), 0), size - 1)
        probs[name] = p
    return probs


def spanning_tree_optimum(env: gym.Env, n_episodes: int) -> float:
    """:return: the mean reward of the best spanning tree in expectation (the maximum spanning tree for the weights
    ``E[r_e] = mu_e``) on the evaluation episodes"""
    base = env.unwrapped
    assert isinstance(base, SpanningTreeBanditEnv)
    best = set(base.max_spanning_tree())
    rewards = []
    for episode in range(n_episodes):
        env.reset(seed=10_000 + episode)
        for decision in range(base.n_edges):
            _, reward, terminated, truncated, _ = env.step(int(decision in best))
        assert terminated
        rewards.append(float(reward))
    return float(np.mean(rewards))


def run(algo: str, env_id: str, steps: int, n_episodes: int, params: list[str]) -> dict[str, Any]:
    """Train one entry and evaluate it.

    :return: the row of the results table
    """
    with tempfile.TemporaryDirectory() as folder:
        wall = train(algo, env_id, steps, Path(folder), params)
        name = env_id.replace("/", "-")
        model = ZOO_ALGOS[algo].load(Path(folder) / algo / f"{name}_1" / f"{name}.zip", device="cpu")
        row: dict[str, Any] = {"algo": algo, "env": env_id, "params": params, "timesteps": model.num_timesteps,
                               "wall_s": round(wall, 1)}  # fmt: skip
    env = make_env(algo, env_id)
    minigrid = env_id.startswith("MiniGrid")
    row.update(evaluate(model, env, n_episodes, deterministic=not minigrid))
    if env_id.startswith("sb3_dirpg/DeepSea"):
        row.update(path_probabilities(model))
    if env_id.startswith("sb3_dirpg/SpanningTree"):
        row["optimum"] = spanning_tree_optimum(env, n_episodes)
    return row


def figure(row: dict[str, Any]) -> str:
    """:return: the figure of a row as text: the return, plus the entry's extra figure"""
    text = f"{row['return_mean']:.1f} ± {row['return_std']:.1f}"
    if row["env"].startswith("MiniGrid"):
        text += f", success {100 * row['success_rate']:.0f} %"
    if "optimum" in row:
        share = 100 * row["return_mean"] / row["optimum"]
        text = f"{row['return_mean']:.2f} ± {row['return_std']:.2f} ({share:.0f} % of the best tree's {row['optimum']:.2f})"
    if "p_LLLL" in row:
        text = f"P(LLLL) = {row['p_LLLL']:.2f}, P(RRRR) = {row['p_RRRR']:.2f}"
    return text


def table(path: Path) -> str:
    """:return: a markdown table of the JSON lines in ``path``"""
    lines = ["| algo | env | overrides | interactions | wall time (s) | figure reached |", "| --- " * 6 + "|"]
    for raw in path.read_text().splitlines():
        row = json.loads(raw)
        overrides = " ".join(row.get("params") or []) or "-"
        cells = [row["algo"], f"`{row['env']}`", overrides, f"{row['timesteps']:,}", f"{row['wall_s']:.0f}", figure(row)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    """Run the requested entries and print one JSON line per entry (or print the table of earlier runs)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", nargs="+", default=[], help="ALGO:ENV_ID:TIMESTEPS[:key=value,...]")
    parser.add_argument("--table", type=Path, default=None, help="print the markdown table of a JSON-lines file")
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--out", type=Path, default=None, help="append the JSON lines to this file too")
    args = parser.parse_args()
    if args.table is not None:
        print(table(args.table))
        return
    th.set_num_threads(1)
    for spec in args.runs:
        algo, env_id, steps, *rest = spec.split(":", 3)
        params = [item.replace("=", ":", 1) for item in rest[0].split(",")] if rest else []
        row = run(algo, env_id, int(float(steps)), args.episodes, params)
        line = json.dumps(row)
        print(line, flush=True)
        if args.out is not None:
            with args.out.open("a") as f:
                f.write(line + "\n")


if __name__ == "__main__":
    main()
