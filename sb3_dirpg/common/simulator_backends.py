"""Which batch simulator runs the search: the envs themselves, or a compiled copy of their dynamics.

An env family may register a compiled simulator (a :class:`~sb3_dirpg.common.vec_simulator.VecSimulator` subclass
that steps array-held states) with a function that says why it cannot run a given env chain. ``simulator_backend``
picks: ``"env"`` always steps the envs (snapshot, restore, step), ``"compiled"`` requires a compiled simulator and
says why none fits, ``"auto"`` (the default) uses one where it fits. Both give the same transitions, so the same seed
learns the same parameters. A compiled simulator copies the rules of a library (MiniGrid's step), so it may also say
that the installed version of that library is not one it was tested on: then ``"compiled"`` raises and ``"auto"``
warns and steps the envs. ``"auto"`` also warns, once per reason, where an env of a registered family (a MiniGrid env,
say) cannot use its compiled simulator, so a slower search never goes unnoticed.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

from sb3_dirpg.common.vec_simulator import VecSimulator
from sb3_dirpg.search.protocols import Heuristic
from sb3_dirpg.simulator import SimulatorWrapper
from sb3_dirpg.simulator.cloners import env_name

SIMULATOR_BACKENDS = ("auto", "env", "compiled")

#: why a simulator cannot run an env chain (None: it can)
Unsupported = Callable[[SimulatorWrapper, "Heuristic | None"], "str | None"]
#: why the installed libraries may not follow the rules a simulator copies (None: they were tested with it)
Untested = Callable[[], "str | None"]
#: whether an env chain belongs to the family a compiled simulator copies (a MiniGrid env, say)
Family = Callable[[SimulatorWrapper], bool]
_COMPILED: list[tuple[Unsupported, type[VecSimulator], Untested | None, Family | None]] = []
_WARNED: set[str] = set()


def register_compiled_simulator(
    unsupported: Unsupported,
    simulator_class: type[VecSimulator],
    untested: Untested | None = None,
    family: Family | None = None,
) -> None:
    """Offer a compiled simulator to ``simulator_backend="auto"`` and ``"compiled"``.

    :param unsupported: ``unsupported(simulator, heuristic)``: why the class cannot run that env chain, or None
    :param simulator_class: built as ``simulator_class(simulators, heuristic)``
    :param untested: ``untested()``: why the installed libraries may not follow the rules the class copies (e.g. an
        untested version), or None; asked only for env chains the class can run
    :param family: ``family(simulator)``: whether the env is of the family the class copies; ``"auto"`` warns once
        per reason where such an env cannot use the class (None: it never warns for that)
    """
    if all(cls is not simulator_class for _, cls, _, _ in _COMPILED):
        _COMPILED.append((unsupported, simulator_class, untested, family))


def _warn_once(message: str) -> None:
    """Warn with ``message`` unless this process has already warned with it."""
    if message not in _WARNED:
        _WARNED.add(message)
        warnings.warn(message, stacklevel=3)


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
    for unsupported, simulator_class, untested, family in _COMPILED:
        why = next((reason for sim in simulators if (reason := unsupported(sim, heuristic)) is not None), None)
        if why is not None and backend == "auto" and family is not None and family(simulators[0]):
            _warn_once(
                f"{algo}: {simulator_class.__name__} cannot run the env {env_name(simulators[0])}: {why}; the env "
                "itself is stepped instead (simulator_backend='env': the same results, more slowly)"
            )
        if why is None:
            why = untested() if untested is not None else None
            if why is None:
                return simulator_class(simulators, heuristic)
            if backend == "compiled":
                raise ValueError(
                    f"{algo}: simulator_backend='compiled' cannot use {simulator_class.__name__}: {why}; use "
                    "simulator_backend='env' to step the env itself"
                )
            _warn_once(
                f"{algo}: {simulator_class.__name__} is not used: {why}; the env itself is stepped instead (as with "
                "simulator_backend='env': the same results, more slowly)"
            )
        reasons.append(f"{simulator_class.__name__}: {why}")
    if backend == "compiled":
        found = "; ".join(reasons) if reasons else "no compiled simulator is registered (import sb3_dirpg.envs)"
        raise ValueError(
            f"{algo}: simulator_backend='compiled' has no compiled simulator for the env {env_name(simulators[0])} "
            f"({found}); use simulator_backend='auto' or 'env' to step the env itself"
        )
    return VecSimulator(simulators, heuristic)
