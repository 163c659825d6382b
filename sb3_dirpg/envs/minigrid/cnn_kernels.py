"""The paper's MiniGrid network (:class:`~sb3_dirpg.envs.minigrid.MiniGridCNN` with a linear action head) evaluated in
compiled code, one observation at a time, for the search's forwards.

A search forwards one or a few observations at a time, and a torch forward of that size costs about 110 µs, almost all
of it per-call overhead; the network itself is some 51k multiply-adds. :func:`cnn_logits` computes it in a few
microseconds, and the compiled search loop (:mod:`sb3_dirpg.envs.minigrid.compiled_search`) calls it without leaving
compiled code. Each convolution is a sum over the 2x2 patch's taps of a tap's value times a row of weights laid out
``(tap, output channel)``, so the loop over output channels is contiguous. The result agrees with torch's forward up
to float32 rounding (the taps are added in another order); :class:`CompiledForward` checks that on random
observations before it is used.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

#: the architecture the compiled search loop evaluates (the first field of :attr:`CompiledForward.weights`)
ARCHITECTURE = "minigrid_cnn"
VIEW = 7  # the egocentric view's side
OBS_WIDTH = VIEW * VIEW * 3 + 1  # an observation row: the image's bytes (x, y, channel), then the direction


@njit(cache=True)
def _conv_relu(x: np.ndarray, w: np.ndarray, b: np.ndarray, relu: bool) -> np.ndarray:
    """:param x: input, float32, shape (C, H, W)
    :param w: weights, float32, shape (C * 4, O): tap ``(c, di, dj)`` at row ``c * 4 + di * 2 + dj``
    :param b: bias, float32, shape (O,)
    :param relu: apply a ReLU
    :return: the 2x2 convolution, float32, shape (O, H - 1, W - 1)"""
    channels, height, width = x.shape
    outs = w.shape[1]
    y = np.empty((outs, height - 1, width - 1), np.float32)
    acc = np.empty(outs, np.float32)
    for i in range(height - 1):
        for j in range(width - 1):
            acc[:] = b
            for c in range(channels):
                for di in range(2):
                    for dj in range(2):
                        value = x[c, i + di, j + dj]
                        if value != 0.0:
                            row = c * 4 + di * 2 + dj
                            for o in range(outs):
                                acc[o] += value * w[row, o]
            for o in range(outs):
                y[o, i, j] = max(acc[o], np.float32(0.0)) if relu else acc[o]
    return y


@njit(cache=True)
def cnn_logits(rows: np.ndarray, ids: np.ndarray, weights: tuple, out: np.ndarray) -> None:
    """Evaluate the network at some observation rows.

    :param rows: observations, uint8, shape (m, OBS_WIDTH): the ``(7, 7, 3)`` image's bytes, then the direction
    :param ids: the rows to evaluate, int64, shape (k,)
    :param weights: the network's weights (:attr:`CompiledForward.weights` without its first field)
    :param out: out: the logits, written at the same row indices, float64, shape (m, A)
    """
    w1, b1, w2, b2, w3, b3, head_w, head_b = weights
    n_actions = head_b.size
    image = np.empty((3, VIEW, VIEW), np.float32)
    for n in range(ids.size):
        r = ids[n]
        for i in range(VIEW):  # the torch network sees the image (batch, x, y, c) permuted to (batch, c, x, y)
            for j in range(VIEW):
                for c in range(3):
                    image[c, i, j] = rows[r, (i * VIEW + j) * 3 + c]
        h1 = _conv_relu(image, w1, b1, True)
        pooled = np.empty((h1.shape[0], 3, 3), np.float32)
        for o in range(h1.shape[0]):
            for i in range(3):
                for j in range(3):
                    top = max(h1[o, 2 * i, 2 * j], h1[o, 2 * i, 2 * j + 1])
                    pooled[o, i, j] = max(top, max(h1[o, 2 * i + 1, 2 * j], h1[o, 2 * i + 1, 2 * j + 1]))
        h2 = _conv_relu(pooled, w2, b2, True)
        h3 = _conv_relu(h2, w3, b3, False)
        direction = rows[r, OBS_WIDTH - 1]
        for a in range(n_actions):
            total = head_b[a] + head_w[a, h3.shape[0] + direction]
            for f in range(h3.shape[0]):
                total += head_w[a, f] * h3[f, 0, 0]
            out[r, a] = total


def conv_taps(weight: np.ndarray) -> np.ndarray:
    """:param weight: a torch 2x2 convolution's weight, shape (O, C, 2, 2)
    :return: it laid out for :func:`_conv_relu`, float32, shape (C * 4, O)"""
    return np.ascontiguousarray(weight.reshape(weight.shape[0], -1).T, dtype=np.float32)


class CompiledForward:
    """The weights of a :class:`~sb3_dirpg.envs.minigrid.MiniGridCNN` policy with a linear action head, copied for
    :func:`cnn_logits` (for one search: the policy is fixed during a search).

    :param weights: ``(ARCHITECTURE, conv1 taps, bias, conv2 taps, bias, conv3 taps, bias, head weight, head bias)``
    """

    def __init__(self, weights: tuple[Any, ...]) -> None:
        self.weights = weights

    def logits(self, obs: list[dict[str, Any]]) -> np.ndarray:
        """:param obs: raw observations (``image`` (7, 7, 3), ``direction``)
        :return: the logits, float32, shape (n, A)"""
        rows = np.empty((len(obs), OBS_WIDTH), np.uint8)
        for row, o in zip(rows, obs):
            row[:-1] = np.asarray(o["image"], dtype=np.uint8).ravel()
            row[-1] = int(o["direction"])
        out = np.empty((len(obs), self.weights[-1].size))
        cnn_logits(rows, np.arange(len(obs)), self.weights[1:], out)
        return out.astype(np.float32)
