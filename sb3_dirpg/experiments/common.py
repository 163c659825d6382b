"""Shared plumbing of the paper-reproduction experiments: command line, output folder, seeds, curves with spread, JSON and
PNG output."""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

PACKAGE = Path(__file__).resolve().parents[1]  # the ``sb3_dirpg`` folder this module was imported from


def source_checkout(package: Path = PACKAGE) -> Path | None:
    """The source checkout the package was imported from, if it was: the package's parent folder, when that holds the
    project's ``pyproject.toml`` and the committed results ``docs/results/`` (an installed package's parent is
    ``site-packages``, which holds neither).

    :param package: the ``sb3_dirpg`` folder
    :return: the checkout's root, or None
    """
    root = package.parent
    if (root / "pyproject.toml").is_file() and (root / "docs" / "results").is_dir():
        return root
    return None


def default_out(package: Path = PACKAGE) -> Path:
    """Where an experiment writes its results unless ``--out`` says otherwise: ``docs/results/`` of the source checkout
    the package was imported from (where the committed results are), else ``results/`` in the current directory.

    :param package: the ``sb3_dirpg`` folder
    :return: the output folder
    """
    root = source_checkout(package)
    return root / "docs" / "results" if root is not None else Path("results")


def experiment_parser(description: str | None) -> argparse.ArgumentParser:
    """The common command line: ``--full`` (the paper's scale), ``--seeds``, ``--out``, ``--threads``.

    :param description: the module docstring
    :return: a parser to which an experiment may add its own options
    """
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="run at the paper's scale (hours) instead of the quick default")
    parser.add_argument("--seeds", type=int, default=None, help="number of independent runs (default: the experiment's)")
    parser.add_argument("--out", type=Path, default=default_out(), help="folder of the JSON and PNG results (%(default)s)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    return parser


def setup_run(args: argparse.Namespace) -> float:
    """Set torch threads, create the output folder.

    :param args: parsed arguments
    :return: the start time (``time.perf_counter()``)
    """
    import torch as th

    th.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    return time.perf_counter()


def scaled_settings(args: argparse.Namespace, quick: dict[str, Any], full: dict[str, Any]) -> dict[str, Any]:
    """The settings of a run: the paper's scale with ``--full``, else the quick default, then every command-line value
    given for a setting of the same name.

    :param args: parsed arguments
    :param quick: the quick default settings
    :param full: the paper-scale settings (same keys)
    :return: a new settings dict
    """
    settings = dict(full if args.full else quick)
    for key in settings:
        value = getattr(args, key, None)
        if value is not None:
            settings[key] = value
    return settings


def mean_and_spread(curves: Sequence[Sequence[float]], band: str = "ci95") -> dict[str, list[float]]:
    """Pointwise mean over runs with a spread: a 95% normal confidence band of the mean, or min-max.

    :param curves: one curve per run, all of the same length
    :param band: ``"ci95"`` or ``"minmax"``
    :return: ``mean``, ``low`` and ``high`` lists
    """
    values = np.asarray(curves, dtype=np.float64)
    mean = values.mean(axis=0)
    if band == "minmax" or len(values) < 2:
        low, high = values.min(axis=0), values.max(axis=0)
    else:
        half = 1.96 * values.std(axis=0, ddof=1) / np.sqrt(len(values))
        low, high = mean - half, mean + half
    return {"mean": mean.tolist(), "low": low.tolist(), "high": high.tolist()}


def plot_band(ax: Any, x: Sequence[float], stats: dict[str, list[float]], label: str, **style: Any) -> None:
    """Draw a mean curve and its spread on a matplotlib axis.

    :param ax: the axis
    :param x: the x values
    :param stats: the output of :func:`mean_and_spread`
    :param label: legend label
    :param style: line style keywords
    """
    (line,) = ax.plot(x, stats["mean"], label=label, **style)
    ax.fill_between(x, stats["low"], stats["high"], color=line.get_color(), alpha=0.2, linewidth=0)


def write_json(path: str | Path, data: Any, announce: bool = False) -> Path:
    """Write JSON atomically (a reader, such as a run resumed after an interrupt, never sees half a file); numpy
    scalars and arrays are written as numbers and lists.

    :param path: the file
    :param data: JSON-serialisable data
    :param announce: print where it went
    :return: the path
    """
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=_json_default))
    os.replace(tmp, path)
    if announce:
        print(f"wrote {path}")
    return path


def save_results(out: Path, name: str, data: dict[str, Any], figure: Any, started: float) -> Path:
    """Write ``name.json`` (with the wall time) and ``name.png`` into ``out``.

    :param out: the output folder
    :param name: the experiment name
    :param data: JSON-serialisable results
    :param figure: a matplotlib figure
    :param started: the start time from :func:`setup_run`
    :return: the JSON path
    """
    data = dict(data, wall_time_s=round(time.perf_counter() - started, 1))
    path = write_json(out / f"{name}.json", data)
    figure.savefig(out / f"{name}.png", dpi=90, bbox_inches="tight")
    print(f"wrote {path} and {out / f'{name}.png'} ({data['wall_time_s']} s)")
    return path


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot serialise {type(value).__name__}")


def refresh_block(page: Path, name: str, text: str) -> bool:
    """Replace what a Markdown page holds between ``<!-- NAME start -->`` and ``<!-- NAME end -->`` (a generated table
    that the page shows), so that the page cannot fall behind the results it quotes.

    :param page: the Markdown page
    :param name: the block's name in its markers
    :param text: the new content of the block
    :return: whether the page has the block (a page without it is left as it is)
    """
    start, end = f"<!-- {name} start -->", f"<!-- {name} end -->"
    content = page.read_text() if page.is_file() else ""
    if start not in content or end not in content.split(start, 1)[1]:
        return False
    head, rest = content.split(start, 1)
    page.write_text(f"{head}{start}\n\n{text.strip()}\n\n{end}{rest.split(end, 1)[1]}")
    return True
