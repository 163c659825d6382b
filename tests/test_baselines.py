"""The paper's baselines: the lockstep rollout collector, REINFORCE (both variants), CEM and UCB on the spanning-tree
bandit. Learning checks run on tiny tasks; the REINFORCE update is compared with the exact policy gradient."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_dirpg.baselines import CEM, UCB, Reinforce, collect_rollouts
from sb3_dirpg.baselines.ucb import find_bandit_env
from sb3_dirpg.envs import SpanningTreeBanditEnv
from tests.helpers import StopAfter

TARGET = (1, 0, 1, 1, 0, 1)  # the optimal actions of the chain; step 2 is forced (only action 1 is legal)
FORCED_STEP = 2


class ChainEnv(gym.Env):
    """6 steps, 2 actions, observation = one-hot of the step; reward 1/6 for each action that matches ``TARGET``.

    With ``noise=True`` the last step also pays a bonus drawn from ``np_random`` at reset (the episode's noise).
    """

    def __init__(self, noise: bool = False) -> None:
        self.n_steps = len(TARGET)
        self.noise = noise
        self.observation_space = spaces.Box(0.0, 1.0, (self.n_steps + 1,), np.float32)
        self.action_space = spaces.Discrete(2)
        self.t, self.bonus = 0, 0.0

    def _obs(self) -> np.ndarray:
        obs = np.zeros(self.n_steps + 1, np.float32)
        obs[self.t] = 1.0
        return obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self.bonus = float(self.np_random.integers(100)) if self.noise else 0.0
        return self._obs(), {}

    def action_masks(self) -> np.ndarray:
        return np.array([False, True]) if self.t == FORCED_STEP else np.ones(2, dtype=bool)

    def step(self, action):
        reward = (1.0 if int(action) == TARGET[self.t] else 0.0) / self.n_steps
        self.t += 1
        done = self.t == self.n_steps
        return self._obs(), reward + (self.bonus if done else 0.0), done, False, {}


def chain_vec_env(noise: bool = False) -> DummyVecEnv:
    return DummyVecEnv([lambda: gym.wrappers.TimeLimit(ChainEnv(noise), len(TARGET))])


def greedy_return(model) -> float:
    env = ChainEnv()
    obs, _ = env.reset(seed=0)
    total, done = 0.0, False
    while not done:
        action, _ = model.predict(obs, deterministic=True, action_masks=env.action_masks())
        obs, reward, done, _, _ = env.step(action)
        total += reward
    return total


def chain_model(cls, **kwargs):
    settings = dict(learning_rate=0.05, n_rollouts=10, batch_episodes=2, policy_kwargs=dict(net_arch=[]), seed=0)
    settings.update(kwargs)
    return cls("MlpPolicy", chain_vec_env(), **settings)


class Collect(BaseCallback):
    """Records the named entries of the callback locals at every step."""

    def __init__(self, *keys: str) -> None:
        super().__init__()
        self.keys = keys
        self.values: dict[str, list] = {key: [] for key in keys}

    def _on_step(self) -> bool:
        for key in self.keys:
            self.values[key].append(self.locals[key])
        return True


# -- the rollout collector -------------------------------------------------------------------------------------------


def test_rollouts_share_the_episode_root_and_respect_masks() -> None:
    model = chain_model(Reinforce, n_rollouts=5)
    seeds = [11, 12, 13]
    counted = []

    def count(n_interactions: int) -> bool:
        counted.append(n_interactions)
        return True

    rollouts = collect_rollouts(model.simulator, model.policy_logits, seeds, 5, np.random.default_rng(0), model.horizon, count)
    assert rollouts.n_episodes == 3 and rollouts.n_rollouts == 5
    assert np.all(rollouts.lengths == len(TARGET)) and rollouts.n_interactions == 15 * len(TARGET)
    assert counted == [15] * len(TARGET)  # every live rollout steps in every iteration
    assert np.all(rollouts.actions[rollouts.time == FORCED_STEP] == 1)
    assert np.all(rollouts.masks[np.arange(rollouts.n_interactions), rollouts.actions])
    # rewards-to-go and returns against a plain loop
    to_go = rollouts.rewards_to_go(0.9)
    for j in range(15):
        own = rollouts.rollout == j
        order = np.argsort(rollouts.time[own])
        rewards = rollouts.rewards[own][order]
        togo = [sum(0.9 ** (i - t) * rewards[i] for i in range(t, len(rewards))) for t in range(len(rewards))]
        np.testing.assert_allclose(to_go[own][order], togo)
        np.testing.assert_allclose(rollouts.returns(0.9)[j], togo[0])

    noisy = Reinforce("MlpPolicy", chain_vec_env(noise=True), n_rollouts=6, policy_kwargs=dict(net_arch=[]), seed=0)
    rollouts = noisy.collect([1, 2, 3, 4])
    bonus = rollouts.rewards[rollouts.time == len(TARGET) - 1][np.argsort(rollouts.rollout[rollouts.time == len(TARGET) - 1])]
    bonus = np.floor(bonus).reshape(4, 6)  # the reset's noise, drawn once per episode
    assert np.all(bonus == bonus[:, :1]) and len(np.unique(bonus[:, 0])) > 1


def test_collector_is_reproducible_and_stops_on_request() -> None:
    a, b = chain_model(Reinforce, seed=3), chain_model(Reinforce, seed=3)
    ra, rb = a.collect([5, 6]), b.collect([5, 6])
    np.testing.assert_array_equal(ra.actions, rb.actions)
    np.testing.assert_array_equal(ra.rollout, rb.rollout)
    stopped = collect_rollouts(a.simulator, a.policy_logits, [1], 3, np.random.default_rng(0), a.horizon, lambda n: False)
    assert stopped is None

    class NoLegalAction:
        n_actions = 2

        def reset(self, seeds):
            roots = a.simulator.reset(seeds)
            roots.masks[:] = False
            return roots

    with pytest.raises(ValueError, match="all-false action mask"):
        collect_rollouts(NoLegalAction(), a.policy_logits, [1], 2, np.random.default_rng(0))


# -- REINFORCE and CEM -----------------------------------------------------------------------------------------------


def exact_chain_gradient(model) -> np.ndarray:
    """Gradient of E[R] for the chain: E[R] = sum_t pi(TARGET_t | t) / 6 (the reward of a step depends on it alone)."""
    policy = model.policy
    policy.zero_grad()
    obs = torch.eye(len(TARGET) + 1)[: len(TARGET)]
    masks = torch.ones(len(TARGET), 2, dtype=torch.bool)
    masks[FORCED_STEP, 0] = False
    logits = policy.action_logits(obs).masked_fill(~masks, -torch.inf)
    probs = torch.softmax(logits, dim=1)[torch.arange(len(TARGET)), torch.as_tensor(TARGET)]
    (probs.sum() / len(TARGET)).backward()
    grad = torch.cat([p.grad.flatten() for p in policy.parameters()]).numpy().copy()
    policy.zero_grad()
    return grad


@pytest.mark.parametrize("variant", ["trajectory", "action"])
def test_reinforce_update_estimates_the_policy_gradient(variant: str) -> None:
    model = chain_model(
        Reinforce, variant=variant, n_rollouts=4000, learning_rate=1.0, seed=1,
        policy_kwargs=dict(net_arch=[], optimizer_class=torch.optim.SGD, ortho_init=False),
    )  # fmt: skip
    model.set_logger(configure(None, [""]))
    exact = exact_chain_gradient(model)
    before = torch.cat([p.detach().flatten() for p in model.policy.parameters()]).numpy().copy()
    model.rollouts = model.collect([7])
    model.train()
    after = torch.cat([p.detach().flatten() for p in model.policy.parameters()]).numpy()
    estimate = after - before  # SGD with lr 1 ascends the estimate of grad E[R]
    assert np.abs(exact).max() > 0.03
    # 4000 rollouts: the relative error is about 0.12 (trajectory) / 0.06 (action); a factor-2 slip gives >= 0.5
    assert np.linalg.norm(estimate - exact) < 0.25 * np.linalg.norm(exact)


@pytest.mark.parametrize(
    ("cls", "kwargs"),
    [(Reinforce, dict(variant="trajectory")), (Reinforce, dict(variant="action")), (CEM, dict(n_elite=2))],
    ids=["reinforce-trajectory", "reinforce-action", "cem"],
)
def test_learns_the_chain(cls, kwargs) -> None:
    model = chain_model(cls, **kwargs)
    while model.num_timesteps < 8_000 and greedy_return(model) < 1.0 - 1e-9:
        model.learn(120, reset_num_timesteps=False)
    assert greedy_return(model) == pytest.approx(1.0)
    assert model.num_timesteps % len(TARGET) == 0 and model._n_updates == model.num_timesteps // 120
    assert np.mean([ep["r"] for ep in model.ep_info_buffer]) > 0.5


def test_cem_picks_the_best_rollouts_of_each_episode() -> None:
    model = chain_model(CEM, n_rollouts=8, n_elite=3)
    rollouts = model.collect([1, 2])
    elite = model.elite(rollouts)
    returns = rollouts.returns()
    assert elite.shape == (2, 3)
    for episode in range(2):
        own = returns[episode * 8 : (episode + 1) * 8]
        assert np.all(elite[episode] // 8 == episode)
        assert np.all(returns[elite[episode]] >= np.sort(own)[-3])


@pytest.mark.parametrize("cls", [Reinforce, CEM])
def test_save_load_and_callback_stop(cls, tmp_path) -> None:
    model = chain_model(cls)
    model.learn(240)
    path = tmp_path / "model.zip"
    model.save(path)
    loaded = cls.load(path, env=chain_vec_env())
    obs = np.eye(len(TARGET) + 1, dtype=np.float32)[: len(TARGET)]
    np.testing.assert_array_equal(model.predict(obs, deterministic=True)[0], loaded.predict(obs, deterministic=True)[0])
    assert loaded.n_rollouts == model.n_rollouts and loaded.num_timesteps == model.num_timesteps
    loaded.learn(120, reset_num_timesteps=False)

    fresh = chain_model(cls)
    fresh.learn(10_000, callback=StopAfter(2))
    assert fresh.num_timesteps == 2 * 20 and fresh._n_updates == 0  # stopped in the 2nd iteration, before any update


def test_bad_arguments_raise_before_env_work() -> None:
    with pytest.raises(ValueError, match="variant"):
        Reinforce("MlpPolicy", "NoSuchEnv-v0", variant="reward-to-go")
    for value in (0, 2.5, True):
        with pytest.raises(ValueError, match="n_rollouts"):
            Reinforce("MlpPolicy", "NoSuchEnv-v0", n_rollouts=value)
    with pytest.raises(ValueError, match="n_elite"):
        CEM("MlpPolicy", "NoSuchEnv-v0", n_elite=0)
    with pytest.raises(ValueError, match="n_elite"):
        CEM("MlpPolicy", "NoSuchEnv-v0", n_rollouts=3, n_elite=4)
    with pytest.raises(ValueError, match="feedback"):
        UCB("TreePolicy", "NoSuchEnv-v0", feedback="bandit")
    with pytest.raises(ValueError, match="exploration"):
        UCB("TreePolicy", "NoSuchEnv-v0", exploration=-1.0)
    with pytest.raises(ValueError, match="CartPole-v1"):
        UCB("TreePolicy", "CartPole-v1")


# -- UCB -------------------------------------------------------------------------------------------------------------


def bandit(graph_seed: int = 1) -> SpanningTreeBanditEnv:
    return SpanningTreeBanditEnv(n_nodes=5, n_edges=8, graph_seed=graph_seed)


def ucb_regrets(feedback: str, rounds: int, seed: int = 0) -> tuple[UCB, np.ndarray]:
    model = UCB("TreePolicy", bandit(), feedback=feedback, seed=seed)
    regrets = Collect("regret")
    model.learn(rounds, callback=regrets)
    return model, np.asarray(regrets.values["regret"])


def random_tree_regret(env: SpanningTreeBanditEnv, n: int = 300) -> float:
    rng = np.random.default_rng(0)
    best = env.mu[env.max_spanning_tree()].sum()
    return float(np.mean([best - env.mu[env.max_spanning_tree(rng.random(env.n_edges))].sum() for _ in range(n)]))


@pytest.mark.parametrize("feedback", ["semi", "full"])
def test_ucb_regret_decreases(feedback: str) -> None:
    model, regret = ucb_regrets(feedback, 1500)
    assert model.num_timesteps == 1500 and int(model.policy.n_rounds) == 1500  # one interaction per round
    assert np.all(regret >= -1e-12)
    assert regret[-300:].mean() < 0.5 * regret[:300].mean()
    assert model.cumulative_regret == pytest.approx(regret.sum())
    assert regret[-300:].mean() < random_tree_regret(bandit())
    if feedback == "semi":
        assert model.greedy_regret() == pytest.approx(0.0)
        assert regret[-300:].mean() < 0.25 * random_tree_regret(bandit())


def test_semi_bandit_feedback_beats_full_bandit_feedback() -> None:
    _, semi = ucb_regrets("semi", 600)
    _, full = ucb_regrets("full", 600)
    assert semi.sum() < full.sum()  # per-edge rewards are more information than the tree reward


def test_ucb_scores_follow_the_paper() -> None:
    model = UCB("TreePolicy", bandit(), seed=0)
    n_edges = len(model.edges)
    assert np.all(np.isinf(model.policy.ucb_scores(1.5)))
    model.learn(n_edges)  # an untried edge scores inf, and Kruskal always takes the top edge: one new edge per round
    counts, mu_hat = model.policy.counts.numpy(), model.policy.mu_hat.numpy()
    assert np.all(counts > 0)
    np.testing.assert_allclose(model.policy.ucb_scores(1.5), mu_hat + 1.5 * np.log(n_edges + 1) / counts)
    tree = model.choose_tree()
    assert len(tree) == model.n_nodes - 1
    np.testing.assert_array_equal(tree, np.flatnonzero(model.policy.tree_mask(model.policy.ucb_scores(1.5))))


def test_ucb_plays_trees_through_the_env() -> None:
    model, _ = ucb_regrets("semi", 50)
    played = Collect("tree", "reward", "edge_rewards")
    model.learn(20, callback=played, reset_num_timesteps=False)
    for tree, reward, edge_rewards in zip(played.values["tree"], played.values["reward"], played.values["edge_rewards"]):
        assert len(tree) == model.n_nodes - 1
        assert reward == pytest.approx(edge_rewards.sum())
    greedy = model.policy.tree_mask()
    env = bandit()
    obs, _ = env.reset(seed=0)
    done = False
    while not done:
        action, _ = model.predict(obs, deterministic=True)
        obs, _, done, _, info = env.step(action)
    assert info["is_valid_tree"] and sorted(info["tree"]) == np.flatnonzero(greedy).tolist()


def test_ucb_save_load_round_trip(tmp_path) -> None:
    model, _ = ucb_regrets("full", 200)
    path = tmp_path / "ucb.zip"
    model.save(path)
    for loaded in (UCB.load(path), UCB.load(path, env=bandit())):
        for name in ("mu_hat", "counts", "n_rounds"):
            torch.testing.assert_close(getattr(loaded.policy, name), getattr(model.policy, name))
        assert loaded.feedback == "full" and loaded.edges == model.edges
        obs = np.eye(len(model.edges) + 1, len(model.edges), dtype=np.float32)
        np.testing.assert_array_equal(loaded.predict(obs)[0], model.predict(obs)[0])
    continued = Collect("tree")
    loaded.learn(5, callback=continued, reset_num_timesteps=False)
    reference = Collect("tree")
    model.learn(5, callback=reference, reset_num_timesteps=False)
    for a, b in zip(continued.values["tree"], reference.values["tree"]):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="graph"):
        UCB.load(path, env=bandit(graph_seed=2))
    with pytest.raises(ValueError, match="graph"):
        model.set_env(bandit(graph_seed=2))
    assert find_bandit_env(model.env).unwrapped.edges == bandit().edges  # the refused env did not replace it


def test_ucb_callback_stops_before_the_update() -> None:
    model = UCB("TreePolicy", bandit(), seed=0)
    model.learn(100, callback=StopAfter(7))
    assert model.num_timesteps == 7 and int(model.policy.n_rounds) == 6


@pytest.mark.parametrize("cls", [Reinforce, CEM])
def test_callbacks_see_each_batch_of_rollouts_at_rollout_end(cls) -> None:
    class BatchLog(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.batches: list[dict] = []

        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            self.batches.append(dict(self.locals, at=self.model.num_timesteps, updates=self.model._n_updates))

    model = chain_model(cls)
    log = BatchLog()
    model.learn(300, callback=log)
    assert len(log.batches) == model._n_updates >= 2
    previous_at = 0
    for index, batch in enumerate(log.batches):
        rollouts = batch["rollouts"]
        assert batch["updates"] == index and rollouts.n_episodes == 2 and rollouts.n_rollouts == 10
        assert batch["at"] - previous_at == rollouts.n_interactions
        previous_at = batch["at"]
        assert [info["r"] for info in batch["episode_infos"]] == rollouts.returns().tolist()
