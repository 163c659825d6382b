"""What the bound does for the search of an untrained policy (``--probe``), per env."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from experiments.minigrid_table.cells import entry, parse_params

PROBE_SETTINGS = ("grid", "manhattan", "gumbel")


def probe_bounds(
    envs: Sequence[str], n_maps: int = 16, seed: int = 0, params: Sequence[str] = ()
) -> dict[str, dict[str, dict[str, float]]]:
    """What the bound does for the search of an untrained policy, per env: DirPG's entry with
    :class:`~sb3_dirpg.envs.minigrid.MiniGridBound` (``grid``; the entry's own bound where it is one, such as
    :class:`~sb3_dirpg.envs.minigrid.MiniGridProgressBound`), with :class:`~sb3_dirpg.envs.minigrid.MultiRoomBound`
    (``manhattan``, envs with a goal cell and the door reward only), and with the Gumbel priority and no bound
    (``gumbel``). Same maps (seeds 100, 101, ...), same policy, same search noise.

    :param envs: env ids with a DirPG entry
    :param n_maps: maps searched per env
    :param seed: seed of the policy and the search noise
    :param params: a variant's ``key:value`` changes of the entry (its ``env_wrapper`` and ``heuristic``)
    :return: per env and setting: the fraction of maps where the search found a success, where ``a_dir`` improved on
        ``a_opt``, the trajectories completed and the interactions spent per map
    """
    import torch as th

    from experiments.held_out import build_env
    from sb3_dirpg.dirpg import DirPG
    from sb3_dirpg.envs.minigrid import MiniGridBound, MiniGridCNN, MiniGridProgressBound, MultiRoomBound
    from sb3_dirpg.integrations.zoo import prepare_hyperparams

    th.set_num_threads(1)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for env_id in envs:
        settings = {**entry(env_id, "dirpg"), **parse_params(params)}
        env = build_env(env_id, settings.get("env_kwargs"), settings.get("env_wrapper"))
        env.reset(seed=0)
        prepared = prepare_hyperparams(dict(settings))
        out[env_id] = {}
        for name in PROBE_SETTINGS:
            kwargs = dict(search_budget=settings["search_budget"], epsilon=settings["epsilon"], gamma=settings["gamma"],
                          stop=prepared.get("stop", "improvement"), prune=settings["prune"])  # fmt: skip
            rewards = prepared["heuristic"]  # the entry's bound carries the reward values of its env
            if name == "grid":
                grid = rewards if isinstance(rewards, MiniGridBound) else MiniGridBound(
                    settings["gamma"], rewards.door_reward, rewards.goal_reward, rewards.pickup_reward)  # fmt: skip
                kwargs.update(priority=settings["priority"], heuristic=grid)
            elif name == "manhattan":
                if not any(cell is not None and cell.type == "goal" for cell in env.unwrapped.grid.grid):
                    continue  # MultiRoomBound needs a goal cell
                if isinstance(rewards, MiniGridProgressBound):
                    continue  # it knows nothing of the progress reward
                manhattan = MultiRoomBound(settings["gamma"], rewards.door_reward, rewards.goal_reward, rewards.pickup_reward)
                kwargs.update(priority=settings["priority"], heuristic=manhattan)
            else:
                kwargs.update(priority="gumbel", prune=False)
            policy_kwargs = dict(features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False)
            model = DirPG("MultiInputPolicy", env, seed=seed, device="cpu", policy_kwargs=policy_kwargs, **kwargs)
            episodes = model.search(list(range(100, 100 + n_maps))).episodes
            out[env_id][name] = {
                "success": float(np.mean([ep.success_dir for ep in episodes])),
                "improved": float(np.mean([ep.improved for ep in episodes])),
                "trajectories": float(np.mean([ep.trajectories for ep in episodes])),
                "interactions": float(np.mean([ep.interactions for ep in episodes])),
            }
            print(env_id, name, out[env_id][name], flush=True)
    return out


def probe_table(probe: dict[str, dict[str, dict[str, float]]]) -> str:
    """:param probe: :func:`probe_bounds`'s output
    :return: a Markdown table"""
    lines = ["| env | setting | maps with a success found | maps improved | trajectories per map | interactions per map |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for env_id, rows in probe.items():
        for name, row in rows.items():
            lines.append(f"| {env_id.removeprefix('MiniGrid-').removesuffix('-v0')} | {name} | {row['success']:.2f} | "
                         f"{row['improved']:.2f} | {row['trajectories']:.1f} | {row['interactions']:.0f} |")  # fmt: skip
    return "\n".join(lines) + "\n"
