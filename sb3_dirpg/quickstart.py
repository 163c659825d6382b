"""``python -m sb3_dirpg.quickstart``: train DirPG on CartPole-v1 for a minute and show what it learned.

It evaluates the greedy policy (no search, no simulator) before and after training, and prints the search
statistics that tell whether DirPG is healthy (see the tensorboard guide in the docs).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch as th
from stable_baselines3.common.evaluation import evaluate_policy

from sb3_dirpg import DirPG


def main(argv: list[str] | None = None) -> float:
    """Run the quickstart.

    :param argv: command-line arguments (``--timesteps``, ``--seed``)
    :return: the mean greedy return after training
    """
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--timesteps", type=int, default=300_000, help="environment interactions (search included)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.timesteps < 1 or args.seed < 0:
        parser.error(f"--timesteps must be at least 1 and --seed at least 0, got {args.timesteps} and {args.seed}")
    th.set_num_threads(1)  # many small forwards interleaved with simulator steps: one thread is fastest

    model = DirPG("MlpPolicy", "CartPole-v1", learning_rate=1e-2, epsilon=5.0, search_budget=200, seed=args.seed)
    before, _ = evaluate_policy(model, model.get_env(), n_eval_episodes=10, deterministic=True)
    start = time.perf_counter()
    print(f"Training DirPG on CartPole-v1 for {args.timesteps:,} interactions (seed {args.seed}) ...")
    model.learn(args.timesteps)
    elapsed = time.perf_counter() - start
    after, after_std = evaluate_policy(model, model.get_env(), n_eval_episodes=10, deterministic=True)
    sampled = np.mean([ep["r"] for ep in model.ep_info_buffer])
    print(f"  trained in {elapsed:.0f} s ({model.num_timesteps / elapsed:,.0f} interactions/s, {model._n_updates} updates)")
    print(f"  greedy return before training: {before:7.1f}")
    print(f"  greedy return after training:  {after:7.1f} +/- {after_std:.1f}   (max 500)")
    print(f"  return of sampled a_opt, last {len(model.ep_info_buffer)} episodes: {sampled:.1f}")
    return float(after)


if __name__ == "__main__":
    main()
