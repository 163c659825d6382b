"""Shared plumbing of the benchmarks: the folder of the committed results (JSON goes through
:func:`experiments.common.write_json`)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the source checkout that holds ``benchmarks/`` and ``sb3_dirpg/``
RESULTS = ROOT / "docs" / "results"
