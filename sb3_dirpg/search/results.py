"""What a search hands back: the tree and one :class:`EpisodeSearch` per episode."""

from __future__ import annotations

from dataclasses import dataclass, field

from sb3_dirpg.search.tree import SearchTree


@dataclass
class CompletedTrajectory:
    """A trajectory yielded by the search.

    :param leaf: id of its last node in the tree
    :param g: its Gumbel ``G(a) = log P(a) + Γ(a)``
    :param ret: its discounted return
    :param d: its direct objective ``G + ε·R``
    """

    leaf: int
    g: float
    ret: float
    d: float


@dataclass
class EpisodeSearch:
    """Outcome of the search of one episode.

    :param seed: the episode's seed
    :param opt_leaf: last node of ``a_opt`` (a sample of the policy)
    :param dir_leaf: last node of ``a_dir`` (``opt_leaf`` when nothing improved)
    :param g_opt: ``G(a_opt)``, distributed as ``Gumbel(0)``
    :param return_opt: return of ``a_opt``
    :param reward_sum_opt: undiscounted sum of the rewards of ``a_opt`` (what SB3 reports as the episode reward)
    :param return_dir: return of ``a_dir``
    :param d_opt: ``D(a_opt) = G(a_opt) + ε·R(a_opt)``
    :param d_dir: ``D(a_dir)``
    :param success_opt: whether ``a_opt`` ended in success (False when the simulator does not report success)
    :param success_dir: whether ``a_dir`` ended in success
    :param length_opt: number of actions of ``a_opt``
    :param interactions: environment interactions spent, ``a_opt`` included
    :param interactions_to_improvement: search interactions (after ``a_opt``) until the first improvement, or None
    :param trajectories: number of complete trajectories found, ``a_opt`` included
    :param pruned: number of regions pruned
    :param recorded: every complete trajectory, in the order found (when ``record_trajectories``)
    :param bound_gap: the largest violation of the heuristic's bound seen on the nodes of the complete trajectories
        (realised return-to-go minus ``upper`` for ε > 0, ``lower`` minus it for ε < 0, discounted from the node);
        0 when every bound held or there is no heuristic
    :param bound_gap_depth: the depth of the node with that violation, or -1
    :param entropy_opt: the policy's mean entropy (nats) over the steps of ``a_opt``, NaN before it is found
    """

    seed: int
    opt_leaf: int = -1
    dir_leaf: int = -1
    g_opt: float = float("nan")
    return_opt: float = float("nan")
    reward_sum_opt: float = float("nan")
    return_dir: float = float("nan")
    d_opt: float = float("nan")
    d_dir: float = float("nan")
    success_opt: bool = False
    success_dir: bool = False
    length_opt: int = 0
    interactions: int = 0
    interactions_to_improvement: int | None = None
    trajectories: int = 0
    pruned: int = 0
    recorded: list[CompletedTrajectory] = field(default_factory=list)
    bound_gap: float = 0.0
    bound_gap_depth: int = -1
    entropy_opt: float = float("nan")

    @property
    def improved(self) -> bool:
        """:return: whether ``a_dir`` differs from ``a_opt``"""
        return self.dir_leaf != self.opt_leaf


@dataclass
class SearchResult:
    """The tree and per-episode outcomes of a batch of searches (``stopped``: interrupted by ``on_iteration``)."""

    tree: SearchTree
    episodes: list[EpisodeSearch]
    stopped: bool = False

    def actions(self, leaf: int) -> list[int]:
        """:param leaf: a node id
        :return: the actions leading to it"""
        return self.tree.actions(leaf)
