"""Bridges to other tools: rl-zoo3 (``python -m sb3_dirpg.integrations.zoo``, its samplers) and SB3's PPO."""
