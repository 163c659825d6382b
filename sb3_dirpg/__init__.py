"""Direct Policy Gradients (DirPG) for Stable-Baselines3."""

__version__ = "0.1.0"
