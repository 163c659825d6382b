"""Which batch simulator runs the search: the envs themselves, or a compiled copy of their dynamics.

An env family may register a compiled simulator (a :class:`~sb3_dirpg.common.vec_simulator.VecSimulator` subclass
that steps array-held states) with a function that says why it cannot run a given env chain. ``simulator_backend``
picks: ``"env"`` always steps the envs (snapshot, restore, step), ``"compiled"`` requires a compiled simulator and
says why none fits, ``"auto"`` (the default) uses one where it fits. Both give the same transitions, so the same seed
learns the same parameters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sb3_dirpg.common.vec_simulator import VecSimulator
from sb3_dirpg.search.protocols import Heuristic
from sb3_dirpg.simulator import SimulatorWrapper
from sb3_dirpg.simulator.cloners import env_name

SIMULATOR_BACKENDS = ("auto", "env", "compiled")

#: why a simulator cannot run an env chain (None: it can)
Unsupported = Callable[[SimulatorWrapper, "Heuristic | None"], "str | None"]
_COMPILED: list[tuple[Unsupported, type[VecSimulator]]] = []


def register_compiled_simulator(unsupported: Unsupported, simulator_class: type[VecSimulator]) -> None:
    """Offer a compiled simulator to ``simulator_backend="auto"`` and ``"compiled"``.

    :param unsupported: ``unsupported(simulator, heuristic)``: why the class cannot run that env chain, or None
    :param simulator_class: built as ``simulator_class(simulators, heuristic)``
    """
    if all(cls is not simulator_class for _, cls in _COMPILED):
        _COMPILED.append((unsupported, simulator_class))


def check_simulator_backend(backend: str, algo: str) -> str:
    """:param backend: the ``simulator_backend`` argument
    :param algo: name of the algorithm, for messages
    :return: ``backend``, if it is one of :data:`SIMULATOR_BACKENDS`"""
    if backend not in SIMULATOR_BACKENDS:
        raise ValueError(f"{algo}: simulator_backend must be one of {SIMULATOR_BACKENDS}, got {backend!r}")
    return backend


def make_vec_simulator(
    simulators: Sequence[SimulatorWrapper], heuristic: Heuristic | None, backend: str = "auto", algo: str = "DirPG"
) -> VecSimulator:
    """:param simulators: the simulators of the sub-envs
    :param heuristic: the algorithm's heuristic, or None
    :param backend: ``"auto"``, ``"env"`` or ``"compiled"`` (see the module docstring)
    :param algo: name of the algorithm, for messages
    :return: the batch simulator"""
    check_simulator_backend(backend, algo)
    if backend == "env":
        return VecSimulator(simulators, heuristic)
    reasons = []
    for unsupported, simulator_class in _COMPILED:
        why = next((reason for sim in simulators if (reason := unsupported(sim, heuristic)) is not None), None)
        if why is None:
            return simulator_class(simulators, heuristic)
        reasons.append(f"{simulator_class.__name__}: {why}")
    if backend == "compiled":
        found = "; ".join(reasons) if reasons else "no compiled simulator is registered (import sb3_dirpg.envs)"
        raise ValueError(
            f"{algo}: simulator_backend='compiled' has no compiled simulator for the env {env_name(simulators[0])} "
            f"({found}); use simulator_backend='auto' or 'env' to step the env itself"
        )
    return VecSimulator(simulators, heuristic)
