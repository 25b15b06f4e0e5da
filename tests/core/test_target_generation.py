"""Generation for a campaign's targets: no graph holds an op instance a target is known not
to build (the op specs' `targets:`), what was avoided is counted, and llvm alone draws the
graphs it always drew."""
import numpy as np
import pytest

from hirfuzz.core.coverage import Coverage
from hirfuzz.core.generate import Excluded, GenStats, generate_graph, single_op_graph
from hirfuzz.errors import HirfuzzError

CUDA = ("llvm", "cuda")
EXCLUDED_OPS = ["mod", "mean", "round", "nn.conv1d", "atanh", "cumsum", "nn.group_norm", "add"]


def _offending(specs, graph) -> list[str]:
    """The graph's nodes some cuda exclusion covers: by dtype alone, or by its `when`."""
    bad = []
    for node in graph.operators:
        spec = specs.ops[node.op]
        if spec.excluded_dtype(node.dtype, ("cuda",)) is not None:
            bad.append(f"{node.op}[{node.dtype}]")
        env = {**node.attrs, "dtype": node.dtype,
               **{i.name: _info(graph, ref) for i, ref in zip(spec.inputs, node.inputs)}}
        for x in spec.exclusions(("cuda",)):
            if x.when is not None and x.covers_dtype(node.dtype) and x.when(env):
                bad.append(f"{node.op}[{node.dtype}] when {x.when.text}")
    return bad


def _info(graph, ref):
    from hirfuzz.core.reference import TensorInfo
    return [TensorInfo.of(graph.type_of(r)) for r in ref] if isinstance(ref, list) else TensorInfo.of(graph.type_of(ref))


def test_no_cuda_graph_holds_an_excluded_instance_and_the_avoided_ones_are_counted(specs):
    rng, stats, coverage = np.random.default_rng(7), GenStats(), Coverage()
    bad, seen = [], set()
    for _ in range(300):
        graph = generate_graph(specs, rng, 4, coverage, ops=EXCLUDED_OPS, stats=stats, targets=CUDA)
        bad += _offending(specs, graph)
        seen |= {(n.op, n.dtype) for n in graph.operators}
    assert bad == []
    avoided = stats.avoided["cuda"]
    assert avoided.get("mod[float16]", 0) > 0 and avoided.get("nn.conv1d[float32]", 0) > 0
    assert any(k.startswith("mean[") and " when " in k for k in avoided), avoided  # the `when` turned nodes down
    # what cuda builds is still drawn: the ops' other dtypes, and means that keep a dimension
    assert {("mod", "float32"), ("mean", "float64")} <= seen
    assert not any(op == "nn.conv1d" for op, _ in seen)  # no dtype of it builds in every shape
    assert set(stats.avoided) == {"cuda"}  # llvm excludes nothing


def test_an_op_restricted_run_counts_what_it_avoided(specs):
    stats = GenStats()
    rng = np.random.default_rng(3)
    for _ in range(20):
        graph = generate_graph(specs, rng, 3, Coverage(), ops=["mod"], dtypes=["float16", "float32"],
                               stats=stats, targets=CUDA)
        assert {n.dtype for n in graph.operators} == {"float32"}
    assert stats.avoided["cuda"]["mod[float16]"] > 0


def test_nothing_left_to_draw_is_one_clear_error(specs):
    with pytest.raises(HirfuzzError, match="excluded"):
        generate_graph(specs, np.random.default_rng(0), 3, Coverage(), ops=["mod"], dtypes=["float16"],
                       targets=CUDA)


@pytest.mark.parametrize("seed", [0, 5])
def test_llvm_alone_draws_the_same_graphs_as_without_targets(specs, seed):
    ops = ["mod", "mean", "round", "add", "exp"]
    before = generate_graph(specs, np.random.default_rng(seed), 12, Coverage(), ops=ops)
    now_stats = GenStats()
    now = generate_graph(specs, np.random.default_rng(seed), 12, Coverage(), ops=ops, stats=now_stats,
                         targets=("llvm",))
    assert now.to_json() == before.to_json()
    assert now_stats.avoided == {}


def test_single_op_graph_refuses_an_excluded_dtype_at_once(specs):
    with pytest.raises(Excluded, match=r"mod\[float16\] is excluded on cuda"):
        single_op_graph(specs, "mod", "float16", np.random.default_rng(0), targets=CUDA)
    assert single_op_graph(specs, "mod", "float16", np.random.default_rng(0)).operators  # llvm builds it
