"""Shared plumbing of the benchmarks: the folder of the committed results, and JSON output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]  # the source checkout that holds ``benchmarks/`` and ``sb3_dirpg/``
RESULTS = ROOT / "docs" / "results"


def write_json(path: str | Path, data: Any) -> None:
    """Write a benchmark's results as indented JSON and say where.

    :param path: the file to write
    :param data: JSON-serialisable results
    """
    Path(path).write_text(json.dumps(data, indent=2))
    print(f"wrote {path}")
