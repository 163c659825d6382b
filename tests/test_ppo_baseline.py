"""The PPO baseline learns from what it sees: rl-zoo3's MiniGrid entry, as the table runs it, stores in its rollout
buffer exactly the observations ``VecNormalize`` returned (issue 43: without a float32 cast after ``FlatObsWrapper``,
SB3 >= 2.7.1 stores them in the uint8 space of minigrid >= 2.5)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from rl_zoo3.utils import get_wrapper_class
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecEnvWrapper, VecNormalize

from experiments import minigrid_table as table
from sb3_dirpg.integrations.ppo import check_normalized_storage

ENV = "MiniGrid-DoorKey-5x5-v0"
N_STEPS = 16


class RecordObservations(VecEnvWrapper):
    """Keep every observation the wrapped VecEnv returns (what PPO acts on)."""

    def __init__(self, venv: VecEnv) -> None:
        super().__init__(venv)
        self.seen: list[np.ndarray] = []

    def reset(self) -> Any:
        obs = self.venv.reset()
        self.seen.append(np.array(obs, copy=True))
        return obs

    def step_wait(self) -> Any:
        obs, rewards, dones, infos = self.venv.step_wait()
        self.seen.append(np.array(obs, copy=True))
        return obs, rewards, dones, infos


def _ppo_buffer_and_seen(env_wrapper: Any) -> tuple[np.ndarray, np.ndarray]:
    """:param env_wrapper: an rl-zoo3 ``env_wrapper`` entry
    :return: the rollout buffer's observations after one rollout (2 envs x ``N_STEPS``), and the normalized
        observations PPO acted on, in the buffer's order (env by env)"""
    import minigrid  # noqa: F401  (registers the ids)

    venv = make_vec_env(ENV, n_envs=2, seed=0, wrapper_class=get_wrapper_class({"env_wrapper": env_wrapper}),
                        vec_env_cls=DummyVecEnv)  # fmt: skip
    recorder = RecordObservations(VecNormalize(venv, gamma=0.99))
    model = PPO("MlpPolicy", recorder, n_steps=N_STEPS, batch_size=N_STEPS, n_epochs=1, seed=0, device="cpu")
    model.learn(N_STEPS * 2)  # one rollout
    seen = np.stack(recorder.seen[:N_STEPS])  # (steps, envs, features)
    return model.rollout_buffer.observations, seen.swapaxes(0, 1).reshape(-1, seen.shape[-1])


def test_rl_zoo3_entry_as_shipped_corrupts_the_buffer_and_the_table_repairs_it() -> None:
    shipped = table.entry(ENV, "ppo")["env_wrapper"]
    stored, seen = _ppo_buffer_and_seen(shipped)
    assert stored.dtype == np.uint8 and not np.array_equal(stored.astype(np.float32), seen)  # the defect, as shipped
    stored, seen = _ppo_buffer_and_seen(table.overrides(ENV, "ppo")["env_wrapper"])
    assert stored.dtype == np.float32 and np.array_equal(stored, seen)
    assert np.abs(seen).max() > 1.0 and (seen < 0).any()  # really normalized floats, which uint8 cannot hold


def test_every_ppo_method_of_the_table_casts_after_flat_obs() -> None:
    for env_id in table.ENVS:
        for method in ("ppo", "ppo_shaped"):
            wrappers = table.overrides(env_id, method)["env_wrapper"]
            index = wrappers.index(table.FLAT_OBS)
            assert wrappers[index + 1] == table.FLOAT32_CAST and wrappers.count(table.FLOAT32_CAST) == 1
        same = table.overrides(env_id, "ppo_same")
        assert same["env_wrapper"] == table.entry(env_id, "dirpg")["env_wrapper"]
        assert "norm_obs=False" in same["normalize"] and "MiniGridCNN" in same["policy_kwargs"]


def test_check_normalized_storage_names_the_fix() -> None:
    import minigrid  # noqa: F401

    broken = VecNormalize(make_vec_env(ENV, n_envs=1, wrapper_class=get_wrapper_class({"env_wrapper": table.FLAT_OBS})))
    with pytest.raises(ValueError, match="DtypeObservation"):
        check_normalized_storage(RecordObservations(broken))
    fixed = get_wrapper_class({"env_wrapper": table.repaired(table.FLAT_OBS)})
    check_normalized_storage(VecNormalize(make_vec_env(ENV, n_envs=1, wrapper_class=fixed)))
    check_normalized_storage(VecNormalize(make_vec_env(ENV, n_envs=1, wrapper_class=get_wrapper_class(
        {"env_wrapper": table.FLAT_OBS})), norm_obs=False))  # fmt: skip
