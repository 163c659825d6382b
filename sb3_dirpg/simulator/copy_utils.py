"""Helpers shared by the ways of saving env state: the ``MISSING`` marker, the one-level copy, the RNG state."""

from __future__ import annotations

from collections import deque
from typing import Any

import gymnasium as gym
import numpy as np

# Stands for an attribute that was not set when its state was saved: restoring it deletes the attribute.
MISSING = object()

# Containers copied one level deep by default: wrapper layer attributes (frame stacks keep deques) and recorded actions.
CONTAINER_TYPES: tuple[type, ...] = (np.ndarray, list, dict, set, deque)


def copy1(value: Any, container_types: tuple[type, ...] = CONTAINER_TYPES) -> Any:
    """One-level copy of a container, so a saved value does not alias mutable env data.

    :param value: a value to save or to put back
    :param container_types: the exact types to copy (subclasses are not copied); everything else is kept by reference
    :return: ``value.copy()`` when the type of ``value`` is one of ``container_types``, else ``value`` itself
    """
    return value.copy() if type(value) in container_types else value


def save_rng(base: gym.Env) -> tuple[np.random.Generator, dict[str, Any]] | None:
    """:param base: the unwrapped env
    :return: its RNG and the RNG's bit-generator state, or None when the env has not created its RNG"""
    rng = base.__dict__.get("_np_random")
    if rng is None:
        return None
    return rng, rng.bit_generator.state


def restore_rng(base: gym.Env, saved: tuple[np.random.Generator, dict[str, Any]] | None) -> None:
    """:param base: the unwrapped env
    :param saved: a value returned by :func:`save_rng`"""
    if saved is None:
        base.__dict__["_np_random"] = None
    else:
        rng, state = saved
        base.__dict__["_np_random"] = rng
        rng.bit_generator.state = state
