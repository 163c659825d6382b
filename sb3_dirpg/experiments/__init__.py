"""The quickstart and the paper's reproductions: ``python -m sb3_dirpg.experiments.NAME``. The benchmarks of the
project's own speed are not part of the package: ``python -m benchmarks.NAME`` from a source checkout."""
