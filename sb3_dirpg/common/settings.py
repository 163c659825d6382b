"""The settings of an algorithm, each declared once (:class:`Setting`): its name, default, check, group and doc.

An algorithm's table is the one place a setting is written. Its constructor keeps SB3's explicit keyword signature,
and a test holds that signature to the table (names, order, defaults). The checks run on construction, on
assignment and in ``load`` (:func:`setting_checks`), the class docstring's parameters (:func:`parameters_doc`), the
docs' table (:func:`markdown_table`, ``python -m sb3_dirpg.dirpg.settings``) and the search's settings
(:func:`search_fields`) are all read from it.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["GROUPS", "REQUIRED", "Setting", "markdown_table", "parameters_doc", "search_fields", "setting_checks"]

#: the default of an argument without one (``policy``, ``env``), as :mod:`inspect` writes it
REQUIRED = inspect.Parameter.empty

#: what each group of settings is about, in the order the docs list them
GROUPS = {
    "algorithm": "what the algorithm computes",
    "search": "the search for a_dir",
    "update": "the update",
    "run": "how it runs: the results do not depend on them",
    "sb3": "SB3's own arguments",
}


@dataclass(frozen=True)
class Setting:
    """One setting of an algorithm.

    :param name: the keyword argument and attribute
    :param default: its default in the constructor
    :param doc: what it does, as the docstring's ``:param:`` text (reStructuredText, one paragraph)
    :param group: one of :data:`GROUPS`
    :param check: ``check(algo, value) -> value``: raises a ValueError naming the setting, or returns the value to keep;
        None where SB3 takes it as it is (``policy_kwargs``, ``verbose``, ...)
    :param search: how the search reads it: the name of its :class:`~sb3_dirpg.search.SearchConfig` field, a function
        of the value giving several fields, or None where the search does not read it
    """

    name: str
    default: Any
    doc: str
    group: str
    check: Callable[[str, Any], Any] | None = None
    search: str | Callable[[Any], dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        if self.group not in GROUPS:
            raise ValueError(f"Setting {self.name}: group must be one of {list(GROUPS)}, got {self.group!r}")


def setting_checks(table: Sequence[Setting]) -> dict[str, Callable[[str, Any], Any]]:
    """:param table: an algorithm's settings
    :return: the checks by name, for the settings that have one"""
    return {setting.name: setting.check for setting in table if setting.check is not None}


def search_fields(table: Sequence[Setting], values: Callable[[str], Any]) -> dict[str, Any]:
    """:param table: an algorithm's settings
    :param values: the value of a setting, by name (``lambda name: getattr(model, name)``)
    :return: the search's settings that the table's settings give, by field"""
    fields: dict[str, Any] = {}
    for setting in table:
        if isinstance(setting.search, str):
            fields[setting.search] = values(setting.name)
        elif setting.search is not None:
            fields.update(setting.search(values(setting.name)))
    return fields


def parameters_doc(table: Sequence[Setting], indent: int = 4, width: int = 120) -> str:
    """:param table: an algorithm's settings
    :param indent: the docstring's indentation
    :param width: the longest line
    :return: the ``:param name: doc`` lines of a docstring, one per setting, in the table's order"""
    pad = " " * indent
    lines = [
        textwrap.fill(f":param {setting.name}: {setting.doc}", width=width, initial_indent=pad, subsequent_indent=pad + "    ")
        for setting in table
    ]
    return "\n".join(lines)


def markdown_table(table: Sequence[Setting]) -> str:
    """:param table: an algorithm's settings
    :return: a Markdown table of them by group (setting, default, what it does)"""
    rows = []
    for group, about in GROUPS.items():
        members = [setting for setting in table if setting.group == group]
        if not members:
            continue
        rows += ["", f"**{group}**: {about}", "", "| setting | default | what it does |", "| --- | --- | --- |"]
        rows += [f"| `{s.name}` | {_default(s.default)} | {_markdown(s.doc)} |" for s in members]
    return "\n".join(rows).strip() + "\n"


def _default(value: Any) -> str:
    """:param value: a setting's default
    :return: it in a Markdown table cell"""
    return "required" if value is REQUIRED else f"`{value!r}`"


def _markdown(doc: str) -> str:
    """:param doc: reStructuredText of a docstring
    :return: the same as Markdown for a table cell (double backquotes to single, roles dropped, no bars)"""
    for role in (":class:", ":meth:", ":mod:", ":func:", ":data:"):
        doc = doc.replace(role, "")
    return doc.replace("``", "`").replace("|", "\\|").replace("~sb3_dirpg", "sb3_dirpg")
