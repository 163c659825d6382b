"""Plot the tensorboard scalars of a healthy DirPG run (``docs/_static/tensorboard_cartpole.png``).

Trains the zoo's CartPole-v1 entry (ε = 1, budget 200, early stop, 8 episodes per update, Adam 3e-3) for 150 000
interactions with tensorboard logging, reads the event file back and plots the search scalars against interactions.

Usage: ``python docs/scripts/tensorboard_figure.py [--out docs/_static/tensorboard_cartpole.png] [--timesteps 150000]``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch as th  # noqa: E402
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

from sb3_dirpg import DirPG  # noqa: E402

PANELS = (
    ("rollout/ep_rew_mean", None, "return of a_opt (on-policy sample)"),
    ("search/improved_fraction", None, "improved fraction"),
    ("search/interactions_to_improvement", "search/search_interactions_per_episode",
     "interactions to improvement / spent in search"),
    ("search/d_opt", "search/d_dir", "D(a_opt) and D(a_dir)"),
)  # fmt: skip


def train(folder: Path, timesteps: int) -> Path:
    """:return: the event file of a CartPole run with the zoo entry's settings"""
    th.set_num_threads(1)
    model = DirPG("MlpPolicy", "CartPole-v1", learning_rate=3e-3, epsilon=1.0, search_budget=200, stop="improvement",
                  batch_episodes=8, tensorboard_log=str(folder), seed=0)  # fmt: skip
    model.learn(timesteps, log_interval=1)
    return next(folder.glob("DirPG_1/events.out.tfevents.*"))


def smooth(values: np.ndarray, window: int = 9) -> np.ndarray:
    """:return: a centred moving average (the ends use fewer points)"""
    kernel = np.ones(window)
    return np.convolve(values, kernel, "same") / np.convolve(np.ones_like(values), kernel, "same")


def plot(event_file: Path, out: Path) -> None:
    """Draw the four panels."""
    events = EventAccumulator(str(event_file), size_guidance={"scalars": 0})
    events.Reload()
    fig, axes = plt.subplots(1, 5, figsize=(17, 3.1))
    for ax, (first, second, title) in zip(axes, PANELS):
        for tag, color in ((first, "tab:blue"), (second, "tab:orange")):
            if tag is None:
                continue
            scalars = events.Scalars(tag)
            steps = np.array([s.step for s in scalars]) / 1e3
            values = np.array([s.value for s in scalars])
            ax.plot(steps, values, color=color, alpha=0.25, linewidth=0.8)
            ax.plot(steps, smooth(values), color=color, linewidth=1.8, label=tag.split("/")[1])
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("interactions (thousands)", fontsize=8)
        ax.tick_params(labelsize=7)
        if second is not None:
            ax.legend(fontsize=7, frameon=False)
    opt, dir_ = events.Scalars("search/d_opt"), events.Scalars("search/d_dir")
    gap = np.array([d.value - o.value for o, d in zip(opt, dir_)])
    steps = np.array([s.step for s in opt]) / 1e3
    axes[-1].plot(steps, gap, color="tab:green", alpha=0.25, linewidth=0.8)
    axes[-1].plot(steps, smooth(gap), color="tab:green", linewidth=1.8)
    axes[-1].set_title("D(a_dir) - D(a_opt), mean over the batch", fontsize=9)
    axes[-1].set_xlabel("interactions (thousands)", fontsize=8)
    axes[-1].tick_params(labelsize=7)
    fig.suptitle("DirPG on CartPole-v1 (zoo entry): a healthy run", fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)


def summary(event_file: Path) -> None:
    """Print the first and last fifth of each scalar, for the text of the guide."""
    events = EventAccumulator(str(event_file), size_guidance={"scalars": 0})
    events.Reload()
    for tag in sorted(events.Tags()["scalars"]):
        values = np.array([s.value for s in events.Scalars(tag)])
        fifth = max(1, len(values) // 5)
        print(f"{tag:45s} first fifth {values[:fifth].mean():9.3f}   last fifth {values[-fifth:].mean():9.3f}")


def main() -> None:
    """Train, plot and summarise."""
    parser = argparse.ArgumentParser(description=__doc__)
    default_out = Path(__file__).resolve().parents[1] / "_static" / "tensorboard_cartpole.png"
    parser.add_argument("--out", type=Path, default=default_out)
    parser.add_argument("--timesteps", type=int, default=150_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        event_file = train(Path(folder), args.timesteps)
        plot(event_file, args.out)
        summary(event_file)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
