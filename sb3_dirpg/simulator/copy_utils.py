"""Value-level helpers shared by the cloners and the wrapper: the ``MISSING`` marker and the one-level copy."""

from __future__ import annotations

from collections import deque
from typing import Any

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
