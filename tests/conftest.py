"""Settings for every test: one torch thread (the machines are shared; the suite runs with pytest-xdist)."""

import torch as th

th.set_num_threads(1)
