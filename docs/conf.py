"""Sphinx configuration of the sb3-dirpg documentation (MyST markdown pages, autodoc with SB3-style docstrings)."""

from __future__ import annotations

import re
from typing import Any

import sb3_dirpg

project = "sb3-dirpg"
author = "sb3-dirpg contributors"
copyright = "2025, sb3-dirpg contributors"  # noqa: A001  (Sphinx's name)
release = sb3_dirpg.__version__
version = release

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.mathjax"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "scripts", "results/*.md"]  # result fragments are included by results.md

myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

# The docstrings use reST field lists (``:param x:``, ``:return:``), which autodoc renders without napoleon.
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented"
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_inherit_docstrings = False

html_theme = "sphinx_rtd_theme"
html_static_path = ["_static"]
html_title = f"sb3-dirpg {release}"


# -- SB3-style docstrings --------------------------------------------------------------------------------------------
# The package writes short docstrings as ``""":param x: ...\n        :return: ..."""``: after dedenting, a field that
# continues on the next line loses its indentation, which reST reads as the end of the field list. And ``|E|`` (the
# number of edges) is a substitution reference in reST. Both are fixed on the fly, outside inline literals.

_LITERAL = re.compile(r"(``.+?``)")
_FIELD = re.compile(r"^:[A-Za-z_]+( [^:`]+)?:(\s|$)")  # ``:param x:``, ``:return:``; not a role like ``:class:`X```
_BARS = re.compile(r"(?<![\\`])\|([^|\s`](?:[^|`]*[^|\s`])?)\|")


def _escape_bars(line: str) -> str:
    parts = _LITERAL.split(line)
    return "".join(part if part.startswith("``") else _BARS.sub(r"\\|\1\\|", part) for part in parts)


def tidy_docstring(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """Indent the continuation lines of fields and escape ``|word|`` outside literals.

    :param app: the Sphinx application
    :param what: kind of object
    :param name: its full name
    :param obj: the object
    :param options: autodoc options
    :param lines: the docstring lines, edited in place
    """
    in_field = False
    for i, line in enumerate(lines):
        if not line.strip():
            in_field = False
            continue
        if _FIELD.match(line):
            in_field = True
        elif in_field and not line.startswith(" "):
            line = "   " + line
        lines[i] = _escape_bars(line)


def setup(app: Any) -> None:
    """:param app: the Sphinx application"""
    app.connect("autodoc-process-docstring", tidy_docstring)
