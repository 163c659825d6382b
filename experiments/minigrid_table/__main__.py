"""``python -m experiments.minigrid_table``."""

from experiments.minigrid_table.cli import main

main()
