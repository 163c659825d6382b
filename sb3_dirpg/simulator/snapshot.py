"""``Snapshot``: the opaque, immutable state of a :class:`~sb3_dirpg.simulator.SimulatorWrapper`."""

from __future__ import annotations

from typing import Any


class Snapshot:
    """Opaque state of a :class:`SimulatorWrapper` (immutable by convention: do not modify its fields).

    A snapshot can only be restored into the wrapper that made it. Restoring it does not consume it.
    """

    __slots__ = ("_owner", "_state", "_done", "_label")

    def __init__(self, owner: object, state: Any, done: bool, label: str) -> None:
        """:param owner: the token of the wrapper that made it
        :param state: the chain's state, from the wrapper's chain cloner
        :param done: whether the last step before it ended the episode
        :param label: the kind of snapshot, for the repr"""
        self._owner = owner
        self._state = state
        self._done = done
        self._label = label

    @property
    def done(self) -> bool:
        """:return: whether the last step before this snapshot terminated or truncated the episode"""
        return self._done

    def __repr__(self) -> str:
        return f"<Snapshot {self._label}{' done' if self._done else ''}>"
