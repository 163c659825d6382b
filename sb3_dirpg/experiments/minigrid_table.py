"""``python -m sb3_dirpg.experiments.minigrid_table``: DirPG, REINFORCE and rl-zoo3's PPO on rl-zoo3's MiniGrid table.

Every cell (env, method, seed) is trained by rl-zoo3's own training entry point: ``python -m rl_zoo3.train`` with
rl-zoo3's shipped ``ppo.yml`` for PPO, and the project's bridge ``python -m sb3_dirpg.integrations.zoo train`` with
``zoo_hyperparams/{dirpg,reinforce}.yml`` for ours. The only thing added to an entry is the evaluation callback
(:class:`~sb3_dirpg.experiments.held_out.HeldOutEvaluation`, through rl-zoo3's ``callback`` hyperparameter): every 5 %
of the budget it plays the policy with no search on 200 held-out seeds (10000..10199, never trained on), with sampled
actions (as rl-zoo3 evaluates MiniGrid) and greedy ones, checkpoints, and appends to the cell's record.

A cell runs to the larger of rl-zoo3's PPO budget and 1M interactions, capped at 3M. ``ppo_shaped`` is rl-zoo3's PPO
with the reward and the step limit of the env's DirPG entry (so that no win comes from reward shaping alone).
Cells run as subprocesses, ``--procs`` at a time, one torch thread each; ``--resume`` skips finished cells and
continues unfinished ones from their last checkpoint (rl-zoo3's ``--trained-agent``). ``--fill`` trains just the cells
that the targets still lack (:func:`cells_to_run`), continuing unfinished ones; ``--report`` rebuilds the whole table.

A checkpoint is ``model.zip`` (and ``ENV/vecnormalize.pkl``) in the cell's folder, which git ignores: a cell left
unfinished at the end of a session keeps its progress on another machine only if its checkpoint is committed
(``git add -f``); take it out of the index (``git rm --cached``) once the cell has finished. A cell whose record has
no checkpoint starts again from scratch; its earlier record is kept aside (``record-without-checkpoint.json``) and
reported until the rerun passes it (:func:`read_record`), so the table never loses measured points to a rerun.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from sb3_dirpg.experiments.common import default_out, refresh_block, write_json
from sb3_dirpg.experiments.minigrid_targets import (
    LEVEL,
    MIN_SEEDS,
    TIE_BREAK,
    format_count,
    judge,
    missing_cells,
    ppo_seeds,
    success_at,
    targets_table,
)

ENVS = (
    "MiniGrid-Empty-Random-5x5-v0",
    "MiniGrid-DoorKey-5x5-v0",
    "MiniGrid-Unlock-v0",
    "MiniGrid-KeyCorridorS3R1-v0",
    "MiniGrid-RedBlueDoors-6x6-v0",
    "MiniGrid-FourRooms-v0",
    "MiniGrid-Fetch-5x5-N2-v0",
    "MiniGrid-GoToDoor-5x5-v0",
    "MiniGrid-PutNear-6x6-N2-v0",
    "MiniGrid-MultiRoom-N4-S5-v0",
    "MiniGrid-LockedRoom-v0",
    "MiniGrid-ObstructedMaze-2Dlh-v0",
)
UNSOLVED = ("MiniGrid-MultiRoom-N4-S5-v0", "MiniGrid-LockedRoom-v0", "MiniGrid-ObstructedMaze-2Dlh-v0")
METHODS = ("dirpg", "reinforce", "ppo", "ppo_same", "ppo_shaped")
#: the methods a run trains unless ``--methods`` names others
TRAINED = ("dirpg", "reinforce", "ppo", "ppo_same")
#: the one change made to rl-zoo3's PPO entries: ``FlatObsWrapper`` declares a uint8 space (minigrid >= 2.5), SB3 >= 2.7.1
#: stores observations in the space's dtype, and ``VecNormalize`` (``normalize: true``) leaves a non-image space as it
#: is, so without this cast PPO trains on normalized observations wrapped around into uint8
FLOAT32_CAST = {"gymnasium.wrappers.DtypeObservation": {"dtype": "float32"}}
FLAT_OBS = "minigrid.wrappers.FlatObsWrapper"
#: ``ppo_same`` normalizes the reward (DirPG's reward pays up to 100) but not the observation, which DirPG sees raw
SAME_NORMALIZE = "dict(norm_obs=False, norm_reward=True)"
#: the entry keys the ``ppo`` methods may override through rl-zoo3's ``-params`` (``env_kwargs`` go by ``--env-kwargs``)
SAME_KEYS = ("env_wrapper", "policy", "policy_kwargs", "normalize")
#: a cell (of any method) stops once it has reached this success, sampled and greedy, at :data:`STOP_AFTER` evaluations
#: in a row
STOP_LEVEL, STOP_AFTER = 0.95, 3
MIN_BUDGET, MAX_BUDGET = 1_000_000, 3_000_000
POINTS = 20  # an evaluation every 5 % of the budget
KEPT_RECORD = "record-without-checkpoint.json"  # an earlier run's record, kept while a rerun from scratch catches up


def _load_yaml(path: Path) -> dict[str, Any]:
    with open(path) as file:
        return yaml.load(file, Loader=yaml.UnsafeLoader)  # rl-zoo3's loader: its files use !!float and merges


def zoo_ppo_file() -> Path:
    """:return: rl-zoo3's shipped PPO hyperparameter file"""
    import rl_zoo3

    return Path(rl_zoo3.__file__).parent / "hyperparams" / "ppo.yml"


def our_file(algo: str) -> Path:
    """:param algo: ``dirpg`` or ``reinforce``
    :return: the project's hyperparameter file for it"""
    from sb3_dirpg.integrations.zoo import default_conf_file

    return Path(default_conf_file(algo))


def zoo_budget(env_id: str) -> int:
    """:param env_id: an env of the table
    :return: rl-zoo3's training budget for PPO on it"""
    return int(_load_yaml(zoo_ppo_file())[env_id]["n_timesteps"])


def cell_budget(env_id: str) -> int:
    """:param env_id: an env of the table
    :return: the cell's budget: rl-zoo3's, at least 1M, at most 3M"""
    return int(min(max(zoo_budget(env_id), MIN_BUDGET), MAX_BUDGET))


@dataclass(frozen=True)
class Cell:
    """One training run of the table.

    :param env_id: the env
    :param method: one of :data:`METHODS`
    :param seed: the training seed
    :param budget: interactions to train for
    :param tag: names a variant of the method (its settings changed by ``params``), or empty
    :param params: hyperparameters that the variant changes, as rl-zoo3's ``-params`` takes them (``key:value``)
    """

    env_id: str
    method: str
    seed: int
    budget: int
    tag: str = ""
    params: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """:return: the method, with its variant's tag"""
        return f"{self.method}@{self.tag}" if self.tag else self.method

    def folder(self, runs: Path) -> Path:
        """:param runs: the folder of all cells
        :return: this cell's folder"""
        return runs / self.env_id / f"{self.name}-s{self.seed}"


def entry(env_id: str, method: str) -> dict[str, Any]:
    """The hyperparameter entry a method trains with (rl-zoo3's file for PPO, the project's for ours).

    :param env_id: the env
    :param method: one of :data:`METHODS`
    :return: the entry
    """
    path = zoo_ppo_file() if method.startswith("ppo") else our_file(method)
    table = _load_yaml(path)
    if env_id not in table:
        raise KeyError(f"{path} has no entry for {env_id}")
    return dict(table[env_id])


def repaired(wrappers: Any) -> list[Any]:
    """:param wrappers: an ``env_wrapper`` entry of rl-zoo3's
    :return: the same wrappers with :data:`FLOAT32_CAST` right after ``FlatObsWrapper`` (where it is not already)"""
    out = []
    specs = _as_list(wrappers)
    for index, spec in enumerate(specs):
        out.append(spec)
        if spec == FLAT_OBS and (index + 1 == len(specs) or specs[index + 1] != FLOAT32_CAST):
            out.append(FLOAT32_CAST)
    return out


def importable(policy_kwargs: str) -> str:
    """:param policy_kwargs: a ``policy_kwargs`` string of the project's files, which may name ``MiniGridCNN``
    :return: the same expression, evaluable where ``MiniGridCNN`` is not imported (rl-zoo3's own ``eval``)"""
    return policy_kwargs.replace("MiniGridCNN", "__import__('sb3_dirpg.envs.minigrid', fromlist=['MiniGridCNN']).MiniGridCNN")


def overrides(env_id: str, method: str) -> dict[str, Any]:
    """What a method changes in its entry.

    * ``ppo``: rl-zoo3's entry with :data:`FLOAT32_CAST` after ``FlatObsWrapper``, nothing else;
    * ``ppo_shaped``: the same, with the reward wrappers and the step limit of the env's DirPG entry;
    * ``ppo_same``: rl-zoo3's PPO settings with exactly DirPG's information: the DirPG entry's reward, step limit,
      observation wrappers, policy and network (``MiniGridCNN``), the reward normalized (:data:`SAME_NORMALIZE`);
    * ours: nothing.

    :param env_id: the env
    :param method: one of :data:`METHODS`
    :return: the entry's keys to override (``env_wrapper``, ``env_kwargs``, ``policy``, ``policy_kwargs``, ``normalize``)
    """
    if not method.startswith("ppo"):
        return {}
    zoo_wrappers = repaired(entry(env_id, "ppo").get("env_wrapper"))
    if method == "ppo":
        return {"env_wrapper": zoo_wrappers}
    ours = entry(env_id, "dirpg")
    if method == "ppo_same":
        return {"env_wrapper": _as_list(ours.get("env_wrapper")), "env_kwargs": ours.get("env_kwargs", {}),
                "policy": ours["policy"], "policy_kwargs": importable(ours["policy_kwargs"]),
                "normalize": SAME_NORMALIZE}  # fmt: skip
    reward = [w for w in _as_list(ours.get("env_wrapper")) if "ShapedReward" in str(w) or "ProgressReward" in str(w)]
    return {"env_wrapper": reward + zoo_wrappers, "env_kwargs": ours.get("env_kwargs", {})}


def _as_list(value: Any) -> list[Any]:
    return [] if value is None else list(value) if isinstance(value, list) else [value]


def evaluation_env(env_id: str, method: str, params: Sequence[str] = ()) -> tuple[dict[str, Any], Any]:
    """:param env_id: the env
    :param method: one of :data:`METHODS`
    :param params: a variant's ``key:value`` changes (an ``env_wrapper`` among them changes the env)
    :return: the ``env_kwargs`` and ``env_wrapper`` the method trains with (the evaluation env is built the same)"""
    settings = {**entry(env_id, method), **overrides(env_id, method), **parse_params(params)}
    return dict(settings.get("env_kwargs") or {}), settings.get("env_wrapper")


def parse_params(params: Sequence[str]) -> dict[str, Any]:
    """:param params: ``key:value`` strings, the value a Python expression (rl-zoo3's ``-params`` syntax)
    :return: the values"""
    return {param.split(":", 1)[0]: eval(param.split(":", 1)[1]) for param in params}  # noqa: S307 (rl-zoo3 does the same)


def command(cell: Cell, runs: Path, offset: int = 0) -> list[str]:
    """The command line that trains a cell (from the start, or from its checkpoint when ``offset > 0``).

    :param cell: the cell
    :param runs: the folder of all cells
    :param offset: interactions already made (resume from the checkpoint)
    :return: the command
    """
    folder = cell.folder(runs)
    env_kwargs, env_wrapper = evaluation_env(cell.env_id, cell.method, cell.params)
    callback = {
        "sb3_dirpg.experiments.held_out.HeldOutEvaluation": dict(
            record=str(folder / "record.json"),
            env_id=cell.env_id,
            budget=cell.budget,
            env_kwargs=env_kwargs,
            env_wrapper=env_wrapper,
            points=POINTS,
            offset=offset,
            stop_level=STOP_LEVEL,
            stop_after=STOP_AFTER,
        )
    }
    params = [f"callback:{callback!r}", *cell.params]
    extra = overrides(cell.env_id, cell.method)
    params += [f"{key}:{value!r}" for key, value in extra.items() if key in SAME_KEYS]
    if cell.method.startswith("ppo"):
        head = [sys.executable, "-m", "rl_zoo3.train", "--algo", "ppo", "--gym-packages", "minigrid"]
    else:
        head = [sys.executable, "-m", "sb3_dirpg.integrations.zoo", "train", "--algo", cell.method]
    cmd = [*head, "--env", cell.env_id, "--seed", str(cell.seed), "-n", str(cell.budget - offset), "--num-threads", "1"]
    cmd += ["--eval-freq", "-1", "-f", str(folder / "zoo"), "--verbose", "0", "--device", "cpu", "-params", *params]
    if "env_kwargs" in extra and extra["env_kwargs"]:
        cmd += ["--env-kwargs", *[f"{key}:{value!r}" for key, value in extra["env_kwargs"].items()]]
    if offset:
        cmd += ["--trained-agent", str(folder / "model.zip")]
    return cmd


def _last(record: dict[str, Any]) -> int:
    """:param record: a cell's record
    :return: the interactions of its last evaluation (-1 if none)"""
    return int(record["points"][-1]["interactions"]) if record.get("points") else -1


def finished(record: dict[str, Any]) -> bool:
    """:param record: a cell's record
    :return: whether the cell ran to its budget or stopped early by the rule (:data:`STOP_LEVEL`)"""
    return "stopped_early" in record or _last(record) >= record["budget"]


def curve(record: dict[str, Any]) -> list[list[float]]:
    """:param record: a cell's record
    :return: its ``[interactions, sampled success, greedy success]`` rows; a cell that stopped early by the rule holds
        its last evaluation to the budget (one more row there, which the report marks)"""
    rows = [[p["interactions"], p["sampled"]["success"], p["greedy"]["success"]] for p in record["points"]]
    if "stopped_early" in record and rows and rows[-1][0] < record["budget"]:
        rows.append([record["budget"], *rows[-1][1:]])
    return rows


def progress(cell: Cell, runs: Path) -> int:
    """:param cell: the cell
    :param runs: the folder of all cells
    :return: interactions of the cell's last checkpoint (0 if none; the budget once it stopped early by the rule)"""
    path = cell.folder(runs) / "record.json"
    if not path.exists():
        return 0
    record = json.loads(path.read_text())
    if "stopped_early" in record:
        return cell.budget
    if not (cell.folder(runs) / "model.zip").exists():
        return 0
    return max(_last(record), 0)


def read_record(folder: Path) -> dict[str, Any] | None:
    """A cell's record: ``record.json``, or the record of an earlier run that left no checkpoint while the rerun from
    scratch has not yet passed it.

    :param folder: the cell's folder
    :return: the record that reaches further (the current one on a tie), or ``None`` if the cell has none
    """
    paths = [path for path in (folder / "record.json", folder / KEPT_RECORD) if path.exists()]
    records = [json.loads(path.read_text()) for path in paths]
    return max(records, key=_last) if records else None


def _keep_unresumable_record(folder: Path) -> None:
    """Before a cell with a record but no checkpoint starts again from scratch (which rewrites ``record.json``), keep
    its record aside unless an even longer one is kept already; drop a kept record that the current one has passed.

    :param folder: the cell's folder
    """
    current, kept = folder / "record.json", folder / KEPT_RECORD
    if not current.exists() or "stopped_early" in json.loads(current.read_text()):  # finished: it needs no checkpoint
        return
    current_end = _last(json.loads(current.read_text()))
    kept_end = _last(json.loads(kept.read_text())) if kept.exists() else -1
    if not (folder / "model.zip").exists() and current_end > max(kept_end, 0):
        shutil.copyfile(current, kept)
    elif kept.exists() and current_end >= kept_end:
        kept.unlink()


def run_cell(cell: Cell, runs: Path, resume: bool) -> dict[str, Any]:
    """Train one cell to its budget in a subprocess (its output goes to ``train.log`` in the cell's folder).

    :param cell: the cell
    :param runs: the folder of all cells
    :param resume: skip a finished cell and continue an unfinished one; otherwise start afresh
    :return: the cell's record
    """
    folder = cell.folder(runs)
    done = progress(cell, runs) if resume else 0
    if not resume and folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if resume:
        _keep_unresumable_record(folder)
    if done < cell.budget:
        started = time.perf_counter()
        print(f"start {cell.env_id} {cell.name} seed {cell.seed} at {done}", flush=True)
        with open(folder / "train.log", "a") as log:
            result = subprocess.run(command(cell, runs, done), stdout=log, stderr=subprocess.STDOUT, check=False)
        status = "done" if result.returncode == 0 else f"FAILED (exit {result.returncode}, see {folder / 'train.log'})"
        print(f"{status}: {cell.env_id} {cell.name} seed {cell.seed} in {time.perf_counter() - started:.0f} s", flush=True)
        _keep_unresumable_record(folder)
    return json.loads((folder / "record.json").read_text()) if (folder / "record.json").exists() else {}


def _ppo_cells(runs: Path, env_id: str, seeds: dict[int, Any], budget: int) -> list[Cell]:
    """:param runs: the folder of all cells
    :param env_id: an env whose budget is over 1M
    :param seeds: rl-zoo3's PPO curves there, by seed
    :param budget: the env's budget
    :return: the PPO cells the issue's rule still needs (:func:`~sb3_dirpg.experiments.minigrid_targets.ppo_seeds`)"""
    have = ppo_seeds(list(seeds.values()), budget)
    at_1m = {seed for seed, curve in seeds.items() if success_at(curve, MIN_BUDGET) is not None}
    pool = sorted(set(seeds) | set(range(MIN_SEEDS)))
    open_seeds = [seed for seed in pool if not seeds.get(seed) or seeds[seed][-1][0] < budget]
    # the furthest checkpoint first, then a seed that also fills a place at 1M
    open_seeds.sort(key=lambda seed: (-progress(Cell(env_id, "ppo", seed, budget), runs), seed in at_1m, seed))
    long = open_seeds[: max(0, have.wanted_end - have.to_end)]
    short = [seed for seed in open_seeds if seed not in at_1m and seed not in long]
    short = short[: max(0, MIN_SEEDS - len(at_1m) - len(set(long) - at_1m))]
    return [Cell(env_id, "ppo", seed, budget) for seed in long] + [Cell(env_id, "ppo", seed, MIN_BUDGET) for seed in short]


def cells_to_run(runs: Path, envs: Sequence[str]) -> list[Cell]:
    """The cells the targets still lack (:func:`~sb3_dirpg.experiments.minigrid_targets.missing_cells`), as cells to
    train: unfinished seeds are continued from their checkpoints, and rl-zoo3's PPO past 1M runs its seeds to 1M, the
    one that goes on to the budget being the one with the latest checkpoint (else one that lacks 1M, else the lowest).

    :param runs: the folder of all cells
    :param envs: the envs to fill
    :return: the cells: those with a checkpoint first, the nearest to their end first (so that a session's end leaves
        fewer cells unfinished), then the others, the longest first
    """
    summary = summarize(runs, envs, list(METHODS))
    cells = []
    for env_id, row in summary.items():
        budget, methods = row["budget"], row["methods"]
        for method in ("dirpg", "reinforce", "ppo"):
            seeds = dict(zip(methods[method]["seed_ids"], methods[method]["curves"])) if method in methods else {}
            if method == "ppo" and budget > MIN_BUDGET:
                cells += _ppo_cells(runs, env_id, seeds, budget)
                continue
            done = {seed for seed, curve in seeds.items() if curve and curve[-1][0] >= budget}
            todo = [seed for seed in sorted(set(seeds) | set(range(MIN_SEEDS))) if seed not in done]
            cells += [Cell(env_id, method, seed, budget) for seed in todo[: max(0, MIN_SEEDS - len(done))]]
        same = [text for text in missing_cells(env_id, row) if text.startswith("ppo_same")]
        if same:
            seeds = dict(zip(methods["ppo_same"]["seed_ids"], methods["ppo_same"]["curves"])) if "ppo_same" in methods else {}
            done = {seed for seed, rows in seeds.items() if rows and rows[-1][0] >= budget}
            wanted = 1 if not done else MIN_SEEDS
            todo = [seed for seed in sorted(set(seeds) | set(range(MIN_SEEDS))) if seed not in done]
            cells += [Cell(env_id, "ppo_same", seed, budget) for seed in todo[: max(0, wanted - len(done))]]

    def order(cell: Cell) -> tuple[bool, int]:
        made = progress(cell, runs)
        return not made, cell.budget - made if made else made - cell.budget

    return sorted(cells, key=order)


# -- report ------------------------------------------------------------------------------------------------------


def interactions_to(points: Sequence[dict[str, Any]], level: float = LEVEL, mode: str = "sampled") -> float:
    """:param points: a record's points
    :param level: the success level
    :param mode: ``sampled`` or ``greedy``
    :return: interactions of the first evaluation at or above ``level`` (inf if none)"""
    for point in points:
        if point[mode]["success"] >= level:
            return float(point["interactions"])
    return float("inf")


def wall_to(points: Sequence[dict[str, Any]], level: float = LEVEL) -> float:
    """:param points: a record's points
    :param level: the success level
    :return: training wall time (evaluations excluded) to the first evaluation at or above ``level`` with sampled and
        with greedy actions (inf if none)"""
    for point in points:
        if min(point["sampled"]["success"], point["greedy"]["success"]) >= level:
            return float(point["wall_s"])
    return float("inf")


def _name(spec: Any) -> str:
    """:param spec: an import path, or a one-key dict of an import path and its keyword arguments
    :return: the class or function name"""
    return str(next(iter(spec)) if isinstance(spec, dict) else spec).rsplit(".", 1)[-1]


def _kwargs(spec: Any) -> dict[str, Any]:
    """:param spec: an import path, or a one-key dict of an import path and its keyword arguments
    :return: the keyword arguments (empty for a bare import path)"""
    return dict(next(iter(spec.values())) or {}) if isinstance(spec, dict) else {}


def _label(spec: Any) -> str:
    """:param spec: an import path, or a one-key dict of an import path and its keyword arguments
    :return: the class or function name, with its keyword arguments if any: ``FrameStackObservation(stack_size=4)``"""
    kwargs = _kwargs(spec)
    return _name(spec) + (f"({', '.join(f'{key}={value!r}' for key, value in kwargs.items())})" if kwargs else "")


def _reward_terms(specs: Sequence[Any]) -> str:
    """:param specs: an entry's ``env_wrapper`` list
    :return: the reward the reward wrappers in it give, e.g. ``goal 100, door 30, pickup 5``"""
    from sb3_dirpg.envs.minigrid.progress import DEFAULT_PROGRESS_REWARD
    from sb3_dirpg.envs.minigrid.wrappers import DEFAULT_DOOR_REWARD, DEFAULT_GOAL_REWARD, DEFAULT_PICKUP_REWARD

    terms = []
    for spec in specs:
        kwargs = _kwargs(spec)
        if _name(spec) == "MiniGridShapedReward":
            values = {"goal": kwargs.get("goal_reward", DEFAULT_GOAL_REWARD),
                      "door": kwargs.get("door_reward", DEFAULT_DOOR_REWARD),
                      "pickup": kwargs.get("pickup_reward", DEFAULT_PICKUP_REWARD)}  # fmt: skip
            terms += [f"{name} {value:g}" for name, value in values.items() if value]
        elif _name(spec) == "MiniGridProgressReward":
            terms.append(f"progress {kwargs.get('progress_reward', DEFAULT_PROGRESS_REWARD):g}")
    return ", ".join(terms)


def describe(env_id: str, method: str) -> dict[str, str]:
    """:param env_id: the env
    :param method: one of :data:`METHODS`
    :return: the reward, observation and heuristic the method uses"""
    settings = {**entry(env_id, method), **overrides(env_id, method)}
    specs = _as_list(settings.get("env_wrapper"))
    terms = _reward_terms(specs)
    steps = (settings.get("env_kwargs") or {}).get("max_steps", "env default")
    heuristic = settings.get("heuristic", "none")
    return {
        "reward": f"{f'shaped ({terms})' if terms else 'MiniGrid sparse'}, max_steps {steps}",
        "observation": "+".join(_label(w) for w in specs if not _name(w).endswith("Reward")) or "raw",
        "heuristic": _name(heuristic) + (
            f" ({settings['priority']}, alpha {settings.get('alpha', '-')})" if "priority" in settings else ""
        ),
    }


# a variant's settings are those of its --params (docs/hyperparameters.md lists them), not stored with its runs
VARIANT_SETTINGS = {"reward": "variant, see hyperparameters", "observation": "", "heuristic": ""}


def mean_success(curves: Sequence[Any], budgets: Sequence[float], mark: float, column: int = 1) -> float | None:
    """:param curves: one method's ``[interactions, sampled, greedy]`` rows per seed
    :param budgets: each seed's budget (seeds whose budget is short of ``mark`` are left out)
    :param mark: interactions where to read the success
    :param column: 1 for sampled success, 2 for greedy
    :return: the mean success there, None while a seed has not got there"""
    values = [success_at(curve, mark, column) for curve, budget in zip(curves, budgets) if budget >= mark]
    known = [value for value in values if value is not None]
    return float(np.mean(known)) if known and len(known) == len(values) else None


def summarize(runs: Path, envs: Sequence[str], methods: Sequence[str]) -> dict[str, Any]:
    """:param runs: the folder of all cells
    :param envs: the envs to report
    :param methods: the methods to report (``method@tag`` for a variant)
    :return: per env and method: seeds, median interactions to 0.9 (sampled), success at rl-zoo3's budget and at the
        end (mean over seeds, sampled and greedy), mean wall time and training interactions per second (both without
        the evaluations), and the settings"""
    summary: dict[str, Any] = {}
    for env_id in envs:
        budget, zoo = cell_budget(env_id), zoo_budget(env_id)
        rows = {}
        for method in methods:
            records, seed_ids = [], []
            for folder in sorted((runs / env_id).glob(f"{method}-s*")):
                record = read_record(folder) if method == folder.name.rsplit("-s", 1)[0] else None
                if record is not None:
                    records.append(record)
                    seed_ids.append(int(folder.name.rsplit("-s", 1)[1]))
            if not records:
                continue
            reach = [interactions_to(r["points"]) for r in records]
            reach_greedy = [interactions_to(r["points"], mode="greedy") for r in records]
            curves = [curve(r) for r in records]

            end = max(r["budget"] for r in records)  # seeds stopped short of it (PPO's 1M rule) are left out
            budgets = [r["budget"] for r in records]
            rows[method] = {
                "seeds": len(records),
                "seed_ids": seed_ids,
                "finished": int(sum(finished(r) for r in records if r["points"])),
                "stopped_early": int(sum("stopped_early" in r for r in records)),
                "budgets": [int(budget) for budget in budgets],
                "to_level": float(np.median(reach)),
                "reached": int(np.isfinite(reach).sum()),
                "to_level_greedy": float(np.median(reach_greedy)),
                "reached_greedy": int(np.isfinite(reach_greedy).sum()),
                "wall_to_level": float(np.median([wall_to(r["points"]) for r in records])),
                "at_zoo_budget": mean_success(curves, budgets, min(zoo, end)),
                "at_end": mean_success(curves, budgets, end),
                "at_end_greedy": mean_success(curves, budgets, end, column=2),
                "wall_s": float(np.mean([r["points"][-1]["wall_s"] for r in records if r["points"] and r["budget"] >= end])),
                "rate": float(np.mean([r["points"][-1]["interactions"] / r["points"][-1]["wall_s"]
                                       for r in records if r["points"] and r["points"][-1]["wall_s"] > 0] or [np.nan])),
                "curves": curves,
                **(describe(env_id, method) if "@" not in method else VARIANT_SETTINGS),
            }
        summary[env_id] = {"zoo_budget": zoo, "budget": budget, "unsolved": env_id in UNSOLVED, "methods": rows}
    return summary


def _fmt_rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _fmt_wall(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if np.isfinite(seconds) else "not reached"


def _seeds(method: dict[str, Any]) -> str:
    """:param method: one method's row of the summary
    :return: ``3 (3)``: seeds (finished), how many were stopped short of the others' budget, and how many stopped early
        by the rule (:data:`STOP_LEVEL`)"""
    end = max(method["budgets"])
    short = {budget: method["budgets"].count(budget) for budget in sorted(set(method["budgets"])) if budget < end}
    early = f"; {method['stopped_early']} stopped early" if method.get("stopped_early") else ""
    shorts = "".join(f"; {n} to {format_count(b)}" for b, n in short.items())
    return f"{method['seeds']} ({method['finished']}{shorts}{early})"


def markdown_table(summary: dict[str, Any]) -> str:
    """:param summary: :func:`summarize`'s output
    :return: the table in Markdown"""
    lines = [
        "| env | budget (rl-zoo3) | method | seeds (finished) | median interactions to 0.9, sampled | greedy | "
        "median wall time to 0.9, both | success at rl-zoo3 budget | success at end, sampled / greedy | wall time | "
        "interactions/s | reward | observation | heuristic |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |",
    ]
    for env_id, row in summary.items():
        name = env_id.removeprefix("MiniGrid-").removesuffix("-v0") + (" (Unsolved)" if row["unsolved"] else "")
        for method, m in row["methods"].items():
            lines.append(
                f"| {name} | {format_count(row['budget'])} ({format_count(row['zoo_budget'])}) | {method} | {_seeds(m)} | "
                f"{format_count(m['to_level'])} ({m['reached']}/{m['seeds']}) | "
                f"{format_count(m['to_level_greedy'])} ({m['reached_greedy']}/{m['seeds']}) | "
                f"{_fmt_wall(m['wall_to_level'])} | "
                f"{_fmt_rate(m['at_zoo_budget'])} | {_fmt_rate(m['at_end'])} / {_fmt_rate(m['at_end_greedy'])} | "
                f"{m['wall_s'] / 60:.1f} min | {m['rate']:,.0f} | {m['reward']} | {m['observation']} | {m['heuristic']} |"
            )
    return "\n".join(lines) + "\n"


def plot(summary: dict[str, Any]) -> Any:
    """:param summary: :func:`summarize`'s output
    :return: a figure: sampled success against interactions, one panel per env, mean over seeds"""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = list(summary)
    cols = 4
    rows = max(1, int(np.ceil(len(envs) / cols)))
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3 * rows), squeeze=False)
    for ax, env_id in zip(axes.flat, envs):
        for method, m in summary[env_id]["methods"].items():
            length = min(len(c) for c in m["curves"])
            curves = np.array([c[:length] for c in m["curves"]], dtype=float)
            if length:
                ax.plot(curves[0, :, 0] / 1e6, curves[:, :, 1].mean(axis=0), label=f"{method} ({m['seeds']})")
        ax.axvline(summary[env_id]["zoo_budget"] / 1e6, color="grey", lw=0.5, ls="--")
        ax.set_title(env_id.removeprefix("MiniGrid-").removesuffix("-v0"), fontsize=9)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("interactions (M)", fontsize=8)
    for ax in list(axes.flat)[len(envs):]:
        ax.axis("off")
    axes.flat[0].set_ylabel("success (sampled actions)")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def methods_in(runs: Path, envs: Sequence[str]) -> list[str]:
    """The methods and variants that have a cell in ``runs``, the table's methods first.

    :param runs: the folder of all cells
    :param envs: the envs to look in
    :return: e.g. ``["dirpg", "reinforce", "ppo", "dirpg@fine"]``
    """
    found = {folder.parent.name.rsplit("-s", 1)[0] for env_id in envs for folder in (runs / env_id).glob("*-s*/record.json")}
    return [method for method in METHODS if method in found] + sorted(found - set(METHODS))


def report(runs: Path, out: Path, envs: Sequence[str], methods: Sequence[str], page: Path | None = None) -> dict[str, Any]:
    """Write ``minigrid_table.{json,md,png}`` into ``out``, and the targets judged on them
    (:mod:`~sb3_dirpg.experiments.minigrid_targets`) into ``minigrid_targets.{json,md}``.

    :param runs: the folder of all cells
    :param out: the results folder
    :param envs: the envs to report
    :param methods: the methods to report
    :param page: a results page whose ``minigrid table`` and ``minigrid targets`` blocks show these tables (they are
        rewritten)
    :return: the summary
    """
    summary = summarize(runs, envs, methods)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "minigrid_table.json", summary)
    (out / "minigrid_table.md").write_text(markdown_table(summary))
    verdict = judge(summarize(runs, envs, [*METHODS, *[f"{method}@{TIE_BREAK}" for method in METHODS]]))
    write_json(out / "minigrid_targets.json", verdict)
    (out / "minigrid_targets.md").write_text(targets_table(verdict))
    if page is not None:
        refresh_block(page, "minigrid table", markdown_table(summary))
        refresh_block(page, "minigrid targets", targets_table(verdict))
    if any(row["methods"] for row in summary.values()):
        plot(summary).savefig(out / "minigrid_table.png", dpi=110)
    print(markdown_table(summary))
    return summary


PROBE_SETTINGS = ("grid", "manhattan", "gumbel")


def probe_bounds(
    envs: Sequence[str], n_maps: int = 16, seed: int = 0, params: Sequence[str] = ()
) -> dict[str, dict[str, dict[str, float]]]:
    """What the bound does for the search of an untrained policy, per env: DirPG's entry with
    :class:`~sb3_dirpg.envs.minigrid.MiniGridBound` (``grid``; the entry's own bound where it is one, such as
    :class:`~sb3_dirpg.envs.minigrid.MiniGridProgressBound`), with :class:`~sb3_dirpg.envs.minigrid.MultiRoomBound`
    (``manhattan``, envs with a goal cell and the door reward only), and with the Gumbel priority and no bound
    (``gumbel``). Same maps (seeds 100, 101, ...), same policy, same search noise.

    :param envs: env ids with a DirPG entry
    :param n_maps: maps searched per env
    :param seed: seed of the policy and the search noise
    :param params: a variant's ``key:value`` changes of the entry (its ``env_wrapper`` and ``heuristic``)
    :return: per env and setting: the fraction of maps where the search found a success, where ``a_dir`` improved on
        ``a_opt``, the trajectories completed and the interactions spent per map
    """
    import torch as th

    from sb3_dirpg.dirpg import DirPG
    from sb3_dirpg.envs.minigrid import MiniGridBound, MiniGridCNN, MiniGridProgressBound, MultiRoomBound
    from sb3_dirpg.experiments.held_out import build_env
    from sb3_dirpg.integrations.zoo import prepare_hyperparams

    th.set_num_threads(1)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for env_id in envs:
        settings = {**entry(env_id, "dirpg"), **parse_params(params)}
        env = build_env(env_id, settings.get("env_kwargs"), settings.get("env_wrapper"))
        env.reset(seed=0)
        prepared = prepare_hyperparams(dict(settings))
        out[env_id] = {}
        for name in PROBE_SETTINGS:
            kwargs = dict(search_budget=settings["search_budget"], epsilon=settings["epsilon"], gamma=settings["gamma"],
                          stop_on_success=settings["stop_on_success"], prune=settings["prune"],
                          early_stop=settings["early_stop"])  # fmt: skip
            rewards = prepared["heuristic"]  # the entry's bound carries the reward values of its env
            if name == "grid":
                grid = rewards if isinstance(rewards, MiniGridBound) else MiniGridBound(
                    settings["gamma"], rewards.door_reward, rewards.goal_reward, rewards.pickup_reward)  # fmt: skip
                kwargs.update(priority="astar", alpha=settings["alpha"], heuristic=grid)
            elif name == "manhattan":
                if not any(cell is not None and cell.type == "goal" for cell in env.unwrapped.grid.grid):
                    continue  # MultiRoomBound needs a goal cell
                if isinstance(rewards, MiniGridProgressBound):
                    continue  # it knows nothing of the progress reward
                manhattan = MultiRoomBound(settings["gamma"], rewards.door_reward, rewards.goal_reward, rewards.pickup_reward)
                kwargs.update(priority="astar", alpha=settings["alpha"], heuristic=manhattan)
            else:
                kwargs.update(priority="gumbel", prune=False)
            policy_kwargs = dict(features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False)
            model = DirPG("MultiInputPolicy", env, seed=seed, device="cpu", policy_kwargs=policy_kwargs, **kwargs)
            episodes = model.search(list(range(100, 100 + n_maps))).episodes
            out[env_id][name] = {
                "success": float(np.mean([ep.success_dir for ep in episodes])),
                "improved": float(np.mean([ep.improved for ep in episodes])),
                "trajectories": float(np.mean([ep.trajectories for ep in episodes])),
                "interactions": float(np.mean([ep.interactions for ep in episodes])),
            }
            print(env_id, name, out[env_id][name], flush=True)
    return out


def probe_table(probe: dict[str, dict[str, dict[str, float]]]) -> str:
    """:param probe: :func:`probe_bounds`'s output
    :return: a Markdown table"""
    lines = ["| env | setting | maps with a success found | maps improved | trajectories per map | interactions per map |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for env_id, rows in probe.items():
        for name, row in rows.items():
            lines.append(f"| {env_id.removeprefix('MiniGrid-').removesuffix('-v0')} | {name} | {row['success']:.2f} | "
                         f"{row['improved']:.2f} | {row['trajectories']:.1f} | {row['interactions']:.0f} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    """:return: the command-line parser"""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=None, help="env ids (default: the 12 of rl-zoo3's table)")
    parser.add_argument("--methods", nargs="+", default=None,
                        help=f"of {', '.join(METHODS)} (default: {' '.join(TRAINED)}; with --report, every method and "
                        "variant that has a cell); with --report, method@tag names a variant")
    parser.add_argument("--seeds", nargs="+", type=int, default=None, help="training seeds (default: 0 1 2)")
    parser.add_argument("--procs", type=int, default=2, help="cells run at once (one core each)")
    parser.add_argument("--budget", type=int, default=None, help="override every cell's budget (quick checks)")
    parser.add_argument("--resume", action="store_true", help="skip finished cells, continue unfinished ones")
    parser.add_argument("--fill", action="store_true",
                        help="train the cells the targets still lack (the report's last column), continuing unfinished "
                        "ones; with --envs, only there")
    parser.add_argument("--report", action="store_true",
                        help="only write the report from the runs made so far (of every cell, unless --envs, --methods "
                        "or --tag name some)")
    parser.add_argument("--tag", default="", help="name of a variant of the methods (with --params or --budget)")
    parser.add_argument("--params", nargs="+", default=[], metavar="KEY:VALUE",
                        help="hyperparameters the variant changes (rl-zoo3's -params syntax; not env_kwargs)")
    parser.add_argument("--probe", type=int, default=0, metavar="MAPS",
                        help="only measure what the bound does for the search of an untrained policy, on MAPS maps")
    parser.add_argument("--runs", type=Path, default=None, help="folder of the cells (default: OUT/minigrid_table_runs)")
    parser.add_argument("--out", type=Path, default=None, help="results folder (default: docs/results in a checkout)")
    parser.add_argument("--page", type=Path, default=None,
                        help="results page whose table blocks the report rewrites (default: results.md beside the "
                        "results folder, if there is one)")
    return parser


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """:param argv: command-line arguments
    :return: the summary"""
    args = build_parser().parse_args(argv)
    methods_given, envs_given = args.methods is not None, args.envs is not None
    if args.fill and (methods_given or args.seeds is not None or args.tag or args.params or args.budget or args.report):
        raise SystemExit("--fill picks the methods, seeds and budgets itself: leave out --methods, --seeds, --tag, "
                         "--params, --budget and --report (--envs limits where it fills)")
    args.methods = args.methods if methods_given else list(TRAINED)
    args.envs = args.envs if envs_given else list(ENVS)
    args.seeds = args.seeds if args.seeds is not None else list(range(MIN_SEEDS))
    if bool(args.tag) != bool(args.params) and not (args.tag and args.budget):
        raise SystemExit("--tag goes with --params or --budget: a variant has a name and the settings (or budget) it changes")
    if any(param.split(":")[0] in ("env_kwargs", "callback") for param in args.params):
        raise SystemExit("--params: env_kwargs and callback stay as the entry has them (a variant may change env_wrapper)")
    bad = [method for method in args.methods if method.split("@")[0] not in METHODS or ("@" in method and not args.report)]
    if bad:
        raise SystemExit(f"--methods: {', '.join(bad)}: choose from {', '.join(METHODS)} (method@tag only with --report)")
    unknown = [env_id for env_id in args.envs if env_id not in _load_yaml(zoo_ppo_file())]
    if unknown:
        raise SystemExit(f"--envs: rl-zoo3's ppo.yml has no entry for {', '.join(unknown)}")
    for method in args.methods:
        for env_id in args.envs:
            entry(env_id, method.split("@")[0])  # a missing entry fails here, before any training
    out = args.out or default_out()
    if args.probe:
        probe = probe_bounds(args.envs, args.probe, params=args.params)
        out.mkdir(parents=True, exist_ok=True)
        name = f"minigrid_bounds-{args.tag}" if args.tag else "minigrid_bounds"
        write_json(out / f"{name}.json", probe)
        (out / f"{name}.md").write_text(probe_table(probe))
        print(probe_table(probe))
        return probe
    runs = args.runs or out / "minigrid_table_runs"
    if args.fill:
        cells = cells_to_run(runs, args.envs)
        for cell in cells:
            print(f"to run: {cell.env_id} {cell.name} seed {cell.seed} to {format_count(cell.budget)}", flush=True)
        with ThreadPoolExecutor(max_workers=args.procs) as pool:
            list(pool.map(lambda cell: run_cell(cell, runs, resume=True), cells))
    elif not args.report:
        cells = [
            Cell(env_id, method, seed, args.budget or cell_budget(env_id), args.tag, tuple(args.params))
            for env_id in args.envs
            for seed in args.seeds
            for method in args.methods
        ]
        with ThreadPoolExecutor(max_workers=args.procs) as pool:
            list(pool.map(lambda cell: run_cell(cell, runs, args.resume), cells))
    if args.report and (methods_given or envs_given or args.tag):  # a report of the cells named
        methods = [f"{method}@{args.tag}" if args.tag else method for method in args.methods]
        return report(runs, out, args.envs, methods)
    # the whole table: every env, method and variant with a cell, so that a run of a few cells leaves it whole
    envs = [env_id for env_id in ENVS if (runs / env_id).is_dir()]
    page = args.page or out.parent / "results.md"
    return report(runs, out, envs, methods_in(runs, envs), page if page.is_file() else None)


if __name__ == "__main__":
    main()
