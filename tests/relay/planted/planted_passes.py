"""Deliberately faulty Relay passes (TVM 0.19), for tests of the pass-order oracle (never shipped)."""
import numpy as np
import tvm
from tvm import relay


class _BumpConstants(relay.ExprMutator):
    def visit_constant(self, const):
        value = const.data.numpy()
        if value.dtype.kind != "f":
            return const
        return relay.const(value + np.asarray(1, value.dtype), str(value.dtype))


class _SwapSubtract(relay.ExprMutator):
    """subtract(a, b) becomes subtract(b, a) where both have the result's type."""

    def visit_call(self, call):
        new = super().visit_call(call)
        if isinstance(new.op, tvm.ir.Op) and new.op.name == "subtract":
            a, b = call.args
            if a.checked_type == b.checked_type:
                return relay.Call(new.op, [new.args[1], new.args[0]], new.attrs)
        return new


class _FindClosure(relay.ExprVisitor):
    def visit_function(self, fn):
        raise ValueError("PlantedRaiseOnClosure: cannot handle local functions")


def _function_pass(name, rewrite):
    @tvm.transform.module_pass(opt_level=0, name=name)
    def apply(mod, _ctx):
        functions = {gv: (rewrite(f) if isinstance(f, relay.Function) else f) for gv, f in mod.functions.items()}
        return tvm.IRModule(functions, mod.type_definitions, attrs=mod.attrs)
    return apply


def change_constant():
    return _function_pass("PlantedChangeConstant", lambda f: _BumpConstants().visit(f))


def swap_operands():
    return _function_pass("PlantedSwapOperands", lambda f: _SwapSubtract().visit(f))


def raise_on_closure():
    def rewrite(f):
        _FindClosure().visit(f.body)  # a function inside f's body: a closure
        return f
    return _function_pass("PlantedRaiseOnClosure", rewrite)


class _UndefineFirstArgument(relay.ExprMutator):
    """The first operator call's first variable argument becomes a new variable of the same
    name and type that nothing binds: a free variable, and the module no longer type-checks."""

    def __init__(self):
        super().__init__()
        self.done = False

    def visit_call(self, call):
        new = super().visit_call(call)
        if self.done or not isinstance(new.op, tvm.ir.Op) or not new.args or not isinstance(new.args[0], relay.Var):
            return new
        self.done = True
        first = new.args[0]
        stray = relay.var(first.name_hint, first.type_annotation or first.checked_type)
        return relay.Call(new.op, [stray, *new.args[1:]], new.attrs)


def undefine_var():
    return _function_pass("PlantedUndefineVar", lambda f: _UndefineFirstArgument().visit(f))


class _WidenFirstArgument(relay.ExprMutator):
    """The first float32 operator call's first argument is cast to float64: the call no longer
    type-checks (a Relay diagnostic, not an exception of the pass's own)."""

    def __init__(self):
        super().__init__()
        self.done = False

    def visit_call(self, call):
        new = super().visit_call(call)
        if self.done or not isinstance(new.op, tvm.ir.Op) or len(new.args) != 2:
            return new
        first = call.args[0].checked_type
        if not isinstance(first, relay.TensorType) or first.dtype != "float32":
            return new
        self.done = True
        return relay.Call(new.op, [relay.cast(new.args[0], "float64"), *new.args[1:]], new.attrs, span=call.span)


def widen_argument():
    return _function_pass("PlantedWidenArgument", lambda f: _WidenFirstArgument().visit(f))
