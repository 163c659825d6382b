"""``python -m experiments.frontier``: MiniGrid's hard-exploration envs (issue 47), the search first.

Before a policy can learn on these envs, the search must find successes with the policy it starts from. ``--probe``
measures that: for each env, DirPG's entry in ``zoo_hyperparams/dirpg.yml`` (with a variant's ``--params``) and an
untrained policy search the same maps (seeds 100, 101, ...) with a growing ``search_budget``. Per budget it records the
fraction of maps where the search found a success, the interactions spent per map and the wall time per map. Every
interaction of the search counts as a training interaction: that is what a map costs during training.

``--curriculum`` trains one policy through a sequence of envs (``ENV:INTERACTIONS`` stages, the last one the target),
with the target's DirPG settings and each stage's own env entry (step limit, wrappers). A stage ends when its
interactions are spent or, before that, when its own held-out success (sampled and greedy) reaches ``--advance`` (what
it leaves unspent is not passed on; a run resumes with its last stage made longer). With ``--target-wrappers`` the
stages before the target train and are evaluated with the target entry's wrappers in place of their own: the same
action masks, say, so that every stage trains the policy that the target's masks define.
Every ``--every`` interactions the policy is played without search on 200 held-out seeds of the target (from
10000), with the env's own step limit and reward (an entry's ``max_steps`` and its shaping apply to training only),
sampled and greedy; interactions count every stage's. The run checkpoints
after each evaluation and resumes from it. Results go to ``OUT/frontier/<tag>-s<seed>.json``.

The published figures the issue measures against are :data:`ANCHORS` (read from the papers' curves, about 20 %
uncertain; most plot MiniGrid's return, not the success rate). Results go to ``OUT/frontier_probe.json`` (``--tag``
names a variant) and a Markdown table beside it.

``--figure`` draws the runs of ``OUT/frontier/`` (``frontier.png``): success on the target's held-out seeds against
interactions, one panel per target, with the issue's target (0.9 within the interactions of :data:`TARGETS`) marked
and the anchor named; the runs of the entry as it stands (:data:`ENTRY_RUNS`) sampled and greedy, in colour, and every
other run's sampled success in grey. It writes ``frontier.md``, the table of every run against the targets.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from experiments.common import default_out, key_value, nonnegative_int, positive_int, write_json

#: the issue's envs and the best published interactions to solve them (env frames, read from curves)
ANCHORS = {
    "MiniGrid-ObstructedMaze-2Dlh-v0": "RIDE: return about 0.95 by about 30M; RND about 65M; rl-zoo3's PPO 0 at 10M",
    "MiniGrid-MultiRoom-N12-S10-v0": "RAPID: return about 0.6 by about 4M; RIDE about 0.65 by about 20M",
    "MiniGrid-KeyCorridorS3R3-v0": "RAPID: 0.9 by about 3M; RIDE about 10M",
    "MiniGrid-KeyCorridorS4R3-v0": "AGAC: about 0.88 by about 5M; RAPID 0.35 at 20M",
    "MiniGrid-KeyCorridorS5R3-v0": "NovelD: solved within 120M",
    "MiniGrid-KeyCorridorS6R3-v0": "NovelD: solved within 120M",
    "MiniGrid-ObstructedMaze-1Q-v0": "NovelD: solved within 120M",
    "MiniGrid-ObstructedMaze-Full-v0": "NovelD: solved within 120M; DEIR about 50M (not reproduced by a user)",
}
#: the issue's targets: 0.9 success on held-out seeds within these interactions
TARGETS = {
    "MiniGrid-ObstructedMaze-2Dlh-v0": 10_000_000,
    "MiniGrid-MultiRoom-N12-S10-v0": 1_500_000,
    "MiniGrid-KeyCorridorS3R3-v0": 1_000_000,
    "MiniGrid-KeyCorridorS4R3-v0": 2_000_000,
    "MiniGrid-KeyCorridorS5R3-v0": 20_000_000,
    "MiniGrid-KeyCorridorS6R3-v0": 20_000_000,
    "MiniGrid-ObstructedMaze-1Q-v0": 20_000_000,
    "MiniGrid-ObstructedMaze-Full-v0": 20_000_000,
}
DEFAULT_BUDGETS = (2_900, 10_000, 30_000)
#: the tags of the runs of each target's entry as it stands (docs/results.md gives their commands): ``--figure`` draws
#: them in colour, one per seed, and every other run of the target in grey
# KeyCorridorS3R3's and MultiRoom-N12-S10's entries take the one MiniGrid setting since issue 79 (their runs:
# experiments.minigrid_general's cells); their rows here are the tuned entries they had
ENTRY_RUNS = {
    "MiniGrid-ObstructedMaze-2Dlh-v0": ("2Dlh-nrkor-ema99",),
    "MiniGrid-MultiRoom-N12-S10-v0": ("N6-N12-nrko", "N6-N12-mask"),
    "MiniGrid-KeyCorridorS3R3-v0": ("S3R3-nrkok-ema9995",),
    "MiniGrid-KeyCorridorS4R3-v0": ("S4R3-nrkok-ema9995",),
    "MiniGrid-KeyCorridorS5R3-v0": ("S5R3-nrkok-ema9995",),
    "MiniGrid-KeyCorridorS6R3-v0": ("S6R3-nrkok-ema9995",),
}


def _entry_env(env_id: str, params: Sequence[str] = (), own_step_limit: bool = False) -> tuple[dict[str, Any], Any]:
    """:param env_id: an env with a DirPG entry
    :param params: a variant's ``key:value`` changes of the entry
    :param own_step_limit: build the env with its own step limit, whatever ``max_steps`` the entry's ``env_kwargs`` set
        (the evaluation's rule: the entries of the MiniGrid table shorten some envs' limits for training)
    :return: the entry's settings with the changes, and the env built as they build it"""
    from experiments.held_out import build_env
    from experiments.minigrid_table import entry, parse_params

    settings = {**entry(env_id, "dirpg"), **parse_params(params)}
    env_kwargs = dict(settings.get("env_kwargs") or {})
    if own_step_limit:
        env_kwargs.pop("max_steps", None)
    return settings, build_env(env_id, env_kwargs, settings.get("env_wrapper"))


def probe_search(
    env_id: str, budgets: Sequence[int], n_maps: int = 12, seed: int = 0, params: Sequence[str] = ()
) -> list[dict[str, float]]:
    """Search ``n_maps`` maps with an untrained policy at each budget: same maps, same policy, same search noise.

    :param env_id: an env with a DirPG entry
    :param budgets: the ``search_budget`` values to try
    :param n_maps: maps per budget (seeds 100, 101, ...)
    :param seed: seed of the policy and of the search noise
    :param params: a variant's ``key:value`` changes of the entry
    :return: per budget: the fraction of maps with a success found, where ``a_dir`` improved on ``a_opt``, the
        complete trajectories, the interactions and the wall seconds per map
    """
    import torch as th

    from sb3_dirpg.dirpg import DirPG
    from sb3_dirpg.integrations.zoo import algorithm_kwargs

    th.set_num_threads(1)
    settings, env = _entry_env(env_id, params)
    model = DirPG(settings["policy"], env, seed=seed, device="cpu", **algorithm_kwargs(settings))
    maps = list(range(100, 100 + n_maps))
    model.search(maps[:1], config=model.search_config(budget=100))  # compiles what the simulator compiles, untimed
    rows = []
    for budget in budgets:
        start = time.perf_counter()
        episodes = model.search(maps, config=model.search_config(budget=int(budget)), rng=np.random.default_rng(seed)).episodes
        wall = time.perf_counter() - start
        rows.append({
            "budget": int(budget),
            "success": float(np.mean([ep.success_dir for ep in episodes])),
            "improved": float(np.mean([ep.improved for ep in episodes])),
            "interactions": float(np.mean([ep.interactions for ep in episodes])),
            "trajectories": float(np.mean([ep.trajectories for ep in episodes])),
            "wall_s": wall / n_maps,
        })  # fmt: skip
        print(env_id, params, rows[-1], flush=True)
    return rows


def parse_stages(texts: Sequence[str]) -> list[tuple[str, int]]:
    """:param texts: ``ENV:INTERACTIONS`` strings
    :return: (env id, interactions) per stage"""
    stages = []
    for text in texts:
        env_id, _, count = text.rpartition(":")
        if not env_id or not count.isdigit() or int(count) <= 0:
            raise ValueError(f"a stage is ENV:INTERACTIONS with a positive count, got {text!r}")
        stages.append((env_id, int(count)))
    return stages


def train_curriculum(
    stages: Sequence[tuple[str, int]],
    every: int,
    seed: int,
    path: Path,
    advance: float = 0.9,
    n_maps: int = 200,
    params: Sequence[str] = (),
    target_wrappers: bool = False,
) -> dict[str, Any]:
    """Train one DirPG policy through ``stages`` (the last is the target), evaluating on the target's held-out seeds.

    :param stages: (env id, interactions) per stage; the last stage's env is the target, whose entry gives DirPG's
        settings
    :param every: interactions between evaluations
    :param seed: the training seed
    :param path: the JSON record; the checkpoint is beside it (``.zip``) and a run resumes from both (with the same
        stages, the last one possibly longer)
    :param advance: a stage before the last ends early once its own held-out success, sampled and greedy, reaches this
    :param n_maps: held-out seeds per evaluation
    :param params: ``key:value`` changes of DirPG's settings (the target's entry); an ``env_wrapper`` among them also
        replaces every stage's wrappers in training (not at evaluation, which keeps the entries' envs)
    :param target_wrappers: build the stages before the target, for training and evaluation, with the target entry's
        ``env_wrapper`` in place of their own (an ``env_wrapper`` of ``params`` still replaces it in training)
    :return: the record: the stages, the target's settings as the run started (its entry with ``params``) and the points
        (interactions, stage, the target's and the stage's success)
    """
    import torch as th

    from experiments.held_out import evaluate_held_out
    from experiments.minigrid_table import entry, parse_params
    from sb3_dirpg.dirpg import DirPG
    from sb3_dirpg.integrations.zoo import algorithm_kwargs, entry_callbacks

    th.set_num_threads(1)
    for env_id, _ in stages:
        entry(env_id, "dirpg")  # every stage needs an entry: fail before any training
    target = stages[-1][0]
    settings = {**entry(target, "dirpg"), **parse_params(params)}
    checkpoint = path.with_suffix(".zip")
    record: dict[str, Any] = json.loads(path.read_text()) if path.exists() and checkpoint.exists() else {}
    record = record or {"stages": [list(stage) for stage in stages], "params": list(params), "seed": seed, "points": [],
                        "stage_ends": [], "target_wrappers": target_wrappers,
                        "settings": json.loads(json.dumps(settings, default=repr))}  # fmt: skip
    if record["stages"][:-1] != [list(stage) for stage in stages[:-1]] or record["stages"][-1][0] != target:
        raise ValueError(f"{path} holds a run with other stages: {record['stages']}; pass --tag to start another")
    if record.get("target_wrappers", False) != target_wrappers:
        raise ValueError(f"{path} holds a run with target_wrappers={not target_wrappers}; pass --tag to start another")
    record["stages"] = [list(stage) for stage in stages]  # the last stage may run longer than before
    seeds = list(range(10_000, 10_000 + n_maps))
    target_wrapper = [f"env_wrapper:{entry(target, 'dirpg').get('env_wrapper')!r}"] if target_wrappers else []

    def stage_wrappers(env_id: str) -> list[str]:
        return target_wrapper if env_id != target else []

    evaluation = {env_id: [_entry_env(env_id, stage_wrappers(env_id), own_step_limit=True)[1] for _ in seeds]
                  for env_id in dict(stages)}  # fmt: skip
    wrappers = [param for param in params if param.split(":", 1)[0] == "env_wrapper"]  # the training envs' own

    def training_env(env_id: str) -> Any:
        return _entry_env(env_id, wrappers or stage_wrappers(env_id))[1]

    made = record["points"][-1]["interactions"] if record["points"] else 0
    model = (DirPG.load(checkpoint, env=training_env(stages[0][0]), device="cpu") if made else
             DirPG(settings["policy"], training_env(stages[0][0]), seed=seed, device="cpu", **algorithm_kwargs(settings)))
    wall = record["points"][-1]["wall_s"] if made else 0.0  # training seconds, evaluations excluded
    ends = record["stage_ends"]  # the interactions at which each stage ended
    callbacks = entry_callbacks(settings)
    for index, (env_id, count) in enumerate(stages):
        last = index == len(stages) - 1
        if index < len(ends) and not last:
            continue
        stage_end = (ends[index - 1] if index else 0) + count
        model.set_env(training_env(env_id))
        while made < stage_end:
            started = time.perf_counter()
            model.learn(min(every, stage_end - made), callback=callbacks, reset_num_timesteps=False)
            made, wall = int(model.num_timesteps), wall + time.perf_counter() - started
            point: dict[str, Any] = {"interactions": made, "stage": env_id, "wall_s": wall}
            for name, greedy in (("sampled", False), ("greedy", True)):
                point[name] = evaluate_held_out(model, evaluation[target], seeds, deterministic=greedy)
                if model.policy_average is not None:  # ema_decay: predict acts with the average; the trained one too
                    point[f"{name}_trained"] = evaluate_held_out(model, evaluation[target], seeds, greedy, trained=True)
                if not last:
                    point[f"stage_{name}"] = evaluate_held_out(model, evaluation[env_id], seeds, deterministic=greedy)
            record["points"].append(point)
            model.save(checkpoint)
            write_json(path, record)
            done = not last and min(point["stage_sampled"]["success"], point["stage_greedy"]["success"]) >= advance
            print(f"{made:>9} {env_id}: target sampled {point['sampled']['success']:.3f} greedy "
                  f"{point['greedy']['success']:.3f}" + ("" if last else f" | stage sampled "
                  f"{point['stage_sampled']['success']:.3f} greedy {point['stage_greedy']['success']:.3f}"), flush=True)
            if done:
                break
        del ends[index:]
        ends.append(made)
        write_json(path, record)
    return record


def probe_table(probe: dict[str, Any]) -> str:
    """:param probe: per env and variant, :func:`probe_search`'s rows
    :return: a Markdown table"""
    header = ("env", "variant", "search budget", "maps with a success found", "maps improved", "trajectories per map",
              "interactions per map", "seconds per map")
    lines = ["| " + " | ".join(header) + " |", "| --- | --- |" + " ---: |" * (len(header) - 2)]
    for env_id, variants in probe.items():
        name = env_id.removeprefix("MiniGrid-").removesuffix("-v0")
        for variant, rows in variants.items():
            for row in rows:
                cells = (f"{row['budget']}", f"{row['success']:.2f}", f"{row['improved']:.2f}",
                         f"{row.get('trajectories', float('nan')):.1f}", f"{row['interactions']:.0f}", f"{row['wall_s']:.2f}")
                lines.append(f"| {name} | {variant} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _runs(folder: Path) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """:param folder: ``OUT/frontier``
    :return: the curriculum records there, by target env, with their file names"""
    runs: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for path in sorted(folder.glob("*.json")):
        record = json.loads(path.read_text())
        runs.setdefault(record["stages"][-1][0], []).append((path.stem, record))
    return runs


def first_at(points: Sequence[dict[str, Any]], mode: str, level: float = 0.9) -> int | None:
    """:param points: a run's points
    :param mode: ``sampled`` or ``greedy``
    :param level: the success to reach
    :return: the interactions of the first point at ``level`` or above, or None"""
    return next((point["interactions"] for point in points if point[mode]["success"] >= level), None)


def frontier_table(runs: dict[str, list[tuple[str, dict[str, Any]]]]) -> str:
    """:param runs: :func:`_runs`'s output
    :return: a Markdown table: per run, the interactions to 0.9 (sampled, greedy), success at the end, the target"""
    lines = ["| target env | run | interactions | 0.9 sampled at | 0.9 greedy at | at the end: sampled / greedy success, "
             "MiniGrid return (greedy) | target: 0.9 within | best published |",
             "| --- | --- | ---: | ---: | ---: | --- | ---: | --- |"]  # fmt: skip
    for env_id, records in runs.items():
        for name, record in records:
            points = record["points"]
            if not points:
                continue
            end = points[-1]
            reach = [first_at(points, mode) for mode in ("sampled", "greedy")]
            cells = [f"{value / 1e6:.2f}M" if value is not None else "not reached" for value in reach]
            target = f"{TARGETS[env_id] / 1e6:.1f}M" if env_id in TARGETS else "–"  # a curriculum stage has none
            lines.append(
                f"| {env_id.removeprefix('MiniGrid-').removesuffix('-v0')} | {name} | {end['interactions'] / 1e6:.2f}M | "
                f"{cells[0]} | {cells[1]} | {end['sampled']['success']:.3f} / {end['greedy']['success']:.3f}, "
                f"{end['greedy']['minigrid_return']:.3f} | {target} | {ANCHORS.get(env_id, '–')} |"
            )
    return "\n".join(lines) + "\n"


def tag_of(name: str) -> str:
    """:param name: a record's file name, ``<tag>-s<seed>``
    :return: its tag"""
    return name.rsplit("-s", 1)[0]


def plot_runs(runs: dict[str, list[tuple[str, dict[str, Any]]]]) -> Any:
    """:param runs: :func:`_runs`'s output
    :return: the figure: one panel per target env of :data:`TARGETS` with runs, the runs of its entry
        (:data:`ENTRY_RUNS`) in colour, sampled and greedy, every other run's sampled success in grey"""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    targets = [env_id for env_id in TARGETS if runs.get(env_id)]
    columns = min(3, max(1, len(targets)))
    rows = max(1, -(-len(targets) // columns))
    figure, axes = plt.subplots(rows, columns, figsize=(5.2 * columns, 4.2 * rows), squeeze=False)
    colors = plt.get_cmap("tab10")
    for ax, env_id in zip(axes.flat, targets):
        others = 0
        entry_runs = [(name, record) for name, record in runs[env_id] if tag_of(name) in ENTRY_RUNS.get(env_id, ())]
        for name, record in runs[env_id]:
            if tag_of(name) in ENTRY_RUNS.get(env_id, ()):
                continue
            x = [point["interactions"] / 1e6 for point in record["points"]]
            ax.plot(x, [point["sampled"]["success"] for point in record["points"]], "-", color="0.75", linewidth=0.6,
                    label=None if others else "other settings (sampled)")  # fmt: skip
            others += 1
        for index, (name, record) in enumerate(entry_runs):
            x = [point["interactions"] / 1e6 for point in record["points"]]
            color = colors(index % colors.N)
            ax.plot(x, [point["sampled"]["success"] for point in record["points"]], "-", color=color, linewidth=1.6,
                    label=f"{name}: sampled")  # fmt: skip
            ax.plot(x, [point["greedy"]["success"] for point in record["points"]], "--", color=color, linewidth=1.6,
                    label="greedy")  # fmt: skip
            for end in record["stage_ends"][:-1]:
                ax.axvline(end / 1e6, color=color, alpha=0.4, linewidth=0.8)
        ends = [record["points"][-1]["interactions"] for _, record in runs[env_id] if record["points"]]
        right = max(ends) * 1.05 / 1e6
        target = TARGETS[env_id] / 1e6
        if target <= right * 1.5:  # on the axis
            right = max(right, target * 1.05)
            ax.plot([target], [0.9], "k*", markersize=11, label=f"target: 0.9 within {target:g}M")
        else:  # far to the right: named, not drawn
            ax.plot([], [], "k*", markersize=11, label=f"target: 0.9 within {target:g}M (off the axis)")
        name = env_id.removeprefix("MiniGrid-").removesuffix("-v0")
        ax.set_title(f"{name} ({others} other runs in grey)\n{ANCHORS.get(env_id, '')}", fontsize=8)
        ax.set_xlabel("interactions (M), every search step counted")
        ax.set_ylabel("held-out success")
        ax.set_xlim(0, right)
        ax.set_ylim(-0.02, 1.02)
        ax.legend(fontsize=6, loc="lower right")
    for ax in list(axes.flat)[len(targets):]:
        ax.set_visible(False)
    figure.tight_layout()
    return figure


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """:param argv: command-line arguments
    :return: the probe's results"""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe", action="store_true", help="measure the untrained search against its budget")
    parser.add_argument("--figure", action="store_true", help="draw and tabulate the runs of OUT/frontier")
    parser.add_argument("--curriculum", nargs="+", default=None, metavar="ENV:INTERACTIONS",
                        help="train through these stages, the last one the target")
    parser.add_argument("--every", type=positive_int, default=100_000, help="interactions between a curriculum's evaluations")
    parser.add_argument("--advance", type=float, default=0.9, help="a curriculum stage's success that ends it early")
    parser.add_argument("--target-wrappers", action="store_true",
                        help="train and evaluate a curriculum's stages with the target entry's wrappers")
    parser.add_argument("--envs", nargs="+", default=list(TARGETS), help="env ids with a DirPG entry")
    parser.add_argument("--budgets", nargs="+", type=positive_int, default=list(DEFAULT_BUDGETS))
    parser.add_argument("--maps", type=positive_int, default=None,
                        help="maps searched per budget (default 12), or held-out maps of a curriculum (default 200)")
    parser.add_argument("--seed", type=nonnegative_int, default=0)
    parser.add_argument("--params", type=key_value, nargs="*", default=[], metavar="KEY:VALUE",
                        help="a variant's changes of the entries")
    parser.add_argument("--tag", default="entry", help="names the variant in the results")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.probe + (args.curriculum is not None) + args.figure != 1:
        parser.error("say what to run: one of --probe, --curriculum and --figure")
    out = args.out or default_out()
    if args.figure:
        runs = _runs(out / "frontier")
        plot_runs(runs).savefig(out / "frontier.png", dpi=90, bbox_inches="tight")
        (out / "frontier.md").write_text(frontier_table(runs))
        print(f"wrote {out / 'frontier.png'} and {out / 'frontier.md'}")
        return {"runs": {env_id: [name for name, _ in records] for env_id, records in runs.items()}}
    if args.curriculum is not None:
        if args.tag == "entry":
            parser.error("--curriculum needs --tag to name its run (--params, if any, change the target's settings)")
        try:
            stages = parse_stages(args.curriculum)
        except ValueError as error:
            parser.error(str(error))
        (out / "frontier").mkdir(parents=True, exist_ok=True)
        return train_curriculum(stages, args.every, args.seed, out / "frontier" / f"{args.tag}-s{args.seed}.json",
                                args.advance, args.maps or 200, args.params, args.target_wrappers)  # fmt: skip
    if args.params and args.tag == "entry":
        parser.error("--params make a variant of the entries: name it with --tag (the tag 'entry' is the entries' own)")
    out.mkdir(parents=True, exist_ok=True)
    path = out / "frontier_probe.json"
    results: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    for env_id in args.envs:
        rows = probe_search(env_id, args.budgets, args.maps or 12, args.seed, args.params)
        results.setdefault(env_id, {})[args.tag] = rows
        write_json(path, results)
        (out / "frontier_probe.md").write_text(probe_table(results))
    return results


if __name__ == "__main__":
    main()
