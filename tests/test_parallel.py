"""Search worker processes: results do not depend on how a batch is split between processes."""

from __future__ import annotations

import os
import signal
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3.common.callbacks import BaseCallback

from sb3_dirpg import DirPG
from sb3_dirpg.dirpg.workers import SearchWorkerPool, WorkerError, split_batch
from sb3_dirpg.envs import make_minigrid_env
from sb3_dirpg.envs.minigrid import MiniGridCNN
from sb3_dirpg.simulator.introspect import gymnasium_time_limit
from tests.helpers import SparseChainEnv, chain, small_dirpg

pytestmark = pytest.mark.integration


def params(model: DirPG) -> th.Tensor:
    return th.nn.utils.parameters_to_vector(model.policy.parameters()).detach()


@pytest.mark.parametrize("n_workers", [1, 2])
def test_workers_give_the_same_training_run(n_workers: int) -> None:
    runs = []
    for workers in (0, n_workers):
        model = DirPG("MlpPolicy", "CartPole-v1", search_budget=50, batch_episodes=5, seed=3, n_workers=workers)
        model.learn(3_000)
        runs.append((params(model), model.num_timesteps, [ep["r"] for ep in model.ep_info_buffer]))
        model.close_workers()
    (p0, n0, r0), (p1, n1, r1) = runs
    assert n0 == n1 and r0 == r1
    assert th.allclose(p0, p1, atol=1e-6)


def test_workers_with_minigrid_and_memoised_policy() -> None:
    env = make_minigrid_env("MiniGrid-Empty-5x5-v0")
    kwargs = dict(features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False)
    model = DirPG("MultiInputPolicy", env, search_budget=40, batch_episodes=4, seed=0, n_workers=1, policy_kwargs=kwargs)
    model.learn(800)
    assert model.num_timesteps >= 800 and model.worker_pool is not None
    model.close_workers()
    assert model.worker_pool is None


def test_split_batch() -> None:
    assert [len(p) for p in split_batch(list(range(5)), 2)] in ([3, 2], [2, 3])
    assert sum(len(p) for p in split_batch(list(range(7)), 3)) == 7
    assert [len(p) for p in split_batch([1], 2)].count(1) == 1


def test_bad_n_workers() -> None:
    with pytest.raises(ValueError, match="n_workers"):
        DirPG("MlpPolicy", "CartPole-v1", n_workers=-1)


class SeedRecordingDirPG(DirPG):
    """Records the seeds drawn for every batch, the seeds of the batch each update sees, and the interactions counted
    while the batch was searched."""

    def _setup_model(self) -> None:
        super()._setup_model()
        self.submitted: list[list[int]] = []
        self.merged: list[list[int]] = []
        self.counted: list[tuple[int, int]] = []

    def episode_seeds(self) -> list[int]:
        seeds = super().episode_seeds()
        self.submitted.append(seeds)
        self._batch_start = self.num_timesteps
        return seeds

    def train(self) -> None:
        batch = self.searched_batch
        self.merged.append([ep.seed for ep in batch.episodes])
        self.counted.append((self.num_timesteps - self._batch_start, sum(ep.interactions for ep in batch.episodes)))
        super().train()


def recording_model(**kwargs) -> SeedRecordingDirPG:
    return SeedRecordingDirPG("MlpPolicy", "CartPole-v1", search_budget=30, batch_episodes=4, seed=1, n_workers=1, **kwargs)


def assert_batches_consistent(model: SeedRecordingDirPG, trained_batches: list[list[int]]) -> None:
    assert model.merged == trained_batches
    assert all(counted == expected for counted, expected in model.counted), model.counted


def test_merged_seeds_are_the_submitted_ones() -> None:
    model = recording_model()
    model.learn(1_500)
    assert len(model.merged) >= 3
    assert_batches_consistent(model, model.submitted)
    model.close_workers()


class InterruptOnce(BaseCallback):
    """Raises KeyboardInterrupt at its n-th call, as a Ctrl-C in the learner would."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at
        self.calls = 0

    def _on_step(self) -> bool:
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt
        return True


def test_interrupt_mid_batch_then_learn_again_merges_no_stale_share() -> None:
    model = recording_model()
    with pytest.raises(KeyboardInterrupt):
        model.learn(5_000, callback=InterruptOnce(at=30))  # inside the first few batches, while the worker searches
    interrupted = len(model.submitted) - 1
    assert len(model.merged) == interrupted  # the interrupted batch was not trained on
    model.learn(1_500, reset_num_timesteps=False)
    later = model.submitted[interrupted + 1 :]
    assert len(later) >= 2
    assert_batches_consistent(model, model.submitted[:interrupted] + later)
    model.close_workers()


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGKILL])
def test_learn_resumes_after_the_worker_process_is_killed(signal_number: int) -> None:
    model = recording_model()
    model.learn(500)
    pool = model.worker_pool
    process = pool.processes[0]
    os.kill(process.pid, signal_number)
    process.join(timeout=30)
    assert not process.is_alive()
    start = model.num_timesteps
    model.learn(800, reset_num_timesteps=False)
    assert model.num_timesteps >= start + 800 - 500  # learn's total counts from the previous run's count
    assert model.worker_pool is not pool and model.worker_pool.alive
    assert_batches_consistent(model, model.submitted)
    model.close_workers()


def test_a_worker_dying_mid_batch_raises_and_the_next_learn_restarts_the_pool() -> None:
    class KillWorker(BaseCallback):
        def _on_step(self) -> bool:
            if self.n_calls == 3:
                os.kill(self.model.worker_pool.processes[0].pid, signal.SIGKILL)
            return True

    model = recording_model()
    with pytest.raises(WorkerError, match="died"):
        model.learn(2_000, callback=KillWorker())
    assert model.worker_pool is None
    model.learn(600, reset_num_timesteps=False)
    assert_batches_consistent(model, [s for s in model.submitted if s in model.merged])
    model.close_workers()


def test_gather_discards_the_shares_of_an_ungathered_batch() -> None:
    model = DirPG("MlpPolicy", "CartPole-v1", search_budget=10, batch_episodes=2, seed=0)
    env = model.env.unwrapped.envs[0].unwrapped
    pool = SearchWorkerPool(env, None, model.policy, model.batched_policy.transform, n_workers=1)
    config = model.search_config()
    rngs = np.random.default_rng(0).spawn(2)
    pool.submit(model.policy, [([11], rngs[:1])], config)  # never gathered, like a batch cut by an interrupt
    second = pool.submit(model.policy, [([22], rngs[1:])], config)
    (share,) = pool.gather(second, 1)
    assert [ep.seed for ep in share.episodes] == [22]
    assert pool.discarded == 1
    pool.close()


def test_a_worker_searches_with_the_weights_of_the_submit_not_later_ones() -> None:
    """The weights reach a worker as a copy taken at submit: a change to the learner's parameters after it (an update,
    or a check that perturbs them) does not reach the search of that batch, although the worker loads them later."""
    model = DirPG("MlpPolicy", "CartPole-v1", search_budget=200, batch_episodes=2, seed=0)
    env = model.env.unwrapped.envs[0].unwrapped
    pool = SearchWorkerPool(env, None, model.policy, model.batched_policy.transform, n_workers=1)
    config = model.search_config()
    pool.submit(model.policy, [(list(range(8)), np.random.default_rng(1).spawn(8))], config)  # keeps the worker busy
    batch = pool.submit(model.policy, [([22, 23], np.random.default_rng(2).spawn(2))], config)
    saved = [parameter.detach().clone() for parameter in model.policy.parameters()]
    with th.no_grad():
        for parameter in model.policy.parameters():
            parameter.mul_(-3.0)  # before the worker has read the second batch
    (share,) = pool.gather(batch, 1)
    pool.close()
    with th.no_grad():
        for parameter, value in zip(model.policy.parameters(), saved):
            parameter.copy_(value)
    expected = model.search([22, 23], rng=np.random.default_rng(2).spawn(2))
    with th.no_grad():
        for parameter in model.policy.parameters():
            parameter.mul_(-3.0)
    other = model.search([22, 23], rng=np.random.default_rng(2).spawn(2))
    assert other.episodes != expected.episodes  # the perturbation would show
    assert share.episodes == expected.episodes


class FailsInAWorker(gym.Wrapper):
    """Raises from ``step`` in any process but the one that built it."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.home = os.getpid()

    def step(self, action: int) -> tuple:
        if os.getpid() != self.home:
            raise ValueError("stepped in a worker")
        return self.env.step(action)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes need Python 3.11")
def test_an_error_in_a_worker_shows_the_worker_traceback() -> None:
    model = small_dirpg(FailsInAWorker(chain(4)), n_workers=1, batch_episodes=4)
    try:
        with pytest.raises(ValueError, match="stepped in a worker") as raised:
            model.learn(200)
    finally:
        model.close_workers()
    notes = "".join(getattr(raised.value, "__notes__", []))
    assert "raised in a search worker" in notes
    assert "test_parallel.py" in notes and "in step" in notes  # the frame that raised, in the worker


def test_a_time_limit_built_before_rl_zoo3_replaced_it_reaches_the_workers() -> None:
    """Importing rl_zoo3 replaces gymnasium's TimeLimit by a subclass. An env built with the original class must still
    be found to have a time limit, and must arrive intact in a worker process (by value, its reset failed there)."""
    import rl_zoo3.gym_patches  # noqa: F401

    original = gymnasium_time_limit()
    assert gym.wrappers.TimeLimit is not original  # the replacement is in effect
    model = small_dirpg(original(SparseChainEnv(6), 6), n_workers=1, batch_episodes=4)
    try:
        model.learn(600)
    finally:
        model.close_workers()
    assert model.num_timesteps >= 600
