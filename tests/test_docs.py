"""Execute every ```python block of the documentation pages (``docs/*.md``), page by page, so the examples cannot rot.

The blocks of one page run in order in one namespace (like a reader's session), in a fresh working directory.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.integration

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def python_blocks(page: Path) -> list[tuple[int, str]]:
    """:return: ``(line number, source)`` of every ```python block of a markdown page"""
    text = page.read_text()
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in BLOCK.finditer(text)]


PAGES = sorted(page for page in DOCS.glob("*.md") if python_blocks(page))


def test_pages_with_examples_are_found() -> None:
    names = {page.name for page in PAGES}
    assert {"index.md", "install.md", "heuristics.md", "zoo.md", "ppo.md"} <= names


def test_block_extraction(tmp_path) -> None:
    page = tmp_path / "page.md"
    page.write_text("intro\n```python\nx = 1\n```\n\n```bash\nls\n```\n```python\ny = 2\n```\n")
    assert python_blocks(page) == [(3, "x = 1\n"), (10, "y = 2\n")]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_examples_run(page: Path, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    torch.set_num_threads(1)
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    for line, source in python_blocks(page):
        code = compile(source, f"{page.name}:{line}", "exec")
        exec(code, namespace)  # noqa: S102  (the documentation's own examples)


def test_the_zoo_page_names_every_entry_of_the_dirpg_file() -> None:
    """``docs/zoo.md`` lists every entry of ``zoo_hyperparams/dirpg.yml`` (issue 80: it named 6 of 25 MiniGrid entries)."""
    import yaml

    root = Path(__file__).resolve().parents[1]
    entries = yaml.load((root / "zoo_hyperparams" / "dirpg.yml").read_text(), Loader=yaml.UnsafeLoader)
    page = (root / "docs" / "zoo.md").read_text()
    assert [env_id for env_id in entries if f"`{env_id}`" not in page] == []
