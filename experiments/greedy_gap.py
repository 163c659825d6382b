"""``python -m experiments.greedy_gap``: why DirPG's sampled policy succeeds where its greedy one fails
(issue 44), measured over training on the table's envs.

One DirPG run per env and variant, from the env's entry in ``zoo_hyperparams/dirpg.yml`` with a variant's changes
(``--params key:value``, rl-zoo3's syntax). Every ``--every`` interactions the run records:

* held-out success (200 seeds from 10000, no search), sampled and greedy, and MiniGrid's own return;
* the search diagnostics of the maps searched since the last point, averaged per map: the fraction where ``a_dir`` is
  ``a_opt`` (no update), the fraction where ``a_opt`` itself succeeded and nothing better was found, the policy's
  entropy along ``a_opt``, the update's gradient norm, and the interactions per optimizer step.

At the end the greedy policy's failed held-out episodes are described: distinct cells visited, whether the agent's
state (position, direction, carried object, grid) repeated (a deterministic policy then loops forever), and the mix
of actions. Results go to ``OUT/greedy_gap/ENV-TAG-sSEED.json``, rewritten after each evaluation (``"finished": false``
until the run ends).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import KVWriter, Logger

from experiments.common import default_out, key_value, nonnegative_int, positive_int, write_json
from experiments.held_out import EVAL_SEED, build_env, evaluate_held_out, is_success, predict_action
from sb3_dirpg.envs.minigrid.fast_obs import front_cell

DIAGNOSTICS = {
    "unchanged": "search/unchanged_fraction",
    "unchanged_success": "search/unchanged_success_fraction",
    "entropy_opt": "search/entropy_opt",
    "success_opt": "search/success_opt",
    "grad_norm": "train/grad_norm",
    "interactions_per_map": "search/interactions_per_episode",
    "refining": "search/refining",
}
ACTIONS = ("left", "right", "forward", "pickup", "drop", "toggle", "done")


class DiagnosticsWriter(KVWriter):
    """Keeps the means of the diagnostics of every logger dump since the last :meth:`take`."""

    def __init__(self) -> None:
        self.rows: list[dict[str, float]] = []

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, Any], step: int = 0) -> None:
        """:param key_values: the dumped values
        :param key_excluded: the formats each key is excluded from (unused)
        :param step: the dump's step (unused)"""
        self.rows.append({name: float(key_values[key]) for name, key in DIAGNOSTICS.items() if key in key_values})

    def take(self) -> dict[str, float]:
        """:return: each diagnostic's mean over the dumps since the last call (NaN where none had it)"""
        out = {}
        for name in DIAGNOSTICS:
            values = [row[name] for row in self.rows if np.isfinite(row.get(name, np.nan))]
            out[name] = float(np.mean(values)) if values else float("nan")
        self.rows = []
        return out

    def close(self) -> None:
        """Nothing to close."""


class GapRecorder(BaseCallback):
    """Evaluate held-out success, sampled and greedy, every ``every`` interactions, with the search diagnostics since
    the last evaluation.

    :param env_id: the env
    :param env_kwargs: the entry's ``env_kwargs``
    :param env_wrapper: the entry's ``env_wrapper``
    :param every: interactions between evaluations
    :param writer: the logger's diagnostics writer
    :param n_seeds: held-out seeds (from 10000)
    :param on_point: called with the points so far after each evaluation (to save them as they come)
    """

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], env_wrapper: Any, every: int, writer: DiagnosticsWriter,
                 n_seeds: int = 200, on_point: Callable[[list[dict[str, Any]]], None] | None = None) -> None:  # fmt: skip
        super().__init__(0)
        self.on_point = on_point
        self.envs = [build_env(env_id, env_kwargs, env_wrapper) for _ in range(n_seeds)]
        self.seeds = list(range(10_000, 10_000 + n_seeds))
        self.every, self.writer = int(every), writer
        self.points: list[dict[str, Any]] = []
        self._next, self._train_s, self._since = 0, 0.0, 0.0

    def _on_training_start(self) -> None:
        self._since = time.perf_counter()
        self._evaluate()

    def _on_step(self) -> bool:
        if self.model.num_timesteps >= self._next:
            self._evaluate()
        return True

    def _on_training_end(self) -> None:
        if self.points[-1]["interactions"] < self.model.num_timesteps:
            self._evaluate()

    def _evaluate(self) -> None:
        self._train_s += time.perf_counter() - self._since
        with th.random.fork_rng(devices=[]):
            th.manual_seed(EVAL_SEED)
            sampled = evaluate_held_out(self.model, self.envs, self.seeds, deterministic=False)
        greedy = evaluate_held_out(self.model, self.envs, self.seeds, deterministic=True)
        point = {"interactions": int(self.model.num_timesteps), "wall_s": round(self._train_s, 2), "sampled": sampled,
                 "greedy": greedy, "updates": int(self.model._n_updates), **self.writer.take()}  # fmt: skip
        self.points.append(point)
        print(
            f"{point['interactions']:>8d}: sampled {sampled['success']:.3f} greedy {greedy['success']:.3f} | unchanged "
            f"{point['unchanged']:.2f} (a_opt succeeded {point['unchanged_success']:.2f}) entropy {point['entropy_opt']:.2f} "
            f"updates {point['updates']} ({point['wall_s']:.0f} s)",
            flush=True,
        )
        if self.on_point is not None:
            self.on_point(self.points)
        self._next = (self.model.num_timesteps // self.every + 1) * self.every
        self._since = time.perf_counter()


def facing(base: Any) -> str:
    """:param base: an unwrapped MiniGrid env
    :return: what the agent faces and what it carries, e.g. ``"locked door, empty-handed"``"""
    cell = front_cell(base)
    if cell is None:
        what = "empty"
    elif cell.type == "door":
        what = "locked door" if cell.is_locked else "open door" if cell.is_open else "closed door"
    else:
        what = cell.type
    return f"{what}, {'carrying a ' + base.carrying.type if base.carrying is not None else 'empty-handed'}"


def describe_greedy_failures(model: BaseAlgorithm, env_id: str, env_kwargs: dict[str, Any], env_wrapper: Any,
                             seeds: Sequence[int]) -> dict[str, Any]:  # fmt: skip
    """Play the greedy policy on held-out seeds and describe the episodes that fail.

    :param model: the trained model
    :param env_id: the env
    :param env_kwargs: the entry's ``env_kwargs``
    :param env_wrapper: the entry's ``env_wrapper``
    :param seeds: the held-out seeds
    :return: ``failed`` (their number of ``episodes``), and over the failed ones: ``cells`` (mean distinct cells),
        ``looped`` (fraction whose full state repeated: a deterministic policy then cycles), ``loop_length`` (mean
        period of the cycle), ``actions`` (the share of each action), and of the failures that cycle, ``loops_facing``
        (how many faced each thing, :func:`facing`, where the cycle closed) and ``loop_periods`` (how many had each period)
    """
    env = build_env(env_id, env_kwargs, env_wrapper)
    base = env.unwrapped
    failed: list[dict[str, Any]] = []
    for seed in seeds:
        obs, _ = env.reset(seed=int(seed))
        seen: dict[bytes, int] = {}
        cells, actions, loop, steps, done, success = set(), np.zeros(len(ACTIONS)), 0, 0, False, False
        faced = ""
        while not done:
            carried = base.carrying.encode() if base.carrying is not None else (0, 0, 0)
            state = np.concatenate([[*base.agent_pos, base.agent_dir, *carried], base.grid.encode().ravel()]).tobytes()
            if state in seen and not loop:
                loop, faced = steps - seen[state], facing(base)
            seen.setdefault(state, steps)
            cells.add(tuple(int(v) for v in base.agent_pos))
            action = predict_action(model, obs, env, deterministic=True)
            actions[action] += 1
            obs, reward, terminated, truncated, info = env.step(action)
            steps += 1
            done = terminated or truncated
            success = done and is_success(float(reward), terminated, info)
        if not success:
            failed.append({"cells": len(cells), "loop": loop, "faced": faced, "actions": actions / max(1, actions.sum())})
    if not failed:
        return {"episodes": len(seeds), "failed": 0}
    return {
        "episodes": len(seeds),
        "failed": len(failed),
        "cells": float(np.mean([f["cells"] for f in failed])),
        "looped": float(np.mean([f["loop"] > 0 for f in failed])),
        "loop_length": float(np.mean([f["loop"] for f in failed if f["loop"] > 0] or [np.nan])),
        "actions": dict(zip(ACTIONS, np.mean([f["actions"] for f in failed], axis=0).round(3).tolist())),
        "loops_facing": dict(Counter(f["faced"] for f in failed if f["loop"] > 0).most_common()),
        "loop_periods": {str(k): v for k, v in sorted(Counter(f["loop"] for f in failed if f["loop"] > 0).items())},
    }


def run(env_id: str, params: Sequence[str], budget: int, every: int, seed: int, n_seeds: int = 200,
        partial: Path | None = None, save: Path | None = None, load: Path | None = None) -> dict[str, Any]:  # fmt: skip
    """Train DirPG from the env's entry with a variant's changes, recording the gap and the diagnostics.

    :param env_id: the env
    :param params: the variant's ``key:value`` changes of the entry
    :param budget: training interactions
    :param every: interactions between evaluations
    :param seed: the training seed
    :param n_seeds: held-out seeds per evaluation (from 10000)
    :param partial: where to write the points so far after each evaluation, marked ``"finished": false``
    :param save: where to save the trained model (a zip), or None
    :param load: a model saved by ``save`` to continue for ``budget`` more interactions, or None; of ``params``, the
        algorithm's settings (not the env's or the policy's) replace the saved ones, e.g. ``refine_success:True``
    :return: the entry's settings, the points and the greedy failures at the end
    """
    from experiments.minigrid_table import entry, parse_params
    from sb3_dirpg.dirpg import DirPG
    from sb3_dirpg.integrations.zoo import algorithm_kwargs, entry_callbacks

    th.set_num_threads(1)
    settings = {**entry(env_id, "dirpg"), **parse_params(params)}
    env_kwargs, env_wrapper = dict(settings.get("env_kwargs") or {}), settings.get("env_wrapper")
    env = build_env(env_id, env_kwargs, env_wrapper)
    if load is None:
        model = DirPG(settings["policy"], env, seed=seed, device="cpu", **algorithm_kwargs(settings))
    else:
        changed = set(parse_params(params)) - {"policy", "policy_kwargs", "env_wrapper", "env_kwargs"}
        overrides = {key: value for key, value in algorithm_kwargs(settings).items() if key in changed}
        model = DirPG.load(load, env=env, device="cpu", **overrides)
    writer = DiagnosticsWriter()
    model.set_logger(Logger(None, [writer]))
    header = {"env_id": env_id, "params": list(params), "seed": seed, **({"loaded": str(load)} if load else {})}

    def save_partial(points: list[dict[str, Any]]) -> None:
        if partial is not None:
            write_json(partial, {**header, "finished": False, "points": points})

    recorder = GapRecorder(env_id, env_kwargs, env_wrapper, every, writer, n_seeds, on_point=save_partial)
    model.learn(budget, callback=[recorder, *entry_callbacks(settings)], log_interval=1, reset_num_timesteps=load is None)
    if save is not None:
        model.save(save)
    failures = describe_greedy_failures(model, env_id, env_kwargs, env_wrapper, recorder.seeds)
    print("greedy failures at the end:", json.dumps(failures), flush=True)
    return {**header, "finished": True, "points": recorder.points, "greedy_failures": failures}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """:param argv: command-line arguments
    :return: the results"""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="MiniGrid-DoorKey-5x5-v0")
    parser.add_argument("--params", type=key_value, nargs="*", default=[], metavar="KEY:VALUE",
                        help="the variant's changes of the entry")
    parser.add_argument("--tag", default="shipped", help="names the variant in the results file")
    parser.add_argument("--budget", type=positive_int, default=300_000)
    parser.add_argument("--every", type=positive_int, default=25_000)
    parser.add_argument("--seed", type=nonnegative_int, default=0)
    parser.add_argument("--maps", type=positive_int, default=200, help="held-out seeds per evaluation")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--save", action="store_true", help="also save the trained model beside the results (.zip)")
    parser.add_argument("--load", type=Path, default=None, help="continue this saved model for --budget more interactions")
    args = parser.parse_args(argv)
    if not args.env.startswith("MiniGrid-"):
        parser.error(f"--env {args.env}: the greedy gap is measured on MiniGrid ids (it reads the agent's state)")
    if args.load is not None and not (args.load.is_file() or args.load.with_suffix(".zip").is_file()):
        parser.error(f"--load {args.load}: no such saved model")
    out = (args.out or default_out()) / "greedy_gap"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{args.env.removeprefix('MiniGrid-').removesuffix('-v0')}-{args.tag}-s{args.seed}.json"
    save = path.with_suffix(".zip") if args.save else None
    result = run(args.env, args.params, args.budget, args.every, args.seed, args.maps, partial=path, save=save, load=args.load)
    write_json(path, result)
    return result


if __name__ == "__main__":
    main()
