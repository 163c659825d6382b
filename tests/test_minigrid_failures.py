"""The failure analysis of trained MiniGrid policies: episodes are played and grouped as documented."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from experiments.minigrid_failures import by_distance, format_rows, load_model, play_episode, uncertain_shares

LEFT, RIGHT, FORWARD = 0, 1, 2


class ScriptedModel:
    """Plays a fixed list of actions, then ``FORWARD`` forever (a stand-in for a model's ``predict``)."""

    def __init__(self, actions: list[int]) -> None:
        self.actions = list(actions)

    def predict(self, obs: Any, deterministic: bool = False) -> tuple[np.ndarray, None]:
        """:param obs: ignored
        :param deterministic: ignored
        :return: the next action"""
        return np.array([self.actions.pop(0) if self.actions else FORWARD]), None


@pytest.fixture
def empty_env() -> gym.Env:
    import minigrid  # noqa: F401

    return gym.make("MiniGrid-Empty-5x5-v0")  # agent at (1, 1) facing east, goal at (3, 3)


def test_a_shortest_way_to_the_goal_succeeds_with_its_cells_counted(empty_env: gym.Env) -> None:
    episode = play_episode(ScriptedModel([FORWARD, FORWARD, RIGHT, FORWARD, FORWARD]), empty_env, 0, True)
    # the goal is 4 cells away; its reward comes on the step entering it, 3 steps after the first
    assert episode == {"success": True, "steps": 5, "cells": 5, "steps_to_success": 3, "uncertain": None}


def test_a_policy_stuck_at_a_wall_fails_after_the_step_limit(empty_env: gym.Env) -> None:
    episode = play_episode(ScriptedModel([]), empty_env, 0, True)
    assert episode == {"success": False, "steps": empty_env.unwrapped.max_steps, "cells": 3, "steps_to_success": 3,
                       "uncertain": None}  # fmt: skip


def test_episodes_are_grouped_by_steps_to_success() -> None:
    episodes = [
        {"success": True, "steps": 5, "cells": 4, "steps_to_success": 2},
        {"success": False, "steps": 100, "cells": 30, "steps_to_success": 9},
        {"success": True, "steps": 20, "cells": 12, "steps_to_success": 10},  # on an edge: the upper group
        {"success": False, "steps": 100, "cells": 50, "steps_to_success": 40},
        {"success": False, "steps": 100, "cells": 10, "steps_to_success": 41},
        {"success": True, "steps": 100, "cells": 10, "steps_to_success": None},  # rule unknown: left out
    ]
    rows = by_distance(episodes, (0, 10, 20, 30))
    assert [(r["low"], r["high"], r["episodes"]) for r in rows] == [(0, 10, 2), (10, 20, 1), (30, None, 2)]
    assert [r["success"] for r in rows] == [0.5, 1.0, 0.0]
    assert [r["cells"] for r in rows] == [17.0, 12.0, 30.0]
    assert [r["cells_failed"] for r in rows] == [30.0, None, 30.0]
    table = format_rows(rows).splitlines()
    assert table[2] == "| 0–9 | 2 | 0.50 | 17 | 30 |" and table[-1] == "| 30+ | 2 | 0.00 | 30 | 30 |"


def test_an_untrained_policy_is_uncertain_and_the_shares_split_by_outcome(empty_env: gym.Env) -> None:
    """An untrained DirPG policy is near uniform over MiniGrid's actions (about 1.9 nats): every step is uncertain; the
    shares are averaged over the succeeded and the failed episodes apart."""
    from sb3_dirpg import DirPG, MiniGridCNN
    from sb3_dirpg.envs import DirectionImageObs

    env = DirectionImageObs(empty_env)
    policy_kwargs = dict(features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False)
    model = DirPG("MultiInputPolicy", env, search_budget=10, seed=0, device="cpu", policy_kwargs=policy_kwargs)
    episode = play_episode(model, env, 0, deterministic=False)
    assert episode["uncertain"] == 1.0
    shares = uncertain_shares([{"success": True, "uncertain": 0.1}, {"success": True, "uncertain": 0.3},
                               {"success": False, "uncertain": 0.5}, {"success": False, "uncertain": None}])  # fmt: skip
    assert shares == {"succeeded": pytest.approx(0.2), "failed": 0.5}
    assert uncertain_shares([{"success": True, "uncertain": None}]) == {"succeeded": None, "failed": None}


def test_edges_must_increase() -> None:
    with pytest.raises(ValueError, match="edges must be increasing"):
        by_distance([], (10, 0))


def test_a_wrong_method_or_a_missing_model_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="--method must be one of"):
        load_model(tmp_path / "model.zip", "a2c")
    with pytest.raises(FileNotFoundError, match="no saved model at"):
        load_model(tmp_path / "model.zip", "dirpg")


def test_a_variant_is_played_on_its_own_env(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A model trained on a variant's env (here one view, where the entry stacks 4) is played on that env when --params
    names it."""
    from experiments.held_out import build_env
    from experiments.minigrid_failures import main
    from experiments.minigrid_table import entry
    from sb3_dirpg import DirPG, MiniGridCNN

    env_id = "MiniGrid-FourRooms-v0"
    wrappers = [w for w in entry(env_id, "dirpg")["env_wrapper"] if "gymnasium.wrappers.FrameStackObservation" not in w]
    assert len(wrappers) == len(entry(env_id, "dirpg")["env_wrapper"]) - 1
    policy_kwargs = dict(features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False)
    env = build_env(env_id, {"max_steps": 100}, wrappers)
    DirPG("MultiInputPolicy", env, search_budget=10, seed=0, device="cpu", policy_kwargs=policy_kwargs).save(tmp_path / "m")
    with pytest.raises(ValueError, match="a variant's model needs the variant's --params"):
        main([str(tmp_path / "m.zip"), "--env", env_id, "--seeds", "10000", "2"])
    main([str(tmp_path / "m.zip"), "--env", env_id, "--seeds", "10000", "2", "--params", f"env_wrapper:{wrappers!r}"])
    assert f"{env_id}, {tmp_path / 'm.zip'}: success" in capsys.readouterr().out
    main(
        [str(tmp_path / "m.zip"), "--env", env_id, "--seeds", "10000", "2", "--params", f"env_wrapper:{wrappers!r}", "--loops"]
    )
    assert json.loads(capsys.readouterr().out)["episodes"] == 2


def test_a_greedy_loop_is_described_by_what_the_agent_faces(capsys: pytest.CaptureFixture) -> None:
    """``facing`` names the door's state and what the agent carries; a policy that toggles in front of a wall cycles
    with period 1 there, and the greedy failures' description says so."""
    from minigrid.core.world_object import Door, Key

    from experiments.greedy_gap import describe_greedy_failures, facing

    env = gym.make("MiniGrid-Empty-5x5-v0")
    env.reset(seed=0)
    base = env.unwrapped
    assert facing(base) == "empty, empty-handed"
    door = Door("yellow", is_locked=True)
    base.grid.set(*base.front_pos, door)
    assert facing(base) == "locked door, empty-handed"
    door.is_locked = False
    assert facing(base) == "closed door, empty-handed"
    door.is_open = True
    base.carrying = Key("yellow")
    assert facing(base) == "open door, carrying a key"

    class Toggler:
        """Turns left once, to face the wall, then toggles for ever (the state repeats at once)."""

        def __init__(self) -> None:
            self.steps = 0

        def predict(self, obs: Any, deterministic: bool = True) -> tuple[np.ndarray, None]:
            self.steps += 1
            return np.array(LEFT if self.steps == 1 else 5), None

    failures = describe_greedy_failures(Toggler(), "MiniGrid-Empty-5x5-v0", {}, None, [10_000])  # type: ignore[arg-type]
    assert failures["failed"] == 1 and failures["looped"] == 1.0
    assert failures["loop_periods"] == {"1": 1} and failures["loops_facing"] == {"wall, empty-handed": 1}


class FirstLegal:
    """Takes the first legal action; fails the test if it is not given the env's masks."""

    def __init__(self) -> None:
        self.calls = 0

    def predict(
        self, obs: Any, deterministic: bool = False, action_masks: np.ndarray | None = None
    ) -> tuple[np.ndarray, None]:
        """:param obs: ignored
        :param deterministic: ignored
        :param action_masks: the legal actions
        :return: the first of them"""
        assert action_masks is not None, "the env has masks: the policy must be played among its legal actions"
        self.calls += 1
        return np.array([int(np.flatnonzero(action_masks)[0])]), None


def test_a_masked_env_is_played_with_its_masks() -> None:
    """Where the entry masks actions, the failure analysis plays the policy among the legal actions, as the table's
    evaluation does (without them a masked no-op would be taken and counted as the policy's)."""
    from experiments.greedy_gap import describe_greedy_failures
    from experiments.held_out import build_env

    wrappers = ["sb3_dirpg.envs.FastObservation", "sb3_dirpg.envs.MiniGridNoOpMask", "sb3_dirpg.envs.DirectionImageObs"]
    model = FirstLegal()
    episode = play_episode(model, build_env("MiniGrid-Empty-5x5-v0", {"max_steps": 12}, wrappers), 0, False)
    assert model.calls == episode["steps"] == 12 and not episode["success"]
    seeds = [10_000, 10_001]
    failures = describe_greedy_failures(model, "MiniGrid-Empty-5x5-v0", {"max_steps": 12}, wrappers, seeds)  # type: ignore[arg-type]
    assert failures["failed"] == 2 and model.calls == 36


def test_ppo_same_is_played_on_a_frontier_env_and_ppo_there_is_refused(capsys: pytest.CaptureFixture) -> None:
    """rl-zoo3 has no PPO entry for KeyCorridorS6R3: ``ppo_same`` (the DirPG entry's information) is still defined there,
    as the frontier's MaskablePPO runs train it, while ``ppo`` stops with a message that names the env and the way out."""
    from experiments.minigrid_failures import main
    from experiments.minigrid_table import entry, evaluation_env

    env_id = "MiniGrid-KeyCorridorS6R3-v0"
    ours = entry(env_id, "dirpg")
    assert evaluation_env(env_id, "ppo_same") == (dict(ours.get("env_kwargs") or {}), ours["env_wrapper"])
    with pytest.raises(ValueError, match=f"no entry for {env_id}, so the ppo method cannot run on it; ppo_same"):
        evaluation_env(env_id, "ppo")
    with pytest.raises(SystemExit):
        main(["model.zip", "--env", env_id, "--method", "ppo_shaped"])
    assert f"no entry for {env_id}, so the ppo_shaped method" in capsys.readouterr().err
