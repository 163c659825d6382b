"""Heuristics: callables ``heuristic(env) -> upper`` or ``(lower, upper)`` bounding the discounted return-to-go."""

from sb3_dirpg.heuristics.multiroom import MultiRoomBound

__all__ = ["MultiRoomBound"]
