"""Lazy top-down A* sampling of trajectories (the DirPG search). Knows nothing about SB3 or torch."""

from sb3_dirpg.search.config import PRIORITIES, SearchConfig
from sb3_dirpg.search.gumbel import masked_log_softmax, masked_logsumexp, sample_gumbel, truncate_gumbel, truncated_gumbel
from sb3_dirpg.search.priority import AStarPriority, GumbelPriority, Priority, priority_rule
from sb3_dirpg.search.protocols import BatchSimulator, Heuristic, PolicyFunction, Transitions
from sb3_dirpg.search.results import CompletedTrajectory, EpisodeSearch, SearchResult
from sb3_dirpg.search.stopping import BudgetStop, ImprovementStop, StopRule, SuccessStop, stop_rule
from sb3_dirpg.search.top_down import TopDownSearch, cyclic_gc_paused, gumbel_top_k
from sb3_dirpg.search.tree import SearchTree

__all__ = [
    "PRIORITIES",
    "AStarPriority",
    "BatchSimulator",
    "BudgetStop",
    "CompletedTrajectory",
    "EpisodeSearch",
    "GumbelPriority",
    "Heuristic",
    "ImprovementStop",
    "PolicyFunction",
    "Priority",
    "SearchConfig",
    "SearchResult",
    "SearchTree",
    "StopRule",
    "SuccessStop",
    "TopDownSearch",
    "Transitions",
    "cyclic_gc_paused",
    "gumbel_top_k",
    "masked_log_softmax",
    "masked_logsumexp",
    "priority_rule",
    "sample_gumbel",
    "stop_rule",
    "truncate_gumbel",
    "truncated_gumbel",
]
