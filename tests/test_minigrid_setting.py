"""The one MiniGrid setting (sb3_dirpg.envs.minigrid.setting): its rule, every registered MiniGrid id, the zoo bridge's
fallback to it, and the errors a user sees."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import minigrid  # noqa: F401  (registers the MiniGrid ids)
import pytest
import yaml
from gymnasium.wrappers import FrameStackObservation

import sb3_dirpg.envs  # noqa: F401  (registers the project's MiniGrid ids)
from sb3_dirpg import DirPG
from sb3_dirpg.envs import DirectionImageObs, FastObservation, MiniGridCNN, MiniGridProgressReward, MiniGridShapedReward
from sb3_dirpg.envs.minigrid.action_mask import MiniGridNoOpMask
from sb3_dirpg.envs.minigrid.setting import (
    ALGORITHM_SETTING,
    BUDGET_PER_STEP,
    MEMORY_VIEWS,
    RANDOM_STEPS_EPSILON,
    STEPS_PER_SIDE,
    _path,
    is_minigrid_id,
    minigrid_setting,
    steps_as_minigrid,
)
from sb3_dirpg.simulator.unwrap import wrapper_layers

MINIGRID_IDS = sorted(env_id for env_id in gym.registry if env_id.startswith("MiniGrid-"))


def _resets(env_id: str) -> Exception | None:
    """:return: what the plain env raises at its first reset on this install, or None"""
    try:
        gym.make(env_id).reset(seed=0)
    except Exception as error:  # noqa: BLE001 (any failure of the env itself)
        return error
    return None


@pytest.mark.parametrize("env_id", MINIGRID_IDS)
def test_every_registered_minigrid_id_gets_the_setting_and_a_short_search(env_id: str) -> None:
    """The setting builds its env and DirPG on every MiniGrid id gymnasium knows, and a short search trains without an
    error; an id whose plain env cannot even reset here (WFC's pattern images are missing from some minigrid wheels) is
    refused by the setting with a message naming the env and the cause instead."""
    failure = _resets(env_id)
    if failure is not None:
        with pytest.raises(ValueError, match=f"{env_id} cannot be reset on this install.*{type(failure).__name__}"):
            minigrid_setting(env_id)
        return
    setting = minigrid_setting(env_id)
    env = setting.make_env()
    kinds = [type(layer) for layer in wrapper_layers(env)]
    assert DirectionImageObs in kinds and MiniGridShapedReward in kinds and FastObservation in kinds
    assert (MiniGridProgressReward in kinds) == setting.facts.known_success
    # every registered family's success rule is known, but Playground's: it never succeeds
    assert setting.facts.known_success == (type(env.unwrapped).__name__ != "PlaygroundEnv")
    kwargs = {**setting.algorithm_kwargs(), "search_budget": 20, "stop": {"success": {"refine": 20}}, "lookahead": 1}
    model = DirPG(setting.policy, env, **kwargs, seed=0, device="cpu")
    model.learn(2 * setting.facts.horizon + 40)
    assert model.num_timesteps >= 2 * setting.facts.horizon + 40


def test_the_rule_reads_the_env() -> None:
    """Horizon and budget follow the grid's size, capped by the env's own limit; the mission is shown where it changes
    between resets; the masks go where MiniGrid's own step rules; the progress reward where the success is known."""
    doorkey = minigrid_setting("MiniGrid-DoorKey-8x8-v0")
    assert doorkey.algorithm["max_episode_steps"] == STEPS_PER_SIDE * 16 == 64
    assert doorkey.algorithm["search_budget"] == BUDGET_PER_STEP * 64
    assert doorkey.mission_gates == 0 and doorkey.notes == ()
    assert {key: doorkey.algorithm[key] for key in ALGORITHM_SETTING} == ALGORITHM_SETTING
    put_near = minigrid_setting("MiniGrid-PutNear-6x6-N2-v0")  # its own limit, 30, is below 4 * (6 + 6)
    assert put_near.algorithm["max_episode_steps"] == 30
    assert put_near.mission_gates == 2 and put_near.env_wrapper[-1].endswith("MissionObs")
    assert put_near.facts.masks and not put_near.facts.reads_done  # its step adds only its success and failure
    go_to_door = minigrid_setting("MiniGrid-GoToDoor-5x5-v0")  # it succeeds on ``done``: masks that keep it
    assert "keep_done" in go_to_door.env_wrapper[-3][_path(MiniGridNoOpMask)]["rules"]
    memory = minigrid_setting("MiniGrid-MemoryS7-v0")  # its pickup toggles instead: not MiniGrid's rules
    assert not memory.facts.minigrid_dynamics and any("no action masks" in note for note in memory.notes)
    # their missions need a memory: the policy sees the last MEMORY_VIEWS views, and a note says where that falls short
    red_blue = minigrid_setting("MiniGrid-RedBlueDoors-8x8-v0")
    for setting in (memory, red_blue):
        assert setting.facts.memory and setting.env_wrapper[-1] == {_path(FrameStackObservation): {"stack_size": MEMORY_VIEWS}}
        assert any(note.startswith(f"a memory of {MEMORY_VIEWS} views") for note in setting.notes)
        image = setting.make_env().observation_space["image"]
        assert image.shape == (MEMORY_VIEWS, 7, 7, 3)
    obstacles = minigrid_setting("MiniGrid-Dynamic-Obstacles-6x6-v0")  # three actions: no masks
    assert not obstacles.facts.masks and obstacles.facts.known_success
    # its obstacles move at random: the search sees one map's draws, so epsilon is 1 there, 5 elsewhere
    assert obstacles.facts.random_steps and obstacles.algorithm["epsilon"] == RANDOM_STEPS_EPSILON == 1.0
    assert any("epsilon 1.0, not 5.0" in note for note in obstacles.notes)
    assert not any(setting.facts.random_steps for setting in (doorkey, put_near, go_to_door, memory))
    assert not any(setting.facts.memory for setting in (doorkey, put_near, go_to_door, obstacles))
    assert not any("FrameStack" in str(setting.env_wrapper) for setting in (doorkey, put_near, go_to_door, obstacles))
    playground = minigrid_setting("MiniGrid-Playground-v0")
    assert not playground.facts.known_success and any("no progress reward" in note for note in playground.notes)
    assert "MiniGridBound" in next(iter(playground.heuristic))


def test_the_rule_refuses_what_is_not_minigrid() -> None:
    """An id that is not registered, or not a MiniGrid env, is named in the error."""
    with pytest.raises(ValueError, match="'MiniGrid-Nowhere-v0' is not a registered env id"):
        minigrid_setting("MiniGrid-Nowhere-v0")
    with pytest.raises(ValueError, match="CartPole-v1 is a CartPoleEnv, not a MiniGrid env"):
        minigrid_setting("CartPole-v1")


def test_the_zoo_entry_is_the_python_setting() -> None:
    """The rl-zoo3 entry, prepared as the bridge prepares it, gives DirPG the same arguments as the Python setting."""
    pytest.importorskip("rl_zoo3")
    from sb3_dirpg.integrations.zoo import algorithm_kwargs

    setting = minigrid_setting("MiniGrid-Fetch-5x5-N2-v0")
    from_zoo = algorithm_kwargs(yaml.safe_load(yaml.safe_dump(setting.zoo_entry())))
    in_python = setting.algorithm_kwargs()
    assert from_zoo.keys() == in_python.keys()
    for key, value in in_python.items():
        if key == "heuristic":
            assert type(from_zoo[key]) is type(value) and vars(from_zoo[key]) == vars(value)
        else:
            assert from_zoo[key] == value, key


class OwnGridEnv(minigrid.envs.EmptyEnv):
    """A user's own MiniGrid env, registered under an id of its own."""


OWN_ID = "DirpgTests/OwnGrid-v0"


def test_a_users_own_minigrid_env_is_told_from_its_registration() -> None:
    """A subclass of ``MiniGridEnv`` under any id takes the setting; other envs, unknown ids and BabyAI's levels do not."""
    if OWN_ID not in gym.registry:
        gym.register(OWN_ID, entry_point=OwnGridEnv, kwargs={"size": 6})
    assert is_minigrid_id(OWN_ID) and is_minigrid_id("MiniGrid-DoorKey-5x5-v0")
    assert not any(map(is_minigrid_id, ("CartPole-v1", "BabyAI-GoToRedBall-v0", "Nowhere/Grid-v0")))
    assert minigrid_setting(OWN_ID).algorithm["max_episode_steps"] == STEPS_PER_SIDE * (6 + 6)


@pytest.mark.integration
def test_the_bridge_trains_a_users_own_minigrid_env_with_the_setting(tmp_path: Path) -> None:
    """``python -m sb3_dirpg.integrations.zoo train --env OWN_ID``, for a ``MiniGridEnv`` of a user's own under an id
    that is not ``MiniGrid-*``, trains with the one setting instead of stopping with "Hyperparameters not found"."""
    pytest.importorskip("rl_zoo3")
    from sb3_dirpg.integrations.zoo import main

    if OWN_ID not in gym.registry:
        gym.register(OWN_ID, entry_point=OwnGridEnv, kwargs={"size": 6})
    main(["train", "--env", OWN_ID, "-n", "300", "--seed", "0", "-f", str(tmp_path), "--device", "cpu",
          "--eval-freq", "-1", "-params", "search_budget:30", "stop:dict(success=dict(refine=30))"])  # fmt: skip
    (config,) = tmp_path.glob("dirpg/*/*/config.yml")
    saved: dict[str, Any] = dict(yaml.load(config.read_text(), Loader=yaml.UnsafeLoader))
    assert saved["search_budget"] == 30 and saved["max_episode_steps"] == STEPS_PER_SIDE * (6 + 6)
    assert saved["policy"] == "MultiInputPolicy"


@pytest.mark.integration
def test_the_bridge_trains_a_minigrid_id_without_an_entry_with_the_setting(tmp_path: Path) -> None:
    """``python -m sb3_dirpg.integrations.zoo train --env MiniGrid-DoorKey-6x6-v0`` (no entry in dirpg.yml) trains with
    the one setting, where rl-zoo3 alone stops with "Hyperparameters not found"; ``-params`` still overrides it."""
    pytest.importorskip("rl_zoo3")
    from sb3_dirpg.integrations.zoo import default_conf_file, main

    env_id = "MiniGrid-DoorKey-6x6-v0"
    with open(default_conf_file("dirpg")) as file:
        assert env_id not in yaml.load(file, Loader=yaml.UnsafeLoader)
    main(["train", "--env", env_id, "-n", "300", "--seed", "0", "-f", str(tmp_path), "--device", "cpu",
          "--eval-freq", "-1", "-params", "search_budget:30", "stop:dict(success=dict(refine=30))"])  # fmt: skip
    (config,) = tmp_path.glob(f"dirpg/{env_id}_*/{env_id}/config.yml")
    saved: dict[str, Any] = dict(yaml.load(config.read_text(), Loader=yaml.UnsafeLoader))
    assert saved["search_budget"] == 30 and saved["max_episode_steps"] == 4 * (6 + 6)
    assert saved["stop"] == {"success": {"refine": 30}} and ALGORITHM_SETTING["stop"] == "success"
    assert (tmp_path / "dirpg" / f"{env_id}_1" / f"{env_id}.zip").exists()


def test_a_wrapper_that_fails_in_reset_is_reported_as_itself() -> None:
    """A wrapper raising in ``reset`` (the progress reward on an env whose success it does not know) reaches the user
    with its own message, not as the env's observation not fitting its space (the diagnosis checks the unwrapped env
    against the unwrapped env's own spaces)."""
    env = MiniGridShapedReward(FastObservation(gym.make("MiniGrid-Playground-v0")))
    env = DirectionImageObs(MiniGridProgressReward(env))
    with pytest.raises(ValueError, match="does not know where PlaygroundEnv's success happens") as raised:
        model = DirPG("MultiInputPolicy", env, search_budget=10, policy_kwargs=dict(features_extractor_class=MiniGridCNN),
                      device="cpu")  # fmt: skip
        model.learn(50)
    assert "does not fit" not in str(raised.value)


def test_an_entry_without_a_policy_is_completed_by_the_setting() -> None:
    """An entry that gives only ``n_timesteps`` (or the few keys an env changes) is laid over the setting; a whole
    entry is left as it is; the MiniGrid table reads DirPG's entries the same way."""
    from experiments.minigrid_table import entry
    from sb3_dirpg.envs.minigrid.setting import completed_entry

    setting = minigrid_setting("MiniGrid-DoorKey-8x8-v0").zoo_entry()
    short = completed_entry("MiniGrid-DoorKey-8x8-v0", {"n_timesteps": 5e5, "lookahead": 4})
    assert short == {**setting, "n_timesteps": 5e5, "lookahead": 4}
    whole = {"policy": "MlpPolicy", "n_timesteps": 1e4}
    assert completed_entry("MiniGrid-DoorKey-8x8-v0", whole) == whole
    assert entry("MiniGrid-DoorKey-8x8-v0", "dirpg") == setting


def test_a_raw_minigrid_env_is_refused_with_the_setting_named() -> None:
    """MiniGrid's own observation carries the mission text, which no SB3 policy holds: the error names the mission and
    the one setting's env, which encodes it."""
    with pytest.raises(ValueError, match=r"observation_space\['mission'\].*minigrid_setting\(env_id\)\.make_env\(\)"):
        DirPG("MultiInputPolicy", gym.make("MiniGrid-Fetch-5x5-N2-v0"), device="cpu")


def test_the_dynamics_check_tells_a_step_that_changes_the_world_otherwise() -> None:
    """An env whose step moves the world otherwise than MiniGrid's (here: every forward move also turns the agent) is
    caught by random play, and the masks are left out for it."""
    from minigrid.envs import UnlockEnv

    class TurningUnlock(UnlockEnv):
        def step(self, action: int) -> Any:
            result = super().step(action)
            if action == self.actions.forward:
                self.agent_dir = (self.agent_dir + 1) % 4
            return result

    assert steps_as_minigrid(UnlockEnv()) == (True, False)
    assert steps_as_minigrid(TurningUnlock())[0] is False
