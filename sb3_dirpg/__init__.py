"""Direct Policy Gradients (DirPG, NeurIPS 2020) for Stable-Baselines3."""

from sb3_dirpg.numba_cache import use_source_keyed_cache

use_source_keyed_cache()  # before any kernel module is imported: a changed kernel module starts a new cache

import sb3_dirpg.envs  # noqa: E402, F401  (registers the sb3_dirpg/ gymnasium envs)
from sb3_dirpg.common.policies import CnnPolicy, DirPGPolicy, MlpPolicy, MultiInputPolicy  # noqa: E402
from sb3_dirpg.common.vec_simulator import VecSimulator  # noqa: E402
from sb3_dirpg.dirpg import DirPG  # noqa: E402
from sb3_dirpg.envs.minigrid import MiniGridCNN  # noqa: E402
from sb3_dirpg.search import SearchConfig, TopDownSearch, gumbel_top_k  # noqa: E402
from sb3_dirpg.simulator import SimulatorWrapper, register_cloner  # noqa: E402

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
