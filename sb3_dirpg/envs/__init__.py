"""The paper's environments, each with what DirPG needs for it (cloner, bound, network).

The spanning-tree bandit and DeepSea are registered with gymnasium under the ``sb3_dirpg/`` namespace; ``minigrid/``
holds the wrappers, cloner, network and bound for MiniGrid's own envs.
"""

import gymnasium as gym

from sb3_dirpg.envs.deepsea import DeepSeaCloner, DeepSeaRiskEnv
from sb3_dirpg.envs.minigrid import (
    DirectionImageObs,
    FastObservation,
    MiniGridCloner,
    MiniGridCNN,
    MiniGridShapedReward,
    MultiRoomBound,
    make_minigrid_env,
)
from sb3_dirpg.envs.spanning_tree import SpanningTreeBanditEnv, SpanningTreeCloner, random_connected_graph

_ENTRY_POINTS = {
    "sb3_dirpg/SpanningTreeBandit-v0": "sb3_dirpg.envs.spanning_tree:SpanningTreeBanditEnv",
    "sb3_dirpg/DeepSeaRisk-v0": "sb3_dirpg.envs.deepsea:DeepSeaRiskEnv",
}

for _env_id, _entry_point in _ENTRY_POINTS.items():
    if _env_id not in gym.registry:
        gym.register(id=_env_id, entry_point=_entry_point)

__all__ = [
    "DeepSeaCloner",
    "DeepSeaRiskEnv",
    "DirectionImageObs",
    "FastObservation",
    "MiniGridCNN",
    "MiniGridCloner",
    "MiniGridShapedReward",
    "MultiRoomBound",
    "SpanningTreeBanditEnv",
    "SpanningTreeCloner",
    "make_minigrid_env",
    "random_connected_graph",
]
