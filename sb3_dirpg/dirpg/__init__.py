"""Direct Policy Gradients: the algorithm, its update, its policies and its search workers."""

from sb3_dirpg.dirpg.dirpg import DirPG
from sb3_dirpg.dirpg.policies import CnnPolicy, MlpPolicy, MultiInputPolicy
from sb3_dirpg.dirpg.refining import RefineOnSuccess
from sb3_dirpg.dirpg.settings import HeuristicViolationWarning

__all__ = ["CnnPolicy", "DirPG", "HeuristicViolationWarning", "MlpPolicy", "MultiInputPolicy", "RefineOnSuccess"]
