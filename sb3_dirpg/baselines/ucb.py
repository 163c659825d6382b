"""UCB for the spanning-tree combinatorial bandit (DirPG paper: section 6, appendix "Combinatorial Bandits")."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import gymnasium as gym
import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback
from stable_baselines3.common.vec_env import VecEnv

from sb3_dirpg.baselines.tree_policy import TreePolicy
from sb3_dirpg.common.iterative_algorithm import IterativeAlgorithm
from sb3_dirpg.envs.spanning_tree import SpanningTreeBanditEnv
from sb3_dirpg.simulator import strip_monitor

SelfUCB = TypeVar("SelfUCB", bound="UCB")

FEEDBACKS = ("semi", "full")


@dataclass
class Round:
    """One round of UCB.

    :param tree: edge indices of the tree played
    :param reward: its tree reward
    :param edge_rewards: the rewards of its edges (the semi-bandit feedback)
    :param regret: its expected regret
    """

    tree: np.ndarray
    reward: float
    edge_rewards: np.ndarray
    regret: float


def find_bandit_env(venv: VecEnv) -> gym.Env:
    """The (Monitor-free) sub-env of a single-env DummyVecEnv whose base is a ``SpanningTreeBanditEnv``.

    :param venv: the VecEnv
    :return: the sub-env, with its wrappers other than SB3's Monitor
    """
    envs = getattr(venv.unwrapped, "envs", None)
    if envs is None:
        raise ValueError(f"UCB needs a DummyVecEnv around one SpanningTreeBanditEnv, got {type(venv.unwrapped).__name__}")
    env = envs[0]
    if not isinstance(env.unwrapped, SpanningTreeBanditEnv):
        spec = getattr(env, "spec", None)
        name = repr(spec.id) if spec is not None else type(env.unwrapped).__name__
        raise ValueError(
            f"UCB only works with the spanning-tree bandit (sb3_dirpg/SpanningTreeBandit-v0, SpanningTreeBanditEnv); "
            f"got the env {name}"
        )
    return strip_monitor(env)


class UCB(IterativeAlgorithm):
    """Combinatorial UCB on ``SpanningTreeBanditEnv``: each round plays the maximum spanning tree of the UCB scores.

    Round ``t`` plays the maximum spanning tree (networkx) of ``u_e = mu_hat_e + exploration * log(t) / c_e`` (the
    paper's formula, ``exploration = 1.5``; edges never played score ``inf`` so every edge gets tried), where ``mu_hat_e``
    is the mean reward observed for edge ``e`` and ``c_e`` the number of rounds whose tree contained it. A round is one
    episode with a fresh seeded realisation of the per-edge rewards; the tree's include/exclude decisions are stepped
    through the env, which pays the tree reward ``r_T``. Feedback:

    * ``"semi"`` (semi-bandit, privileged): each played edge's own reward ``r_e`` (the env's ``edge_rewards``).
    * ``"full"`` (full bandit, what DirPG sees): ``r_T`` split evenly, ``r_e = r_T / (n_nodes - 1)`` for ``e in T``.

    **Interaction accounting** (as in the paper's comparison): a UCB round queries the whole tree at once and ends
    the episode after a *single* interaction, so ``num_timesteps`` grows by 1 per round and ``callback.on_step()`` is
    called once per round (a False return stops training before the round's update). DirPG, REINFORCE and CEM count
    each of the ``|E|`` decisions as one interaction instead.

    Logs ``rollout/ep_rew_mean`` (tree rewards), ``ucb/regret`` (expected regret of the played trees, ``sum mu`` of the
    best tree minus that of the played tree, by the env's true ``mu``), ``ucb/cumulative_regret`` and
    ``ucb/greedy_regret`` (regret of the greedy tree by ``mu_hat``, which :meth:`predict` plays). Callbacks see
    ``tree``, ``reward``, ``regret`` and ``edge_rewards`` in their ``locals``.

    :param policy: ``"TreePolicy"`` (or :class:`~sb3_dirpg.baselines.tree_policy.TreePolicy`): holds the statistics
    :param env: a ``SpanningTreeBanditEnv`` (or its registered id), alone in a DummyVecEnv
    :param feedback: ``"semi"`` (per-edge rewards) or ``"full"`` (tree reward split evenly over its edges)
    :param exploration: coefficient of the ``log(t) / c_e`` bonus (1.5 in the paper)
    :param policy_kwargs: keyword arguments of the policy
    :param stats_window_size: rounds averaged in ``rollout/`` statistics
    :param tensorboard_log: tensorboard log folder, or None
    :param seed: seed of the rounds' reward realisations
    :param verbose: 0 silent, 1 training logs, 2 debug
    :param device: unused: the statistics always live on the CPU
    :param _init_setup_model: build the policy now (False when loading)
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {"TreePolicy": TreePolicy}
    policy: TreePolicy

    def __init__(
        self,
        policy: str | type[TreePolicy],
        env: GymEnv | str | None,
        feedback: str = "semi",
        exploration: float = 1.5,
        policy_kwargs: dict[str, Any] | None = None,
        stats_window_size: int = 100,
        tensorboard_log: str | None = None,
        seed: int | None = None,
        verbose: int = 0,
        device: th.device | str = "auto",
        _init_setup_model: bool = True,
    ) -> None:
        if feedback not in FEEDBACKS:
            raise ValueError(f"UCB: feedback must be one of {FEEDBACKS}, got {feedback!r}")
        if not (np.isfinite(exploration) and exploration >= 0):
            raise ValueError(f"UCB: exploration must be a finite non-negative number, got {exploration!r}")
        self.feedback = feedback
        self.exploration = float(exploration)
        self.edges: list[tuple[int, int]] | None = None
        self.n_nodes: int | None = None
        self.mu: np.ndarray | None = None
        self.best_value: float | None = None
        self.cumulative_regret = 0.0
        self.last_round: Round | None = None  # the round :meth:`collect_rollouts` played, for :meth:`train`
        self._episode_rng: np.random.Generator | None = None
        self._bandit_env: gym.Env | None = None
        super().__init__(
            policy=policy,
            env=env,
            learning_rate=0.0,
            policy_kwargs=policy_kwargs,
            stats_window_size=stats_window_size,
            tensorboard_log=tensorboard_log,
            verbose=verbose,
            device="cpu",
            support_multi_env=False,
            seed=seed,
            supported_action_spaces=(spaces.Discrete,),
        )
        if self.env is not None:
            self._attach_env()
        if _init_setup_model:
            self._setup_model()

    # -- setup -----------------------------------------------------------------------------------------------

    def _bandit_of(self, venv: VecEnv) -> gym.Env:
        """:param venv: a VecEnv
        :return: its SpanningTreeBanditEnv sub-env, checked to have the model's graph (when the model knows one)"""
        bandit_env = find_bandit_env(venv)
        edges = [(int(u), int(v)) for u, v in bandit_env.unwrapped.edges]
        if self.edges is not None and [(int(u), int(v)) for u, v in self.edges] != edges:
            raise ValueError(f"UCB: the env's graph {edges} differs from the model's graph {self.edges}")
        return bandit_env

    def _attach_env(self) -> None:
        """Check ``self.env`` and take the graph and the true ``mu`` (for the regret) from it."""
        self._bandit_env = self._bandit_of(self.env)
        bandit: SpanningTreeBanditEnv = self._bandit_env.unwrapped
        self.edges, self.n_nodes = [(int(u), int(v)) for u, v in bandit.edges], int(bandit.n_nodes)
        self.mu = np.array(bandit.mu, dtype=np.float64)
        self.best_value = float(self.mu[bandit.max_spanning_tree()].sum())

    def _setup_model(self) -> None:
        if self.env is not None:
            self._attach_env()  # again after load: the saved graph is known now
        if self.edges is None:
            raise ValueError("UCB needs a SpanningTreeBanditEnv (or a saved model) to know its graph")
        self.edges = [(int(u), int(v)) for u, v in self.edges]  # a loaded model's edges come back as JSON lists
        self.set_random_seed(self.seed)
        if self._episode_rng is None:  # a loaded model keeps its generator and continues its sequence of rounds
            self._episode_rng = np.random.default_rng(self.seed)
        self.policy = self.policy_class(self.observation_space, self.action_space, edges=self.edges, **self.policy_kwargs)

    def set_env(self, env: GymEnv, force_reset: bool = True) -> None:
        """Use a new env: a ``SpanningTreeBanditEnv`` on the same graph (its ``mu`` may differ).

        :param env: the new env
        :param force_reset: as in SB3
        """
        venv = self._wrap_env(env, self.verbose)
        self._bandit_of(venv)  # refuse before replacing the current env
        super().set_env(venv, force_reset=force_reset)
        self._attach_env()

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_bandit_env", "last_round"]

    # -- one round -------------------------------------------------------------------------------------------

    def choose_tree(self) -> np.ndarray:
        """:return: the edge indices of this round's tree: the maximum spanning tree of the UCB scores"""
        return np.flatnonzero(self.policy.tree_mask(self.policy.ucb_scores(self.exploration)))

    def _play(self, tree: np.ndarray, seed: int) -> tuple[float, np.ndarray]:
        """Step the tree's include/exclude decisions through the env in a fresh seeded episode.

        :param tree: edge indices of the tree
        :param seed: seed of the episode's reward realisation
        :return: the tree reward and the per-edge rewards of the tree's edges
        """
        env = self._bandit_env
        in_tree = np.zeros(len(self.edges), dtype=np.int64)
        in_tree[tree] = 1
        env.reset(seed=seed)
        total, info, done = 0.0, {}, False
        for decision in in_tree.tolist():
            _, reward, terminated, truncated, info = env.step(decision)
            total += float(reward)
            done = terminated or truncated
            if done:
                break
        if not (done and info.get("is_valid_tree", False)):
            raise RuntimeError(
                f"UCB: the env did not accept the spanning tree {tree.tolist()} (is a wrapper cutting the episodes short?)"
            )
        return total, np.asarray(info["edge_rewards"], dtype=np.float64)[tree]

    def collect_rollouts(self, callback: BaseCallback) -> bool:
        """Play one round (one interaction), count it, and keep it in :attr:`last_round` for :meth:`train`.

        :param callback: the training callback
        :return: False when the callback asked to stop (no update is made then)
        """
        tree = self.choose_tree()
        reward, edge_rewards = self._play(tree, int(self._episode_rng.integers(0, 2**31 - 1)))
        regret = self.best_value - float(self.mu[tree].sum())
        self.cumulative_regret += regret
        self.num_timesteps += 1
        self._update_info_buffer([{"episode": {"r": reward, "l": 1, "t": round(time.time() - self.start_time / 1e9, 6)}}])
        self._episode_num += 1
        callback.update_locals({"tree": tree, "reward": reward, "regret": regret, "edge_rewards": edge_rewards})
        self.last_round = Round(tree, reward, edge_rewards, regret)
        return bool(callback.on_step())

    def train(self) -> None:
        """Update the statistics with the feedback of :attr:`last_round` (``"full"``: the tree reward split evenly over
        its edges)."""
        played = self.last_round
        if played is None:
            raise RuntimeError("UCB.train() needs a round: call collect_rollouts() (or learn()) first")
        edge_rewards = played.edge_rewards
        if self.feedback == "full":
            edge_rewards = np.full(len(played.tree), played.reward / len(played.tree))
        self.policy.update(played.tree, edge_rewards)
        self.logger.record_mean("ucb/regret", played.regret)

    # -- learning --------------------------------------------------------------------------------------------

    def learn(
        self: SelfUCB,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int = 100,
        tb_log_name: str = "UCB",
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> SelfUCB:
        """Play rounds until ``total_timesteps`` interactions (one per round) have been made.

        :param total_timesteps: rounds to play
        :param callback: callback(s), called once per round
        :param log_interval: dump the logs every this many rounds
        :param tb_log_name: name of the tensorboard run
        :param reset_num_timesteps: reset ``num_timesteps`` and the cumulative regret (False to continue)
        :param progress_bar: show a progress bar (``pip install sb3-dirpg[extra]``)
        :return: the trained model
        """
        self.check_can_learn()
        if reset_num_timesteps:
            self.cumulative_regret = 0.0
        return super().learn(total_timesteps, callback, log_interval, tb_log_name, reset_num_timesteps, progress_bar)

    def greedy_regret(self) -> float:
        """:return: expected regret of the greedy tree by ``mu_hat`` (the tree :meth:`predict` builds)"""
        return self.best_value - float(self.mu[self.policy.tree_mask()].sum())

    def record_logs(self) -> None:
        """Record the ``ucb/`` statistics before each dump."""
        self.logger.record("ucb/cumulative_regret", self.cumulative_regret)
        self.logger.record("ucb/greedy_regret", self.greedy_regret())
        self.logger.record("ucb/n_rounds", int(self.policy.n_rounds), exclude="tensorboard")
