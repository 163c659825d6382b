"""DirPG's settings are declared once (issue 80): the constructor's signature, its docstring, the checks, the docs' page
and the search's settings are all read from the table, and held to it here."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

from sb3_dirpg import DirPG
from sb3_dirpg.common.settings import REQUIRED
from sb3_dirpg.search import SearchConfig

ROOT = Path(__file__).resolve().parents[1]


def test_the_signature_is_the_settings_table_in_order_with_its_defaults() -> None:
    parameters = list(inspect.signature(DirPG.__init__).parameters.values())[1:]
    assert [(p.name, p.default) for p in parameters] == [(s.name, s.default) for s in DirPG.SETTINGS]
    assert all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in parameters)  # SB3's explicit keywords
    assert len(parameters) <= 25  # issue 80's target (MaskablePPO takes 22)
    assert [s.name for s in DirPG.SETTINGS if s.default is REQUIRED] == ["policy", "env"]


def test_every_check_is_the_tables_and_every_checked_setting_is_an_argument() -> None:
    table = {s.name: s for s in DirPG.SETTINGS}
    assert set(DirPG.SETTING_CHECKS) <= set(table)
    for name, check in DirPG.SETTING_CHECKS.items():
        assert table[name].check is check, name


def test_the_docstring_and_the_docs_page_are_the_tables() -> None:
    import runpy

    doc = DirPG.__doc__ or ""
    positions = [doc.index(f":param {s.name}: ") for s in DirPG.SETTINGS]
    assert positions == sorted(positions) and "{parameters}" not in doc
    page = runpy.run_path(str(ROOT / "docs" / "scripts" / "settings_page.py"))["page"]()
    assert (ROOT / "docs" / "settings.md").read_text() == page, "run: python docs/scripts/settings_page.py > docs/settings.md"
    assert all(f"| `{s.name}` |" in page for s in DirPG.SETTINGS)


def test_the_search_reads_its_fields_from_the_table() -> None:
    fields = {field.name for field in dataclasses.fields(SearchConfig)}
    named = {s.search for s in DirPG.SETTINGS if isinstance(s.search, str)}
    assert named and named <= fields
    model = DirPG("MlpPolicy", "CartPole-v1", epsilon=2.0, search_budget=7, gamma=0.9, stop="budget",
                  priority={"gumbel": {"depth_first": True}})  # fmt: skip
    config = model.search_config()
    assert (config.epsilon, config.budget, config.gamma, config.stop.name, config.priority, config.depth_first) == (
        2.0, 7, 0.9, "budget", "gumbel", True)  # fmt: skip
