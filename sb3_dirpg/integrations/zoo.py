"""rl-zoo3 bridge: ``python -m sb3_dirpg.integrations.zoo train|enjoy [rl-zoo3 flags]``.

rl-zoo3 fixes its ``--algo`` choices when its parser is built, and imports ``--gym-packages`` only after parsing, so
a plugin cannot add an algorithm from the command line. This module registers ``dirpg``, ``reinforce`` and ``cem``
in rl-zoo3's tables first (:func:`register_algorithms`), with sb3-contrib's ``MaskablePPO`` as ``ppo_mask`` (rl-zoo3
2.9 lacks it; it trains exactly as rl-zoo3's ``ppo``, from rl-zoo3's ``ppo.yml`` unless ``--conf-file`` names
another, and learns with the env's ``action_masks()``), and then hands the command line to rl-zoo3's own entry
points. For our algorithms it also

* defaults ``--algo`` to ``dirpg`` and, for ``train``, ``--conf-file`` to ``zoo_hyperparams/<algo>.yml``;
* turns the YAML-friendly parts of an entry into Python objects (:func:`prepare_hyperparams`): a ``heuristic``
  given as an import path (with keyword arguments) or as a Python expression, ``policy_kwargs`` strings that name
  :class:`~sb3_dirpg.envs.minigrid.MiniGridCNN`, class paths inside a ``policy_kwargs`` dict, and a top-level ``net_arch``;
* makes ``--eval-freq``, ``--save-freq``, the progress bar and the evaluations of ``--optimize`` count environment
  interactions. DirPG calls callbacks once per lockstep search iteration, which makes up to ``batch_episodes``
  interactions, while rl-zoo3's callbacks count calls;
* evaluates with the env's action masks when it has them (rl-zoo3 evaluates with SB3's ``EvalCallback``, which
  ignores them), and ``enjoy`` plays with them too (rl-zoo3's ``enjoy`` calls ``predict`` without masks).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import yaml

try:
    import rl_zoo3.enjoy
    import rl_zoo3.exp_manager
    import rl_zoo3.hyperparams_opt
    import rl_zoo3.train
    import rl_zoo3.utils
    from rl_zoo3.callbacks import TrialEvalCallback
    from rl_zoo3.exp_manager import ExperimentManager
except ImportError as _error:  # rl-zoo3 itself, or one of the packages it imports without declaring (requests)
    raise ImportError(
        f"the rl-zoo3 bridge needs rl-zoo3 and its dependencies ({_error}): pip install sb3-dirpg[zoo]"
    ) from None
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from torch import nn

import sb3_dirpg
from sb3_dirpg.baselines import CEM, Reinforce
from sb3_dirpg.common.callbacks import (
    CheckpointByInteractions,
    EvalByInteractions,
    EvalWithMasks,
    InteractionProgressBar,
    InteractionSchedule,
)
from sb3_dirpg.dirpg import DirPG
from sb3_dirpg.dirpg.earlier_releases import DROPPED_SETTINGS, dropped_settings_message
from sb3_dirpg.dirpg.workers import replace_legacy_backend
from sb3_dirpg.envs.minigrid import MiniGridCNN
from sb3_dirpg.envs.minigrid.setting import completed_entry, is_minigrid_id, minigrid_setting
from sb3_dirpg.integrations.zoo_samplers import CONVERTERS, SAMPLERS, apply_to_entry
from sb3_dirpg.search.priority import replace_legacy_priority
from sb3_dirpg.search.protocols import Heuristic
from sb3_dirpg.search.stopping import replace_legacy_flags

ZOO_ALGOS: dict[str, type[BaseAlgorithm]] = {"dirpg": DirPG, "reinforce": Reinforce, "cem": CEM}
#: algorithms of other libraries that rl-zoo3 lacks; rl-zoo3 trains them as it trains its own, with the settings of the
#: rl-zoo3 algorithm named beside them (sampler, converter and, by default, hyperparameter file)
MASKED_ZOO_ALGOS: dict[str, tuple[type[BaseAlgorithm], str]] = {"ppo_mask": (MaskablePPO, "ppo")}
# shipped inside the package (package data), so found from any folder and with a regular install
HYPERPARAMS_DIR = Path(__file__).resolve().parents[1] / "zoo_hyperparams"
RL_ZOO_SCRIPTS = ("train", "enjoy")
# names a ``policy_kwargs`` or ``heuristic`` string may use, on top of those rl-zoo3 itself evaluates them with
EVAL_NAMES: dict[str, Any] = {"MiniGridCNN": MiniGridCNN, "sb3_dirpg": sb3_dirpg, "nn": nn}


def register_algorithms() -> None:
    """Add ``dirpg``, ``reinforce``, ``cem`` and ``ppo_mask`` to rl-zoo3's algorithm, sampler and converter tables
    (idempotent).

    rl-zoo3's modules share one dict object for each table, so updating it in place reaches ``rl_zoo3.ALGOS``, the
    ``train`` and ``enjoy`` parsers (built later) and the experiment manager.
    """
    rl_zoo3.utils.ALGOS.update(ZOO_ALGOS)
    rl_zoo3.hyperparams_opt.HYPERPARAMS_SAMPLER.update(SAMPLERS)
    rl_zoo3.hyperparams_opt.HYPERPARAMS_CONVERTER.update(CONVERTERS)
    for name, (algo_class, like) in MASKED_ZOO_ALGOS.items():
        rl_zoo3.utils.ALGOS[name] = algo_class
        rl_zoo3.hyperparams_opt.HYPERPARAMS_SAMPLER[name] = rl_zoo3.hyperparams_opt.HYPERPARAMS_SAMPLER[like]
        rl_zoo3.hyperparams_opt.HYPERPARAMS_CONVERTER[name] = rl_zoo3.hyperparams_opt.HYPERPARAMS_CONVERTER[like]


def rl_zoo3_conf_file(algo: str) -> Path:
    """:param algo: an algorithm of rl-zoo3's (``ppo``, ``a2c``, ...)
    :return: rl-zoo3's own shipped hyperparameter file of it"""
    return Path(rl_zoo3.__file__).parent / "hyperparams" / f"{algo}.yml"


def default_conf_file(algo: str) -> Path:
    """:param algo: ``dirpg``, ``reinforce``, ``cem`` or ``ppo_mask``
    :return: the hyperparameter file of the algorithm shipped in the package's ``zoo_hyperparams/`` (for ``ppo_mask``,
        rl-zoo3's own file of the algorithm it trains like)"""
    if algo in MASKED_ZOO_ALGOS:
        return rl_zoo3_conf_file(MASKED_ZOO_ALGOS[algo][1])
    path = HYPERPARAMS_DIR / f"{algo}.yml"
    if not path.is_file():
        raise FileNotFoundError(
            f"no hyperparameter file {path} (the sb3-dirpg package ships dirpg.yml, reinforce.yml and cem.yml there); "
            "pass --conf-file PATH to use your own"
        )
    return path


# -- hyperparameters ---------------------------------------------------------------------------------------------


def import_object(path: str) -> Any:
    """Import ``package.module.Name`` or ``package.module:Name``.

    :param path: the import path
    :return: the object
    """
    module_name, sep, name = path.partition(":") if ":" in path else path.rpartition(".")
    if not sep or not module_name or not name:
        raise ValueError(f"expected an import path like 'package.module.Name' or 'package.module:Name', got {path!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"cannot import {module_name!r} (from {path!r}): {error}") from error
    try:
        return getattr(module, name)
    except AttributeError as error:
        raise ValueError(f"{module_name!r} has no attribute {name!r} (from {path!r})") from error


def _evaluate(expression: str, what: str) -> Any:
    """Evaluate a hyperparameter string the way rl-zoo3 does, with :data:`EVAL_NAMES` added.

    :param expression: Python expression from the YAML file
    :param what: name of the hyperparameter, for messages
    :return: its value
    """
    namespace = {**vars(rl_zoo3.exp_manager), **EVAL_NAMES}
    try:
        return eval(expression, namespace)  # noqa: S307  (rl-zoo3 evaluates the same strings)
    except Exception as error:
        raise ValueError(f"cannot evaluate {what} {expression!r}: {error}") from error


def _yaml_entries(path: str) -> dict[str, Any] | None:
    """:param path: a hyperparameter file (rl-zoo3 also takes a Python file or module)
    :return: its entries, or None for a file that is not YAML"""
    if not str(path).endswith((".yml", ".yaml")):
        return None
    with open(path) as file:
        return yaml.load(file, Loader=yaml.UnsafeLoader) or {}  # the files use !!float and merges


def _is_import_path(text: str) -> bool:
    """:param text: a hyperparameter string
    :return: whether ``text`` looks like ``a.b.Name`` or ``a.b:Name`` rather than an expression"""
    head, _, tail = text.partition(":")
    parts = head.split(".") + ([tail] if tail else [])
    return len(parts) > 1 and all(part.isidentifier() for part in parts)


def _build(factory: Any, kwargs: dict[str, Any], gamma: float | None, what: str) -> Any:
    """Instantiate a class with ``kwargs`` (adding ``gamma`` when it takes one and none is given), or bind the keyword
    arguments of a plain function.

    :param factory: a class or a function
    :param kwargs: keyword arguments from the YAML entry
    :param gamma: the algorithm's discount, or None
    :param what: description for messages
    :return: the instance, or the (bound) function
    """
    if isinstance(factory, type):
        if gamma is not None and "gamma" not in kwargs and "gamma" in inspect.signature(factory).parameters:
            kwargs = {**kwargs, "gamma": gamma}
        return factory(**kwargs)
    if not callable(factory):
        raise ValueError(f"{what} must name a class or a function, got {factory!r}")
    return partial(factory, **kwargs) if kwargs else factory


def resolve_heuristic(spec: Any, gamma: float | None = None) -> Heuristic | None:
    """Turn a YAML ``heuristic`` entry into the callable ``heuristic(env)`` DirPG takes.

    Accepted forms:

    * ``None`` or a callable: returned as it is;
    * an import path, ``sb3_dirpg.envs.minigrid.MultiRoomBound`` or ``sb3_dirpg.envs.minigrid:MultiRoomBound``;
    * a one-key mapping from an import path to keyword arguments, as rl-zoo3 writes wrappers with arguments:
      ``{sb3_dirpg.envs.minigrid.MultiRoomBound: {door_reward: 30}}``;
    * any other string is a Python expression, evaluated like rl-zoo3's ``policy_kwargs`` strings with
      ``sb3_dirpg`` in scope: ``"sb3_dirpg.envs.minigrid.MultiRoomBound(gamma=0.99)"``.

    A class is instantiated with the keyword arguments, plus the algorithm's ``gamma`` when its constructor has a
    ``gamma`` parameter that was not given (a bound on the *discounted* return-to-go must use the training discount).
    A function with keyword arguments is bound to them with :func:`functools.partial`.

    :param spec: the entry's value
    :param gamma: the algorithm's discount, or None
    :return: the heuristic, or None
    """
    if spec is None or callable(spec):
        return spec
    if isinstance(spec, dict):
        if len(spec) != 1:
            raise ValueError(f"a heuristic mapping must have exactly one key, the import path; got {spec!r}")
        (path, kwargs), = spec.items()
        if not isinstance(path, str) or not isinstance(kwargs, (dict, type(None))):
            raise ValueError(f"expected {{import.path: {{keyword: value}}}} for the heuristic, got {spec!r}")
        return _build(import_object(path), dict(kwargs or {}), gamma, f"heuristic {path!r}")
    if isinstance(spec, str):
        if _is_import_path(spec):
            return _build(import_object(spec), {}, gamma, f"heuristic {spec!r}")
        value = _evaluate(spec, "heuristic")
        if not callable(value):
            raise ValueError(f"the heuristic {spec!r} evaluates to {value!r}, which is not callable")
        return value
    raise ValueError(f"cannot make a heuristic out of {spec!r}: give an import path, a mapping or an expression")


def resolve_policy_kwargs(spec: Any) -> dict[str, Any]:
    """Turn a YAML ``policy_kwargs`` entry into a dict.

    A string is evaluated as rl-zoo3 does, with ``MiniGridCNN`` and ``sb3_dirpg`` also in scope. In a mapping, string
    values of ``features_extractor_class``, ``optimizer_class`` and ``activation_fn`` that are import paths are
    imported.

    :param spec: the entry's value (a string, a mapping or None)
    :return: the keyword arguments of the policy
    """
    if spec is None:
        return {}
    value = _evaluate(spec, "policy_kwargs") if isinstance(spec, str) else spec
    if not isinstance(value, dict):
        raise ValueError(f"policy_kwargs must be a mapping, got {value!r}")
    out = dict(value)
    for key in ("features_extractor_class", "optimizer_class", "activation_fn"):
        if isinstance(out.get(key), str) and _is_import_path(out[key]):
            out[key] = import_object(out[key])
    return out


def refining_as_callback(hyperparams: dict[str, Any]) -> dict[str, Any]:
    """An entry of an earlier release that switches to refining with ``refine_from`` (and ``refine_settings``), with the
    switch as the callback it now is, :class:`~sb3_dirpg.dirpg.RefineOnSuccess` (with a FutureWarning).

    :param hyperparams: the entry
    :return: a new dict, or the entry itself when it has neither key
    """
    if "refine_from" not in hyperparams and "refine_settings" not in hyperparams:
        return hyperparams
    out = dict(hyperparams)
    rate, settings = out.pop("refine_from", None), dict(out.pop("refine_settings", None) or {})
    if rate is None:
        raise ValueError(f"the hyperparameters: refine_settings={settings} without refine_from switch nothing on: give "
                         "the callback sb3_dirpg.dirpg.RefineOnSuccess its success_rate and settings")  # fmt: skip
    if "refine_budget" in settings:  # the refining budget of the release before the stop rule
        settings["stop"] = {"success": {"refine": settings.pop("refine_budget")}}
    switch = {"sb3_dirpg.dirpg.RefineOnSuccess": {"success_rate": rate, **({"settings": settings} if settings else {})}}
    given = out.get("callback")
    out["callback"] = [*([] if given is None else given if isinstance(given, list) else [given]), switch]
    warnings.warn(f"the hyperparameters: refine_from and refine_settings are the callback {switch} now; write it under "
                  "callback:", FutureWarning, stacklevel=2)  # fmt: skip
    return out


def prepare_hyperparams(hyperparams: dict[str, Any]) -> dict[str, Any]:
    """The YAML-friendly values of an entry for one of our algorithms, as Python objects.

    ``policy_kwargs`` (see :func:`resolve_policy_kwargs`), a top-level ``net_arch``, ``abs_epsilon`` or ``astar_alpha`` (from a
    reloaded optuna trial, see :func:`~sb3_dirpg.integrations.zoo_samplers.apply_to_entry`) and ``heuristic`` (see
    :func:`resolve_heuristic`). The rest is left to rl-zoo3. The input is not modified (rl-zoo3 saves it to
    ``config.yml``).

    :param hyperparams: the entry, as read from the YAML file and overridden from the command line
    :return: a new dict
    """
    owner = "the hyperparameters"
    out = replace_legacy_flags(refining_as_callback(hyperparams), owner)
    out = replace_legacy_backend(replace_legacy_priority(out, owner), owner)
    dropped = {name: value for name, value in out.items() if name in DROPPED_SETTINGS}
    if dropped:
        raise ValueError(dropped_settings_message(dropped, "the hyperparameters"))
    if "policy_kwargs" in out:
        out["policy_kwargs"] = resolve_policy_kwargs(out["policy_kwargs"])
    out = apply_to_entry(out, out)
    if "heuristic" in out:
        gamma = out.get("gamma")
        out["heuristic"] = resolve_heuristic(out["heuristic"], None if gamma is None else float(gamma))
    return out


#: the keys of an entry that rl-zoo3 reads itself and does not pass to the algorithm's constructor
ZOO_ONLY_KEYS = ("policy", "n_timesteps", "n_envs", "normalize", "env_kwargs", "monitor_kwargs", "frame_stack",
                 "env_wrapper", "vec_env_wrapper", "callback")  # fmt: skip


def algorithm_kwargs(hyperparams: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments an entry gives the algorithm's constructor, as the bridge passes them: prepared by
    :func:`prepare_hyperparams`, without the keys only rl-zoo3 reads (:data:`ZOO_ONLY_KEYS`). The env side of the entry
    (``env_kwargs``, ``env_wrapper``, ``normalize``, ``n_envs``) is the caller's to build, and ``policy`` its first
    argument: ``DirPG(entry["policy"], env, **algorithm_kwargs(entry))``.

    :param hyperparams: the entry, as read from the YAML file
    :return: a new dict
    """
    return {key: value for key, value in prepare_hyperparams(hyperparams).items() if key not in ZOO_ONLY_KEYS}


def entry_callbacks(hyperparams: dict[str, Any]) -> list[BaseCallback]:
    """The callbacks an entry names under ``callback`` (as rl-zoo3 builds them), for a caller that builds the model
    from :func:`algorithm_kwargs` and passes them to ``learn``.

    :param hyperparams: the entry, as read from the YAML file
    :return: the callbacks, new objects
    """
    return rl_zoo3.utils.get_callback_list(prepare_hyperparams(hyperparams))


# -- callbacks that count interactions -------------------------------------------------------------------------


class TrialEvalByInteractions(InteractionSchedule, TrialEvalCallback, EvalWithMasks):
    """rl-zoo3's ``TrialEvalCallback`` (evaluations of ``--optimize``) whose ``eval_freq`` counts interactions and
    whose evaluations use action masks when the env has them."""

    frequency_attribute = "eval_freq"


@contextmanager
def _replaced(module: Any, **names: Any) -> Iterator[None]:
    """Temporarily replace module attributes.

    :param module: the module
    :param names: attribute names and their temporary values
    """
    saved = {name: getattr(module, name) for name in names}
    for name, value in names.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)


class DirPGExperimentManager(ExperimentManager):
    """rl-zoo3's experiment manager, with our preprocessing of hyperparameters and interaction-counted callbacks
    for ``dirpg``, ``reinforce`` and ``cem`` (other algorithms behave exactly as in rl-zoo3)."""

    @property
    def _ours(self) -> bool:
        """:return: whether the algorithm is one of ours"""
        return self.algo in ZOO_ALGOS

    def _preprocess_hyperparams(
        self, hyperparams: dict[str, Any]
    ) -> tuple[dict[str, Any], Callable | None, list[BaseCallback], Callable | None]:
        """:param hyperparams: the entry (for our algorithms first passed through :func:`prepare_hyperparams`)
        :return: rl-zoo3's preprocessed hyperparameters, env wrapper, callbacks and VecEnv wrapper"""
        if self._ours:
            hyperparams = prepare_hyperparams(hyperparams)
        return super()._preprocess_hyperparams(hyperparams)

    def read_hyperparameters(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """rl-zoo3's reading of the entry; for ``dirpg`` on a MiniGrid id
        (:func:`~sb3_dirpg.envs.minigrid.setting.is_minigrid_id`: ``MiniGrid-*``, or a user's own ``MiniGridEnv`` under
        any id) that the file has no entry for, or an entry without a ``policy`` (only ``n_timesteps``, say), the entry
        is the one MiniGrid setting
        (:func:`~sb3_dirpg.envs.minigrid.setting.completed_entry`), written to a file of its own that rl-zoo3 then
        reads as it reads any (so ``-params``, ``--env-kwargs`` and the saved ``config.yml`` work as usual).

        :return: rl-zoo3's hyperparameters and saved hyperparameters"""
        env_id, entries = self.env_name.gym_id, _yaml_entries(self.config)
        own = None if entries is None else entries.get(env_id)
        if self.algo == "dirpg" and is_minigrid_id(env_id) and entries is not None and "policy" not in (own or {}):
            print(f"{env_id}: {'no entry' if own is None else 'an entry without a policy'} in {self.config}; completed "
                  "by the one MiniGrid setting of sb3_dirpg.envs.minigrid.setting")  # fmt: skip
            for note in minigrid_setting(env_id, self.env_kwargs).notes:
                print(f"  {note}")
            with tempfile.NamedTemporaryFile("w", suffix=".yml", prefix="dirpg-minigrid-", delete=False) as file:
                yaml.safe_dump({env_id: completed_entry(env_id, own, self.env_kwargs)}, file)
            self.config = file.name
        return super().read_hyperparameters()

    def create_callbacks(self) -> None:
        """rl-zoo3's callbacks; for our algorithms their frequencies count environment interactions."""
        if not self._ours:
            return super().create_callbacks()
        replacements = dict(
            EvalCallback=EvalByInteractions,
            CheckpointCallback=CheckpointByInteractions,
            ProgressBarCallback=InteractionProgressBar,
        )
        with _replaced(rl_zoo3.exp_manager, **replacements):
            return super().create_callbacks()

    def hyperparameters_optimization(self) -> None:
        """rl-zoo3's optimisation; for our algorithms the sampler sees the entry and evaluations count interactions."""
        if not self._ours:
            return super().hyperparameters_optimization()
        samplers = rl_zoo3.hyperparams_opt.HYPERPARAMS_SAMPLER
        plain = samplers[self.algo]
        samplers[self.algo] = partial(SAMPLERS[self.algo], defaults=self._hyperparams)
        try:
            with _replaced(rl_zoo3.exp_manager, TrialEvalCallback=TrialEvalByInteractions):
                return super().hyperparameters_optimization()
        finally:
            samplers[self.algo] = plain


# -- enjoy with action masks -----------------------------------------------------------------------------------


class MaskedPredictions:
    """A loaded model whose ``predict`` passes the action masks of the env ``enjoy`` plays in, when it has them
    (every other attribute is the model's).

    :param model: the loaded model
    :param player: where the env ``enjoy`` created is found
    """

    def __init__(self, model: BaseAlgorithm, player: EnjoyWithMasks) -> None:
        self.model = model
        self.player = player

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = False,
    ) -> tuple[Any, Any]:
        """:param observation: the VecEnv's observations
        :param state: recurrent state (unused by our policies)
        :param episode_start: episode starts
        :param deterministic: take the most likely legal action
        :return: the actions and the state"""
        env = self.player.env
        masks = get_action_masks(env) if env is not None and is_masking_supported(env) else None
        return self.model.predict(observation, state, episode_start, deterministic, action_masks=masks)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)


class _MaskedLoader:
    """Stands for one of our algorithm classes in ``rl_zoo3.enjoy``: ``load`` wraps the model in
    :class:`MaskedPredictions`.

    :param algo_class: the algorithm class
    :param player: where the env ``enjoy`` created is found
    """

    def __init__(self, algo_class: type[BaseAlgorithm], player: EnjoyWithMasks) -> None:
        self.algo_class = algo_class
        self.player = player

    def load(self, *args: Any, **kwargs: Any) -> MaskedPredictions:
        """:param args: arguments of the class's ``load``
        :param kwargs: keyword arguments of the class's ``load``
        :return: the loaded model, predicting with the env's masks"""
        return MaskedPredictions(self.algo_class.load(*args, **kwargs), self.player)


class EnjoyWithMasks:
    """What ``rl_zoo3.enjoy`` is run with for our algorithms: its ``create_test_env`` is recorded, and its algorithm
    table loads our models as :class:`MaskedPredictions`."""

    def __init__(self) -> None:
        self.env: Any = None

    def create_test_env(self, *args: Any, **kwargs: Any) -> Any:
        """rl-zoo3's ``create_test_env``, remembering the env.

        :param args: its arguments
        :param kwargs: its keyword arguments
        :return: the env"""
        self.env = rl_zoo3.utils.create_test_env(*args, **kwargs)
        return self.env

    def algos(self) -> dict[str, Any]:
        """:return: rl-zoo3's algorithm table with the ``load`` of our algorithms and of ``ppo_mask`` predicting with
        masks"""
        masked = {**ZOO_ALGOS, **{name: algo_class for name, (algo_class, _) in MASKED_ZOO_ALGOS.items()}}
        return {**rl_zoo3.utils.ALGOS, **{name: _MaskedLoader(cls, self) for name, cls in masked.items()}}


# -- command line ----------------------------------------------------------------------------------------------


def _with_defaults(args: list[str], script: str) -> list[str]:
    """Add ``--algo dirpg`` when no algorithm is named and, for ``train`` with one of our algorithms or ``ppo_mask``,
    its default ``--conf-file`` (:func:`default_conf_file`).

    :param args: the script's arguments
    :param script: ``train`` or ``enjoy``
    :return: the arguments to hand to rl-zoo3
    """
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--algo", default=None)
    parser.add_argument("-conf", "--conf-file", default=None)
    known, _ = parser.parse_known_args(args)
    out = list(args)
    algo = known.algo
    if algo is None:
        algo = "dirpg"
        out += ["--algo", algo]
    if script == "train" and (algo in ZOO_ALGOS or algo in MASKED_ZOO_ALGOS) and known.conf_file is None:
        out += ["--conf-file", str(default_conf_file(algo))]
    return out


@contextmanager
def _argv(argv: list[str]) -> Iterator[None]:
    """Temporarily replace ``sys.argv`` (rl-zoo3's scripts parse it).

    :param argv: the new ``sys.argv``
    """
    saved = sys.argv
    sys.argv = argv
    try:
        yield
    finally:
        sys.argv = saved


USAGE = f"""usage: python -m sb3_dirpg.integrations.zoo {{{",".join(RL_ZOO_SCRIPTS)}}} [rl-zoo3 arguments]

rl-zoo3 with the algorithms {", ".join(ZOO_ALGOS)} registered ({"/".join(ZOO_ALGOS)} use zoo_hyperparams/ALGO.yml
by default and --algo defaults to dirpg), and sb3-contrib's MaskablePPO as ppo_mask (rl-zoo3's ppo.yml by default).
`python -m sb3_dirpg.integrations.zoo train --help` lists rl-zoo3's flags.
rl-zoo3's plotting scripts do not check algorithm names: run them with `python -m rl_zoo3.cli`.
"""


def main(argv: list[str] | None = None) -> None:
    """Run an rl-zoo3 script with our algorithms registered.

    :param argv: ``[script, *arguments]``; None reads ``sys.argv[1:]``
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return
    script, args = argv[0], argv[1:]
    if script not in RL_ZOO_SCRIPTS:
        raise SystemExit(f"unknown script {script!r}\n{USAGE}")
    register_algorithms()
    args = _with_defaults(args, script)
    replaced = _replaced(rl_zoo3.train, ExperimentManager=DirPGExperimentManager)
    with _argv([f"sb3_dirpg.integrations.zoo {script}", *args]), replaced:
        if script == "train":
            rl_zoo3.train.train()
        else:
            player = EnjoyWithMasks()
            with _replaced(rl_zoo3.enjoy, ALGOS=player.algos(), create_test_env=player.create_test_env):
                rl_zoo3.enjoy.enjoy()


if __name__ == "__main__":
    main()
