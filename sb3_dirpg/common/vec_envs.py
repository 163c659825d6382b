"""The SB3 ``VecEnv`` side of the search's simulators: which VecEnvs and wrappers the search can use, and the
:class:`~sb3_dirpg.simulator.SimulatorWrapper` around each of their sub-envs."""

from __future__ import annotations

from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv, VecEnvWrapper, VecMonitor, VecTransposeImage

from sb3_dirpg.common.vec_simulator import VecSimulator
from sb3_dirpg.search.protocols import Heuristic
from sb3_dirpg.simulator import SimulatorWrapper, strip_monitor

__all__ = ["check_vec_env", "vec_env_simulators", "vec_simulator"]

# VecEnv wrappers that only observe (or transform observations statelessly) and are safe to bypass or replay
_STATELESS_VEC_WRAPPERS = (VecMonitor, VecTransposeImage)



def _vec_wrappers(venv: VecEnv) -> list[VecEnvWrapper]:
    layers = []
    while isinstance(venv, VecEnvWrapper):
        layers.append(venv)
        venv = venv.venv
    return layers


def check_vec_env(venv: VecEnv, algo: str) -> None:
    """Refuse VecEnv types and wrappers the search cannot use correctly, with a message that says what to do.

    :param venv: the training VecEnv
    :param algo: name of the algorithm, for messages
    """
    for layer in _vec_wrappers(venv):
        if not isinstance(layer, _STATELESS_VEC_WRAPPERS):
            raise ValueError(
                f"{algo} cannot use the VecEnv wrapper {type(layer).__name__}: the search steps the sub-envs from snapshots, "
                "so wrappers that keep running statistics or history (VecNormalize, VecFrameStack, ...) would go stale. "
                "Apply per-env gymnasium wrappers instead (e.g. gymnasium.wrappers.FrameStackObservation), "
                "or normalise inside the policy."
            )
    base = venv.unwrapped
    if isinstance(base, SubprocVecEnv):
        raise ValueError(
            f"{algo} keeps simulator snapshots in the training process and cannot search inside SubprocVecEnv workers; "
            "use DummyVecEnv (make_vec_env(..., vec_env_cls=DummyVecEnv)). The number of episodes searched together "
            "is set by batch_episodes, independently of n_envs."
        )
    if not isinstance(base, DummyVecEnv):
        raise ValueError(f"{algo} needs a DummyVecEnv (got {type(base).__name__}) so that it can snapshot the sub-envs")


def vec_env_simulators(venv: VecEnv, algo: str = "DirPG") -> list[SimulatorWrapper]:
    """:param venv: the training VecEnv (checked with :func:`check_vec_env`)
    :param algo: name of the algorithm, for messages
    :return: a SimulatorWrapper around every sub-env (without its Monitor)"""
    check_vec_env(venv, algo)
    sims = []
    for env in venv.unwrapped.envs:
        inner = strip_monitor(env)
        sims.append(inner if isinstance(inner, SimulatorWrapper) else SimulatorWrapper(inner))
    return sims


def vec_simulator(venv: VecEnv, heuristic: Heuristic | None = None, algo: str = "DirPG") -> VecSimulator:
    """Wrap every sub-env of a DummyVecEnv (without its Monitor) in a SimulatorWrapper.

    :param venv: the training VecEnv
    :param heuristic: see :class:`~sb3_dirpg.common.vec_simulator.VecSimulator`
    :param algo: name of the algorithm, for messages
    :return: the batch simulator
    """
    return VecSimulator(vec_env_simulators(venv, algo), heuristic)
