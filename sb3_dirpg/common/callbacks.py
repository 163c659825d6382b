"""Callbacks adapted to simulator algorithms, whose callback calls each cover many environment interactions."""

from __future__ import annotations

from stable_baselines3.common.callbacks import ProgressBarCallback


class InteractionProgressBar(ProgressBarCallback):
    """SB3's progress bar, advanced by the interactions made since the last call (not by ``num_envs`` per call)."""

    def __init__(self) -> None:
        try:
            import rich  # noqa: F401
            import tqdm.rich  # noqa: F401
        except ImportError as error:
            raise ImportError(
                f"the progress bar needs tqdm and rich ({error}): pip install sb3-dirpg[extra]"
            ) from None
        super().__init__()

    def _on_training_start(self) -> None:
        super()._on_training_start()
        self._shown = self.model.num_timesteps

    def _on_step(self) -> bool:
        self.pbar.update(self.num_timesteps - self._shown)
        self._shown = self.num_timesteps
        return True
