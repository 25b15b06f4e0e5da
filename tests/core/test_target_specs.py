"""Per-target op spec data (`targets:`) and targets.yaml: they load, and a malformed entry
is one error naming the file, the op and the field."""
import textwrap

import pytest

from conftest import SPECS, assert_named_spec_error
from hirfuzz.core.spec import load_specs
from hirfuzz.errors import HirfuzzError
from hirfuzz.core.targets import load_target_limits, target_kind, target_kinds

OP = """\
ops:
  - name: myop
    inputs:
      - a
      - {name: b, shape: rand_broadcastable(a.shape)}
    dtypes: [int32, float16, float32]
    attrs:
      flag: rand_bool()
    constraints: ["broadcastable(a.shape, b.shape)"]
    output:
      shape: broadcast_shapes(a.shape, b.shape)
    reference: np.add(a, b)
    tolerance: float
    dialects:
      relax: {op: add}
      relay: {op: add}
"""


def _write(d, targets_block: str):
    (d / "bad.yaml").write_text(OP + textwrap.indent(textwrap.dedent(targets_block), "    "))


def test_a_targets_block_loads_per_dialect(spec_dir):
    _write(spec_dir, """\
        targets:
          cuda:
            - {dtypes: [float16], dialects: [relax], error: "no half fmod", note: "codegen_c.cc"}
            - {when: "flag and a.rank > 1", error: "boom", note: "measured"}
        """)
    relax = load_specs(spec_dir).ops["myop"]
    assert relax.excluded_dtype("float16", ("llvm", "cuda")).error == "no half fmod"
    assert relax.excluded_dtype("float16", ("llvm",)) is None
    assert relax.excluded_dtype("float32", ("cuda",)) is None
    conditional = [x for x in relax.exclusions(("cuda",)) if x.when is not None]
    assert [x.when.text for x in conditional] == ["flag and a.rank > 1"]
    relay = load_specs(spec_dir, dialect="relay").ops["myop"]
    assert relay.excluded_dtype("float16", ("cuda",)) is None  # the entry is Relax's alone
    assert len(relay.exclusions(("cuda",))) == 1


@pytest.mark.parametrize("block, field, words", [
    ("targets:\n  vulkan: [{error: e, note: n}]\n", "targets", "unknown target kind 'vulkan'"),
    ("targets: [cuda]\n", "targets", "mapping of target kind"),
    ("targets:\n  cuda: []\n", "targets.cuda", "non-empty list"),
    ("targets:\n  cuda: [{dtypes: [float17], error: e, note: n}]\n", "targets.cuda[0].dtypes", "float17"),
    ("targets:\n  cuda: [{dialects: [mlir], error: e, note: n}]\n", "targets.cuda[0].dialects", "mlir"),
    ("targets:\n  cuda: [{note: n}]\n", "targets.cuda[0].error", "is required"),
    ("targets:\n  cuda: [{error: e}]\n", "targets.cuda[0].note", "is required"),
    ("targets:\n  cuda: [{error: e, note: '  '}]\n", "targets.cuda[0].note", "is required"),
    ("targets:\n  cuda: [{when: 'a.rank >', error: e, note: n}]\n", "targets.cuda[0].when", "cannot parse"),
    ("targets:\n  cuda: [{when: 'axis is None', error: e, note: n}]\n", "targets.cuda[0].when", "['axis']"),
    ("targets:\n  cuda: [{error: e, note: n, colour: red}]\n", "targets.cuda[0]", "colour"),
    ("targets:\n  cuda: [float16]\n", "targets.cuda[0]", "expected a mapping"),
])
def test_a_bad_targets_entry_is_named(spec_dir, block, field, words):
    _write(spec_dir, block)
    assert_named_spec_error(spec_dir, field, words)


def test_the_shipped_cuda_exclusions_are_relax_ones_with_error_and_note():
    relax = load_specs(SPECS)
    cuda = ("cuda",)
    expected_dtypes = {"mean": set(), "mod": {"float16"}, "round": {"float16"}, "atanh": {"float16"},
                       "cumsum": {"int8", "uint8"}, "nn.group_norm": {"float16"},
                       "nn.conv1d": set(relax.ops["nn.conv1d"].dtypes)}  # no dtype builds in every shape
    for op, dtypes in expected_dtypes.items():
        spec = relax.ops[op]
        assert {d for d in spec.dtypes if spec.excluded_dtype(d, cuda)} == dtypes, op
        assert all(x.error and x.note for x in spec.exclusions(cuda)), op
    conditional = [x for x in relax.ops["mean"].exclusions(cuda) if x.when is not None]
    assert [(x.dtypes, x.when.text) for x in conditional] == [
        (None, "(axis is None or len(axis) == x.rank) and not keepdims")]  # a mean down to a scalar
    relay = load_specs(SPECS, dialect="relay")
    assert not any(op.exclusions(cuda) for op in relay.ops.values())  # only Relax was measured on cuda


def test_target_kinds_from_strings_and_dicts():
    assert target_kind("cuda -arch=sm_90") == "cuda"
    assert target_kind({"kind": "cuda", "arch": "sm_90"}) == "cuda"
    assert target_kinds(["llvm", "cuda", {"kind": "cuda"}]) == ("llvm", "cuda")
    with pytest.raises(HirfuzzError, match="needs a string 'kind'"):
        target_kind({"arch": "sm_90"})


def test_the_shipped_target_limits_keep_symbolic_shapes_off_cuda():
    limits = load_target_limits()
    assert limits.features_unlowerable(["llvm"]) == ()
    assert set(limits.features_unlowerable(["llvm", "cuda"])) == {"match_cast", "shape_of", "dynamic_param"}


@pytest.mark.parametrize("text, words", [
    ("targets: {vulkan: {unlowerable: []}}", "target 'vulkan': unknown target kind"),
    ("targets: {cuda: {unlowerable: [{feature: loops, error: e, note: n}]}}", "unknown plan feature 'loops'"),
    ("targets: {cuda: {unlowerable: [{feature: match_cast, error: e}]}}", "exactly 'feature', 'error' and 'note'"),
    ("targets: {cuda: {unlowerable: [{feature: match_cast, error: '', note: n}]}}", "field 'error'"),
    ("targets: {cuda: {lowers: []}}", "expected a mapping with 'unlowerable'"),
    ("kinds: {}", "expected a mapping with 'targets'"),
    ("targets: [", "not valid YAML"),
])
def test_a_bad_target_limits_file_is_named(text, words):
    with pytest.raises(HirfuzzError) as info:
        load_target_limits(text, where="t.yaml")
    assert str(info.value).startswith("t.yaml") and words in str(info.value), str(info.value)
