"""The paper's environments, registered with gymnasium under the ``sb3_dirpg/`` namespace, and MiniGrid wrappers."""

import gymnasium as gym

from sb3_dirpg.envs.deepsea import DeepSeaCloner, DeepSeaRiskEnv
from sb3_dirpg.envs.minigrid import DirectionImageObs, MiniGridShapedReward, make_minigrid_env
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
    "MiniGridShapedReward",
    "SpanningTreeBanditEnv",
    "SpanningTreeCloner",
    "make_minigrid_env",
    "random_connected_graph",
]
