"""One DirPG setting for every MiniGrid env: the same algorithm settings everywhere, and the few things that must depend
on the env derived from the env itself by one rule (:func:`minigrid_setting`).

The rule reads the env after a few seeded resets (:data:`PROBE_SEEDS`); no number in it is chosen for one env:

* **horizon**: the search's trajectories stop after ``T = min(max_steps, STEPS_PER_SIDE * (width + height))`` steps
  (``max_episode_steps``), enough to cross the grid several times over, where MiniGrid's own limits (``4 * size^2``,
  ``10 * size^2``) let an untrained policy wander for hundreds of steps; the env itself keeps its own limit, so it is
  evaluated as rl-zoo3 builds it;
* **search budget**: ``BUDGET_PER_STEP * T`` interactions per map for the ``a_dir`` search;
* **reward and bound**: the shaped reward with only its goal term, plus the progress reward (potential-based, so the
  best trajectories stay the best) and its admissible bound wherever
  :func:`~sb3_dirpg.envs.minigrid.grid_bound.success_targets` knows where the env's success happens; where it does not
  (Playground has no success), the goal reward and its bound alone, and :attr:`MiniGridSetting.notes` says why;
* **action masks**: :class:`~sb3_dirpg.envs.MiniGridNoOpMask` with the rules that hold in every MiniGrid grid whose
  objects only the agent moves (no shortest way to success does nothing, undoes its last action, returns to a pose
  with nothing changed since, closes a door or picks up again what it just dropped), on the envs whose ``step``
  changes the world as MiniGrid's own does (:func:`steps_as_minigrid`: it may add rewards and ends), where that rule is
  known to hold, keeping ``done`` where it ends an episode;
* **mission**: :class:`~sb3_dirpg.envs.MissionObs` and two mission gates in the network where the mission changes from
  one reset to the next (Fetch, GoToDoor, PutNear, LockedRoom, KeyCorridor, ...): then the view alone does not say
  what to do;
* **memory**: where the mission kind needs one (:func:`memory_needed`: Memory, RedBlueDoors), the policy sees the
  last :data:`MEMORY_VIEWS` views (gymnasium's ``FrameStackObservation``), elsewhere the current one;
  :attr:`MiniGridSetting.notes` says that a memory of a few views falls short where what to remember lies further back
  (Memory's object, seen at the start only).

Everything else is :data:`ALGORITHM_SETTING`, the same for every env.
"""

from __future__ import annotations

import copy
import importlib
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import minigrid  # noqa: F401  (registers MiniGrid's ids)
import numpy as np
from gymnasium.envs.registration import load_env_creator
from gymnasium.wrappers import FrameStackObservation
from minigrid.minigrid_env import MiniGridEnv

from sb3_dirpg.envs.minigrid.action_mask import N_MINIGRID_ACTIONS, MiniGridNoOpMask
from sb3_dirpg.envs.minigrid.cnn import MiniGridCNN
from sb3_dirpg.envs.minigrid.compiled import pickup_success_steps
from sb3_dirpg.envs.minigrid.fast_obs import FastObservation
from sb3_dirpg.envs.minigrid.grid_bound import MiniGridBound, success_targets
from sb3_dirpg.envs.minigrid.progress import MiniGridProgressBound, MiniGridProgressReward
from sb3_dirpg.envs.minigrid.wrappers import DirectionImageObs, MiniGridShapedReward, MissionObs

#: the prefix of minigrid's own ids
MINIGRID_PREFIX = "MiniGrid-"
#: the module of minigrid's BabyAI levels
_BABYAI = "minigrid.envs.babyai"
#: the env seeds the rule resets the env with to read it
PROBE_SEEDS = range(8)
#: the states of random play at which :func:`steps_as_minigrid` compares an env's step with MiniGrid's
DYNAMICS_CHECK_STEPS = 300
#: how often random play picks each of MiniGrid's actions (more forward moves and toggles: play gets further)
_PLAY_WEIGHTS = (0.15, 0.15, 0.3, 0.12, 0.08, 0.15, 0.05)
#: horizon per cell of the grid's width plus height
STEPS_PER_SIDE = 4
#: ``a_dir`` search interactions per step of the horizon
BUDGET_PER_STEP = 25
#: the progress reward per step of progress toward the success (the goal pays 100)
PROGRESS_REWARD = 5.0
#: ε where the env's step draws from its randomness (:func:`steps_randomly`): the search sees one map's draws, so a_dir
#: must weigh the return less against the Gumbel noise (Dynamic-Obstacles-6x6, seed 0: with 5, 0.99 sampled success at
#: 550k fell to 0.14 at 1M; with 1, 0.9 sampled and greedy at 100k)
RANDOM_STEPS_EPSILON = 1.0
#: the training budget of the rl-zoo3 entry (rl-zoo3's ``-n`` overrides it)
N_TIMESTEPS = 1_000_000
#: the mask rules that hold wherever only the agent moves objects (:class:`~sb3_dirpg.envs.MiniGridNoOpMask`'s ``rules``;
#: ``keep_done`` joins them where the env's step reads ``done``)
MASK_RULES = ("no_undo", "no_revisit", "keep_doors_open", "no_repick")
#: the views the policy sees where the mission needs a memory (:func:`memory_needed`): the current one and the three
#: before it (RedBlueDoors-6x6: 0.9 sampled and greedy at 100k / 150k / 100k with 4 views on seeds 0-2, at 350k / 250k
#: with one on seed 0)
MEMORY_VIEWS = 4
#: the DirPG settings of every MiniGrid env; the search stops at its first success (refining it for a shorter one made
#: the sampled success swing, 0.51-0.92 on MultiRoom-N6, where the masks already keep the greedy policy off the walls)
ALGORITHM_SETTING: dict[str, Any] = {
    "learning_rate": 3e-3,
    "epsilon": 5.0,
    "gamma": 0.99,
    "priority": {"astar": {"alpha": 0.5}},
    "prune": True,
    "stop": "success",
    "n_epochs": 4,
    "batch_episodes": 1,
    "lookahead": 16,
}
#: the SB3 policy alias of every MiniGrid env
POLICY = "MultiInputPolicy"
#: mission gates of the network where the env shows its mission (one for the object to act on, one for a second one,
#: as PutNear names)
MISSION_GATES = 2
_REWARD = {"door_reward": 0.0, "pickup_reward": 0.0}
_PROGRESS = {"progress_reward": PROGRESS_REWARD}


def _path(cls: type) -> str:
    """:param cls: a class
    :return: its import path, as rl-zoo3's ``env_wrapper`` and the bridge's ``heuristic`` take it"""
    return f"{cls.__module__}.{cls.__qualname__}"


@dataclass(frozen=True)
class EnvFacts:
    """What the rule reads of an env (:func:`read_env`).

    :param env_id: the env id
    :param width: grid width
    :param height: grid height
    :param max_steps: the env's own step limit
    :param n_actions: size of its action space
    :param known_success: whether :func:`~sb3_dirpg.envs.minigrid.grid_bound.success_targets` knows where its success
        happens
    :param minigrid_dynamics: whether its ``step`` changes the world (grid, agent, load) as ``MiniGridEnv.step`` does
        (:func:`steps_as_minigrid`: it may add rewards and ends, as Unlock, Fetch or GoToDoor do)
    :param reads_done: whether its ``step`` gives MiniGrid's ``done`` action an effect (GoToDoor, GoToObject)
    :param missions: the distinct missions of the probe resets
    :param random_steps: whether its ``step`` draws from the env's randomness (:func:`steps_randomly`: Dynamic-Obstacles
        moves its obstacles at random)
    :param memory: why its mission needs a memory of earlier views (:func:`memory_needed`), or "" where one view does
    """

    env_id: str
    width: int
    height: int
    max_steps: int
    n_actions: int
    known_success: bool
    minigrid_dynamics: bool
    reads_done: bool
    missions: tuple[str, ...]
    random_steps: bool = False
    memory: str = ""

    @property
    def horizon(self) -> int:
        """:return: the search's step limit ``T``"""
        return min(self.max_steps, STEPS_PER_SIDE * (self.width + self.height))

    @property
    def masks(self) -> bool:
        """:return: whether the mask rules are known to hold: MiniGrid's seven actions, which change the world as
            MiniGrid's own ``step`` does"""
        return self.minigrid_dynamics and self.n_actions == N_MINIGRID_ACTIONS

    @property
    def shows_mission(self) -> bool:
        """:return: whether the mission changes between resets (so the policy must see it)"""
        return len(self.missions) > 1


@dataclass(frozen=True)
class MiniGridSetting:
    """DirPG's setting for one MiniGrid env (build it with :func:`minigrid_setting`).

    ``DirPG(setting.policy, setting.make_env(), **setting.algorithm_kwargs())`` trains it in Python;
    :meth:`zoo_entry` is the same as an rl-zoo3 hyperparameter entry.

    :param env_id: the env id
    :param env_kwargs: keyword arguments of ``gym.make`` (rl-zoo3's ``env_kwargs``)
    :param env_wrapper: the wrappers around ``gym.make(env_id)``, innermost first, as rl-zoo3's ``env_wrapper`` takes
        them (an import path, or a one-key mapping of one to its keyword arguments)
    :param heuristic: the bound, as a one-key mapping of its import path to its keyword arguments (``gamma`` is added
        from the algorithm's)
    :param algorithm: DirPG's keyword arguments besides the policy, its keyword arguments and the heuristic
    :param policy: the SB3 policy alias
    :param mission_gates: the network's mission gates (0 where the env shows no mission)
    :param facts: what the rule read of the env
    :param notes: the parts of the rule left out for this env, and why
    """

    env_id: str
    env_kwargs: dict[str, Any]
    env_wrapper: list[Any]
    heuristic: dict[str, dict[str, Any]]
    algorithm: dict[str, Any]
    policy: str
    mission_gates: int
    facts: EnvFacts
    notes: tuple[str, ...] = field(default=())

    def policy_kwargs(self) -> dict[str, Any]:
        """:return: the policy's keyword arguments (the paper's network, with the mission gates)"""
        extractor = {"mission_gates": self.mission_gates} if self.mission_gates else {}
        return dict(features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False,
                    features_extractor_kwargs=extractor)  # fmt: skip

    def make_heuristic(self) -> Any:
        """:return: the bound, built with the algorithm's discount"""
        (path, kwargs), = self.heuristic.items()
        return _build(path, {**kwargs, "gamma": self.algorithm["gamma"]})

    def algorithm_kwargs(self) -> dict[str, Any]:
        """:return: DirPG's keyword arguments: :attr:`algorithm`, the heuristic and the policy's keyword arguments"""
        return {**self.algorithm, "heuristic": self.make_heuristic(), "policy_kwargs": self.policy_kwargs()}

    def make_env(self, **kwargs: Any) -> gym.Env:
        """:param kwargs: passed to ``gym.make`` on top of :attr:`env_kwargs` (``render_mode``, ...)
        :return: the env with the setting's wrappers"""
        env = gym.make(self.env_id, **{**self.env_kwargs, **kwargs})
        for spec in self.env_wrapper:
            path, wrapper_kwargs = (spec, {}) if isinstance(spec, str) else next(iter(spec.items()))
            env = _build(path, {"env": env, **wrapper_kwargs})
        return env

    def zoo_entry(self) -> dict[str, Any]:
        """:return: the setting as an rl-zoo3 hyperparameter entry (what the bridge uses for a MiniGrid id without an
            entry of its own)"""
        extractor = f", features_extractor_kwargs=dict(mission_gates={self.mission_gates})" if self.mission_gates else ""
        return {
            "n_timesteps": float(N_TIMESTEPS),
            "policy": self.policy,
            "env_kwargs": dict(self.env_kwargs),
            "env_wrapper": list(self.env_wrapper),
            "policy_kwargs": f"dict(features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False{extractor})",
            "heuristic": dict(self.heuristic),
            **self.algorithm,
        }


def is_minigrid_id(env_id: str) -> bool:
    """Whether a registered id makes a MiniGrid env, read from its registration without making it: minigrid's
    ``MiniGrid-*`` ids, and a user's own subclass of ``MiniGridEnv`` under any id. minigrid's BabyAI levels are left out
    (their language missions are not covered by the setting).

    :param env_id: an env id
    :return: whether the one MiniGrid setting applies to it
    """
    if env_id.startswith(MINIGRID_PREFIX):
        return True
    spec = gym.registry.get(env_id)
    if spec is None:
        return False
    try:
        creator = load_env_creator(spec.entry_point) if isinstance(spec.entry_point, str) else spec.entry_point
    except (ImportError, AttributeError):
        return False
    return isinstance(creator, type) and issubclass(creator, MiniGridEnv) and not creator.__module__.startswith(_BABYAI)


def read_env(env_id: str, env_kwargs: dict[str, Any] | None = None) -> EnvFacts:
    """Make the env and reset it with :data:`PROBE_SEEDS` to read what the rule needs.

    :param env_id: a registered MiniGrid id
    :param env_kwargs: keyword arguments of ``gym.make``
    :return: the facts
    :raises ValueError: where the id is not registered, is not a MiniGrid env, or cannot be reset (the message names
        the env and the cause)
    """
    import sb3_dirpg.envs  # noqa: F401  (registers the project's MiniGrid ids)

    if env_id not in gym.registry:
        raise ValueError(f"{env_id!r} is not a registered env id; MiniGrid's are listed by gymnasium.pprint_registry()")
    env = gym.make(env_id, **(env_kwargs or {}))
    base = env.unwrapped
    if not isinstance(base, MiniGridEnv):
        raise ValueError(f"{env_id} is a {type(base).__name__}, not a MiniGrid env: the MiniGrid setting does not apply")
    missions, known = set(), True
    for seed in PROBE_SEEDS:
        try:
            env.reset(seed=seed)
        except Exception as error:
            raise ValueError(f"{env_id} cannot be reset on this install ({type(error).__name__}: {error})") from error
        missions.add(str(base.mission))
        known = known and success_targets(base) is not None
    step = type(base).step
    if step is MiniGridEnv.step or step in pickup_success_steps():
        dynamics, reads_done, random_steps = True, False, False
    else:
        dynamics, reads_done = steps_as_minigrid(base)
        random_steps = steps_randomly(base)
    facts = EnvFacts(env_id, int(base.width), int(base.height), int(base.max_steps), int(env.action_space.n), known,
                     dynamics, reads_done, tuple(sorted(missions)), random_steps, memory_needed(base))  # fmt: skip
    env.close()
    return facts


def memory_needed(base: Any) -> str:
    """The mission kinds in which what to do next depends on what the agent saw earlier, not on its view.

    :param base: an unwrapped MiniGrid env
    :return: why the env's mission needs a memory, or "" where one view says what to do next
    """
    from minigrid.envs import MemoryEnv, RedBlueDoorEnv

    if isinstance(base, MemoryEnv):
        return "the object to match is in view at the start only, and the two at the hallway's end look the same"
    if isinstance(base, RedBlueDoorEnv):
        return "the blue door must wait until the red one is open, which a view of the blue door does not show"
    return ""


def _world(base: Any) -> tuple[Any, ...]:
    """:param base: an unwrapped MiniGrid env
    :return: what a step can change of its world: the grid's cells, the agent's cell and direction, and its load"""
    load = None if base.carrying is None else tuple(base.carrying.encode())
    return base.grid.encode().tobytes(), tuple(int(v) for v in base.agent_pos), int(base.agent_dir), load


def steps_as_minigrid(base: Any, steps: int = DYNAMICS_CHECK_STEPS, seed: int = 0) -> tuple[bool, bool]:
    """Step the env's own ``step`` and ``MiniGridEnv.step`` from the same states of random play, and compare the worlds
    they leave (:func:`_world`) and their ends.

    :param base: an unwrapped MiniGrid env whose class overrides ``step``
    :param steps: the states compared
    :param seed: seed of the play and of the resets
    :return: whether every step left the world as MiniGrid's step does, and whether ``done`` ended an episode where
        MiniGrid's step goes on
    """
    if base.action_space.n != N_MINIGRID_ACTIONS:
        return False, False
    rng = np.random.default_rng(seed)
    done_action, reads_done, episode = int(base.actions.done), False, 0
    base.reset(seed=seed)
    for _ in range(steps):
        action = int(rng.choice(N_MINIGRID_ACTIONS, p=_PLAY_WEIGHTS))
        reference = copy.deepcopy(base)
        _, _, ends, _, _ = type(base).step(base, action)
        _, _, minigrid_ends, _, _ = MiniGridEnv.step(reference, action)
        if _world(base) != _world(reference):
            return False, reads_done
        reads_done = reads_done or (action == done_action and ends and not minigrid_ends)
        if ends or base.step_count >= base.max_steps:
            episode += 1
            base.reset(seed=seed + episode)
    return True, reads_done


def steps_randomly(base: Any, steps: int = DYNAMICS_CHECK_STEPS, seed: int = 0) -> bool:
    """Step two copies of the env, whose random generators differ, with the same action from the same states of random
    play, and compare the worlds they leave.

    :param base: an unwrapped MiniGrid env whose class overrides ``step``
    :param steps: the states compared
    :param seed: seed of the play and of the resets
    :return: whether a step's outcome depended on the env's randomness
    """
    rng = np.random.default_rng(seed)
    episode = 0
    base.reset(seed=seed)
    for _ in range(steps):
        action = int(rng.choice(base.action_space.n))
        worlds = set()
        for draw in (1, 2):
            other = copy.deepcopy(base)
            other.np_random = np.random.default_rng([seed, draw])
            type(other).step(other, action)
            worlds.add(_world(other))
        if len(worlds) > 1:
            return True
        _, _, ends, truncated, _ = type(base).step(base, action)
        if ends or truncated:
            episode += 1
            base.reset(seed=seed + episode)
    return False


def minigrid_setting(env_id: str, env_kwargs: dict[str, Any] | None = None) -> MiniGridSetting:
    """DirPG's setting for a MiniGrid env: :data:`ALGORITHM_SETTING`, and what depends on the env by the module's rule.

    :param env_id: a registered MiniGrid id, e.g. ``"MiniGrid-DoorKey-8x8-v0"``
    :param env_kwargs: keyword arguments of ``gym.make`` (the rule reads the env they make)
    :return: the setting
    :raises ValueError: where the env is not a MiniGrid env or cannot be reset
    """
    facts = read_env(env_id, env_kwargs)
    notes = []
    wrappers: list[Any] = [_path(FastObservation), {_path(MiniGridShapedReward): dict(_REWARD)}]
    if facts.known_success:
        wrappers.append({_path(MiniGridProgressReward): dict(_PROGRESS)})
        heuristic = {_path(MiniGridProgressBound): {**_REWARD, **_PROGRESS}}
    else:
        heuristic = {_path(MiniGridBound): dict(_REWARD)}
        notes.append(f"no progress reward: where {env_id}'s success happens is not known (success_targets), so the "
                     "search is led by the goal reward's bound alone")  # fmt: skip
    if facts.masks:
        wrappers.append({_path(MiniGridNoOpMask): {"rules": [*MASK_RULES, *(["keep_done"] if facts.reads_done else [])]}})
    else:
        notes.append(f"no action masks: {env_id}'s step changes the world otherwise than MiniGrid's own (or it has "
                     f"{facts.n_actions} actions), so the mask rules are not known to hold")  # fmt: skip
    wrappers.append(_path(DirectionImageObs))
    if facts.memory:
        wrappers.append({_path(FrameStackObservation): {"stack_size": MEMORY_VIEWS}})
    if facts.shows_mission:
        wrappers.append(_path(MissionObs))
    horizon = facts.horizon
    algorithm = {**ALGORITHM_SETTING, "max_episode_steps": horizon, "search_budget": BUDGET_PER_STEP * horizon}
    if facts.random_steps:
        algorithm["epsilon"] = RANDOM_STEPS_EPSILON
        notes.append(f"epsilon {RANDOM_STEPS_EPSILON}, not {ALGORITHM_SETTING['epsilon']}: {env_id}'s step draws from the "
                     "env's randomness, which the search fixes for each map (seeded reset), so a large epsilon favours "
                     "the ways that only that map's draws let succeed")  # fmt: skip
    if facts.memory:
        notes.append(f"a memory of {MEMORY_VIEWS} views: {env_id}'s mission needs one ({facts.memory}); a recurrent "
                     f"policy is not part of the setting, so where what to remember lies further back than {MEMORY_VIEWS} "
                     "views (Memory's object) the policy's success stays below the search's")  # fmt: skip
    return MiniGridSetting(env_id, dict(env_kwargs or {}), wrappers, heuristic, algorithm, POLICY,
                           MISSION_GATES if facts.shows_mission else 0, facts, tuple(notes))  # fmt: skip


def completed_entry(env_id: str, entry: dict[str, Any] | None, env_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """A hyperparameter entry for a MiniGrid env, completed by the one setting: an entry without a ``policy`` (say,
    only ``n_timesteps``, or the few keys an env changes) is laid over :meth:`MiniGridSetting.zoo_entry`; a whole entry
    (with a ``policy``) is returned as it is.

    :param env_id: a MiniGrid id
    :param entry: the file's entry for it, or None where it has none
    :param env_kwargs: ``gym.make``'s keyword arguments (rl-zoo3's ``--env-kwargs``), which the rule reads the env with
    :return: the entry
    """
    entry = dict(entry or {})
    if "policy" in entry:
        return entry
    kwargs = {**dict(entry.get("env_kwargs") or {}), **dict(env_kwargs or {})}
    return {**minigrid_setting(env_id, kwargs).zoo_entry(), **entry}


def _build(path: str, kwargs: dict[str, Any]) -> Any:
    """:param path: ``package.module.Name``
    :param kwargs: its keyword arguments
    :return: ``Name(**kwargs)``"""
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)(**kwargs)
