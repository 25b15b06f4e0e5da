"""Calls typed narrower than their operator infers, and the run-time check that makes them sound.

TVM 0.27's CanonicalizeBindings substitutes the constants a kept match_cast binds symbolic
dimensions to, then drops a match_cast this made trivial. It can leave a call whose binding
is typed narrower than its operator infers from its arguments now ("relax.sin: R.Tensor((6,
1)) where it infers R.Tensor((n6, 1))"): the claim is true, but nothing checks it at run
time any more, and later passes or the build, which trust either type, fail in many places.

`narrowed_calls` finds such calls; `widened` puts the dropped check back: each narrowed
binding `v: NARROW = op(args)` becomes `v_wide = op(args)`, typed as the operator infers,
then `v = R.match_cast(v_wide, NARROW)`. Everything else the pass did stays, so a failure
that goes away on the widened module is one the narrowing causes (tools/narrowing_effect.py).
"""
from __future__ import annotations

from typing import NamedTuple

import tvm
from tvm import relax
from tvm.relax.analysis import BaseCheckResult, type_base_check
from tvm.relax.expr_functor import PyExprMutator, mutator

from .passes import _run, instantiate_pass


def inferred_type(builder: relax.BlockBuilder, call: relax.Call):
    """The type `call`'s operator infers from its arguments now (the call built anew)."""
    return builder.normalize(relax.Call(call.op, call.args, call.attrs, call.ty_args)).ty


def is_narrowed(builder: relax.BlockBuilder, expr) -> bool:
    """Whether `expr` is an operator call whose type is not a base of the one it infers."""
    if not (isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op)):
        return False
    # TVM 0.27's Call is TIR's too: a shape's `T.if_then_else` (prim.if_then_else) infers nothing
    if expr.op.get_attr("FInferType") is None:
        return False
    return int(type_base_check(expr.ty, inferred_type(builder, expr))) != int(BaseCheckResult.PASS)


def narrowed_calls(mod) -> list[str]:
    """The operator calls of `mod` whose type is not a base of the type their operator
    infers from their arguments now ("relax.sin: R.Tensor((6, 1, 4, 2)) where it infers
    R.Tensor((n6, 1, n4, n2))")."""
    builder, found = relax.BlockBuilder(mod), []

    def visit(expr):
        if is_narrowed(builder, expr):
            found.append(f"{expr.op.name}: {expr.ty} where it infers {inferred_type(builder, expr)}")
    for func in mod.functions.values():
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(func, visit)
    return found


def new_narrowed_calls(before, after) -> list[str]:
    """The narrowed calls of `after` that `before` has not: those a pass made. A call is
    "narrowed" also where its type and the inferred one are equal but TVM cannot prove
    it (a split typed T.min(1, n) where it infers T.max(T.min(1, n) - T.min(0, n), 0));
    such a call, left as it was by a pass, is none of the pass's doing."""
    already = set(narrowed_calls(before))
    return [call for call in narrowed_calls(after) if call not in already]


class Narrowing(NamedTuple):
    """Where a sequence first narrows: the step's position, the calls, its input and output."""
    position: int
    calls: list[str]
    input: tvm.IRModule
    output: tvm.IRModule


def first_narrowing_step(mod, steps: list[dict], opt_level: int) -> Narrowing | None:
    """The first of `steps` whose output has narrowed calls its input has not, run one at a
    time as a campaign runs them (passes.apply_passes); None where none has. A pass that
    raises on the way raises here."""
    with tvm.transform.PassContext(opt_level=opt_level):
        for position, step in enumerate(steps):
            before, mod = mod, _run(mod, instantiate_pass(step))
            calls = new_narrowed_calls(before, mod)
            if calls:
                return Narrowing(position, calls, before, mod)
    return None


@mutator
class _Widener(PyExprMutator):
    """Rewrites each narrowed binding as the inferred call and a match_cast to its type.

    The bound variable keeps its identity and type, so no use of it changes. The new one is
    a DataflowVar inside a dataflow block (so the block's outputs stay as they were), a Var
    elsewhere."""

    in_dataflow = False

    def visit_dataflow_block_(self, block: relax.DataflowBlock) -> relax.BindingBlock:
        return self._visit_block(block, True, super().visit_dataflow_block_)

    def visit_binding_block_(self, block: relax.BindingBlock) -> relax.BindingBlock:
        return self._visit_block(block, False, super().visit_binding_block_)

    def _visit_block(self, block, in_dataflow: bool, visit):
        # a function nested in a block has blocks of its own: restore the outer kind after
        outer, self.in_dataflow = self.in_dataflow, in_dataflow
        try:
            return visit(block)
        finally:
            self.in_dataflow = outer

    def visit_var_binding_(self, binding: relax.VarBinding) -> None:
        if not is_narrowed(self.builder_, binding.value):
            super().visit_var_binding_(binding)
            return
        narrow_var, call = binding.var, binding.value
        wide_call = self.builder_.normalize(relax.Call(call.op, [self.visit_expr(a) for a in call.args],
                                                       call.attrs, call.ty_args))
        var_kind = relax.DataflowVar if self.in_dataflow else relax.Var
        wide_var = var_kind(f"{narrow_var.name}_wide", wide_call.ty)
        self.builder_.emit_normalized(relax.VarBinding(wide_var, wide_call))
        self.builder_.emit_normalized(relax.MatchCast(narrow_var, wide_var, narrow_var.ty))


def widened(mod: tvm.IRModule) -> tvm.IRModule:
    """`mod` with each narrowed binding `v: NARROW = op(args)` rewritten as `v_wide =
    op(args)` (typed as inferred) and `v = R.match_cast(v_wide, NARROW)`: the run-time
    check the narrowing dropped, put back."""
    widener = _Widener(mod)
    for global_var, func in mod.functions.items():
        if isinstance(func, relax.Function):
            widener.builder_.update_func(global_var, widener.visit_expr(func))
    return widener.builder_.get()


@tvm.transform.module_pass(opt_level=0, name="WidenNarrowedCalls")
def widen_narrowed_calls(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
    """`widened` as a pass (opt level 0: never skipped), for a step inserted in a sequence."""
    return widened(mod)


def widening_pass():
    """The factory of a user step (`import: hirfuzz.dialects.relax.narrowing:widening_pass`)
    that widens where it stands in a configuration's sequence."""
    return widen_narrowed_calls
