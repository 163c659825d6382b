"""Installs: the extras cover what the code and the tests import, CI runs the README's test command, and messages about
missing optional packages name the sb3-dirpg extra to install."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

tomllib = pytest.importorskip("tomllib")  # the standard library has it from Python 3.11
ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
FIRST_PARTY = {"sb3_dirpg", "tests"}


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
