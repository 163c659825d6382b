"""DirPG: Direct Policy Gradients (Lorberbom et al., NeurIPS 2020) as a Stable-Baselines3 algorithm."""

from __future__ import annotations

import inspect
import warnings
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, Schedule

from sb3_dirpg.common.policies import DirPGPolicy
from sb3_dirpg.common.settings import Setting, parameters_doc, search_fields
from sb3_dirpg.common.simulator_algorithm import SimulatorAlgorithm
from sb3_dirpg.dirpg.batch_search import BatchSearch
from sb3_dirpg.dirpg.earlier_releases import FORMER_SETTINGS, read_earlier_settings, upgrade_saved_model
from sb3_dirpg.dirpg.lookahead import Lookahead
from sb3_dirpg.dirpg.search_log import SearchLog
from sb3_dirpg.dirpg.settings import (
    SETTING_CHECKS,
    SETTINGS,
    check_astar_heuristic,
    check_refining,
    check_seeds,
)
from sb3_dirpg.dirpg.solve import Solution, best_solutions, greedy_trajectories
from sb3_dirpg.dirpg.update import CLIP_RANGE, SearchShare, UpdateSteps
from sb3_dirpg.dirpg.workers import (
    SearchPool,
    SearchWorkers,
    check_worker_payload,
)
from sb3_dirpg.search import SearchConfig, SearchResult, TopDownSearch
from sb3_dirpg.search.config import breadth_first_astar
from sb3_dirpg.search.priority import Priority
from sb3_dirpg.search.protocols import Heuristic, PolicyFunction
from sb3_dirpg.search.stopping import StopRule, SuccessStop
from sb3_dirpg.simulator import strip_monitor

SelfDirPG = TypeVar("SelfDirPG", bound="DirPG")

#: the arguments that :class:`SimulatorAlgorithm` takes (and checks and assigns)
BASE_ARGUMENTS = frozenset(inspect.signature(SimulatorAlgorithm.__init__).parameters) - {"self"}




class DirPG(BatchSearch, SearchLog, SimulatorAlgorithm):
    """Direct Policy Gradients.

    For every episode the environment's noise is fixed by a seeded reset. Lazy top-down A* sampling over the
    simulator's trajectories finds ``a_opt`` (an exact sample of the policy, after ``T`` interactions) and then searches
    up to ``search_budget`` more interactions for ``a_dir``, a trajectory with a larger direct objective
    ``D = G + ε·R``. The update is ``(1/ε)·mean[∇log P(a_dir) − ∇log P(a_opt)]`` over the episodes of a batch, the
    exact gradient of ``l(θ,ε) = E_S[(1/ε)·log E_a[exp(ε·R)]]``. When no episode of a batch improved, the update is
    zero and the optimizer does not step (as in the authors' code; Adam's momentum would otherwise move the weights).

    {parameters}

    Every setting above can be changed later, by assignment (``model.heuristic = h; model.priority = "astar"``) or as a
    keyword argument of :meth:`load`: it gets the constructor's checks, and a changed ``heuristic`` or
    ``simulator_backend`` builds the simulators again. Settings that depend on each other (an A* priority with
    ``alpha > 0`` needs a heuristic) are checked together before the next search, so they can be set in any order.
    """

    SETTING_CHECKS: ClassVar[dict[str, Any]] = {**SimulatorAlgorithm.SETTING_CHECKS, **SETTING_CHECKS}
    #: the settings, each declared once (:mod:`sb3_dirpg.dirpg.settings`): the signature, the docstring, the checks and
    #: the search's settings are read from it
    SETTINGS: ClassVar[tuple[Setting, ...]] = SETTINGS

    def __init__(
        self,
        policy: str | type[DirPGPolicy],
        env: GymEnv | str | None,
        learning_rate: float | Schedule = 1e-3,
        epsilon: float = 1.0,
        search_budget: int = 100,
        priority: Priority | str | dict[str, Any] = "gumbel",
        heuristic: Heuristic | None = None,
        prune: bool = True,
        stop: StopRule | str | dict[str, Any] = "improvement",
        batch_episodes: int | None = None,
        n_epochs: int = 1,
        lookahead: int = 1,
        max_episode_steps: int | None = None,
        gamma: float = 1.0,
        max_grad_norm: float | None = None,
        policy_kwargs: dict[str, Any] | None = None,
        stats_window_size: int = 100,
        tensorboard_log: str | None = None,
        seed: int | None = None,
        verbose: int = 0,
        device: th.device | str = "auto",
        _init_setup_model: bool = True,
        n_workers: int | dict[str, int] | SearchWorkers = 0,
        simulator_backend: str = "auto",
        ema_decay: float | None = None,
    ) -> None:
        arguments = locals()  # the signature is the settings table's (a test holds them equal)
        given = {setting.name: arguments[setting.name] for setting in self.SETTINGS}
        # every setting is checked on its own by check_setting (as when it is assigned later), then together
        own = {name: self.check_setting(name, value) for name, value in given.items() if name not in BASE_ARGUMENTS}
        check_astar_heuristic(own["priority"], heuristic)
        check_refining(own["stop"], own["search_budget"])
        if own["priority"].name == "astar" and heuristic is not None and own["priority"].alpha == 0:
            warnings.warn(
                "DirPG: priority='astar' with alpha=0 ignores the heuristic in the priority, which is then G + ε·L "
                "(L: the return so far); the heuristic only prunes. Pass priority={'astar': {'alpha': 0.2}} to guide the "
                "search with it, or priority='gumbel' to make the choice explicit",
                UserWarning,
                stacklevel=2,
            )
        self._worker_pool: SearchPool | None = None
        self._lookahead = Lookahead()
        self.searched_batch: SearchShare | None = None  # what collect_rollouts searched for train (not saved)
        for name, value in own.items():
            setattr(self, name, value)
        # set when a complete trajectory violated the heuristic's bound: pruning is then off for the rest of training
        self.heuristic_violation: str | None = None
        super().__init__(**{name: value for name, value in given.items() if name in BASE_ARGUMENTS})
        if self.n_workers.count > 0 and self.env is not None:
            check_worker_payload(strip_monitor(self.env.unwrapped.envs[0]), self.heuristic, self.n_workers.count)
        self._warn_breadth_first()

    def __setattr__(self, name: str, value: Any) -> None:
        """Check a setting as the constructor does (see :meth:`SimulatorAlgorithm.__setattr__`); a change of
        ``n_workers`` stops the running search workers (the next batch starts new ones).

        :param name: the attribute
        :param value: its new value
        :raises ValueError: for a setting of an earlier release (it would be kept and ignored), naming what replaced it
        """
        if name in FORMER_SETTINGS:
            raise ValueError(f"DirPG: {name} is no setting since this release: {FORMER_SETTINGS[name]}")
        super().__setattr__(name, value)
        if name == "n_workers" and getattr(self, "_worker_pool", None) is not None:
            self.close_workers()
        if name == "n_workers" and self.n_workers.count > 0 and getattr(self, "simulator", None) is not None:
            check_worker_payload(strip_monitor(self.env.unwrapped.envs[0]), self.heuristic, self.n_workers.count)

    def check_settings(self) -> None:
        """Check the settings that depend on each other, as the constructor does (attribute assignment checks each
        setting alone, in any order; this runs before every search and after ``load``)."""
        check_astar_heuristic(self.priority, self.heuristic)
        self._warn_breadth_first()
        check_refining(self.stop, self.search_budget)

    def _warn_breadth_first(self) -> None:
        """Warn, once per combination of settings, where the A* priority with ε < 0 would search breadth first."""
        problem = breadth_first_astar(self.priority.name, self.epsilon, self.priority.depth_first)
        if problem is not None and getattr(self, "_warned_breadth_first", None) != problem:
            self._warned_breadth_first = problem  # not before every search
            warnings.warn(f"DirPG: {problem}", UserWarning, stacklevel=3)

    def _simulators_rebuilt(self) -> None:
        """A setting the simulators are built with changed: the search workers start again with it, and the batches
        searched ahead are searched again."""
        if self.n_workers.count > 0:
            check_worker_payload(strip_monitor(self.env.unwrapped.envs[0]), self.heuristic, self.n_workers.count)
        self.close_workers()
        self._lookahead.forget_searches()

    def search_config(self, **overrides: Any) -> SearchConfig:
        """:param overrides: fields to change
        :return: the search settings of this model"""
        self.check_settings()
        prune = self.prune and self.heuristic is not None and self.heuristic_violation is None
        settings = search_fields(self.SETTINGS, lambda name: getattr(self, name))
        return SearchConfig(**{**settings, "prune": prune, "horizon": self.horizon, **overrides})

    def search(
        self,
        seeds: list[int],
        config: SearchConfig | None = None,
        callback: BaseCallback | None = None,
        rng: np.random.Generator | list[np.random.Generator] | None = None,
        policy_fn: PolicyFunction | None = None,
    ) -> SearchResult:
        """Run the search for one episode per seed with the current policy (no update).

        :param seeds: episode seeds
        :param config: search settings (default: :meth:`search_config`)
        :param callback: called once per lockstep iteration (counts ``num_timesteps``), or None
        :param rng: the search noise: one generator per episode, or one to spawn them from (default: the model's)
        :param policy_fn: the policy to search with (default: the trained policy's search function)
        :return: the search result
        """
        if self.simulator is None:
            raise ValueError("DirPG.search() needs an env: pass one to the constructor or call set_env()")
        self.simulator.ensure_simulators(len(seeds))
        policy_fn = self.search_policy_function() if policy_fn is None else policy_fn
        search = TopDownSearch(self.simulator, policy_fn, config or self.search_config())
        hook = self._iteration_hook(callback) if callback is not None else None
        return search.run(seeds, self._search_rng if rng is None else rng, on_iteration=hook)

    def solve(self, seeds: int | list[int], budget: int, **overrides: Any) -> list[Solution]:
        """Solve instances at test time, as an anytime solver: play the policy's greedy trajectory, then search for
        ``budget`` more interactions with the trained policy and the heuristic (the search of training with no update,
        no early stop and no stop on success; by default the Gumbel priority, so trajectories come as samples of the
        policy without replacement, pruned with the heuristic's bound), and return the best trajectory seen. The
        instance is the model's env reset with the seed; a larger budget never returns a worse solution.

        Pruning compares bounds on ``D = G + ε·R``: pass a large ``epsilon`` (e.g. 1000) to prune on the return alone.

        :param seeds: one seed or a list, one instance each (integers; an empty list gives an empty list)
        :param budget: interactions per instance after the greedy trajectory (0: the greedy trajectory alone)
        :param overrides: search settings to change, e.g. ``epsilon``, ``priority``, ``alpha`` (see :meth:`search_config`)
        :return: one :class:`~sb3_dirpg.dirpg.solve.Solution` per seed
        """
        seeds = check_seeds(seeds)
        if not seeds:
            return []
        if int(budget) != budget or budget < 0:
            raise ValueError(f"DirPG.solve: budget must be a non-negative number of interactions, got {budget!r}")
        if self.simulator is None:
            raise ValueError("DirPG.solve() needs an env: pass one to the constructor, to load(), or call set_env()")
        self.simulator.ensure_simulators(len(seeds))
        acting = self.acting_batched_policy  # the policy predict() acts with (the average, with ema_decay)
        greedy = greedy_trajectories(self.simulator, acting.logits, seeds, self.horizon)
        result = None
        if budget > 0:
            settings = dict(priority="gumbel", alpha=0.0, stop="budget", record_trajectories=True)
            config = self.search_config(**{**settings, "budget": int(budget), **overrides})
            rng = np.random.default_rng(np.random.SeedSequence([*seeds, len(seeds)]))
            result = self.search(seeds, config=config, rng=rng, policy_fn=acting.search_function())
        return best_solutions(greedy, result, seeds)

    def collect_rollouts(self, callback: BaseCallback) -> bool:
        """Search the next batch of episodes into :attr:`searched_batch` (here and in the search workers, or from the
        batches searched ahead, see ``lookahead`` and :mod:`~sb3_dirpg.dirpg.batch_search`), and record its ``a_opt``
        episodes in the ``rollout/`` statistics.

        :param callback: the training callback
        :return: False when the callback asked to stop (no update is made then)
        """
        self._start_collection(callback)
        self.searched_batch = batch = self.search_next_batch(callback)
        if batch is None:
            return False
        self._check_heuristic(batch.episodes)
        self._log_search(batch.episodes)
        self._end_collection(callback, search=batch.episodes)
        return True

    @property
    def refining(self) -> bool:
        """:return: whether the stopping rule searches on after a successful ``a_opt``"""
        return isinstance(self.stop, SuccessStop) and self.stop.refine > 0

    @classmethod
    def settings_of_earlier_releases(cls, settings: dict[str, Any], owner: str) -> dict[str, Any]:
        """:param settings: settings by name, as ``load`` or a hyperparameter file gives them
        :param owner: who reads them, for the message
        :return: the settings, with those of earlier releases read as what replaced them (with a FutureWarning)
        :raises ValueError: for a setting this release dropped, naming what to do instead"""
        return read_earlier_settings(settings, owner)

    def _after_load(self, overrides: dict[str, Any]) -> None:
        """A model saved by an earlier release gets its settings as this release spells them (with a warning).

        :param overrides: the keyword arguments given to ``load``
        """
        upgrade_saved_model(self, overrides)

    def train(self) -> None:
        """One DirPG update from the batch of searched episodes in :attr:`searched_batch`: the per-episode outcomes and
        the steps where ``a_dir`` and ``a_opt`` differ."""
        batch = self.searched_batch
        if batch is None:
            raise RuntimeError("DirPG.train() needs a searched batch: call collect_rollouts() (or learn()) first")
        steps = batch.steps
        n_episodes = sum(ep.opt_leaf >= 0 for ep in batch.episodes)
        self.logger.record("train/learning_rate", self.lr_schedule(self._current_progress_remaining))
        self.logger.record("train/interactions_per_update", self.num_timesteps / max(1, self._n_updates))
        self._lookahead.commit(updated=len(steps.actions) > 0)
        if len(steps.actions) == 0:
            self.logger.record_mean("train/loss", 0.0)
            self.logger.record_mean("train/grad_norm", 0.0)
            self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
            return
        searched_log_prob = None
        batch = self._update_batch(steps)  # the same tensors for every epoch
        for _ in range(self.n_epochs):
            loss, grad_norm, log_prob = self._update(batch, n_episodes, searched_log_prob)
            searched_log_prob = log_prob if searched_log_prob is None else searched_log_prob
            self.logger.record_mean("train/loss", loss)
            self.logger.record_mean("train/grad_norm", grad_norm)
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")

    def _update_batch(self, steps: UpdateSteps) -> tuple[Any, th.Tensor, th.Tensor, th.Tensor]:
        """:param steps: the batch's update steps
        :return: their observations as the policy reads them, actions, legal actions and signs, as tensors"""
        obs = self.obs_to_policy_tensor(steps.obs)
        masks = np.asarray(steps.masks, dtype=bool)
        if not masks.any(axis=1).all():
            raise ValueError("all-false action mask: every state needs at least one legal action")
        actions = th.as_tensor(steps.actions, device=self.device)
        return obs, actions, th.as_tensor(masks, device=self.device), th.as_tensor(steps.signs, device=self.device)

    def _update(
        self, batch: tuple[Any, th.Tensor, th.Tensor, th.Tensor], n_episodes: int, searched_log_prob: th.Tensor | None = None
    ) -> tuple[float, float, th.Tensor]:
        """One optimizer step on some of a batch's update steps.

        :param batch: the steps' tensors (:meth:`_update_batch`)
        :param n_episodes: the episodes searched for them (the loss is their mean)
        :param searched_log_prob: None for DirPG's update; for a further epoch (``n_epochs``), the steps'
            log-probabilities under the policy that searched them, whose ratios the clipped surrogate bounds
        :return: the loss, the gradient norm before clipping, and the steps' log-probabilities before the step
        """
        obs, actions, masks, signs = batch
        log_prob, _ = self.policy.log_prob_and_entropy(obs, actions, masks, entropy=False)
        signs = signs.to(log_prob.dtype)
        if searched_log_prob is None:
            # -(1/ε)·mean over episodes of [log P(a_dir) − log P(a_opt)]; shared prefixes cancel and are left out
            loss = -(signs * log_prob).sum() / (self.epsilon * n_episodes)
        else:
            # PPO's clipped surrogate with advantage ±1: its gradient at ratio 1 is DirPG's update
            ratio = th.exp(log_prob - searched_log_prob)
            bounded = th.clamp(ratio, 1.0 - CLIP_RANGE, 1.0 + CLIP_RANGE)
            loss = -th.minimum(signs * ratio, signs * bounded).sum() / (self.epsilon * n_episodes)
            self.logger.record_mean("train/clip_fraction", float((ratio != bounded).float().mean()))
        grad_norm = self._optimizer_step(loss)
        return float(loss.detach()), grad_norm, log_prob.detach()

    def _setup_learn(
        self,
        total_timesteps: int,
        callback: MaybeCallback = None,
        reset_num_timesteps: bool = True,
        tb_log_name: str = "run",
        progress_bar: bool = False,
    ) -> tuple[int, BaseCallback]:
        """SB3's set-up of ``learn``; batches searched ahead by an earlier ``learn`` are searched again (the policy may
        have been changed in between), their seeds and noise are kept.

        :param total_timesteps: see SB3
        :param callback: see SB3
        :param reset_num_timesteps: see SB3
        :param tb_log_name: see SB3
        :param progress_bar: see SB3
        :return: the total timesteps and the callback
        """
        self._lookahead.forget_searches()
        return super()._setup_learn(total_timesteps, callback, reset_num_timesteps, tb_log_name, progress_bar)

    def set_env(self, env: GymEnv, force_reset: bool = True) -> None:
        """Use a new env (see :meth:`SimulatorAlgorithm.set_env`); search workers are restarted with it.

        :param env: the new env
        :param force_reset: see SB3
        """
        if self.n_workers.count > 0:
            env = self._wrap_env(env, self.verbose)
            check_worker_payload(strip_monitor(env.unwrapped.envs[0]), self.heuristic, self.n_workers.count)
        super().set_env(env, force_reset=force_reset)
        self._lookahead.forget_searches()
        self.close_workers()

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_worker_pool", "searched_batch", "_warned_breadth_first",
                "_refining_tally", "_refining_warned"]  # fmt: skip


DirPG.__doc__ = (DirPG.__doc__ or "").replace("    {parameters}", parameters_doc(DirPG.SETTINGS))
