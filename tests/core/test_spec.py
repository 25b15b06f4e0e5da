"""Op spec loading: the shipped specs load; malformed specs fail with a SpecError that names
the file, the op and the field."""
import textwrap

import pytest

from conftest import SPECS
from hirfuzz.errors import SpecError
import numpy as np

from hirfuzz.core.coverage import Coverage
from hirfuzz.core.generate import generate_graph
from hirfuzz.core.spec import ALL_DTYPES, load_specs


GOOD_OP = """\
ops:
  - name: myop
    relax: add
    inputs:
      - a
      - {name: b, shape: rand_broadcastable(a.shape)}
    dtypes: [int32, float32]
    constraints: ["broadcastable(a.shape, b.shape)"]
    output:
      shape: broadcast_shapes(a.shape, b.shape)
    reference: np.add(a, b)
    tolerance: float
"""


def test_shipped_specs_load():
    specs = load_specs()
    assert len(specs.ops) >= 120
    for name, op in specs.ops.items():
        assert op.dtypes and set(op.dtypes) <= set(ALL_DTYPES), name
        assert op.tolerance in specs.tolerances, name
        assert op.source.endswith(".yaml")


def test_shipped_specs_one_file_per_family():
    files = {p.name for p in SPECS.glob("*.yaml")}
    assert {"unary.yaml", "binary.yaml", "compare.yaml", "logical.yaml", "reduction.yaml",
            "layout.yaml", "nn.yaml", "tolerances.yaml", "indexing.yaml", "sort.yaml",
            "creation.yaml", "linalg.yaml", "norm.yaml"} <= files
    specs = load_specs()
    assert specs.ops["exp"].source.endswith("unary.yaml")
    assert specs.ops["equal"].source.endswith("compare.yaml")
    assert specs.ops["sum"].source.endswith("reduction.yaml")
    assert specs.ops["gather_nd"].source.endswith("indexing.yaml")
    assert specs.ops["nn.layer_norm"].source.endswith("norm.yaml")


def test_index_inputs_have_own_dtype_and_domain():
    """Index inputs are integer tensors kept in range; ops where an out-of-range index is UB
    may trap, so such a case is built but never run."""
    specs = load_specs()
    for name in ("take", "gather_elements", "gather_nd", "scatter_elements", "scatter_nd"):
        op = specs.ops[name]
        idx = op.inputs[1]
        assert idx.dtype is not None and idx.domain is not None, name
        assert op.may_trap, name


def _write(d, text, name="bad.yaml"):
    (d / name).write_text(textwrap.dedent(text))


def _load_error(d) -> str:
    with pytest.raises(SpecError) as info:
        load_specs(d)
    return str(info.value)


def test_good_minimal_spec_loads(spec_dir):
    _write(spec_dir, GOOD_OP)
    specs = load_specs(spec_dir)
    assert specs.names() == ["myop"]
    op = specs.ops["myop"]
    assert op.dialect_op == "add" and op.dtypes == ("int32", "float32")
    assert op.reference.text == "np.add(a, b)"


def _assert_names(msg, field, op="myop"):
    assert "bad.yaml" in msg, msg
    assert f"op '{op}'" in msg, msg
    assert f"field '{field}" in msg, msg


def test_bad_yaml_names_the_file_and_line(spec_dir):
    _write(spec_dir, "ops:\n  - name: myop\n    inputs: [a\n    dtypes: [int32]\n")
    msg = _load_error(spec_dir)
    assert "bad.yaml" in msg and "line" in msg and "YAML" in msg


def test_unknown_key(spec_dir):
    _write(spec_dir, GOOD_OP.replace("    tolerance: float\n", "    tolerance: float\n    tolerence: exact\n"))
    msg = _load_error(spec_dir)
    _assert_names(msg, "(op)")
    assert "tolerence" in msg


def test_unknown_input_key(spec_dir):
    _write(spec_dir, GOOD_OP.replace("{name: b, shape:", "{name: b, shap: x, shape:"))
    msg = _load_error(spec_dir)
    _assert_names(msg, "inputs[1]")
    assert "shap" in msg


def test_missing_reference(spec_dir):
    _write(spec_dir, GOOD_OP.replace("    reference: np.add(a, b)\n", ""))
    msg = _load_error(spec_dir)
    _assert_names(msg, "reference")
    assert "required" in msg


def test_unknown_dtype(spec_dir):
    _write(spec_dir, GOOD_OP.replace("dtypes: [int32, float32]", "dtypes: [int32, bfloat16]"))
    msg = _load_error(spec_dir)
    _assert_names(msg, "dtypes")
    assert "bfloat16" in msg


def test_unknown_tolerance_class(spec_dir):
    _write(spec_dir, GOOD_OP.replace("tolerance: float", "tolerance: loose"))
    msg = _load_error(spec_dir)
    _assert_names(msg, "tolerance")
    assert "loose" in msg


def test_unparseable_expression(spec_dir):
    _write(spec_dir, GOOD_OP.replace("reference: np.add(a, b)", "reference: np.add(a, b"))
    msg = _load_error(spec_dir)
    _assert_names(msg, "reference")
    assert "cannot parse" in msg


def test_unparseable_shape_rule(spec_dir):
    _write(spec_dir, GOOD_OP.replace("shape: broadcast_shapes(a.shape, b.shape)",
                                     "shape: broadcast_shapes(a.shape,, b.shape)"))
    msg = _load_error(spec_dir)
    _assert_names(msg, "output.shape")


@pytest.mark.parametrize("expr, field, words", [
    ("\"__import__('os').system('true')\"", "reference", "__import__"),
    ("a.__class__", "reference", "__class__"),
    ("np.add.__globals__", "reference", "__globals__"),
    ("\"open('/etc/passwd')\"", "reference", "open"),
    ("\"[c for c in ().__class__.__bases__]\"", "reference", "__class__"),
    ("np.load", "reference", "np.load"),
    ("\"lambda: 1\"", "reference", "Lambda"),
])
def test_forbidden_constructs(spec_dir, expr, field, words):
    _write(spec_dir, GOOD_OP.replace("reference: np.add(a, b)", f"reference: {expr}"))
    msg = _load_error(spec_dir)
    _assert_names(msg, field)
    assert words in msg, msg


def test_forbidden_construct_in_attr_rule(spec_dir):
    bad = GOOD_OP.replace("    constraints:", "    attrs:\n      k: x.__class__\n    constraints:")
    _write(spec_dir, bad)
    msg = _load_error(spec_dir)
    _assert_names(msg, "attrs.k")
    assert "__class__" in msg


def test_flow_style_comma_split_is_caught(spec_dir):
    """The YAML gotcha: an unquoted expression with a comma inside {...} splits in two."""
    _write(spec_dir, GOOD_OP.replace("    output:\n      shape: broadcast_shapes(a.shape, b.shape)\n",
                                     "    output: {shape: broadcast_shapes(a.shape, b.shape)}\n"))
    msg = _load_error(spec_dir)
    _assert_names(msg, "output")
    assert "unknown key" in msg


def test_duplicate_op_across_files(spec_dir):
    _write(spec_dir, GOOD_OP, name="one.yaml")
    _write(spec_dir, GOOD_OP, name="two.yaml")
    with pytest.raises(SpecError) as info:
        load_specs(spec_dir)
    msg = str(info.value)
    assert "two.yaml" in msg and "myop" in msg and "one.yaml" in msg


def test_later_inputs_need_a_shape_rule(spec_dir):
    _write(spec_dir, GOOD_OP.replace("{name: b, shape: rand_broadcastable(a.shape)}", "b"))
    msg = _load_error(spec_dir)
    _assert_names(msg, "inputs[1]")
    assert "shape" in msg


def test_traits_load_and_an_unknown_trait_is_named(spec_dir):
    _write(spec_dir, GOOD_OP.replace("    tolerance: float\n", "    tolerance: float\n    traits: [elementwise, commutative]\n"))
    assert load_specs(spec_dir).ops["myop"].traits == ("elementwise", "commutative")
    _write(spec_dir, GOOD_OP.replace("    tolerance: float\n", "    tolerance: float\n    traits: [elementwise, idempotent]\n"))
    msg = _load_error(spec_dir)
    _assert_names(msg, "traits")
    assert "idempotent" in msg


def test_shipped_traits_reach_the_call_records():
    import numpy as np

    from hirfuzz.core.calls import call_records, op_traits
    from hirfuzz.core.generate import single_op_graph
    specs = load_specs()
    assert {"commutative", "associative", "elementwise"} <= set(specs.ops["add"].traits)
    assert specs.ops["nn.relu"].traits == ("elementwise",) and specs.ops["matmul"].traits == ()
    graph = single_op_graph(specs, "add", "int32", np.random.default_rng(0))
    table = op_traits(call_records(graph, specs).values())
    assert table == {"add": frozenset({"elementwise", "commutative", "associative"})}


def test_bad_relax_name(spec_dir):
    _write(spec_dir, GOOD_OP.replace("relax: add", "relax: \"add; import os\""))
    msg = _load_error(spec_dir)
    _assert_names(msg, "relax")


DIALECT_OP = """\
ops:
  - name: myop
    inputs:
      - a
    dtypes: [int32, float32]
    attrs:
      perm: "[0]"
    reference: np.transpose(a)
    dialects:
      relax: {op: permute_dims, call: {kwargs: {axes: perm}}}
      relay: {op: transpose, call: {args: [a, perm], kwargs: {}}, dtypes: [float32], note: "relay spells it transpose"}
  - name: relay_only
    inputs: [a]
    dtypes: [float32]
    reference: np.negative(a)
    dialects:
      relay: {op: negative}
"""


def test_a_dialect_block_gives_each_dialect_its_spelling(spec_dir):
    _write(spec_dir, DIALECT_OP, "ops.yaml")
    relax = load_specs(spec_dir)
    assert relax.names() == ["myop"]  # relay_only has no Relax spelling
    assert relax.ops["myop"].dialect_op == "permute_dims" and relax.ops["myop"].dtypes == ("int32", "float32")
    assert relax.ops["myop"].call_arguments({"perm": [0]}, "int32", {"a": "A"}) == (["A"], {"axes": [0]})
    relay = load_specs(spec_dir, dialect="relay")
    assert relay.names() == ["myop", "relay_only"]
    op = relay.ops["myop"]
    assert op.dialect_op == "transpose" and op.dtypes == ("float32",) and "transpose" in op.note
    assert op.call_arguments({"perm": [0]}, "float32", {"a": "A"}) == (["A", [0]], {})


SHARED_OPS = """\
ops:
  - name: both
    inputs: [a]
    dtypes: [int32, float16, float32]
    reference: np.negative(a)
    dialects:
      relax: {op: negative}
      relay: {op: negative, dtypes: [int32, float32]}
  - name: rounds_apart
    inputs: [a]
    dtypes: [float32]
    reference: np.round(a)
    dialects:
      relax: {op: round}
      relay: {op: round, reference: np.trunc(a)}
  - name: no_common_dtype
    inputs: [a]
    dtypes: [float32]
    reference: np.abs(a)
    dialects:
      relax: {op: abs, dtypes: [float16]}
      relay: {op: abs, dtypes: [float32]}
  - name: relax_only
    inputs: [a]
    dtypes: [float32]
    reference: np.exp(a)
    dialects:
      relax: {op: exp}
"""


def test_a_cross_ir_campaign_generates_what_both_dialects_compute_alike(spec_dir):
    _write(spec_dir, SHARED_OPS, "ops.yaml")
    relay, relax = load_specs(spec_dir, dialect="relay"), load_specs(spec_dir, dialect="relax")
    shared = relay.shared_with(relax)
    assert shared.names() == ["both"]
    assert shared.ops["both"].dtypes == ("int32", "float32") and shared.ops["both"].dialect_op == "negative"
    assert relax.shared_with(relay).names() == ["both"]


def test_the_shipped_dialects_share_most_ops():
    relay, relax = load_specs(SPECS, dialect="relay"), load_specs(SPECS, dialect="relax")
    shared = relay.shared_with(relax)
    assert len(shared.names()) >= 100
    assert "round" not in shared.ops  # the two round halves differently


@pytest.mark.parametrize("block, field, words", [
    ("      mlir: {}\n", "dialects", "unknown dialect 'mlir'"),
    ("      relay: {dtypes: [int3]}\n", "dialects.relay.dtypes", "list of dtypes"),
    ("      relay: {op: 'not a name'}\n", "dialects.relay.op", "dotted op name"),
    ("      relay: {call: {kwargs: [1]}}\n", "dialects.relay.call.kwargs", "mapping of keyword"),
    ("      relay: {colour: red}\n", "dialects.relay", "colour"),
])
def test_a_bad_dialect_block_is_named(spec_dir, block, field, words):
    text = "ops:\n  - name: myop\n    inputs: [a]\n    dtypes: [int32]\n    reference: a\n    dialects:\n" + block
    _write(spec_dir, text)
    msg = _load_error(spec_dir)
    _assert_names(msg, field)
    assert words in msg, msg


def test_old_top_level_spelling_beside_a_dialect_block_is_refused(spec_dir):
    _write(spec_dir, GOOD_OP + "    dialects:\n      relax: {}\n")
    msg = _load_error(spec_dir)
    _assert_names(msg, "relax")
    assert "dialects.relax.op" in msg


@pytest.mark.parametrize("dialect", ["relax", "relay"])
def test_every_call_record_travels_as_json(dialect):
    """Workers get each node as a JSON call record: a value JSON cannot carry (a generated
    index function) would stop a campaign at the first case that draws the op."""
    import json

    import numpy as np

    from hirfuzz.core.calls import call_records, decode_argument
    from hirfuzz.core.generate import Rejected, single_op_graph
    specs = load_specs(dialect=dialect)
    for name in specs.names():
        spec = specs.ops[name]
        try:
            graph = single_op_graph(specs, name, spec.dtypes[0], np.random.default_rng(0))
        except Rejected:
            continue
        records = json.loads(json.dumps(call_records(graph, specs)))
        for record in records.values():  # and every attribute decodes again
            for value in record["kwargs"].values():
                decode_argument(value, [])


def test_at_least_110_ops_are_spelled_for_relay():
    assert len(load_specs(dialect="relay").names()) >= 110


def test_a_domain_away_from_the_default_range_is_drawn_inside(spec_dir):
    # int32 draws default to [-8, 8]: a domain of [100, 200] does not meet it, and the
    # generator must draw inside the domain rather than fail on an empty range
    _write(spec_dir, """
        ops:
          - name: myop
            inputs: [{name: a, domain: [100, 200]}]
            dtypes: [int32]
            reference: np.negative(a)
            dialects: {relax: {op: negative}}
        """, name="far.yaml")
    specs = load_specs(spec_dir)
    g = generate_graph(specs, np.random.default_rng(0), 3, Coverage())
    assert all(100 <= v.min() and v.max() <= 200 for v in g.witness.values())
    for n in g.nodes:
        if n.kind == "const":
            assert 100 <= min(np.ravel(n.value)) and max(np.ravel(n.value)) <= 200


# --- input_search: how a wanted result interval reaches an op's inputs (core/inputs.py) ---

@pytest.mark.parametrize("value, field, words", [
    ("shuffle", "input_search", "unknown rule 'shuffle'"),
    ("[add]", "input_search", "a rule name"),
    ("{rule: [add]}", "input_search", "unknown rule"),
    ("{rule: passthrough, outputs: [true]}", "input_search.outputs", "result indices >= 0"),
    ("{rule: add, bound: 2}", "input_search", "unknown key(s) ['bound']"),
    ("{rule: passthrough, inputs: [c]}", "input_search.inputs", "this op's inputs (a, b)"),
    ("{rule: passthrough, outputs: [-1]}", "input_search.outputs", "result indices >= 0"),
    ("{rule: normalization}", "input_search.bound", "number > 0"),
    ("{rule: normalization, bound: 4, unchanged: {c: 1}}", "input_search.unchanged", "input (a, b)"),
    ("running_sum", "input_search", "'axis' attribute"),
])
def test_a_bad_input_search_is_named(spec_dir, value, field, words):
    _write(spec_dir, GOOD_OP + f"    input_search: {value}\n")
    msg = _load_error(spec_dir)
    _assert_names(msg, field)
    assert words in msg, msg


def test_a_two_input_rule_on_a_one_input_op_is_named(spec_dir):
    _write(spec_dir, "ops:\n  - name: myop\n    inputs: [a]\n    dtypes: [float32]\n    reference: a\n"
                     "    input_search: multiply\n    dialects: {relax: {op: abs}}\n")
    msg = _load_error(spec_dir)
    _assert_names(msg, "input_search")
    assert "combines two inputs" in msg, msg


def test_an_input_search_loads_for_every_dialect(spec_dir):
    from hirfuzz.core.spec import InputSearch, IntervalRule
    _write(spec_dir, DIALECT_OP.replace("    reference: np.transpose(a)\n",
                                        "    reference: np.transpose(a)\n    input_search: {rule: passthrough, outputs: [0]}\n"))
    expected = InputSearch(IntervalRule.PASSTHROUGH, slots=(0,), outputs=(0,))
    assert load_specs(spec_dir).ops["myop"].input_search == expected
    assert load_specs(spec_dir, dialect="relay").ops["myop"].input_search == expected
    assert load_specs(spec_dir, dialect="relay").ops["relay_only"].input_search is None


def test_the_shipped_dialects_read_the_same_input_search():
    relay, relax = load_specs(SPECS, dialect="relay"), load_specs(SPECS, dialect="relax")
    for name in set(relay.ops) & set(relax.ops):
        assert relay.ops[name].input_search == relax.ops[name].input_search, name
    assert relax.ops["nn.batch_norm"].input_search.unchanged == (("moving_mean", 1), ("moving_var", 2))
    assert relax.ops["where"].input_search.slots == (1, 2)   # cond's values never reach the result


def test_a_bad_input_search_stops_the_cli_with_one_line(spec_copy):
    from conftest import run_hirfuzz
    (spec_copy / "zz_broken.yaml").write_text(
        "ops:\n  - name: my_copy\n    inputs: [x]\n    dtypes: [float32]\n    reference: x\n"
        "    input_search: {rule: passthrough, inputs: [y]}\n")
    proc = run_hirfuzz("--specs", spec_copy, "--list-ops")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "zz_broken.yaml: op 'my_copy', field 'input_search.inputs'" in proc.stderr, proc.stderr


# --- reference helpers: ``ref.<name>`` is what @reference.helper registered, nothing else ---

def test_a_registered_helper_is_usable_and_an_unregistered_one_refused(spec_dir):
    from hirfuzz.core import reference

    @reference.helper
    def triple_for_test(x):
        return 3 * x
    text = GOOD_OP.replace("reference: np.add(a, b)", "reference: ref.triple_for_test(a) + b")
    _write(spec_dir, text)
    try:
        op = load_specs(spec_dir).ops["myop"]
        assert op.reference({"a": np.array([1, 2]), "b": np.array([1, 1])}).tolist() == [4, 7]
    finally:
        del reference.HELPERS["triple_for_test"]
    msg = _load_error(spec_dir)   # the same spec, once the helper is gone
    _assert_names(msg, "reference")
    assert "'ref.triple_for_test' is not available" in msg, msg


def test_a_helper_name_is_registered_once():
    from hirfuzz.core import reference
    with pytest.raises(ValueError, match="softmax"):
        reference.helper(reference.softmax)
    assert reference.HELPERS["softmax"] is reference.softmax
