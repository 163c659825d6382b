"""Simulator-cloning wrapper: seeded reset, snapshot and restore of a gymnasium env."""

from sb3_dirpg.simulator.api_check import EnvAPIError
from sb3_dirpg.simulator.cloners import DeepcopyCloner, FieldsCloner
from sb3_dirpg.simulator.registry import (
    ChainCloner,
    Cloner,
    NondeterministicEnvError,
    NotClonableError,
    find_cloner,
    register_cloner,
    register_wrapper_attrs,
)
from sb3_dirpg.simulator.replay import ReplayCloner
from sb3_dirpg.simulator.self_check import NondeterministicResetWarning
from sb3_dirpg.simulator.unwrap import strip_monitor
from sb3_dirpg.simulator.wrapper import SimulatorWrapper, Snapshot

__all__ = [
    "ChainCloner",
    "Cloner",
    "DeepcopyCloner",
    "EnvAPIError",
    "FieldsCloner",
    "NondeterministicEnvError",
    "NondeterministicResetWarning",
    "NotClonableError",
    "ReplayCloner",
    "SimulatorWrapper",
    "Snapshot",
    "find_cloner",
    "register_cloner",
    "register_wrapper_attrs",
    "strip_monitor",
]
