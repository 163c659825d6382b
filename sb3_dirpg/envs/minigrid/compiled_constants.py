"""MiniGrid's encodings and directions, as the compiled kernels read them (module globals, which numba freezes)."""

from __future__ import annotations

import numpy as np

EMPTY, WALL, FLOOR, DOOR, KEY, BALL, BOX, GOAL, LAVA = 1, 2, 3, 4, 5, 6, 7, 8, 9  # MiniGrid's OBJECT_TO_IDX
OPEN, CLOSED, LOCKED = 0, 1, 2  # a door's state
GREY = 5  # the colour of the wall MiniGrid shows outside the grid
LEFT, RIGHT, FORWARD, PICKUP, DROP, TOGGLE = 0, 1, 2, 3, 4, 5
DIR_X = np.array([1, 0, -1, 0], dtype=np.int64)  # MiniGrid's DIR_TO_VEC: right, down, left, up
DIR_Y = np.array([0, 1, 0, -1], dtype=np.int64)
