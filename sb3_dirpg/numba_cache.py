"""Where numba keeps the package's compiled kernels: a folder named by the hash of every kernel module's source.

numba's on-disk cache (``@njit(cache=True)``) checks only the source file of the function it compiled. A kernel that
calls a kernel of another module keeps its compiled copy of the old callee after that module changes, and runs it.
Naming the cache folder by the hash of all the package's kernel modules makes any change to one of them start a new
cache. :func:`use_source_keyed_cache` runs when the package is imported, before any kernel is compiled; a
``NUMBA_CACHE_DIR`` that the user set wins, as does an unwritable cache folder (numba's default then applies).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent
KERNEL_MARK = b"cache=True"


def kernel_source_digest(root: Path = PACKAGE_ROOT) -> str:
    """:param root: a package folder
    :return: the hash of the names and sources of its modules that ask numba to cache (16 hex digits)"""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        source = path.read_bytes()
        if KERNEL_MARK in source:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + source + b"\0")
    return digest.hexdigest()[:16]


def source_keyed_cache_dir(root: Path = PACKAGE_ROOT) -> Path:
    """:param root: a package folder
    :return: the cache folder for its kernels: ``$XDG_CACHE_HOME/sb3_dirpg/numba/DIGEST`` (``~/.cache`` by default)"""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "sb3_dirpg" / "numba" / kernel_source_digest(root)


def use_source_keyed_cache() -> Path | None:
    """Point numba's cache at :func:`source_keyed_cache_dir`, unless ``NUMBA_CACHE_DIR`` is set or the folder cannot
    be made.

    :return: the folder now in use, or None where numba's own choice stays
    """
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None
    import numba

    folder = source_keyed_cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    if not os.access(folder, os.W_OK):
        return None
    numba.config.CACHE_DIR = str(folder)
    return folder
