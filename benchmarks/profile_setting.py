"""``python -m benchmarks.profile_setting MiniGrid-MultiRoom-N6-v0``: where DirPG's wall time goes with the one MiniGrid
setting on one env, one torch thread.

It builds the setting's model (:func:`~sb3_dirpg.envs.minigrid.setting.minigrid_setting`, seed 0), learns a few
thousand interactions untimed (the compiled kernels load or compile there), then profiles ``learn`` over
``--interactions`` more with cProfile and prints the shares of the update (``train``) and of the search
(``collect_rollouts``), the optimizer steps and their mean cost, and the functions with the most cumulative time.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import torch as th
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_dirpg import DirPG
from sb3_dirpg.envs.minigrid.setting import minigrid_setting

WARM_UP = 2_000


def cumulative(stats: pstats.Stats, name: str) -> tuple[int, float]:
    """:param stats: a profile
    :param name: a function name, e.g. ``train``
    :return: the calls and cumulative seconds of the DirPG function of that name (summed over files)"""
    calls, seconds = 0, 0.0
    for (path, _, function), (_, primitive_calls, _, cumulative_s, _) in stats.stats.items():  # type: ignore[attr-defined]
        if function == name and "sb3_dirpg" in path:
            calls, seconds = calls + primitive_calls, seconds + cumulative_s
    return calls, seconds


def profile(env_id: str, interactions: int, top: int) -> dict[str, float]:
    """:param env_id: a MiniGrid id
    :param interactions: interactions profiled (after the warm-up)
    :param top: functions printed
    :return: the wall time, the update's and the search's seconds, the optimizer steps and the interactions made"""
    th.set_num_threads(1)
    setting = minigrid_setting(env_id)
    venv = make_vec_env(setting.make_env, n_envs=1, vec_env_cls=DummyVecEnv)
    model = DirPG(setting.policy, venv, seed=0, device="cpu", **setting.algorithm_kwargs())
    model.learn(WARM_UP)
    before = model.num_timesteps
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    model.learn(interactions, reset_num_timesteps=False)
    profiler.disable()
    wall = time.perf_counter() - start
    stats = pstats.Stats(profiler)
    _, train_s = cumulative(stats, "train")
    _, search_s = cumulative(stats, "collect_rollouts")
    steps, step_s = cumulative(stats, "_optimizer_step")
    made = model.num_timesteps - before
    print(f"{env_id}: {made} interactions in {wall:.2f} s under cProfile ({made / wall:.0f} per s)")
    print(f"update (train): {train_s:.2f} s, {train_s / wall:.0%}; search (collect_rollouts): {search_s:.2f} s, "
          f"{search_s / wall:.0%}")  # fmt: skip
    if steps:
        print(f"{steps} optimizer steps, {1000 * train_s / steps:.1f} ms each with their forward ({1000 * step_s / steps:.1f} "
              "ms in backward and the optimizer)")  # fmt: skip
    stats.sort_stats("cumulative").print_stats(top)
    return {"wall_s": wall, "train_s": train_s, "search_s": search_s, "optimizer_steps": steps, "interactions": made}


def main() -> None:
    """Profile the env named on the command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("env_id", help="a MiniGrid id, e.g. MiniGrid-MultiRoom-N6-v0")
    parser.add_argument("--interactions", type=int, default=30_000)
    parser.add_argument("--top", type=int, default=25, help="functions printed, by cumulative time")
    args = parser.parse_args()
    profile(args.env_id, args.interactions, args.top)


if __name__ == "__main__":
    main()
