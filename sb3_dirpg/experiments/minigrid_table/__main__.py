"""``python -m sb3_dirpg.experiments.minigrid_table``."""

from sb3_dirpg.experiments.minigrid_table.cli import main

main()
