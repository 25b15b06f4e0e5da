"""What of an operator's attributes a failure needs (core.reduce, the simplify_attributes
reduction step): each attribute's plainer value, the graph with it where the spec allows,
the roles a root key and an avoided construct name, and generation that draws an op only
without what a finding needs of it."""
import numpy as np

from hirfuzz.campaign.avoidance import Construct, construct_of
from hirfuzz.core.coverage import Coverage
from hirfuzz.core.generate import AvoidedOp, GenStats, generate_graph
from hirfuzz.core.attributes import holds_roles, key_roles, plainer_values, roles_held
from hirfuzz.campaign.reduction_steps import with_attribute
from hirfuzz.protocol import GRADIENT, make_config

from graph_json import graph_of, op, var

POOL = {"ceil_mode": True, "kh": 3, "kw": 2, "sh": 1, "sw": 2, "pt": 1, "pl": 0, "pb": 0, "pr": 0, "dh": 2, "dw": 1}


def pooled(consumer: bool = False):
    # height (9 + 1 - (2 * (3 - 1) + 1)) + 1 = 6, width (8 - 2) // 2 + 1 = 4
    nodes = [var(0, [2, 3, 9, 8]), op(1, "nn.max_pool2d", [[0, 0]], [2, 3, 6, 4], attrs=POOL)]
    if consumer:
        nodes.append(op(2, "abs", [[1, 0]], [2, 3, 6, 4]))
    return graph_of(*nodes)


def test_a_window_s_plainer_values_are_its_least_and_a_flag_s_is_false(specs):
    spec = specs.ops["nn.max_pool2d"]
    assert plainer_values(spec, POOL) == {"kh": 1, "kw": 1, "sw": 1, "pt": 0, "dh": 1, "ceil_mode": False}
    assert roles_held(spec, POOL) == {"kernel", "stride", "padding", "dilation", "ceil_mode"}
    assert plainer_values(spec, {**POOL, **plainer_values(spec, POOL)}) == {}


def test_an_attribute_made_plainer_retypes_the_result_where_nothing_reads_it(specs):
    spec = specs.ops["nn.max_pool2d"]
    undilated = with_attribute(pooled(), 1, "dh", 1, spec, ("llvm",))
    assert undilated.nodes[1].attrs["dh"] == 1 and undilated.nodes[1].outputs[0].shape == (2, 3, 8, 4)
    assert pooled().nodes[1].attrs["dh"] == 2  # the graph given is left as it was
    assert with_attribute(pooled(consumer=True), 1, "dh", 1, spec, ("llvm",)) is None  # abs reads the old type
    assert with_attribute(pooled(), 1, "kh", 1, spec, ("llvm",)) is None  # the padding must stay below the kernel
    assert with_attribute(pooled(), 1, "ceil_mode", False, spec, ("llvm",)).nodes[1].outputs == pooled().nodes[1].outputs


def test_a_key_names_what_is_more_than_a_window_s_sizes_else_the_window():
    assert key_roles(["dilation", "kernel", "padding"]) == ["dilation"]
    assert key_roles(["kernel", "padding"]) == ["window"]
    assert key_roles(["ceil_mode", "count_include_pad", "stride"]) == ["ceil_mode", "count_include_pad"]
    assert key_roles([]) == []
    assert holds_roles({"kernel", "dilation"}, ["dilation"]) and holds_roles({"stride"}, ["window"])
    assert not holds_roles({"kernel"}, ["dilation"]) and not holds_roles({"dilation"}, ["window"])


def test_a_one_operator_finding_that_needs_attributes_names_them_in_its_construct(specs):
    graph = pooled()
    case = {"graph": graph.to_json(), "lowering": {}, "disruption": None,
            "configs": [{**make_config("vm", "llvm"), GRADIENT: "float64"}]}
    needs = {"extra": {"needs": {"nn.max_pool2d": ["dilation", "kernel"]}}}
    construct = construct_of({"kind": "wrong-result", "confirmed": True, **needs}, case)
    assert construct == Construct("nn.max_pool2d", "float64", GRADIENT, ("dilation",))
    assert construct.name == "nn.max_pool2d[float64] with dilation"
    assert construct.avoided() == AvoidedOp("nn.max_pool2d", "float64", ("dilation",), gradient=True)
    assert construct_of({"kind": "wrong-result", "confirmed": True}, case).roles == ()
    # a wrong gradient keyed as one of its operators alone names that operator's construct
    # (bench25 relay13-now: max_pool2d's dilated gradient was found three times unavoided)
    two = {**case, "graph": pooled(consumer=True).to_json()}
    assert construct_of({"kind": "wrong-result", "confirmed": True, **needs}, two) is None
    keyed = {"kind": "wrong-result", "confirmed": True,
             "extra": {**needs["extra"], "keyed_as": {"operator": "nn.max_pool2d", "message": "..."}}}
    assert construct_of(keyed, two) == construct


def test_generation_draws_an_op_only_without_what_an_avoided_construct_needs_of_it(specs):
    avoid = frozenset({AvoidedOp("nn.max_pool2d", "float32", ("dilation",))})
    stats = GenStats()
    pools = []
    for seed in range(12):
        graph = generate_graph(specs, np.random.default_rng(seed), 4, Coverage(), ops=["nn.max_pool2d", "abs"],
                               dtypes=["float32"], stats=stats, avoid=avoid)
        pools += [n for n in graph.operators if n.op == "nn.max_pool2d"]
    assert pools and all((n.attrs["dh"], n.attrs["dw"]) == (1, 1) for n in pools)
    assert stats.avoided_found["nn.max_pool2d[float32] with dilation"] > 0
    dilated = set()
    for seed in range(12):
        graph = generate_graph(specs, np.random.default_rng(seed), 4, Coverage(), ops=["nn.max_pool2d", "abs"],
                               dtypes=["float32"])
        dilated |= {(n.attrs["dh"], n.attrs["dw"]) for n in graph.operators if n.op == "nn.max_pool2d"}
    assert dilated - {(1, 1)}  # drawn without the avoidance


def test_gradient_cases_draw_no_op_with_what_the_autodiff_s_contract_leaves_out():
    """Relax's pool backward is not legalized with a dilation, Relay's conv2d backward does
    not build with one (their CONTRACT_ROLES): a gradient case drew them all the same and was
    then no gradient case at all. Gradient cases draw them undilated, counted as excluded by
    the contract; other cases still draw dilations."""
    from hirfuzz.campaign.cases import CaseMaker
    from hirfuzz.campaign.oracles.gradient import OUTSIDE_CONTRACT, why_not_differentiable
    from hirfuzz.campaign.settings import Settings
    from hirfuzz.core.spec import load_specs
    from hirfuzz.dialects import dialect_info

    for dialect, ops in (("relax", {"nn.max_pool2d", "nn.avg_pool2d"}), ("relay", {"nn.conv2d"})):
        maker = CaseMaker(Settings(seed=12, ops=12, gradients=0.5, pass_fuzz=False, dialect=dialect),
                          load_specs(dialect=dialect), dialect_info(dialect), None)
        dilated = {True: 0, False: 0}
        for index in range(120):
            case = maker.make_case(index)
            gradient = maker.gradient_case(index)
            dilated[gradient] += sum((n.attrs["dh"], n.attrs["dw"]) != (1, 1) for n in case.graph.operators if n.op in ops)
            if gradient:
                assert "dilation" not in (why_not_differentiable(case.graph, maker.gradient_support) or "")
        assert dilated == {True: 0, False: dilated[False]} and dilated[False] > 0, (dialect, dilated)
        assert set(maker.gen_stats.avoided[OUTSIDE_CONTRACT]) == {f"{op}[float64] with dilation" for op in ops}
