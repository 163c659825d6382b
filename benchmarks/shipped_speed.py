"""``python -m benchmarks.shipped_speed``: the paper's MultiRoom-N6 setting as the zoo shipped it, early and late.

Every row is built from the paper's N6 setting (DirPG: ``experiments.multiroom_setup.DIRPG_PAPER_SHIPPED``, the N6
entry of ``zoo_hyperparams/dirpg.yml`` until N6 took the one MiniGrid setting; ``reinforce.yml``'s N6 entry; one map
per update), on the compiled simulator that ``simulator_backend="auto"`` picks, and measured by ``learn``'s
interactions per second, side by side and interleaved over rounds:

* ``dirpg`` the entry as it ships (``batch_episodes: 1``, ``lookahead: 16``, the search's compiled loop, which also
  evaluates the network in compiled code);
* ``dirpg_torch_forward``: the same with the search's forwards in torch (the network's compiled forward off);
* ``dirpg_python_loop``: the shipped entry with one Python round trip per lockstep iteration (``compiled_loop=False``;
  it learns exactly what the shipped entry learns), forwards in compiled code;
* ``dirpg_python_torch``: the Python loop with torch forwards: the shipped entry as it was before the compiled loop;
* ``dirpg_first_shipped``: the entry as first shipped, searching one map at a time in the Python loop with torch
  forwards (``lookahead=1``, ``compiled_loop=False``);
* ``dirpg_batch32``: 32 maps per search and one update on their mean (the throughput benchmark's row);
* ``reinforce``: the REINFORCE entry (30 rollouts of 100 steps per map).

*Early* is the untrained policy. *Late* loads the policy weights of a trained N6 checkpoint (``--checkpoint``, a
DirPG model zip; every row shares the network) into every row: there ``stop="success"`` ends most searches at
``a_opt``, and REINFORCE's rollouts end at the goal. The ratios are each row's median rate over REINFORCE's, in the same
phase.
"""

from __future__ import annotations

import argparse
import platform
import statistics
from pathlib import Path
from typing import Any

import torch as th
import yaml

from benchmarks.common import RESULTS, PythonLoop
from experiments.common import write_json
from experiments.multiroom_setup import MAX_STEPS, paper_model_kwargs
from sb3_dirpg import DirPG
from sb3_dirpg.baselines import Reinforce
from sb3_dirpg.common.batched_policy import BatchedPolicy
from sb3_dirpg.envs import make_minigrid_env
from sb3_dirpg.integrations.zoo import HYPERPARAMS_DIR, algorithm_kwargs

ENV_ID = "MiniGrid-MultiRoom-N6-v0"
ROWS = {
    "dirpg": ("dirpg", {}),
    "dirpg_torch_forward": ("dirpg_torch", {}),
    "dirpg_python_loop": ("dirpg", dict(compiled_loop=False)),
    "dirpg_python_torch": ("dirpg_torch", dict(compiled_loop=False)),
    "dirpg_first_shipped": ("dirpg_torch", dict(compiled_loop=False, lookahead=1)),
    "dirpg_batch32": ("dirpg", dict(batch_episodes=32)),
    "reinforce": ("reinforce", {}),
}


class TorchBatchedPolicy(BatchedPolicy):
    """The search's forwards in torch: no compiled forward."""

    def compiled_forward(self) -> None:
        """:return: None"""
        return None


class TorchForwardDirPG(DirPG):
    """DirPG whose search forwards the policy in torch."""

    batched_policy_class = TorchBatchedPolicy


def shipped_model(algo: str, seed: int = 0, **changes: Any) -> DirPG | Reinforce:
    """:param algo: ``dirpg``, ``dirpg_torch`` (search forwards in torch) or ``reinforce``
    :param seed: the model's seed
    :param changes: settings that differ from the entry; ``compiled_loop=False`` searches in the Python loop
    :return: the model of the paper's N6 setting (DirPG: :data:`~experiments.multiroom_setup.DIRPG_PAPER_SHIPPED`, the
        N6 entry of ``dirpg.yml`` until N6 took the one MiniGrid setting; REINFORCE: its N6 entry), ``max_steps`` 100"""
    changes = dict(changes)
    compiled_loop = changes.pop("compiled_loop", True)
    if algo == "reinforce":
        with open(HYPERPARAMS_DIR / "reinforce.yml") as file:
            entry = yaml.load(file, Loader=yaml.UnsafeLoader)[ENV_ID]
        kwargs = {**algorithm_kwargs(entry), **changes}
    else:
        kwargs = {**paper_model_kwargs(), **changes}
    env = make_minigrid_env(ENV_ID, max_steps=MAX_STEPS)
    cls = {"dirpg": DirPG, "dirpg_torch": TorchForwardDirPG, "reinforce": Reinforce}[algo]
    if not compiled_loop:
        cls = type(f"PythonLoop{cls.__name__}", (PythonLoop, cls), {})
    return cls("MultiInputPolicy", env, seed=seed, device="cpu", **kwargs)


def rate(model: DirPG | Reinforce, interactions: int) -> float:
    """:param model: a model
    :param interactions: at least this many more interactions are made
    :return: interactions per second of ``learn``"""
    import time

    before, start = model.num_timesteps, time.perf_counter()
    model.learn(interactions, reset_num_timesteps=False)
    return (model.num_timesteps - before) / (time.perf_counter() - start)


def measure(rounds: int, interactions: int, checkpoint: Path | None) -> dict[str, Any]:
    """:param rounds: interleaved rounds
    :param interactions: interactions per row and round
    :param checkpoint: a trained DirPG N6 model for the late phase, or None for the early phase only
    :return: per phase and row, the rates of every round, their median and the ratio to REINFORCE's median"""
    th.set_num_threads(1)
    phases: dict[str, Any] = {}
    trained = DirPG.load(checkpoint, device="cpu").policy.state_dict() if checkpoint is not None else None
    for phase in ("early", "late") if trained is not None else ("early",):
        models = {name: shipped_model(algo, **changes) for name, (algo, changes) in ROWS.items()}
        if phase == "late":
            for model in models.values():
                model.policy.load_state_dict(trained)
        rates: dict[str, list[float]] = {name: [] for name in models}
        for _ in range(rounds):
            for name, model in models.items():
                rates[name].append(rate(model, interactions))
        medians = {name: statistics.median(values) for name, values in rates.items()}
        phases[phase] = {name: {"rates": [round(r) for r in rates[name]], "median": round(medians[name]),
                                "vs_reinforce": round(medians[name] / medians["reinforce"], 3)}
                         for name in models}  # fmt: skip
    return phases


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """:param argv: command-line arguments
    :return: the results"""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--interactions", type=int, default=20_000, help="per row and round")
    parser.add_argument("--checkpoint", type=Path, default=None, help="a trained DirPG N6 model zip (the late phase)")
    parser.add_argument("--out", type=Path, default=RESULTS / "shipped_speed.json")
    args = parser.parse_args(argv)
    result = {"machine": platform.processor() or platform.machine(), "rounds": args.rounds,
              "interactions": args.interactions, "checkpoint": str(args.checkpoint),
              "phases": measure(args.rounds, args.interactions, args.checkpoint)}  # fmt: skip
    print(f"{'phase':6s} {'row':20s} {'median/s':>9s} {'vs REINFORCE':>13s}")
    for phase, rows in result["phases"].items():
        for name, row in rows.items():
            print(f"{phase:6s} {name:20s} {row['median']:9d} {row['vs_reinforce']:13.3f}")
    write_json(args.out, result, announce=True)
    return result


if __name__ == "__main__":
    main()
