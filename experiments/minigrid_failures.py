"""Where a trained MiniGrid policy fails: its held-out episodes (no search, as the table evaluates), grouped by how far
the success was at the start (the grid bound's steps to success: shortest paths around walls, through a key where
locked doors are in the way), with the success rate and the distinct cells each group's episodes visited.

A policy that succeeds on near targets and fails on far ones while visiting many cells wanders: it has no memory of
where it has been (the table's policies see one 7x7 view). One that fails near targets, or visits few cells, is stuck.
It also prints the share of steps where the policy was uncertain (its action distribution above
:data:`UNCERTAIN_NATS` of entropy, among the legal actions), in the succeeded and in the failed episodes: a sampled
policy that fails where its greedy one succeeds has lost its way into states it is unsure of.

Usage::

    python -m experiments.minigrid_failures \\
        docs/results/minigrid_table_runs/MiniGrid-FourRooms-v0/dirpg-s0/model.zip --env MiniGrid-FourRooms-v0

With ``--loops``, it describes the greedy policy's failures instead
(:func:`~experiments.greedy_gap.describe_greedy_failures`): how many cycle, with what period, and what the
agent faces where the cycle closes (a locked door without its key, say).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.base_class import BaseAlgorithm

from experiments.common import key_value, nonnegative_int, positive_int
from experiments.greedy_gap import describe_greedy_failures
from experiments.held_out import action_masks_of, build_env, is_success, predict_action
from sb3_dirpg.envs.minigrid import MiniGridBound

DEFAULT_EDGES = (0, 10, 20, 30)
#: a step whose action distribution has more entropy than this (nats) counts as uncertain
UNCERTAIN_NATS = 0.5


def action_entropy(model: Any, obs: Any, env: gym.Env) -> float | None:
    """:param model: a model
    :param obs: the env's current observation
    :param env: the env, wrapped as the model saw it in training
    :return: the entropy (nats) of the model's action distribution at ``obs``, among the env's legal actions where it
        gives masks; None where the model has no SB3 policy"""
    policy = getattr(model, "policy", None)
    if policy is None or not hasattr(policy, "get_distribution"):
        return None
    obs_tensor, _ = policy.obs_to_tensor(obs)
    masks = action_masks_of(env)
    extra = {} if masks is None else {"action_masks": masks}
    with th.no_grad():
        dist = policy.get_distribution(obs_tensor, **extra)
    return float(dist.entropy().reshape(-1)[0])


def play_episode(model: BaseAlgorithm, env: gym.Env, seed: int, deterministic: bool) -> dict[str, Any]:
    """Play one episode of the model's policy, without search.

    :param model: a trained model
    :param env: the env, wrapped as the model saw it in training
    :param seed: the episode's reset seed
    :param deterministic: greedy actions, else sampled ones
    :return: ``success``, ``steps``, ``cells`` (distinct agent cells, the start included), ``steps_to_success``
        (the grid bound's lower bound at the start; None where the env's success rule is not known) and ``uncertain``
        (the share of steps where the policy's entropy was above :data:`UNCERTAIN_NATS`; None without a policy)
    """
    obs, _ = env.reset(seed=int(seed))
    base = env.unwrapped
    steps_to_success = MiniGridBound().steps_to_success(env)  # reward values play no part in it
    cells = {tuple(int(v) for v in base.agent_pos)}
    steps, success, done, uncertain = 0, False, False, []
    while not done:
        entropy = action_entropy(model, obs, env)
        if entropy is not None:
            uncertain.append(entropy > UNCERTAIN_NATS)
        obs, reward, terminated, truncated, info = env.step(predict_action(model, obs, env, deterministic))
        steps += 1
        cells.add(tuple(int(v) for v in base.agent_pos))
        done = terminated or truncated
        if done:
            success = is_success(float(reward), terminated, info)
    return {"success": success, "steps": steps, "cells": len(cells), "steps_to_success": steps_to_success,
            "uncertain": float(np.mean(uncertain)) if uncertain else None}  # fmt: skip


def uncertain_shares(episodes: Sequence[dict[str, Any]]) -> dict[str, float | None]:
    """:param episodes: :func:`play_episode`'s outputs
    :return: the mean share of uncertain steps over the ``succeeded`` and over the ``failed`` episodes (None where
        there are none, or no policy)"""
    shares: dict[str, float | None] = {}
    for name, outcome in (("succeeded", True), ("failed", False)):
        values = [e["uncertain"] for e in episodes if e["success"] == outcome and e["uncertain"] is not None]
        shares[name] = float(np.mean(values)) if values else None
    return shares


def by_distance(episodes: Sequence[dict[str, Any]], edges: Sequence[int] = DEFAULT_EDGES) -> list[dict[str, Any]]:
    """Group episodes by their steps to success at the start.

    :param episodes: :func:`play_episode`'s outputs
    :param edges: increasing lower edges of the groups; the last group is open above
    :return: one row per non-empty group: ``low``, ``high`` (None for the last), ``episodes``, ``success`` (rate),
        ``cells`` (mean distinct cells visited) and ``cells_failed`` (the same over the failed episodes, None if none)
    """
    if list(edges) != sorted(set(edges)) or not edges:
        raise ValueError(f"edges must be increasing and not empty, got {list(edges)}")
    rows = []
    for i, low in enumerate(edges):
        high = edges[i + 1] if i + 1 < len(edges) else None
        group = [e for e in episodes if e["steps_to_success"] is not None and e["steps_to_success"] >= low
                 and (high is None or e["steps_to_success"] < high)]  # fmt: skip
        if not group:
            continue
        failed = [e["cells"] for e in group if not e["success"]]
        rows.append({
            "low": low,
            "high": high,
            "episodes": len(group),
            "success": float(np.mean([e["success"] for e in group])),
            "cells": float(np.mean([e["cells"] for e in group])),
            "cells_failed": float(np.mean(failed)) if failed else None,
        })  # fmt: skip
    return rows


def format_rows(rows: Sequence[dict[str, Any]]) -> str:
    """:param rows: :func:`by_distance`'s output
    :return: a markdown table"""
    lines = ["| steps to success | episodes | success | cells visited | cells visited, failed |"]
    lines.append("| --- | ---: | ---: | ---: | ---: |")
    for row in rows:
        span = f"{row['low']}–{row['high'] - 1}" if row["high"] is not None else f"{row['low']}+"
        failed = "–" if row["cells_failed"] is None else f"{row['cells_failed']:.0f}"
        lines.append(f"| {span} | {row['episodes']} | {row['success']:.2f} | {row['cells']:.0f} | {failed} |")
    return "\n".join(lines)


def load_model(path: Path, method: str, masked: bool = False) -> BaseAlgorithm:
    """:param path: a saved model
    :param method: the method that trained it: one of the zoo bridge's algorithms (``dirpg``, ``reinforce``, ``cem``),
        ``ppo``, ``ppo_shaped`` or ``ppo_same``
    :param masked: whether the method's env gives action masks (a ``ppo`` method trained sb3-contrib's MaskablePPO there)
    :return: the model, on the CPU"""
    from sb3_contrib import MaskablePPO
    from stable_baselines3 import PPO

    from sb3_dirpg.integrations.zoo import ZOO_ALGOS

    ppo = MaskablePPO if masked else PPO
    classes: dict[str, type[BaseAlgorithm]] = {**ZOO_ALGOS, "ppo": ppo, "ppo_shaped": ppo, "ppo_same": ppo}
    if method not in classes:
        raise ValueError(f"--method must be one of {sorted(classes)}, got {method!r}")
    if not Path(path).is_file():
        raise FileNotFoundError(f"no saved model at {path}: pass a cell's model.zip")
    return classes[method].load(path, device="cpu")


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: see the module's docstring.

    :param argv: the arguments (``sys.argv[1:]`` when None)
    """
    from experiments.minigrid_table import evaluation_env, masks_actions

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path, help="a saved model (a table cell's model.zip)")
    parser.add_argument("--env", required=True, help="the env id the model was trained on")
    parser.add_argument("--method", default="dirpg", help="the table's method that trained it (its entry's wrappers)")
    parser.add_argument("--seeds", type=nonnegative_int, nargs=2, default=(10_000, 200), metavar=("FIRST", "COUNT"))
    parser.add_argument("--edges", type=positive_int, nargs="+", default=list(DEFAULT_EDGES), help="lower edges of the groups")
    parser.add_argument("--greedy", action="store_true", help="greedy actions (default: sampled, as the table)")
    parser.add_argument("--loops", action="store_true",
                        help="describe the greedy failures instead: where their cycles close, and their actions")
    parser.add_argument("--params", type=key_value, nargs="+", default=[], metavar="KEY:VALUE",
                        help="the variant's changes, as the table's --params gave them (an env_wrapper changes the env)")
    args = parser.parse_args(argv)
    try:
        env_kwargs, env_wrapper = evaluation_env(args.env, args.method, args.params)
    except ValueError as error:
        parser.error(str(error))
    if not (args.model.is_file() or args.model.with_suffix(".zip").is_file()):
        parser.error(f"model {args.model}: no such saved model")
    model = load_model(args.model, args.method, masks_actions(env_wrapper))
    if args.loops:
        seeds = range(args.seeds[0], args.seeds[0] + args.seeds[1])
        print(json.dumps(describe_greedy_failures(model, args.env, env_kwargs, env_wrapper, seeds)))
        return
    env = build_env(args.env, env_kwargs, env_wrapper)
    th.manual_seed(0)
    episodes = [play_episode(model, env, seed, args.greedy) for seed in range(args.seeds[0], args.seeds[0] + args.seeds[1])]
    print(f"{args.env}, {args.model}: success {np.mean([e['success'] for e in episodes]):.3f} over {len(episodes)} seeds "
          f"({'greedy' if args.greedy else 'sampled'} actions)")  # fmt: skip
    print(format_rows(by_distance(episodes, args.edges)))
    shares = {name: "–" if share is None else f"{share:.2f}" for name, share in uncertain_shares(episodes).items()}
    print(f"steps with more than {UNCERTAIN_NATS} nats of entropy: {shares['succeeded']} of the succeeded episodes', "
          f"{shares['failed']} of the failed episodes'")  # fmt: skip


if __name__ == "__main__":
    main()
