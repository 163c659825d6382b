"""The Ray backend of the search workers: the same training run as the process backend and as one process, actors
that keep their simulators, a killed actor replaced without changing the result, and RAY_ADDRESS.

The tests share one local two-node Ray cluster (one CPU per node, on the loopback interface), named by RAY_ADDRESS.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest
import torch as th
from stable_baselines3.common.callbacks import BaseCallback

from sb3_dirpg import DirPG
from sb3_dirpg.simulator.introspect import gymnasium_time_limit
from tests.helpers import SparseChainEnv, small_dirpg
from tests.test_parallel import InterruptOnce, SeedRecordingDirPG, assert_batches_consistent

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

from sb3_dirpg.dirpg.workers import SearchWorkers, ray_actors  # noqa: E402
from sb3_dirpg.dirpg.workers.ray_actors import RaySearchPool, loopback  # noqa: E402

pytestmark = pytest.mark.integration

SMALL = dict(object_store_memory=80 * 2**20)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """A head and a worker node, one CPU each, named by RAY_ADDRESS; torn down with everything Ray started."""
    before = os.environ.get("RAY_ADDRESS")
    with loopback():
        cluster = Cluster(initialize_head=True, head_node_args=dict(num_cpus=1, **SMALL))
        cluster.add_node(num_cpus=1, **SMALL)
        os.environ["RAY_ADDRESS"] = cluster.address
        try:
            yield cluster
        finally:
            ray.shutdown()
            cluster.shutdown()
            if before is None:
                os.environ.pop("RAY_ADDRESS", None)
            else:
                os.environ["RAY_ADDRESS"] = before


def params(model: DirPG) -> th.Tensor:
    return th.nn.utils.parameters_to_vector(model.policy.parameters()).detach()


def cartpole(**kwargs) -> DirPG:
    # a large learning rate: a worker searching with stale weights would find other trajectories
    settings = dict(search_budget=50, batch_episodes=5, seed=3, learning_rate=0.05, policy_kwargs=dict(net_arch=[16]))
    settings.update(kwargs)
    return DirPG("MlpPolicy", "CartPole-v1", **settings)


def run(model: DirPG, n: int = 1_000) -> tuple[th.Tensor, int, list[float]]:
    model.learn(n)
    return params(model), model.num_timesteps, [ep["r"] for ep in model.ep_info_buffer]


def assert_same_run(model: DirPG, reference: tuple[th.Tensor, int, list[float]]) -> None:
    p, n, returns = run(model)
    assert (n, returns) == reference[1:]
    assert th.allclose(p, reference[0], atol=1e-6)


def test_one_actor_gives_the_same_run_as_one_process_and_as_a_worker_process(cluster: Cluster, tmp_path: Path) -> None:
    reference = run(cartpole())
    process = cartpole(n_workers=1)
    assert_same_run(process, reference)
    process.close_workers()
    model = cartpole(n_workers={"ray": 1})
    assert_same_run(model, reference)
    pool = model.worker_pool
    assert isinstance(pool, RaySearchPool) and pool.n_workers == 1 and pool.replaced == 0
    # the actor searched every batch with the simulators it built at the start, and goes on with them
    (info,) = ray.get([actor.info.remote() for actor in pool.actors])
    assert info["batches"] == pool.batch_id > 1
    model.learn(100, reset_num_timesteps=False)
    assert model.worker_pool is pool and ray.get(pool.actors[0].info.remote())["pid"] == info["pid"]
    # saved with the backend, never with the actors
    model.save(tmp_path / "model")
    loaded = DirPG.load(tmp_path / "model")
    assert (loaded.n_workers, loaded.worker_pool) == (SearchWorkers(1, "ray"), None)
    model.close_workers()
    assert model.worker_pool is None


class KillActorMidBatch(BaseCallback):
    """Kills the first actor at the first callback call of its ``at``-th batch, while the actor searches its share."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at
        self.killed_in: int | None = None

    def _on_step(self) -> bool:
        pool = self.model.worker_pool
        if self.killed_in is None and pool.batch_id == self.at:
            ray.kill(pool.actors[0])
            self.killed_in = pool.batch_id
        return True


def test_a_killed_actor_is_replaced_and_its_share_searched_again(cluster: Cluster) -> None:
    # a budget large enough that the actor is still searching when it is killed
    expected = run(cartpole(search_budget=300, batch_episodes=4), 2_500)  # one process: the same as any backend
    model = cartpole(n_workers={"ray": 1}, search_budget=300, batch_episodes=4)
    kill = KillActorMidBatch(at=2)
    model.learn(2_500, callback=kill)
    pool = model.worker_pool
    assert kill.killed_in == 2 and pool.replaced == 1
    assert pool.resubmitted == [(2, 0)], "the share was not searched again in the batch it was killed in"
    p, n, returns = params(model), model.num_timesteps, [ep["r"] for ep in model.ep_info_buffer]
    assert (n, returns) == expected[1:]
    assert th.allclose(p, expected[0], atol=1e-6)
    model.close_workers()


class InterruptKeepingActors(InterruptOnce):
    """:class:`InterruptOnce` that keeps the handles of the actors searching when it interrupts."""

    def _on_step(self) -> bool:
        self.actors = list(self.model.worker_pool.actors)
        return super()._on_step()


def test_interrupt_mid_batch_then_learn_again_with_new_actors(cluster: Cluster) -> None:
    model = SeedRecordingDirPG("MlpPolicy", "CartPole-v1", search_budget=30, batch_episodes=4, seed=1, n_workers={"ray": 1})
    interrupt = InterruptKeepingActors(at=30)
    with pytest.raises(KeyboardInterrupt):
        model.learn(5_000, callback=interrupt)
    assert model.worker_pool is None
    with pytest.raises(ray.exceptions.RayActorError):  # the actor of the interrupted batch was killed
        ray.get(interrupt.actors[0].info.remote(), timeout=30)
    interrupted = len(model.submitted) - 1
    model.learn(500, reset_num_timesteps=False)
    later = model.submitted[interrupted + 1 :]
    assert len(later) >= 2
    assert_batches_consistent(model, model.submitted[:interrupted] + later)
    model.close_workers()


def test_two_actors_on_the_cluster_named_by_ray_address_give_the_same_run(cluster: Cluster) -> None:
    reference = run(cartpole())
    ray.shutdown()  # this process leaves the cluster; the cluster keeps running
    model = cartpole(n_workers={"ray": 2})
    assert_same_run(model, reference)
    pool = model.worker_pool
    assert pool.connection == "address" and pool.replaced == 0
    assert ray.get_runtime_context().gcs_address == cluster.address
    assert len([node for node in ray.nodes() if node["Alive"]]) == 2  # the cluster's nodes, no local instance
    nodes = {ray.get(actor.info.remote())["node"] for actor in pool.actors}
    assert len(nodes) == 2, "the actors were not spread over the nodes"
    model.close_workers()


def test_a_time_limit_built_before_rl_zoo3_replaced_it_reaches_the_actors(cluster: Cluster) -> None:
    """As for worker processes: an env built with gymnasium's own TimeLimit, after rl_zoo3 replaced the name by a
    subclass, arrives intact in a Ray actor (with Ray's own cloudpickle, the class went by value and reset failed)."""
    import rl_zoo3.gym_patches  # noqa: F401

    original = gymnasium_time_limit()
    assert gym.wrappers.TimeLimit is not original  # the replacement is in effect
    model = small_dirpg(original(SparseChainEnv(6), 6), n_workers={"ray": 1}, batch_episodes=4)
    try:
        model.learn(600)
    finally:
        model.close_workers()
    assert model.num_timesteps >= 600


def test_connect_keeps_a_connection_else_follows_ray_address_else_starts_locally(monkeypatch) -> None:
    calls: list[dict] = []
    monkeypatch.setattr(ray, "init", lambda **kwargs: calls.append(kwargs))
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    assert ray_actors.connect(num_cpus=3) == "address"
    monkeypatch.delenv("RAY_ADDRESS")
    assert ray_actors.connect(num_cpus=3) == "local"
    # num_cpus only for a local instance (Ray refuses it when joining a cluster)
    assert calls == [dict(address="10.0.0.1:6379"), dict(address="local", num_cpus=3)]
    monkeypatch.setattr(ray, "is_initialized", lambda: True)
    assert ray_actors.connect(num_cpus=3) == "connected" and len(calls) == 2


def test_unknown_backend_is_refused_naming_the_argument() -> None:
    with pytest.raises(ValueError, match="n_workers=.*'process', 'ray'.*'dask'"):
        DirPG("MlpPolicy", "CartPole-v1", n_workers={"dask": 1})


def test_ray_backend_without_ray_names_the_extra(monkeypatch) -> None:
    # sys.modules[name] = None makes `import name` fail as if the package were not installed
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=re.escape("pip install sb3-dirpg[ray]")):
        DirPG("MlpPolicy", "CartPole-v1", n_workers={"ray": 1})


def test_ray_extra_declares_ray() -> None:
    tomllib = pytest.importorskip("tomllib")
    extras = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert any(req.startswith("ray") for req in extras["ray"]) and any(req.startswith("ray") for req in extras["tests"])


def test_scaling_benchmark_runs_on_the_cluster_named_by_ray_address(cluster: Cluster, tmp_path: Path) -> None:
    from benchmarks import ray_scaling

    out = tmp_path / "ray_scaling.json"
    args = ["--env", "cartpole", "--scale", "0.01", "--rounds", "1", "--workers", "0", "1", "--backends", "ray",
            "--batch", "4", "--json", str(out)]  # fmt: skip
    results = ray_scaling.main(args)
    assert json.loads(out.read_text())["rates"] == results["rates"]
    assert set(results["rates"]) == {"n_workers=0 (one process)", "ray, n_workers=1"}
    assert results["ray_nodes"] == 2 and cluster.address in results["cluster"]
    assert all(rate > 0 for rate in results["rates"].values())
