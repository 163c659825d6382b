"""Gumbel variates, the numerically stable truncated Gumbel, and masked log-sum-exp / log-softmax."""

from __future__ import annotations

import numpy as np


def sample_gumbel(
    rng: np.random.Generator, loc: np.ndarray | float = 0.0, size: int | tuple[int, ...] | None = None
) -> np.ndarray:
    """Draw ``Gumbel(loc)`` variates (scale 1).

    :param rng: numpy random generator
    :param loc: location(s); ``-inf`` gives ``-inf``
    :param size: output shape; defaults to the shape of ``loc``
    :return: the variates as float64
    """
    loc = np.asarray(loc, dtype=np.float64)
    if size is None:
        size = loc.shape
    # rng.gumbel would reject -inf locations; -log(Exp(1)) is Gumbel(0)
    return loc - np.log(rng.standard_exponential(size))


def truncate_gumbel(g: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Turn ``g ~ Gumbel(loc)`` into a draw of ``Gumbel(loc)`` conditioned on being at most ``upper``.

    Uses the stable form ``b - softplus(b - g)`` with ``b = upper``, which equals ``-log(exp(-b) + exp(-g))``
    without ever exponentiating large numbers.

    :param g: untruncated Gumbel draws, shape (n,)
    :param upper: truncation points, shape (n,)
    :return: the truncated variates, shape (n,)
    """
    upper = np.asarray(upper, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        out = upper - np.logaddexp(0.0, upper - g)
    # g == -inf (empty region) gives upper - inf = -inf, as it should
    return np.where(np.isneginf(g), -np.inf, out)


def truncated_gumbel(rng: np.random.Generator, loc: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Draw ``Gumbel(loc)`` conditioned on being at most ``upper``.

    :param rng: numpy random generator
    :param loc: locations, shape (n,)
    :param upper: truncation points, shape (n,)
    :return: the truncated variates, shape (n,)
    """
    return truncate_gumbel(sample_gumbel(rng, loc, np.shape(upper)), upper)


def masked_logsumexp(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Row-wise ``log(sum(exp(values[mask])))``; ``-inf`` for rows with no true entry.

    :param values: shape (n, k)
    :param mask: bool, shape (n, k)
    :return: shape (n,)
    """
    masked = np.where(mask, values, -np.inf)
    top = masked.max(axis=1)
    safe_top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.exp(masked - safe_top[:, None]).sum(axis=1)) + safe_top


def masked_log_softmax(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Log-probabilities renormalised over the legal entries of each row; ``-inf`` on illegal entries.

    :param logits: shape (n, k)
    :param mask: bool, shape (n, k), at least one true entry per row
    :return: shape (n, k)
    """
    logits = np.asarray(logits, dtype=np.float64)
    return np.where(mask, logits - masked_logsumexp(logits, mask)[:, None], -np.inf)
