"""Direct Policy Gradients: the algorithm, its update, its policies and its search workers."""

from sb3_dirpg.dirpg.dirpg import DirPG
from sb3_dirpg.dirpg.policies import CnnPolicy, MlpPolicy, MultiInputPolicy

__all__ = ["CnnPolicy", "DirPG", "MlpPolicy", "MultiInputPolicy"]
