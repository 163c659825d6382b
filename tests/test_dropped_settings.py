"""The settings this release dropped or moved out of the model (issue 80): files, keywords and saved models of the
previous release get what replaced them, or a refusal that names it."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest

from sb3_dirpg import DirPG
from sb3_dirpg.dirpg import RefineOnSuccess
from sb3_dirpg.dirpg.earlier_releases import DROPPED_SETTINGS
from sb3_dirpg.integrations.zoo import algorithm_kwargs, entry_callbacks
from sb3_dirpg.search.stopping import SuccessStop
from tests.helpers import chain


def test_an_entry_that_refines_with_refine_from_gets_the_callback_in_its_place() -> None:
    entry = {"policy": "MlpPolicy", "search_budget": 300, "stop": "success", "refine_from": 0.7,
             "refine_settings": {"learning_rate": 3e-4, "refine_budget": 100}}  # fmt: skip
    with pytest.warns(FutureWarning, match="RefineOnSuccess"):
        kwargs = algorithm_kwargs(entry)
    assert "refine_from" not in kwargs and "refine_settings" not in kwargs
    with pytest.warns(FutureWarning):
        (switch,) = entry_callbacks(entry)
    assert isinstance(switch, RefineOnSuccess) and switch.success_rate == 0.7
    assert switch.settings == {"learning_rate": 3e-4, "stop": {"success": {"refine": 100}}}
    model = DirPG("MlpPolicy", chain(3), **kwargs)
    switch.init_callback(model)  # the checks learn runs: the settings are the model's
    assert switch.settings == {"learning_rate": 3e-4, "stop": SuccessStop(refine=100)}
    with pytest.raises(ValueError, match="without refine_from"):
        algorithm_kwargs({"policy": "MlpPolicy", "refine_settings": {"gamma": 0.9}})


@pytest.mark.parametrize("name", sorted(set(DROPPED_SETTINGS) - {"refine_from", "refine_settings", "refine_started_at"}))
def test_a_dropped_setting_in_a_file_or_a_load_keyword_is_refused_with_what_replaced_it(name: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=rf"{name}=1: {re.escape(DROPPED_SETTINGS[name][:30])}"):
        algorithm_kwargs({"policy": "MlpPolicy", name: 1})
    DirPG("MlpPolicy", chain(3), search_budget=20, seed=0).save(tmp_path / "model")
    with pytest.raises(ValueError, match=rf"DirPG.load: .*{name}=1"):
        DirPG.load(tmp_path / "model", env=chain(3), **{name: 1})


def test_a_model_saved_with_dropped_settings_loads_without_them_and_says_so(tmp_path: Path) -> None:
    """A zip of the previous release holds ``refine_from``, ``greedy_coef``, ``strict_heuristic`` ... in its data: it loads
    with a FutureWarning naming each, and the model has none of them."""
    path = tmp_path / "model.zip"
    DirPG("MlpPolicy", chain(3), search_budget=20, seed=0).save(path)
    old = tmp_path / "old.zip"
    saved = dict(refine_from=0.9, refine_settings=None, refine_started_at=None, greedy_coef=0.0, ent_coef=0.0,
                 clip_range=0.2, update_per_episode=False, strict_heuristic=False, compiled_loop=True)  # fmt: skip
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(old, "w") as target:
        for item in source.infolist():
            content = source.read(item.filename)
            if item.filename == "data":
                content = json.dumps({**json.loads(content), **saved}).encode()
            target.writestr(item, content)
    with pytest.warns(FutureWarning, match="saved by an earlier release") as caught:
        model = DirPG.load(old, env=chain(3))
    message = str(caught[0].message)
    assert all(f"{name}=" in message for name in saved)
    assert not set(saved) & set(vars(model))
    model.learn(40)


def test_a_priority_is_read_from_its_name_its_object_or_a_yaml_mapping() -> None:
    from sb3_dirpg.search import AStarPriority, GumbelPriority, priority_rule

    assert priority_rule("gumbel") == GumbelPriority() and priority_rule("astar") == AStarPriority()
    assert priority_rule({"astar": {"alpha": 0.5, "depth_first": True}}) == AStarPriority(alpha=0.5, depth_first=True)
    assert AStarPriority(alpha=0.5).spelling == {"astar": {"alpha": 0.5}} and GumbelPriority().spelling == "gumbel"
    for bad, says in [("bfs", "must be one of"), ({"gumbel": {"alpha": 0.5}}, "takes the fields"),
                      ({"astar": {"alpha": 1.5}}, r"priority=.*alpha must lie in \[0, 1\]"),
                      ({"astar": {"depth_first": "no"}}, "depth_first must be a bool")]:  # fmt: skip
        with pytest.raises(ValueError, match=says):
            priority_rule(bad, "DirPG")


def test_alpha_and_depth_first_of_earlier_releases_are_read_as_the_priority_they_spelled(tmp_path: Path) -> None:
    """A hyperparameter file, ``load`` keywords and a saved model of the previous release spell the priority with
    ``alpha`` and ``depth_first``: each is read as the priority they spelled, with a FutureWarning; assigning them to a
    model is refused, naming the priority (it would be kept and ignored)."""
    from sb3_dirpg.search import AStarPriority

    entry = {"policy": "MlpPolicy", "priority": "astar", "alpha": 0.2, "depth_first": True}
    with pytest.warns(FutureWarning, match=r"priority=\{'astar': \{'depth_first': True, 'alpha': 0.2\}\}"):
        kwargs = algorithm_kwargs(entry)
    assert kwargs["priority"] == AStarPriority(alpha=0.2, depth_first=True) and "alpha" not in kwargs
    with pytest.raises(ValueError, match="alpha=0.3 weighs the heuristic in priority 'astar' only"):
        algorithm_kwargs({"policy": "MlpPolicy", "alpha": 0.3})
    with pytest.raises(ValueError, match="are both given"):
        algorithm_kwargs({"policy": "MlpPolicy", "priority": {"astar": {"alpha": 0.2}}, "alpha": 0.3})
    path = tmp_path / "model.zip"
    DirPG("MlpPolicy", chain(3), search_budget=20, seed=0, heuristic=lambda env: 1.0,
          priority={"astar": {"alpha": 0.2}}).save(path)  # fmt: skip
    old = tmp_path / "old.zip"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(old, "w") as target:
        for item in source.infolist():
            content = source.read(item.filename)
            if item.filename == "data":
                content = json.dumps({**json.loads(content), "priority": "astar", "alpha": 0.2, "depth_first": False}).encode()
            target.writestr(item, content)
    with pytest.warns(FutureWarning, match="saved by an earlier release"):
        model = DirPG.load(old, env=chain(3))
    assert model.priority == AStarPriority(alpha=0.2) and "alpha" not in vars(model)
    with pytest.warns(FutureWarning, match="priority rule"):
        assert DirPG.load(path, env=chain(3), priority="astar", alpha=0.5).priority == AStarPriority(alpha=0.5)
    for name in ("alpha", "depth_first", "early_stop", "greedy_coef"):
        with pytest.raises(ValueError, match=f"{name} is no setting since this release"):
            setattr(model, name, 0.5)


def test_n_workers_holds_the_backend_and_parallel_backend_of_earlier_releases_is_folded_into_it(tmp_path: Path) -> None:
    from sb3_dirpg.dirpg.workers import SearchWorkers

    assert DirPG("MlpPolicy", chain(3), n_workers=2).n_workers == SearchWorkers(2, "process")
    assert DirPG("MlpPolicy", chain(3), n_workers={"process": 1}).n_workers.spelling == 1
    for bad in (-1, 1.5, "2", {"process": -1}, {"mpi": 2}, {"ray": 1, "process": 1}):
        with pytest.raises(ValueError, match="n_workers"):
            DirPG("MlpPolicy", chain(3), n_workers=bad)
    with pytest.warns(FutureWarning, match=r"read as n_workers=2"):
        assert algorithm_kwargs({"policy": "MlpPolicy", "n_workers": 2, "parallel_backend": "process"})["n_workers"] == (
            SearchWorkers(2, "process"))  # fmt: skip
    with pytest.raises(ValueError, match="are both given"):
        algorithm_kwargs({"policy": "MlpPolicy", "n_workers": {"process": 2}, "parallel_backend": "process"})
    path = tmp_path / "model.zip"
    DirPG("MlpPolicy", chain(3), search_budget=20, seed=0).save(path)
    old = tmp_path / "old.zip"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(old, "w") as target:
        for item in source.infolist():
            content = source.read(item.filename)
            if item.filename == "data":
                content = json.dumps({**json.loads(content), "n_workers": 1, "parallel_backend": "process"}).encode()
            target.writestr(item, content)
    with pytest.warns(FutureWarning, match="parallel_backend='process'"):
        model = DirPG.load(old, env=chain(3))
    assert model.n_workers == SearchWorkers(1, "process") and "parallel_backend" not in vars(model)
    assert DirPG.load(path, env=chain(3)).n_workers == SearchWorkers(0, "process")  # this release's zip: no warning
