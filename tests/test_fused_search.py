"""The search's compiled loop (``search/fused.py`` with the compiled MiniGrid simulator) against its Python loop."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch as th

from benchmarks.common import PythonLoop
from sb3_dirpg import DirPG
from sb3_dirpg.envs import make_minigrid_env
from sb3_dirpg.envs.minigrid import CompiledMiniGridSimulator, MiniGridCNN, MultiRoomBound
from sb3_dirpg.search import SuccessStop
from sb3_dirpg.search.fused import ObsTable, add_observations
from sb3_dirpg.search.top_down import SearchResult, TopDownSearch

ROW = (1 << 32) - 1
POLICY_KWARGS = dict(features_extractor_class=MiniGridCNN, net_arch=[], normalize_images=False)

# (env id, max_steps, search settings): the shipped N6 search (A* with the bound, pruning, stop on success), the
# Gumbel priority without a heuristic (unbounded nodes), depth-first with early stop and Gumbel top-K
SETTINGS = {
    "n6-astar": ("MiniGrid-MultiRoom-N6-v0", 100, dict(
        priority="astar", alpha=0.2, prune=True, stop="success", budget=600, gamma=0.999
    )),  # fmt: skip
    "doorkey-gumbel": ("MiniGrid-DoorKey-5x5-v0", 60, dict(priority="gumbel", stop="budget", budget=400)),
    "n2-depth-first": ("MiniGrid-MultiRoom-N2-S4-v0", 40, dict(
        priority="astar", alpha=1.0, depth_first=True, stop="improvement", budget=300, record_trajectories=True
    )),  # fmt: skip
    "n2-top-k": ("MiniGrid-MultiRoom-N2-S4-v0", 40, dict(priority="gumbel", max_trajectories=7, budget=10_000, stop="budget")),
    "empty-refine": ("MiniGrid-Empty-Random-5x5-v0", 100, dict(
        priority="gumbel", stop=SuccessStop(refine=600), budget=600, gamma=0.99
    )),  # fmt: skip
}


def _model(env_id: str, max_steps: int, heuristic: bool) -> DirPG:
    env = make_minigrid_env(env_id, max_steps=max_steps)
    bound = MultiRoomBound.for_env(env) if heuristic else None
    model = DirPG(
        "MultiInputPolicy", env, seed=3, heuristic=bound, priority={"astar": {"alpha": 0.2}} if heuristic else "gumbel",
        policy_kwargs=POLICY_KWARGS, device="cpu",
    )  # fmt: skip
    assert type(model.simulator) is CompiledMiniGridSimulator
    return model


def _search(model: DirPG, seeds: list[int], compiled_loop: bool, on_iteration: Any = None, **settings: Any) -> SearchResult:
    model.simulator.ensure_simulators(len(seeds))
    config = model.search_config(compiled_loop=compiled_loop, **settings)
    rngs = [np.random.default_rng([seed, 11]) for seed in seeds]
    return TopDownSearch(model.simulator, model.search_policy_function(), config).run(seeds, rngs, on_iteration=on_iteration)


@pytest.mark.parametrize("setting", sorted(SETTINGS))
@pytest.mark.parametrize("n_episodes", [1, 4])
def test_the_compiled_loop_builds_the_tree_of_the_python_loop(setting: str, n_episodes: int) -> None:
    """Every node and region column, every observation and snapshot and every outcome are those of the Python loop."""
    env_id, max_steps, settings = SETTINGS[setting]
    model = _model(env_id, max_steps, heuristic=settings["priority"] == "astar")
    for first in (0, 40):
        seeds = list(range(first, first + n_episodes))
        python, compiled = (_search(model, seeds, loop, **settings) for loop in (False, True))
        trees = (python.tree, compiled.tree)
        assert compiled.episodes == python.episodes
        for name in ("nodes", "regions"):
            want, got = getattr(python.tree, name), getattr(compiled.tree, name)
            size = int(want.count[0])
            assert int(got.count[0]) == size
            for column, a, b in zip(want._fields, want, got):
                np.testing.assert_array_equal(b[:size], a[:size], err_msg=f"{name}.{column}")
        size = python.tree.nodes.size
        assert size > 50 * n_episodes, "the searches were too short to compare"
        rows = [[None if s is None else s & ROW for s in (tree.snapshots[i] for i in range(size))] for tree in trees]
        assert rows[1] == rows[0]  # snapshots are (reset generation << 32) | row: the same rows of the store
        for i in range(size):
            want, got = python.tree.obs[i], compiled.tree.obs[i]
            np.testing.assert_array_equal(got["image"], want["image"])
            assert int(got["direction"]) == int(want["direction"])


def test_the_compiled_loop_reports_every_iteration_and_stops_where_asked() -> None:
    """``on_iteration`` sees the Python loop's sequence of interactions per iteration; returning False at the 37th call
    stops the search there (no 38th call) and marks the result stopped."""
    env_id, max_steps, settings = SETTINGS["n6-astar"]
    model = _model(env_id, max_steps, heuristic=True)
    seen: dict[bool, list[int]] = {False: [], True: []}
    for loop in (False, True):
        result = _search(model, [5, 6, 7], loop, on_iteration=lambda k, loop=loop: seen[loop].append(k) is None, **settings)
        assert not result.stopped
    assert seen[True] == seen[False]
    assert len(seen[True]) > 300 and max(seen[True]) == 3
    calls: list[int] = []
    result = _search(model, [5, 6, 7], True, on_iteration=lambda k: (calls.append(k) or len(calls) < 37), **settings)
    assert result.stopped and len(calls) == 37


def test_the_observation_table_gives_one_id_per_distinct_row() -> None:
    """Rows with many repeats and hash-slot collisions, added in chunks with the table grown in between, get the ids a
    dictionary of first appearances gives."""
    rng = np.random.default_rng(0)
    distinct = rng.integers(0, 3, size=(3000, 5), dtype=np.uint8)  # 243 possible rows: many repeats
    table = ObsTable.empty(width=5, n_actions=2, capacity=16)
    want: dict[bytes, int] = {}
    got: list[int] = []
    for chunk in np.array_split(distinct, 37):
        table = table.reserve(len(chunk))
        got.extend(add_observations(table, chunk).tolist())
    expected = [want.setdefault(row.tobytes(), len(want)) for row in distinct]
    assert got == expected
    assert int(table.count[0]) == len(want)
    np.testing.assert_array_equal(table.rows[: len(want)], np.array([np.frombuffer(k, np.uint8) for k in want]))


class PythonLoopDirPG(PythonLoop, DirPG):
    """DirPG searching in the Python loop."""


def _paper_n6(cls: type[DirPG] = DirPG, **changes: Any) -> DirPG:
    env = make_minigrid_env("MiniGrid-MultiRoom-N6-v0", max_steps=100)
    return cls(
        "MultiInputPolicy", env, seed=0, learning_rate=1e-3, search_budget=2900, priority={"astar": {"alpha": 0.2}},
        heuristic=MultiRoomBound.for_env(env), stop="success", batch_episodes=1, gamma=0.999,
        policy_kwargs=POLICY_KWARGS, device="cpu", **changes,
    )  # fmt: skip


@pytest.mark.parametrize("lookahead", [1, 16])
def test_dirpg_learns_the_same_parameters_with_the_compiled_loop(lookahead: int) -> None:
    """The paper's N6 setting (one map per update, with and without searching ahead) learns bit-identical parameters
    with the compiled loop and with the Python loop, and they did change."""
    models = {loop: _paper_n6(lookahead=lookahead, cls=DirPG if loop else PythonLoopDirPG) for loop in (False, True)}
    start = [p.detach().clone() for p in models[True].policy.parameters()]
    for model in models.values():
        model.learn(15_000)
    assert models[True].num_timesteps == models[False].num_timesteps
    params = {loop: list(model.policy.parameters()) for loop, model in models.items()}
    assert not all(th.equal(a, b) for a, b in zip(start, params[True])), "no update happened: the comparison is empty"
    for a, b in zip(params[False], params[True]):
        assert th.equal(a, b)


def test_the_compiled_forward_gives_the_torch_logits_on_minigrid_views() -> None:
    """On the views of 64 N6 maps, with every weight and bias perturbed (SB3 initialises biases to zero) so that the logits
    spread over several nats, the compiled forward gives the torch forward's logits to float32 rounding, and the
    search's policy function uses it."""
    model = _paper_n6()
    generator = th.Generator().manual_seed(1)
    with th.no_grad():
        for p in model.policy.parameters():
            p.add_(0.5 * th.randn(p.shape, generator=generator))
    batched = model.batched_policy
    compiled = batched.compiled_forward()
    assert compiled is not None
    model.simulator.ensure_simulators(64)
    obs = model.simulator.reset(list(range(64))).obs
    want = batched.logits(obs, np.ones((64, 7), dtype=bool))
    assert np.ptp(want) > 5.0, "the logits are too flat to compare"
    np.testing.assert_allclose(compiled.logits(obs), want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    function = model.search_policy_function()
    assert function.compiled_weights[0] == "minigrid_cnn"
    np.testing.assert_array_equal(function(obs, np.ones((64, 7), dtype=bool)), compiled.logits(obs))


def test_a_policy_the_compiled_forward_does_not_cover_is_forwarded_by_torch() -> None:
    """A hidden layer after the CNN is not covered: the policy function forwards with torch, has no compiled weights,
    and the search loops still agree."""
    env = make_minigrid_env("MiniGrid-MultiRoom-N2-S4-v0", max_steps=40)
    kwargs = dict(POLICY_KWARGS, net_arch=[16])
    model = DirPG("MultiInputPolicy", env, seed=3, policy_kwargs=kwargs, device="cpu")
    assert model.batched_policy.compiled_forward() is None
    assert model.search_policy_function().compiled_weights is None
    python, compiled = (_search(model, [0, 1], loop, budget=300, stop="budget") for loop in (False, True))
    assert compiled.episodes == python.episodes


def test_a_compiled_forward_that_disagrees_with_torch_is_not_used(monkeypatch: Any) -> None:
    """The check against torch refuses a compiled forward that computes something else (here: the direction read from
    the wrong byte), and the search then forwards with torch."""
    from sb3_dirpg.envs.minigrid import cnn_kernels

    original = cnn_kernels.CompiledForward.logits

    def shifted(self: Any, obs: list[dict[str, Any]]) -> np.ndarray:
        return original(self, [dict(o, direction=(int(o["direction"]) + 1) % 4) for o in obs])

    monkeypatch.setattr(cnn_kernels.CompiledForward, "logits", shifted)
    model = _paper_n6()
    assert model.batched_policy.compiled_forward() is None
    assert model.search_policy_function().compiled_weights is None


def test_the_compiled_forward_check_never_writes_the_live_weights() -> None:
    """The check against torch perturbs a copy of the policy, not the learner's parameters (a search worker may be
    reading them at that moment), and it runs once per model, not once per search."""
    model = _paper_n6()
    versions = [parameter._version for parameter in model.policy.parameters()]  # torch counts in-place writes
    assert model.batched_policy.compiled_forward() is not None
    assert [parameter._version for parameter in model.policy.parameters()] == versions
    assert model.batched_policy is model.batched_policy
    model.set_env(make_minigrid_env("MiniGrid-MultiRoom-N6-v0", max_steps=100))
    assert model.batched_policy.compiled_forward() is not None  # built again for the new env


def test_the_loop_boundary_is_named_by_its_records() -> None:
    """The compiled twin unpacks what it receives into names that are the records' own fields, in their order
    (``LoopState`` and ``LoopSimulator``, which the Python side builds by keyword): a field added or moved in a record
    fails here; the status codes the twin returns are ``Exit``'s."""
    import ast
    import inspect
    import textwrap

    from sb3_dirpg.envs.minigrid import compiled_search
    from sb3_dirpg.search import fused

    body = ast.parse(textwrap.dedent(inspect.getsource(compiled_search.search_iterations.py_func))).body[0].body
    unpacked = {
        node.value.id: [name.id for name in node.targets[0].elts]
        for node in body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and isinstance(node.targets[0], ast.Tuple)
    }  # fmt: skip
    assert unpacked["search"] == list(fused.LoopState._fields)
    assert unpacked["sim"] == list(compiled_search.LoopSimulator._fields)
    assert [int(status) for status in fused.Exit] == [fused.OK, fused.MISS, fused.ENDS, fused.DONE_ALL, fused.LIMIT,
                                                      fused.REFILL, fused.STALE, fused.EMPTY_MASK]  # fmt: skip
    exit = fused.exit_of((fused.MISS, 3, fused.NO_POPPED, np.array([5]), -1))
    assert exit.status is fused.Exit.MISS and exit.iterations == 3 and exit.popped.todo.size == 0
    assert len(fused.NO_POPPED) == len(fused.Popped._fields)


def test_the_compiled_simulator_meets_the_typed_protocol_and_the_env_path_does_not() -> None:
    from sb3_dirpg.search.protocols import CompiledPolicyFunction, CompiledSearchSimulator

    model = _model("MiniGrid-DoorKey-5x5-v0", 60, heuristic=False)
    model.simulator.reset([0])
    assert isinstance(model.simulator, CompiledSearchSimulator) and model.simulator.runs_search_iterations
    assert isinstance(model.search_policy_function(), CompiledPolicyFunction)
    env_path = DirPG("MultiInputPolicy", make_minigrid_env("MiniGrid-DoorKey-5x5-v0", max_steps=60), seed=3,
                     policy_kwargs=POLICY_KWARGS, device="cpu", simulator_backend="env")  # fmt: skip
    assert not isinstance(env_path.simulator, CompiledSearchSimulator)


def test_a_tree_reads_its_columns_from_a_compiled_loop_as_from_its_lists() -> None:
    """After the compiled loop, the tree's observations and snapshots are read from its arrays: the same values, the
    same length, slices and negative indices as the lists of the Python loop."""
    model = _model("MiniGrid-DoorKey-5x5-v0", 60, heuristic=False)
    python, compiled = (_search(model, [4], compiled_loop=flag) for flag in (False, True))
    for column in ("obs", "snapshots"):
        held, read = getattr(python.tree, column), getattr(compiled.tree, column)
        assert len(held) == len(read) == python.tree.nodes.size
    for node in (0, 1, len(held) // 2, -1):
        np.testing.assert_array_equal(python.tree.obs[node]["image"], compiled.tree.obs[node]["image"])
        assert python.tree.obs[node]["direction"] == compiled.tree.obs[node]["direction"]
    assert [o["direction"] for o in compiled.tree.obs[2:9:3]] == [o["direction"] for o in python.tree.obs[2:9:3]]
    with pytest.raises(IndexError):
        compiled.tree.obs[len(held)]
