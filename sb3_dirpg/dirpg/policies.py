"""DirPG's policy aliases: actor-only categorical policies (no value head), shared with the rollout baselines."""

from sb3_dirpg.common.policies import CnnPolicy, DirPGPolicy, MlpPolicy, MultiInputPolicy

__all__ = ["CnnPolicy", "DirPGPolicy", "MlpPolicy", "MultiInputPolicy"]
