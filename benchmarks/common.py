"""Shared plumbing of the benchmarks: the folder of the committed results (JSON goes through
:func:`experiments.common.write_json`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sb3_dirpg.search import SearchConfig

ROOT = Path(__file__).resolve().parents[1]  # the source checkout that holds ``benchmarks/`` and ``sb3_dirpg/``
RESULTS = ROOT / "docs" / "results"


class PythonLoop:
    """Mixed into DirPG (``class M(PythonLoop, DirPG)``): its searches make one Python round trip per lockstep
    iteration (the search's ``compiled_loop`` off), for comparisons with the compiled loop, which learns the same."""

    def search_config(self, **overrides: Any) -> SearchConfig:
        """:param overrides: fields to change
        :return: the model's search settings, the compiled loop off unless ``overrides`` say otherwise"""
        return super().search_config(**{"compiled_loop": False, **overrides})  # type: ignore[misc]
