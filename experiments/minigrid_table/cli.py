"""The command line of ``python -m experiments.minigrid_table``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from experiments.common import default_out, key_value, nonnegative_int, positive_int, refresh_block, write_json
from experiments.minigrid_table.cells import (
    ENVS,
    METHODS,
    TRAINED,
    Cell,
    cell_budget,
    entry,
    load_yaml,
    zoo_ppo_file,
)  # fmt: skip
from experiments.minigrid_table.plan import cells_to_run, plan_table
from experiments.minigrid_table.probe import probe_bounds, probe_table
from experiments.minigrid_table.report import methods_in, report
from experiments.minigrid_table.reproduction import reproduction, reproduction_table
from experiments.minigrid_table.runner import run_cell
from experiments.minigrid_targets import MIN_SEEDS


def build_parser() -> argparse.ArgumentParser:
    """:return: the command-line parser"""
    description = sys.modules[__package__].__doc__  # the package's
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=None, help="env ids (default: the 12 of rl-zoo3's table)")
    parser.add_argument("--methods", nargs="+", default=None,
                        help=f"of {', '.join(METHODS)} (default: {' '.join(TRAINED)}; with --report, every method and "
                        "variant that has a cell); with --report, method@tag names a variant")
    parser.add_argument("--seeds", nargs="+", type=nonnegative_int, default=None, help="training seeds (default: 0 1 2)")
    parser.add_argument("--procs", type=positive_int, default=2, help="cells run at once (one core each)")
    parser.add_argument("--budget", type=positive_int, default=None, help="override every cell's budget (quick checks)")
    parser.add_argument("--resume", action="store_true", help="skip finished cells, continue unfinished ones")
    parser.add_argument("--fill", action="store_true",
                        help="train the cells the targets still lack (the report's last column), continuing unfinished "
                        "ones; with --envs, only there")
    parser.add_argument("--report", action="store_true",
                        help="only write the report from the runs made so far (of every cell, unless --envs, --methods "
                        "or --tag name some)")
    parser.add_argument("--tag", default="", help="name of a variant of the methods (with --params, --budget or --threads)")
    parser.add_argument("--params", type=key_value, nargs="+", default=[], metavar="KEY:VALUE",
                        help="hyperparameters the variant changes (rl-zoo3's -params syntax; not env_kwargs)")
    parser.add_argument("--threads", type=positive_int, default=1,
                        help="torch threads of each cell (rl-zoo3's --num-threads; the table's cells use 1, so more "
                        "goes with --tag)")
    parser.add_argument("--probe", type=nonnegative_int, default=0, metavar="MAPS",
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
    if bool(args.tag) != bool(args.params) and not (args.tag and (args.budget or args.threads != 1)):
        raise SystemExit("--tag goes with --params, --budget or --threads: a variant has a name and the settings (or "
                         "budget, or thread count) it changes")
    if args.threads != 1 and not args.tag:
        raise SystemExit(f"--threads {args.threads}: the table's cells train with one torch thread; give a count of at "
                         "least 1, and a --tag for a variant with more")
    if any(param.split(":")[0] in ("env_kwargs", "callback") for param in args.params):
        raise SystemExit("--params: env_kwargs and callback stay as the entry has them (a variant may change env_wrapper)")
    bad = [method for method in args.methods if method.split("@")[0] not in METHODS or ("@" in method and not args.report)]
    if bad:
        raise SystemExit(f"--methods: {', '.join(bad)}: choose from {', '.join(METHODS)} (method@tag only with --report)")
    unknown = [env_id for env_id in args.envs if env_id not in load_yaml(zoo_ppo_file())]
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
        print(plan_table(runs, cells), flush=True)
        with ThreadPoolExecutor(max_workers=args.procs) as pool:
            list(pool.map(lambda cell: run_cell(cell, runs, resume=True), cells))
    elif not args.report:
        cells = [
            Cell(env_id, method, seed, args.budget or cell_budget(env_id), args.tag, tuple(args.params), args.threads)
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
    summary = report(runs, out, envs, methods_in(runs, envs), page if page.is_file() else None)
    refresh_block(page, "minigrid cells to run", plan_table(runs, cells_to_run(runs, envs)))
    check = reproduction(runs)
    write_json(out / "minigrid_reproduction.json", check)
    refresh_block(page, "minigrid reproduction", reproduction_table(check))
    return summary
