"""What the search needs from the outside world: a batch simulator and a policy function."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from sb3_dirpg.search.fused import LoopExit, LoopState
    from sb3_dirpg.search.state import Popped


@dataclass
class Transitions:
    """States reached by a batch of resets or steps.

    :param obs: one observation per row (any type; the policy function stacks them)
    :param rewards: reward of the step that reached each state, shape (n,) (zeros for resets)
    :param terminal: whether the state ends the trajectory (terminated or truncated), shape (n,)
    :param masks: legal actions in each state, bool, shape (n, n_actions)
    :param snapshots: one opaque simulator snapshot per row, to step from later
    :param lower: lower bound on the discounted return-to-go from each state, shape (n,), or None
    :param upper: upper bound on the discounted return-to-go from each state, shape (n,), or None
    :param success: whether the step that reached each state ended the episode in success (SB3's
        ``info["is_success"]``), bool, shape (n,), or None when the simulator does not report it
    """

    obs: list[Any]
    rewards: np.ndarray
    terminal: np.ndarray
    masks: np.ndarray
    snapshots: list[Any]
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    success: np.ndarray | None = None


class BatchSimulator(Protocol):
    """Steps any number of snapshots; stateless as far as the search is concerned."""

    n_actions: int

    def reset(self, seeds: Sequence[int]) -> Transitions:
        """:param seeds: one seed per episode (fixes the episode's noise)
        :return: the root states"""

    def step(self, snapshots: Sequence[Any], actions: np.ndarray, episodes: np.ndarray) -> Transitions:
        """:param snapshots: states to step from
        :param actions: one action per snapshot
        :param episodes: index of the episode each row belongs to
        :return: the states reached"""


@runtime_checkable
class CompiledSearchSimulator(BatchSimulator, Protocol):
    """A batch simulator that steps in compiled code and can run the search's lockstep iterations itself
    (:mod:`sb3_dirpg.search.fused`). Its observations are byte rows of a fixed width for the search's memo.

    :param observation_width: the bytes of an observation row
    """

    observation_width: int

    @property
    def runs_search_iterations(self) -> bool:
        """:return: whether the batch of the last reset can be searched with :meth:`search_iterations`"""

    def observation_rows(self, obs: list[Any]) -> np.ndarray:
        """:param obs: observations of this simulator
        :return: them as byte rows, uint8, shape (m, observation_width)"""

    def row_observations(self, rows: np.ndarray) -> list[Any]:
        """:param rows: byte rows, uint8, shape (m, observation_width)
        :return: the observations they hold"""

    def search_iterations(
        self, state: LoopState, pending: Popped | None, max_iterations: int, counts: np.ndarray,
        policy_weights: tuple | None = None,
    ) -> LoopExit:  # fmt: skip
        """Run up to ``max_iterations`` lockstep iterations of a search in compiled code, built from the pieces of
        :mod:`sb3_dirpg.search.fused` (see :func:`sb3_dirpg.envs.minigrid.compiled_search.search_iterations`).

        :param state: the search's records (room reserved for ``max_iterations`` iterations)
        :param pending: popped regions to expand first (those of the ``MISS`` that ended the last call, now
            forwarded), or None
        :param max_iterations: the most iterations
        :param counts: out: the interactions of each iteration
        :param policy_weights: the policy function's ``compiled_weights`` (an architecture name, then arrays), which
            the simulator may evaluate itself instead of returning ``MISS``; None: forward in Python
        :return: why it returned, and what the search needs to go on
        """


class PolicyFunction(Protocol):
    """Maps a batch of observations (and their legal-action masks) to action logits, shape (n, n_actions).

    It may also be a :class:`CompiledPolicyFunction`, whose network a :class:`CompiledSearchSimulator` that knows the
    architecture evaluates itself, with the same results.
    """

    def __call__(self, obs: list[Any], masks: np.ndarray) -> np.ndarray:
        """:param obs: observations
        :param masks: legal actions, bool, shape (n, n_actions)
        :return: logits or unnormalised log-probabilities; the search renormalises over legal actions"""


@runtime_checkable
class CompiledPolicyFunction(PolicyFunction, Protocol):
    """A policy function that also hands its network's weights to a compiled search loop.

    :param compiled_weights: an architecture name, then the arrays that the loop evaluates; None where the network has
        no compiled twin
    """

    compiled_weights: tuple | None


class Heuristic(Protocol):
    """Bounds the discounted return-to-go from an env's current state (an env's state, so the search needs no torch).

    Return an upper bound ``U``, or a pair ``(L, U)``. The A* priority uses ``U``; pruning needs ``U`` to be admissible
    (never below the true return-to-go of any completion), and uses ``L`` to tighten the best-known bound.
    """

    def __call__(self, env: Any) -> float | tuple[float, float]:
        """:param env: the env, at the state to bound
        :return: ``U`` or ``(L, U)``"""
