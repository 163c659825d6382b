"""Callbacks that count environment interactions: the algorithms of this package call a callback once per lockstep
iteration, which covers many interactions, while SB3's callbacks count calls."""

from __future__ import annotations

from typing import ClassVar

from sb3_contrib.common.maskable.callbacks import MaskableEvalCallback
from sb3_contrib.common.maskable.utils import is_masking_supported
from stable_baselines3.common.callbacks import CheckpointCallback, ProgressBarCallback


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


class InteractionSchedule:
    """Mixin that makes an SB3 callback which acts every ``<frequency attribute>`` calls act every that many
    environment interactions instead.

    rl-zoo3 divides ``--eval-freq`` and ``--save-freq`` by ``n_envs`` because an on-policy step makes ``n_envs``
    interactions per call; the period in interactions is therefore ``frequency * n_envs`` of the training env.
    """

    frequency_attribute: ClassVar[str]

    def _init_callback(self) -> None:
        super()._init_callback()  # type: ignore[misc]
        frequency = getattr(self, self.frequency_attribute)
        self._period = max(int(frequency), 0) * self.training_env.num_envs  # type: ignore[attr-defined]
        self._next_trigger = self.model.num_timesteps + self._period  # type: ignore[attr-defined]

    def _on_step(self) -> bool:
        if self._period <= 0 or self.num_timesteps < self._next_trigger:  # type: ignore[attr-defined]
            return True
        while self._next_trigger <= self.num_timesteps:  # type: ignore[attr-defined]
            self._next_trigger += self._period
        frequency = getattr(self, self.frequency_attribute)
        setattr(self, self.frequency_attribute, 1)  # the base class acts at every call whose number is a multiple of 1
        try:
            return super()._on_step()  # type: ignore[misc]
        finally:
            setattr(self, self.frequency_attribute, frequency)


class EvalWithMasks(MaskableEvalCallback):
    """sb3-contrib's ``MaskableEvalCallback`` that passes action masks to ``predict`` exactly when the eval env has
    ``action_masks()`` (SB3's ``EvalCallback``, which rl-zoo3 uses, never does)."""

    def _init_callback(self) -> None:
        super()._init_callback()
        self.use_masking = is_masking_supported(self.eval_env)


class EvalByInteractions(InteractionSchedule, EvalWithMasks):
    """:class:`EvalWithMasks` whose ``eval_freq`` counts interactions."""

    frequency_attribute = "eval_freq"


class CheckpointByInteractions(InteractionSchedule, CheckpointCallback):
    """:class:`~stable_baselines3.common.callbacks.CheckpointCallback` whose ``save_freq`` counts interactions."""

    frequency_attribute = "save_freq"
