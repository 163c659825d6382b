"""The rl-zoo3 bridge: ``python -m sb3_dirpg.integrations.zoo train/enjoy``, ``--optimize``, every entry of the zoo files,
and the conversions of YAML-friendly hyperparameters."""

from __future__ import annotations

import inspect
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import optuna
import pytest
import rl_zoo3
import rl_zoo3.enjoy
import torch
import yaml
from sb3_contrib import MaskablePPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.monitor import load_results
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from experiments.held_out import build_env
from sb3_dirpg import DirPG, MiniGridCNN
from sb3_dirpg.common.callbacks import EvalByInteractions
from sb3_dirpg.envs.minigrid import MiniGridBound, MiniGridProgressBound, MultiRoomBound
from sb3_dirpg.envs.minigrid.setting import completed_entry
from sb3_dirpg.integrations.zoo import (
    HYPERPARAMS_DIR,
    ZOO_ALGOS,
    EnjoyWithMasks,
    _argv,
    _MaskedLoader,
    _with_defaults,
    algorithm_kwargs,
    main,
    prepare_hyperparams,
    register_algorithms,
    resolve_heuristic,
    resolve_policy_kwargs,
)
from sb3_dirpg.integrations.zoo_samplers import SAMPLERS, apply_to_entry
from sb3_dirpg.search import AStarPriority
from sb3_dirpg.search.stopping import stop_rule

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[1]
QUIET = ["--seed", "0", "--num-threads", "1", "--verbose", "0"]


def _run_dir(folder: Path, algo: str, env_id: str, run: int = 1) -> Path:
    return folder / algo / f"{env_id.replace('/', '-')}_{run}"


def _zoo_entries() -> list[tuple[str, str]]:
    entries = []
    for algo in ZOO_ALGOS:
        for env_id in yaml.safe_load((HYPERPARAMS_DIR / f"{algo}.yml").read_text()):
            entries.append((algo, env_id))
    return entries


# -- end to end ------------------------------------------------------------------------------------------------


def test_cli_train_writes_model_and_tensorboard_then_enjoy_loads_it(tmp_path) -> None:
    logs, runs = tmp_path / "logs", tmp_path / "runs"
    train = [sys.executable, "-m", "sb3_dirpg.integrations.zoo", "train", "--env", "CartPole-v1", "-n", "600", "-f", str(logs),
             "-tb", str(runs), "--eval-freq", "300", "--eval-episodes", "2", *QUIET]  # fmt: skip
    out = subprocess.run(train, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir = _run_dir(logs, "dirpg", "CartPole-v1")
    assert (run_dir / "CartPole-v1.zip").is_file()
    assert (run_dir / "best_model.zip").is_file()
    evaluations = np.load(run_dir / "evaluations.npz")["timesteps"]
    # --eval-freq counts interactions: one evaluation in the lockstep iteration (at most 8 interactions, one per episode
    # of the batch) that crosses each multiple of 300, up to the end of the last batch of searches
    assert len(evaluations) >= 2 and (evaluations // 300 == np.arange(1, len(evaluations) + 1)).all()
    assert (evaluations % 300 < 8).all()
    config = yaml.unsafe_load((run_dir / "CartPole-v1" / "config.yml").read_text())
    assert dict(config)["search_budget"] == 200  # read from zoo_hyperparams/dirpg.yml by default
    assert len(load_results(str(run_dir))) > 0  # the a_opt episodes reach the monitor files rl-zoo3's plot_train reads
    (event_file,) = runs.glob("CartPole-v1/DirPG_1/events.out.tfevents.*")
    events = EventAccumulator(str(event_file))
    events.Reload()
    assert {"search/improved_fraction", "search/d_opt", "search/d_dir", "rollout/ep_rew_mean"} <= set(events.Tags()["scalars"])
    assert "search/budget_spent" in events.Tags()["histograms"]

    enjoy = [sys.executable, "-m", "sb3_dirpg.integrations.zoo", "enjoy", "--env", "CartPole-v1", "-f", str(logs),
             "--no-render", "-n", "300", "--deterministic"]  # fmt: skip
    out = subprocess.run(enjoy, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"Loading {run_dir / 'CartPole-v1.zip'}" in out.stdout
    assert "Episode Reward" in out.stdout


def test_checkpoints_continue_training_and_enjoy_variants(tmp_path) -> None:
    logs = tmp_path / "logs"
    common = ["--env", "sb3_dirpg/DeepSeaRisk-v0", "-f", str(logs), *QUIET]
    main(["train", *common, "-n", "1000", "--save-freq", "450", "--eval-freq", "500", "--eval-episodes", "2"])
    run_dir = _run_dir(logs, "dirpg", "sb3_dirpg/DeepSeaRisk-v0")
    checkpoints = sorted(int(p.stem.split("_")[2]) for p in run_dir.glob("rl_model_*_steps.zip"))
    # a batch of 8 DeepSea episodes makes at most 8 interactions per iteration and 240 in all: 2 checkpoints
    assert len(checkpoints) == 2 and 450 <= checkpoints[0] < 460 and 900 <= checkpoints[1] < 910
    main(["enjoy", "--env", "sb3_dirpg/DeepSeaRisk-v0", "-f", str(logs), "--no-render", "-n", "20", "--verbose", "0",
          "--load-checkpoint", str(checkpoints[0])])  # fmt: skip
    main(["enjoy", "--env", "sb3_dirpg/DeepSeaRisk-v0", "-f", str(logs), "--no-render", "-n", "20", "--verbose", "0",
          "--load-best"])  # fmt: skip

    main(["train", *common, "-n", "300", "--eval-freq", "-1", "-i", str(run_dir / "sb3_dirpg-DeepSeaRisk-v0.zip")])
    continued = DirPG.load(_run_dir(logs, "dirpg", "sb3_dirpg/DeepSeaRisk-v0", run=2) / "sb3_dirpg-DeepSeaRisk-v0.zip")
    assert continued.num_timesteps >= 300 and continued.max_episode_steps == 4


def test_progress_bar_counts_interactions(tmp_path) -> None:
    pytest.importorskip("tqdm")
    pytest.importorskip("rich")
    main(["train", "--env", "CartPole-v1", "-n", "400", "-f", str(tmp_path), "--eval-freq", "-1", "-P", *QUIET])
    assert (_run_dir(tmp_path, "dirpg", "CartPole-v1") / "CartPole-v1.zip").is_file()


def test_optimize_two_trials_then_reload_a_trial(tmp_path) -> None:
    storage = tmp_path / "study.log"
    main(["train", "--env", "sb3_dirpg/SpanningTreeBandit-v0", "--optimize", "--n-trials", "2", "-n", "600",
          "--n-evaluations", "2", "--eval-episodes", "2", "--n-startup-trials", "2", "--pruner", "none",
          "--no-optim-plots", "--storage", str(storage), "--study-name", "zoo-test", "-f", str(tmp_path), *QUIET])  # fmt: skip
    study = optuna.load_study(
        study_name="zoo-test", storage=optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(storage)))
    )
    assert len(study.trials) == 2
    finished = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert finished and all(np.isfinite(t.value) for t in finished)  # the evaluations ran (they count interactions)
    assert set(study.trials[0].params) == {"abs_epsilon", "search_budget", "learning_rate", "stop", "net_arch"}
    reports = list((tmp_path / "dirpg").glob("report_*.csv"))
    assert reports

    main(["train", "--env", "sb3_dirpg/SpanningTreeBandit-v0", "-n", "300", "--eval-freq", "-1", "--storage",
          str(storage), "--study-name", "zoo-test", "--trial-id", "1", "-f", str(tmp_path / "reload"), *QUIET])  # fmt: skip
    model = DirPG.load(_run_dir(tmp_path / "reload", "dirpg", "sb3_dirpg/SpanningTreeBandit-v0")
                       / "sb3_dirpg-SpanningTreeBandit-v0.zip")  # fmt: skip
    params = study.trials[1].params
    assert model.search_budget == params["search_budget"]
    assert model.epsilon == pytest.approx(params["abs_epsilon"])


@pytest.mark.parametrize(("algo", "env_id"), _zoo_entries(), ids=lambda v: str(v).replace("/", "-"))
def test_every_zoo_entry_loads_and_trains(tmp_path, algo: str, env_id: str) -> None:
    main(["train", "--algo", algo, "--env", env_id, "-n", "300", "--eval-freq", "-1", "-f", str(tmp_path), *QUIET])
    name = env_id.replace("/", "-")
    entry = yaml.load((REPO / "zoo_hyperparams" / f"{algo}.yml").read_text(), Loader=yaml.UnsafeLoader)[env_id]
    if algo == "dirpg" and env_id.startswith("MiniGrid"):  # an entry without a policy is the one MiniGrid setting's
        entry = completed_entry(env_id, entry)
    model = ZOO_ALGOS[algo].load(_run_dir(tmp_path, algo, env_id) / f"{name}.zip")
    assert model.num_timesteps >= 300
    if env_id.startswith("MiniGrid"):
        assert isinstance(model.policy.features_extractor, MiniGridCNN)
        assert model.policy.net_arch == [] and model.policy.normalize_images is False
        gamma = float(entry.get("gamma", 0.999))  # the entries of issue 44 (refining) discount with 0.99
        assert model.gamma == gamma
        if algo == "dirpg":  # the entry's bound, with the entry's gamma and the reward values of the env it searches
            named = [cls for cls in (MiniGridProgressBound, MiniGridBound) if cls.__name__ in str(entry["heuristic"])]
            bound = named[0] if named else MultiRoomBound
            assert type(model.heuristic) is bound and model.heuristic.gamma == gamma
            env = build_env(env_id, entry.get("env_kwargs"), entry.get("env_wrapper"))
            assert model.heuristic.__getstate__() == bound.for_env(env, gamma).__getstate__()
            assert model.priority.name == "astar" and model.search_budget == entry["search_budget"]
            assert model.stop == stop_rule(entry.get("stop", "improvement"))
        assert ("mission" in model.observation_space.spaces) == ("MissionObs" in str(entry["env_wrapper"]))


# -- pieces ----------------------------------------------------------------------------------------------------


def test_algorithms_are_registered_in_rl_zoo3() -> None:
    import rl_zoo3
    from rl_zoo3.hyperparams_opt import HYPERPARAMS_CONVERTER, HYPERPARAMS_SAMPLER

    register_algorithms()
    for algo, cls in ZOO_ALGOS.items():
        assert rl_zoo3.ALGOS[algo] is cls
        assert algo in HYPERPARAMS_SAMPLER and algo in HYPERPARAMS_CONVERTER


def test_default_algo_and_conf_file() -> None:
    args = _with_defaults(["--env", "CartPole-v1"], "train")
    assert args[-4:] == ["--algo", "dirpg", "--conf-file", str(REPO / "sb3_dirpg" / "zoo_hyperparams" / "dirpg.yml")]
    assert _with_defaults(["--algo=cem"], "train")[-1].endswith("cem.yml")
    assert _with_defaults(["--algo", "cem", "-conf", "my.yml"], "train") == ["--algo", "cem", "-conf", "my.yml"]
    assert _with_defaults(["--algo", "ppo"], "train") == ["--algo", "ppo"]  # rl-zoo3's own files for its algorithms
    assert _with_defaults([], "enjoy") == ["--algo", "dirpg"]


def test_hyperparameter_files_ship_in_the_package_and_are_found_from_any_folder(tmp_path) -> None:
    assert (REPO / "zoo_hyperparams").resolve() == (REPO / "sb3_dirpg" / "zoo_hyperparams").resolve()  # the top-level link
    code = "from sb3_dirpg.integrations.zoo import default_conf_file; print(default_conf_file('dirpg'))"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(REPO)})  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()).is_file()
    # a regular (non-editable) install gets them: they are in the wheel, built from a copy of the sources (no build
    # output is left in the checkout)
    source = tmp_path / "source"
    shutil.copytree(REPO / "sb3_dirpg", source / "sb3_dirpg", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(source)]
    done = subprocess.run(build, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = tmp_path.glob("sb3_dirpg-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"sb3_dirpg/zoo_hyperparams/{algo}.yml" for algo in ZOO_ALGOS} <= names


def _bound(env, scale: float = 1.0) -> float:
    return scale


@pytest.mark.parametrize(
    ("spec", "check"),
    [
        ("sb3_dirpg.envs.minigrid.MultiRoomBound", lambda h: isinstance(h, MultiRoomBound) and h.gamma == 0.99),
        ("sb3_dirpg.envs.minigrid:MultiRoomBound", lambda h: isinstance(h, MultiRoomBound) and h.gamma == 0.99),
        ({"sb3_dirpg.envs.minigrid.MultiRoomBound": {"door_reward": 10, "gamma": 0.5}},
         lambda h: h.door_reward == 10 and h.gamma == 0.5),
        ("sb3_dirpg.envs.minigrid.MultiRoomBound(goal_reward=7)", lambda h: h.goal_reward == 7 and h.gamma == 1.0),
        ({"tests.test_zoo._bound": {"scale": 3.0}}, lambda h: h(None) == 3.0),
        ("tests.test_zoo._bound", lambda h: h(None) == 1.0),
        (None, lambda h: h is None),
    ],
)
def test_heuristic_specs(spec, check) -> None:
    assert check(resolve_heuristic(spec, gamma=0.99))


@pytest.mark.parametrize(
    ("spec", "match"),
    [("no_such_module.Bound", "cannot import"), ("sb3_dirpg.envs.minigrid.Nope", "has no attribute"),
     ({"a.B": {}, "c.D": {}}, "exactly one key"), ("1 + 1", "not callable"), (3, "cannot make a heuristic")],
)  # fmt: skip
def test_bad_heuristic_specs(spec, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        resolve_heuristic(spec)


def test_policy_kwargs_and_prepare_hyperparams() -> None:
    from_string = resolve_policy_kwargs("dict(features_extractor_class=MiniGridCNN, net_arch=[], activation_fn=nn.ReLU)")
    assert from_string["features_extractor_class"] is MiniGridCNN and from_string["activation_fn"] is torch.nn.ReLU
    from_mapping = resolve_policy_kwargs({"features_extractor_class": "sb3_dirpg.envs.minigrid.MiniGridCNN"})
    assert from_mapping["features_extractor_class"] is MiniGridCNN
    raw = {"policy_kwargs": "dict(net_arch=[8])", "net_arch": [4], "abs_epsilon": 0.5, "epsilon": -1.0,
           "heuristic": {"sb3_dirpg.envs.minigrid.MultiRoomBound": None}, "gamma": 0.9}  # fmt: skip
    prepared = prepare_hyperparams(raw)
    assert prepared["policy_kwargs"] == {"net_arch": [4]} and "net_arch" not in prepared
    assert prepared["epsilon"] == -0.5  # the sampled magnitude keeps the entry's (risk-averse) sign
    assert prepared["heuristic"].gamma == 0.9
    assert raw["policy_kwargs"] == "dict(net_arch=[8])"  # rl-zoo3 saves the raw entry: it is left alone


@pytest.mark.parametrize("algo", sorted(ZOO_ALGOS))
def test_every_shipped_entry_gives_arguments_its_constructor_takes(algo: str) -> None:
    """``algorithm_kwargs`` of each shipped entry names only parameters of the algorithm's constructor (what rl-zoo3
    reads itself is left out), so ``cls(entry["policy"], env, **algorithm_kwargs(entry))`` builds it."""
    parameters: set[str] = set()
    for cls in ZOO_ALGOS[algo].__mro__:  # a constructor with **kwargs passes them on to its base's
        signature = inspect.signature(cls.__init__).parameters.values()
        parameters |= {p.name for p in signature if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
        if all(p.kind != p.VAR_KEYWORD for p in signature):
            break
    with open(HYPERPARAMS_DIR / f"{algo}.yml") as file:
        entries = yaml.load(file, Loader=yaml.UnsafeLoader)
    for env_id, entry in entries.items():
        kwargs = algorithm_kwargs(entry)
        assert set(kwargs) <= parameters - {"policy", "env"}, (env_id, set(kwargs) - parameters)
        assert "n_timesteps" in entry and "n_timesteps" not in kwargs


def test_samplers_keep_the_entry_extractor_and_sample_alpha_only_with_astar() -> None:
    entry = {"policy_kwargs": {"features_extractor_class": MiniGridCNN, "net_arch": []}, "priority": "astar",
             "epsilon": 1.0}  # fmt: skip
    trial = optuna.trial.FixedTrial(
        {"abs_epsilon": 2.0, "search_budget": 300, "learning_rate": 1e-3, "stop": "budget", "net_arch": "tiny",
         "astar_alpha": 0.3}  # fmt: skip
    )
    params = SAMPLERS["dirpg"](trial, 0, 1, {}, defaults=entry)
    assert params["policy_kwargs"] == {"features_extractor_class": MiniGridCNN, "net_arch": [64]}
    assert params["priority"] == AStarPriority(alpha=0.3) and params["epsilon"] == 2.0 and params["search_budget"] == 300
    without_astar = SAMPLERS["dirpg"](trial, 0, 1, {}, defaults={})
    assert "priority" not in without_astar and without_astar["policy_kwargs"] == {"net_arch": [64]}
    rollout_trial = optuna.trial.FixedTrial(
        {"learning_rate": 1e-3, "n_rollouts": 16, "variant": "action", "n_elite": 2, "net_arch": "none"}
    )
    assert SAMPLERS["reinforce"](rollout_trial, 0, 1, {})["variant"] == "action"
    assert SAMPLERS["cem"](rollout_trial, 0, 1, {})["policy_kwargs"] == {"net_arch": []}
    assert apply_to_entry({"abs_epsilon": 3.0}, {}) == {"epsilon": 3.0}


def test_eval_callback_counts_interactions(tmp_path) -> None:
    env = make_vec_env("CartPole-v1", n_envs=2)
    model = DirPG("MlpPolicy", env, search_budget=30, batch_episodes=4, seed=0)
    # rl-zoo3 passes eval_freq // n_envs: 250 // 2 means an evaluation every 250 interactions
    callback = EvalByInteractions(make_vec_env("CartPole-v1"), eval_freq=125, n_eval_episodes=1, log_path=str(tmp_path))
    model.learn(1_000, callback=callback)
    steps = np.asarray(callback.evaluations_timesteps)
    assert len(steps) == model.num_timesteps // 250
    assert np.all(np.diff(steps) >= 250 - 4) and steps[0] >= 250


def test_unknown_script_and_help(capsys) -> None:
    main(["--help"])
    assert "train" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="unknown script"):
        main(["plot_train"])



# -- rl-zoo3 parity: monitor files and enjoy with masks ---------------------------------------------------------


@pytest.mark.parametrize("algo", ["dirpg", "reinforce", "cem"])
def test_episodes_are_written_to_the_monitor_files(tmp_path, algo: str) -> None:
    kwargs = {"dirpg": dict(search_budget=20), "reinforce": dict(n_rollouts=2), "cem": dict(n_rollouts=4, n_elite=2)}[algo]
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0, monitor_dir=str(tmp_path))
    model = ZOO_ALGOS[algo]("MlpPolicy", env, seed=0, batch_episodes=4, **kwargs)
    model.learn(1_000)
    rows = load_results(str(tmp_path))  # what rl-zoo3's plot_train reads
    assert 0 < len(rows) == model._episode_num <= model.ep_info_buffer.maxlen
    assert sorted(rows["r"]) == sorted(ep["r"] for ep in model.ep_info_buffer)
    assert (rows["l"] > 0).all() and list(rows["r"]) == list(rows["l"])  # CartPole: reward 1 per step
    assert len(list(tmp_path.glob("*.monitor.csv"))) == 2  # the episodes go round-robin to both sub-envs' files


def test_enjoy_plays_with_the_env_action_masks(tmp_path, capsys) -> None:
    from tests.helpers import MaskableChainEnv

    env_id = "MaskableChainTest-v0"
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=MaskableChainEnv, max_episode_steps=4)
    model = DirPG("MlpPolicy", env_id, search_budget=10, seed=0)
    with torch.no_grad():  # the greedy action is 2, which is illegal at even steps: the env raises if it is played
        model.policy.action_net.bias.copy_(torch.tensor([0.0, 0.0, 50.0]))
    run_dir = _run_dir(tmp_path, "dirpg", env_id)
    run_dir.mkdir(parents=True)
    model.save(run_dir / f"{env_id}.zip")
    enjoy = ["enjoy", "--env", env_id, "-f", str(tmp_path), "--no-render", "-n", "40", "--deterministic"]
    main(enjoy)  # legal actions only: runs through
    assert "Episode Reward" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="illegal action 2"):  # rl-zoo3's own enjoy, without masks, plays action 2
        with _argv(["enjoy", "--algo", "dirpg", *enjoy[1:]]):
            register_algorithms()
            rl_zoo3.enjoy.enjoy()


MASKED_WRAPPERS = ["sb3_dirpg.envs.FastObservation", {"sb3_dirpg.envs.MiniGridNoOpMask": {"rules": ["no_undo"]}},
                   "sb3_dirpg.envs.DirectionImageObs"]  # fmt: skip
# rl-zoo3 evaluates a policy_kwargs string in its own namespace, which lacks MiniGridCNN
CNN_KWARGS = "dict(features_extractor_class=__import__('sb3_dirpg').MiniGridCNN, net_arch=[], normalize_images=False)"


@pytest.mark.parametrize("masked", [True, False])
def test_ppo_mask_trains_rl_zoo3s_ppo_entry_with_the_envs_masks(tmp_path, masked: bool) -> None:
    """``ppo_mask`` is sb3-contrib's MaskablePPO with rl-zoo3's PPO entry (its ``ppo.yml`` by default); it learns with
    the env's ``action_masks()`` and refuses an env without them, and ``enjoy`` loads it to predict with the masks."""
    wrappers = MASKED_WRAPPERS if masked else [MASKED_WRAPPERS[0], MASKED_WRAPPERS[2]]
    args = ["train", "--algo", "ppo_mask", "--env", "MiniGrid-DoorKey-5x5-v0", "--gym-packages", "minigrid", "-n", "128",
            "--eval-freq", "-1", "-f", str(tmp_path), *QUIET, "-params", "n_envs:2", "n_steps:64", "batch_size:64",
            f"env_wrapper:{wrappers!r}", "policy:'MultiInputPolicy'", "normalize:False",
            f"policy_kwargs:{CNN_KWARGS!r}"]  # fmt: skip
    if not masked:
        with pytest.raises(ValueError, match="does not support action masking"):
            main(args)
        return
    main(args)
    model = MaskablePPO.load(_run_dir(tmp_path, "ppo_mask", "MiniGrid-DoorKey-5x5-v0") / "MiniGrid-DoorKey-5x5-v0.zip")
    assert type(model) is MaskablePPO and model.num_timesteps >= 128
    zoo_entry = yaml.load(Path(rl_zoo3.__file__).with_name("hyperparams").joinpath("ppo.yml").read_text(),
                          Loader=yaml.UnsafeLoader)["MiniGrid-DoorKey-5x5-v0"]  # fmt: skip
    assert model.gamma == zoo_entry["gamma"] and model.ent_coef == zoo_entry["ent_coef"]  # rl-zoo3's PPO settings
    assert isinstance(EnjoyWithMasks().algos()["ppo_mask"], _MaskedLoader)
