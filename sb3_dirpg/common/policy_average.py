"""An exponential moving average of a policy's weights (``ema_decay``), to act with while the policy trains."""

from __future__ import annotations

import torch as th
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from sb3_dirpg.common.policies import DirPGPolicy


def make_policy_average(policy: DirPGPolicy, decay: float, start: AveragedModel | None = None) -> AveragedModel:
    """A moving average of ``policy``'s weights: each :func:`update_policy_average` moves every averaged weight to
    ``decay · average + (1 − decay) · weight``; the first update copies the weights.

    :param policy: the trained policy
    :param decay: the average's decay per update, in (0, 1)
    :param start: an average to carry on from (its weights and count), e.g. one kept with another decay; None starts anew
    :return: the average; its ``module`` is a policy that acts as ``policy`` does, with the averaged weights
    """
    average = AveragedModel(policy if start is None else start.module, multi_avg_fn=get_ema_multi_avg_fn(decay))
    if start is not None:
        average.n_averaged.copy_(start.n_averaged)
    return average


def update_policy_average(average: AveragedModel, policy: DirPGPolicy) -> None:
    """Move the average towards ``policy``'s weights after an optimizer step; buffers (none in this package's
    policies) are copied, not averaged.

    :param average: the average, from :func:`make_policy_average`
    :param policy: the trained policy
    """
    average.update_parameters(policy)
    with th.no_grad():
        for kept, current in zip(average.module.buffers(), policy.buffers()):
            kept.copy_(current)
