"""MultiRoom-N6, the paper's flagship task: the paper's search must complete trajectories with an untrained policy, stop
on success, and the learning-at-scale experiment must run, checkpoint and resume (tiny budgets here); its greedy
evaluation, shared with the paper's figure 3 (``--figure``), counts the maps where the agent reaches the goal."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import yaml
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from experiments import multiroom, multiroom_figure, multiroom_setup
from sb3_dirpg import DirPG, MiniGridCNN
from sb3_dirpg.baselines import Reinforce
from sb3_dirpg.envs import make_minigrid_env
from sb3_dirpg.envs.minigrid import MiniGridProgressBound, MultiRoomBound
from sb3_dirpg.integrations.zoo import HYPERPARAMS_DIR, prepare_hyperparams

pytestmark = pytest.mark.integration

N6 = "MiniGrid-MultiRoom-N6-v0"


def paper_n6(bound: dict[str, Any] | None = None, **overrides: Any) -> DirPG:
    """DirPG with the paper's N6 setting as ``experiments.multiroom`` runs it (``dirpg-lookahead16``, the N6 entry of
    ``zoo_hyperparams/dirpg.yml`` until N6 took the one MiniGrid setting), untrained, seed 0.

    :param bound: ``MultiRoomBound``'s arguments in place of the setting's
    :param overrides: DirPG's arguments in place of the setting's
    :return: the model"""
    algo, kwargs, setting_bound = multiroom.METHODS["dirpg-lookahead16"]
    return multiroom_setup.make_model((algo, {**kwargs, **overrides}, setting_bound if bound is None else bound), seed=0)


def test_paper_n6_search_completes_trajectories_and_improves() -> None:
    """With an untrained policy, the paper's setting completes several trajectories per map and improves on a_opt on
    some maps (the bound that drops terms beyond the step limit completed one, a_opt, and never updated)."""
    model = paper_n6()
    result = model.search(list(range(100, 108)))
    trajectories = [ep.trajectories for ep in result.episodes]
    assert np.mean(trajectories) >= 2, trajectories
    assert any(ep.improved for ep in result.episodes)
    assert all(ep.return_dir >= ep.return_opt or ep.d_dir > ep.d_opt for ep in result.episodes)


def test_step_limited_bound_starves_the_weighted_priority() -> None:
    """The measured failure this setting avoids: the same search with the step-limited bound and best-first order
    finishes no trajectory besides a_opt on the same maps."""
    model = paper_n6(bound={"step_limit": True})
    result = model.search(list(range(100, 104)))
    assert [ep.trajectories for ep in result.episodes] == [1, 1, 1, 1]


def test_stop_on_success_spends_less_than_the_budget_on_easy_maps() -> None:
    """On Empty-5x5 a random policy often reaches the goal: those searches end there, and learn() counts only the
    interactions made."""
    venv = make_vec_env(lambda: make_minigrid_env("MiniGrid-Empty-5x5-v0", max_steps=40), n_envs=1, vec_env_cls=DummyVecEnv)
    policy_kwargs = dict(features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False)
    model = DirPG("MultiInputPolicy", venv, search_budget=500, priority={"astar": {"alpha": 0.2, "depth_first": True}},
                  gamma=0.999, heuristic=MultiRoomBound(0.999), stop="success", batch_episodes=8, seed=0,
                  policy_kwargs=policy_kwargs, device="cpu")  # fmt: skip
    result = model.search(list(range(8)))
    ended = [ep for ep in result.episodes if ep.success_dir]
    assert ended and all(ep.interactions < ep.length_opt + 500 for ep in ended)
    assert all(ep.trajectories == 1 for ep in result.episodes if ep.success_opt)
    model.learn(1)  # one batch of 8 maps: had every search spent its budget, that alone is 8 * 500 interactions
    assert 0 < model.num_timesteps < 8 * 500
    assert len(model.ep_success_buffer) == 8  # a_opt's success feeds rollout/success_rate


def test_reinforce_records_the_success_of_its_rollouts() -> None:
    venv = make_vec_env(lambda: make_minigrid_env("MiniGrid-Empty-5x5-v0", max_steps=40), n_envs=1, vec_env_cls=DummyVecEnv)
    policy_kwargs = dict(features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False)
    model = Reinforce("MultiInputPolicy", venv, n_rollouts=10, batch_episodes=2, seed=0, policy_kwargs=policy_kwargs,
                      device="cpu")  # fmt: skip
    model.learn(1)
    assert len(model.ep_success_buffer) == 20 and 0 < np.mean(model.ep_success_buffer) < 1
    cartpole = Reinforce("MlpPolicy", "CartPole-v1", n_rollouts=2, batch_episodes=1, seed=0, device="cpu")
    cartpole.learn(1)
    assert len(cartpole.ep_success_buffer) == 0  # CartPole reports no is_success: no success rate is made up


def test_stop_on_success_warns_when_the_env_never_reports_success() -> None:
    model = DirPG("MlpPolicy", "CartPole-v1", search_budget=20, stop="success", batch_episodes=2, seed=0, device="cpu")
    with pytest.warns(UserWarning, match="is_success"):
        model.learn(200)


def test_stop_on_success_does_not_warn_when_max_episode_steps_cuts_every_trajectory() -> None:
    """Cut trajectories are not the env's ends: MiniGridShapedReward reports success at every end, and the search stops
    on the first one, so a batch whose trajectories were all cut is no reason to warn (it was, before). The env path
    (the compiled simulator reports success by itself)."""
    model = paper_n6(max_episode_steps=4, search_budget=20, simulator_backend="env")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.learn(48)
    assert model.num_timesteps >= 48
    assert not [w for w in caught if "is_success" in str(w.message)]


def test_experiment_runs_checkpoints_resumes_and_reports(tmp_path: Path) -> None:
    runs, out = tmp_path / "runs", tmp_path / "out"
    argv = ["--methods", "dirpg", "reinforce", "--seeds", "0", "--interactions", "3000", "--eval-every", "3000",
            "--eval-maps", "20", "--procs", "1", "--runs-dir", str(runs), "--out", str(out)]  # fmt: skip
    multiroom.main(argv)
    first = json.loads((runs / "dirpg-s0" / "curve.json").read_text())["points"]
    assert [p[0] for p in first][0] == 0 and first[-1][0] >= 3000
    data = multiroom.main([*argv[:-6], "--interactions", "6000", "--procs", "1", "--runs-dir", str(runs), "--out",
                           str(out), "--resume"])  # fmt: skip
    points = data["runs"]["dirpg"]["0"]
    assert points[: len(first)] == first and points[-1][0] >= 6000
    assert all(0.0 <= p[1] <= 1.0 for p in points)
    assert set(data["summary"]) == {"dirpg", "reinforce"}
    assert (out / "multiroom_n6.png").read_bytes()[:4] == b"\x89PNG"


def test_zoo_paper_block_matches_the_experiment_setting() -> None:
    """The paper's setting that the zoo's tuned MiniGrid entries merge (``&minigrid-paper``; FourRooms changes only its
    env, wrappers and bound, to the progress reward's) is the one the experiment measures; the N6 entry takes the one
    MiniGrid setting."""
    entries = yaml.load((HYPERPARAMS_DIR / "dirpg.yml").read_text(), Loader=yaml.UnsafeLoader)
    entry = entries["MiniGrid-FourRooms-v0"]
    _, kwargs, _ = multiroom.METHODS["dirpg-lookahead16"]
    for key, value in {**multiroom_setup.COMMON, **kwargs}.items():
        assert entry[key] == value, key
    assert isinstance(prepare_hyperparams(entry)["heuristic"], MiniGridProgressBound)
    assert entries[N6] == {"n_timesteps": 1e6}


def test_probe_reports_the_dirpg_settings_only() -> None:
    out = multiroom.probe_search(["dirpg", "reinforce"], n_maps=1)
    assert set(out) == {"dirpg"} and out["dirpg"]["trajectories"] >= 1 and out["dirpg"]["interactions"] <= 3000


def test_greedy_eval_counts_the_maps_where_the_agent_reaches_the_goal() -> None:
    plan = [2, 2, 1, 2, 2]  # Empty-5x5: the agent starts at (1, 1) facing right, the goal is at (3, 3)
    batches: list[int] = []

    def act(obs: list) -> list[int]:
        batches.append(len(obs))
        return [plan[len(batches) - 1]] * len(obs)

    shaped = [multiroom_setup.make_env("MiniGrid-Empty-5x5-v0", None) for _ in range(3)]
    assert multiroom_setup.greedy_eval(act, shaped, [0, 1, 2]) == {"return": 100.0, "success": 1.0}  # the goal reward
    assert batches == [3] * len(plan)  # every map stepped in each batch until all ended
    batches.clear()
    assert multiroom_setup.greedy_eval(act, shaped, [0, 1, 2], max_steps=4) == {"return": 0.0, "success": 0.0}
    assert batches == [3] * 4
    batches.clear()
    plain = gym.make("MiniGrid-Empty-5x5-v0")  # MiniGrid's own reward, and no info["is_success"]
    result = multiroom_setup.greedy_eval(act, [plain], [0])
    assert result["success"] == 1.0 and 0 < result["return"] < 1
    with pytest.raises(ValueError, match="1 envs but 2 seeds"):
        multiroom_setup.greedy_eval(act, [plain], [0, 1])


def test_reaching_the_goal_is_the_only_success() -> None:
    assert multiroom_setup.reached_goal(0.0, True, {"is_success": True})  # the shaped reward's own flag
    assert not multiroom_setup.reached_goal(150.0, False, {"is_success": False})  # five doors are no success
    assert multiroom_setup.reached_goal(0.5, True, {}) and not multiroom_setup.reached_goal(0.5, False, {})
    assert not multiroom_setup.reached_goal(0.0, True, {})  # a plain MiniGrid env ending without reward


def test_greedy_actions_are_the_models_deterministic_predictions() -> None:
    env_id = "MiniGrid-MultiRoom-N2-S4-v0"
    model = multiroom_setup.make_model(multiroom.METHODS["dirpg"], 0, env_id, None)
    env = multiroom_setup.make_env(env_id, None)
    rng = np.random.default_rng(0)
    obs = []
    for seed in range(4):
        obs.append(env.reset(seed=seed)[0])
        for _ in range(3):
            obs.append(env.step(int(rng.integers(3)))[0])
    expected = [int(model.predict(o, deterministic=True)[0]) for o in obs]
    assert multiroom_setup.greedy_actions(model)(obs) == expected


def test_figure_methods_share_the_builder() -> None:
    settings = dict(search_budget=40, n_rollouts=3, early_stop=False, learning_rate=1e-3, batch_episodes=2, horizon=10)
    common = multiroom_figure.figure_common(settings)
    method = multiroom_figure.figure_method("dirpg-0.3", settings)
    dirpg = multiroom_setup.make_model(method, 0, "MiniGrid-MultiRoom-N2-S4-v0", None, common)
    assert isinstance(dirpg, DirPG) and dirpg.max_episode_steps == 10 and dirpg.gamma == 1.0
    assert isinstance(dirpg.heuristic, MultiRoomBound) and dirpg.heuristic.gamma == 1.0
    reinforce = multiroom_setup.make_model(multiroom_figure.figure_method("reinforce-trajectory", settings), 0,
                                     "MiniGrid-MultiRoom-N2-S4-v0", None, common)  # fmt: skip
    assert isinstance(reinforce, Reinforce) and reinforce.n_rollouts == 3
    with pytest.raises(ValueError, match="unknown method 'ppo'"):
        multiroom_figure.figure_method("ppo", settings)


@pytest.mark.parametrize(
    "main, argv",
    [(multiroom_figure.main, ["--resume"]), (multiroom_figure.main, ["--procs", "1"]), (multiroom.main, ["--alphas", "0.3"]),
     (multiroom.main, ["--full"])],
)  # fmt: skip
def test_an_option_of_one_run_is_refused_by_the_other(main: Any, argv: list[str], capsys) -> None:
    with pytest.raises(SystemExit):
        main(argv)
    assert f"unrecognized arguments: {argv[0]}" in capsys.readouterr().err
