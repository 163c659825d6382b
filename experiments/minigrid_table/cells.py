"""The MiniGrid table's cells: the envs and methods, the entries (rl-zoo3's and ours, with the harness's
overrides), the budget rule, and what a cell's record says (:func:`read_record`, :func:`progress`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from experiments.common import parse_params

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


def load_yaml(path: Path) -> dict[str, Any]:
    with open(path) as file:
        return yaml.load(file, Loader=yaml.UnsafeLoader)  # rl-zoo3's loader: its files use !!float and merges


def zoo_ppo_file() -> Path:
    """:return: rl-zoo3's shipped PPO hyperparameter file"""
    from sb3_dirpg.integrations.zoo import rl_zoo3_conf_file

    return rl_zoo3_conf_file("ppo")


def our_file(algo: str) -> Path:
    """:param algo: ``dirpg`` or ``reinforce``
    :return: the project's hyperparameter file for it"""
    from sb3_dirpg.integrations.zoo import default_conf_file

    return Path(default_conf_file(algo))


def zoo_budget(env_id: str) -> int:
    """:param env_id: an env of the table
    :return: rl-zoo3's training budget for PPO on it"""
    return int(load_yaml(zoo_ppo_file())[env_id]["n_timesteps"])


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
    :param threads: torch threads of the training process (rl-zoo3's ``--num-threads``); the table's cells use one
    """

    env_id: str
    method: str
    seed: int
    budget: int
    tag: str = ""
    params: tuple[str, ...] = ()
    threads: int = 1

    @property
    def name(self) -> str:
        """:return: the method, with its variant's tag"""
        return f"{self.method}@{self.tag}" if self.tag else self.method

    def folder(self, runs: Path) -> Path:
        """:param runs: the folder of all cells
        :return: this cell's folder"""
        return runs / self.env_id / f"{self.name}-s{self.seed}"


def entry(env_id: str, method: str) -> dict[str, Any]:
    """The hyperparameter entry a method trains with (rl-zoo3's file for PPO, the project's for ours; DirPG's on a
    MiniGrid env completed by the one setting, as the zoo bridge completes it).

    :param env_id: the env
    :param method: one of :data:`METHODS`
    :return: the entry
    :raises ValueError: where the file has no entry for the env
    """
    path = zoo_ppo_file() if method.startswith("ppo") else our_file(method)
    table = load_yaml(path)
    if method == "dirpg" and env_id.startswith("MiniGrid-"):  # as the zoo bridge reads it
        from sb3_dirpg.envs.minigrid.setting import completed_entry

        return completed_entry(env_id, table.get(env_id))
    if env_id not in table:
        message = f"{path} has no entry for {env_id}, so the {method} method cannot run on it"
        if method.startswith("ppo"):
            message += "; ppo_same needs only a DirPG entry (docs/scripts/maskable_ppo_frontier.py trains it on such an env)"
        raise ValueError(message)
    return dict(table[env_id])


def repaired(wrappers: Any) -> list[Any]:
    """:param wrappers: an ``env_wrapper`` entry of rl-zoo3's
    :return: the same wrappers with :data:`FLOAT32_CAST` right after ``FlatObsWrapper`` (where it is not already)"""
    out = []
    specs = as_list(wrappers)
    for index, spec in enumerate(specs):
        out.append(spec)
        if spec == FLAT_OBS and (index + 1 == len(specs) or specs[index + 1] != FLOAT32_CAST):
            out.append(FLOAT32_CAST)
    return out


def importable(policy_kwargs: str) -> str:
    """:param policy_kwargs: a ``policy_kwargs`` string of the project's files, which may name ``MiniGridCNN``
    :return: the same expression, evaluable where ``MiniGridCNN`` is not imported (rl-zoo3's own ``eval``)"""
    return policy_kwargs.replace("MiniGridCNN", "__import__('sb3_dirpg.envs.minigrid', fromlist=['MiniGridCNN']).MiniGridCNN")


def zoo_wrappers(env_id: str) -> list[Any]:
    """:param env_id: an env of rl-zoo3's PPO file
    :return: rl-zoo3's ``env_wrapper`` for it, repaired (:func:`repaired`)"""
    return repaired(entry(env_id, "ppo").get("env_wrapper"))


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
    if method == "ppo":
        return {"env_wrapper": zoo_wrappers(env_id)}
    ours = entry(env_id, "dirpg")
    if method == "ppo_same":
        return {"env_wrapper": as_list(ours.get("env_wrapper")), "env_kwargs": ours.get("env_kwargs", {}),
                "policy": ours["policy"], "policy_kwargs": importable(ours["policy_kwargs"]),
                "normalize": SAME_NORMALIZE}  # fmt: skip
    reward = [w for w in as_list(ours.get("env_wrapper")) if "ShapedReward" in str(w) or "ProgressReward" in str(w)]
    return {"env_wrapper": reward + zoo_wrappers(env_id), "env_kwargs": ours.get("env_kwargs", {})}


def as_list(value: Any) -> list[Any]:
    return [] if value is None else list(value) if isinstance(value, list) else [value]


def evaluation_env(env_id: str, method: str, params: Sequence[str] = ()) -> tuple[dict[str, Any], Any]:
    """:param env_id: the env
    :param method: one of :data:`METHODS`
    :param params: a variant's ``key:value`` changes (an ``env_wrapper`` among them changes the env)
    :return: the ``env_kwargs`` and ``env_wrapper`` the method trains with (the evaluation env is built the same);
        ``ppo_same``'s are the DirPG entry's, so it has them on every env with a DirPG entry (the frontier's too)"""
    base = {} if method == "ppo_same" else entry(env_id, method)
    settings = {**base, **overrides(env_id, method), **parse_params(params)}
    return dict(settings.get("env_kwargs") or {}), settings.get("env_wrapper")


def masks_actions(env_wrapper: Any) -> bool:
    """:param env_wrapper: an entry's ``env_wrapper`` (an import path, a one-key mapping of one to its arguments, or a
        list of those)
    :return: whether a wrapper of the chain gives the env ``action_masks()`` (the ``ppo`` methods then train
        sb3-contrib's ``MaskablePPO``, which learns with them, instead of PPO, which would ignore them)"""
    from sb3_dirpg.integrations.zoo import import_object

    paths = [wrapper if isinstance(wrapper, str) else next(iter(wrapper)) for wrapper in as_list(env_wrapper)]
    return any(callable(getattr(import_object(path), "action_masks", None)) for path in paths)


def record_end(record: dict[str, Any]) -> int:
    """:param record: a cell's record
    :return: the interactions of its last evaluation (-1 if none)"""
    return int(record["points"][-1]["interactions"]) if record.get("points") else -1


def finished(record: dict[str, Any]) -> bool:
    """:param record: a cell's record
    :return: whether the cell ran to its budget or stopped early by the rule (:data:`STOP_LEVEL`)"""
    return "stopped_early" in record or record_end(record) >= record["budget"]


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
    return max(record_end(record), 0)


def read_record(folder: Path) -> dict[str, Any] | None:
    """A cell's record: ``record.json``, or the record of an earlier run that left no checkpoint while the rerun from
    scratch has not yet passed it.

    :param folder: the cell's folder
    :return: the record that reaches further (the current one on a tie), or ``None`` if the cell has none
    """
    paths = [path for path in (folder / "record.json", folder / KEPT_RECORD) if path.exists()]
    records = [json.loads(path.read_text()) for path in paths]
    return max(records, key=record_end) if records else None
