"""Smoke tests of the benchmarks of ``benchmarks/`` (tiny settings; the real figures come from running the modules)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchmarks import throughput

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.integration


def test_throughput_module_runs_and_writes_json(tmp_path) -> None:
    out = tmp_path / "throughput.json"
    args = ["--envs", "cartpole", "--scale", "0.01", "--rounds", "1", "--workers", "1", "--batch", "8", "--json", str(out)]
    results = throughput.main(args)
    saved = json.loads(out.read_text())
    assert saved["workloads"][0]["env"] == "CartPole-v1"
    work = results["workloads"][0]
    assert work["batch_episodes"] == 8
    assert {"(b)/(a)", "(b)/(c)", "(b)/(d)", "(b2)/(a)"} <= set(work["ratios"])
    assert all(rate > 0 for rate in work["rates"].values())
    assert set(work["profile_us"]) == {"auto"}  # CartPole has no compiled simulator: one profile, on the env
    profile = work["profile_us"]["auto"]
    assert {"simulator step", "clone (snapshot+restore)", "policy forward", "update", "total"} <= set(profile)
    assert profile["total"] > profile["simulator step"] > 0


def test_the_compiled_simulator_is_profiled_and_timed_on_multiroom() -> None:
    """On MultiRoom the profile splits the compiled call from its Python glue, and puts the kernel back afterwards."""
    from sb3_dirpg.envs.minigrid import compiled_kernels

    work = throughput.multiroom_workload(0.01)
    kernel = compiled_kernels.step_states
    profile = throughput.profile_interaction(work, 4, 400)
    assert compiled_kernels.step_states is kernel
    key = "compiled step (step, observation, snapshot, bound)"
    assert profile[key] > 0 and profile["simulator glue"] > 0 and "clone (snapshot+restore)" not in profile
    assert profile["total"] > profile[key] + profile["simulator glue"] + profile["policy forward"]
    on_env = throughput.profile_interaction(work, 4, 400, backend="env")
    assert on_env["clone (snapshot+restore)"] > 0 and key not in on_env
    assert throughput.compiled_step_rate(throughput.make_dirpg(work, 4), 300, 4) > 0


def test_search_core_module_measures_the_core_alone(tmp_path) -> None:
    from benchmarks import search_core

    out = tmp_path / "core.json"
    results = search_core.main(["--batches", "4", "--repeats", "1", "--json", str(out)])
    row = results[4]
    assert json.loads(out.read_text())["4"] == row
    # every episode samples a_opt to the horizon, and at most the whole batch searches in one iteration
    assert row["interactions"] >= 4 * search_core.HORIZON
    assert row["iterations"] >= search_core.HORIZON and 0 < row["mean_active"] <= 4
    assert row["interactions"] == round(row["mean_active"] * row["iterations"])
    assert row["total_us"] == pytest.approx(row["core_us"] + row["simulator_us"] + row["policy_us"])
    assert row["core_us"] > 0


def old_layout_tree(root: Path) -> Path:
    """A source tree laid out as before the benchmarks left the package: this checkout's ``sb3_dirpg`` (linked) with
    the throughput workload in ``sb3_dirpg/experiments/``, and no ``benchmarks/``.

    :param root: where to build it
    :return: the tree's root
    """
    package = root / "sb3_dirpg"
    package.mkdir(parents=True)
    for entry in (ROOT / "sb3_dirpg").iterdir():
        if entry.name not in ("experiments", "__pycache__"):
            (package / entry.name).symlink_to(entry)
    (package / "experiments").mkdir()
    (package / "experiments" / "__init__.py").write_text("")
    shutil.copy(ROOT / "benchmarks" / "throughput.py", package / "experiments" / "throughput.py")
    return root


def test_paired_speed_races_an_old_layout_tree_against_this_one(tmp_path) -> None:
    from benchmarks import paired_speed

    old = old_layout_tree(tmp_path / "old")
    assert paired_speed.workload_module(old) == "sb3_dirpg.experiments.throughput"
    assert paired_speed.workload_module(ROOT) == "benchmarks.throughput"
    out = tmp_path / "paired.json"
    args = [str(old), str(ROOT), "--rounds", "2", "--interactions", "400", "--workload", "cartpole", "--batch", "2"]
    result = paired_speed.main([*args, "--json", str(out)])
    assert json.loads(out.read_text()) == result
    assert result["workload_modules"] == {"old": "sb3_dirpg.experiments.throughput", "new": "benchmarks.throughput"}
    assert len(result["ratios"]) == 2 and all(r > 0 for r in result["ratios"])
    assert result["ratios"] == pytest.approx([n / o for o, n in zip(result["rates_old"], result["rates_new"])])
    assert 0 <= result["sign_test_p"] <= 1
    assert result["same_parameters"]  # the same code with the same seed trains the same parameters
    with pytest.raises(ValueError, match="holds no sb3_dirpg package"):
        paired_speed.compare(tmp_path, ROOT, 1, 100, "cartpole", 2, verbose=False)
    bare = tmp_path / "bare"
    (bare / "sb3_dirpg").mkdir(parents=True)
    (bare / "sb3_dirpg" / "__init__.py").write_text("")
    with pytest.raises(ValueError, match="holds no throughput workload"):
        paired_speed.compare(bare, ROOT, 1, 100, "cartpole", 2, verbose=False)


def test_in_situ_cost_probes_every_lockstep_iteration(tmp_path) -> None:
    from benchmarks import in_situ_cost

    probes = in_situ_cost.SamplingProbes()
    assert probes.with_python() == probes.with_numpy().tolist()  # the two probes do the same job
    out = tmp_path / "in_situ.json"
    args = ["--env", "cartpole", "--interactions", "600", "--batch", "4", "--repeats", "50", "--json", str(out)]
    result = in_situ_cost.main(args)
    assert json.loads(out.read_text()) == result
    # on_step runs once per lockstep iteration, and an iteration steps at most one node per episode
    assert result["interactions"] >= 600 and result["interactions"] / 4 <= result["iterations"] <= result["interactions"]
    for name, inside in result["inside_us"].items():
        alone = (result["alone_before_us"][name] + result["alone_after_us"][name]) / 2
        assert inside > 0 and alone > 0
        assert result["inside_over_alone"][name] == pytest.approx(inside / alone)


def test_progress_speed_compares_the_compiled_and_the_env_path_of_the_shipped_entries(tmp_path: Path) -> None:
    """``benchmarks.progress_speed``: DirPG's DoorKey entry (the progress reward and its bound) runs on the compiled
    simulator under ``auto``, its ``dirpg_env`` row on the env, REINFORCE's entry beside them; ratios to the env path."""
    from benchmarks import progress_speed

    result = progress_speed.main(["--envs", "MiniGrid-DoorKey-5x5-v0", "--rounds", "1", "--interactions", "300",
                                  "--out", str(tmp_path / "speed.json")])  # fmt: skip
    rows = result["envs"]["MiniGrid-DoorKey-5x5-v0"]["early"]
    assert rows["dirpg"]["simulator"] == "CompiledMiniGridSimulator"
    assert rows["dirpg_env"]["simulator"] == "VecSimulator" and rows["dirpg_env"]["vs_env_path"] == 1.0
    assert set(rows) == {"dirpg", "dirpg_env", "reinforce"} and all(row["median"] > 0 for row in rows.values())
    assert (tmp_path / "speed.json").exists()


def test_mask_window_speed_trains_the_s5r3_entry_with_each_return_rule(tmp_path: Path) -> None:
    """``benchmarks.mask_window_speed``: each row is the S5R3 entry on the compiled simulator with its own
    ``return_window`` or ``no_revisit`` (with ``no_repick`` or ``keep_key``); ratios to the window-8 row."""
    from benchmarks import mask_window_speed
    from sb3_dirpg.envs.minigrid.action_mask import MiniGridNoOpMask

    for rule, rules in mask_window_speed.RULES.items():
        layer = mask_window_speed.windowed_model(rule).env.envs[0]
        while type(layer) is not MiniGridNoOpMask:
            layer = layer.env
        assert [r.spec() for r in layer.rules if r.name in mask_window_speed.VARIED] == rules
        assert layer.rule("no_undo") is not None and layer.rule("keep_doors_open") is not None
    result = mask_window_speed.main(["--rounds", "1", "--interactions", "300", "--out", str(tmp_path / "speed.json")])
    rows = result["windows"]
    assert set(rows) == {"0", "8", "24", "no_revisit", "+no_repick", "+keep_key"} and rows["8"]["vs_window_8"] == 1.0
    assert all(row["simulator"] == "CompiledMiniGridSimulator" and row["median"] > 0 for row in rows.values())
    assert json.loads((tmp_path / "speed.json").read_text()) == result


def test_profile_setting_splits_the_wall_into_the_update_and_the_search() -> None:
    """``benchmarks.profile_setting``: the one MiniGrid setting's ``learn`` under cProfile; the update and the search
    are found in the profile and share the wall time."""
    from benchmarks import profile_setting

    result = profile_setting.profile("MiniGrid-DoorKey-5x5-v0", 1_000, top=3)
    assert result["interactions"] >= 1_000 and result["optimizer_steps"] > 0
    assert 0 < result["train_s"] and 0 < result["search_s"]
    assert result["train_s"] + result["search_s"] <= result["wall_s"] * 1.01
