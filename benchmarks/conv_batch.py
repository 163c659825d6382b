"""``python -m benchmarks.conv_batch``: the cost of one forward of the MiniGrid CNN's convolutions by batch size.

torch's CPU ``conv2d`` (oneDNN's kernels, torch's default) is measured against the same with oneDNN off (torch's own
kernels, which the search's forwards of fewer than 8 rows use) and the same convolutions written as patches and one
matrix product (``im2col``), on 7x7x3 views, with one torch thread and no autograd, interleaved over rounds (medians).
All give the same features up to float rounding (the largest difference is printed).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch as th
import torch.nn.functional as F
from gymnasium import spaces

from sb3_dirpg.envs.minigrid.cnn import MiniGridCNN


def im2col_conv(x: th.Tensor, conv: th.nn.Conv2d) -> th.Tensor:
    """:param x: images, shape (batch, channels, height, width)
    :param conv: a 2x2 convolution
    :return: its output, computed as one matrix product on the 2x2 patches"""
    batch, channels, height, width = x.shape
    patches = th.cat([x[:, :, i : height - 1 + i, j : width - 1 + j] for i in (0, 1) for j in (0, 1)], dim=1)
    patches = patches.permute(0, 2, 3, 1).reshape(-1, 4 * channels)
    weight = conv.weight.permute(0, 2, 3, 1).reshape(conv.weight.shape[0], -1)
    out = th.addmm(conv.bias, patches, weight.t())
    return out.reshape(batch, height - 1, width - 1, -1).permute(0, 3, 1, 2)


def im2col_forward(cnn: th.nn.Sequential, x: th.Tensor) -> th.Tensor:
    """:param cnn: MiniGridCNN's ``cnn``
    :param x: images, shape (batch, 3, 7, 7)
    :return: the 64 features"""
    conv1, _, _, conv2, _, conv3, _ = cnn
    x = F.max_pool2d(F.relu(im2col_conv(x, conv1)), 2)
    return im2col_conv(F.relu(im2col_conv(x, conv2)), conv3).flatten(1)


def without_onednn(forward: object) -> object:
    """:param forward: a function of one tensor
    :return: the same function run with torch's own CPU kernels (oneDNN off, as the search's small forwards run)"""

    def run(x: th.Tensor) -> th.Tensor:
        th.backends.mkldnn.enabled = False
        try:
            return forward(x)  # type: ignore[operator]
        finally:
            th.backends.mkldnn.enabled = True

    return run


def per_call_us(forward: object, x: th.Tensor, calls: int) -> float:
    """:param forward: the function
    :param x: its input
    :param calls: calls to time
    :return: microseconds per call"""
    for _ in range(20):
        forward(x)  # type: ignore[operator]
    start = time.perf_counter()
    for _ in range(calls):
        forward(x)  # type: ignore[operator]
    return (time.perf_counter() - start) / calls * 1e6


def main(argv: list[str] | None = None) -> dict[int, dict[str, float]]:
    """:param argv: command-line arguments
    :return: per batch size, the median microseconds per call of each way and their largest difference"""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 2, 4, 8, 16, 64])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args(argv)
    th.set_num_threads(1)
    space = spaces.Dict(image=spaces.Box(0, 10, (7, 7, 3), np.uint8), direction=spaces.Discrete(4))
    cnn = MiniGridCNN(space).cnn
    results = {}
    print(f"{'batch':>5s} {'conv2d us':>10s} {'no oneDNN us':>13s} {'im2col us':>10s} {'max diff':>9s}")
    with th.inference_mode():
        for batch in args.batches:
            x = th.randint(0, 10, (batch, 3, 7, 7), generator=th.Generator().manual_seed(batch)).float()
            ways = {"conv2d": cnn, "no_onednn": without_onednn(cnn), "im2col": lambda images: im2col_forward(cnn, images)}
            times: dict[str, list[float]] = {name: [] for name in ways}
            for _ in range(args.rounds):
                for name, forward in ways.items():
                    times[name].append(per_call_us(forward, x, args.calls))
            diff = max(float((cnn(x) - other(x)).abs().max()) for other in (without_onednn(cnn), ways["im2col"]))
            results[batch] = {name: statistics.median(values) for name, values in times.items()} | {"max_diff": diff}
            row = results[batch]
            print(f"{batch:5d} {row['conv2d']:10.1f} {row['no_onednn']:13.1f} {row['im2col']:10.1f} {diff:9.1e}")
    return results


if __name__ == "__main__":
    main()
