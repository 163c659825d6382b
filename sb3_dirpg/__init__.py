"""Direct Policy Gradients (DirPG, NeurIPS 2020) for Stable-Baselines3."""

import sb3_dirpg.envs  # noqa: F401  (registers the sb3_dirpg/ gymnasium envs)
from sb3_dirpg.common.policies import CnnPolicy, DirPGPolicy, MlpPolicy, MultiInputPolicy
from sb3_dirpg.common.vec_simulator import VecSimulator
from sb3_dirpg.dirpg import DirPG
from sb3_dirpg.envs.minigrid import MiniGridCNN
from sb3_dirpg.search import SearchConfig, TopDownSearch, gumbel_top_k
from sb3_dirpg.simulator import SimulatorWrapper, register_cloner

__version__ = "0.1.0"

__all__ = [
    "CnnPolicy",
    "DirPG",
    "DirPGPolicy",
    "MiniGridCNN",
    "MlpPolicy",
    "MultiInputPolicy",
    "SearchConfig",
    "SimulatorWrapper",
    "TopDownSearch",
    "VecSimulator",
    "gumbel_top_k",
    "register_cloner",
]
