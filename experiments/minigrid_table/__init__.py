"""``python -m experiments.minigrid_table``: DirPG, REINFORCE and rl-zoo3's PPO on rl-zoo3's MiniGrid table.

Every cell (env, method, seed) is trained by rl-zoo3's own training entry point: ``python -m rl_zoo3.train`` with
rl-zoo3's shipped ``ppo.yml`` for PPO, and the project's bridge ``python -m sb3_dirpg.integrations.zoo train`` with
``zoo_hyperparams/{dirpg,reinforce}.yml`` for ours. The only thing added to an entry is the evaluation callback
(:class:`~experiments.held_out.HeldOutEvaluation`, through rl-zoo3's ``callback`` hyperparameter): every 5 %
of the budget it plays the policy with no search on 200 held-out seeds (10000..10199, never trained on), with sampled
actions (as rl-zoo3 evaluates MiniGrid) and greedy ones, checkpoints, and appends to the cell's record.

A cell runs to the larger of rl-zoo3's PPO budget and 1M interactions, capped at 3M. ``ppo_shaped`` is rl-zoo3's PPO
with the reward and the step limit of the env's DirPG entry (so that no win comes from reward shaping alone).
Cells run as subprocesses, ``--procs`` at a time, one torch thread each; ``--resume`` skips finished cells and
continues unfinished ones from their last checkpoint (rl-zoo3's ``--trained-agent``). ``--fill`` trains just the cells
that the targets still lack (:func:`cells_to_run`), continuing unfinished ones; ``--report`` rebuilds the whole table,
the results page's list of the cells still to run (:func:`plan_table`) and the check of rl-zoo3's PPO against its
own published figures (:func:`reproduction_table`).

A checkpoint is ``model.zip`` (and ``ENV/vecnormalize.pkl``) in the cell's folder, which git ignores: a cell left
unfinished at the end of a session keeps its progress on another machine only if its checkpoint is committed
(``git add -f``); take it out of the index (``git rm --cached``) once the cell has finished. A cell whose record has
no checkpoint starts again from scratch; its earlier record is kept aside (``record-without-checkpoint.json``) and
reported until the rerun passes it (:func:`read_record`), so the table never loses measured points to a rerun.

The package has one module per job: :mod:`.cells` (the envs, methods, entries, budgets and records), :mod:`.runner`
(a cell's subprocess), :mod:`.plan` (the cells ``--fill`` trains, and their list), :mod:`.report` (the table and the targets),
:mod:`.reproduction` (rl-zoo3's PPO against its ``benchmark.md``), :mod:`.probe` (``--probe``) and :mod:`.cli` (the
command line).
"""

from experiments.minigrid_table.cells import (
    ENVS,
    FLAT_OBS,
    FLOAT32_CAST,
    KEPT_RECORD,
    MAX_BUDGET,
    METHODS,
    MIN_BUDGET,
    POINTS,
    SAME_KEYS,
    SAME_NORMALIZE,
    STOP_AFTER,
    STOP_LEVEL,
    TRAINED,
    UNSOLVED,
    Cell,
    cell_budget,
    curve,
    entry,
    evaluation_env,
    finished,
    importable,
    masks_actions,
    overrides,
    parse_params,
    progress,
    read_record,
    repaired,
    zoo_budget,
    zoo_ppo_file,
)  # fmt: skip
from experiments.minigrid_table.cli import build_parser, main
from experiments.minigrid_table.plan import cells_to_run, plan_table
from experiments.minigrid_table.probe import probe_bounds, probe_table
from experiments.minigrid_table.report import (
    describe,
    interactions_to,
    markdown_table,
    mean_success,
    methods_in,
    plot,
    report,
    summarize,
    wall_to,
)  # fmt: skip
from experiments.minigrid_table.reproduction import GATE, TOLERANCE, ZOO_BENCHMARK, reproduction, reproduction_table
from experiments.minigrid_table.runner import command, run_cell

__all__ = [
    "ENVS", "FLAT_OBS", "FLOAT32_CAST", "GATE", "KEPT_RECORD", "MAX_BUDGET", "METHODS", "MIN_BUDGET", "POINTS", "SAME_KEYS",
    "SAME_NORMALIZE", "STOP_AFTER", "STOP_LEVEL", "TOLERANCE", "TRAINED", "UNSOLVED", "ZOO_BENCHMARK", "Cell",
    "build_parser", "cell_budget", "cells_to_run", "command", "curve", "describe", "entry", "evaluation_env", "finished",
    "importable", "interactions_to", "main", "markdown_table", "masks_actions", "mean_success", "methods_in", "overrides",
    "parse_params", "plan_table", "plot", "probe_bounds", "probe_table", "progress", "read_record", "repaired", "report",
    "reproduction", "reproduction_table", "run_cell", "summarize", "wall_to", "zoo_budget", "zoo_ppo_file",
]  # fmt: skip
