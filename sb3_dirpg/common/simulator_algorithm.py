"""Shared machinery of the simulator-based algorithms (DirPG and its baselines): env checks, simulators,
episode seeding, batched policy evaluation, the learn loop, logging and prediction with action masks."""

from __future__ import annotations

import io
import numbers
import pathlib
import time
import warnings
from collections import deque
from typing import Any, ClassVar, TypeVar

import gymnasium as gym
import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.base_class import maybe_make_env
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.save_util import load_from_zip_file
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, Schedule
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper, VecMonitor
from torch.optim.swa_utils import AveragedModel

from sb3_dirpg.common.batched_policy import BatchedPolicy, ObservationTransform
from sb3_dirpg.common.callbacks import InteractionProgressBar
from sb3_dirpg.common.item_policy import ItemPolicy
from sb3_dirpg.common.iterative_algorithm import IterativeAlgorithm
from sb3_dirpg.common.policies import CnnPolicy, DirPGPolicy, MlpPolicy, MultiInputPolicy
from sb3_dirpg.common.policy_average import make_policy_average, update_policy_average
from sb3_dirpg.common.simulator_backends import check_simulator_backend, make_vec_simulator
from sb3_dirpg.common.vec_envs import check_vec_env, vec_env_simulators
from sb3_dirpg.common.vec_simulator import VecSimulator, check_sub_envs_alike
from sb3_dirpg.search.protocols import Heuristic, PolicyFunction
from sb3_dirpg.simulator.api_check import unsupported_observation_spaces
from sb3_dirpg.simulator.cloners import env_name

SelfSimulatorAlgorithm = TypeVar("SelfSimulatorAlgorithm", bound="SimulatorAlgorithm")


class SimulatorAlgorithm(IterativeAlgorithm):
    """Base class of algorithms that learn from seeded, snapshot-able simulators instead of a rollout buffer.

    Each learn iteration draws ``batch_episodes`` episode seeds from the algorithm's seeded RNG, collects those episodes
    on the simulators built from the VecEnv's sub-envs (the subclass's :meth:`collect_rollouts`), and makes one update
    (its :meth:`train`).
    ``num_timesteps`` counts every environment interaction; ``callback.on_step()`` is called once per lockstep
    iteration of the collection.

    As in SB3's on-policy algorithms, ``callback.on_rollout_start()`` and ``callback.on_rollout_end()`` frame each
    batch's collection. At ``on_rollout_end`` the callback's ``locals`` hold ``episode_infos``, one Monitor-style dict
    (``r``, ``l``, ``t``, ``is_success``) per on-policy episode of the batch, plus what the subclass collected (DirPG:
    ``search``, the searched episodes; the rollout baselines: ``rollouts``). The update follows. Read the interaction
    count there from ``self.model.num_timesteps``: the callback's own ``num_timesteps`` is refreshed only by ``on_step``,
    and search workers' interactions are counted after the last one.

    :param policy: policy class or alias (``MlpPolicy``, ``CnnPolicy``, ``MultiInputPolicy``)
    :param env: env, VecEnv (``DummyVecEnv``) or registered env id
    :param learning_rate: learning rate or schedule
    :param batch_episodes: episodes collected together per update (None: ``max(8, n_envs)``)
    :param max_episode_steps: cut trajectories after this many steps (needed when the env has no time limit; a value
        above the env's own limit is warned about, and ``horizon`` reports the smaller)
    :param gamma: discount factor of the return
    :param heuristic: bound on the return-to-go (used by DirPG's search); see :class:`sb3_dirpg.VecSimulator`
    :param max_grad_norm: clip the gradient norm of each update to this value, or None
    :param policy_kwargs: keyword arguments of the policy
    :param stats_window_size: episodes averaged in ``rollout/`` statistics
    :param tensorboard_log: tensorboard log folder, or None
    :param seed: seed of the policy initialisation, the episode seeds and the search noise
    :param verbose: 0 silent, 1 training logs, 2 debug
    :param device: torch device
    :param _init_setup_model: build the networks now (False when loading)
    :param simulator_backend: what steps the search's states: ``"env"`` the sub-envs (snapshot, restore, step),
        ``"compiled"`` a compiled copy of the env's dynamics on array-held states (MiniGrid envs built with
        :func:`~sb3_dirpg.envs.make_minigrid_env`; an error says why an env has none), ``"auto"`` the compiled one where
        it fits. The transitions, and so the results, are the same
    :param ema_decay: keep an exponential moving average of the policy's weights, moved after every optimizer step by
        ``average ← ema_decay · average + (1 − ema_decay) · weights``, and act with it in :meth:`predict` (e.g. 0.999:
        about the last 1,000 steps). The search and the updates use the trained policy, :attr:`policy`; the average is
        :attr:`policy_average` and is saved with the model. None (the default): act with the trained policy
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": MlpPolicy,
        "CnnPolicy": CnnPolicy,
        "MultiInputPolicy": MultiInputPolicy,
        "ItemPolicy": ItemPolicy,
    }
    policy: DirPGPolicy
    #: the moving average of the policy's weights that acts in :meth:`predict` (``ema_decay``), or None
    policy_average: AveragedModel | None = None
    ema_decay: float | None = None  # models saved before the setting existed load without it
    DEFAULT_BATCH_EPISODES = 8
    #: evaluates the policy on raw sub-env observations for the search and the rollouts; a subclass may replace it
    batched_policy_class: ClassVar[type[BatchedPolicy]] = BatchedPolicy

    def __init__(
        self,
        policy: str | type[DirPGPolicy],
        env: GymEnv | str | None,
        learning_rate: float | Schedule = 1e-3,
        batch_episodes: int | None = None,
        max_episode_steps: int | None = None,
        gamma: float = 1.0,
        heuristic: Heuristic | None = None,
        max_grad_norm: float | None = None,
        policy_kwargs: dict[str, Any] | None = None,
        stats_window_size: int = 100,
        tensorboard_log: str | None = None,
        seed: int | None = None,
        verbose: int = 0,
        device: th.device | str = "auto",
        _init_setup_model: bool = True,
        simulator_backend: str = "auto",
        ema_decay: float | None = None,
    ) -> None:
        name = type(self).__name__
        check_learning_rate(learning_rate, name)
        if env is None and _init_setup_model:
            raise ValueError(
                f"{name}: env is None; pass the env to learn from (a gymnasium env, a DummyVecEnv or a registered env id), "
                f"or load a saved model with {name}.load(path, env=env)"
            )
        if isinstance(env, str):  # made here, as SB3 would, to check it before SB3 builds its VecEnv
            env = maybe_make_env(env, verbose)
        if isinstance(env, gym.Env):
            check_observation_space(env, name)
        self.simulator_backend = simulator_backend
        settings = dict(batch_episodes=batch_episodes, max_episode_steps=max_episode_steps, gamma=gamma, heuristic=heuristic)
        for key, value in dict(settings, max_grad_norm=max_grad_norm, ema_decay=ema_decay).items():
            self.check_setting(key, value)  # before SB3 builds anything
        super().__init__(
            policy=policy,
            env=env,
            learning_rate=learning_rate,
            policy_kwargs=policy_kwargs,
            stats_window_size=stats_window_size,
            tensorboard_log=tensorboard_log,
            verbose=verbose,
            device=device,
            support_multi_env=True,
            seed=seed,
            supported_action_spaces=None,
        )
        self.batch_episodes = batch_episodes
        self.max_episode_steps = max_episode_steps
        self.gamma = gamma
        self.heuristic = heuristic
        self.max_grad_norm = max_grad_norm
        self.ema_decay = ema_decay
        self.simulator: VecSimulator | None = None
        self._batch_episode_infos: list[dict[str, Any]] = []  # the on-policy episodes of the batch being collected
        if self.env is not None:
            self._check_env_spaces()
        if _init_setup_model:
            self._setup_model()

    # -- settings --------------------------------------------------------------------------------------------

    #: the settings that are checked wherever they are set (constructor, attribute assignment, ``load(**kwargs)``), by
    #: name: ``check(algo, value) -> value`` raises a ValueError naming the setting, or returns the value to keep
    SETTING_CHECKS: ClassVar[dict[str, Any]] = {}
    #: the settings the simulators are built with: assigning one builds them again (checked as at construction)
    SIMULATOR_SETTINGS: ClassVar[tuple[str, ...]] = ("heuristic", "simulator_backend")
    #: the settings read once, when the networks are built: assigning one later would change nothing, so it is refused
    #: with what to do instead
    FIXED_AFTER_SETUP: ClassVar[dict[str, str]] = {
        "policy_kwargs": "the policy is built from them once: build a new model",
        "device": "the networks are built on it once: pass device= to load() (or call model.policy.to(device))",
        "seed": "the generators are seeded from it once: call model.set_random_seed(seed)",
    }

    @property
    def stats_window_size(self) -> int:
        """:return: the episodes averaged in the ``rollout/`` statistics (SB3 keeps it as ``_stats_window_size``;
            assigning it resizes the windows, keeping their latest episodes)"""
        return self._stats_window_size

    @stats_window_size.setter
    def stats_window_size(self, value: int) -> None:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{type(self).__name__}: stats_window_size must be a positive int, got {value!r}")
        self._stats_window_size = int(value)
        for name in ("ep_info_buffer", "ep_success_buffer"):
            window = getattr(self, name, None)
            if window is not None:
                setattr(self, name, deque(window, maxlen=int(value)))

    @classmethod
    def check_setting(cls, name: str, value: Any) -> Any:
        """:param name: an attribute
        :param value: a value for it
        :return: the value to keep (a checked setting may be normalised, e.g. a numpy bool to a bool)
        :raises ValueError: naming the setting, when the value is refused"""
        check = cls.SETTING_CHECKS.get(name)
        return value if check is None else check(cls.__name__, value)

    def __setattr__(self, name: str, value: Any) -> None:
        """Check a setting as the constructor does; a setting the simulators are built with builds them again first,
        so that a refused value (a heuristic that changes the env, ...) leaves the model as it was.

        :param name: the attribute
        :param value: its new value
        """
        value = self.check_setting(name, value)
        if name in self.FIXED_AFTER_SETUP and getattr(self, "policy", None) is not None:
            raise ValueError(f"{type(self).__name__}: {name} cannot change after the model is built: "
                             f"{self.FIXED_AFTER_SETUP[name]}")  # fmt: skip
        if name == "ema_decay" and getattr(self, "policy", None) is not None:
            kept = self.__dict__.get("policy_average")
            average = None if value is None else make_policy_average(self.policy, value, start=kept)
            super().__setattr__("policy_average", average)
        if name not in self.SIMULATOR_SETTINGS or getattr(self, "simulator", None) is None or self.env is None:
            super().__setattr__(name, value)
            if name == "learning_rate" and "lr_schedule" in self.__dict__:
                self._setup_lr_schedule()  # SB3 reads the schedule, built from learning_rate once, at every step
            return
        old = self.__dict__.get(name)
        super().__setattr__(name, value)
        try:
            simulator, transform = self._build_simulator(self.env)
        except BaseException:
            super().__setattr__(name, old)
            raise
        self.simulator, self._obs_transform = simulator, transform
        self._simulators_rebuilt()

    def _simulators_rebuilt(self) -> None:
        """Called after a setting change built the simulators again (DirPG restarts its search workers)."""

    def check_settings(self) -> None:
        """Check the settings together (those that depend on each other), as the constructor does; called before
        every search and after ``load``. Nothing to check here."""

    # -- setup -----------------------------------------------------------------------------------------------

    def _check_env_spaces(self) -> None:
        name = type(self).__name__
        tuples = _tuple_spaces(self.observation_space)
        if tuples:
            raise ValueError(
                f"{name}: the env {env_name(getattr(self.env.unwrapped, 'envs', [self.env])[0])} has a Tuple observation "
                f"space ({', '.join(tuples)}: {self.observation_space}), which SB3's policies do not "
                "support. Wrap the env in gymnasium.wrappers.FlattenObservation (one Box), or in an ObservationWrapper that "
                "turns the Tuple into a Dict (MultiInputPolicy)"
            )
        if not isinstance(self.action_space, spaces.Discrete):
            raise ValueError(
                f"{name} only supports Discrete action spaces, got {self.action_space}; "
                "discretise the actions (e.g. with a gymnasium ActionWrapper) to use it"
            )
        start, n = int(self.action_space.start), int(self.action_space.n)
        if start != 0:
            raise ValueError(
                f"{name} needs a Discrete action space that starts at 0, got {self.action_space}: the policy's actions "
                f"(predict(), the search's trajectories) are the indices 0..{n - 1} (as in SB3, which does not support a "
                f"non-zero start either). Wrap the env so that it takes 0..{n - 1} and adds the offset: "
                f"gymnasium.wrappers.TransformAction(env, lambda a: a + {start}, gymnasium.spaces.Discrete({n}))"
            )
        check_vec_env(self.env, name)

    def _setup_model(self) -> None:
        self._setup_lr_schedule()
        self.set_random_seed(self.seed)
        if getattr(self, "_episode_rng", None) is None:  # a loaded model keeps its generators and carries on
            seeds = np.random.SeedSequence(self.seed).spawn(2)
            self._episode_rng = np.random.default_rng(seeds[0])
            self._search_rng = np.random.default_rng(seeds[1])
        self.policy = self.policy_class(self.observation_space, self.action_space, self.lr_schedule, **self.policy_kwargs)
        self.policy = self.policy.to(self.device)
        self.policy_average = None if self.ema_decay is None else make_policy_average(self.policy, self.ema_decay)
        if self.env is not None:
            self.simulator, self._obs_transform = self._build_simulator(self.env)

    def _build_simulator(self, venv: VecEnv) -> tuple[VecSimulator, ObservationTransform]:
        """Build (and self-check) the simulators of a VecEnv's sub-envs.

        :param venv: the VecEnv
        :return: the batch simulator and the VecEnv's observation transform
        """
        name = type(self).__name__
        backend = self.simulator_backend
        simulators = vec_env_simulators(venv, name)
        check_sub_envs_alike(simulators, name)
        simulator = make_vec_simulator(simulators, self.heuristic, backend, name)
        if self.max_episode_steps is None and simulator.horizon is None:
            raise ValueError(
                f"{name}: the env {env_name(simulator.simulators[0])} has no time limit; pass max_episode_steps=... or wrap "
                "it in gymnasium.wrappers.TimeLimit so that every trajectory of the search ends"
            )
        for sim in simulator.simulators:  # fail now, before any training work, if the env cannot be snapshot
            sim.reset(seed=0)
            sim.snapshot()
        simulator.check_heuristic()
        first = simulator.simulators[0]
        if self.max_episode_steps is not None and simulator.horizon is not None and self.max_episode_steps > simulator.horizon:
            warnings.warn(
                f"{name}: max_episode_steps={self.max_episode_steps} is larger than the {simulator.horizon} steps after "
                f"which the env {env_name(first)} ends every episode ({first.horizon_source}), so the effective horizon is "
                f"{simulator.horizon} (model.horizon reports it). Pass max_episode_steps={simulator.horizon} or less (or "
                "None), or raise the env's own limit",
                UserWarning,
                stacklevel=2,
            )
        return simulator, ObservationTransform.of(venv)

    @property
    def n_batch_episodes(self) -> int:
        """:return: the number of episodes collected per update"""
        return self.batch_episodes or max(self.DEFAULT_BATCH_EPISODES, self.n_envs)

    def episode_seeds(self) -> list[int]:
        """Draw the seeds of the next batch of episodes from the model's episode stream.

        :return: ``n_batch_episodes`` seeds
        """
        return self._episode_rng.integers(0, 2**31 - 1, size=self.n_batch_episodes).tolist()

    @property
    def horizon(self) -> int | None:
        """:return: the step limit the collection uses: the smaller of ``max_episode_steps`` and the env's own limit
        (a TimeLimit, MiniGrid's ``max_steps``, ...), the one that is set when only one is, or None"""
        own = self.simulator.horizon if self.simulator is not None else None
        if self.max_episode_steps is None:
            return own
        return self.max_episode_steps if own is None else min(self.max_episode_steps, own)

    def set_env(self, env: GymEnv, force_reset: bool = True) -> None:
        """Use a new env (same spaces and number of sub-envs); it is checked and its simulators are built first, so a
        refused env leaves the model unchanged.

        :param env: the new env
        :param force_reset: unused beyond SB3's meaning (the search resets every episode itself)
        """
        venv = self._wrap_env(env, self.verbose)
        check_vec_env(venv, type(self).__name__)
        simulator, transform = self._build_simulator(venv)
        super().set_env(venv, force_reset=force_reset)
        self.simulator, self._obs_transform = simulator, transform

    def _init_callback(self, callback: MaybeCallback, progress_bar: bool = False) -> BaseCallback:
        """SB3's callback set-up, with a progress bar that counts interactions rather than callback calls.

        :param callback: callback(s)
        :param progress_bar: show a progress bar
        :return: the callback to call
        """
        callback = super()._init_callback(callback, progress_bar=False)
        if progress_bar:
            callback = CallbackList([callback, InteractionProgressBar()])
            callback.init_callback(self)
        return callback

    @classmethod
    def load(  # type: ignore[override]
        cls: type[SelfSimulatorAlgorithm],
        path: str | pathlib.Path | io.BufferedIOBase,
        env: GymEnv | None = None,
        device: th.device | str = "auto",
        custom_objects: dict[str, Any] | None = None,
        print_system_info: bool = False,
        force_reset: bool = True,
        **kwargs: Any,
    ) -> SelfSimulatorAlgorithm:
        """SB3's ``load``, after checking that the zip holds a policy of this package (a PPO or DQN zip is refused
        with a message, instead of loading into a model that fails later) and checking ``kwargs``.

        :param path: the zip file (path or file object)
        :param env: the env to use (an env, a VecEnv or an env id), or None
        :param device: torch device
        :param custom_objects: objects to replace when loading (see SB3)
        :param print_system_info: print the system info of the saved model and of this machine
        :param force_reset: see SB3
        :param kwargs: attributes to set on the loaded model (``learning_rate``, search settings, ...); they are checked
            as the constructor checks them, and the simulators are built with them
        :return: the model
        """
        start = path.tell() if isinstance(path, io.IOBase) else None
        data, _, _ = load_from_zip_file(path, load_data=True, custom_objects=custom_objects, device="cpu")
        if start is not None:
            path.seek(start)
        policy_class = (data or {}).get("policy_class")
        if isinstance(policy_class, type) and not issubclass(policy_class, DirPGPolicy):
            raise ValueError(
                f"{cls.__name__}.load: {path} holds a {policy_class.__name__} policy, not a DirPG policy, so it was not saved "
                f"by DirPG, Reinforce or CEM and cannot be loaded as {cls.__name__}. This package converts in the other "
                "direction only: sb3_dirpg.integrations.ppo.ppo_from_dirpg starts a PPO from a DirPG-trained policy"
            )
        if isinstance(env, str):
            env = maybe_make_env(env, 0)  # an env id, as the constructor takes (SB3's load expects an env object)
        # SB3 sets the keyword arguments into the model's __dict__, past the checks of attribute assignment
        kwargs = cls.settings_of_earlier_releases(kwargs, f"{cls.__name__}.load")
        kwargs = {key: cls.check_setting(key, value) for key, value in kwargs.items()}
        # set after loading: the saved weights hold an average only when the saved model kept one
        decay = {"ema_decay": kwargs.pop("ema_decay")} if "ema_decay" in kwargs else {}
        model = super().load(
            path, env=env, device=device, custom_objects=custom_objects, print_system_info=print_system_info,
            force_reset=force_reset, **kwargs,
        )  # fmt: skip
        for name, value in decay.items():
            setattr(model, name, value)
        model._after_load(kwargs)
        model.check_settings()
        return model

    @classmethod
    def settings_of_earlier_releases(cls, settings: dict[str, Any], owner: str) -> dict[str, Any]:
        """:param settings: settings by name, as ``load`` or a hyperparameter file gives them
        :param owner: who reads them, for the message
        :return: the settings, with those of earlier releases replaced by what they spelled (nothing to replace here)"""
        return settings

    def _after_load(self, overrides: dict[str, Any]) -> None:
        """Restore what ``load``'s keyword arguments must not undo (nothing here; see :meth:`DirPG._after_load`).

        :param overrides: the keyword arguments given to ``load``
        """

    def _excluded_save_params(self) -> list[str]:
        excluded = ["simulator", "_obs_transform", "_batch_episode_infos", "_batched_policy_memo", "_acting_policy_memo",
                    "_warned_unmasked_predict"]  # fmt: skip
        return [*super()._excluded_save_params(), *excluded]

    def set_parameters(
        self, load_path_or_dict: str | pathlib.Path | io.BufferedIOBase | dict[str, Any], exact_match: bool = True,
        device: th.device | str = "auto",
    ) -> None:  # fmt: skip
        """SB3's ``set_parameters``, keeping the moving average of the weights (``ema_decay``) consistent with them:
        parameters without an average restart it from the loaded policy (``exact_match=False``); an average in the
        parameters of a model without one is left out (``exact_match=False``). With ``exact_match=True`` such a
        mismatch is refused before anything is loaded.

        :param load_path_or_dict: a saved model (path or file) or the dict of ``get_parameters()``
        :param exact_match: the parameters must cover every module of the model
        :param device: where to load them
        """
        if isinstance(load_path_or_dict, dict):
            params = dict(load_path_or_dict)
        else:
            _, params, _ = load_from_zip_file(load_path_or_dict, device=device, load_data=False)
        name = type(self).__name__
        has_average = "policy_average" in params
        restart = self.policy_average is not None and not has_average and "policy" in params
        if restart and exact_match:
            raise ValueError(
                f"{name}.set_parameters: the parameters hold no policy_average (they come from a model without "
                "ema_decay), and this model acts with one: pass exact_match=False to load the policy and restart the "
                "average from it, or set model.ema_decay = None first"
            )
        if self.policy_average is None and has_average:
            if exact_match:
                raise ValueError(
                    f"{name}.set_parameters: the parameters hold a policy_average (from a model with ema_decay), and "
                    "this model has none: set model.ema_decay to the saved model's first, or pass exact_match=False to "
                    "load the trained policy alone"
                )
            params.pop("policy_average")
        super().set_parameters(params, exact_match=exact_match, device=device)
        if restart:
            self.policy_average = make_policy_average(self.policy, self.ema_decay)  # acts with the loaded weights

    def _get_torch_save_params(self) -> tuple[list[str], list[str]]:
        averaged = [] if self.policy_average is None else ["policy_average"]
        return ["policy", "policy.optimizer", *averaged], []

    # -- policy evaluation -----------------------------------------------------------------------------------

    @property
    def acting_policy(self) -> BasePolicy:
        """:return: the policy the model acts with (``predict``, ``solve``, the policy PPO starts from): the moving
            average of the trained weights with ``ema_decay``, else the trained policy itself"""
        return self.policy if self.policy_average is None else self.policy_average.module

    @property
    def batched_policy(self) -> BatchedPolicy:
        """:return: the trained policy evaluated on raw sub-env observations (VecEnv observation transforms applied),
            built again only when the policy, the env or the transform changes (so its compiled-forward check runs
            once)"""
        return self._batched(self.policy, "_batched_policy_memo")

    @property
    def acting_batched_policy(self) -> BatchedPolicy:
        """:return: :attr:`acting_policy` evaluated as :attr:`batched_policy` is (the same object without an average)"""
        if self.policy_average is None:
            return self.batched_policy
        return self._batched(self.policy_average.module, "_acting_policy_memo")

    def _batched(self, policy: BasePolicy, memo_name: str) -> BatchedPolicy:
        """:param policy: a policy of the model
        :param memo_name: the attribute that keeps its batched form
        :return: the batched form, built again only when the policy, the env or the transform changes"""
        if self.simulator is None:
            raise ValueError(f"{type(self).__name__} has no env: pass one to the constructor or call set_env()")
        parts = (self.batched_policy_class, policy, self.simulator.simulators[0].observation_space, self._obs_transform)
        memo = getattr(self, memo_name, None)
        if memo is None or any(a is not b for a, b in zip(memo[0], parts)):
            memo = (parts, parts[0](*parts[1:]))
            setattr(self, memo_name, memo)
        return memo[1]

    def obs_to_policy_tensor(self, obs: list[Any]) -> th.Tensor | dict[str, th.Tensor]:
        """:param obs: raw observations of single sub-envs
        :return: the batch as the policy sees it"""
        return self.batched_policy.to_tensor(obs)

    def policy_logits(self, obs: list[Any], masks: np.ndarray) -> np.ndarray:
        """One batched forward without gradients (the search's policy function).

        :param obs: raw observations
        :param masks: legal actions (the search applies them)
        :return: action logits, shape (n, n_actions)
        """
        return self.batched_policy.logits(obs, masks)

    def search_policy_function(self) -> PolicyFunction:
        """:return: the policy function for one search, memoised by observation when observations are integers"""
        return self.batched_policy.search_function()

    def _iteration_hook(self, callback: BaseCallback) -> Any:
        """:return: a function that counts the interactions of one lockstep iteration and calls the callback"""

        def on_iteration(n_interactions: int) -> bool:
            self.num_timesteps += n_interactions
            callback.update_locals({"n_interactions": n_interactions})
            return callback.on_step()

        return on_iteration

    def predict(
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """Action(s) of the learned policy (of its weights' moving average with ``ema_decay``); no search or simulator
        is involved.

        :param observation: observation(s)
        :param state: unused (no recurrent state)
        :param episode_start: unused
        :param deterministic: take the most likely legal action
        :param action_masks: legal actions (sb3-contrib convention), or None; where the model's env masks actions and
            none are given, it warns once (SB3's ``evaluate_policy`` and rl-zoo3's ``enjoy`` pass none:
            :func:`sb3_dirpg.common.evaluation.evaluate_policy` does)
        :return: the actions and ``state``
        """
        if action_masks is None and self.simulator is not None and self.simulator.simulators[0].has_action_masks:
            if not getattr(self, "_warned_unmasked_predict", False):
                self._warned_unmasked_predict = True
                warnings.warn(
                    f"{type(self).__name__}.predict: the env masks actions, but no action_masks were given, so the policy "
                    "may play masked actions; pass action_masks=sb3_contrib.common.maskable.utils.get_action_masks(env), "
                    "or evaluate with sb3_dirpg.common.evaluation.evaluate_policy, which does",
                    stacklevel=2,
                )
        return self.acting_policy.predict(observation, state, episode_start, deterministic, action_masks=action_masks)

    # -- learning --------------------------------------------------------------------------------------------

    def _start_collection(self, callback: BaseCallback) -> None:
        """Begin a batch's collection: put the policy in training mode, forget the previous batch's episodes and call
        ``callback.on_rollout_start()``.

        :param callback: the training callback
        """
        self.policy.set_training_mode(True)
        self._batch_episode_infos = []
        callback.on_rollout_start()

    def _end_collection(self, callback: BaseCallback, **collected: Any) -> None:
        """End a batch's collection: give the callback the batch (``episode_infos`` and ``collected``) through its
        ``locals``, then call ``callback.on_rollout_end()``.

        :param callback: the training callback
        :param collected: what the subclass collected, by name
        """
        callback.update_locals({"episode_infos": self._batch_episode_infos, **collected})
        callback.on_rollout_end()

    def _record_episode(self, ret: float, length: int, success: bool = False) -> None:
        """Add one on-policy episode to the ``rollout/`` statistics and to the batch's ``episode_infos``.

        :param ret: its undiscounted return
        :param length: its number of steps
        :param success: whether it ended in success (kept only when the env reports ``info["is_success"]``)
        """
        info: dict[str, Any] = {"r": ret, "l": length, "t": round(time.time() - self.start_time / 1e9, 6)}
        ended: dict[str, Any] = {"episode": info}  # the infos of a Monitor-wrapped episode's last step
        if self.simulator is not None and self.simulator.reports_success:
            ended["is_success"] = float(success)
            info = dict(info, is_success=bool(success))
        self._update_info_buffer([ended], np.array([True]))
        self._batch_episode_infos.append(info)
        self._write_monitor_row(ret, length, success)
        self._episode_num += 1

    def _write_monitor_row(self, ret: float, length: int, success: bool) -> None:
        """Write the episode to the training env's monitor files, as SB3's ``Monitor`` would have written a played
        episode (the search bypasses the Monitor), so that ``load_results`` and rl-zoo3's ``plot_train`` see it.

        The episodes go round-robin to the sub-envs' ``Monitor`` wrappers that write a file, and to every
        ``VecMonitor`` layer that writes one.

        :param ret: the undiscounted return
        :param length: the number of steps
        :param success: whether the episode ended in success (written when the monitor records ``is_success``)
        """
        if self.env is None:
            return
        monitors: list[Monitor | VecMonitor] = []
        venv = self.env
        while isinstance(venv, VecEnvWrapper):
            if isinstance(venv, VecMonitor) and venv.results_writer is not None:
                monitors.append(venv)
            venv = venv.venv
        sub_monitors = [m for m in map(_find_monitor, getattr(venv, "envs", [])) if m is not None and m.results_writer]
        if sub_monitors:
            monitors.append(sub_monitors[self._episode_num % len(sub_monitors)])
        for monitor in monitors:
            row: dict[str, Any] = {"r": round(float(ret), 6), "l": int(length), "t": round(time.time() - monitor.t_start, 6)}
            if "is_success" in getattr(monitor, "info_keywords", ()):
                row["is_success"] = bool(success)
            monitor.results_writer.write_row(row)  # type: ignore[union-attr]

    def _optimizer_step(self, loss: th.Tensor) -> float:
        """Back-propagate ``loss`` and step the policy's optimizer (with gradient clipping if set).

        :param loss: the scalar loss
        :return: the gradient norm before clipping
        """
        self._update_learning_rate(self.policy.optimizer)
        self.policy.optimizer.zero_grad()
        loss.backward()
        max_norm = self.max_grad_norm if self.max_grad_norm is not None else float("inf")
        grad_norm = float(th.nn.utils.clip_grad_norm_(self.policy.parameters(), max_norm))
        self.policy.optimizer.step()
        if self.policy_average is not None:
            update_policy_average(self.policy_average, self.policy)
        self._n_updates += 1
        return grad_norm

    def check_can_learn(self) -> None:
        """Raise a clear error when there is no env to learn from."""
        if self.simulator is None:
            raise ValueError(f"{type(self).__name__}.learn() needs an env: pass one to the constructor or call set_env()")


def _optional_positive_int(name: str) -> Any:
    """:param name: the setting
    :return: its check: a positive integer or None"""

    def check(algo: str, value: Any) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or int(value) != value or value < 1:
            raise ValueError(f"{algo}: {name} must be a positive integer or None, got {value!r}{yaml_number_hint(value)}")
        return int(value)

    return check


def _check_gamma(algo: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 < value <= 1.0:
        raise ValueError(f"{algo}: gamma must be a number in (0, 1], got {value!r}{yaml_number_hint(value)}")
    return float(value)


def _check_heuristic(algo: str, value: Any) -> Any:
    if value is not None and not callable(value):
        raise ValueError(f"{algo}: heuristic must be a callable heuristic(env) -> upper or (lower, upper), got {value!r}")
    return value


def _check_max_grad_norm(algo: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
        raise ValueError(f"{algo}: max_grad_norm must be positive or None, got {value!r}")
    return float(value)


def yaml_number_hint(value: Any) -> str:
    """:param value: a setting that should have been a number
    :return: for a string, how to write the number (YAML 1.1, which rl-zoo3's files use, reads ``1e-3`` and
        ``999e-3`` as strings); else an empty string"""
    if not isinstance(value, str):
        return ""
    return (
        f" (a string: pass float({value!r}); in YAML write a float with a dot, e.g. 1.0e-3, since YAML 1.1 reads 1e-3 "
        "as a string)"
    )


def _check_ema_decay(algo: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 < value < 1.0:
        raise ValueError(
            f"{algo}: ema_decay must lie in (0, 1), e.g. 0.999 to average about the last 1,000 optimizer steps, or be None "
            f"(act with the trained policy), got {value!r}{yaml_number_hint(value)}"
        )
    return float(value)


def _check_learning_rate(algo: str, value: Any) -> Any:
    check_learning_rate(value, algo)
    return value


SimulatorAlgorithm.SETTING_CHECKS = {
    "batch_episodes": _optional_positive_int("batch_episodes"),
    "max_episode_steps": _optional_positive_int("max_episode_steps"),
    "gamma": _check_gamma,
    "heuristic": _check_heuristic,
    "max_grad_norm": _check_max_grad_norm,
    "ema_decay": _check_ema_decay,
    "learning_rate": _check_learning_rate,
    "simulator_backend": lambda algo, value: check_simulator_backend(value, algo),
}


def check_learning_rate(learning_rate: Any, algo: str) -> None:
    """Refuse a learning rate that is neither a number nor a schedule, quoting it (``"1e-3"`` read from YAML is a string).

    :param learning_rate: the ``learning_rate`` argument
    :param algo: name of the algorithm, for the message
    """
    if callable(learning_rate) or (isinstance(learning_rate, numbers.Real) and not isinstance(learning_rate, bool)):
        return
    raise ValueError(
        f"{algo}: learning_rate must be a number or a schedule (a callable of the remaining progress), got "
        f"{learning_rate!r} of type {type(learning_rate).__name__}{yaml_number_hint(learning_rate)}"
    )


def check_observation_space(env: gym.Env, algo: str) -> None:
    """Refuse an env whose observations SB3's VecEnv cannot hold (parts without a fixed shape, such as MiniGrid's
    ``mission`` text), before SB3 builds the VecEnv and fails inside it.

    :param env: the env given to the algorithm
    :param algo: name of the algorithm, for the message
    """
    found = unsupported_observation_spaces(env.observation_space)
    if not found:
        return
    parts = ", ".join(f"{path} ({type(space).__name__})" for path, space in found)
    if type(env.unwrapped).__module__.split(".")[0] == "minigrid":
        advice = (
            "Build MiniGrid envs with the one MiniGrid setting, sb3_dirpg.envs.minigrid.setting.minigrid_setting(env_id)"
            ".make_env() (it encodes the mission as a vector where it changes between episodes, and gives DirPG's "
            "arguments too), with sb3_dirpg.envs.make_minigrid_env(env_id) (the paper's observation and shaped reward, "
            "without the mission text), or drop the mission yourself (e.g. minigrid.wrappers.ImgObsWrapper)"
        )
    else:
        advice = "Wrap the env in a gymnasium ObservationWrapper that drops those parts or encodes them as arrays"
    raise ValueError(
        f"{algo}: the env {env_name(env)} has observation parts without a fixed shape, which SB3's VecEnv and "
        f"policies cannot hold: {parts}. {advice}"
    )


def _tuple_spaces(space: spaces.Space, path: str = "observation_space") -> list[str]:
    """:param space: an observation space
    :param path: its name, extended with ``[key]`` for parts of a Dict
    :return: the names of its Tuple parts"""
    if isinstance(space, spaces.Tuple):
        return [path]
    if isinstance(space, spaces.Dict):
        return [found for key, sub in space.spaces.items() for found in _tuple_spaces(sub, f"{path}[{key!r}]")]
    return []


def _find_monitor(env: gym.Env) -> Monitor | None:
    """:param env: a sub-env of a VecEnv
    :return: the SB3 ``Monitor`` in its wrapper chain, or None"""
    while isinstance(env, gym.Wrapper):
        if isinstance(env, Monitor):
            return env
        env = env.env
    return None
