"""The kernels' cache folder follows the source of every kernel module (sb3_dirpg/numba_cache.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numba
import pytest

import sb3_dirpg
from sb3_dirpg.numba_cache import kernel_source_digest, source_keyed_cache_dir, use_source_keyed_cache

KERNEL = "from numba import njit\n\n@njit(cache=True)\ndef f(x):\n    return x + {}\n"


def _package(root: Path) -> Path:
    """:param root: a temporary folder
    :return: a package there with a kernel module, a module that calls it, and a module without kernels"""
    (root / "inner").mkdir(parents=True)
    (root / "inner" / "callee.py").write_text(KERNEL.format(1))
    (root / "caller.py").write_text("from numba import njit\nfrom inner.callee import f\n\n@njit(cache=True)\ndef g(x):\n"
                                    "    return f(x)\n")  # fmt: skip
    (root / "plain.py").write_text("X = 1\n")
    return root


def test_digest_changes_with_any_kernel_module_and_only_with_them(tmp_path: Path) -> None:
    root = _package(tmp_path)
    first = kernel_source_digest(root)
    assert first == kernel_source_digest(root)
    (root / "plain.py").write_text("X = 2\n")
    assert kernel_source_digest(root) == first  # a module without kernels does not start a new cache
    (root / "inner" / "callee.py").write_text(KERNEL.format(2))  # the callee changes, its caller's file does not
    second = kernel_source_digest(root)
    assert second != first
    (root / "inner" / "callee.py").rename(root / "callee.py")  # the same source under another name
    assert kernel_source_digest(root) not in (first, second)


def test_the_package_compiles_into_the_folder_of_its_sources(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if os.environ.get("NUMBA_CACHE_DIR"):
        assert use_source_keyed_cache() is None  # the user's folder wins
        return
    assert numba.config.CACHE_DIR == str(source_keyed_cache_dir())  # set on import, before any kernel compiled
    assert Path(numba.config.CACHE_DIR).name == kernel_source_digest(Path(sb3_dirpg.__file__).parent)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(numba.config, "CACHE_DIR", numba.config.CACHE_DIR)  # restored after the test
    assert use_source_keyed_cache() == tmp_path / "sb3_dirpg" / "numba" / kernel_source_digest()
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    assert use_source_keyed_cache() is None


def test_a_changed_callee_is_recompiled_for_its_caller(tmp_path: Path) -> None:
    """The failure this module prevents, end to end: with numba's own folders, the caller keeps the old callee."""
    root = _package(tmp_path / "pkg")
    script = (
        "import sys, numba\n"
        f"sys.path.insert(0, {str(root)!r})\n"
        "from sb3_dirpg.numba_cache import source_keyed_cache_dir\n"
        "if sys.argv[1] == 'keyed':\n"
        f"    numba.config.CACHE_DIR = str(source_keyed_cache_dir(__import__('pathlib').Path({str(root)!r})))\n"
        "from caller import g\n"
        "print(g(0))\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("NUMBA_CACHE_DIR", None)

    def run(mode: str) -> int:
        return int(subprocess.run([sys.executable, "-c", script, mode], env=env, capture_output=True, text=True,
                                  check=True).stdout.split()[-1])  # fmt: skip

    for mode, stale in (("default", True), ("keyed", False)):
        (root / "inner" / "callee.py").write_text(KERNEL.format(1))
        assert run(mode) == 1
        (root / "inner" / "callee.py").write_text(KERNEL.format(2))
        assert run(mode) == (1 if stale else 2), mode
