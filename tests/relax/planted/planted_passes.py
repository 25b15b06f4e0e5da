"""Deliberately faulty Relax passes, for tests of the pass-order oracle (never shipped)."""
import tvm
from tvm import relax
from tvm.relax.expr_functor import PyExprMutator, mutator
from tvm.script import relax as R


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


@tvm.script.ir_module
class _InplaceOnTupleCrash:
    """A tuple returned by one private function and passed to another inside a dataflow
    block: TVM 0.27's DataflowUseInplaceCalls segfaults on it once legalised."""

    @R.function(private=True)
    def f(x: R.Tensor((2, 3), "float32")) -> R.Tuple(R.Tensor((2, 3), "float32"), R.Tensor((2, 3), "float32")):
        with R.dataflow():
            a = R.add(x, x)
            b = R.multiply(x, x)
            t = (a, b)
            R.output(t)
        return t

    @R.function(private=True)
    def g(t: R.Tuple(R.Tensor((2, 3), "float32"), R.Tensor((2, 3), "float32"))) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            a = t[0]
            b = t[1]
            o = R.add(a, b)
            R.output(o)
        return o

    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        cls = _InplaceOnTupleCrash
        with R.dataflow():
            t = cls.f(x)
            o = cls.g(t)
            R.output(o)
        return o


def inplace_on_tuple_module():
    """Replaces the module by `_InplaceOnTupleCrash`, legalised: a real TVM crash for the
    DataflowUseInplaceCalls that follows it in a sequence."""
    @tvm.transform.module_pass(opt_level=0, name="PlantedInplaceOnTupleModule")
    def apply(_mod, _ctx):
        return relax.transform.LegalizeOps()(_InplaceOnTupleCrash)
    return apply


def always_raise(message: str):
    """Raises `message` on any module: a pass that fails whatever it is given."""
    @tvm.transform.module_pass(opt_level=0, name="PlantedAlwaysRaise")
    def apply(mod, _ctx):
        raise ValueError(message)
    return apply
