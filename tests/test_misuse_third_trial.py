"""The third misuse trial (issue 81): what was accepted and then silently did nothing, or something else. Each case is
now refused before any work, or warned about once, with the argument or the env named and what to do instead.

The command lines' checks are in ``tests/test_experiments_minigrid.py``; the refused second ``MiniGridNoOpMask`` layer is
in ``tests/test_noop_mask.py``.
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.evaluation import evaluate_policy as sb3_evaluate_policy
from stable_baselines3.common.logger import KVWriter

from sb3_dirpg import DirPG
from sb3_dirpg.common.evaluation import evaluate_policy
from sb3_dirpg.dirpg import RefineOnSuccess
from sb3_dirpg.search.stopping import SuccessStop
from tests.helpers import MaskableChainEnv, chain

SETTINGS = dict(search_budget=24, batch_episodes=4, policy_kwargs=dict(net_arch=[8]), seed=0, learning_rate=1e-2)


def _prefers_the_masked_action() -> DirPG:
    """:return: a DirPG model on a chain whose action 2 is illegal at even steps (the env raises when it is played),
    with a policy that ranks action 2 first everywhere"""
    model = DirPG("MlpPolicy", gym.wrappers.TimeLimit(MaskableChainEnv(), 4), **SETTINGS)
    with th.no_grad():
        model.policy.action_net.weight.zero_()
        model.policy.action_net.bias.copy_(th.tensor([0.0, 1.0, 10.0]))
    return model


def test_the_evaluation_helper_passes_the_masks_where_sb3s_plays_a_masked_action() -> None:
    """SB3's ``evaluate_policy`` plays the policy's favourite action, illegal at step 0 (the env raises); the helper
    plays the best legal action: action 2 at the 2 odd steps, 1 elsewhere, so every episode earns exactly 2."""
    model = _prefers_the_masked_action()
    env = model.get_env()
    with pytest.raises(AssertionError, match="illegal action 2 at step 0"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sb3_evaluate_policy(model, env, n_eval_episodes=2, deterministic=True)
    rewards, lengths = evaluate_policy(model, env, n_eval_episodes=5, deterministic=True, return_episode_rewards=True)
    assert rewards == [2.0] * 5 and lengths == [4] * 5
    sampled, _ = evaluate_policy(model, env, n_eval_episodes=20, deterministic=False, return_episode_rewards=True)
    assert max(sampled) <= 2.0  # no illegal action raised, however the actions fell


def test_the_evaluation_helper_takes_an_env_without_masks() -> None:
    """Where the env has no masks, the helper is SB3's evaluation (the same rewards, episode by episode)."""
    model = DirPG("MlpPolicy", chain(4), **SETTINGS)
    env = model.get_env()
    ours = evaluate_policy(model, env, n_eval_episodes=6, deterministic=True, return_episode_rewards=True, warn=False)
    theirs = sb3_evaluate_policy(model, env, n_eval_episodes=6, deterministic=True, return_episode_rewards=True, warn=False)
    assert ours == theirs


def test_predict_without_masks_on_a_masked_env_warns_once() -> None:
    """``predict`` on a model whose env masks actions, without ``action_masks``, warns once, naming the helper; with the
    masks, or on an env without masks, it says nothing."""
    model = _prefers_the_masked_action()
    obs = model.get_env().reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        legal = model.predict(obs, deterministic=True, action_masks=np.array([[True, True, False]]))[0]
        assert legal.tolist() == [1]
        DirPG("MlpPolicy", chain(4), **SETTINGS).predict(np.zeros((1, 5), np.float32))
    with pytest.warns(UserWarning, match="the env masks actions, but no action_masks were given.*evaluate_policy") as caught:
        assert model.predict(obs, deterministic=True)[0].tolist() == [2]
        model.predict(obs, deterministic=True)
    assert len([w for w in caught if "action_masks" in str(w.message)]) == 1


def _improved_episodes(**settings: object) -> int:
    """:return: of 16 CartPole episodes searched with ε = -1, A*, a finite bound and budget 100, how many improved"""
    from stable_baselines3.common.callbacks import BaseCallback

    class Improved(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.improved: list[bool] = []

        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            self.improved += [episode.improved for episode in self.locals["search"]]

    model = DirPG("MlpPolicy", "CartPole-v1", epsilon=-1.0, search_budget=100, stop="budget", batch_episodes=16, seed=0,
                  heuristic=lambda env: (0.0, 500.0), **settings)  # fmt: skip
    counter = Improved()
    model.learn(1, callback=counter)
    assert len(counter.improved) == 16
    return sum(counter.improved)


def test_risk_averse_astar_warns_once_that_it_searches_breadth_first_and_depth_first_repairs_it() -> None:
    """With ε < 0, each step's reward lowers the A* priority of the path it extends, so a budget of 100 completes no
    trajectory after ``a_opt`` on CartPole: no episode improves (issue 81 measured 0 of 16). DirPG warns once, at
    construction, naming ``depth_first=True``, which improves on most episodes, as the Gumbel priority does."""
    with pytest.warns(UserWarning, match="searches breadth first.*depth_first=True") as caught:
        assert _improved_episodes(priority={"astar": {"alpha": 0.5}}) == 0
    assert len([w for w in caught if "breadth first" in str(w.message)]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _improved_episodes(priority={"astar": {"alpha": 0.5, "depth_first": True}}) >= 8
        assert _improved_episodes(priority="gumbel") >= 6


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        (dict(stop={"success": {"refine": 500}}, search_budget=40), "above search_budget=40"),
        (dict(stop=SuccessStop(refine=41, improvement=True), search_budget=40), "above search_budget=40"),
    ],
)
def test_refining_settings_that_cannot_act_are_refused_at_construction_assignment_and_load(
    settings: dict, says: str, tmp_path: object
) -> None:
    """A refining setting that was accepted and then did nothing (issue 81: a refining budget of 500 silently clamped to
    a search budget of 40) is refused the same way wherever it is given: to the constructor, by assignment (before the
    next search) or to ``load``."""
    with pytest.raises(ValueError, match=says):
        DirPG("MlpPolicy", chain(4), **{**SETTINGS, **settings})
    model = DirPG("MlpPolicy", chain(4), **SETTINGS)
    for name, value in settings.items():
        setattr(model, name, value)
    with pytest.raises(ValueError, match=says):
        model.learn(8)
    DirPG("MlpPolicy", chain(4), **SETTINGS).save(f"{tmp_path}/model")
    with pytest.raises(ValueError, match=says):
        DirPG.load(f"{tmp_path}/model", env=chain(4), **settings)


def test_refining_settings_that_act_are_taken() -> None:
    """The combinations that do act stay accepted: a refine budget within the search budget, and settings that
    ``RefineOnSuccess`` switches on."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DirPG("MlpPolicy", chain(4), **{**SETTINGS, "stop": {"success": {"refine": 24}}})
        switch = RefineOnSuccess(0.9, dict(gamma=0.9, stop={"success": {"refine": 24}}))
        switch.init_callback(DirPG("MlpPolicy", chain(4), **SETTINGS, stop="success"))  # its checks, as learn runs them
        assert switch.settings == dict(gamma=0.9, stop=SuccessStop(refine=24))


def test_settings_read_once_are_refused_after_the_model_is_built_with_what_to_do(tmp_path: object) -> None:
    """``seed``, ``device`` and ``policy_kwargs`` are read once, when the networks are built: assigning them later
    changed nothing (issue 81: "settings assigned after construction that are read only once"). They are refused with
    the way that works, which still does (``load`` takes them)."""
    model = DirPG("MlpPolicy", chain(4), **SETTINGS)
    for name, value, fix in (("seed", 3, "set_random_seed"), ("device", "cpu", "load"), ("policy_kwargs", {}, "new model")):
        with pytest.raises(ValueError, match=f"{name} cannot change after the model is built.*{fix}"):
            setattr(model, name, value)
    model.save(f"{tmp_path}/model")
    assert DirPG.load(f"{tmp_path}/model", env=chain(4), seed=4, device="cpu").seed == 4


def test_stats_window_size_assigned_later_resizes_the_windows_sb3_reads() -> None:
    """SB3 keeps ``stats_window_size`` as ``_stats_window_size`` and sizes its episode windows from it: assigning the
    public name used to add an attribute nothing read. Now it resizes the windows, keeping their latest episodes."""
    model = DirPG("MlpPolicy", chain(4), **{**SETTINGS, "stats_window_size": 7})
    model.learn(600)
    assert model.ep_info_buffer.maxlen == 7 and len(model.ep_info_buffer) == 7
    latest = list(model.ep_info_buffer)[-3:]
    model.stats_window_size = 3
    assert model._stats_window_size == 3 and list(model.ep_info_buffer) == latest
    assert model.ep_success_buffer.maxlen == 3
    with pytest.raises(ValueError, match="stats_window_size must be a positive int"):
        model.stats_window_size = 0


def test_ppo_from_dirpg_says_an_item_policy_is_unsupported() -> None:
    """An ``ItemPolicy`` has no PPO counterpart: the refusal says so (issue 81: it named a missing parameter)."""
    from sb3_dirpg.common.item_policy import ItemPolicy
    from sb3_dirpg.envs.knapsack import KnapsackEnv
    from sb3_dirpg.integrations.ppo import ppo_from_dirpg

    model = DirPG(ItemPolicy, KnapsackEnv(n_items=4, capacity=1.0), seed=0, device="cpu")
    with pytest.raises(TypeError, match="ItemPolicy .* no PPO counterpart.*not supported"):
        ppo_from_dirpg(model)


def test_load_takes_an_env_id_as_the_constructor_does(tmp_path: object) -> None:
    """``DirPG.load(path, env="CartPole-v1")`` builds the env from its id (issue 81: SB3 answered "we expect OpenAI Gym
    to be installed")."""
    DirPG("MlpPolicy", "CartPole-v1", search_budget=10, seed=0).save(f"{tmp_path}/model")
    model = DirPG.load(f"{tmp_path}/model", env="CartPole-v1")
    assert model.get_env().num_envs == 1 and model.simulator is not None


@pytest.mark.parametrize("name", ["ema_decay", "epsilon", "gamma", "learning_rate"])
def test_a_number_read_as_a_string_from_yaml_gets_the_yaml_hint(name: str) -> None:
    """YAML 1.1 (rl-zoo3's files) reads ``999e-3`` as a string; every numeric setting's refusal says how to write it,
    as ``learning_rate``'s did (issue 81: ``ema_decay`` spoke only of its range)."""
    with pytest.raises(ValueError, match=rf"{name} .*'999e-3'.*in YAML write a float with a dot"):
        DirPG("MlpPolicy", chain(4), **{**SETTINGS, name: "999e-3"})


class _Batches(BaseCallback):
    """Records, per batch, the interactions of each searched episode and the optimizer steps made so far."""

    def __init__(self) -> None:
        super().__init__()
        self.interactions: list[list[int]] = []
        self.updates: list[int] = []

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        self.interactions.append([episode.interactions for episode in self.locals["search"]])
        self.updates.append(self.model._n_updates)


class _Keys(KVWriter):
    """Keeps the keys the logger wrote."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def write(self, key_values: dict, key_excluded: dict, step: int = 0) -> None:
        self.seen.update(key_values)


class _Searched(BaseCallback):
    """Keeps the searched episodes of every batch."""

    def __init__(self) -> None:
        super().__init__()
        self.episodes: list = []

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        self.episodes += self.locals["search"]


@pytest.mark.parametrize("lookahead", [1, 4])
def test_settings_assigned_between_batches_act_from_the_next_batch_even_on_batches_searched_ahead(lookahead: int) -> None:
    """The class docstring's promise, for the settings that shape a batch (issue 81, "settings that do not take
    effect"): ``search_budget``, ``max_episode_steps``, ``batch_episodes``, ``n_epochs`` and ``epsilon`` assigned after a
    batch act on the next one, also where ``lookahead`` searched batches ahead with the old values."""
    model = DirPG("MlpPolicy", chain(6), **{**SETTINGS, "search_budget": 60, "batch_episodes": 2, "lookahead": lookahead})
    batches = _Batches()
    model.learn(100, callback=batches)
    assert batches.interactions[0] == [66, 66]  # a chain of 6 steps, then the whole budget
    for name, value, expected in (("search_budget", 1, [7, 7]), ("max_episode_steps", 3, [4, 4]),
                                  ("batch_episodes", 3, [4, 4, 4])):  # fmt: skip
        setattr(model, name, value)
        batches = _Batches()
        model.learn(20, callback=batches, reset_num_timesteps=False)
        assert batches.interactions[0] == expected, name
    model.search_budget, model.max_episode_steps = 60, 6  # the chain's reward is reachable again: batches update
    for epochs in (1, 3):
        model.n_epochs = epochs
        batches = _Batches()
        start = model._n_updates
        model.learn(3000, callback=batches, reset_num_timesteps=False)
        steps = np.diff([start, *batches.updates])
        assert set(steps) <= {0, epochs} and epochs in set(steps), (epochs, steps)
    model.epsilon = 3.0  # the D of the next batch's a_opt is G + 3·R
    searched = _Searched()
    model.learn(20, callback=searched, reset_num_timesteps=False)
    assert all(ep.d_opt == pytest.approx(ep.g_opt + 3.0 * ep.return_opt) for ep in searched.episodes)


@pytest.mark.parametrize("gamma", [1.0, 0.99])
def test_refining_that_cannot_improve_warns_once_and_names_gamma(gamma: float) -> None:
    """With ``gamma=1`` and a goal-only reward (the shaped MiniGrid reward pays the same 100 for every success), every
    success ties on the return and none can beat ``a_opt``, which holds the largest Gumbel: refining searched on and
    improved nothing (issue 81: 0 updates on 21 maps, 1,467 interactions against 207). DirPG now warns once, after
    ``REFINED_WITHOUT_GAIN`` such maps, and names ``gamma < 1``; with ``gamma=0.99`` a shorter success is worth more,
    refining improves, and nothing is said."""
    from sb3_dirpg.envs import make_minigrid_env
    from sb3_dirpg.envs.minigrid import MiniGridCNN

    env = make_minigrid_env("MiniGrid-Empty-Random-5x5-v0", max_steps=40)
    model = DirPG("MultiInputPolicy", env, seed=0, gamma=gamma, search_budget=120, stop=SuccessStop(refine=120),
                  batch_episodes=8, learning_rate=1e-9, device="cpu",
                  policy_kwargs=dict(features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False))  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.learn(12_000)
    said = [str(w.message) for w in caught if "searched on after" in str(w.message)]
    refined, improved = model._refining_tally
    if gamma == 1.0:
        assert refined >= DirPG.REFINED_WITHOUT_GAIN and improved == 0
        assert len(said) == 1 and "pass gamma < 1" in said[0]
    else:
        assert improved > 0 and not said
