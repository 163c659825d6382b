"""Everything DirPG needs for MiniGrid: the paper's wrappers, a fast observation, the cloner, the paper's network, the
MultiRoom bound, the general grid bound, the progress reward and the compiled simulator."""

from sb3_dirpg.envs.minigrid.action_mask import MiniGridNoOpMask
from sb3_dirpg.envs.minigrid.bound import MultiRoomBound
from sb3_dirpg.envs.minigrid.cloner import MiniGridCloner
from sb3_dirpg.envs.minigrid.cnn import MiniGridCNN
from sb3_dirpg.envs.minigrid.compiled import CompiledMiniGridSimulator
from sb3_dirpg.envs.minigrid.fast_obs import FastObservation
from sb3_dirpg.envs.minigrid.grid_bound import MiniGridBound
from sb3_dirpg.envs.minigrid.progress import MiniGridProgressBound, MiniGridProgressReward
from sb3_dirpg.envs.minigrid.seen import SeenCells
from sb3_dirpg.envs.minigrid.wrappers import (
    DEFAULT_DOOR_REWARD,
    DEFAULT_GOAL_REWARD,
    DEFAULT_PICKUP_REWARD,
    DirectionImageObs,
    MiniGridNoOpPenalty,
    MiniGridShapedReward,
    MissionObs,
    make_minigrid_env,
)

__all__ = [
    "DEFAULT_DOOR_REWARD",
    "DEFAULT_GOAL_REWARD",
    "DEFAULT_PICKUP_REWARD",
    "CompiledMiniGridSimulator",
    "DirectionImageObs",
    "FastObservation",
    "MiniGridBound",
    "MiniGridCNN",
    "MiniGridCloner",
    "MiniGridNoOpMask",
    "MiniGridNoOpPenalty",
    "MiniGridProgressBound",
    "MiniGridProgressReward",
    "MiniGridShapedReward",
    "MissionObs",
    "MultiRoomBound",
    "SeenCells",
    "make_minigrid_env",
]
