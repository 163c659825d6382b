"""``python docs/scripts/settings_page.py > docs/settings.md``: DirPG's settings page, printed from the settings table
(:data:`sb3_dirpg.dirpg.settings.SETTINGS`); a test holds the page to the table."""

from __future__ import annotations

from sb3_dirpg.common.settings import markdown_table
from sb3_dirpg.dirpg.settings import SETTINGS

HEADER = """# DirPG's settings

Every argument of `DirPG`, by group, printed from its settings table (`sb3_dirpg.dirpg.settings.SETTINGS`) by
`python docs/scripts/settings_page.py > docs/settings.md`. The constructor's signature, its docstring, the checks on
construction, assignment and `load`, and this page are all read from that table, and a test holds them to it. Every
setting can be changed later by assignment (`model.priority = {"astar": {"alpha": 0.2}}`) or as a keyword of `load`,
with the constructor's checks.
"""


def page() -> str:
    """:return: the page, Markdown"""
    return HEADER + "\n" + markdown_table(SETTINGS)


if __name__ == "__main__":
    print(page(), end="")
