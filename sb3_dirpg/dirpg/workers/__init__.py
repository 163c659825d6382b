"""DirPG's search workers: worker processes (:mod:`~sb3_dirpg.dirpg.workers.processes`) or Ray actors
(:mod:`~sb3_dirpg.dirpg.workers.ray_actors`, imported only for ``n_workers={"ray": k}``), chosen by
:mod:`~sb3_dirpg.dirpg.workers.backends`."""

from sb3_dirpg.dirpg.workers.backends import (
    SearchPool,
    SearchWorkers,
    check_parallel_backend,
    make_search_pool,
    replace_legacy_backend,
    search_workers,
    split_batch,
)
from sb3_dirpg.dirpg.workers.processes import SearchWorkerPool, WorkerError, check_worker_payload

__all__ = [
    "SearchPool",
    "SearchWorkers",
    "SearchWorkerPool",
    "WorkerError",
    "check_parallel_backend",
    "check_worker_payload",
    "make_search_pool",
    "replace_legacy_backend",
    "search_workers",
    "split_batch",
]
