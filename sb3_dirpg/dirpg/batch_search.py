"""DirPG's batch search: the next batch of episodes, searched with the current policy in this process, in the search
workers (``n_workers``), or ahead of time together with the batches after it (``lookahead``).

:class:`BatchSearch` is a base class of :class:`~sb3_dirpg.dirpg.DirPG`: the batch search draws from the model's
streams, counts its interactions and keeps its search workers and its :class:`~sb3_dirpg.dirpg.lookahead.Lookahead`,
which are saved (the drawn batches) or rebuilt (the workers) with the model.
"""

from __future__ import annotations

from stable_baselines3.common.callbacks import BaseCallback

from sb3_dirpg.dirpg.lookahead import DrawnBatch
from sb3_dirpg.dirpg.update import SearchShare, merge_shares, split_share
from sb3_dirpg.dirpg.workers import SearchPool, make_search_pool
from sb3_dirpg.simulator import strip_monitor

__all__ = ["BatchSearch"]


class BatchSearch:
    """DirPG's batch search, one verb per method; a base class of :class:`~sb3_dirpg.dirpg.DirPG`, whose settings
    (``lookahead``, ``n_workers``), streams, counters, :meth:`~sb3_dirpg.dirpg.DirPG.search` and workers it uses."""

    def search_next_batch(self, callback: BaseCallback) -> SearchShare | None:
        """Search the next drawn batch with the current policy (or take it from the batches searched ahead), counting its
        interactions with the callback.

        :param callback: the training callback
        :return: the batch's outcomes and update steps, or None when the callback asked to stop
        """
        self._lookahead.keep_size(self.n_batch_episodes)
        if self.lookahead <= 1 and not self._lookahead.drawn:
            drawn = self.draw_batch()
            batch, uncounted = self.search_drawn(drawn, callback)
            self.num_timesteps += uncounted
        else:
            drawn, batch = self._commit_searched_ahead(callback)
        if batch is not None and [ep.seed for ep in batch.episodes] != drawn.seeds:  # the update sees this batch alone
            searched = [ep.seed for ep in batch.episodes]
            raise RuntimeError(f"DirPG: the merged batch holds the episodes {searched}, but {drawn.seeds} were submitted")
        return batch

    def draw_batch(self) -> DrawnBatch:
        """:return: the next batch's episode seeds and search noise, drawn from the model's streams"""
        seeds = self.episode_seeds()
        return DrawnBatch(seeds, self._search_rng.spawn(len(seeds)))

    def _commit_searched_ahead(self, callback: BaseCallback) -> tuple[DrawnBatch, SearchShare | None]:
        """The oldest drawn batch, searched with the current policy: taken from the batches searched ahead when nothing
        they depend on changed since (no update, the same search settings), else searched now together with the next
        ``Lookahead.width`` drawn batches, in lockstep. Its interactions are counted when it is taken, in one call of
        the callback.

        :param callback: the training callback
        :return: the drawn batch, and its search (None when the callback asked to stop)
        """
        ahead = self._lookahead
        depends_on = (self._n_updates, self.search_config())
        if not ahead.ready(depends_on):
            width = ahead.width(max(1, self.lookahead))
            while len(ahead.drawn) < width:
                ahead.drawn.append(self.draw_batch())
            batches = list(ahead.drawn)[:width]
            share, _ = self.search_drawn(DrawnBatch.joined([drawn.fresh() for drawn in batches]), None)
            assert share is not None  # only a callback stops a search
            ahead.searched.extend(split_share(share, [len(drawn.seeds) for drawn in batches]))
            ahead.searched_with = depends_on
        drawn, batch = ahead.drawn.popleft(), ahead.searched.popleft()
        if not self._iteration_hook(callback)(sum(ep.interactions for ep in batch.episodes)):
            return drawn, None
        return drawn, batch

    def search_drawn(self, drawn: DrawnBatch, callback: BaseCallback | None) -> tuple[SearchShare | None, int]:
        """Search a drawn batch, here and in the search workers.

        :param drawn: the episode seeds and their search noise
        :param callback: called once per lockstep iteration of this process's search (counting its interactions), or None
        :return: the share (None when the callback asked to stop), and the interactions the callback did not count
        """
        if self.n_workers.count > 0:
            return self._search_with_workers(drawn, callback)
        share, stopped = SearchShare.from_search(lambda: self.search(drawn.seeds, callback=callback, rng=drawn.rngs))
        uncounted = 0 if callback is not None else sum(ep.interactions for ep in share.episodes)
        return (None if stopped else share), uncounted

    def _search_with_workers(self, drawn: DrawnBatch, callback: BaseCallback | None) -> tuple[SearchShare | None, int]:
        """Search the first share here and the others in the worker processes, at the same time.

        The pool is (re)started when there is none or one of its processes has exited (:meth:`DirPG.start_workers`). An
        exception or interrupt while a batch is being searched stops the workers, so that no share of the interrupted batch
        can be merged later; the next batch starts new ones.

        :param drawn: the batch's episode seeds and search noise
        :param callback: the training callback (called by the search of this process's share), or None
        :return: the merged batch (None when the callback asked to stop), and the interactions the callback did not count
        """
        pool = self.start_workers()
        own, *others = drawn.split(self.n_workers.count + 1)
        others = [part for part in others if part.seeds]
        try:
            batch_id = pool.submit(self.policy, [(part.seeds, part.rngs) for part in others], self.search_config())
            shares = []
            stopped = False
            if own.seeds:
                share, stopped = SearchShare.from_search(lambda: self.search(own.seeds, callback=callback, rng=own.rngs))
                shares.append(share)
            shares.extend(pool.gather(batch_id, len(others)))
        except BaseException:  # KeyboardInterrupt included: the workers' shares of this batch must never be merged
            self.close_workers(wait=False)
            raise
        if stopped:
            return None, 0
        counted = 1 if own.seeds and callback is not None else 0
        return merge_shares(shares), sum(ep.interactions for share in shares[counted:] for ep in share.episodes)

    @property
    def worker_pool(self) -> SearchPool | None:
        """The running search workers, read-only: they start with the first batch of ``learn`` when ``n_workers > 0``,
        and stop at :meth:`close_workers`, :meth:`set_env` or an exception during a batch (the next batch starts new ones).

        :return: the pool (a :class:`~sb3_dirpg.dirpg.workers.SearchWorkerPool` or a
            :class:`~sb3_dirpg.dirpg.workers.ray_actors.RaySearchPool`), or None
        """
        return self._worker_pool

    def start_workers(self) -> SearchPool:
        """Start the search workers (``n_workers`` processes or Ray actors) unless they run; start new ones when one of
        their processes has exited (a Ctrl-C reaches the workers too).

        :return: the running pool
        """
        if self._worker_pool is not None and not self._worker_pool.alive:
            if self.verbose >= 1:
                print("DirPG: a search worker process has exited; starting new workers")
            self.close_workers(wait=False)
        if self._worker_pool is None:
            env = strip_monitor(self.env.unwrapped.envs[0])
            self._worker_pool = make_search_pool(
                self.n_workers, env, self.heuristic, self.policy, self._obs_transform, self.simulator_backend
            )
        return self._worker_pool

    def close_workers(self, wait: bool = True) -> None:
        """Stop the search workers, processes or Ray actors (they start again at the next ``learn``).

        :param wait: let the workers finish a running search first (False terminates them at once)
        """
        if self._worker_pool is not None:
            pool, self._worker_pool = self._worker_pool, None
            pool.close(wait=wait)
