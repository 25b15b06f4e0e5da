"""Deliberately faulty Relax passes, for tests of the pass-order oracle (never shipped)."""
import tvm
from tvm import relax
from tvm.relax.expr_functor import PyExprMutator, mutator


@mutator
class _BumpConstants(PyExprMutator):
    def visit_generic_const_(self, op):
        value = op.value.numpy()
        if value.dtype.kind != "f":
            return op
        return relax.const(value + 1, str(value.dtype))


@mutator
class _DropAdds(PyExprMutator):
    """Replaces add(a, b) with a where the types agree: drops the binding's work."""

    def visit_call_(self, op):
        call = super().visit_call_(op)
        if isinstance(call.op, tvm.ir.Op) and call.op.name == "relax.add":
            a = call.args[0]
            if a.ty.same_as(call.ty) or str(a.ty) == str(call.ty):
                return a
        return call


def _function_pass(name, rewrite):
    @tvm.transform.module_pass(opt_level=0, name=name)
    def apply(mod, _ctx):
        functions = {gv: (rewrite(f) if isinstance(f, relax.Function) else f) for gv, f in mod.functions.items()}
        return tvm.IRModule(functions, attrs=mod.attrs)
    return apply


def change_constant():
    return _function_pass("PlantedChangeConstant", lambda f: _BumpConstants().visit_expr(f))


def drop_binding():
    return _function_pass("PlantedDropBinding", lambda f: _DropAdds().visit_expr(f))


def raise_on_closure():
    def rewrite(f):
        if f.script().count("@R.function") > 1:  # a function defined inside f
            raise ValueError("PlantedRaiseOnClosure: cannot handle local functions")
        return f
    return _function_pass("PlantedRaiseOnClosure", rewrite)


@mutator
class _UndefineFirstArgument(PyExprMutator):
    """Replaces the first operator call's first variable argument with a new variable of the
    same name and type that nothing defines: the module is no longer well-formed."""

    def __init__(self, mod=None):
        super().__init__(mod)
        self.done = False

    def visit_call_(self, op):
        call = super().visit_call_(op)
        if self.done or not isinstance(call.op, tvm.ir.Op) or not call.args:
            return call
        first = call.args[0]
        if not isinstance(first, relax.Var):
            return call
        self.done = True
        stray = relax.Var(first.name, first.ty)
        return relax.Call(call.op, [stray, *call.args[1:]], call.attrs, call.ty_args)


def undefine_var():
    return _function_pass("PlantedUndefineVar", lambda f: _UndefineFirstArgument().visit_expr(f))


@mutator
class _RoundConstants(PyExprMutator):
    """Moves every float constant by a relative 1e-4, as a pass computing in a narrower
    type would: a change within the approximation its catalog entry documents."""

    def visit_generic_const_(self, op):
        value = op.value.numpy()
        if value.dtype.kind != "f":
            return op
        return relax.const(value * (1 + 1e-4), str(value.dtype))


def round_constants():
    """A pass that may change results (preserves_results: false), and stays within its
    documented approximation."""
    return _function_pass("PlantedRoundConstants", lambda f: _RoundConstants().visit_expr(f))


def round_constants_raise_on_exp():
    """The same, with a bug: it raises on any module holding an exp."""
    def rewrite(f):
        if "R.exp(" in f.script():
            raise ValueError("PlantedRoundRaiseOnExp: cannot approximate exp")
        return _RoundConstants().visit_expr(f)
    return _function_pass("PlantedRoundRaiseOnExp", rewrite)


def round_constants_undefine_var():
    """The same, with a bug: it leaves a variable used that nothing defines."""
    return _function_pass("PlantedRoundUndefineVar",
                          lambda f: _UndefineFirstArgument().visit_expr(_RoundConstants().visit_expr(f)))


def raise_on_symbolic_param():
    """Raises on a module whose main takes a tensor of symbolic shape: its findings keep a
    dynamic signature, which TVMScript prints with type variables (`def main[n3](...)` on
    Python 3.12 unless told otherwise)."""
    @tvm.transform.module_pass(opt_level=0, name="PlantedRaiseOnSymbolicParam")
    def apply(mod, _ctx):
        if any(relax.analysis.definable_tir_vars_in_type(p.ty) for p in mod["main"].params):
            raise ValueError("PlantedRaiseOnSymbolicParam: cannot handle symbolic dimensions")
        return mod
    return apply
