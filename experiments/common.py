"""Shared plumbing of the experiments (the paper's reproductions and the project's own, which live in the checkout and
are not installed with the package): command line, output folder, seeds, curves with spread, JSON and PNG output."""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

#: the checkout the experiments live in (they are not part of the installed package)
ROOT = Path(__file__).resolve().parents[1]


def default_out() -> Path:
    """:return: where an experiment writes its results unless ``--out`` says otherwise: the checkout's
    ``docs/results/``, where the committed results are"""
    return ROOT / "docs" / "results"


def subprocess_env() -> dict[str, str]:
    """:return: the environment for a subprocess that trains a cell (rl-zoo3's ``train``): this one, with the checkout
    first on ``PYTHONPATH``, so that it imports the experiments' callbacks from wherever it was started"""
    paths = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def at_least(minimum: int) -> Callable[[str], int]:
    """:param minimum: the smallest value taken
    :return: an ``argparse`` type for whole numbers of at least ``minimum`` (``1e6`` and ``1_000_000`` are taken)"""

    def whole_number(text: str) -> int:
        value = _whole(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of at least {minimum}")
        return value

    return whole_number


#: counts (budgets, interactions, processes, maps)
positive_int = at_least(1)
#: seeds, and counts where 0 means none
nonnegative_int = at_least(0)


def _whole(text: str) -> int:
    """:param text: an argument
    :return: it as an int (``1e6`` and ``1_000_000`` are taken)"""
    try:
        return int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not value.is_integer():
            raise argparse.ArgumentTypeError(f"{text!r}: give a whole number") from None
        return int(value)


def split_key_value(text: str) -> tuple[str, Any]:
    """Read one setting in rl-zoo3's ``-params`` syntax, ``KEY:VALUE`` with the value a Python expression
    (``learning_rate:3e-3``, ``priority:'astar'``, ``policy_kwargs:dict(net_arch=[64])``), as rl-zoo3 reads it.

    :param text: the setting
    :return: the key and the value
    """
    key, colon, value = text.partition(":")
    if not colon or not key.strip().isidentifier():
        raise ValueError(f"{text!r}: write KEY:VALUE, e.g. learning_rate:3e-3 (a colon, not '=')")
    try:
        return key.strip(), eval(value)  # noqa: S307 (rl-zoo3 reads -params the same way)
    except Exception as error:  # noqa: BLE001 (any error of the expression is the user's to fix)
        raise ValueError(
            f"{text!r}: the value {value!r} is not a Python expression ({type(error).__name__}: {error}); quote a word, "
            f"e.g. {key}:'{value}'"
        ) from None


def parse_params(params: Sequence[str]) -> dict[str, Any]:
    """:param params: ``KEY:VALUE`` strings (:func:`split_key_value`)
    :return: the values by key"""
    return dict(split_key_value(param) for param in params)


def key_value(text: str) -> str:
    """An ``argparse`` type for a ``KEY:VALUE`` setting (:func:`split_key_value`): refused on the command line, before
    any work, where it cannot be read.

    :param text: the argument
    :return: the argument
    """
    try:
        split_key_value(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def experiment_parser(description: str | None) -> argparse.ArgumentParser:
    """The common command line: ``--full`` (the paper's scale), ``--seeds``, ``--out``, ``--threads``.

    :param description: the module docstring
    :return: a parser to which an experiment may add its own options
    """
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="run at the paper's scale (hours) instead of the quick default")
    parser.add_argument("--seeds", type=positive_int, default=None,
                        help="number of independent runs (default: the experiment's)")
    parser.add_argument("--out", type=Path, default=default_out(), help="folder of the JSON and PNG results (%(default)s)")
    parser.add_argument("--threads", type=positive_int, default=1, help="torch threads")
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
