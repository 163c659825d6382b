"""The stopping rules of the search: how they are spelled, what they answer, and the flags of earlier releases."""

from __future__ import annotations

import pytest

from sb3_dirpg.search import BudgetStop, ImprovementStop, SearchConfig, SuccessStop, stop_rule
from sb3_dirpg.search.stopping import stop_from_flags


def test_a_rule_is_read_from_its_name_its_object_or_a_yaml_mapping() -> None:
    assert stop_rule("improvement") == ImprovementStop()
    assert stop_rule("budget") == BudgetStop()
    assert stop_rule({"success": {"refine": 100}}) == SuccessStop(refine=100)
    assert stop_rule(SuccessStop(improvement=True)) == SuccessStop(improvement=True)
    assert SearchConfig(stop="success").stop == SuccessStop()
    assert SuccessStop(refine=100).spelling == {"success": {"refine": 100}} and BudgetStop().spelling == "budget"


@pytest.mark.parametrize("value", ["early", True, {"success": {"refine_budget": 3}}, {"budget": {}, "success": {}}])
def test_a_rule_that_is_not_one_is_refused_with_the_names(value: object) -> None:
    with pytest.raises(ValueError, match="stop"):
        stop_rule(value, "DirPG")


@pytest.mark.parametrize("refine", [-1, 2.5, True, "100"])
def test_success_refuses_a_refining_budget_that_is_not_a_count(refine: object) -> None:
    with pytest.raises(ValueError, match="refine must be a non-negative integer"):
        SuccessStop(refine=refine)  # type: ignore[arg-type]


def test_the_rules_answer_as_the_four_flags_did() -> None:
    success, refined = SuccessStop(), SuccessStop(refine=20)
    assert success.ends_at_opt(True) and not success.ends_at_opt(False) and not refined.ends_at_opt(True)
    assert refined.budget_after_opt(100, True) == 20 and refined.budget_after_opt(10, True) == 10
    assert refined.budget_after_opt(100, False) == 100 and success.budget_after_opt(100, True) == 100
    assert success.ends_after_opt(improved=False, success=True, success_opt=False)
    assert not refined.ends_after_opt(improved=False, success=True, success_opt=True)
    assert refined.ends_after_opt(improved=True, success=True, success_opt=True)
    assert ImprovementStop().ends_after_opt(True, False, False) and not BudgetStop().ends_after_opt(True, True, True)
    assert SuccessStop(improvement=True).ends_after_opt(True, False, False)


def test_the_flags_of_earlier_releases_map_onto_one_rule() -> None:
    assert stop_from_flags(True, False, False, None, 100) == ImprovementStop()
    assert stop_from_flags(False, False, True, 50, 100) == BudgetStop()  # refining without stop_on_success did nothing
    assert stop_from_flags(False, True, False, None, 100) == SuccessStop()
    assert stop_from_flags(False, True, True, None, 300) == SuccessStop(refine=300)
    assert stop_from_flags(True, True, True, 100, 300) == SuccessStop(refine=100, improvement=True)
    with pytest.raises(ValueError, match="refine_budget"):
        stop_from_flags(False, True, True, 0, 100)


def test_max_trajectories_with_a_rule_that_ends_at_an_improvement_is_refused() -> None:
    with pytest.raises(ValueError, match="stop='budget'"):
        SearchConfig(max_trajectories=3)
    assert SearchConfig(max_trajectories=3, stop="budget").max_trajectories == 3


def test_a_hyperparameter_entry_with_the_flags_of_earlier_releases_trains_with_their_rule_and_a_warning() -> None:
    from sb3_dirpg import DirPG
    from sb3_dirpg.integrations.zoo import algorithm_kwargs
    from tests.helpers import chain

    entry = {"policy": "MlpPolicy", "search_budget": 40, "early_stop": False, "stop_on_success": True,
             "refine_success": True}  # fmt: skip
    with pytest.warns(FutureWarning, match=r"stop: \{'success': \{'refine': 40\}\}"):
        kwargs = algorithm_kwargs(entry)
    assert DirPG("MlpPolicy", chain(3), **kwargs).stop == SuccessStop(refine=40)
    with pytest.raises(ValueError, match="are both given"):
        algorithm_kwargs({**entry, "stop": "budget"})


def test_a_model_saved_before_the_stopping_rule_loads_with_the_rule_its_flags_spelled(tmp_path: object) -> None:
    """A zip written by a release with the four flags (its data holds them, and no ``stop``) loads with a warning and
    the same searches; given to ``load`` as keyword arguments, the flags are read the same way."""
    import json
    import zipfile
    from pathlib import Path

    from sb3_dirpg import DirPG
    from tests.helpers import chain

    path = Path(str(tmp_path)) / "model.zip"
    DirPG("MlpPolicy", chain(3), search_budget=40, seed=0).save(path)
    old = Path(str(tmp_path)) / "old.zip"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(old, "w") as target:
        for item in source.infolist():
            content = source.read(item.filename)
            if item.filename == "data":
                data = json.loads(content)
                del data["stop"]
                data.update(early_stop=False, stop_on_success=True, refine_success=True, refine_budget=25)
                content = json.dumps(data).encode()
            target.writestr(item, content)
    with pytest.warns(FutureWarning, match="saved by an earlier release"):
        model = DirPG.load(old, env=chain(3))
    assert model.stop == SuccessStop(refine=25) and "early_stop" not in vars(model)
    assert model.search_config() == DirPG("MlpPolicy", chain(3), search_budget=40, stop=SuccessStop(refine=25)).search_config()
    with pytest.warns(FutureWarning, match="stop='budget'"):
        assert DirPG.load(path, env=chain(3), early_stop=False).stop == BudgetStop()
