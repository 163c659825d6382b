"""The backends of the search workers: ``"process"`` (:class:`~sb3_dirpg.dirpg.workers.processes.SearchWorkerPool`,
worker processes on this machine) and ``"ray"`` (:class:`~sb3_dirpg.dirpg.workers.ray_actors.RaySearchPool`, Ray
actors on this machine or a cluster). Both have the same interface, :class:`SearchPool`; :func:`split_batch` cuts a
batch into the shares they search.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from sb3_dirpg.common.batched_policy import ObservationTransform
from sb3_dirpg.common.policies import DirPGPolicy
from sb3_dirpg.dirpg.update import SearchShare
from sb3_dirpg.dirpg.workers.processes import SearchWorkerPool
from sb3_dirpg.search import SearchConfig
from sb3_dirpg.search.protocols import Heuristic

PARALLEL_BACKENDS = ("process", "ray")


class SearchPool(Protocol):
    """What DirPG needs of its search workers."""

    @property
    def n_workers(self) -> int:
        """:return: the number of workers"""

    @property
    def alive(self) -> bool:
        """:return: whether the pool can still search (else DirPG starts a new one)"""

    def submit(
        self, policy: DirPGPolicy, shares: Sequence[tuple[list[int], list[np.random.Generator]]], config: SearchConfig
    ) -> int:
        """:return: the id of the batch, for :meth:`gather`"""

    def gather(self, batch_id: int, n_shares: int) -> list[SearchShare]:
        """:return: the shares of the batch, in submission order"""

    def close(self, wait: bool = True) -> None:
        """Stop the workers."""


def check_parallel_backend(backend: str) -> str:
    """Refuse an unknown backend, and ``"ray"`` when Ray is not installed, before any work is done.

    :param backend: ``"process"`` or ``"ray"``
    :return: the backend
    """
    if backend not in PARALLEL_BACKENDS:
        raise ValueError(f"DirPG: parallel_backend must be one of {PARALLEL_BACKENDS}, got {backend!r}")
    if backend == "ray":
        try:
            import ray  # noqa: F401
        except ImportError as error:
            raise ImportError(f"DirPG: parallel_backend='ray' needs Ray ({error}): pip install sb3-dirpg[ray]") from None
    return backend


def make_search_pool(
    backend: str,
    env: gym.Env,
    heuristic: Heuristic | None,
    policy: DirPGPolicy,
    transform: ObservationTransform,
    n_workers: int,
    simulator_backend: str = "auto",
) -> SearchPool:
    """Start the search workers of a backend.

    :param backend: ``"process"`` or ``"ray"``
    :param env: the env chain to search (no Monitor)
    :param heuristic: the heuristic, or None
    :param policy: the learner's policy
    :param transform: the VecEnv's observation transform
    :param n_workers: number of workers
    :param simulator_backend: the learner's ``simulator_backend``
    :return: the pool
    """
    check_parallel_backend(backend)
    if backend == "ray":
        from sb3_dirpg.dirpg.workers.ray_actors import RaySearchPool  # here: Ray is optional

        return RaySearchPool(env, heuristic, policy, transform, n_workers, simulator_backend=simulator_backend)
    return SearchWorkerPool(env, heuristic, policy, transform, n_workers, simulator_backend=simulator_backend)


def split_batch(items: Sequence[Any], n_parts: int) -> list[list[Any]]:
    """Split a batch into ``n_parts`` contiguous, nearly equal parts (the first ones larger).

    :param items: the batch
    :param n_parts: number of parts
    :return: the parts (some empty if the batch is smaller than ``n_parts``)
    """
    bounds = np.linspace(0, len(items), n_parts + 1).round().astype(int)
    return [list(items[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
