"""DirPG: Direct Policy Gradients (Lorberbom et al., NeurIPS 2020) as a Stable-Baselines3 algorithm."""

from __future__ import annotations

import warnings
from statistics import fmean
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, Schedule

from sb3_dirpg.common.policies import DirPGPolicy
from sb3_dirpg.common.simulator_algorithm import SimulatorAlgorithm
from sb3_dirpg.dirpg.batch_search import BatchSearch
from sb3_dirpg.dirpg.lookahead import Lookahead
from sb3_dirpg.dirpg.settings import (
    DROPPED_SETTINGS,
    SETTING_CHECKS,
    HeuristicViolationWarning,
    check_astar_heuristic,
    check_refining,
    check_seeds,
    dropped_settings_message,
)
from sb3_dirpg.dirpg.solve import Solution, best_solutions, greedy_trajectories
from sb3_dirpg.dirpg.update import CLIP_RANGE, SearchShare, UpdateSteps
from sb3_dirpg.dirpg.workers import (
    SearchPool,
    SearchWorkers,
    check_worker_payload,
    make_search_pool,
    replace_legacy_backend,
)
from sb3_dirpg.search import EpisodeSearch, SearchConfig, SearchResult, TopDownSearch
from sb3_dirpg.search.config import breadth_first_astar
from sb3_dirpg.search.priority import LEGACY_PRIORITY_SETTINGS, Priority, replace_legacy_priority
from sb3_dirpg.search.protocols import Heuristic, PolicyFunction
from sb3_dirpg.search.stopping import LEGACY_STOP_FLAGS, StopRule, SuccessStop, replace_legacy_flags
from sb3_dirpg.simulator import strip_monitor
from sb3_dirpg.simulator.cloners import env_name

SelfDirPG = TypeVar("SelfDirPG", bound="DirPG")

#: the settings of earlier releases, and what replaced them: assigning one is refused with this
FORMER_SETTINGS = {
    **DROPPED_SETTINGS,
    **{name: "the stopping rule replaced it, e.g. model.stop = {'success': {'refine': 100}}" for name in LEGACY_STOP_FLAGS},
    **{name: f"the priority rule holds it, e.g. model.priority = {{'astar': {{'{name}': ...}}}}"
       for name in LEGACY_PRIORITY_SETTINGS},
    "parallel_backend": "n_workers holds the backend, e.g. model.n_workers = {'ray': 8}",
}  # fmt: skip



def _mean(values: list[float]) -> float:
    """:param values: a batch's values (a few: one per searched map)
    :return: their mean (NaN for none), without numpy's per-call overhead"""
    return fmean(values) if values else float("nan")

class DirPG(BatchSearch, SimulatorAlgorithm):
    """Direct Policy Gradients.

    For every episode the environment's noise is fixed by a seeded reset. Lazy top-down A* sampling over the
    simulator's trajectories finds ``a_opt`` (an exact sample of the policy, after ``T`` interactions) and then searches
    up to ``search_budget`` more interactions for ``a_dir``, a trajectory with a larger direct objective
    ``D = G + ε·R``. The update is ``(1/ε)·mean[∇log P(a_dir) − ∇log P(a_opt)]`` over the episodes of a batch, the
    exact gradient of ``l(θ,ε) = E_S[(1/ε)·log E_a[exp(ε·R)]]``. When no episode of a batch improved, the update is
    zero and the optimizer does not step (as in the authors' code; Adam's momentum would otherwise move the weights).

    :param policy: policy class or alias (``MlpPolicy``, ``CnnPolicy``, ``MultiInputPolicy``)
    :param env: env, DummyVecEnv or registered env id
    :param learning_rate: learning rate or schedule
    :param epsilon: ε of the direct objective, non-zero: > 0 seeks controllable risk, < 0 avoids it, → 0 is the
        plain policy gradient
    :param search_budget: environment interactions allowed per episode for the ``a_dir`` search, after ``a_opt``
    :param priority: the order in which the ``a_dir`` search pops regions (:mod:`sb3_dirpg.search.priority`):
        ``"gumbel"`` (priority ``G``), ``"astar"`` or ``AStarPriority(alpha=0.5)`` (priority ``G + ε·(L + α·U)`` with the
        heuristic's bound ``U``, ``alpha`` in [0, 1], 1 is A*), in YAML ``{"astar": {"alpha": 0.5}}``. Either may take
        ``depth_first=True``: follow every popped region's sampled child chain to the end of a trajectory before popping
        another (the authors' depth-first option; every pop then completes a trajectory)
    :param heuristic: ``heuristic(env) -> upper`` or ``(lower, upper)``: bounds on the discounted return-to-go from
        the env's current state (discounted from that state); used for the ``"astar"`` priority and for pruning. An
        infinite bound (unknown) prunes nothing and adds nothing to the priority (docs/heuristics.md)
    :param prune: drop regions whose bound on ``D`` cannot beat the best ``D`` so far (needs an admissible heuristic).
        Every complete trajectory is checked against the bounds on its path: when one is violated, a
        :class:`HeuristicViolationWarning` names the depth and the gap (once per model) and pruning is switched off for
        the rest of training (``warnings.simplefilter("error", HeuristicViolationWarning)`` makes it an error)
    :param stop: when an episode's search ends before its budget (:mod:`sb3_dirpg.search.stopping`): ``"improvement"``
        (at the first trajectory with ``D > D(a_opt)``, appendix C), ``"budget"`` (never: ``a_dir`` is the exact argmax
        when the budget suffices), ``"success"`` (at the first trajectory that ends in success, ``info["is_success"]``,
        the authors' "break on goal"; the budget left is neither spent nor counted in ``num_timesteps``), a rule object
        such as ``SuccessStop(refine=100)`` (where ``a_opt`` itself succeeds, search on for up to 100 interactions for
        a larger ``D``, a shorter success, and stop at the first one, instead of stopping at once with a zero update;
        beyond the paper, docs/algorithm.md), or its YAML spelling ``{"success": {"refine": 100}}``
    :param batch_episodes: episodes searched in lockstep per update (None: ``max(8, n_envs)``)
    :param n_epochs: optimizer steps on each batch's update steps (beyond the paper; docs/algorithm.md). The first is
        DirPG's update; each further one steps along PPO's clipped surrogate with the advantage +1 on ``a_dir``'s steps
        and -1 on ``a_opt``'s, so that a step stops pushing once its probability ratio to the searched policy leaves
        ``[1 - CLIP_RANGE, 1 + CLIP_RANGE]`` (PPO's 0.2). 1 (the default) is the paper's estimator
    :param lookahead: search up to this many batches at once, in lockstep, and commit them one at a time; the
        algorithm does not change (only the policy is evaluated on batches of other sizes, which may round differently
        in the last bit). A batch whose update is zero leaves the policy as it was, so the next batch's search with it
        is the one it would have had anyway; after a batch that updates, the batches searched ahead are searched again
        with the new policy (same seeds and noise). The number searched at once follows the share of recent batches
        that updated (late in training, with ``stop="success"``, few do). Searches thrown away are not counted in
        ``num_timesteps``; the callback is called once per committed batch
    :param max_episode_steps: cut trajectories after this many steps (needed when the env has no time limit; a value
        above the env's own limit is warned about, and ``horizon`` reports the smaller)
    :param gamma: discount of the return ``R``
    :param max_grad_norm: clip the gradient norm of each update, or None
    :param policy_kwargs: keyword arguments of the policy (``net_arch``, ``features_extractor_class``,
        ``optimizer_class``, ...)
    :param stats_window_size: episodes averaged in ``rollout/`` statistics
    :param tensorboard_log: tensorboard log folder, or None
    :param seed: seed of the policy initialisation, the episode seeds and the search noise
    :param verbose: 0 silent, 1 training logs, 2 debug
    :param device: torch device
    :param _init_setup_model: build the networks now (False when loading)
    :param n_workers: extra workers that search shares of each batch with a copy of the policy (0: search in this
        process only): a count of worker processes on this machine, or ``{"ray": k}`` for ``k`` Ray actors on the
        cluster named by ``RAY_ADDRESS``, else on a local Ray instance (``pip install sb3-dirpg[ray]``; a
        :class:`~sb3_dirpg.dirpg.workers.SearchWorkers`). The results do not depend on it; callbacks see the share
        searched in this process.
    :param simulator_backend: what steps the search's states: ``"env"`` the sub-envs, ``"compiled"`` a compiled copy
        of their dynamics on array-held states (MiniGrid), ``"auto"`` the compiled one where it fits. The results do not
        depend on it
    :param ema_decay: act in :meth:`predict` with an exponential moving average of the policy's weights, moved after
        every optimizer step with this decay (e.g. 0.999), instead of the trained weights; the search, the updates and
        :meth:`solve` use the trained policy. It steadies the greedy policy, whose argmax may flip at a few decisive
        states from one update to the next (beyond the paper; docs/algorithm.md). None (the default): the trained policy

    Every setting above can be changed later, by assignment (``model.heuristic = h; model.priority = "astar"``) or as a
    keyword argument of :meth:`load`: it gets the constructor's checks, and a changed ``heuristic`` or
    ``simulator_backend`` builds the simulators again. Settings that depend on each other (an A* priority with
    ``alpha > 0`` needs a heuristic) are checked together before the next search, so they can be set in any order.
    """

    SETTING_CHECKS: ClassVar[dict[str, Any]] = {**SimulatorAlgorithm.SETTING_CHECKS, **SETTING_CHECKS}

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
        # every setting is checked on its own by check_setting (as when it is assigned later), then together
        settings = dict(epsilon=epsilon, search_budget=search_budget, lookahead=lookahead, n_epochs=n_epochs, prune=prune)
        for name, value in settings.items():
            self.check_setting(name, value)
        n_workers = self.check_setting("n_workers", n_workers)
        stop, priority = self.check_setting("stop", stop), self.check_setting("priority", priority)
        check_astar_heuristic(priority, heuristic)
        check_refining(stop, search_budget)
        if priority.name == "astar" and heuristic is not None and priority.alpha == 0:
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
        self.n_workers = n_workers
        self.epsilon = epsilon
        self.search_budget = search_budget
        self.priority = priority
        self.lookahead = lookahead
        self.stop = stop
        self.n_epochs = n_epochs
        self.prune = prune
        # set when a complete trajectory violated the heuristic's bound: pruning is then off for the rest of training
        self.heuristic_violation: str | None = None
        super().__init__(
            policy,
            env,
            learning_rate=learning_rate,
            batch_episodes=batch_episodes,
            max_episode_steps=max_episode_steps,
            gamma=gamma,
            heuristic=heuristic,
            max_grad_norm=max_grad_norm,
            policy_kwargs=policy_kwargs,
            stats_window_size=stats_window_size,
            tensorboard_log=tensorboard_log,
            seed=seed,
            verbose=verbose,
            device=device,
            _init_setup_model=_init_setup_model,
            simulator_backend=simulator_backend,
            ema_decay=ema_decay,
        )
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
        settings = dict(
            epsilon=self.epsilon, budget=self.search_budget, priority=self.priority.name, alpha=self.priority.alpha,
            prune=prune, gamma=self.gamma, horizon=self.horizon, depth_first=self.priority.depth_first, stop=self.stop,
        )  # fmt: skip
        return SearchConfig(**{**settings, **overrides})

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
        :return: the settings, with the stopping flags of earlier releases replaced by the ``stop`` rule they spelled
            (with a warning)
        :raises ValueError: for a setting this release dropped or moved out of the model, naming what to do instead"""
        dropped = {name: value for name, value in settings.items() if name in DROPPED_SETTINGS}
        if dropped:
            raise ValueError(dropped_settings_message(dropped, owner).replace(", which were ignored", ""))
        return replace_legacy_backend(replace_legacy_priority(replace_legacy_flags(settings, owner), owner), owner)

    def _after_load(self, overrides: dict[str, Any]) -> None:
        """A model saved by an earlier release gets the stopping rule its flags spelled, and loses the settings this
        release moved out of the model or dropped (with a warning naming what to do instead).

        :param overrides: the keyword arguments given to ``load``
        """
        legacy = {name: self.__dict__.pop(name) for name in LEGACY_STOP_FLAGS if name in self.__dict__}
        if legacy and "stop" not in overrides:
            saved = {**legacy, "search_budget": self.search_budget}
            self.stop = replace_legacy_flags(saved, "DirPG.load (a model saved by an earlier release)")["stop"]
        legacy = {name: self.__dict__.pop(name) for name in LEGACY_PRIORITY_SETTINGS if name in self.__dict__}
        if isinstance(self.priority, str) and "priority" not in overrides:  # saved before the priority rule
            self.priority = replace_legacy_priority({"priority": self.priority, **legacy}, "DirPG.load (a model saved by "
                                                    "an earlier release)")["priority"]  # fmt: skip
        if not isinstance(self.n_workers, SearchWorkers) and "n_workers" not in overrides:  # saved before SearchWorkers
            saved = {"n_workers": self.n_workers, "parallel_backend": self.__dict__.pop("parallel_backend", "process")}
            self.n_workers = replace_legacy_backend(saved, "DirPG.load (a model saved by an earlier release)")["n_workers"]
        self.__dict__.pop("parallel_backend", None)
        dropped = {name: self.__dict__.pop(name) for name in DROPPED_SETTINGS if name in self.__dict__}
        if dropped:
            owner = "DirPG.load (a model saved by an earlier release; they are ignored)"
            warnings.warn(dropped_settings_message(dropped, owner), FutureWarning, stacklevel=3)

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

    def _check_heuristic(self, episodes: list[EpisodeSearch]) -> None:
        """Runtime admissibility check: the search reports, per episode, the largest gap by which a bound on its
        complete trajectories was violated. Warn once (a :class:`HeuristicViolationWarning`) and stop pruning.

        :param episodes: the searched episodes of a batch
        """
        worst = max(episodes, key=lambda ep: ep.bound_gap, default=None)
        if worst is None or worst.bound_gap <= 0 or self.simulator is None:
            return
        bound = "upper" if self.epsilon > 0 else "lower"
        what = (
            f"the heuristic {self.heuristic!r} is not admissible on the env {env_name(self.simulator.simulators[0])}: in the "
            f"episode with seed {worst.seed}, the return-to-go a complete trajectory realised from a node at depth "
            f"{worst.bound_gap_depth} {'exceeds its upper' if self.epsilon > 0 else 'falls below its lower'} bound by "
            f"{worst.bound_gap:.6g}"
        )
        if self.heuristic_violation is None:
            pruning = "pruning is switched off for the rest of training" if self.prune else "pruning was already off"
            warnings.warn(
                f"DirPG: {what}; {pruning} (pruning with a bound that is too tight cuts the best trajectories). "
                f"Fix the heuristic's {bound} bound (warnings.simplefilter('error', HeuristicViolationWarning) raises "
                "instead)",
                HeuristicViolationWarning,
                stacklevel=2,
            )
            self.heuristic_violation = what

    #: maps refined after a successful a_opt, without one improvement, before the warning that refining cannot act
    REFINED_WITHOUT_GAIN = 20

    def _watch_refining(self, found: list[EpisodeSearch]) -> None:
        """Warn once where the stopping rule refines successful ``a_opt`` and never improves: with
        ``gamma=1`` and a success reward that does not depend on the way (a goal-only reward), every success ties on
        the return, and none can beat ``a_opt``, which holds the largest Gumbel.

        :param found: the batch's searched episodes
        """
        if not self.refining or getattr(self, "_refining_warned", False):
            return
        refined = [ep for ep in found if ep.success_opt and ep.interactions > ep.length_opt]
        tally = getattr(self, "_refining_tally", (0, 0))
        tally = (tally[0] + len(refined), tally[1] + sum(ep.improved for ep in refined))
        self._refining_tally = tally
        if tally[0] >= self.REFINED_WITHOUT_GAIN and tally[1] == 0:
            self._refining_warned = True
            cause = (
                "with gamma=1 every success ties on the return where the reward does not depend on the way (a goal-only "
                "reward), so none can beat a_opt: pass gamma < 1 (e.g. 0.99) to make a shorter success worth more, "
                if self.gamma == 1
                else "the successes found score no higher D than a_opt: "
            )
            warnings.warn(
                f"DirPG: stop={self.stop.spelling!r} searched on after {tally[0]} successful a_opt and improved none; "
                f"{cause}or pass stop='success' to stop at the first success",
                UserWarning,
                stacklevel=3,
            )

    def _log_search(self, episodes: list[EpisodeSearch]) -> None:
        """Record the batch's ``a_opt`` episodes in the ``rollout/`` statistics and log the ``search/`` values.

        :param episodes: the searched episodes of a batch
        """
        found = [ep for ep in episodes if ep.opt_leaf >= 0]
        simulator = self.simulator  # trajectories cut by max_episode_steps are not the env's ends: they say nothing
        unreported = simulator is not None and simulator.ends_without_success and not simulator.reports_success
        if isinstance(self.stop, SuccessStop) and found and unreported:
            warnings.warn(
                f"DirPG: stop={self.stop.spelling!r}, but the episode ends of {env_name(simulator.simulators[0])} report no "
                "info['is_success'], so the search never stops on success; add the key in a wrapper (MiniGrid: "
                "sb3_dirpg.envs.MiniGridShapedReward) or pass stop='improvement'",
                stacklevel=2,
            )
        for ep in found:
            self._record_episode(ep.reward_sum_opt, ep.length_opt, ep.success_opt)
        improved = [ep for ep in found if ep.improved]
        self._watch_refining(found)
        log = self.logger.record_mean
        log("search/improved_fraction", len(improved) / max(1, len(found)))
        log("search/interactions_per_episode", _mean([ep.interactions for ep in found]))
        search_interactions = [ep.interactions - ep.length_opt for ep in found]
        log("search/search_interactions_per_episode", _mean(search_interactions))
        log("search/budget_unspent", _mean([self.search_budget - n for n in search_interactions]))
        log("search/success_opt", _mean([ep.success_opt for ep in found]))
        # issue 44's diagnostics: how often a_opt itself succeeded and the search added nothing (a zero update), how
        # sure the policy is along its own samples, and how many interactions each optimizer step costs
        log("search/unchanged_fraction", 1.0 - len(improved) / max(1, len(found)))
        log("search/unchanged_success_fraction", _mean([ep.success_opt and not ep.improved for ep in found]))
        entropies = [ep.entropy_opt for ep in found if np.isfinite(ep.entropy_opt)]  # NaN: a_opt had no step to score
        if entropies:
            log("search/entropy_opt", _mean(entropies))
        log("search/success_dir", _mean([ep.success_dir for ep in found]))
        if improved:
            log("search/interactions_to_improvement", _mean([ep.interactions_to_improvement for ep in improved]))
        log("search/d_opt", _mean([ep.d_opt for ep in found]))
        log("search/d_dir", _mean([ep.d_dir for ep in found]))
        log("search/return_opt", _mean([ep.return_opt for ep in found]))
        log("search/return_dir", _mean([ep.return_dir for ep in found]))
        log("search/trajectories_completed", _mean([ep.trajectories for ep in found]))
        log("search/regions_pruned", _mean([ep.pruned for ep in found]))
        budget_spent = th.as_tensor([ep.interactions - ep.length_opt for ep in found], dtype=th.float32)
        self.logger.record("search/budget_spent", budget_spent, exclude=("stdout", "log", "json", "csv"))

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

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_worker_pool", "searched_batch", "_warned_breadth_first",
                "_refining_tally", "_refining_warned"]  # fmt: skip
