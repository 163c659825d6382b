"""The paper's environments and combinatorial problems, each with what DirPG needs for it (cloner, bound, network).

The spanning-tree bandit, DeepSea, the knapsack and the independent set are registered with gymnasium under the
``sb3_dirpg/`` namespace, and MultiRoom-N12-S10 (:data:`MINIGRID_EXTRA_ENVS`) under the name the exploration papers
use; ``minigrid/``
holds the wrappers, cloner, network and bound for MiniGrid's own envs.
"""

import gymnasium as gym

from sb3_dirpg.envs.deepsea import DeepSeaCloner, DeepSeaRiskEnv
from sb3_dirpg.envs.independent_set import IndependentSetEnv, independent_set_bound
from sb3_dirpg.envs.knapsack import KnapsackEnv, knapsack_bound
from sb3_dirpg.envs.minigrid import (
    DirectionImageObs,
    FastObservation,
    MiniGridBound,
    MiniGridCloner,
    MiniGridCNN,
    MiniGridNoOpMask,
    MiniGridNoOpPenalty,
    MiniGridProgressReward,
    MiniGridShapedReward,
    MissionObs,
    MultiRoomBound,
    SeenCells,
    make_minigrid_env,
)
from sb3_dirpg.envs.spanning_tree import SpanningTreeBanditEnv, SpanningTreeCloner, random_connected_graph

_ENTRY_POINTS = {
    "sb3_dirpg/SpanningTreeBandit-v0": "sb3_dirpg.envs.spanning_tree:SpanningTreeBanditEnv",
    "sb3_dirpg/DeepSeaRisk-v0": "sb3_dirpg.envs.deepsea:DeepSeaRiskEnv",
    "sb3_dirpg/Knapsack-v0": "sb3_dirpg.envs.knapsack:KnapsackEnv",
    "sb3_dirpg/IndependentSet-v0": "sb3_dirpg.envs.independent_set:IndependentSetEnv",
}

#: MiniGrid envs of the exploration literature (RIDE, RAPID, AGAC) that MiniGrid does not register, under their names there
MINIGRID_EXTRA_ENVS = {
    "MiniGrid-MultiRoom-N12-S10-v0": ("minigrid.envs:MultiRoomEnv", {"minNumRooms": 12, "maxNumRooms": 12, "maxRoomSize": 10}),
}

for _env_id, _entry_point in _ENTRY_POINTS.items():
    if _env_id not in gym.registry:
        gym.register(id=_env_id, entry_point=_entry_point)
for _env_id, (_entry_point, _kwargs) in MINIGRID_EXTRA_ENVS.items():
    if _env_id not in gym.registry:
        gym.register(id=_env_id, entry_point=_entry_point, kwargs=_kwargs)

__all__ = [
    "DeepSeaCloner",
    "DeepSeaRiskEnv",
    "DirectionImageObs",
    "IndependentSetEnv",
    "KnapsackEnv",
    "FastObservation",
    "MiniGridBound",
    "MiniGridCNN",
    "MiniGridCloner",
    "MiniGridNoOpMask",
    "MiniGridNoOpPenalty",
    "MiniGridProgressReward",
    "MiniGridShapedReward",
    "MissionObs",
    "MultiRoomBound",
    "SeenCells",
    "SpanningTreeBanditEnv",
    "SpanningTreeCloner",
    "independent_set_bound",
    "knapsack_bound",
    "make_minigrid_env",
    "random_connected_graph",
]
