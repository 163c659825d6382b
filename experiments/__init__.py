"""The paper's reproductions and the project's own experiments: ``python -m experiments.NAME`` from the root of a
checkout. Like the benchmarks (``python -m benchmarks.NAME``), they are not part of the installed package."""
