"""Input search: every intermediate stays inside the domain of the op it feeds.

A default draw (each variable inside the domains of the op inputs it feeds directly)
almost never suits these graphs; the search must find inputs whose every result is
compared, and say which op's domain it could not meet when none can work.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hirfuzz.core.coverage import Coverage
from hirfuzz.core.generate import generate_graph
from hirfuzz.core.graph import Graph, Node, Ref, TensorType
from hirfuzz.core.inputs import DRAWS, choose_inputs, declared_domain, find_violations
from hirfuzz.core.reference import interpret, op_env


@pytest.fixture(scope="session")
def relay_specs():
    from hirfuzz.core.spec import load_specs
    return load_specs(dialect="relay")


class Builder:
    """A hand-made graph, one node a call."""

    def __init__(self, dtype="float32"):
        self.g, self.dtype = Graph(), dtype

    def var(self, shape, dtype=None):
        return self._add(Node(len(self.g.nodes), "var", [TensorType(tuple(shape), dtype or self.dtype)]))

    def const(self, value, dtype=None):
        arr = np.asarray(value, dtype=dtype or self.dtype)
        return self._add(Node(len(self.g.nodes), "const", [TensorType(arr.shape, arr.dtype.name)],
                              value=arr.tolist()))

    def op(self, name, *inputs, shape=None, **attrs):
        shape = shape if shape is not None else self.g.type_of(inputs[0]).shape
        return self._add(Node(len(self.g.nodes), "op", [TensorType(tuple(shape), self.dtype)], op=name,
                              dtype=self.dtype, inputs=list(inputs), attrs=attrs))

    def _add(self, node):
        self.g.add(node)
        return Ref(node.id)


def every_input_inside(graph, specs, facts):
    """Checked here, independently of the search: each op input within its declared domain,
    and no float result NaN or Inf."""
    for node in graph.operators:
        spec = specs.ops[node.op]
        env = op_env(spec, node, graph)
        for slot, item in enumerate(node.inputs):
            for ref in item if isinstance(item, list) else [item]:
                value = facts[ref].value
                if value.dtype.kind == "b" or value.size == 0:
                    continue
                declared = declared_domain(spec, slot, env, value.dtype.name)
                if declared is not None and (value.min() < declared[0] or value.max() > declared[1]):
                    return f"input {slot} of node {node.id} ({node.op}) outside {declared}"
        for i in range(len(node.outputs)):
            v = facts[Ref(node.id, i)].value
            if v.dtype.kind == "f" and not np.all(np.isfinite(v)):
                return f"node {node.id} ({node.op}) is not finite"
    return None


def assert_all_compared(graph, specs, seeds=range(5)):
    for seed in seeds:
        chosen = choose_inputs(graph, specs, np.random.default_rng(seed))
        assert chosen.comparable, (seed, chosen.reason)
        assert chosen.op == ""
        assert every_input_inside(graph, specs, chosen.facts) is None
        assert all(chosen.facts[r].stable for r in graph.results())


def test_log_of_x_minus_five(specs):
    # x must leave its default range [-4, 4]: x - 5 >= 0.125
    b = Builder()
    x = b.var((4, 6))
    d = b.op("subtract", x, b.const(5.0))
    b.op("log", d)
    assert_all_compared(b.g, specs)


def test_sqrt_of_a_minus_b(specs):
    # every one of 64 elements needs a >= b: a default draw meets that with probability 2^-64
    b = Builder()
    x, y = b.var((8, 8)), b.var((8, 8))
    b.op("sqrt", b.op("subtract", x, y))
    assert_all_compared(b.g, specs)


def test_acos_of_tanh_times_three(specs):
    b = Builder()
    x = b.var((5, 7))
    t = b.op("tanh", x)
    b.op("acos", b.op("multiply", t, b.const(3.0)))
    assert_all_compared(b.g, specs)


def test_domains_pass_through_reductions_and_shape_ops(specs):
    # asin(mean(reshape(exp(x)))): exp(x) in [-1, 1], so x <= 0 everywhere
    b = Builder("float64")
    x = b.var((3, 4, 5))
    e = b.op("exp", x)
    r = b.op("reshape", e, shape=(12, 5), new_shape=[12, 5], infer=-1)
    m = b.op("mean", r, shape=(12,), axis=[1], keepdims=False)
    b.op("asin", m)
    assert_all_compared(b.g, specs)


def test_log_of_a_sum(specs):
    b = Builder()
    x = b.var((6, 5))
    s = b.op("sum", x, shape=(6,), axis=[1], keepdims=False)
    b.op("log", s)
    assert_all_compared(b.g, specs)


def test_a_domain_no_input_meets_is_named(specs):
    # sigmoid is below 1, acosh needs at least 1: nothing works, and the op is named
    b = Builder()
    x = b.var((3, 3))
    s = b.op("sigmoid", x)
    a = b.op("acosh", s)
    b.op("exp", a)
    chosen = choose_inputs(b.g, specs, np.random.default_rng(0))
    assert not chosen.comparable
    assert chosen.op == "acosh" and "acosh" in chosen.reason
    assert chosen.draws == DRAWS  # the whole budget spent looking
    # nothing below the violation is compared
    assert not chosen.facts[Ref(a.node)].stable and not chosen.facts[Ref(a.node + 1)].stable


def test_constants_alone_stop_the_search_at_once(specs):
    b = Builder()
    b.op("log", b.op("negative", b.const([[1.0, 2.0]])))
    chosen = choose_inputs(b.g, specs, np.random.default_rng(0))
    assert chosen.op == "log" and chosen.draws == 1


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_ops=st.integers(1, 20), dialect=st.sampled_from(["relax", "relay"]))
def test_a_clean_draw_keeps_every_input_inside_its_domain(specs, relay_specs, seed, n_ops, dialect):
    s = specs if dialect == "relax" else relay_specs
    g = generate_graph(s, np.random.default_rng(seed), n_ops, Coverage())
    chosen = choose_inputs(g, s, np.random.default_rng(seed))
    again = choose_inputs(g, s, np.random.default_rng(seed))
    assert chosen.reason == again.reason and chosen.op == again.op and chosen.draws == again.draws
    for vid, value in chosen.values.items():
        assert value.dtype == again.values[vid].dtype and np.array_equal(value, again.values[vid], equal_nan=True)
    found = find_violations(g, s, chosen.facts)
    if chosen.reason == "":
        assert found.clean and every_input_inside(g, s, chosen.facts) is None
    else:
        assert chosen.op == g.nodes[found.node].op and chosen.reason == found.first
        for node_id in found.tainted:
            assert not chosen.facts[Ref(node_id)].stable


def test_every_generated_case_is_fully_compared(specs):
    # the default draw alone leaves about half the 20-op cases partly uncompared; with the
    # search and the generator's witness as its last resort, none is
    rng, cov = np.random.default_rng(5), Coverage()
    graphs = [generate_graph(specs, rng, 20, cov) for _ in range(40)]
    full = sum(choose_inputs(g, specs, np.random.default_rng(i)).comparable for i, g in enumerate(graphs))
    assert full == len(graphs)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_ops=st.integers(1, 20), dialect=st.sampled_from(["relax", "relay"]))
def test_the_generators_witness_keeps_every_op_inside_its_domain(specs, relay_specs, seed, n_ops, dialect):
    s = specs if dialect == "relax" else relay_specs
    g = generate_graph(s, np.random.default_rng(seed), n_ops, Coverage())
    if g.witness is None:  # broken by an integer overflow TVM leaves undefined, kept on purpose
        assert any(n.dtype.startswith(("int", "uint")) for n in g.operators)
        return
    assert set(g.witness) == {n.id for n in g.variables}
    facts = interpret(g, s, g.witness)
    assert find_violations(g, s, facts).clean and every_input_inside(g, s, facts) is None


@pytest.mark.parametrize("producer, consumer", [("tanh", "acosh"), ("nn.log_softmax", "rsqrt"), ("sigmoid", "log")])
def test_no_op_is_fed_a_tensor_that_cannot_meet_its_domain(specs, producer, consumer):
    # tanh is below 1 where acosh needs at least 1, a log-probability is never positive as
    # rsqrt needs; a sigmoid is, so log of a sigmoid is generated
    rng, cov = np.random.default_rng(0), Coverage()
    edges = set()
    for _ in range(30):
        g = generate_graph(specs, rng, 6, cov, ops=[producer, consumer], dtypes=["float32"])
        edges |= {(g.nodes[r.node].op, n.op) for n in g.operators for r in n.input_refs()
                  if g.nodes[r.node].kind == "op"}
    assert (producer, consumer) in edges if consumer == "log" else (producer, consumer) not in edges
    assert (consumer, consumer) in edges or (consumer, producer) in edges   # the ops did meet


def test_an_ops_input_search_field_is_what_lets_an_interval_through(tmp_path):
    # sqrt(hold(x)) with hold a new op that copies its input: only its spec's
    # `input_search: passthrough` tells the search that x itself must be >= 0
    import shutil

    from conftest import SPECS
    from hirfuzz.core.inputs import wanted_intervals
    from hirfuzz.core.spec import load_specs
    hold = ("ops:\n  - name: hold\n    inputs: [x]\n    dtypes: [float32]\n    output: {shape: x.shape}\n"
            "    reference: np.asarray(x)\n    dialects: {relax: {op: copy}}\n")
    wanted = {}
    for search in ("", "    input_search: passthrough\n"):
        shutil.copy(SPECS / "tolerances.yaml", tmp_path / "tolerances.yaml")
        shutil.copy(SPECS / "unary.yaml", tmp_path / "unary.yaml")
        (tmp_path / "hold.yaml").write_text(hold + search)
        specs = load_specs(tmp_path)
        b = Builder()
        x = b.var((4, 4))
        b.op("sqrt", b.op("hold", x))
        wanted[search] = wanted_intervals(b.g, specs).get(x)
        if search:
            assert_all_compared(b.g, specs)
    assert wanted[""] is None
    lo, hi = wanted["    input_search: passthrough\n"]
    assert lo >= 0 and hi > lo
