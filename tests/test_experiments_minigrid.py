"""Smoke tests of the MiniGrid experiment modules: the paper's figure 3 (``multiroom_figure``), the control variate and
DirPG against PPO (tiny settings; the real figures come from running the modules)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from experiments import control_variate, multiroom_figure, vs_ppo
from sb3_dirpg import DirPG
from sb3_dirpg.search.stopping import SuccessStop

pytestmark = pytest.mark.integration

TINY_ENV = "MiniGrid-MultiRoom-N2-S4-v0"


def _check_outputs(out: Path, name: str) -> dict:
    """:param out: output folder
    :param name: experiment name
    :return: the JSON written there (after checking the PNG exists and is small)"""
    png = out / f"{name}.png"
    assert png.exists() and 0 < png.stat().st_size < 400_000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads((out / f"{name}.json").read_text())
    assert data["wall_time_s"] >= 0
    return data


def test_multiroom_figure_runs(tmp_path: Path) -> None:
    argv = ["--out", str(tmp_path), "--env-id", TINY_ENV, "--interactions", "300", "--seeds", "0", "1",
            "--alphas", "0", "1", "--horizon", "10", "--search-budget", "40", "--n-rollouts", "3", "--eval-maps", "1",
            "--hist-maps", "1", "--bins", "2", "--d-alpha", "1", "--hist-env", TINY_ENV, "--hist-horizon", "10",
            "--hist-budget", "40"]  # fmt: skip
    multiroom_figure.main(argv)
    data = _check_outputs(tmp_path, "minigrid")
    assert {"settings", "x_interactions", "curves", "summary", "quality_vs_quantity", "d_method"} <= set(data)
    methods = {"dirpg-0", "dirpg-1", "reinforce-trajectory", "reinforce-action", "cem"}
    assert set(data["curves"]) == methods and set(data["summary"]) == methods
    assert len(data["x_interactions"]) == 2
    assert {"mean", "low", "high"} <= set(data["curves"]["dirpg-0"]["ret"])
    assert {"d_opt", "d_dir"} <= set(data["curves"]["dirpg-1"])
    for stats in data["summary"].values():
        assert 0.0 <= stats["greedy_success"] <= 1.0
    hist = data["quality_vs_quantity"]["raw"]
    assert set(hist) == {"gumbel", "astar α=0", "astar α=1"}
    assert all(len(v["trajectories"]) == 1 and v["trajectories"][0] >= 1 for v in hist.values())
    assert data["settings"]["seeds"] == [0, 1] and data["settings"]["frozen_policy"].startswith("dirpg-1, seed 0")


def test_control_variate_module_runs(tmp_path: Path) -> None:
    argv = ["--out", str(tmp_path), "--env-id", TINY_ENV, "--interactions", "200", "--checkpoints", "1", "--maps", "3",
            "--horizon", "10", "--search-budget", "40", "--seeds", "1"]  # fmt: skip
    control_variate.main(argv)
    data = _check_outputs(tmp_path, "control_variate")
    assert {"settings", "x_interactions", "curves", "per_seed"} <= set(data)
    assert data["x_interactions"] == [0, 200]
    assert len(data["curves"]) == 3 and set(data["curves"]) == set(data["per_seed"])
    for curves in data["curves"].values():
        assert {"var_with_cv", "var_without_cv", "ratio_without_over_with", "improved_fraction"} <= set(curves)
    row = data["per_seed"]["training search (ε=1, no early stop)"][0][0]
    assert row["n_maps"] == 3 and row["var_without_cv"] > 0


def test_vs_ppo_module_runs(tmp_path: Path) -> None:
    argv = ["--out", str(tmp_path), "--envs", TINY_ENV, "--interactions", "1024", "--eval-every", "1024", "--eval-maps", "1",
            "--seeds", "1"]  # fmt: skip
    vs_ppo.main(argv)
    data = _check_outputs(tmp_path, "vs_ppo")
    assert {"settings", "results"} <= set(data)
    res = data["results"][TINY_ENV]
    assert set(res) == {"dirpg", "ppo"}
    for method in res.values():
        assert {"success", "interactions_to_target", "best_success_mean", "runs"} <= set(method)
        assert len(method["runs"][0]["success"]) == 2
    assert data["settings"]["ppo"][TINY_ENV]["entry"] == "MiniGrid-Empty-Random-5x5-v0"


def test_greedy_gap_records_the_diagnostics_and_the_greedy_failures(tmp_path, monkeypatch) -> None:
    """``experiments.greedy_gap`` (issue 44): every point has both success modes and the search diagnostics of the maps
    searched since the last one; the greedy failures are described (an untrained greedy policy cycles at once); the
    file is rewritten after each evaluation, so a run cut short keeps its curve."""
    from experiments import greedy_gap
    from experiments.minigrid_table import entry as table_entry

    written: list[dict] = []
    write_json = greedy_gap.write_json
    monkeypatch.setattr(greedy_gap, "write_json", lambda path, data: (written.append(json.loads(json.dumps(data))),
                                                                      write_json(path, data)))  # fmt: skip
    # the one setting's masks keep a greedy policy out of loops, and it learns DoorKey within 9000 interactions: without
    # the masks and with a learning rate too small to learn, the greedy policy still cycles
    unmasked = [spec for spec in table_entry("MiniGrid-DoorKey-5x5-v0", "dirpg")["env_wrapper"] if "NoOpMask" not in str(spec)]
    result = greedy_gap.main(["--env", "MiniGrid-DoorKey-5x5-v0", "--budget", "9000", "--every", "4500", "--maps", "8",
                              "--tag", "test", "--out", str(tmp_path), "--save",
                              "--params", f"env_wrapper:{unmasked!r}", "learning_rate:1e-9"])  # fmt: skip
    points = result["points"]
    assert [p["interactions"] for p in points][0] == 0 and points[-1]["interactions"] >= 9000 and len(points) >= 3
    later = points[1:]
    assert all(0 <= p["unchanged"] <= 1 and 0 <= p["unchanged_success"] <= p["unchanged"] for p in later)
    assert all(0 < p["entropy_opt"] <= np.log(7) + 1e-6 for p in later)  # nats, over at most 7 legal actions
    failures = result["greedy_failures"]
    assert failures["episodes"] == 8 and failures["failed"] >= 1
    assert 0 <= failures["looped"] <= 1 and abs(sum(failures["actions"].values()) - 1) < 0.01
    looped = round(failures["looped"] * failures["failed"])
    assert sum(failures["loops_facing"].values()) == sum(failures["loop_periods"].values()) == looped
    hands = [faced.split(", ")[-1] for faced in failures["loops_facing"]]
    assert all(hand in ("empty-handed", "carrying a key") for hand in hands)
    assert (tmp_path / "greedy_gap" / "DoorKey-5x5-test-s0.json").exists()
    assert [w["finished"] for w in written] == [False] * len(points) + [True]
    assert [len(w["points"]) for w in written[:-1]] == list(range(1, len(points) + 1))
    saved = tmp_path / "greedy_gap" / "DoorKey-5x5-test-s0.zip"
    assert DirPG.load(saved).num_timesteps == points[-1]["interactions"]
    # --load continues the saved model, with an algorithm setting changed
    more = greedy_gap.main(["--env", "MiniGrid-DoorKey-5x5-v0", "--budget", "3000", "--every", "3000", "--maps", "4",
                            "--tag", "more", "--out", str(tmp_path), "--load", str(saved), "--save",
                            "--params", "stop:'success'"])  # fmt: skip
    assert more["points"][0]["interactions"] == points[-1]["interactions"]
    assert more["points"][-1]["interactions"] >= points[-1]["interactions"] + 3000
    assert DirPG.load(tmp_path / "greedy_gap" / "DoorKey-5x5-more-s0.zip").stop == SuccessStop()


def test_frontier_probe_spends_each_budget_on_the_same_maps(tmp_path: Path) -> None:
    """``experiments.frontier --probe`` (issue 47) on the registered MultiRoom-N12-S10: each budget's search spends its
    budget plus at most one ``a_opt`` episode per map, and a second variant is added to the same results file."""
    from experiments import frontier

    env_id = "MiniGrid-MultiRoom-N12-S10-v0"
    frontier.main(["--probe", "--envs", env_id, "--budgets", "50", "400", "--maps", "2", "--out", str(tmp_path)])
    results = frontier.main(["--probe", "--envs", env_id, "--budgets", "50", "--maps", "2", "--params",
                             "priority:{'astar':{'alpha':1.0}}", "--tag", "alpha1", "--out", str(tmp_path)])  # fmt: skip
    assert set(results[env_id]) == {"entry", "alpha1"}
    max_steps = 240  # MultiRoomEnv's 20 steps per room
    for row in results[env_id]["entry"]:
        assert row["budget"] <= row["interactions"] <= row["budget"] + max_steps
    assert "MultiRoom-N12-S10 | alpha1 | 50 |" in (tmp_path / "frontier_probe.md").read_text()
    with pytest.raises(SystemExit):
        frontier.main(["--probe", "--envs", env_id, "--params", "priority:{'astar':{'alpha':1.0}}",
                       "--out", str(tmp_path)])  # no --tag


def test_frontier_curriculum_trains_on_the_wrappers_it_is_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--params env_wrapper:...`` builds every training env with those wrappers and every evaluation env without."""
    from experiments import frontier

    built, build = [], frontier._entry_env

    def spy(env_id: str, params: Sequence[str] = (), own_step_limit: bool = False) -> Any:
        built.append(list(params))
        return build(env_id, params, own_step_limit)

    monkeypatch.setattr(frontier, "_entry_env", spy)
    wrapper = ("env_wrapper:['sb3_dirpg.envs.FastObservation', {'sb3_dirpg.envs.MiniGridShapedReward': {'door_reward': "
               "10.0}}, 'sb3_dirpg.envs.DirectionImageObs']")  # fmt: skip
    frontier.main(["--curriculum", "MiniGrid-MultiRoom-N2-S4-v0:2000", "--every", "2000", "--maps", "2", "--tag", "w",
                   "--params", wrapper, "--out", str(tmp_path)])  # fmt: skip
    assert built.count([]) == 2 and built.count([wrapper]) == 2  # evaluation: 2 maps; training: the model, its stage


def test_frontier_target_wrappers_build_the_stages_with_the_targets_masks(tmp_path: Path) -> None:
    """``--target-wrappers``: a stage before the target trains and is evaluated on its own env, with the target entry's
    wrappers (MultiRoom-N12-S10's MiniGridNoOpMask; N6's entry has its masks taken out here); without it, with its
    own; a resume must say the same."""
    import gymnasium as gym

    from experiments import frontier
    from sb3_dirpg.envs import MiniGridNoOpMask

    def has_mask(env: Any) -> bool:
        while isinstance(env, gym.Wrapper):
            if isinstance(env, MiniGridNoOpMask):
                return True
            env = env.env
        return False

    import experiments.minigrid_table as minigrid_table

    # the stage's entry without masks (every MiniGrid entry that shares N12-S10's observations now masks)
    stage, target = "MiniGrid-MultiRoom-N6-v0", "MiniGrid-MultiRoom-N12-S10-v0"
    own_entry = minigrid_table.entry

    def maskless_stage(env_id: str, method: str) -> dict[str, Any]:
        settings = own_entry(env_id, method)
        if env_id != stage:
            return settings
        return {**settings, "env_wrapper": [w for w in settings["env_wrapper"] if "MiniGridNoOpMask" not in str(w)]}

    built: list[tuple[str, bool]] = []
    build = frontier._entry_env

    def spy(env_id: str, params: Sequence[str] = (), own_step_limit: bool = False) -> Any:
        settings, env = build(env_id, params, own_step_limit)
        built.append((env_id, has_mask(env)))
        return settings, env

    args = ["--curriculum", f"{stage}:1000", f"{target}:1000", "--every", "1000", "--maps", "2", "--params",
            "search_budget:300", "--out", str(tmp_path), "--tag"]  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(minigrid_table, "entry", maskless_stage)
        assert not has_mask(frontier._entry_env(stage)[1]) and has_mask(frontier._entry_env(target)[1])
        patch.setattr(frontier, "_entry_env", spy)
        record = frontier.main(args + ["tw", "--target-wrappers"])
        assert record["target_wrappers"] and {point["stage"] for point in record["points"]} == {stage, target}
        assert set(built) == {(stage, True), (target, True)}
        built.clear()
        frontier.main(args + ["own"])
        assert set(built) == {(stage, False), (target, True)}
    with pytest.raises(ValueError, match="target_wrappers=True"):
        frontier.main(args[:2] + [f"{target}:2000"] + args[3:] + ["tw"])


def test_frontier_evaluates_the_average_and_the_trained_weights(tmp_path: Path) -> None:
    """With ``ema_decay`` the frontier's points hold the average's success (what ``predict`` plays) and the trained
    weights' (``*_trained``); the greedy one of the trained weights is the trained policy's own."""
    from experiments import frontier
    from experiments.held_out import evaluate_held_out
    from sb3_dirpg.dirpg import DirPG

    env_id = "MiniGrid-MultiRoom-N2-S4-v0"
    record = frontier.main(["--curriculum", f"{env_id}:3000", "--every", "3000", "--maps", "4", "--tag", "ema",
                            "--params", "ema_decay:0.5", "--out", str(tmp_path)])  # fmt: skip
    point = record["points"][-1]
    assert {"sampled", "greedy", "sampled_trained", "greedy_trained"} <= set(point)
    model = DirPG.load(tmp_path / "frontier" / "ema-s0.zip", device="cpu")
    assert model.policy_average is not None
    envs = [frontier._entry_env(env_id, own_step_limit=True)[1] for _ in range(4)]
    seeds = list(range(10_000, 10_004))
    assert evaluate_held_out(model, envs, seeds, True, trained=True) == point["greedy_trained"]
    assert evaluate_held_out(model, envs, seeds, True) == point["greedy"]


def test_frontier_evaluates_with_the_envs_own_step_limit() -> None:
    """The frontier's evaluation envs keep the env's own step limit where the entry changes it for training
    (here a variant sets 100 steps on RedBlueDoors, whose own limit is 720), and its training envs take the entry's."""
    import gymnasium as gym

    from experiments import frontier

    env_id, shorter = "MiniGrid-RedBlueDoors-6x6-v0", ["env_kwargs:{'max_steps': 100}"]
    own = gym.make(env_id).unwrapped.max_steps
    settings, trained = frontier._entry_env(env_id, shorter)
    _, evaluated = frontier._entry_env(env_id, shorter, own_step_limit=True)
    assert settings["env_kwargs"]["max_steps"] != own
    assert trained.unwrapped.max_steps == settings["env_kwargs"]["max_steps"] and evaluated.unwrapped.max_steps == own


def test_frontier_curriculum_moves_through_its_stages_and_resumes(tmp_path: Path) -> None:
    """``experiments.frontier --curriculum``: the stages run in order on one policy, every point evaluates the target
    (and the stage before the last), and a second call with a longer last stage resumes from the checkpoint."""
    from experiments import frontier
    from experiments.minigrid_table import entry

    first, target = "MiniGrid-MultiRoom-N2-S4-v0", "MiniGrid-MultiRoom-N4-S5-v0"
    args = ["--curriculum", f"{first}:6000", f"{target}:6000", "--every", "3000", "--maps", "3", "--tag", "test",
            "--advance", "1.01", "--out", str(tmp_path)]  # fmt: skip
    record = frontier.main(args)
    stages = [point["stage"] for point in record["points"]]
    switch = stages.index(target)
    assert switch > 0 and set(stages[:switch]) == {first} and set(stages[switch:]) == {target}
    made = [point["interactions"] for point in record["points"]]
    assert made == sorted(made) and made[switch - 1] >= 6000 and made[-1] >= made[switch - 1] + 6000
    assert record["stage_ends"] == [made[switch - 1], made[-1]]
    assert "stage_greedy" in record["points"][0] and "stage_greedy" not in record["points"][-1]
    wrappers = record["settings"]["env_wrapper"]  # the target entry's settings, as the run started
    assert record["settings"]["policy"] == "MultiInputPolicy" and wrappers == entry(target, "dirpg")["env_wrapper"]
    assert (tmp_path / "frontier" / "test-s0.zip").exists()
    longer = frontier.main(args[:2] + [f"{target}:12000"] + args[3:])  # the same run, its last stage longer
    assert longer["points"][: len(made)] == record["points"]
    assert {point["stage"] for point in longer["points"][len(made) :]} == {target}
    assert longer["points"][-1]["interactions"] >= made[switch - 1] + 12000
    assert longer["stages"] == [[first, 6000], [target, 12000]]  # the record names the stages it ran
    with pytest.raises(ValueError, match="other stages"):
        frontier.main(["--curriculum", f"{first}:3000", f"{target}:6000"] + args[3:])
    assert frontier.main(["--figure", "--out", str(tmp_path)]) == {"runs": {target: ["test-s0"]}}
    assert (tmp_path / "frontier.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| MultiRoom-N4-S5 | test-s0 |" in (tmp_path / "frontier.md").read_text()


def test_frontier_figure_draws_the_entrys_runs_in_colour_and_the_others_in_grey(tmp_path: Path) -> None:
    """``--figure``: one panel per target with runs; a run of the entry (:data:`ENTRY_RUNS`) gives a sampled and a
    greedy line in colour, another run one grey line; a run whose target is no issue target gets no panel but its row
    in the table, as every run does."""
    import matplotlib.colors as mcolors

    from experiments import frontier

    def record(target: str, successes: Sequence[float]) -> dict[str, Any]:
        points = [{"interactions": 250_000 * (i + 1), "stage": target, "wall_s": 1.0 + i,
                   "sampled": {"success": s, "minigrid_return": s / 2}, "greedy": {"success": s / 2, "minigrid_return": s / 4}}
                  for i, s in enumerate(successes)]  # fmt: skip
        return {"stages": [[target, 250_000 * len(successes)]], "params": [], "seed": 0, "points": points,
                "stage_ends": [points[-1]["interactions"]]}  # fmt: skip

    target, stage = "MiniGrid-KeyCorridorS4R3-v0", "MiniGrid-ObstructedMaze-1Dlh-v0"
    entry_tag = frontier.ENTRY_RUNS[target][0]
    folder = tmp_path / "frontier"
    folder.mkdir()
    runs = {f"{entry_tag}-s0": record(target, [0.5, 0.95]), "other-s0": record(target, [0.1, 0.2, 0.3]),
            "stage-s0": record(stage, [0.4])}  # fmt: skip
    for name, value in runs.items():
        (folder / f"{name}.json").write_text(json.dumps(value))
    figure = frontier.plot_runs(frontier._runs(folder))
    panels = [ax for ax in figure.axes if ax.get_visible()]
    assert len(panels) == 1 and panels[0].get_title().startswith("KeyCorridorS4R3 (1 other runs in grey)")
    lines = [line for line in panels[0].get_lines() if len(line.get_xdata())]
    grey = [line for line in lines if mcolors.to_hex(line.get_color()) == mcolors.to_hex("0.75")]
    coloured = [line for line in lines if line not in grey and line.get_marker() != "*"]
    assert [list(line.get_ydata()) for line in grey] == [[0.1, 0.2, 0.3]]
    assert sorted(list(line.get_ydata()) for line in coloured) == [[0.25, 0.475], [0.5, 0.95]]
    assert [line.get_linestyle() for line in coloured] == ["-", "--"]
    frontier.main(["--figure", "--out", str(tmp_path)])
    assert (tmp_path / "frontier.png").stat().st_size > 0
    table = (tmp_path / "frontier.md").read_text()
    assert all(f"| {name} |" in table for name in runs)


@pytest.mark.parametrize(
    ("module", "argv", "says"),
    [
        ("minigrid_table", ["--budget", "0"], "--budget: '0': give a whole number of at least 1"),
        ("minigrid_table", ["--budget", "-5"], "--budget: '-5': give a whole number of at least 1"),
        ("minigrid_table", ["--procs", "0"], "--procs: '0'"),
        ("minigrid_table", ["--tag", "t", "--params", "learning_rate=3e-3"], "a colon, not '='"),
        ("minigrid_table", ["--tag", "t", "--params", "priority:astar"], "NameError.*priority:'astar'"),
        ("greedy_gap", ["--budget", "-5"], "--budget: '-5'"),
        ("greedy_gap", ["--every", "0"], "--every: '0'"),
        ("greedy_gap", ["--budget", "1.5e3x"], "is not a number"),
        ("greedy_gap", ["--env", "CartPole-v1"], "--env CartPole-v1: the greedy gap is measured on MiniGrid ids"),
        ("greedy_gap", ["--load", "missing.zip"], "--load missing.zip: no such saved model"),
        ("minigrid_general", ["--budget", "0"], "--budget: '0'"),
        ("minigrid_general", ["--seeds", "-1"], "--seeds: '-1': give a whole number of at least 0"),
        ("frontier", ["--every", "0"], "--every: '0'"),
        ("frontier", ["--params", "alpha=1"], "a colon, not '='"),
        ("multiroom", ["--interactions", "0"], "--interactions: '0'"),
        ("minigrid_failures", ["missing.zip", "--env", "MiniGrid-DoorKey-5x5-v0"], "model missing.zip: no such saved model"),
    ],
)
def test_experiment_command_lines_refuse_numbers_and_settings_they_cannot_use(
    module: str, argv: list[str], says: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A count below 1 (a budget, an evaluation interval, processes), a negative seed, ``key=value`` or an unquoted word
    as a setting, a non-MiniGrid env or a missing model stop the command line before any work, with argparse's exit
    code 2 and a message naming the argument (issue 81: ``--budget -5`` exited 0 with nothing trained, ``--every 0`` gave
    ZeroDivisionError, ``key=value`` IndexError)."""
    import importlib

    main = importlib.import_module(f"experiments.{module}").main
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--out", str(tmp_path)] if module != "minigrid_failures" else argv)
    assert stopped.value.code == 2
    assert re.search(says, capsys.readouterr().err), says
    assert not any(tmp_path.iterdir())


def test_minigrid_general_variants_write_their_own_cells_and_the_report_covers_every_cell(tmp_path: Path) -> None:
    """``minigrid_general --tag T --params K:V`` trains cells named ``METHOD-T`` with the change in their entry; the
    report (rebuilt from the records on disk) covers every env, method and variant that has a cell, whatever a run
    trained."""
    import yaml

    from experiments import minigrid_general as general

    runs = tmp_path / "minigrid_general"
    env_id = "MiniGrid-DoorKey-6x6-v0"
    cmd = general.command(runs, env_id, "dirpg", 0, 1000, "eps1", ["epsilon:1.0"])
    entry = yaml.safe_load((runs / env_id / "dirpg-eps1-s0" / "hyperparams.yml").read_text())[env_id]
    assert entry["epsilon"] == 1.0 and entry["n_timesteps"] == 1000
    assert general.method_entry(env_id, "dirpg", 1000)["epsilon"] == 5.0  # the one setting itself is unchanged
    assert str(runs / env_id / "dirpg-eps1-s0" / "record.json") in " ".join(cmd)

    def record(env: str, name: str, curve: list[tuple[int, float, float]]) -> None:
        folder = runs / env / name
        folder.mkdir(parents=True, exist_ok=True)
        points = [{"interactions": n, "sampled": {"success": s}, "greedy": {"success": g}, "wall_s": n / 1000}
                  for n, s, g in curve]  # fmt: skip
        (folder / "record.json").write_text(json.dumps({"points": points}))

    record(env_id, "dirpg-eps1-s0", [(0, 0.0, 0.0), (500, 0.95, 0.92), (1000, 1.0, 1.0)])
    record(env_id, "dirpg-s0", [(0, 0.0, 0.0), (500, 0.5, 0.95), (1000, 0.91, 0.97)])
    record(env_id, "dirpg-stack4-s0", [(0, 0.0, 0.0), (1000, 0.3, 0.2)])  # a tag that starts as a seed's name
    record("MiniGrid-LavaGapS6-v0", "ppo-s1", [(0, 0.0, 0.0), (1000, 0.2, 0.1)])
    assert general.labels_present(runs, [env_id, "MiniGrid-LavaGapS6-v0"]) == ["dirpg", "ppo", "dirpg-eps1", "dirpg-stack4"]
    summary = general.main(["--report", "--out", str(tmp_path), "--envs", env_id])
    assert set(summary) == {env_id} and set(summary[env_id]) == {"dirpg", "dirpg-eps1", "dirpg-stack4"}
    assert [(s["sampled"], s["greedy"]) for s in summary[env_id]["dirpg"]] == [(1000, 500)]
    everything = json.loads((tmp_path / "minigrid_general.json").read_text())
    assert set(everything) == {env_id, "MiniGrid-LavaGapS6-v0"}
    assert "| DoorKey-6x6-v0 | untuned | dirpg-eps1 | 1 |" in (tmp_path / "minigrid_general.md").read_text()
    assert "| LavaGapS6-v0 | untuned | ppo | 1 | not reached | not reached |" in (tmp_path / "minigrid_general.md").read_text()
