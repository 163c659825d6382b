"""The MiniGrid table experiment: budgets, the commands that train each cell, held-out evaluation, resume and report."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch as th

from experiments import minigrid_table as table
from experiments.held_out import HeldOutEvaluation, build_env, evaluate_held_out
from experiments.minigrid_table import runner
from sb3_dirpg import DirPG, MiniGridCNN
from sb3_dirpg.envs import MissionObs, make_minigrid_env
from sb3_dirpg.envs.minigrid.wrappers import encode_mission

# the budgets rl-zoo3 ships for PPO (its hyperparams/ppo.yml), and the table's rule: at least 1M, at most 3M
ZOO = {
    "MiniGrid-Empty-Random-5x5-v0": 1e5,
    "MiniGrid-DoorKey-5x5-v0": 1e5,
    "MiniGrid-Unlock-v0": 1e5,
    "MiniGrid-KeyCorridorS3R1-v0": 5e5,
    "MiniGrid-RedBlueDoors-6x6-v0": 1e6,
    "MiniGrid-FourRooms-v0": 5e6,
    "MiniGrid-Fetch-5x5-N2-v0": 5e6,
    "MiniGrid-GoToDoor-5x5-v0": 5e6,
    "MiniGrid-PutNear-6x6-N2-v0": 1e7,
    "MiniGrid-MultiRoom-N4-S5-v0": 1e7,
    "MiniGrid-LockedRoom-v0": 1e7,
    "MiniGrid-ObstructedMaze-2Dlh-v0": 1e7,
}
WRAPPERS = ["sb3_dirpg.envs.FastObservation", "sb3_dirpg.envs.MiniGridShapedReward", "sb3_dirpg.envs.DirectionImageObs"]


def test_budgets_follow_rl_zoo3() -> None:
    assert set(table.ENVS) == set(ZOO)
    for env_id, budget in ZOO.items():
        assert table.zoo_budget(env_id) == budget
        assert table.cell_budget(env_id) == min(max(budget, 1e6), 3e6)


def test_every_method_has_an_entry_for_every_env() -> None:
    for env_id in table.ENVS:
        for method in table.METHODS:
            assert table.entry(env_id, method)["policy"]


def test_commands() -> None:
    """PPO trains with rl-zoo3's own script and file; ppo_shaped adds DirPG's reward (inside rl-zoo3's observation
    wrapper) and step limit; ppo_same on an entry that masks actions trains MaskablePPO through the bridge; ours go
    through the bridge; a resume continues from the checkpoint."""
    cell = table.Cell("MiniGrid-DoorKey-5x5-v0", "ppo", 0, 1_000_000)
    cmd = table.command(cell, Path("/runs"))
    assert cmd[1:3] == ["-m", "rl_zoo3.train"] and "--conf-file" not in cmd and "--trained-agent" not in cmd
    assert cmd[cmd.index("-n") + 1] == "1000000"
    assert any(part.startswith("callback:") and "HeldOutEvaluation" in part for part in cmd)
    shaped = table.command(table.Cell("MiniGrid-GoToDoor-5x5-v0", "ppo_shaped", 1, 3_000_000), Path("/runs"))
    wrappers = eval(next(p for p in shaped if p.startswith("env_wrapper:")).split(":", 1)[1])
    reward = {"sb3_dirpg.envs.minigrid.wrappers.MiniGridShapedReward": {"door_reward": 0.0, "pickup_reward": 0.0}}
    progress = {"sb3_dirpg.envs.minigrid.progress.MiniGridProgressReward": {"progress_reward": 5.0}}
    assert wrappers == [reward, progress, "minigrid.wrappers.FlatObsWrapper", table.FLOAT32_CAST]  # MissionObs is DirPG's
    assert "--env-kwargs" not in shaped  # the one setting keeps the env's own step limit (DirPG's horizon is its own)
    progress = table.command(table.Cell("MiniGrid-Unlock-v0", "ppo_shaped", 0, 1_000_000), Path("/runs"))
    wrappers = eval(next(p for p in progress if p.startswith("env_wrapper:")).split(":", 1)[1])
    assert [(w if isinstance(w, str) else next(iter(w))).rsplit(".", 1)[1] for w in wrappers] == [
        "MiniGridShapedReward", "MiniGridProgressReward", "FlatObsWrapper", "DtypeObservation"]  # the one setting's reward
    same = table.command(table.Cell("MiniGrid-Fetch-5x5-N2-v0", "ppo_same", 0, 3_000_000), Path("/runs"))
    settings = {p.split(":", 1)[0]: eval(p.split(":", 1)[1]) for p in same if p.split(":", 1)[0] in table.SAME_KEYS}
    assert settings["policy"] == "MultiInputPolicy" and "mission_gates=2" in settings["policy_kwargs"]
    assert eval(settings["policy_kwargs"])["features_extractor_class"] is MiniGridCNN  # as rl-zoo3 evaluates it
    assert settings["env_wrapper"] == table.entry("MiniGrid-Fetch-5x5-N2-v0", "dirpg")["env_wrapper"]
    # Fetch's entry is the one setting: the env keeps its own step limit, and the setting's masks make it MaskablePPO
    assert "--env-kwargs" not in same and same[1:6] == ["-m", "sb3_dirpg.integrations.zoo", "train", "--algo", "ppo_mask"]
    four_rooms = table.command(table.Cell("MiniGrid-FourRooms-v0", "ppo_same", 0, 3_000_000), Path("/runs"))
    max_steps = table.entry("MiniGrid-FourRooms-v0", "dirpg")["env_kwargs"]["max_steps"]
    assert four_rooms[four_rooms.index("--env-kwargs") + 1] == f"max_steps:{max_steps}"
    assert four_rooms[1:3] == ["-m", "rl_zoo3.train"]  # FourRooms' tuned entry has no masks: rl-zoo3's own PPO
    # 2Dlh's entry masks actions: PPO would ignore the masks, so ppo_same trains MaskablePPO with rl-zoo3's PPO entry
    masked = table.command(table.Cell("MiniGrid-ObstructedMaze-2Dlh-v0", "ppo_same", 0, 3_000_000), Path("/runs"))
    assert masked[1:6] == ["-m", "sb3_dirpg.integrations.zoo", "train", "--algo", "ppo_mask"]
    assert masked[masked.index("--conf-file") + 1] == str(table.zoo_ppo_file())
    assert table.masks_actions(table.entry("MiniGrid-ObstructedMaze-2Dlh-v0", "dirpg")["env_wrapper"])
    assert not any(table.masks_actions(table.overrides(env_id, "ppo")["env_wrapper"]) for env_id in table.ENVS)
    ours = table.command(table.Cell("MiniGrid-Fetch-5x5-N2-v0", "dirpg", 2, 3_000_000), Path("/runs"), offset=150_000)
    assert ours[1:5] == ["-m", "sb3_dirpg.integrations.zoo", "train", "--algo"]
    assert ours[ours.index("-n") + 1] == "2850000"
    assert ours[ours.index("--trained-agent") + 1] == "/runs/MiniGrid-Fetch-5x5-N2-v0/dirpg-s2/model.zip"


def test_settings_name_the_observation_wrappers_and_their_arguments() -> None:
    """The table's observation column names each observation wrapper, with its arguments where the entry gives some:
    DirPG sees 4 stacked views on FourRooms, REINFORCE one (it did worse with the stack on seed 0)."""
    stacked = "FastObservation+DirectionImageObs+FrameStackObservation(stack_size=4)"
    assert table.describe("MiniGrid-FourRooms-v0", "dirpg")["observation"] == stacked
    assert table.describe("MiniGrid-FourRooms-v0", "reinforce")["observation"] == "FastObservation+DirectionImageObs"
    rules = "rules=['no_undo', 'no_revisit', 'keep_doors_open', 'no_repick']"  # the one setting's masks
    assert table.describe("MiniGrid-DoorKey-5x5-v0", "dirpg")["observation"] == \
        f"FastObservation+MiniGridNoOpMask({rules})+DirectionImageObs"
    cast = "FlatObsWrapper+DtypeObservation(dtype='float32')"  # issue 43: without the cast PPO trains on uint8 garbage
    assert table.describe("MiniGrid-FourRooms-v0", "ppo_shaped")["observation"] == cast
    assert table.describe("MiniGrid-FourRooms-v0", "ppo")["observation"] == cast
    assert table.describe("MiniGrid-FourRooms-v0", "ppo_same")["observation"] == stacked
    assert table.describe("MiniGrid-FourRooms-v0", "ppo_same")["heuristic"] == "none"
    masked = table.describe("MiniGrid-ObstructedMaze-2Dlh-v0", "ppo_same")["heuristic"]
    assert masked == "none; MaskablePPO, learns with the masks"


def test_mission_encoding() -> None:
    width = 12
    code = encode_mission("put the blue key near the purple box")
    assert code.sum() == 4 and code[2] == 1 and code[6] == 1 and code[width + 3] == 1 and code[width + 8] == 1
    assert encode_mission("traverse the rooms to get to the goal").sum() == 0
    env = MissionObs(make_minigrid_env("MiniGrid-Fetch-5x5-N2-v0"))
    obs, _ = env.reset(seed=0)
    assert obs["mission"].shape == (36,) and np.array_equal(obs["mission"], encode_mission(env.unwrapped.mission))


def test_mission_gates_can_score_the_missions_object() -> None:
    """With the weights set by hand, a gate scores 2 exactly on the view cells that hold the object the mission names:
    the one-hot channels line up with MiniGrid's codes and the mission's slots. Trained, the gates learn such weights."""
    from minigrid.core.constants import COLOR_TO_IDX, OBJECT_TO_IDX

    from sb3_dirpg.envs import DirectionImageObs
    from sb3_dirpg.envs.minigrid.wrappers import MISSION_COLORS, MISSION_OBJECTS

    env = MissionObs(DirectionImageObs(make_minigrid_env("MiniGrid-Fetch-5x5-N2-v0")))
    with pytest.raises(ValueError, match="mission_gates"):
        MiniGridCNN(DirectionImageObs(make_minigrid_env("MiniGrid-Fetch-5x5-N2-v0")).observation_space, mission_gates=1)
    cnn = MiniGridCNN(env.observation_space, mission_gates=2)
    weights = th.zeros_like(cnn.gates.weight)  # (2 * 17, 36); gate 0 reads slot 0
    for i, color in enumerate(MISSION_COLORS):
        weights[11 + COLOR_TO_IDX[color], i] = 1.0
    for j, kind in enumerate(MISSION_OBJECTS):
        if kind in OBJECT_TO_IDX:
            weights[OBJECT_TO_IDX[kind], len(MISSION_COLORS) + j] = 1.0
    cnn.gates.weight.data = weights
    seen = 0
    for seed in range(20):
        obs, _ = env.reset(seed=seed)
        color, kind = env.unwrapped.mission.split()[-2:]
        image = th.as_tensor(obs["image"]).permute(2, 0, 1)[None].float()
        scores = cnn._gate_channels(image, th.as_tensor(obs["mission"])[None]).detach()
        target = (obs["image"][..., 0] == OBJECT_TO_IDX[kind]) & (obs["image"][..., 1] == COLOR_TO_IDX[color])
        assert scores.shape == (1, 2, 7, 7) and th.all(scores[0, 1] == 0)
        assert np.array_equal(scores[0, 0].numpy() == 2, target), (seed, env.unwrapped.mission)
        seen += int(target.sum())
    assert seen >= 10  # the object was in view in most maps, so the check above was not vacuous
    batch = {**obs, "direction": np.eye(4)[obs["direction"]]}
    features = cnn({key: th.as_tensor(value)[None] for key, value in batch.items()})
    assert features.shape == (1, cnn.features_dim)


def test_cnn_reads_stacked_frames() -> None:
    """With gymnasium's FrameStackObservation(3), the first convolution gets the three views' channels frame by frame,
    oldest first, and the features end with the three directions' one-hots; DirPG trains on the stacked FourRooms
    entry."""
    import gymnasium as gym

    from sb3_dirpg.envs import DirectionImageObs

    env = gym.wrappers.FrameStackObservation(DirectionImageObs(make_minigrid_env("MiniGrid-FourRooms-v0")), 3)
    cnn = MiniGridCNN(env.observation_space)
    assert cnn.features_dim == 64 + 3 * 4
    obs, _ = env.reset(seed=1)
    for action in (0, 2, 1):  # turn left, walk, turn right: three different views and two directions
        obs, *_ = env.step(action)
    frames = [th.as_tensor(frame).permute(2, 0, 1) for frame in obs["image"]]
    assert not th.equal(frames[0], frames[2])
    image = th.as_tensor(obs["image"])[None]
    assert th.equal(cnn._to_channels_first(image), th.cat(frames)[None])
    one_hots = th.nn.functional.one_hot(th.as_tensor(obs["direction"]), 4).float().reshape(1, -1)
    features = cnn({"image": image, "direction": one_hots})
    assert th.equal(features[:, 64:], one_hots)
    gated = MiniGridCNN(MissionObs(env).observation_space, mission_gates=1)
    mission = th.rand(1, gated.n_mission)
    newest = gated._gate_channels(cnn._to_channels_first(image)[:, -3:], mission)
    assert th.equal(gated._gate_channels(cnn._to_channels_first(image), mission), newest)  # the gates read the newest view
    assert not th.equal(gated._gate_channels(cnn._to_channels_first(image)[:, :3], mission), newest)

    # the shipped FourRooms entry stacks 4 views (its progress reward makes the searched trajectories differ)
    env = build_env("MiniGrid-FourRooms-v0", {}, table.entry("MiniGrid-FourRooms-v0", "dirpg")["env_wrapper"])
    assert env.observation_space["image"].shape == (4, 7, 7, 3)
    policy_kwargs = dict(features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False)
    model = DirPG("MultiInputPolicy", env, search_budget=100, seed=0, device="cpu", policy_kwargs=policy_kwargs)
    before = [param.detach().clone() for param in model.policy.parameters()]
    model.learn(600)
    assert any(not th.equal(a, b) for a, b in zip(before, model.policy.parameters()))


def test_held_out_evaluation_records_resumes_and_leaves_training_alone(tmp_path) -> None:
    """The callback evaluates at 0, budget/2 and budget, writes a record and a checkpoint, and changes nothing in
    training (same weights as without it); a second process resumes from the record's last point."""
    env_id, kwargs = "MiniGrid-Empty-Random-5x5-v0", {"max_steps": 20}

    def model() -> DirPG:
        policy_kwargs = dict(features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False)
        env = build_env(env_id, kwargs, WRAPPERS)
        return DirPG("MultiInputPolicy", env, search_budget=50, seed=3, device="cpu", policy_kwargs=policy_kwargs)

    record = tmp_path / "cell" / "record.json"
    callback = HeldOutEvaluation(str(record), env_id, 400, kwargs, WRAPPERS, points=2, seeds=(10_000, 6), verbose=0)
    with_eval = model().learn(400, callback=callback)
    without = model().learn(400)
    for a, b in zip(with_eval.policy.parameters(), without.policy.parameters()):
        assert th.equal(a, b)
    points = json.loads(record.read_text())["points"]
    assert [p["interactions"] >= 200 * i for i, p in enumerate(points)] == [True] * 3 and len(points) == 3
    assert (tmp_path / "cell" / "model.zip").exists()
    again = evaluate_held_out(with_eval, [build_env(env_id, kwargs, WRAPPERS) for _ in range(6)], range(10_000, 10_006), True)
    assert again == points[-1]["greedy"]  # greedy evaluation is deterministic

    resumed = DirPG.load(tmp_path / "cell" / "model.zip", env=build_env(env_id, kwargs, WRAPPERS), device="cpu")
    done = points[-1]["interactions"]
    more = HeldOutEvaluation(str(record), env_id, 800, kwargs, WRAPPERS, points=4, seeds=(10_000, 6), offset=done, verbose=0)
    resumed.learn(800 - done, callback=more)
    points = json.loads(record.read_text())["points"]
    assert json.loads(record.read_text())["budget"] == 800  # resumed to a larger budget: the report reads it as finished
    assert [p["interactions"] for p in points][:3] == [0, *[q["interactions"] for q in points[1:3]]]
    assert points[-1]["interactions"] >= 800 and len(points) == 5
    assert all(later["wall_s"] >= earlier["wall_s"] for earlier, later in zip(points, points[1:]))


def test_report_reads_the_curves(tmp_path) -> None:
    """Interactions to 0.9 is the first evaluation at or above it; success at rl-zoo3's budget reads the curve there."""
    folder = tmp_path / "MiniGrid-DoorKey-5x5-v0"
    for seed, reach in ((0, 2), (1, 4), (2, None)):
        points = []
        for i in range(6):
            success = 0.95 if reach is not None and i >= reach else 0.1 * i
            points.append({"interactions": i * 200_000, "wall_s": float(i), "sampled": {"success": success},
                           "greedy": {"success": success / 2}})  # fmt: skip
        (folder / f"dirpg-s{seed}").mkdir(parents=True)
        (folder / f"dirpg-s{seed}" / "record.json").write_text(json.dumps({"budget": 1_000_000, "points": points}))
    summary = table.summarize(tmp_path, ["MiniGrid-DoorKey-5x5-v0"], ["dirpg"])
    row = summary["MiniGrid-DoorKey-5x5-v0"]["methods"]["dirpg"]
    assert row["to_level"] == 800_000 and row["reached"] == 2 and row["finished"] == 3
    assert row["at_zoo_budget"] == pytest.approx(0.0)  # 1e5: the point at 0
    assert row["at_end"] == pytest.approx((0.95 + 0.95 + 0.5) / 3)
    assert row["rate"] == pytest.approx(1_000_000 / 5)  # the last point: 1M interactions in 5 s of training
    assert row["to_level_greedy"] == float("inf") and row["wall_to_level"] == float("inf")  # greedy at half of sampled
    assert "| 800k (2/3) | not reached (0/3) |" in table.markdown_table(summary)


def test_a_cell_that_stopped_early_holds_its_last_evaluation_to_the_budget(tmp_path) -> None:
    """Issue 43's rule: a PPO cell may stop once sampled and greedy success are both at least 0.95 at three evaluations
    in a row; it then counts as finished, is not run again, and its curve holds the last values to the budget."""
    folder = tmp_path / "MiniGrid-DoorKey-5x5-v0" / "ppo-s0"
    folder.mkdir(parents=True)
    points = [{"interactions": i * 50_000, "wall_s": float(i), "sampled": {"success": s}, "greedy": {"success": g}}
              for i, (s, g) in enumerate([(0.1, 0.0), (0.96, 0.85), (0.97, 0.96), (0.99, 0.97), (0.98, 0.99)])]  # fmt: skip
    (folder / "record.json").write_text(json.dumps({"budget": 1_000_000, "points": points, "stopped_early": 200_000}))
    row = table.summarize(tmp_path, ["MiniGrid-DoorKey-5x5-v0"], ["ppo"])["MiniGrid-DoorKey-5x5-v0"]["methods"]["ppo"]
    assert row["finished"] == 1 and row["stopped_early"] == 1 and row["curves"][0][-1] == [1_000_000, 0.98, 0.99]
    assert row["to_level"] == 50_000 and row["to_level_greedy"] == 100_000 and row["wall_to_level"] == 2.0
    assert row["at_end"] == pytest.approx(0.98) and "1 stopped early" in table.markdown_table(
        table.summarize(tmp_path, ["MiniGrid-DoorKey-5x5-v0"], ["ppo"]))
    assert table.progress(table.Cell("MiniGrid-DoorKey-5x5-v0", "ppo", 0, 1_000_000), tmp_path) == 1_000_000
    runner._keep_unresumable_record(folder)  # finished without a checkpoint by design: nothing to keep aside
    assert not (folder / table.KEPT_RECORD).exists()


def test_the_stop_rule_needs_three_evaluations_in_a_row_sampled_and_greedy() -> None:
    callback = HeldOutEvaluation("unused.json", "MiniGrid-DoorKey-5x5-v0", 1000, stop_level=0.95, stop_after=3)
    point = lambda s, g: {"sampled": {"success": s}, "greedy": {"success": g}}  # noqa: E731
    for points, stops in (([point(1, 1)] * 2, False), ([point(1, 1), point(0.94, 1), point(1, 1)], False),
                          ([point(0.5, 0.5), point(0.95, 0.95), point(1, 0.96), point(0.97, 1)], True),
                          ([point(1, 1), point(1, 1), point(1, 0.9)], False)):  # fmt: skip
        callback._record = {"points": points}
        assert callback.reached_stop_level() is stops
    never = HeldOutEvaluation("unused.json", "MiniGrid-DoorKey-5x5-v0", 1000)
    never._record = {"points": [point(1, 1)] * 5}
    assert not never.reached_stop_level()


def test_report_leaves_seeds_stopped_at_1m_out_of_the_end(tmp_path) -> None:
    """PPO seeds stopped at 1M on a 3M env (the 1M rule) count for the curves, not for the success at the end or the
    wall time, and the table says how many were stopped."""
    folder = tmp_path / "MiniGrid-Fetch-5x5-N2-v0"
    for seed, end in ((0, 3_000_000), (1, 1_000_000), (2, 1_000_000)):
        last = 0.3 if seed == 0 else 0.2
        points = [{"interactions": x, "wall_s": x / 1000, "sampled": {"success": last if x == end else 0.1},
                   "greedy": {"success": 0.0}} for x in range(0, end + 1, 500_000)]  # fmt: skip
        (folder / f"ppo-s{seed}").mkdir(parents=True)
        (folder / f"ppo-s{seed}" / "record.json").write_text(json.dumps({"budget": end, "points": points}))
    summary = table.summarize(tmp_path, ["MiniGrid-Fetch-5x5-N2-v0"], ["ppo"])
    row = summary["MiniGrid-Fetch-5x5-N2-v0"]["methods"]["ppo"]
    assert row["finished"] == 3 and row["at_end"] == pytest.approx(0.3) and row["wall_s"] == pytest.approx(3000)
    assert row["at_zoo_budget"] == pytest.approx(0.3)  # rl-zoo3's 5M, capped at the 3M that seed 0 ran
    assert "| ppo | 3 (3; 2 to 1.00M) |" in table.markdown_table(summary)


def test_the_report_of_every_cell_rewrites_the_pages_blocks(tmp_path) -> None:
    """``--report`` with no --methods reports every method and variant with a cell (the table's methods first) and
    rewrites the page's two generated blocks, leaving the rest of the page; a report of named cells leaves the page."""
    runs, out, page = tmp_path / "runs", tmp_path / "results", tmp_path / "results.md"
    for name in ("ppo-s0", "dirpg@fine-s0", "dirpg-s0", "dirpg-s1"):
        points = [{"interactions": x, "wall_s": x / 1e4, "sampled": {"success": 0.95 if x and "dirpg" in name else 0.0},
                   "greedy": {"success": 0.0}} for x in range(0, 1_000_001, 500_000)]  # fmt: skip
        folder = runs / "MiniGrid-DoorKey-5x5-v0" / name
        folder.mkdir(parents=True)
        (folder / "record.json").write_text(json.dumps({"budget": 1_000_000, "points": points}))
    stale = "before\n<!-- minigrid table start -->\n\nold rows\n\n<!-- minigrid table end -->\nbetween\n"
    page.write_text(stale + "<!-- minigrid targets start -->\nold targets\n<!-- minigrid targets end -->\nafter\n")
    assert table.methods_in(runs, ["MiniGrid-DoorKey-5x5-v0"]) == ["dirpg", "ppo", "dirpg@fine"]

    table.main(["--report", "--methods", "dirpg", "--runs", str(runs), "--out", str(out)])
    assert "old rows" in page.read_text() and "| ppo |" not in (out / "minigrid_table.md").read_text()

    table.main(["--report", "--runs", str(runs), "--out", str(out)])
    text = page.read_text()
    assert "old rows" not in text and "old targets" not in text
    assert text.startswith("before\n") and "\nbetween\n" in text and text.endswith("after\n")
    block = text.split("<!-- minigrid table start -->")[1].split("<!-- minigrid table end -->")[0]
    rows = [line.split(" | ")[2] for line in block.splitlines() if "DoorKey" in line]
    assert rows == ["dirpg", "ppo", "dirpg@fine"]
    assert (out / "minigrid_targets.md").read_text().strip() in text


def _record(runs, env_id: str, name: str, budget: int, end: int, success: float = 0.05, checkpoint: bool = False) -> None:
    """A cell's record with evaluations every 5 % of its budget up to ``end``, at ``success`` (and a checkpoint)."""
    points = [{"interactions": x, "wall_s": x / 1e3, "sampled": {"success": success}, "greedy": {"success": 0.0}}
              for x in range(0, end + 1, budget // 20)]  # fmt: skip
    folder = runs / env_id / name
    folder.mkdir(parents=True)
    (folder / "record.json").write_text(json.dumps({"budget": budget, "points": points}))
    if checkpoint:
        (folder / "model.zip").write_bytes(b"")


def test_fill_plans_the_cells_the_targets_lack(tmp_path) -> None:
    """--fill trains what the report's last column lacks: missing seeds to the budget; for rl-zoo3's PPO past 1M,
    seeds to 1M and one seed on to the budget (the one with the furthest checkpoint, else the lowest), or all three
    where a seed is near 0.9 at 1M; and PPO with DirPG's information (one seed) where it is missing."""
    runs, m = tmp_path, 1_000_000
    envs = ["MiniGrid-GoToDoor-5x5-v0", "MiniGrid-MultiRoom-N4-S5-v0", "MiniGrid-Fetch-5x5-N2-v0", "MiniGrid-LockedRoom-v0"]
    for env_id in envs:
        for method in ("dirpg", "reinforce"):
            for seed in range(3):
                if (env_id, method, seed) != ("MiniGrid-GoToDoor-5x5-v0", "reinforce", 1):
                    _record(runs, env_id, f"{method}-s{seed}", 3 * m, 3 * m, success=0.95)
    # GoToDoor: two checkpoints, at 1.05M and 150k: the furthest goes on
    _record(runs, "MiniGrid-GoToDoor-5x5-v0", "ppo-s0", 3 * m, 1_050_000, checkpoint=True)
    _record(runs, "MiniGrid-GoToDoor-5x5-v0", "ppo-s1", 3 * m, 150_000, checkpoint=True)
    _record(runs, "MiniGrid-GoToDoor-5x5-v0", "ppo_same-s0", 3 * m, 3 * m)
    # N4-S5: one seed stopped at 1M, no checkpoint: a seed that lacks 1M goes on, so that it fills a place there too
    _record(runs, "MiniGrid-MultiRoom-N4-S5-v0", "ppo-s0", m, m)
    _record(runs, "MiniGrid-MultiRoom-N4-S5-v0", "ppo-s3", 3 * m, 300_000)  # a seed cut short: one more is enough
    _record(runs, "MiniGrid-MultiRoom-N4-S5-v0", "ppo_same-s0", 3 * m, 3 * m)
    # Fetch: three seeds to 1M or past, none to the budget, all far from 0.9; no PPO with DirPG's information
    _record(runs, "MiniGrid-Fetch-5x5-N2-v0", "ppo-s0", 3 * m, 1_950_000)
    for seed in (1, 2):
        _record(runs, "MiniGrid-Fetch-5x5-N2-v0", f"ppo-s{seed}", m, m)
    # LockedRoom: seed 1 is not far from 0.9 at 1M, so all three go on to the budget
    for seed in range(3):
        _record(runs, "MiniGrid-LockedRoom-v0", f"ppo-s{seed}", m, m, success=0.6 if seed == 1 else 0.0)
    _record(runs, "MiniGrid-LockedRoom-v0", "ppo_same-s0", 3 * m, 3 * m)

    cells = table.cells_to_run(runs, envs)
    planned = {(cell.env_id.split("-")[1], cell.method, cell.seed, cell.budget) for cell in cells}
    assert planned == {
        ("GoToDoor", "reinforce", 1, 3 * m),
        ("GoToDoor", "ppo", 0, 3 * m),
        ("GoToDoor", "ppo", 1, m),
        ("GoToDoor", "ppo", 2, m),
        ("MultiRoom", "ppo", 1, 3 * m),
        ("MultiRoom", "ppo", 2, m),
        ("Fetch", "ppo", 0, 3 * m),
        ("Fetch", "ppo_same", 0, 3 * m),
        ("LockedRoom", "ppo", 0, 3 * m),
        ("LockedRoom", "ppo", 1, 3 * m),
        ("LockedRoom", "ppo", 2, 3 * m),
    }
    remaining = [cell.budget - table.progress(cell, runs) for cell in cells]
    assert remaining[:2] == [850_000, 1_950_000]  # the checkpoints first, the nearest to its end first
    assert remaining[2:] == sorted(remaining[2:], reverse=True) and remaining[2] == 3 * m
    with pytest.raises(SystemExit, match="--fill picks"):
        table.main(["--fill", "--methods", "ppo", "--runs", str(runs)])


def test_the_report_shows_the_cells_still_to_run(tmp_path, monkeypatch, capsys) -> None:
    """--report rewrites the page's ``minigrid cells to run`` block with what --fill would train: each cell, how far
    its record reaches (an earlier run's, named so, while a rerun from scratch is behind it) and its last evaluation,
    and the interactions left; once nothing is left, it says so."""
    runs, out, m, env_id = tmp_path / "runs", tmp_path / "results", 1_000_000, "MiniGrid-DoorKey-5x5-v0"
    for method in ("dirpg", "reinforce"):
        for seed in range(3):
            _record(runs, env_id, f"{method}-s{seed}", m, m, success=0.95)
    _record(runs, env_id, "ppo-s0", m, m)
    _record(runs, env_id, "ppo-s1", m, 300_000, checkpoint=True)  # a rerun from scratch, behind an earlier run's 600k:
    _record(tmp_path / "earlier", env_id, "ppo-s1", m, 600_000, success=0.1)
    (tmp_path / "earlier" / env_id / "ppo-s1" / "record.json").rename(runs / env_id / "ppo-s1" / table.KEPT_RECORD)
    (runs / env_id / "ppo-s2").mkdir()  # a rerun from scratch that has not yet evaluated, behind an earlier 200k
    (runs / env_id / "ppo-s2" / "record.json").write_text(json.dumps({"budget": m, "points": []}))
    _record(tmp_path / "earlier", env_id, "ppo-s2", m, 200_000, success=0.2)
    (tmp_path / "earlier" / env_id / "ppo-s2" / "record.json").rename(runs / env_id / "ppo-s2" / table.KEPT_RECORD)
    _record(runs, env_id, "ppo_same-s0", m, m)
    page = tmp_path / "results.md"
    page.write_text("before\n<!-- minigrid cells to run start -->\nold\n<!-- minigrid cells to run end -->\nafter\n")

    table.main(["--report", "--runs", str(runs), "--out", str(out)])
    block = page.read_text().split("cells to run start -->")[1].split("<!--")[0]
    rows = [line for line in block.splitlines() if line.startswith("| DoorKey")]
    assert rows == ["| DoorKey-5x5 | ppo | 1 | 1.00M | 600k (an earlier run; the rerun is at 300k) | 0.10 / 0.00 |",
                    "| DoorKey-5x5 | ppo | 2 | 1.00M | 200k (an earlier run; the rerun is at 0k) | 0.20 / 0.00 |"]
    assert "2 cells, 1.70M interactions from their last evaluations." in block  # the reruns' 700k and 1M

    trained = []  # --fill prints the same list, then trains those cells
    monkeypatch.setattr(table.cli, "run_cell", lambda cell, runs, resume: trained.append((cell.method, cell.seed, resume)))
    capsys.readouterr()
    table.main(["--fill", "--procs", "1", "--envs", env_id, "--runs", str(runs), "--out", str(out)])
    assert rows[0] in capsys.readouterr().out and trained == [("ppo", 1, True), ("ppo", 2, True)]

    for seed in (1, 2):  # both run to their budget
        shutil.rmtree(runs / env_id / f"ppo-s{seed}")
        _record(runs, env_id, f"ppo-s{seed}", m, m)
    table.main(["--report", "--runs", str(runs), "--out", str(out)])
    text = page.read_text()
    assert "None: every cell the targets need has run" in text and "| DoorKey" not in text.split("after")[0]
    assert text.startswith("before\n") and text.endswith("after\n")


def test_a_rerun_from_scratch_never_shrinks_the_table(tmp_path, monkeypatch) -> None:
    """A record with no checkpoint (a run cut short on another machine) restarts from scratch, which rewrites its
    record: the table keeps reporting the earlier run until the rerun passes it, then drops it."""
    runs, m, env_id = tmp_path / "runs", 1_000_000, "MiniGrid-Fetch-5x5-N2-v0"
    _record(runs, env_id, "ppo-s0", 3 * m, 1_950_000)
    folder, cell = runs / env_id / "ppo-s0", table.Cell(env_id, "ppo", 0, 3 * m)
    reach = []

    def rerun(cmd, **kwargs):  # what the callback does: it rewrites the record and checkpoints at every point
        assert "--trained-agent" not in cmd
        scratch = tmp_path / "scratch" / str(len(reach))
        _record(scratch, env_id, "ppo-s0", 3 * m, reach[-1], success=0.2)
        folder.joinpath("record.json").write_text(scratch.joinpath(env_id, "ppo-s0", "record.json").read_text())
        folder.joinpath("model.zip").write_bytes(b"")
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(subprocess, "run", rerun)

    def reported() -> tuple[int, float]:
        curve = table.summarize(runs, [env_id], ["ppo"])[env_id]["methods"]["ppo"]["curves"][0]
        return curve[-1][0], curve[-1][1]

    reach.append(300_000)
    table.run_cell(cell, runs, resume=True)
    assert reported() == (1_950_000, 0.05)  # the earlier run, not the rerun's 300k
    assert (folder / table.KEPT_RECORD).exists()
    folder.joinpath("model.zip").unlink()  # cut short again before passing it: the longer record stays kept
    reach.append(600_000)
    table.run_cell(cell, runs, resume=True)
    assert reported() == (1_950_000, 0.05)
    folder.joinpath("model.zip").unlink()
    reach.append(2_100_000)
    table.run_cell(cell, runs, resume=True)
    assert reported() == (2_100_000, 0.2)
    assert not (folder / table.KEPT_RECORD).exists()


def test_held_out_evaluation_leaves_ppo_training_alone(tmp_path) -> None:
    """PPO samples its actions from torch's generator: the sampled evaluation draws from its own seeded state and gives
    it back, so PPO's weights after training are the same with and without the callback."""
    from stable_baselines3 import PPO

    env_id, wrapper = "MiniGrid-Empty-Random-5x5-v0", "minigrid.wrappers.FlatObsWrapper"

    def model() -> PPO:
        return PPO("MlpPolicy", build_env(env_id, {}, wrapper), n_steps=64, batch_size=32, n_epochs=1, seed=5, device="cpu")

    callback = HeldOutEvaluation(str(tmp_path / "record.json"), env_id, 128, {}, wrapper, points=2, seeds=(10_000, 4),
                                 verbose=0)  # fmt: skip
    with_eval = model().learn(128, callback=callback)  # each built and trained in turn: PPO seeds torch's global state
    without = model().learn(128)
    assert len(json.loads((tmp_path / "record.json").read_text())["points"]) == 3
    for a, b in zip(with_eval.policy.parameters(), without.policy.parameters()):
        assert th.equal(a, b)


def _row(budget: float, unsolved: bool = False, **methods: list[list[list[float]]]) -> dict:
    """A summary row: ``methods`` maps a method to one curve per seed, each run to the budget."""
    return {"budget": budget, "unsolved": unsolved,
            "methods": {m: {"seeds": len(c), "finished": len(c), "curves": c} for m, c in methods.items()}}  # fmt: skip


def _curve(reach: float | None, end: float = 1e6, step: float = 1e5) -> list[list[float]]:
    """Success 0.95 from ``reach`` on (never if None), 0.1 before, evaluated every ``step`` to ``end``."""
    return [[x, 0.95 if reach is not None and x >= reach else 0.1, 0.0] for x in np.arange(0, end + step / 2, step)]


def test_targets_are_judged_on_medians_within_the_budget() -> None:
    """A tie is not faster; a baseline reaching on 1 seed of 3 does not reach; points past the budget count only for
    the Unsolved target; PPO with DirPG's information is asked for on every env (three seeds where it reaches 0.9 before
    DirPG, a mark earlier: the same mark a few interactions apart is level); DirPG's and the better PPO's greedy medians
    are reported."""
    from experiments.minigrid_targets import judge, missing_cells, targets_table

    summary = {
        "tie": _row(1e6, dirpg=[_curve(1e5)] * 3, reinforce=[_curve(1e5)] * 3, ppo=[_curve(1e5)] * 3,
                    ppo_same=[_curve(None)]),
        "ahead": _row(1e6, dirpg=[_curve(2e5), _curve(3e5), _curve(None)], reinforce=[_curve(4e5)] * 3,
                      ppo=[_curve(None)] * 3, ppo_same=[_curve(None)]),
        "lone_seed": _row(1e6, dirpg=[_curve(None)] * 3, reinforce=[_curve(5e5), _curve(None), _curve(None)],
                          ppo=[_curve(None)] * 3, ppo_same=[_curve(None)]),
        "behind": _row(1e6, dirpg=[_curve(None)] * 3, reinforce=[_curve(5e5)] * 3, ppo=[_curve(None)] * 3,
                       ppo_same=[[[x, 0.95, 0.92] for x in np.arange(0, 1.05e6, 1e5)]]),
        "late": _row(3e6, True, dirpg=[_curve(4.5e6, 5e6, 5e5), _curve(3.5e6, 5e6, 5e5), _curve(None, 3e6)],
                     reinforce=[_curve(None, 3e6)] * 3, ppo=[_curve(None, 3e6)]),
    }  # fmt: skip
    verdict = judge(summary)
    envs = verdict["envs"]
    assert envs["tie"]["faster"] is False and envs["ahead"]["faster"] is True
    assert envs["lone_seed"]["baseline_reaches"] is False and envs["behind"]["dirpg_reaches"] is False
    assert envs["late"]["dirpg_reaches"] is False and envs["late"]["unsolved_solved"] is True
    assert verdict["reaches"] == [2, 3] and verdict["faster"] == [1, 3] and verdict["unsolved"] == [1, 1]
    assert envs["tie"]["missing"] == [f"{m}@fine: 0 of 3 seeds" for m in ("dirpg", "reinforce", "ppo")]
    assert envs["ahead"]["missing"] == []
    assert envs["behind"]["missing"] == ["ppo_same: 1 of 3 seeds (it reaches 0.9 before DirPG)"]
    level = _row(1e6, dirpg=[[[x + 39, 0.95 if x >= 5e5 else 0.1, 0.0] for x in np.arange(0, 1.05e6, 1e5)]] * 3,
                 reinforce=[_curve(None)] * 3, ppo=[_curve(None)] * 3, ppo_same=[_curve(5e5)])
    assert missing_cells("level", level) == []  # the same evaluation mark, 39 interactions apart, is not "before"
    level["methods"]["ppo_same"]["curves"] = [_curve(4e5)]
    assert missing_cells("level", level) == ["ppo_same: 1 of 3 seeds (it reaches 0.9 before DirPG)"]
    assert envs["behind"]["ppo_best_greedy"] == 0 and envs["behind"]["dirpg_greedy"] == float("inf")
    assert envs["late"]["missing"] == ["ppo: 1 of 3 seeds to 1M", "ppo_same: 0 of 1 seed"]
    text = targets_table(verdict)
    assert "2 of 3 envs (not met)" in text and "1 of 3 (not met)" in text and "1 of 1 (not met)" in text


def test_ppo_needs_three_seeds_to_1m_and_one_to_the_budget_where_all_are_far() -> None:
    """On a 3M env, rl-zoo3's PPO needs 3 seeds to 1M; one of them run on to 3M is enough when all are below 0.5 at
    1M, and all three when one is not."""
    from experiments.minigrid_targets import missing_cells

    far, near = _curve(None, 1e6), [[x, 0.6, 0.0] for x in np.arange(0, 1.05e6, 1e5)]
    long_far = _curve(None, 3e6)
    extra = dict(dirpg=[long_far] * 3, reinforce=[long_far] * 3, ppo_same=[long_far])
    assert missing_cells("env", _row(3e6, ppo=[long_far, far, far], **extra)) == []
    assert missing_cells("env", _row(3e6, ppo=[far, far, far], **extra)) == ["ppo: one seed to 3.00M"]
    assert missing_cells("env", _row(3e6, ppo=[long_far, far, near], **extra)) == ["ppo: 1 of 3 seeds to 3.00M"]
    assert missing_cells("env", _row(3e6, ppo=[long_far, far, far[:5]], **extra)) == ["ppo: 2 of 3 seeds to 1M"]
    assert missing_cells("env", _row(3e6, ppo=[far], **extra)) == ["ppo: 1 of 3 seeds to 1M", "ppo: one seed to 3.00M"]
    assert missing_cells("env", _row(1e6, ppo=[far, far], **extra)) == ["ppo: 2 of 3 seeds"]


def test_an_evaluation_landing_just_past_its_mark_is_the_marks() -> None:
    """Evaluations run at the first update past each mark: the last one of a 1M run lands at 1,000,385, say. It is
    the run's success at 1M, and a 0.9 there counts within the budget; the next interval's evaluation does not."""
    from experiments.minigrid_targets import first_reach, success_at

    marks = [0, 250_006, 500_120, 750_003, 1_000_385]
    curve = [[x, s, 0.0] for x, s in zip(marks, (0.0, 0.2, 0.4, 0.6, 0.95))]
    assert success_at(curve, 1_000_000) == 0.95 and success_at(curve, 1_000_000, column=2) == 0.0
    assert success_at(curve, 500_000) == 0.4 and success_at(curve, 600_000) == 0.4
    assert first_reach(curve, 1_000_000) == 1_000_385 and first_reach(curve, 900_000) == float("inf")


def test_a_tie_is_broken_by_the_fine_cells_of_every_tied_method() -> None:
    """DirPG tied with REINFORCE and PPO at the table's evaluations is faster only if its ``@fine`` median is below
    both tied baselines'; a tied baseline with no ``@fine`` seeds leaves the tie standing and is listed as missing."""
    from experiments.minigrid_targets import judge, targets_table

    jitter = [[x + 36 * (x > 0), y, z] for x, y, z in _curve(1e5)]  # its evaluations land 36 past the marks: a tie still
    tied = dict(dirpg=[jitter] * 3, reinforce=[_curve(1e5)] * 3, ppo=[_curve(1e5)] * 3, ppo_same=[_curve(None)])
    fine = {"dirpg@fine": [_curve(3e4, 1e5, 1e4)] * 3, "reinforce@fine": [_curve(6e4, 1e5, 1e4)] * 3}
    summary = {
        "won": _row(1e6, **tied, **fine, **{"ppo@fine": [_curve(5e4, 1e5, 1e4)] * 3}),
        "lost": _row(1e6, **tied, **fine, **{"ppo@fine": [_curve(2e4, 1e5, 1e4)] * 3}),
        "unbroken": _row(1e6, **tied, **fine),
    }
    envs = judge(summary)["envs"]
    assert envs["won"]["faster"] is True
    assert envs["won"]["tie_break"] == {"fine": {"dirpg": 3e4, "reinforce": 6e4, "ppo": 5e4}}
    assert envs["lost"]["faster"] is False
    assert envs["unbroken"]["faster"] is False and envs["unbroken"]["missing"] == ["ppo@fine: 0 of 3 seeds"]
    assert "@fine: dirpg 30k, reinforce 60k, ppo 50k" in targets_table(judge(summary))


def test_a_tie_at_the_fine_cells_is_broken_by_the_finer_ones_where_they_were_run() -> None:
    """Tied again at the ``@fine`` evaluations (every 10k here), DirPG is faster only if the ``@finer`` cells (every 2k)
    put it ahead of every baseline still tied; without ``@finer`` cells the tie stands and none are asked for, and a
    baseline whose ``@finer`` cells are missing keeps it standing and is listed."""
    from experiments.minigrid_targets import judge, targets_table

    tied = dict(dirpg=[_curve(1e5)] * 3, reinforce=[_curve(None)] * 3, ppo=[_curve(1e5)] * 3, ppo_same=[_curve(None)])
    fine = {"dirpg@fine": [_curve(3e4, 1e5, 1e4)] * 3, "ppo@fine": [_curve(3e4, 1e5, 1e4)] * 3}
    summary = {
        "won": _row(1e6, **tied, **fine, **{"dirpg@finer": [_curve(1.2e4, 4e4, 2e3)] * 3,
                                            "ppo@finer": [_curve(2e4, 4e4, 2e3)] * 3}),
        "lost": _row(1e6, **tied, **fine, **{"dirpg@finer": [_curve(2.2e4, 4e4, 2e3)] * 3,
                                             "ppo@finer": [_curve(2e4, 4e4, 2e3)] * 3}),
        "level": _row(1e6, **tied, **fine, **{"dirpg@finer": [_curve(2e4, 4e4, 2e3)] * 3,
                                              "ppo@finer": [_curve(2e4, 4e4, 2e3)] * 3}),
        "not_run": _row(1e6, **tied, **fine),
        "half_run": _row(1e6, **tied, **fine, **{"dirpg@finer": [_curve(1.2e4, 4e4, 2e3)] * 3}),
    }  # fmt: skip
    envs = judge(summary)["envs"]
    assert envs["won"]["faster"] is True
    assert envs["won"]["tie_break"] == {"fine": {"dirpg": 3e4, "ppo": 3e4}, "finer": {"dirpg": 1.2e4, "ppo": 2e4}}
    assert [envs[e]["faster"] for e in ("lost", "level", "not_run", "half_run")] == [False] * 4
    assert envs["not_run"]["missing"] == [] and envs["not_run"]["tie_break"] == {"fine": {"dirpg": 3e4, "ppo": 3e4}}
    assert envs["half_run"]["missing"] == ["ppo@finer: 0 of 3 seeds"]
    assert "@fine: dirpg 30k, ppo 30k; @finer: dirpg 12k, ppo 20k" in targets_table(judge(summary))


def test_wall_time_is_judged_on_the_cells_run_side_by_side_only() -> None:
    """The wall-time verdict reads the ``@side`` cells' median wall time to 0.9: DirPG's must be no more than every
    PPO's that reached; an env with no side-by-side cells, or where none reached, gets no verdict."""
    from experiments.minigrid_targets import judge, targets_table, wall_no_more

    def side(**walls: float) -> dict:
        return {f"{m}@side": {"seeds": 3, "finished": 3, "curves": [_curve(1e5)] * 3, "wall_to_level": w}
                for m, w in walls.items()}  # fmt: skip

    base = dict(dirpg=[_curve(1e5)] * 3, reinforce=[_curve(None)] * 3, ppo=[_curve(2e5)] * 3, ppo_same=[_curve(None)])
    summary = {"quicker": _row(1e6, **base), "slower": _row(1e6, **base), "unmeasured": _row(1e6, **base)}
    summary["quicker"]["methods"].update(side(dirpg=30.0, ppo=60.0, ppo_same=float("inf")))
    summary["slower"]["methods"].update(side(dirpg=30.0, ppo=60.0, ppo_same=20.0))
    verdict = judge(summary)
    assert [verdict["envs"][e]["wall_no_more"] for e in summary] == [True, False, None]
    assert verdict["wall"] == [1, 2]
    assert wall_no_more({"dirpg": 5.0}) is None and wall_no_more({"dirpg": np.inf, "ppo": np.inf}) is None
    assert wall_no_more({"dirpg": np.inf, "ppo": 9.0}) is False
    text = targets_table(verdict)
    assert "| 0.5 min / ppo 1.0 min, ppo_same 0.3 min (**no**) |" in text and "on 1 of the 2 envs measured" in text


def test_a_median_that_running_seeds_may_still_reach_is_not_reached_yet() -> None:
    """Two seeds of three still running short of the budget: their median is undecided, not "not reached". Once they
    have run to the budget without reaching, or when one seed alone is running, it is decided."""
    from experiments.minigrid_targets import judge, targets_table, undecided

    running = [_curve(None, end=4e5), _curve(None, end=6e5), _curve(None)]
    assert undecided(running, 1e6) and not undecided([_curve(None)] * 3, 1e6)
    assert not undecided([_curve(None, end=4e5), _curve(None), _curve(None)], 1e6)
    assert undecided([[], [], _curve(None)], 1e6)  # seeds started but not yet evaluated are running too
    assert not undecided([_curve(2e5, end=4e5), _curve(3e5, end=6e5), _curve(None)], 1e6)  # reached: decided
    stopped = [_curve(None, end=3e6), _curve(None), _curve(None)]  # two seeds stopped at their own 1M budget (PPO's rule)
    assert undecided(stopped, 3e6) and not undecided(stopped, 3e6, budgets=[3e6, 1e6, 1e6])
    assert undecided([_curve(None, end=3e6), _curve(None, end=5e5), _curve(None, end=5e5)], 3e6, budgets=[3e6, 1e6, 1e6])
    verdict = judge({"MiniGrid-X-v0": _row(1e6, dirpg=running, reinforce=[_curve(None)] * 3)})
    assert verdict["envs"]["MiniGrid-X-v0"]["undecided"] == ["dirpg"]
    assert "| X | not reached yet | reinforce not reached |" in targets_table(verdict)


def test_maskable_ppo_on_a_frontier_env_gets_the_dirpg_entrys_information() -> None:
    """docs/scripts/maskable_ppo_frontier.py: rl-zoo3's MiniGrid PPO settings with the DirPG entry's wrappers (masks
    included), policy and network, the reward normalized and the observation not (the table's ppo_same)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "docs" / "scripts" / "maskable_ppo_frontier.py"
    spec = importlib.util.spec_from_file_location("maskable_ppo_frontier", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    env_id = "MiniGrid-KeyCorridorS6R3-v0"
    settings = script.ppo_entry(env_id, 2_500_000)
    ours, zoo = table.entry(env_id, "dirpg"), table.entry("MiniGrid-Unlock-v0", "ppo")
    assert settings["env_wrapper"] == ours["env_wrapper"] and table.masks_actions(settings["env_wrapper"])
    assert settings["normalize"] == table.SAME_NORMALIZE and settings["n_timesteps"] == 2_500_000
    assert eval(settings["policy_kwargs"])["features_extractor_class"] is MiniGridCNN
    assert {key: settings[key] for key in ("n_envs", "n_steps", "gamma", "ent_coef", "learning_rate")} == {
        key: zoo[key] for key in ("n_envs", "n_steps", "gamma", "ent_coef", "learning_rate")}


def _returns(runs, env_id: str, name: str, returns: dict[int, float], budget: int, stopped_early: bool = False) -> None:
    """A PPO cell's record with MiniGrid's return (sampled; greedy 0.01 below) at the given interactions."""
    points = [{"interactions": x, "wall_s": x / 1e3, "sampled": {"success": r, "minigrid_return": r},
               "greedy": {"success": r, "minigrid_return": r - 0.01}} for x, r in returns.items()]  # fmt: skip
    folder = runs / env_id / name
    folder.mkdir(parents=True)
    record = {"budget": budget, "points": points, **({"stopped_early": max(returns)} if stopped_early else {})}
    (folder / "record.json").write_text(json.dumps(record))


def test_the_reproduction_check_reads_each_seed_at_the_benchmarks_budget(tmp_path) -> None:
    """The check of rl-zoo3's PPO against its benchmark.md reads each seed's sampled MiniGrid return at the benchmark's
    n_timesteps (not later), holds a cell that stopped early at its last evaluation, says where a record ends short of
    the benchmark's budget, and judges the gate on seed 0 alone; --report writes it into the page's block."""
    runs, out, m = tmp_path / "runs", tmp_path / "results", 1_000_000
    _returns(runs, "MiniGrid-Empty-Random-5x5-v0", "ppo-s0", {0: 0.1, 50_000: 0.5, 100_000: 0.93, 150_000: 0.97}, m)
    _returns(runs, "MiniGrid-DoorKey-5x5-v0", "ppo-s0", {0: 0.1, 100_000: 0.0}, m)
    _returns(runs, "MiniGrid-DoorKey-5x5-v0", "ppo-s1", {0: 0.1, 100_000: 0.964}, m)
    _returns(runs, "MiniGrid-KeyCorridorS3R1-v0", "ppo-s0", {0: 0.0, 200_000: 0.951, 250_000: 0.949}, m, stopped_early=True)
    _returns(runs, "MiniGrid-GoToDoor-5x5-v0", "ppo-s0", {0: 0.05, 3_000_000: 0.7}, 3 * m)
    check = table.reproduction(runs)
    assert check["MiniGrid-Empty-Random-5x5-v0"]["seeds"][0]["sampled"] == 0.93  # at 100k, not 150k's 0.97
    assert check["MiniGrid-Empty-Random-5x5-v0"]["within"]  # 0.93 is within 0.05 of 0.968
    assert not check["MiniGrid-DoorKey-5x5-v0"]["within"]  # seed 0 collapsed; seed 1 matching does not pass the gate
    assert not check["MiniGrid-Unlock-v0"]["within"]  # no record at all
    assert "Fetch" not in str(list(check))  # benchmark.md has no Fetch row
    text = table.reproduction_table(check)
    rows = {line.split(" | ")[0].removeprefix("| "): line for line in text.splitlines() if line.startswith("| ")}
    assert rows["Empty-Random-5x5"] == "| Empty-Random-5x5 | 0.968 (100k) | 0.930 / 0.920 | – | – | yes |"
    assert rows["DoorKey-5x5"] == "| DoorKey-5x5 | 0.964 (100k) | 0.000 / -0.010 | 0.964 / 0.954 | – | **no** |"
    assert "0.949 / 0.939 (stopped early at 250k)" in rows["KeyCorridorS3R1"]
    assert "0.700 / 0.690 (at 3.00M)" in rows["GoToDoor-5x5"] and rows["GoToDoor-5x5"].endswith(" | – |")
    assert "Empty-Random-5x5, DoorKey-5x5, Unlock: 1 of 3." in text

    page = tmp_path / "results.md"
    page.write_text("before\n<!-- minigrid reproduction start -->\nold\n<!-- minigrid reproduction end -->\nafter\n")
    table.main(["--report", "--runs", str(runs), "--out", str(out)])
    assert text.strip() in page.read_text() and "old" not in page.read_text()
    assert json.loads((out / "minigrid_reproduction.json").read_text())["MiniGrid-DoorKey-5x5-v0"]["within"] is False


def test_a_variant_may_train_with_more_torch_threads(capsys) -> None:
    """The table's cells train with one torch thread; a tagged variant may give rl-zoo3's --num-threads another count
    (rl-zoo3's PPO on DoorKey seed 0 depends on it), and an untagged one is refused before any training."""
    cell = table.Cell("MiniGrid-DoorKey-5x5-v0", "ppo", 0, 100_000)
    cmd = table.command(cell, Path("/runs"))
    assert cmd.count("--num-threads") == 1 and cmd[cmd.index("--num-threads") + 1] == "1"
    two = table.command(table.Cell("MiniGrid-DoorKey-5x5-v0", "ppo", 0, 100_000, "threads2", threads=2), Path("/runs"))
    assert two[two.index("--num-threads") + 1] == "2"
    with pytest.raises(SystemExit, match="--tag"):
        table.main(["--methods", "ppo", "--envs", "MiniGrid-DoorKey-5x5-v0", "--threads", "2"])
    with pytest.raises(SystemExit):  # argparse's own refusal, before the checks of main
        table.main(["--methods", "ppo", "--envs", "MiniGrid-DoorKey-5x5-v0", "--threads", "0", "--tag", "t"])
    assert "--threads: '0': give a whole number of at least 1" in capsys.readouterr().err
