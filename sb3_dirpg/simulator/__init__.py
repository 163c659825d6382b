"""Simulator-cloning wrapper: seeded reset, snapshot and restore of a gymnasium env."""

from sb3_dirpg.simulator.registry import Cloner, find_cloner, register_cloner

__all__ = ["Cloner", "find_cloner", "register_cloner"]
