"""Op specs: load and validate ``opspecs/*.yaml`` into ``OpSpec`` objects.

An op spec says everything hirfuzz knows about one Relax operator, as data:

- ``inputs``: the tensors it takes, in order. The first is the *anchor*: its rank range is
  given, its shape is free. Later inputs give a ``shape`` rule over earlier inputs and
  attributes (Isra's construction order: input structure, then attributes, then the other
  inputs), a fixed ``dtype`` where they do not take the op's, and ``variadic: [lo, hi]``
  for a list of tensors.
- ``attrs``: ordered rules, each an expression that draws a value (``rand_int(...)``).
- ``solve``: integer attributes chosen by z3 under ``constraints`` with binning.
- ``constraints``: what must hold between inputs and attributes; the generator checks them
  when it reuses an existing node, and the conformance test checks TVM agrees.
- ``output``: the shape and dtype rule (``shapes`` for an op returning a tuple).
- ``domain``: per input, the value range that keeps the op free of NaN, Inf and UB.
- ``reference``: a NumPy expression computing the result.
- ``tolerance``: the tolerance class its result is compared under; ``exact`` and
  ``continuous`` say how rounding differences can propagate through it.
- ``amplification``: for an op that may amplify its own rounding (a variance computed
  as E[x²] - E[x]² cancels), an expression over the inputs giving by how much; the
  tolerance of its result grows to that many times the dtype's rounding unit.
- ``overflow``: for an integer op whose result can overflow, an expression over the inputs
  giving ``[lo, hi]``, bounds (exact integers) on every value its integer computation passes
  through, in any order of evaluation (``ref.sum_span``, ``ref.prod_span``, ``ref.exact_span``,
  ``ref.abs_span``, ``ref.dot_span``). TVM's LLVM codegen marks 32- and 64-bit integer add,
  sub and mul nsw/nuw, so an overflow there is undefined: a result whose bounds leave such a
  dtype is not compared. 8- and 16-bit integers wrap, and the reference must wrap alike.
- ``may_trap``: an input outside the domain can trap at run time (integer division by
  zero raises SIGFPE), so a case with such an input is built but never run.
- ``traits``: algebraic properties the mutators rely on, a list drawn from
  ``elementwise`` (each result element depends only on the operands' elements at the
  same broadcast position), ``commutative`` (its two operands can swap) and
  ``associative`` ((a op b) op c = a op (b op c)). They travel in the call records, so
  a worker's mutators read them from the case, never from YAML.
- ``input_search``: for an op that moves or combines its inputs' values, how an interval
  wanted of its result is pushed back to its inputs when inputs are drawn (``core/inputs.py``,
  step 1); without it only an ``elementwise`` op with one input is looked through (by its own
  reference), and any other op stops the propagation. A rule name (``add``) or a mapping with
  ``rule`` and the rule's parameters (see ``IntervalRule``): ``passthrough`` (``inputs``, default
  the first, reach ``outputs``, default all, only by selection, movement, padding or averaging),
  ``scatter`` (as passthrough, unless the ``reduction`` attribute adds or multiplies), ``add``,
  ``subtract``, ``multiply``, ``divide``, ``sum`` (each result sums all the reduced elements),
  ``running_sum`` (1 to L elements along the ``axis`` attribute), ``matmul``, ``outer``,
  ``convolution`` (sums of products of two inputs) and ``normalization`` (normalised data,
  ``bound`` in magnitude, times gamma or weight plus beta; ``unchanged`` maps an input to the
  result that returns it as it is).
- ``dialects``: the IR dialects that have the op, each with how it spells it: ``op``, its
  name there (default: the spec's name), and ``call``, how to call it (default: inputs
  positionally, public attrs by name). A dialect may narrow or widen ``dtypes`` and
  replace ``reference`` where its op means something else (Relay's ``round`` rounds
  halves away from zero), and carry its own ``note``. An op without a block for a dialect
  is not generated for it. (An old spec file without ``dialects`` may still say
  ``relax: NAME`` and ``call:`` at the top: that is its Relax spelling.) A block's
  ``accepts`` lists conditions under which that dialect's TVM documents inputs and
  attributes as valid although the spec's constraints reject them (Relax's conv1d takes
  its kernel and channels from the weight; topk returns everything for k < 1), each with
  the source saying so: disruptive mode never calls such a program a violation. The
  conditions see each input's ``dtype`` and judge dtype mismatches too (Relax compares two
  dtypes promoted), so one about shapes alone says its inputs' dtypes are equal. Its
  ``optional_args`` counts the trailing call arguments that dialect's op may go without
  (Relax's strided_slice without its strides): dropping one is no arity violation. Its
  ``infer`` names the function in that dialect's TVM source that types the op (Relax's
  ``FInferType``, Relay's type relation), where ops share one (default: the op's own name):
  a disruptive finding that gets past type inference is keyed on it, since the check that
  should have fired is missing there, once for every op it types (core/violation_key.py).
- ``targets``: per target kind (``cuda``), the op instances that target's build is known to
  fail on, so that a campaign for it never generates them (one construct it cannot build
  fails the whole graph's build). Each entry is one exclusion with the ``error`` its build
  gives and a ``note`` naming the TVM source or issue (both required), narrowed by
  ``dtypes`` (default: every dtype), ``when`` (a condition over the inputs, attributes and
  ``dtype``, as constraints and ``accepts`` are: the entry applies where it holds) and
  ``dialects`` (default: every dialect). An excluded dtype is never drawn for the op; a node
  matching a ``when`` is turned down as a failed constraint is (core/generate.py).
- ``tvm_bugs``: the dtypes left out of ``dtypes`` because TVM has a bug on a *valid*
  program at them (type inference accepts the dtype, the build or the result is wrong),
  each entry with those ``dtypes``, the ``error`` TVM gives, a ``note`` naming the source or
  report, and optional ``dialects``. Strict mode never generates them (they are not in
  ``dtypes``); disruptive mode never draws them as an unsupported dtype, since the program
  is valid and its failure strict mode's known bug. A dtype left out of ``dtypes`` and of
  every ``tvm_bugs`` entry is one the op does not accept: disruptive mode may draw it.
- ``limitations``: behaviour of TVM on an invalid program that a source or report
  documents, each entry naming the violation ``kind`` it documents (core/violations.py
  KINDS), optional ``dtypes`` and ``dialects`` it is limited to, and its ``note``: a
  disruptive finding of that kind (on those dtypes) is triaged as a documented limitation;
  any other note on the op documents nothing about it.

Expressions are compiled once here by ``expr.compile_expr``; nothing is ever ``eval``-ed.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from . import expr as E
from .reference import HELPERS as REFERENCE_HELPERS
from .targets import TARGET_KINDS
from ..data import SPEC_DIR
from ..dialects import dialect_names
from ..errors import SpecError

# The data types hirfuzz generates: HIRGen's set plus float16.
# the ways disruptive mode breaks an op's constraints (core/violations.py says each); here,
# as a `limitations` entry names the one it documents
VIOLATION_KINDS = ("dtype-unsupported", "dtype-mismatch", "shape-incompatible", "rank-wrong",
                   "attr-out-of-range", "match-cast-lie", "arity")
ALL_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float16", "float32", "float64")

DEFAULT_SPEC_DIR = SPEC_DIR  # the top-level opspecs/ (hirfuzz.data)

_OP_KEYS = {"name", "input_search", "relax", "inputs", "dtypes", "attrs", "solve", "constraints", "output",
            "reference", "tolerance", "amplification", "overflow", "exact", "continuous", "may_trap", "call",
            "note", "dialects", "traits", "targets", "tvm_bugs", "limitations"}
TRAITS = ("elementwise", "commutative", "associative")
_DIALECT_KEYS = {"op", "call", "dtypes", "reference", "note", "accepts", "optional_args", "infer"}
DIALECTS = tuple(dialect_names())  # the dialects hirfuzz knows (dialects/__init__.py)
_EXCLUSION_KEYS = {"dtypes", "when", "dialects", "error", "note"}
_TVM_BUG_KEYS = {"dtypes", "dialects", "error", "note"}
_LIMITATION_KEYS = {"kind", "dtypes", "dialects", "note"}
_INPUT_KEYS = {"name", "rank", "dtype", "shape", "domain", "variadic"}
_OUTPUT_KEYS = {"shape", "shapes", "dtype"}
_TOLERANCE_KEYS = set(ALL_DTYPES)


@dataclass
class InputSpec:
    name: str
    rank: tuple[int, int] = (0, 4)
    dtype: E.Compiled | None = None     # None: the op's dtype
    shape: E.Compiled | None = None     # None only for the anchor (first input)
    domain: E.Compiled | None = None    # [lo, hi], or None for the dtype's default range
    variadic: tuple[int, int] | None = None


class IntervalRule(Enum):
    """How an op's result constrains its inputs' values: the ``input_search`` field."""
    PASSTHROUGH = "passthrough"        # values only selected, moved, padded or averaged
    SCATTER = "scatter"                # passthrough unless the `reduction` attr adds or multiplies
    ADD = "add"
    SUBTRACT = "subtract"
    MULTIPLY = "multiply"
    DIVIDE = "divide"
    SUM = "sum"                        # each result the sum of every reduced element
    RUNNING_SUM = "running_sum"        # each result a sum of 1..L elements along the `axis` attr
    MATMUL = "matmul"                  # sums of a.shape[-1] products
    OUTER = "outer"                    # single products
    CONVOLUTION = "convolution"        # sums of prod(weight.shape[1:]) products
    NORMALIZATION = "normalization"    # normalised data (|x| <= bound) * gamma (or weight) + beta


# the parameters each rule takes besides `rule`
_RULE_KEYS = {IntervalRule.PASSTHROUGH: {"inputs", "outputs"}, IntervalRule.SCATTER: {"inputs", "outputs"},
              IntervalRule.NORMALIZATION: {"bound", "unchanged"}}
# rules that combine exactly two inputs
_TWO_INPUT_RULES = {IntervalRule.ADD, IntervalRule.SUBTRACT, IntervalRule.MULTIPLY, IntervalRule.DIVIDE,
                    IntervalRule.MATMUL, IntervalRule.OUTER, IntervalRule.CONVOLUTION}


@dataclass(frozen=True)
class InputSearch:
    """An op's ``input_search`` field, read and checked."""
    rule: IntervalRule
    slots: tuple[int, ...] = (0,)                # passthrough, scatter: the inputs that pass
    outputs: tuple[int, ...] | None = None       # passthrough, scatter: the results they reach (None: all)
    bound: float = 0.0                           # normalization: |normalised data| at most this
    unchanged: tuple[tuple[str, int], ...] = ()  # normalization: (input, result index) returned as is


@dataclass(frozen=True)
class TargetExclusion:
    """One op instance a target's build is known to fail on (an entry of ``targets:``)."""
    target: str                               # the target kind (TARGET_KINDS)
    error: str                                # what its build says
    note: str                                 # why: the TVM source or issue
    dtypes: tuple[str, ...] | None = None     # None: every dtype
    when: E.Compiled | None = None            # None: whatever the inputs and attributes
    dialects: tuple[str, ...] | None = None   # None: every dialect

    def covers_dtype(self, dtype: str) -> bool:
        return self.dtypes is None or dtype in self.dtypes

    def describe(self, op: str, dtype: str) -> str:
        """The instance as generation statistics count it: ``mod[float16]``, with the condition if any."""
        return f"{op}[{dtype}]" + (f" when {self.when.text}" if self.when is not None else "")


@dataclass(frozen=True)
class TvmBugDtypes:
    """Dtypes the op accepts that TVM gets wrong on valid programs (an entry of ``tvm_bugs:``)."""
    dtypes: tuple[str, ...]
    error: str                                # what TVM does at them
    note: str                                 # the TVM source or report
    dialects: tuple[str, ...] | None = None   # None: every dialect


@dataclass(frozen=True)
class Limitation:
    """TVM's documented behaviour on one kind of violation (an entry of ``limitations:``)."""
    kind: str                                 # a violation kind (VIOLATION_KINDS)
    note: str                                 # the source or report documenting it
    dtypes: tuple[str, ...] | None = None     # None: whatever the dtype
    dialects: tuple[str, ...] | None = None   # None: every dialect

    def documents(self, kind: str, dtype: str) -> bool:
        return kind == self.kind and (self.dtypes is None or dtype in self.dtypes)


@dataclass
class SolveSpec:
    vars: dict[str, tuple[int, int]]
    constraints: list[E.Compiled]


@dataclass(frozen=True)
class Spelling:
    """How one dialect spells an op: its name there and how its arguments are arranged."""
    op: str                                     # dotted name in the dialect's op namespace
    call_args: list[E.Compiled] | None = None
    call_kwargs: dict[str, E.Compiled] | None = None
    dtypes: tuple[str, ...] | None = None       # None: the spec's
    reference: E.Compiled | None = None         # None: the spec's
    note: str = ""
    accepts: tuple[E.Compiled, ...] = ()        # documented-valid cases the constraints reject
    optional_args: int = 0                      # trailing call arguments the op may go without
    infer: str = ""                             # TVM's function typing it where ops share one


@dataclass
class OpSpec:
    name: str
    dialect_op: str                 # the op's name in the dialect it is resolved for
    inputs: list[InputSpec]
    dtypes: tuple[str, ...]
    attrs: dict[str, E.Compiled]
    solve: SolveSpec | None
    constraints: list[E.Compiled]
    out_shape: E.Compiled | None
    out_shapes: E.Compiled | None
    out_dtype: E.Compiled | None
    reference: E.Compiled
    tolerance: str
    amplification: E.Compiled | None
    exact: bool
    continuous: bool
    may_trap: bool
    call_args: list[E.Compiled] | None
    call_kwargs: dict[str, E.Compiled] | None
    source: str
    base_dtypes: tuple[str, ...] = ()          # before a dialect narrows them
    base_reference: E.Compiled | None = None
    base_note: str = ""
    note: str = ""
    traits: tuple[str, ...] = ()                                  # drawn from TRAITS
    overflow: E.Compiled | None = None    # integer overflow bounds: [lo, hi] over the inputs
    dialect: str = "relax"                                        # the dialect resolved for
    spellings: dict[str, Spelling] = field(default_factory=dict)  # every dialect that has it
    accepts: tuple[E.Compiled, ...] = ()  # the dialect's documented-valid cases (Spelling.accepts)
    optional_args: int = 0                # Spelling.optional_args
    infer: str = ""                       # Spelling.infer: TVM's function typing it, if shared
    input_search: InputSearch | None = None  # how a wanted result interval reaches the inputs
    target_exclusions: tuple[TargetExclusion, ...] = ()  # every dialect's; see exclusions()
    tvm_bugs: tuple[TvmBugDtypes, ...] = ()               # every dialect's; see bug_dtypes()
    limitations: tuple[Limitation, ...] = ()              # every dialect's; see limitation()

    def bug_dtypes(self) -> tuple[str, ...]:
        """The dtypes left out of `dtypes` for a TVM bug on valid programs, in the dialect
        resolved for: valid inputs, never an unsupported-dtype violation."""
        return tuple(dt for bug in self.tvm_bugs if bug.dialects is None or self.dialect in bug.dialects
                     for dt in bug.dtypes)

    def limitation(self, kind: str, dtype: str) -> Limitation | None:
        """The entry of `limitations` documenting TVM's behaviour on this violation, if any."""
        return next((x for x in self.limitations if (x.dialects is None or self.dialect in x.dialects)
                     and x.documents(kind, dtype)), None)

    def exclusions(self, kinds) -> list[TargetExclusion]:
        """The exclusions of these target kinds that apply to the dialect resolved for."""
        return [x for x in self.target_exclusions
                if x.target in kinds and (x.dialects is None or self.dialect in x.dialects)]

    def excluded_dtype(self, dtype: str, kinds) -> TargetExclusion | None:
        """The exclusion that rules out the op at `dtype` whatever its inputs, if any."""
        return next((x for x in self.exclusions(kinds) if x.when is None and x.covers_dtype(dtype)), None)

    def for_dialect(self, dialect: str) -> "OpSpec":
        """This op as `dialect` spells it (the dialect must have it)."""
        sp = self.spellings[dialect]
        note = "; ".join(n for n in (self.base_note, sp.note) if n)
        return replace(self, dialect=dialect, dialect_op=sp.op, call_args=sp.call_args,
                       call_kwargs=sp.call_kwargs, dtypes=sp.dtypes or self.base_dtypes,
                       reference=sp.reference or self.base_reference, note=note, accepts=sp.accepts,
                       optional_args=sp.optional_args, infer=sp.infer)

    @property
    def inference_site(self) -> str:
        """The function in the dialect's TVM that types the op: `infer`, or else its own."""
        return self.infer or self.dialect_op

    @property
    def multi_output(self) -> bool:
        return self.out_shapes is not None

    def call_arguments(self, attrs: dict, dtype: str, inputs: dict) -> tuple[list, dict]:
        """Positional and keyword arguments of the dialect's op for one node.

        `inputs` maps input names to whatever stands for them (Relax exprs in lowering,
        code text in reproducers, references in disruptive plans): the rule is the same.
        """
        env = {**attrs, "dtype": dtype}
        if self.call_args is not None:
            args = [a({**env, **inputs}) for a in self.call_args]
        else:
            args = [inputs[i.name] for i in self.inputs]
        if self.call_kwargs is not None:
            kwargs = {k: v(env) for k, v in self.call_kwargs.items()}
        else:
            kwargs = {k: env[k] for k in self.kwarg_names()}
        return args, kwargs

    def kwarg_names(self) -> list[str]:
        """Attributes passed to the op: all public attrs unless `call.kwargs` says otherwise."""
        if self.call_kwargs is not None:
            return list(self.call_kwargs)
        return [a for a in self.attrs if not a.startswith("_")]


@dataclass
class SpecSet:
    ops: dict[str, OpSpec]
    tolerances: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)
    # target kind -> dtype -> the least [rtol, atol] its float results are compared with
    # (core.oracle.TargetTolerance)
    target_tolerances: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)

    def names(self) -> list[str]:
        return sorted(self.ops)

    def for_dialect(self, dialect: str) -> "SpecSet":
        """The ops `dialect` has, spelled its way."""
        return replace(self, ops={n: op.for_dialect(dialect) for n, op in self.ops.items() if dialect in op.spellings})

    def restrict(self, names: list[str]) -> "SpecSet":
        return replace(self, ops={n: self.ops[n] for n in names})

    def shared_with(self, other: "SpecSet") -> "SpecSet":
        """The ops both dialects have and compute alike, with the dtypes both accept: what a
        cross-IR campaign generates. An op whose dialects give different references (Relay
        rounds halves away from zero, Relax to even) means different things in the two, so
        comparing them would only find that difference."""
        shared = {}
        for name, op in self.ops.items():
            theirs = other.ops.get(name)
            if theirs is None or theirs.reference.text != op.reference.text:
                continue
            dtypes = tuple(d for d in op.dtypes if d in theirs.dtypes)
            if dtypes:
                shared[name] = replace(op, dtypes=dtypes)
        return replace(self, ops=shared)


# --- reference namespace --------------------------------------------------------------------

_NP_FUNCTIONS = [
    "abs", "absolute", "add", "subtract", "multiply", "divide", "true_divide", "floor_divide",
    "mod", "fmod", "remainder", "power", "negative", "exp", "exp2", "expm1", "log", "log2",
    "log10", "log1p", "sqrt", "square", "sin", "cos", "tan", "arcsin", "arccos", "arctan",
    "arctan2", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "floor", "ceil", "round",
    "rint", "trunc", "sign", "maximum", "minimum", "clip", "equal", "not_equal", "less",
    "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_xor",
    "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "invert",
    "left_shift", "right_shift", "isnan", "isinf", "isfinite", "where", "sum", "prod", "max",
    "min", "mean", "var", "std", "argmax", "argmin", "cumsum", "cumprod", "all", "any",
    "reshape", "transpose", "expand_dims", "squeeze", "concatenate", "split", "broadcast_to",
    "tile", "matmul", "dot", "einsum", "flip", "tril", "triu", "take", "take_along_axis",
    "sort", "argsort", "zeros", "ones", "full", "arange", "eye", "zeros_like", "ones_like",
    "full_like", "asarray", "array", "pad", "erf" if hasattr(np, "erf") else "abs",
    "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64", "bool_", "pi", "e", "inf", "trunc", "fix", "moveaxis", "swapaxes",
    "stack", "ndim", "shape", "size", "array_split", "atleast_1d", "exp", "float_power",
]


def _namespaces() -> dict[str, E.Namespace]:
    np_members = {n: getattr(np, n) for n in _NP_FUNCTIONS if hasattr(np, n)}
    return {"np": E.Namespace("np", np_members), "ref": E.Namespace("ref", REFERENCE_HELPERS)}


# --- loading --------------------------------------------------------------------------------

class _Reader:
    """Validates one op entry, naming the file, op and field in every error."""

    def __init__(self, path: str, op_name: str, namespaces):
        self.where = f"{path}: op '{op_name}'"
        self.namespaces = namespaces

    def fail(self, fld: str, msg: str):
        raise SpecError(f"{self.where}, field '{fld}'", msg)

    def expr(self, fld: str, text: Any) -> E.Compiled:
        if text is None or isinstance(text, (dict, set)):
            self.fail(fld, f"expected an expression, got {type(text).__name__}")
        try:
            return E.compile_expr(text, namespaces=self.namespaces)
        except E.ExprError as exc:
            self.fail(fld, str(exc))

    def int_range(self, fld: str, value: Any) -> tuple[int, int]:
        if (not isinstance(value, (list, tuple)) or len(value) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
                or value[0] > value[1]):
            self.fail(fld, f"expected [lo, hi] integers with lo <= hi, got {value!r}")
        return int(value[0]), int(value[1])

    def unknown_keys(self, fld: str, entry: dict, allowed: set):
        extra = sorted(set(entry) - allowed)
        if extra:
            self.fail(fld, f"unknown key(s) {extra}; allowed: {sorted(allowed)}")


def _read_input(r: _Reader, i: int, entry: Any) -> InputSpec:
    fld = f"inputs[{i}]"
    if isinstance(entry, str):
        entry = {"name": entry}
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        r.fail(fld, "each input is a name or a mapping with a 'name'")
    r.unknown_keys(fld, entry, _INPUT_KEYS)
    spec = InputSpec(name=entry["name"])
    if "rank" in entry:
        spec.rank = r.int_range(f"{fld}.rank", entry["rank"])
    if "dtype" in entry:
        spec.dtype = r.expr(f"{fld}.dtype", entry["dtype"])
    if "shape" in entry:
        spec.shape = r.expr(f"{fld}.shape", entry["shape"])
    elif i > 0:
        r.fail(fld, "inputs after the first need a 'shape' rule")
    if "domain" in entry:
        spec.domain = r.expr(f"{fld}.domain", entry["domain"])
    if "variadic" in entry:
        if i == 0:
            r.fail(fld, "the first input cannot be variadic")
        spec.variadic = r.int_range(f"{fld}.variadic", entry["variadic"])
    return spec


def _read_op(path: str, entry: Any, namespaces) -> OpSpec:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise SpecError(path, "each entry under 'ops' must be a mapping with a string 'name'")
    r = _Reader(path, entry["name"], namespaces)
    r.unknown_keys("(op)", entry, _OP_KEYS)
    for required in ("inputs", "dtypes", "reference"):
        if required not in entry:
            r.fail(required, "is required")

    inputs_raw = entry["inputs"]
    if not isinstance(inputs_raw, list) or not inputs_raw:
        r.fail("inputs", "expected a non-empty list")
    inputs = [_read_input(r, i, e) for i, e in enumerate(inputs_raw)]
    names = [i.name for i in inputs]
    if len(set(names)) != len(names):
        r.fail("inputs", f"duplicate input names {names}")

    dtypes = entry["dtypes"]
    if not isinstance(dtypes, list) or not dtypes:
        r.fail("dtypes", "expected a non-empty list of dtypes")
    for dt in dtypes:
        if dt not in ALL_DTYPES:
            r.fail("dtypes", f"unknown dtype '{dt}'; known: {', '.join(ALL_DTYPES)}")

    attrs_raw = entry.get("attrs") or {}
    if not isinstance(attrs_raw, dict):
        r.fail("attrs", "expected a mapping of attribute name to rule")
    attrs = {str(k): r.expr(f"attrs.{k}", v) for k, v in attrs_raw.items()}
    clash = set(attrs) & set(names)
    if clash:
        r.fail("attrs", f"attribute names {sorted(clash)} clash with input names")

    solve = None
    if "solve" in entry:
        raw = entry["solve"]
        if not isinstance(raw, dict) or not isinstance(raw.get("vars"), dict):
            r.fail("solve", "expected a mapping with 'vars' (name: [lo, hi]) and 'constraints'")
        svars = {str(k): r.int_range(f"solve.vars.{k}", v) for k, v in raw["vars"].items()}
        cons = [r.expr(f"solve.constraints[{j}]", c) for j, c in enumerate(raw.get("constraints") or [])]
        solve = SolveSpec(svars, cons)

    constraints_raw = entry.get("constraints") or []
    if not isinstance(constraints_raw, list):
        r.fail("constraints", "expected a list of expressions")
    constraints = [r.expr(f"constraints[{j}]", c) for j, c in enumerate(constraints_raw)]

    out = entry.get("output") or {}
    if not isinstance(out, dict):
        r.fail("output", "expected a mapping with 'shape' (or 'shapes') and 'dtype'")
    r.unknown_keys("output", out, _OUTPUT_KEYS)
    if "shape" in out and "shapes" in out:
        r.fail("output", "give either 'shape' or 'shapes', not both")
    out_shape = r.expr("output.shape", out["shape"]) if "shape" in out else None
    out_shapes = r.expr("output.shapes", out["shapes"]) if "shapes" in out else None
    out_dtype = r.expr("output.dtype", out["dtype"]) if "dtype" in out else None

    tolerance = entry.get("tolerance", "exact")
    if not isinstance(tolerance, str):
        r.fail("tolerance", "expected a tolerance class name")

    for fld in ("exact", "continuous", "may_trap"):
        if fld in entry and not isinstance(entry[fld], bool):
            r.fail(fld, "expected true or false")
    traits = entry.get("traits") or []
    if not isinstance(traits, list):
        r.fail("traits", f"expected a list drawn from {', '.join(TRAITS)}")
    for t in traits:
        if t not in TRAITS:
            r.fail("traits", f"unknown trait {t!r}; known: {', '.join(TRAITS)}")
    spellings = _read_spellings(r, entry)
    reference = r.expr("reference", entry["reference"])
    op = OpSpec(
        name=entry["name"], dialect_op=entry["name"], inputs=inputs, dtypes=tuple(dtypes), attrs=attrs,
        solve=solve, constraints=constraints, out_shape=out_shape, out_shapes=out_shapes,
        out_dtype=out_dtype, reference=reference,
        tolerance=tolerance, exact=bool(entry.get("exact", False)),
        amplification=r.expr("amplification", entry["amplification"]) if "amplification" in entry else None,
        continuous=bool(entry.get("continuous", True)), may_trap=bool(entry.get("may_trap", False)),
        call_args=None, call_kwargs=None, source=path, note=str(entry.get("note", "")),
        spellings=spellings, base_dtypes=tuple(dtypes), base_reference=reference,
        base_note=str(entry.get("note", "")), traits=tuple(traits),
        overflow=r.expr("overflow", entry["overflow"]) if "overflow" in entry else None,
        input_search=_read_input_search(r, entry["input_search"], inputs, attrs) if "input_search" in entry else None,
        target_exclusions=_read_targets(r, entry.get("targets"), set(names) | set(attrs)
                                        | set(solve.vars if solve else ()) | {"dtype"}),
        tvm_bugs=_read_tvm_bugs(r, entry.get("tvm_bugs"), tuple(dtypes), spellings),
        limitations=_read_limitations(r, entry.get("limitations")),
    )
    return op.for_dialect("relax") if "relax" in spellings else op


def _read_targets(r: _Reader, raw: Any, known_names: set[str]) -> tuple[TargetExclusion, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        r.fail("targets", f"expected a mapping of target kind ({', '.join(TARGET_KINDS)}) to a list of exclusions")
    out = []
    for kind, entries in raw.items():
        if kind not in TARGET_KINDS:
            r.fail("targets", f"unknown target kind {kind!r}; known: {', '.join(TARGET_KINDS)}")
        if not isinstance(entries, list) or not entries:
            r.fail(f"targets.{kind}", "expected a non-empty list of exclusions")
        out += [_read_exclusion(r, f"targets.{kind}[{i}]", kind, e, known_names) for i, e in enumerate(entries)]
    return tuple(out)


def _read_exclusion(r: _Reader, fld: str, kind: str, entry: Any, known_names: set[str]) -> TargetExclusion:
    if not isinstance(entry, dict):
        r.fail(fld, "expected a mapping with 'error', 'note' and optional 'dtypes', 'when', 'dialects'")
    r.unknown_keys(fld, entry, _EXCLUSION_KEYS)
    for required in ("error", "note"):
        if not isinstance(entry.get(required), str) or not entry[required].strip():
            r.fail(f"{fld}.{required}", "is required: a non-empty string")
    dtypes = entry.get("dtypes")
    if dtypes is not None and (not isinstance(dtypes, list) or not dtypes
                               or any(dt not in ALL_DTYPES for dt in dtypes)):
        r.fail(f"{fld}.dtypes", f"expected a non-empty list of dtypes from {', '.join(ALL_DTYPES)}, got {dtypes!r}")
    dialects = entry.get("dialects")
    if dialects is not None and (not isinstance(dialects, list) or not dialects
                                 or any(d not in DIALECTS for d in dialects)):
        r.fail(f"{fld}.dialects", f"expected a non-empty list of dialects from {', '.join(DIALECTS)}, got {dialects!r}")
    when = r.expr(f"{fld}.when", entry["when"]) if "when" in entry else None
    if when is not None and when.names - known_names:
        r.fail(f"{fld}.when", f"names {sorted(when.names - known_names)}, which are not this op's inputs, "
                              f"attributes or 'dtype'")
    return TargetExclusion(kind, entry["error"], entry["note"], tuple(dtypes) if dtypes else None, when,
                           tuple(dialects) if dialects else None)


def _entry_list(r: _Reader, fld: str, raw: Any, what: str) -> list:
    if raw is None:
        return []
    if not isinstance(raw, list) or not raw or not all(isinstance(e, dict) for e in raw):
        r.fail(fld, f"expected a non-empty list of mappings, each {what}")
    return raw


def _dtype_list(r: _Reader, fld: str, dtypes: Any) -> tuple[str, ...]:
    if not isinstance(dtypes, list) or not dtypes or any(dt not in ALL_DTYPES for dt in dtypes):
        r.fail(fld, f"expected a non-empty list of dtypes from {', '.join(ALL_DTYPES)}, got {dtypes!r}")
    return tuple(dtypes)


def _dialect_list(r: _Reader, fld: str, dialects: Any) -> tuple[str, ...] | None:
    if dialects is None:
        return None
    if not isinstance(dialects, list) or not dialects or any(d not in DIALECTS for d in dialects):
        r.fail(fld, f"expected a non-empty list of dialects from {', '.join(DIALECTS)}, got {dialects!r}")
    return tuple(dialects)


def _required_text(r: _Reader, fld: str, entry: dict, key: str) -> str:
    if not isinstance(entry.get(key), str) or not entry[key].strip():
        r.fail(f"{fld}.{key}", "is required: a non-empty string")
    return entry[key]


def _read_tvm_bugs(r: _Reader, raw: Any, dtypes: tuple[str, ...],
                   spellings: dict[str, Spelling]) -> tuple[TvmBugDtypes, ...]:
    out = []
    for i, entry in enumerate(_entry_list(r, "tvm_bugs", raw, "with 'dtypes', 'error', 'note' "
                                                             "and optional 'dialects'")):
        fld = f"tvm_bugs[{i}]"
        r.unknown_keys(fld, entry, _TVM_BUG_KEYS)
        bug = TvmBugDtypes(_dtype_list(r, f"{fld}.dtypes", entry.get("dtypes")),
                           _required_text(r, fld, entry, "error"), _required_text(r, fld, entry, "note"),
                           _dialect_list(r, f"{fld}.dialects", entry.get("dialects")))
        for dialect in bug.dialects or tuple(spellings):
            if dialect not in spellings:
                r.fail(f"{fld}.dialects", f"names {dialect}, which has no block under 'dialects'")
            generated = set(bug.dtypes) & set(spellings[dialect].dtypes or dtypes)
            if generated:
                r.fail(f"{fld}.dtypes", f"{sorted(generated)} are generated for {dialect} (its dtypes): a dtype "
                                        "left out for a TVM bug cannot be generated too")
        out.append(bug)
    return tuple(out)


def _read_limitations(r: _Reader, raw: Any) -> tuple[Limitation, ...]:
    out = []
    for i, entry in enumerate(_entry_list(r, "limitations", raw, "with 'kind', 'note' and optional "
                                                                   "'dtypes', 'dialects'")):
        fld = f"limitations[{i}]"
        r.unknown_keys(fld, entry, _LIMITATION_KEYS)
        if entry.get("kind") not in VIOLATION_KINDS:
            r.fail(f"{fld}.kind", f"expected a violation kind from {', '.join(VIOLATION_KINDS)}, "
                                  f"got {entry.get('kind')!r}")
        out.append(Limitation(entry["kind"], _required_text(r, fld, entry, "note"),
                              _dtype_list(r, f"{fld}.dtypes", entry["dtypes"]) if "dtypes" in entry else None,
                              _dialect_list(r, f"{fld}.dialects", entry.get("dialects"))))
    return tuple(out)


def _read_input_search(r: _Reader, raw: Any, inputs: list[InputSpec], attrs: dict) -> InputSearch:
    fld = "input_search"
    known = ", ".join(rule.value for rule in IntervalRule)
    if isinstance(raw, str):
        raw = {"rule": raw}
    if not isinstance(raw, dict) or "rule" not in raw:
        r.fail(fld, f"expected a rule name ({known}) or a mapping with 'rule' and its parameters")
    try:
        rule = IntervalRule(raw["rule"])
    except (ValueError, TypeError):
        r.fail(fld, f"unknown rule {raw['rule']!r}; known: {known}")
    r.unknown_keys(fld, raw, {"rule"} | _RULE_KEYS.get(rule, set()))
    names = [i.name for i in inputs]
    if rule in _TWO_INPUT_RULES and len(names) != 2:
        r.fail(fld, f"rule '{rule.value}' combines two inputs; this op has {len(names)} ({', '.join(names)})")
    if rule is IntervalRule.RUNNING_SUM and "axis" not in attrs:
        r.fail(fld, "rule 'running_sum' sums along the 'axis' attribute; this op has none")
    search = InputSearch(rule)
    if "inputs" in raw:
        search = replace(search, slots=_passing_slots(r, f"{fld}.inputs", raw["inputs"], names))
    if "outputs" in raw:
        search = replace(search, outputs=_result_indices(r, f"{fld}.outputs", raw["outputs"]))
    if rule is IntervalRule.NORMALIZATION:
        search = replace(search, bound=_normalised_bound(r, f"{fld}.bound", raw.get("bound")),
                         unchanged=_unchanged_results(r, f"{fld}.unchanged", raw.get("unchanged", {}), names))
    return search


def _is_count(value: Any, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _passing_slots(r: _Reader, fld: str, given: Any, names: list[str]) -> tuple[int, ...]:
    if not isinstance(given, list) or not given or any(n not in names for n in given):
        r.fail(fld, f"expected a non-empty list of this op's inputs ({', '.join(names)}), got {given!r}")
    return tuple(names.index(n) for n in given)


def _result_indices(r: _Reader, fld: str, given: Any) -> tuple[int, ...]:
    if not isinstance(given, list) or not given or not all(_is_count(i, 0) for i in given):
        r.fail(fld, f"expected a non-empty list of result indices >= 0, got {given!r}")
    return tuple(given)


def _normalised_bound(r: _Reader, fld: str, bound: Any) -> float:
    if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not bound > 0:
        r.fail(fld, f"expected a number > 0 bounding the normalised data, got {bound!r}")
    return float(bound)


def _unchanged_results(r: _Reader, fld: str, given: Any, names: list[str]) -> tuple[tuple[str, int], ...]:
    if (not isinstance(given, dict) or any(n not in names for n in given)
            or not all(_is_count(i, 1) for i in given.values())):
        r.fail(fld, f"expected a mapping of input ({', '.join(names)}) to a result index >= 1, got {given!r}")
    return tuple(given.items())


def _read_call(r: _Reader, fld: str, call) -> tuple[list | None, dict | None]:
    call = call or {}
    if not isinstance(call, dict) or set(call) - {"args", "kwargs"}:
        r.fail(fld, "expected a mapping with optional 'args' (list) and 'kwargs' (mapping)")
    call_args = None
    if "args" in call:
        if not isinstance(call["args"], list):
            r.fail(f"{fld}.args", "expected a list of expressions")
        call_args = [r.expr(f"{fld}.args[{j}]", a) for j, a in enumerate(call["args"])]
    call_kwargs = None
    if "kwargs" in call:
        if not isinstance(call["kwargs"], dict):
            r.fail(f"{fld}.kwargs", "expected a mapping of keyword to expression")
        call_kwargs = {str(k): r.expr(f"{fld}.kwargs.{k}", v) for k, v in call["kwargs"].items()}
    return call_args, call_kwargs


def _read_spelling(r: _Reader, fld: str, default_op: str, block, legacy: bool = False) -> Spelling:
    # an old file's fields are top-level `relax` and `call`; a dialect block's are under it
    op_field, call_field = ("relax", "call") if legacy else (f"{fld}.op", f"{fld}.call")
    if not isinstance(block, dict):
        r.fail(fld, "expected a mapping ({} when the dialect spells the op as the spec does)")
    r.unknown_keys(fld, block, _DIALECT_KEYS)
    op = block.get("op", default_op)
    if not isinstance(op, str) or not all(p.isidentifier() for p in op.split(".")):
        r.fail(op_field, f"expected a dotted op name, got {op!r}")
    call_args, call_kwargs = _read_call(r, call_field, block.get("call"))
    dtypes = block.get("dtypes")
    if dtypes is not None and (not isinstance(dtypes, list) or not dtypes
                               or any(dt not in ALL_DTYPES for dt in dtypes)):
        r.fail(f"{fld}.dtypes", f"expected a non-empty list of dtypes from {', '.join(ALL_DTYPES)}")
    reference = r.expr(f"{fld}.reference", block["reference"]) if "reference" in block else None
    accepts = block.get("accepts", [])
    if not isinstance(accepts, list):
        r.fail(f"{fld}.accepts", "expected a list of conditions")
    optional_args = block.get("optional_args", 0)
    if isinstance(optional_args, bool) or not isinstance(optional_args, int) or optional_args < 0:
        r.fail(f"{fld}.optional_args", f"expected a count >= 0, got {optional_args!r}")
    infer = block.get("infer", "")
    if not isinstance(infer, str) or not re.fullmatch(r"[A-Za-z_][\w:<>]*", infer or "_"):
        r.fail(f"{fld}.infer", f"expected the name of a TVM function, got {infer!r}")
    return Spelling(op=op, call_args=call_args, call_kwargs=call_kwargs,
                    dtypes=tuple(dtypes) if dtypes else None, reference=reference,
                    note=str(block.get("note", "")),
                    accepts=tuple(r.expr(f"{fld}.accepts[{i}]", a) for i, a in enumerate(accepts)),
                    optional_args=optional_args, infer=infer)


def _read_spellings(r: _Reader, entry: dict) -> dict[str, Spelling]:
    if "dialects" not in entry:  # an old spec file: its top-level `relax` and `call` are Relax's
        legacy = {"op": entry.get("relax", entry["name"]), "call": entry.get("call")}
        return {"relax": _read_spelling(r, "", entry["name"], legacy, legacy=True)}
    for old in ("relax", "call"):
        if old in entry:
            r.fail(old, "with a 'dialects' block, say it there (dialects.relax." + ("op" if old == "relax" else old) + ")")
    blocks = entry["dialects"]
    if not isinstance(blocks, dict) or not blocks:
        r.fail("dialects", f"expected a mapping of dialect ({', '.join(DIALECTS)}) to its spelling")
    for name in blocks:
        if name not in DIALECTS:
            r.fail("dialects", f"unknown dialect '{name}'; known: {', '.join(DIALECTS)}")
    return {name: _read_spelling(r, f"dialects.{name}", entry["name"], block or {})
            for name, block in blocks.items()}


def _read_tolerances(path: str, raw: Any) -> dict[str, dict[str, tuple[float, float]]]:
    if not isinstance(raw, dict):
        raise SpecError(f"{path}: field 'tolerances'", "expected a mapping of class to dtype table")
    out = {}
    for cls, table in raw.items():
        where = f"{path}: tolerance class '{cls}'"
        if not isinstance(table, dict):
            raise SpecError(where, "expected a mapping of dtype to [rtol, atol]")
        out[cls] = {}
        for dt, pair in table.items():
            if dt not in _TOLERANCE_KEYS:
                raise SpecError(f"{where}, dtype '{dt}'", f"unknown dtype; known: {', '.join(ALL_DTYPES)}")
            if (not isinstance(pair, list) or len(pair) != 2
                    or not all(isinstance(v, (int, float)) and v >= 0 for v in pair)):
                raise SpecError(f"{where}, dtype '{dt}'", f"expected [rtol, atol] >= 0, got {pair!r}")
            out[cls][dt] = (float(pair[0]), float(pair[1]))
    return out


def _read_target_tolerances(path: str, raw: Any) -> dict[str, dict[str, tuple[float, float]]]:
    """`target_tolerances`: per target kind, a `note` (why its math may differ) and a
    dtype table like a tolerance class's."""
    if not isinstance(raw, dict):
        raise SpecError(f"{path}: field 'target_tolerances'", "expected a mapping of target to dtype table")
    out = {}
    for target, table in raw.items():
        where = f"{path}: target_tolerances '{target}'"
        if target not in TARGET_KINDS:
            raise SpecError(where, f"unknown target; known: {', '.join(TARGET_KINDS)}")
        if not isinstance(table, dict) or not isinstance(table.get("note"), str) or not table["note"].strip():
            raise SpecError(where, "expected a mapping with a 'note' (why its results may differ) and dtypes")
        dtypes = {dt: pair for dt, pair in table.items() if dt != "note"}
        out[target] = _read_tolerances(path, {f"target {target}": dtypes})[f"target {target}"]
    return out


def load_specs(spec_dir: str | os.PathLike | None = None, dialect: str = "relax") -> SpecSet:
    """Load every ``*.yaml`` in the folder, the ops `dialect` has spelled its way. Errors
    name the file, op and field; every dialect's block is checked, whichever is asked for."""
    folder = Path(spec_dir) if spec_dir is not None else DEFAULT_SPEC_DIR
    if not folder.is_dir():
        raise SpecError(str(folder), "op spec folder not found")
    files = sorted(folder.glob("*.yaml"))
    if not files:
        raise SpecError(str(folder), "no *.yaml op spec files in this folder")
    namespaces = _namespaces()
    ops: dict[str, OpSpec] = {}
    tolerances: dict[str, dict] = {}
    target_tolerances: dict[str, dict] = {}
    for path in files:
        shown = str(path)
        try:
            doc = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = f" line {mark.line + 1}" if mark is not None else ""
            raise SpecError(f"{shown}{line}", f"not valid YAML: {getattr(exc, 'problem', exc)}") from None
        if doc is None:
            continue
        if not isinstance(doc, dict) or set(doc) - {"ops", "tolerances", "target_tolerances"}:
            raise SpecError(shown, "expected a mapping with 'ops' (a list), 'tolerances' and/or 'target_tolerances'")
        if "tolerances" in doc:
            tolerances.update(_read_tolerances(shown, doc["tolerances"]))
        if "target_tolerances" in doc:
            target_tolerances.update(_read_target_tolerances(shown, doc["target_tolerances"]))
        entries = doc.get("ops") or []
        if not isinstance(entries, list):
            raise SpecError(f"{shown}: field 'ops'", "expected a list of op entries")
        for entry in entries:
            op = _read_op(shown, entry, namespaces)
            if op.name in ops:
                raise SpecError(f"{shown}: op '{op.name}'", f"defined twice (also in {ops[op.name].source})")
            ops[op.name] = op
    for op in ops.values():
        if op.tolerance not in tolerances:
            raise SpecError(f"{op.source}: op '{op.name}', field 'tolerance'",
                            f"unknown tolerance class '{op.tolerance}'; known: {sorted(tolerances)}")
    if not ops:
        raise SpecError(str(folder), "no ops defined")
    resolved = SpecSet(ops, tolerances, target_tolerances).for_dialect(dialect)
    if not resolved.ops:
        raise SpecError(str(folder), f"no op has a '{dialect}' block under 'dialects'")
    return resolved
