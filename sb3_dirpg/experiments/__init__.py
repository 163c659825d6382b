"""Paper reproductions and benchmarks: ``python -m sb3_dirpg.experiments.NAME``."""
