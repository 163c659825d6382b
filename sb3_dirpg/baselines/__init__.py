"""Baselines of the DirPG paper on the same simulators and interaction accounting: REINFORCE, CEM and UCB."""

from sb3_dirpg.baselines.cem import CEM
from sb3_dirpg.baselines.reinforce import Reinforce
from sb3_dirpg.baselines.rollouts import Rollouts, collect_rollouts
from sb3_dirpg.baselines.tree_policy import TreePolicy
from sb3_dirpg.baselines.ucb import UCB

__all__ = ["CEM", "UCB", "Reinforce", "Rollouts", "TreePolicy", "collect_rollouts"]
