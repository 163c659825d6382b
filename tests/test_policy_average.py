"""``ema_decay``: a moving average of the policy's weights acts in ``predict``; the trained policy searches and learns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch as th
from stable_baselines3.common.logger import configure

from experiments.held_out import evaluate_held_out
from sb3_dirpg import DirPG
from tests.helpers import chain
from tests.helpers import small_dirpg as small_model


def _weights(policy: th.nn.Module) -> list[th.Tensor]:
    return [p.detach().clone() for p in policy.parameters()]


def _step(model: DirPG, seed: int) -> None:
    """One optimizer step on a loss that moves every weight: random directions of the logits on random states."""
    if "_logger" not in model.__dict__:
        model.set_logger(configure(None, []))
    generator = th.Generator().manual_seed(seed)
    obs = th.rand((5, *model.observation_space.shape), generator=generator)
    logits = model.policy.action_logits(obs)
    model._optimizer_step((logits * th.randn(logits.shape, generator=generator)).sum())


def test_average_follows_the_moving_average_of_the_weights_after_each_step() -> None:
    """After steps 1..k the average holds w_1 moved by ``a ← d·a + (1 − d)·w_j`` for j = 2..k (the first step copies),
    computed here by hand from the weights after each step; the trained policy keeps its own weights."""
    decay = 0.7
    model = small_model(chain(6), ema_decay=decay)
    expected: list[th.Tensor] | None = None
    for seed in range(6):
        _step(model, seed)
        weights = _weights(model.policy)
        expected = weights if expected is None else [decay * a + (1 - decay) * w for a, w in zip(expected, weights)]
    kept = _weights(model.policy_average.module)
    for average, by_hand, trained in zip(kept, expected, _weights(model.policy)):
        assert th.allclose(average, by_hand, atol=1e-6)
        assert not th.allclose(average, trained, atol=1e-4)
    assert int(model.policy_average.n_averaged) == 6


def _set_preference(policy: th.nn.Module, action: int) -> None:
    """Make ``policy`` pick ``action`` on every state (a bias far larger than the logits' other terms)."""
    with th.no_grad():
        policy.action_net.weight.zero_()
        policy.action_net.bias.fill_(0.0)
        policy.action_net.bias[action] = 50.0


def test_predict_acts_with_the_average_and_the_search_with_the_trained_policy() -> None:
    model = small_model(chain(6), ema_decay=0.9)
    _set_preference(model.policy, 0)
    _set_preference(model.policy_average.module, 1)
    obs = np.stack([model.observation_space.sample() for _ in range(8)])
    assert (model.predict(obs, deterministic=True)[0] == 1).all()
    assert (model.policy.predict(obs, deterministic=True)[0] == 0).all()
    assert (model.policy_logits(list(obs), np.ones((8, 2), dtype=bool)).argmax(axis=1) == 0).all()
    env = chain(6)
    assert evaluate_held_out(model, [env], [0], deterministic=True, trained=True)["success"] == 0.0
    assert evaluate_held_out(model, [env], [0], deterministic=True)["success"] == 1.0  # action 1 walks the chain


def test_learn_updates_the_average_once_per_optimizer_step() -> None:
    model = small_model(chain(6), ema_decay=0.99, n_epochs=3)
    model.learn(800)
    assert model._n_updates > 0
    assert int(model.policy_average.n_averaged) == model._n_updates


def test_the_average_is_saved_and_a_changed_decay_carries_it_on(tmp_path: Path) -> None:
    model = small_model(chain(6), ema_decay=0.5)
    for seed in range(3):
        _step(model, seed)
    model.save(tmp_path / "model")
    loaded = DirPG.load(tmp_path / "model", device="cpu")
    assert loaded.ema_decay == 0.5 and int(loaded.policy_average.n_averaged) == 3
    for saved, back in zip(_weights(model.policy_average.module), _weights(loaded.policy_average.module)):
        assert th.equal(saved, back)
    # a new decay keeps the average so far, and moves it with the new decay from then on
    again = DirPG.load(tmp_path / "model", device="cpu", ema_decay=0.25)
    before = _weights(again.policy_average.module)
    assert all(th.equal(a, b) for a, b in zip(before, _weights(model.policy_average.module)))
    _step(again, 7)
    after = [0.25 * a + 0.75 * w for a, w in zip(before, _weights(again.policy))]
    assert all(th.allclose(a, b, atol=1e-6) for a, b in zip(_weights(again.policy_average.module), after))
    # a model saved without an average starts one from its policy when loaded with a decay, and drops it with None
    model.ema_decay = None
    assert model.policy_average is None
    model.save(tmp_path / "plain")
    assert DirPG.load(tmp_path / "plain", device="cpu").policy_average is None
    started = DirPG.load(tmp_path / "plain", device="cpu", ema_decay=0.9)
    assert all(th.equal(a, b) for a, b in zip(_weights(started.policy_average.module), _weights(started.policy)))


@pytest.mark.parametrize("value", [0.0, 1.0, 1.5, -0.1, True, "0.99"])
def test_a_decay_outside_the_unit_interval_is_refused(value: Any) -> None:
    with pytest.raises(ValueError, match="ema_decay must lie in"):
        small_model(chain(4), ema_decay=value)
    model = small_model(chain(4))
    with pytest.raises(ValueError, match="ema_decay must lie in"):
        model.ema_decay = value


def _diverged(decay: float = 0.9) -> DirPG:
    """:return: a model whose trained policy prefers action 0 everywhere and whose average prefers action 1"""
    model = small_model(chain(6), ema_decay=decay)
    _set_preference(model.policy, 0)
    _set_preference(model.policy_average.module, 1)
    return model


def test_solve_plays_the_policy_predict_acts_with() -> None:
    """``solve(seeds, 0)``'s greedy trajectory is ``predict(deterministic=True)``'s (issue 81: it was the trained
    policy's, and differed on 7 of 20 instances): here the average walks the chain to its reward, the trained policy
    does not."""
    model = _diverged()
    solutions = model.solve(list(range(5)), 0)
    assert [s.reward_sum for s in solutions] == [1.0] * 5
    assert all(list(s.actions) == [1] * 6 for s in solutions)
    assert max(s.reward_sum for s in model.solve(list(range(5)), 40)) == 1.0


def test_ppo_from_dirpg_starts_from_the_policy_the_model_acts_with() -> None:
    """The PPO's actor gives the average's action probabilities, not the trained policy's (issue 81: they differed by
    up to 0.678)."""
    from sb3_dirpg.integrations.ppo import ppo_from_dirpg

    model = _diverged()
    ppo = ppo_from_dirpg(model, n_steps=16, batch_size=16)
    obs = th.as_tensor(np.stack([model.observation_space.sample() for _ in range(8)]))
    ours = model.acting_policy.get_distribution(obs).distribution.probs
    theirs = ppo.policy.get_distribution(obs).distribution.probs
    assert th.allclose(ours, theirs, atol=1e-6)
    assert not th.allclose(model.policy.get_distribution(obs).distribution.probs, theirs, atol=1e-2)


def test_set_parameters_keeps_the_average_consistent_with_the_weights(tmp_path: Path) -> None:
    """Parameters without an average (from a model without ``ema_decay``) restart the average from the loaded policy
    with ``exact_match=False`` and are refused, before anything is loaded, with ``exact_match=True``; parameters with an
    average go into a model without one only with ``exact_match=False`` (the trained policy alone)."""
    model = _diverged()
    plain = small_model(chain(6))
    _set_preference(plain.policy, 0)
    before = _weights(model.policy)
    with pytest.raises(ValueError, match="hold no policy_average.*exact_match=False"):
        model.set_parameters(plain.get_parameters())
    assert all(th.equal(a, b) for a, b in zip(before, _weights(model.policy)))  # nothing was loaded
    model.set_parameters(plain.get_parameters(), exact_match=False)
    obs = np.stack([model.observation_space.sample() for _ in range(8)])
    assert (model.predict(obs, deterministic=True)[0] == 0).all()  # the average now starts from the loaded weights
    assert all(th.equal(a, b) for a, b in zip(_weights(model.policy_average.module), _weights(plain.policy)))
    averaged = _diverged()
    with pytest.raises(ValueError, match="hold a policy_average.*set model.ema_decay"):
        plain.set_parameters(averaged.get_parameters())
    plain.set_parameters(averaged.get_parameters(), exact_match=False)
    assert all(th.equal(a, b) for a, b in zip(_weights(plain.policy), _weights(averaged.policy)))
    averaged.save(tmp_path / "averaged")
    restored = _diverged()
    restored.set_parameters(tmp_path / "averaged.zip")  # from a zip, with its average: nothing is restarted
    assert (restored.predict(obs, deterministic=True)[0] == 1).all()
