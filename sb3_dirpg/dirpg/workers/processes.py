"""Search worker processes: each holds its own simulators and a copy of the policy, searches a share of the episodes
of a batch, and sends back only what the update needs.

Each episode draws from its own random stream (spawned in the learner), so the outcome of a batch does not depend on
how its episodes are split between processes.
"""

from __future__ import annotations

import functools
import io
import multiprocessing as mp
import pickle
import signal
import traceback
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

import cloudpickle
import gymnasium as gym
import gymnasium.wrappers.common
import numpy as np
import torch as th
from stable_baselines3.common.vec_env.base_vec_env import CloudpickleWrapper

from sb3_dirpg.common.batched_policy import BatchedPolicy, ObservationTransform
from sb3_dirpg.common.policies import DirPGPolicy
from sb3_dirpg.common.simulator_backends import make_vec_simulator
from sb3_dirpg.dirpg.update import SearchShare
from sb3_dirpg.search import SearchConfig, TopDownSearch
from sb3_dirpg.search.protocols import Heuristic
from sb3_dirpg.simulator import SimulatorWrapper
from sb3_dirpg.simulator.cloners import env_name
from sb3_dirpg.simulator.introspect import gymnasium_time_limit


class _EnvPickler(cloudpickle.Pickler):
    """cloudpickle, except that gymnasium's own ``TimeLimit`` goes by reference also where rl-zoo3's import replaced
    the name by a subclass: by value, the class arrives as a copy whose methods' ``super()`` fails in the worker."""

    def __init__(self, file: Any, protocol: int | None = None) -> None:
        """:param file: where to write
        :param protocol: the pickle protocol"""
        super().__init__(file, protocol=protocol)
        original = gymnasium_time_limit()
        self._shadowed: Any = original if original is not gymnasium.wrappers.common.TimeLimit else object()  # once

    def reducer_override(self, obj: Any) -> Any:
        """:param obj: an object being pickled
        :return: how to rebuild gymnasium's shadowed ``TimeLimit`` class, else cloudpickle's answer"""
        if obj is self._shadowed:
            return gymnasium_time_limit, ()
        return super().reducer_override(obj)


class EnvPickle(CloudpickleWrapper):
    """SB3's ``CloudpickleWrapper`` for what goes to a worker process, pickled with :class:`_EnvPickler`."""

    def __getstate__(self) -> bytes:
        """:return: the pickled value"""
        buffer = io.BytesIO()
        _EnvPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(self.var)
        return buffer.getvalue()


def check_worker_payload(env: gym.Env, heuristic: Heuristic | None, n_workers: int) -> None:
    """Refuse, before any worker starts, an env or heuristic that cannot be sent to the search workers (an open file, a
    lock, a socket...), with a message that names the workers and ``n_workers=0``.

    :param env: the env chain the workers search (no Monitor)
    :param heuristic: the heuristic, or None
    :param n_workers: the number of workers asked for
    """
    for what, value in (("env", env), ("heuristic", heuristic)):
        try:
            EnvPickle(value).__getstate__()
        except Exception as error:
            name = f"env {env_name(env)}" if what == "env" else f"heuristic {heuristic!r}"
            raise ValueError(
                f"DirPG: n_workers={n_workers} starts search worker processes (or Ray actors), and each receives a pickled "
                f"copy of the {name}, which cannot be pickled ({type(error).__name__}: {error}). Pass n_workers=0 to "
                f"search in this process, or make the {what} picklable (e.g. open files in reset() rather than "
                "__init__, or give it __getstate__ and __setstate__)"
            ) from error


def _worker(
    conn: Connection,
    env_wrapper: CloudpickleWrapper,
    policy_wrapper: CloudpickleWrapper,
    heuristic_wrapper: CloudpickleWrapper,
    transform: ObservationTransform,
    simulator_backend: str,
) -> None:
    """A worker process: build the simulators and the policy once, then search the shares sent until told to close.

    :param conn: the worker's end of its pipe to the learner
    :param env_wrapper: the env chain to search
    :param policy_wrapper: the policy's (class, constructor parameters)
    :param heuristic_wrapper: the heuristic, or None
    :param transform: the VecEnv's observation transform
    :param simulator_backend: the learner's ``simulator_backend``
    """

    # a SIGINT stops a worker whatever handler the learner has (a job started with ``&`` in a script ignores SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    th.set_num_threads(1)
    env: gym.Env = env_wrapper.var
    simulator = make_vec_simulator([SimulatorWrapper(env)], heuristic_wrapper.var, simulator_backend)
    policy_class, params = policy_wrapper.var
    policy: DirPGPolicy = policy_class(**params)
    policy.set_training_mode(False)
    batched = BatchedPolicy(policy, env.observation_space, transform)
    try:
        while True:
            command, payload = conn.recv()
            if command == "close":
                break
            batch_id, weights, seeds, rngs, config = payload
            try:
                load_weights(policy, weights)
                simulator.ensure_simulators(len(seeds))
                search = TopDownSearch(simulator, batched.search_function(), config)
                share, _ = SearchShare.from_search(functools.partial(search.run, seeds, rngs))
            except Exception as error:  # e.g. a guard refusing the env's output: the learner raises it
                conn.send((batch_id, picklable_error(error)))
                continue
            conn.send((batch_id, share))
    except (EOFError, KeyboardInterrupt, BrokenPipeError):
        pass
    finally:
        conn.close()


def weights_payload(policy: DirPGPolicy) -> bytes:
    """The policy's weights as bytes, for a worker process.

    A tensor sent through a ``multiprocessing`` pipe goes by reference: torch moves its storage to shared memory, and the
    worker reads the learner's live parameters whenever it loads them. Bytes are a copy taken now, which nothing the
    learner does next (a step, a check that perturbs the weights) can reach.

    :param policy: the learner's policy
    :return: its ``state_dict``, serialized by ``torch.save``
    """
    buffer = io.BytesIO()
    th.save({key: value.detach().cpu() for key, value in policy.state_dict().items()}, buffer)
    return buffer.getvalue()


def load_weights(policy: DirPGPolicy, payload: bytes) -> None:
    """:param policy: a worker's copy of the policy
    :param payload: what :func:`weights_payload` made of the learner's"""
    policy.load_state_dict(th.load(io.BytesIO(payload), weights_only=True))


def picklable_error(error: Exception) -> Exception:
    """:param error: an exception raised in a worker, being handled
    :return: the exception itself if it can be sent to the learner, else a RuntimeError with its message; either way
        with the worker's traceback as a note (Python >= 3.11), which the learner's traceback would not show"""
    remote = "".join(traceback.format_exception(error))
    try:
        pickle.dumps(error)
    except Exception:
        error = RuntimeError(f"{type(error).__name__}: {error}")
    if hasattr(error, "add_note"):
        error.add_note(f"raised in a search worker:\n{remote}")
    return error


class WorkerError(RuntimeError):
    """A search worker process died or answered out of protocol; the pool is unusable (DirPG restarts it)."""


class SearchWorkerPool:
    """Worker processes that search shares of a batch with a copy of the policy.

    Every submitted batch gets a new id; each worker answers with the id of the batch it searched, and :meth:`gather`
    only returns shares of the batch asked for: a share of an older batch (one that was submitted but never gathered)
    is discarded, and an answer for an unknown batch raises :class:`WorkerError`.

    :param env: the env chain to search (no Monitor); each worker gets a pickled copy
    :param heuristic: the heuristic, or None
    :param policy: the learner's policy (its class and constructor parameters are sent once, weights every batch)
    :param transform: the VecEnv's observation transform
    :param n_workers: number of processes
    :param start_method: multiprocessing start method (default ``forkserver`` where available, else ``spawn``)
    :param simulator_backend: the learner's ``simulator_backend`` (see :mod:`sb3_dirpg.common.simulator_backends`)
    """

    def __init__(
        self,
        env: gym.Env,
        heuristic: Heuristic | None,
        policy: DirPGPolicy,
        transform: ObservationTransform,
        n_workers: int,
        start_method: str | None = None,
        simulator_backend: str = "auto",
    ) -> None:
        if start_method is None:
            start_method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
        ctx = mp.get_context(start_method)
        policy_spec = CloudpickleWrapper((type(policy), policy._get_constructor_parameters()))
        self.connections: list[Connection] = []
        self.processes = []
        self.batch_id = 0
        self.discarded = 0
        for _ in range(n_workers):
            parent, child = ctx.Pipe()
            args = (child, EnvPickle(env), policy_spec, EnvPickle(heuristic), transform, simulator_backend)
            process = ctx.Process(target=_worker, args=args, daemon=True)
            process.start()
            child.close()
            self.connections.append(parent)
            self.processes.append(process)

    @property
    def n_workers(self) -> int:
        """:return: the number of worker processes"""
        return len(self.processes)

    @property
    def alive(self) -> bool:
        """:return: whether every worker process is still running (False after a Ctrl-C or a kill)"""
        return bool(self.processes) and all(process.is_alive() for process in self.processes)

    def submit(
        self, policy: DirPGPolicy, shares: Sequence[tuple[list[int], list[np.random.Generator]]], config: SearchConfig
    ) -> int:
        """Start searching one share per worker with the current weights.

        :param policy: the learner's policy
        :param shares: (seeds, per-episode generators) per worker
        :param config: the search settings
        :return: the id of this batch, for :meth:`gather`
        """
        self.batch_id += 1
        weights = weights_payload(policy)
        for index, (conn, (seeds, rngs)) in enumerate(zip(self.connections, shares)):
            try:
                conn.send(("search", (self.batch_id, weights, seeds, rngs, config)))
            except (BrokenPipeError, EOFError, OSError) as error:
                raise WorkerError(f"search worker {index} is gone ({error!r}); the workers must be restarted") from error
        return self.batch_id

    def gather(self, batch_id: int, n_shares: int) -> list[SearchShare]:
        """Collect the shares of one batch.

        :param batch_id: the id :meth:`submit` returned
        :param n_shares: how many shares were submitted
        :return: the workers' results, in submission order
        """
        shares = []
        for index, conn in enumerate(self.connections[:n_shares]):
            while True:
                try:
                    tag, answer = conn.recv()
                except (EOFError, OSError) as error:
                    raise WorkerError(f"search worker {index} died during batch {batch_id} ({error!r})") from error
                if tag == batch_id:
                    break
                if tag < batch_id:  # a share of a batch that was never gathered: never merged
                    self.discarded += 1
                    continue
                raise WorkerError(f"search worker {index} answered for batch {tag} while batch {batch_id} was gathered")
            if isinstance(answer, BaseException):
                raise answer
            shares.append(answer)
        return shares

    def close(self, wait: bool = True) -> None:
        """Stop the workers.

        :param wait: let a worker finish the search it is running (up to 5 s) before it is terminated; False
            terminates at once (after an interrupt, when the running search is of no use)
        """
        for conn in self.connections:
            try:
                conn.send(("close", None))
            except (BrokenPipeError, OSError):
                pass
        for process in self.processes:
            if wait:
                process.join(timeout=5)
            if process.is_alive():
                process.terminate()
                process.join(timeout=5)
        for conn in self.connections:
            conn.close()
        self.connections, self.processes = [], []

    def __del__(self) -> None:
        self.close(wait=False)
