"""Draw the search tree of one real DirPG search (``docs/_static/search_tree.png``).

The search runs :class:`sb3_dirpg.search.TopDownSearch` on a 4 x 4 DeepSea grid (3 binary decisions, 8 trajectories)
with a fixed random linear policy, ε = 1, priority G, no early stop, and a budget of 9 interactions after ``a_opt``.
Every node the search created is drawn at its depth; its label is the interaction that created it. Complete
trajectories show their ``G``, return ``R`` and ``D = G + εR``.

Usage: ``python docs/scripts/search_tree_figure.py [--out docs/_static/search_tree.png] [--seed 2]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402

from sb3_dirpg.common.vec_simulator import VecSimulator  # noqa: E402
from sb3_dirpg.envs import DeepSeaRiskEnv  # noqa: E402
from sb3_dirpg.search import SearchConfig, SearchResult, TopDownSearch  # noqa: E402
from sb3_dirpg.simulator import SimulatorWrapper  # noqa: E402

ACTION_NAMES = ("L", "R")


def run_search(seed: int) -> tuple[SearchResult, SearchConfig]:
    """:param seed: seed of the policy weights, the episode and the search noise
    :return: the result of one search, and its settings"""
    rng = np.random.default_rng(seed)
    size = 4
    weights = rng.normal(0.0, 1.0, size=(size * size, 2))

    def policy(obs: list[np.ndarray], masks: np.ndarray) -> np.ndarray:
        return np.stack(obs) @ weights

    simulator = VecSimulator([SimulatorWrapper(DeepSeaRiskEnv(size=size, goal_mean=2.0))])
    config = SearchConfig(epsilon=1.0, budget=9, priority="gumbel", prune=False, stop="budget", horizon=size - 1,
                          record_trajectories=True)  # fmt: skip
    return TopDownSearch(simulator, policy, config).run([seed], rng), config


def tree_graph(result: SearchResult) -> nx.DiGraph:
    """:return: the search tree of episode 0 as a graph whose nodes carry ``depth`` and ``action``"""
    nodes = result.tree.nodes
    graph = nx.DiGraph()
    for node in range(nodes.size):
        graph.add_node(node, depth=int(nodes.depth[node]), action=int(nodes.action[node]))
        if nodes.parent[node] >= 0:
            graph.add_edge(int(nodes.parent[node]), node)
    return graph


def layout(graph: nx.DiGraph) -> dict[int, tuple[float, float]]:
    """Leaves spread evenly left to right in action order, parents centred above their children."""
    positions: dict[int, tuple[float, float]] = {}
    next_x = [0.0]

    def place(node: int) -> float:
        children = sorted(graph.successors(node), key=lambda c: graph.nodes[c]["action"])
        if children:
            x = float(np.mean([place(c) for c in children]))
        else:
            x = next_x[0]
            next_x[0] += 1.0
        positions[node] = (x, -float(graph.nodes[node]["depth"]))
        return x

    place(0)
    return positions


def draw(result: SearchResult, config: SearchConfig, out: Path) -> None:
    """Draw the tree and save it."""
    episode = result.episodes[0]
    graph = tree_graph(result)
    pos = layout(graph)
    opt_path = set(result.tree.path(episode.opt_leaf))
    dir_path = set(result.tree.path(episode.dir_leaf))
    fig, ax = plt.subplots(figsize=(9, 4.6))
    for parent, child in graph.edges:
        color, width = "0.7", 1.5
        if child in dir_path and parent in dir_path:
            color, width = "tab:orange", 4.0
        if child in opt_path and parent in opt_path:
            color, width = ("tab:blue", 4.0) if child not in dir_path else ("tab:purple", 4.0)
        (x0, y0), (x1, y1) = pos[parent], pos[child]
        ax.plot([x0, x1], [y0, y1], color=color, linewidth=width, zorder=1)
        ax.text((x0 + x1) / 2, (y0 + y1) / 2, ACTION_NAMES[graph.nodes[child]["action"]], fontsize=8, color="0.3",
                ha="right" if x1 < x0 else "left", va="bottom")  # fmt: skip
    xs, ys = zip(*(pos[n] for n in graph.nodes))
    ax.scatter(xs, ys, s=330, color="white", edgecolor="0.2", zorder=2)
    for node in graph.nodes:
        ax.text(*pos[node], "root" if node == 0 else str(node), ha="center", va="center", fontsize=7, zorder=3)
    for trajectory in episode.recorded:
        x, y = pos[trajectory.leaf]
        ax.text(x, y - 0.28, f"G={trajectory.g:.2f}\nR={trajectory.ret:.2f}\nD={trajectory.d:.2f}", ha="center",
                va="top", fontsize=7)  # fmt: skip
    handles = [
        plt.Line2D([], [], color="tab:blue", linewidth=4, label=f"a_opt: first trajectory, T = {episode.length_opt} steps"),
        plt.Line2D([], [], color="tab:orange", linewidth=4, label="a_dir: largest D = G + εR found"),
        plt.Line2D([], [], color="tab:purple", linewidth=4, label="prefix shared by a_opt and a_dir"),
        plt.Line2D([], [], color="0.7", linewidth=1.5, label="other prefixes the search expanded"),
    ]
    ax.legend(handles=handles, loc="upper left", fontsize=8, frameon=False)
    ax.set_title(
        f"One DirPG search on a 4x4 DeepSea grid: ε = {config.epsilon:g}, budget {config.budget} after a_opt, "
        f"{episode.interactions} interactions, {episode.trajectories} complete trajectories\n"
        "node label = the interaction that created the node",
        fontsize=9,
    )
    ax.set_ylim(min(ys) - 1.1, 0.6)
    ax.axis("off")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main() -> None:
    """Run the search and draw it."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "_static" / "search_tree.png")
    parser.add_argument("--seed", type=int, default=2)
    args = parser.parse_args()
    result, config = run_search(args.seed)
    episode = result.episodes[0]
    print(f"a_opt {result.actions(episode.opt_leaf)} D={episode.d_opt:.3f}; "
          f"a_dir {result.actions(episode.dir_leaf)} D={episode.d_dir:.3f}; improved={episode.improved}")  # fmt: skip
    draw(result, config, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
