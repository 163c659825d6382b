"""A pointer-style policy for problems whose actions are the rows of the observation (items, nodes).

A flat MLP must learn the same rule once for every item position; this policy scores every row with the same network,
so what it learns about one item holds for all of them, on any instance.
"""

from __future__ import annotations

from typing import Any

import torch as th
from gymnasium import spaces
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from sb3_dirpg.common.policies import DirPGPolicy


class ItemEncoder(BaseFeaturesExtractor):
    """Embeds each row of an observation of shape ``(n, k)`` with layers shared by all rows (Deep Sets), each layer also
    seeing the mean of all rows and, for a graph, the mean over each row's neighbours. A graph's rows also get their
    degree (divided by ``n``) as an input feature: a mean over neighbours alone cannot tell how many there are.

    With ``adjacency=True`` the first ``n`` columns are the adjacency matrix and the rest are the row's features; with
    ``gate`` a feature column, only the neighbours whose value there is 1 send messages (e.g. the free nodes).

    :param observation_space: a Box of shape ``(n, k)``
    :param embed_dim: the size of a row's embedding
    :param n_layers: the number of shared layers after the input layer
    :param adjacency: whether the first ``n`` columns are an adjacency matrix
    :param gate: the feature column (index into the features, negative from the end) that gates messages, or None
    """

    def __init__(
        self, observation_space: spaces.Box, embed_dim: int = 64, n_layers: int = 2, adjacency: bool = False,
        gate: int | None = None,
    ) -> None:  # fmt: skip
        if not isinstance(observation_space, spaces.Box) or len(observation_space.shape) != 2:
            raise ValueError(f"ItemEncoder needs a Box observation of shape (n, k), one row per item, got {observation_space}")
        n_rows, n_columns = observation_space.shape
        n_features = n_columns - n_rows if adjacency else n_columns
        if n_features < 1:
            raise ValueError(f"ItemEncoder(adjacency=True) needs feature columns after the {n_rows} adjacency columns")
        super().__init__(observation_space, n_rows * embed_dim)
        self.n_rows, self.embed_dim, self.adjacency, self.gate = n_rows, embed_dim, adjacency, gate
        self.embed = nn.Linear(n_features + int(adjacency), embed_dim)
        self.own = nn.ModuleList(nn.Linear(embed_dim, embed_dim) for _ in range(n_layers))
        self.pooled = nn.ModuleList(nn.Linear(embed_dim, embed_dim, bias=False) for _ in range(n_layers))
        n_message_layers = n_layers if adjacency else 0
        self.neighbours = nn.ModuleList(nn.Linear(embed_dim, embed_dim, bias=False) for _ in range(n_message_layers))

    def forward(self, observations: th.Tensor) -> th.Tensor:
        """:param observations: shape (batch, n, k)
        :return: the rows' embeddings, flattened, shape (batch, n * embed_dim)"""
        features = observations[..., self.n_rows :] if self.adjacency else observations
        links = None
        if self.adjacency:
            links = observations[..., : self.n_rows]
            if self.gate is not None:
                links = links * features[..., self.gate].unsqueeze(1)  # only gated rows send
            degrees = links.sum(dim=2, keepdim=True)
            features = th.cat([features, degrees / self.n_rows], dim=2)
            links = links / degrees.clamp(min=1.0)
        h = th.relu(self.embed(features))
        for layer in range(len(self.own)):
            update = self.own[layer](h) + self.pooled[layer](h.mean(dim=1, keepdim=True))
            if links is not None:
                update = update + self.neighbours[layer](links @ h)
            h = th.relu(update)
        return h.flatten(start_dim=1)


class ItemScores(nn.Module):
    """The action head of :class:`ItemPolicy`: one logit per row, from the row's embedding alone.

    :param embed_dim: the size of a row's embedding
    """

    def __init__(self, embed_dim: int) -> None:
        super().__init__()
        self.embed_dim = embed_dim
        self.score = nn.Linear(embed_dim, 1)

    def forward(self, latent: th.Tensor) -> th.Tensor:
        """:param latent: the rows' embeddings, flattened, shape (batch, n * embed_dim)
        :return: the logits, shape (batch, n)"""
        return self.score(latent.unflatten(1, (-1, self.embed_dim))).squeeze(-1)


class ItemPolicy(DirPGPolicy):
    """:class:`~sb3_dirpg.common.policies.DirPGPolicy` whose action ``i`` is row ``i`` of the observation: an
    :class:`ItemEncoder` embeds the rows and :class:`ItemScores` scores each one (pointer-style). The observation must
    have one row per action; ``features_extractor_kwargs`` go to the encoder (``embed_dim``, ``n_layers``,
    ``adjacency``, ``gate``).
    """

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space, *args: Any, **kwargs: Any) -> None:
        if not isinstance(observation_space, spaces.Box) or observation_space.shape[:1] != (getattr(action_space, "n", -1),):
            raise ValueError(
                f"ItemPolicy needs an observation of shape (n_actions, k), one row per action; got {observation_space} "
                f"for {action_space}. Use MlpPolicy for other observations."
            )
        if kwargs.get("net_arch") not in (None, [], {}):
            raise ValueError(
                f"ItemPolicy takes no net_arch (got {kwargs['net_arch']!r}): it scores each row with the encoder's shared "
                "layers and one linear layer, with no hidden layers after them. Size the encoder with "
                "policy_kwargs=dict(features_extractor_kwargs=dict(embed_dim=..., n_layers=...)), or use MlpPolicy for a "
                "net_arch"
            )
        kwargs.setdefault("features_extractor_class", ItemEncoder)
        kwargs["net_arch"] = []
        kwargs.setdefault("activation_fn", nn.ReLU)
        super().__init__(observation_space, action_space, *args, **kwargs)

    def make_action_net(self, latent_dim: int) -> nn.Module:
        """:param latent_dim: the size of the flattened embeddings
        :return: the per-row scorer"""
        return ItemScores(self.features_extractor.embed_dim)
