"""The backends of the search workers: ``"process"`` (:class:`~sb3_dirpg.dirpg.workers.processes.SearchWorkerPool`,
worker processes on this machine) and ``"ray"`` (:class:`~sb3_dirpg.dirpg.workers.ray_actors.RaySearchPool`, Ray
actors on this machine or a cluster). Both have the same interface, :class:`SearchPool`; :func:`split_batch` cuts a
batch into the shares they search. :class:`SearchWorkers` is DirPG's ``n_workers`` setting: how many, and where.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True)
class SearchWorkers:
    """DirPG's search workers, the ``n_workers`` setting: how many, and where.

    Spelled as a count (worker processes on this machine) or, in Python and YAML alike, a one-key mapping of the
    backend to the count: ``{"ray": 8}`` (Ray actors on the cluster named by ``RAY_ADDRESS``, else a local Ray
    instance; ``pip install sb3-dirpg[ray]``), ``{"process": 2}``.

    :param count: the extra workers that search shares of each batch with a copy of the policy (0: this process only)
    :param backend: ``"process"`` or ``"ray"``
    """

    count: int = 0
    backend: str = "process"

    @property
    def spelling(self) -> int | dict[str, int]:
        """:return: how to write it: the count for processes, else ``{backend: count}``"""
        return self.count if self.backend == "process" else {self.backend: self.count}


def search_workers(value: Any, owner: str = "DirPG") -> SearchWorkers:
    """Read the ``n_workers`` setting from how it is spelled; refuse ``"ray"`` when Ray is not installed.

    :param value: a count, a one-key mapping ``{backend: count}`` or a :class:`SearchWorkers`
    :param owner: who takes it, for the message
    :return: the workers
    :raises ValueError: for a count that is not a non-negative integer or an unknown backend
    """
    if isinstance(value, SearchWorkers):
        backend, count = value.backend, value.count
    elif isinstance(value, dict) and len(value) == 1:
        ((backend, count),) = value.items()
    else:
        backend, count = "process", value
    if isinstance(count, bool) or not isinstance(count, numbers.Real) or int(count) != count or count < 0:
        raise ValueError(
            f"{owner}: n_workers must be a non-negative integer number of worker processes, or a mapping of a backend "
            f"to one such as {{'ray': 8}}, got {value!r}"
        )
    if backend not in PARALLEL_BACKENDS:
        raise ValueError(f"{owner}: n_workers={value!r}: the backend must be one of {PARALLEL_BACKENDS}, got {backend!r}")
    return SearchWorkers(int(count), check_parallel_backend(backend))


def replace_legacy_backend(settings: dict[str, Any], owner: str) -> dict[str, Any]:
    """Settings with ``parallel_backend`` of earlier releases folded into ``n_workers``, with a FutureWarning that
    names the spelling.

    :param settings: the settings (not modified)
    :param owner: who reads them, for the message
    :return: a new dict (unchanged when it has no ``parallel_backend``)
    """
    if "parallel_backend" not in settings:
        return dict(settings)
    out = dict(settings)
    backend, given = out.pop("parallel_backend"), out.get("n_workers", 0)
    count = given.count if isinstance(given, SearchWorkers) else given
    if isinstance(given, (dict, SearchWorkers)):
        raise ValueError(f"{owner}: n_workers={given!r} and parallel_backend={backend!r}, which it replaces, are both "
                         "given: keep n_workers")  # fmt: skip
    out["n_workers"] = search_workers({backend: count}, owner)
    warnings.warn(
        f"{owner}: parallel_backend={backend!r} is a setting of releases before n_workers held the backend; read as "
        f"n_workers={out['n_workers'].spelling!r}. Write that instead",
        FutureWarning,
        stacklevel=3,
    )
    return out


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
        raise ValueError(f"DirPG: the workers' backend must be one of {PARALLEL_BACKENDS}, got {backend!r}")
    if backend == "ray":
        try:
            import ray  # noqa: F401
        except ImportError as error:
            raise ImportError(f"DirPG: n_workers={{'ray': ...}} needs Ray ({error}): pip install sb3-dirpg[ray]") from None
    return backend


def make_search_pool(
    workers: SearchWorkers,
    env: gym.Env,
    heuristic: Heuristic | None,
    policy: DirPGPolicy,
    transform: ObservationTransform,
    simulator_backend: str = "auto",
) -> SearchPool:
    """Start the search workers.

    :param workers: how many, and where
    :param env: the env chain to search (no Monitor)
    :param heuristic: the heuristic, or None
    :param policy: the learner's policy
    :param transform: the VecEnv's observation transform
    :param simulator_backend: the learner's ``simulator_backend``
    :return: the pool
    """
    n_workers = workers.count
    if check_parallel_backend(workers.backend) == "ray":
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
