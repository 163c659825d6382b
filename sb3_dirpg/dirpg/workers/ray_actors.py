"""Search workers as Ray actors: the same interface as :class:`~sb3_dirpg.dirpg.workers.processes.SearchWorkerPool`,
on one machine or a cluster.

Each actor builds its simulators and a copy of the policy once and keeps them between batches. The weights go out
once per batch through the object store (one ``ray.put``, the same reference to every actor); only the update steps
and the episode outcomes come back. An actor that dies while it searches (a crash, ``ray.kill``, a lost node) is
replaced and its share is searched again with the same seeds and the same generators as first sent, so the batch's
result does not change.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

try:
    import ray
    from ray.exceptions import ObjectLostError, RayActorError
except ImportError as _error:
    raise ImportError(f"parallel_backend='ray' needs Ray ({_error}): pip install sb3-dirpg[ray]") from None

from sb3_dirpg.common.batched_policy import BatchedPolicy, ObservationTransform
from sb3_dirpg.common.policies import DirPGPolicy
from sb3_dirpg.common.simulator_backends import make_vec_simulator
from sb3_dirpg.dirpg.update import SearchShare
from sb3_dirpg.dirpg.workers.processes import EnvPickle, WorkerError, picklable_error
from sb3_dirpg.search import SearchConfig, TopDownSearch
from sb3_dirpg.search.protocols import Heuristic
from sb3_dirpg.simulator import SimulatorWrapper

# what every actor is built from: the env chain, the policy's (class, constructor parameters), the heuristic, the transform
# and the simulator backend
ActorSetup = tuple[gym.Env, tuple[type[DirPGPolicy], dict[str, Any]], Heuristic | None, ObservationTransform, str]
# what ray.get raises when a share is lost with its actor or its node: the share is searched again
LOST = (RayActorError, ObjectLostError)


def connect(num_cpus: int | None = None) -> str:
    """Connect this process to Ray: keep a connection made before (by the user, with any ``ray.init`` options), else
    join the cluster named by ``RAY_ADDRESS`` (Ray's convention; ``auto`` finds one started with ``ray start`` on this
    machine), else start a local instance, which stops when this process exits.

    :param num_cpus: CPUs of a local instance (None: Ray's default, the machine's); unused when joining a cluster
    :return: ``"connected"``, ``"address"`` or ``"local"``: which of the three happened
    """
    if ray.is_initialized():
        return "connected"
    address = os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address)
        return "address"
    # "local": without it, ray.init would join a cluster started with `ray start` on this machine
    ray.init(address="local", num_cpus=num_cpus)
    return "local"


@contextmanager
def loopback() -> Iterator[None]:
    """Within the block, Ray in this process, and the nodes and workers it starts, use 127.0.0.1 rather than the
    machine's network address: for a cluster whose nodes all run on this machine (the tests, the scaling benchmark),
    whose traffic then never leaves the loopback interface. Ray's switch for this (the one it uses on Windows and macOS)
    also stops ``ray start --address`` from adding a node; ``ray.cluster_utils.Cluster`` adds nodes all the same.
    """
    from ray._private import ray_constants  # private: what this switch is called may change with Ray's version

    name = getattr(ray_constants, "ENABLE_RAY_CLUSTERS_ENV_VAR", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")
    before_env, before = os.environ.get(name), getattr(ray_constants, "ENABLE_RAY_CLUSTER", True)
    os.environ[name], ray_constants.ENABLE_RAY_CLUSTER = "0", False  # read by the processes Ray starts, and by this one
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = before
        if before_env is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before_env


class SearchActor:
    """One search worker (made a Ray actor by :class:`RaySearchPool`): its simulators and its copy of the policy live
    as long as the actor.

    :param setup: the env chain, the policy's (class, constructor parameters), the heuristic, the observation
        transform and the simulator backend, wrapped as the process workers' are (gymnasium's ``TimeLimit`` by
        reference, see ``EnvPickle``)
    """

    def __init__(self, setup: EnvPickle) -> None:
        import torch as th

        th.set_num_threads(1)
        built: ActorSetup = setup.var
        env, (policy_class, params), heuristic, transform, simulator_backend = built
        self.simulator = make_vec_simulator([SimulatorWrapper(env)], heuristic, simulator_backend)
        self.policy: DirPGPolicy = policy_class(**params)
        self.policy.set_training_mode(False)
        self.batched = BatchedPolicy(self.policy, env.observation_space, transform)
        self.batches = 0

    def ready(self) -> int:
        """:return: the actor's process id, once it is built"""
        return os.getpid()

    def info(self) -> dict[str, Any]:
        """:return: the process id, the Ray node, the batches searched and the simulators held"""
        node = ray.get_runtime_context().get_node_id()
        return {"pid": os.getpid(), "node": node, "batches": self.batches, "simulators": len(self.simulator.simulators)}

    def search(
        self, state_dict: dict[str, Any], seeds: list[int], rngs: list[np.random.Generator], config: SearchConfig
    ) -> SearchShare | Exception:
        """Search one share with the given weights.

        :param state_dict: the learner's weights (Ray resolves the reference passed for it)
        :param seeds: episode seeds
        :param rngs: one generator per episode
        :param config: the search settings
        :return: the share, or the exception the search raised (the learner raises it)
        """
        self.batches += 1
        try:
            self.policy.load_state_dict(state_dict)
            self.simulator.ensure_simulators(len(seeds))
            search = TopDownSearch(self.simulator, self.batched.search_function(), config)
            share, _ = SearchShare.from_search(functools.partial(search.run, seeds, rngs))
        except Exception as error:  # e.g. a guard refusing the env's output: the learner raises it
            return picklable_error(error)
        return share


@dataclass
class _Share:
    """One share of the batch out: what was sent (to send it again) and the reference of its answer."""

    actor_index: int
    seeds: list[int]
    rngs: list[np.random.Generator]
    ref: Any
    tries: int = 1


class RaySearchPool:
    """Ray actors that search shares of a batch with a copy of the policy (see the module docstring).

    Every submitted batch gets a new id; only the latest one can be gathered (an older one that was never gathered,
    as after an interrupt, is dropped and counted in ``discarded``).

    :param env: the env chain to search (no Monitor); each actor gets a copy
    :param heuristic: the heuristic, or None
    :param policy: the learner's policy (its class and constructor parameters are sent once, weights every batch)
    :param transform: the VecEnv's observation transform
    :param n_workers: number of actors; each asks Ray for one CPU, and they are spread over the cluster's nodes
    :param max_tries: searches of one share per batch before a dying actor raises :class:`WorkerError`
    :param start_timeout: seconds to wait for the actors to start (e.g. for free CPUs) before raising :class:`WorkerError`
    :param simulator_backend: the learner's ``simulator_backend`` (see :mod:`sb3_dirpg.common.simulator_backends`)
    """

    def __init__(
        self,
        env: gym.Env,
        heuristic: Heuristic | None,
        policy: DirPGPolicy,
        transform: ObservationTransform,
        n_workers: int,
        max_tries: int = 3,
        start_timeout: float = 300.0,
        simulator_backend: str = "auto",
    ) -> None:
        self.connection = connect(num_cpus=max(n_workers, os.cpu_count() or 1))
        self.max_tries = max_tries
        self._actor_class = ray.remote(num_cpus=1, scheduling_strategy="SPREAD")(SearchActor)
        # pickled once, whatever the number of actors and replacements; by the process workers' pickler, not Ray's
        # cloudpickle, which would send a TimeLimit shadowed by rl-zoo3's patch by value (its reset then fails)
        setup: ActorSetup = (
            env, (type(policy), policy._get_constructor_parameters()), heuristic, transform, simulator_backend
        )  # fmt: skip
        self._setup = ray.put(EnvPickle(setup))
        self.actors = [self._actor_class.remote(self._setup) for _ in range(n_workers)]
        self.batch_id = 0
        self.discarded = 0
        self.replaced = 0
        self.resubmitted: list[tuple[int, int]] = []  # (batch id, actor index) of every share searched again
        self._pending: list[_Share] = []
        self._state_ref: Any = None
        self._config: SearchConfig | None = None
        self._closed = False
        self._wait_ready(start_timeout)

    def _wait_ready(self, timeout: float) -> None:
        """Wait until every actor is built, so that a failing constructor or a cluster without room says so now.

        :param timeout: seconds to wait before raising :class:`WorkerError`
        """
        refs = [actor.ready.remote() for actor in self.actors]
        start = time.monotonic()
        _, waiting = ray.wait(refs, num_returns=len(refs), timeout=timeout)
        if waiting:
            cpus = ray.cluster_resources().get("CPU", 0)
            self.close(wait=False)
            raise WorkerError(
                f"{len(waiting)} of {len(refs)} Ray search actors did not start within {time.monotonic() - start:.0f} s; "
                f"each needs 1 CPU and the cluster has {cpus:g} in all (`ray status` shows what is free): lower n_workers "
                "or add nodes"
            )
        try:
            ray.get(refs)
        except RayActorError as error:
            self.close(wait=False)
            raise WorkerError(f"a Ray search actor could not be built: {error}") from error

    @property
    def n_workers(self) -> int:
        """:return: the number of actors"""
        return len(self.actors)

    @property
    def alive(self) -> bool:
        """:return: whether the pool can search: not closed and still connected to Ray (actors that died are
        replaced when their share is gathered)"""
        return not self._closed and bool(self.actors) and ray.is_initialized()

    def submit(
        self, policy: DirPGPolicy, shares: Sequence[tuple[list[int], list[np.random.Generator]]], config: SearchConfig
    ) -> int:
        """Start searching one share per actor with the current weights.

        :param policy: the learner's policy
        :param shares: (seeds, per-episode generators) per actor
        :param config: the search settings
        :return: the id of this batch, for :meth:`gather`
        """
        if len(shares) > len(self.actors):
            raise ValueError(f"{len(shares)} shares for {len(self.actors)} Ray search actors")
        self.discarded += len(self._pending)
        self.batch_id += 1
        self._config = config
        self._state_ref = ray.put({key: value.detach().cpu() for key, value in policy.state_dict().items()})
        self._pending = [
            _Share(index, list(seeds), list(rngs), self.actors[index].search.remote(self._state_ref, seeds, rngs, config))
            for index, (seeds, rngs) in enumerate(shares)
        ]
        return self.batch_id

    def _resubmit(self, share: _Share, error: Exception) -> None:
        """Replace the actor of a lost share and search the share again, with the seeds and generators first sent.

        :param share: the lost share
        :param error: why it was lost
        """
        if share.tries >= self.max_tries:
            raise WorkerError(
                f"Ray search actor {share.actor_index} was lost {share.tries} times during batch {self.batch_id} "
                f"(episodes {share.seeds}); last error: {error}"
            ) from error
        # an unreachable actor may still be alive: kill it, so that no two actors ever hold the same share
        ray.kill(self.actors[share.actor_index], no_restart=True)
        actor = self._actor_class.remote(self._setup)
        self.actors[share.actor_index] = actor
        self.replaced += 1
        self.resubmitted.append((self.batch_id, share.actor_index))
        share.ref = actor.search.remote(self._state_ref, share.seeds, share.rngs, self._config)
        share.tries += 1

    def gather(self, batch_id: int, n_shares: int) -> list[SearchShare]:
        """Collect the shares of one batch, searching again the shares of actors that were lost.

        :param batch_id: the id :meth:`submit` returned
        :param n_shares: how many shares were submitted
        :return: the actors' results, in submission order
        """
        if batch_id != self.batch_id or n_shares != len(self._pending):
            raise WorkerError(
                f"batch {batch_id} with {n_shares} shares was gathered, but batch {self.batch_id} with "
                f"{len(self._pending)} shares is the one out"
            )
        answers: dict[int, SearchShare | Exception] = {}
        while len(answers) < n_shares:
            waiting = {share.ref: i for i, share in enumerate(self._pending) if i not in answers}
            ready, _ = ray.wait(list(waiting), num_returns=1)
            for ref in ready:
                index = waiting[ref]
                try:
                    answers[index] = ray.get(ref)
                except LOST as error:
                    self._resubmit(self._pending[index], error)
        self._pending, self._state_ref = [], None
        shares = [answers[i] for i in range(n_shares)]
        for answer in shares:
            if isinstance(answer, BaseException):
                raise answer
        return shares

    def close(self, wait: bool = True) -> None:
        """Stop the actors (Ray itself keeps running; a local instance stops when this process exits).

        :param wait: let a running search finish (up to 5 s) first; False kills the actors at once
        """
        if self._closed:
            return
        self._closed = True
        if not ray.is_initialized():
            return
        if wait and self._pending:
            ray.wait([share.ref for share in self._pending], num_returns=len(self._pending), timeout=5)
        for actor in self.actors:
            ray.kill(actor, no_restart=True)
        self.actors, self._pending, self._state_ref = [], [], None

    def __del__(self) -> None:
        try:
            self.close(wait=False)
        except Exception:  # at interpreter exit Ray may already be gone
            pass
