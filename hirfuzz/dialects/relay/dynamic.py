"""Dynamic shapes on Relay (TVM 0.19): a plan's `dynamic_params` as `relay.Any()` dimensions,
and what TVM says it cannot do with them.

A dynamic parameter of `main` is declared with its first dimension `?` (relay.Any()), as a
model imported with a dynamic batch is: type inference carries `?` on, and the VM and the
interpreter compute each shape at run time with the operators' shape functions
(`FShapeFunc`, python/tvm/relay/op/_*.py). Those are code of their own, one per operator,
and nothing else in a campaign runs them: their faults are this form's findings (max_pool2d's
shape function ignores `dilation`, so the kernel's shape assertion fails at run time).
Relax's symbolic shapes are cast back at once (`match_cast`); Relay has no cast back, so the
whole program after such a parameter is dynamic.

TVM 0.19 gives no shape function to about half the operators hirfuzz draws (sin, abs, erf,
nn.lrn, trilu...): the VM compiler stops with "cannot find ShapeFunc". That is a feature TVM
lacks, not a fault, so a plan whose module calls such an operator on a `?` dimension (or a
function declared static: `static_only_calls`) is lowered static, as a cut the program
cannot take is ignored (lower.cut_tree); as is one whose dynamic signature type inference
turns down (GatherND "needs a static shape"). The same messages raised later, past a pass
that brought such an operator in, are a skip by design (`dynamic_limits`).
"""
from __future__ import annotations

import contextlib
import re

import tvm
from tvm import relay

from ..base import ExecutorCannotTake

# what TVM 0.19 says where it has no dynamic-shape support, as opposed to a fault in it
_LIMITS = re.compile(r"cannot find ShapeFunc for [\w.]+"
                     r"|does not support dynamic input shape"
                     r"|needs a static shape"
                     r"|needs to be defined for dynamic input"
                     r"|Unsupported data/kernel layout: \w+, \w+"
                     # autotvm's schedule templates split static axes only: a `?` weight of a
                     # grouped conv2d on x86 (bench29 relay seed 23 0013)
                     r"|Invalid type of axis: <class 'tvm\.tir\.expr\.(Any|SizeVar)'>")


def _has_any(t) -> bool:
    if isinstance(t, relay.TensorType):
        return any(isinstance(d, tvm.tir.Any) for d in t.shape)
    return isinstance(t, relay.TupleType) and any(_has_any(f) for f in t.fields)


def static_only_calls(mod: tvm.IRModule) -> set[str]:
    """What `mod` (type-inferred) calls on a `?` dimension and cannot take one: an operator
    with no shape function, or a function (global, closure) whose parameters are declared
    static. Relay's type inference lets `(?, 2, 3)` through where `(2, 2, 3)` is declared,
    but that is a claim about the batch it cannot check, and TVM 0.19's VM compiler fails on
    it ("prim_shape_fn_states"): no program hirfuzz calls valid makes it."""
    found = set()

    def visit(node):
        if not isinstance(node, relay.Call) or not any(_has_any(arg.checked_type) for arg in node.args):
            return
        if not isinstance(node.op, tvm.ir.Op):
            found.add("a function declared static")
        elif node.op.get_attr("FShapeFunc") is None:
            found.add(node.op.name)
    for function in mod.functions.values():
        relay.analysis.post_order_visit(function, visit)
    return found


def with_dynamic_params(mod: tvm.IRModule, names: set[str]) -> tvm.IRModule:
    """`mod` (type-inferred) with main's parameters named in `names` declared with their first
    dimension `?`, and main's return type left to inference; `mod` itself where TVM cannot
    take it so (see the module docstring)."""
    main = mod["main"]
    chosen = {p: relay.var(p.name_hint, shape=[relay.Any(), *p.checked_type.shape[1:]], dtype=p.checked_type.dtype)
              for p in main.params if p.name_hint in names and len(p.checked_type.shape) > 0}
    if not chosen:
        return mod
    dynamic = tvm.IRModule(dict(mod.functions), dict(mod.type_definitions))
    dynamic["main"] = relay.Function([chosen.get(p, p) for p in main.params], relay.bind(main.body, chosen))
    try:
        dynamic = relay.transform.InferType()(dynamic)
    except Exception as exc:  # noqa: BLE001 - a limit is TVM's error or a shape function's Python one
        if _LIMITS.search(str(exc)):
            return mod
        raise  # a type relation's fault under `?`: lowering fails, judged as any such failure
    return mod if static_only_calls(dynamic) else dynamic


def is_dynamic(mod: tvm.IRModule) -> bool:
    """Whether a parameter of main is declared with a `?` dimension (its annotation: a module
    a pass left un-inferred has no checked types)."""
    return any(_has_any(p.type_annotation) for p in mod["main"].params)


@contextlib.contextmanager
def dynamic_limits(mod: tvm.IRModule):
    """Inside: where `mod` is dynamic, TVM saying it has no dynamic-shape support for what it
    holds is a skip by design (ExecutorCannotTake), not a finding."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - a shape function is Python: its ValueError says a limit too
        limit = _LIMITS.search(str(exc))
        if limit is None or not is_dynamic(mod):
            raise
        raise ExecutorCannotTake(f"TVM has no dynamic-shape support here: {limit.group(0)}") from None
