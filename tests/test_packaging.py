"""Installs: the extras cover what the code, the benchmarks and the tests import, CI runs the README's test command,
messages about missing optional packages name the sb3-dirpg extra to install, the wheel ships the package without the
benchmarks, and the experiments (outside the package) write their results into the checkout."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import packages_distributions, version
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

tomllib = pytest.importorskip("tomllib")  # the standard library has it from Python 3.11
ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
FIRST_PARTY = {"sb3_dirpg", "experiments", "benchmarks", "tests"}


def requirement_names(requirements: list[str]) -> set[str]:
    """:return: the normalised distribution names of requirement strings"""
    return {re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0].lower().replace("_", "-") for req in requirements}


def imported_top_level(paths: list[Path]) -> set[str]:
    """:return: the top-level modules imported anywhere in the given Python files"""
    names: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def third_party_distributions(modules: set[str]) -> set[str]:
    """:return: the distributions that provide the non-standard-library, non-project modules"""
    mapping = packages_distributions()
    dists: set[str] = set()
    for module in modules - FIRST_PARTY - set(sys.stdlib_module_names):
        assert module in mapping, f"{module} is imported but no installed distribution provides it"
        dists.update(d.lower().replace("_", "-") for d in mapping[module])
    return dists


def test_tests_extra_covers_every_import_of_the_suite() -> None:
    declared = requirement_names(PYPROJECT["project"]["dependencies"] + PYPROJECT["project"]["optional-dependencies"]["tests"])
    needed = third_party_distributions(imported_top_level(sorted((ROOT / "tests").glob("*.py"))))
    assert needed <= declared, f"imported by the tests but not in [tests] or the dependencies: {needed - declared}"


def test_tests_extra_covers_the_benchmarks() -> None:
    """The benchmarks run from a checkout set up for the tests."""
    declared = requirement_names(PYPROJECT["project"]["dependencies"] + PYPROJECT["project"]["optional-dependencies"]["tests"])
    navix_side = ROOT / "benchmarks" / "navix_ppo.py"  # its NAVIX worker runs in another interpreter, built from [navix]
    needed = third_party_distributions(imported_top_level(sorted(set((ROOT / "benchmarks").glob("*.py")) - {navix_side})))
    assert needed <= declared, f"imported by the benchmarks but not in [tests] or the dependencies: {needed - declared}"
    navix_extra = requirement_names(PYPROJECT["project"]["optional-dependencies"]["navix"])
    outside = imported_top_level([navix_side]) - FIRST_PARTY - set(sys.stdlib_module_names) - set(packages_distributions())
    assert outside <= navix_extra, f"imported by benchmarks/navix_ppo.py but in no extra: {outside - navix_extra}"
    assert third_party_distributions(imported_top_level([navix_side]) - outside) <= declared


def test_tests_extra_covers_the_experiments() -> None:
    """The experiments run from a checkout set up for the tests."""
    declared = requirement_names(PYPROJECT["project"]["dependencies"] + PYPROJECT["project"]["optional-dependencies"]["tests"])
    needed = third_party_distributions(imported_top_level(sorted((ROOT / "experiments").rglob("*.py"))))
    assert needed <= declared, f"imported by the experiments but not in [tests] or the dependencies: {needed - declared}"


def test_the_package_never_imports_the_benchmarks_or_the_experiments() -> None:
    """``benchmarks/`` and ``experiments/`` are not in the wheel: an import of them from the package would fail once
    installed."""
    imported = imported_top_level(sorted((ROOT / "sb3_dirpg").rglob("*.py")))
    assert not {"benchmarks", "experiments"} & imported


def test_zoo_extra_covers_the_bridge_and_the_undeclared_requests() -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    declared = requirement_names(PYPROJECT["project"]["dependencies"] + extras["zoo"])
    bridge = [ROOT / "sb3_dirpg" / "integrations" / "zoo.py", ROOT / "sb3_dirpg" / "integrations" / "zoo_samplers.py"]
    needed = third_party_distributions(imported_top_level(bridge))
    assert needed <= declared, needed - declared
    # rl-zoo3 imports these without declaring them (requests) or the bridge's features need them (--optimize, -P)
    for name in ("requests", "optuna", "pandas", "tqdm", "rich"):
        assert name in requirement_names(extras["zoo"]) and name in requirement_names(extras["tests"]), name


def test_ci_runs_the_readme_test_command_in_a_venv_built_as_the_readme_builds_it() -> None:
    readme = (ROOT / "README.md").read_text()
    command = next(line for line in readme.splitlines() if '.[tests]"' in line and "pytest" in line)
    steps = [step.strip() for step in command.split("&&")]
    ci = (ROOT / ".ci" / "run").read_text()
    ci_lines = [line.strip().replace(" --quiet", "") for line in ci.splitlines()]
    positions = [ci_lines.index(step) for step in steps]  # every step of the README command, exactly
    assert positions == sorted(positions)
    docs_install = next(i for i, line in enumerate(ci_lines) if '".[docs]"' in line)
    assert docs_install > positions[-1], "the docs extra must be installed only after the tests ran"
    assert not any("[tests," in line or ",docs]" in line for line in ci_lines)


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_zoo_bridge_without_rl_zoo3_names_the_extra() -> None:
    # sys.modules[name] = None makes `import name` fail as if the package were not installed
    code = (
        "import runpy, sys; sys.modules['rl_zoo3'] = None; "
        "runpy.run_module('sb3_dirpg.integrations.zoo', run_name='__main__')"
    )
    done = run_python(code)
    assert done.returncode != 0
    assert "pip install sb3-dirpg[zoo]" in done.stderr
    assert "ModuleNotFoundError" not in done.stderr


def test_zoo_bridge_without_requests_names_the_extra() -> None:
    done = run_python("import sys; sys.modules['requests'] = None; import sb3_dirpg.integrations.zoo")
    assert done.returncode != 0 and "pip install sb3-dirpg[zoo]" in done.stderr


def test_progress_bar_without_tqdm_names_the_extra(monkeypatch) -> None:
    from sb3_dirpg.common.callbacks import InteractionProgressBar

    monkeypatch.setitem(sys.modules, "tqdm.rich", None)
    with pytest.raises(ImportError, match=re.escape("pip install sb3-dirpg[extra]")):
        InteractionProgressBar()


def build_requirements_missing() -> str | None:
    """:return: why this environment cannot build the wheel without downloading anything, or None if it can"""
    if importlib.util.find_spec("setuptools") is None:
        return "setuptools is not installed"
    major, minor = (int(part) for part in re.findall(r"\d+", version("setuptools"))[:2])
    if (major, minor) < (70, 1) and importlib.util.find_spec("wheel") is None:  # setuptools ships bdist_wheel from 70.1
        return f"setuptools {major}.{minor} builds wheels only with the wheel package, which is not installed"
    return None


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built by the project's build backend from a copy of this checkout (a build writes ``build/`` and
    ``*.egg-info`` beside the sources), benchmarks and tests included in the copy."""
    missing = build_requirements_missing()
    if missing:
        pytest.skip(f"cannot build the wheel here: {missing}")
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for name in ("sb3_dirpg", "experiments", "benchmarks", "tests"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    dist = tmp_path_factory.mktemp("dist")
    code = f"from setuptools import build_meta; print(build_meta.build_wheel({str(dist)!r}))"
    done = subprocess.run([sys.executable, "-c", code], cwd=source, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return dist / done.stdout.strip().splitlines()[-1]


def test_the_wheel_ships_the_package_and_its_quickstart_but_no_experiments_or_benchmarks(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names if ".dist-info/" not in name} == {"sb3_dirpg"}
    assert "sb3_dirpg/quickstart.py" in names and "sb3_dirpg/zoo_hyperparams/dirpg.yml" in names
    assert not [name for name in names if name.startswith(("sb3_dirpg/experiments/", "sb3_dirpg/benchmarks/"))]
    benchmarks = {path.stem for path in (ROOT / "benchmarks").glob("*.py")} - {"__init__", "common"}
    assert {"throughput", "paired_speed", "ray_scaling"} <= benchmarks  # they exist, in the checkout
    assert (ROOT / "experiments" / "minigrid_table" / "__main__.py").is_file()
    assert not [name for name in names if name.startswith("sb3_dirpg/") and Path(name).stem in benchmarks]


def test_experiments_write_to_the_checkouts_results_and_their_subprocesses_import_them_from_anywhere() -> None:
    from experiments.common import default_out, subprocess_env

    assert default_out() == ROOT / "docs" / "results"
    code = "import experiments.held_out as m; print(m.__file__)"
    done = subprocess.run([sys.executable, "-c", code], cwd="/", env=subprocess_env(), capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert Path(done.stdout.strip()).is_relative_to(ROOT / "experiments")


def test_an_installed_package_runs_its_quickstart_and_holds_no_experiments(wheel: Path, tmp_path: Path) -> None:
    site, work = tmp_path / "site-packages", tmp_path / "work"
    zipfile.ZipFile(wheel).extractall(site)  # what pip installs of a pure-Python wheel
    work.mkdir()
    code = (
        "import importlib.util as u, sb3_dirpg.quickstart as q; print(q.__file__); "
        "print(u.find_spec('experiments') is None and u.find_spec('sb3_dirpg.experiments') is None)"
    )
    env = dict(os.environ, PYTHONPATH=str(site))
    done = subprocess.run([sys.executable, "-c", code], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    imported, absent = done.stdout.strip().splitlines()[-2:]
    assert Path(imported).is_relative_to(site)
    assert absent == "True"
