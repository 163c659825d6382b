"""DirPG's search workers: worker processes (:mod:`~sb3_dirpg.dirpg.workers.processes`) or Ray actors
(:mod:`~sb3_dirpg.dirpg.workers.ray_actors`, imported only for ``parallel_backend="ray"``), chosen by
:mod:`~sb3_dirpg.dirpg.workers.backends`."""

from sb3_dirpg.dirpg.workers.backends import SearchPool, check_parallel_backend, make_search_pool, split_batch
from sb3_dirpg.dirpg.workers.processes import SearchWorkerPool, WorkerError, check_worker_payload

__all__ = [
    "SearchPool",
    "SearchWorkerPool",
    "WorkerError",
    "check_parallel_backend",
    "check_worker_payload",
    "make_search_pool",
    "split_batch",
]
