"""Plausible but faulty Relax passes, each wrong on one pattern (issue 14): the test and
benchmark material of pass probing and pass-directed generation (never shipped)."""
import tvm
from tvm import relax
from tvm.relax.expr_functor import PyExprMutator, mutator


def _op_name(call) -> str:
    return call.op.name if isinstance(call, relax.Call) and isinstance(call.op, tvm.ir.Op) else ""


def _rank(expr) -> int:
    shape = getattr(expr.ty, "shape", None)
    return len(shape) if shape is not None else -1


def _dtype(expr) -> str:
    return str(getattr(expr.ty, "dtype", ""))


@mutator
class _Rewrite(PyExprMutator):
    """Replaces each call `rule` answers for with what it returns."""

    def __init__(self, rule, mod=None):
        super().__init__(mod)
        self.rule = rule

    def visit_call_(self, op):
        call = super().visit_call_(op)
        replaced = self.rule(self, call)
        return call if replaced is None else replaced


def _function_pass(name, rule):
    @tvm.transform.module_pass(opt_level=0, name=name)
    def apply(mod, _ctx):
        functions = {gv: (_Rewrite(rule).visit_expr(f) if isinstance(f, relax.Function) else f)
                     for gv, f in mod.functions.items()}
        return tvm.IRModule(functions, attrs=mod.attrs)
    return apply


def _module_check(name, complaint):
    """A pass that raises where `complaint(mod)` says something, and changes nothing else."""
    @tvm.transform.module_pass(opt_level=0, name=name)
    def apply(mod, _ctx):
        said = complaint(mod)
        if said:
            raise ValueError(f"{name}: {said}")
        return mod
    return apply


# one op with one kind of input: subtract of a scalar constant "simplified" into an add
def subtract_scalar_const():
    def rule(_m, call):
        if _op_name(call) == "relax.subtract" and isinstance(call.args[1], tvm.ir.expr.Constant) \
                and _rank(call.args[1]) == 0:
            return relax.op.add(call.args[0], call.args[1])
        return None
    return _function_pass("SubtractScalarConst", rule)


# one dtype: maximum on int8 lowered as minimum
def maximum_int8():
    def rule(_m, call):
        if _op_name(call) == "relax.maximum" and _dtype(call.args[0]) == "int8":
            return relax.op.minimum(call.args[0], call.args[1])
        return None
    return _function_pass("MaximumInt8", rule)


# one pair of ops: abs(negative(x)) "simplified" into negative(x)
def abs_of_negative():
    def rule(m, call):
        if _op_name(call) != "relax.abs" or not isinstance(call.args[0], relax.Var):
            return None
        bound = m.lookup_binding(call.args[0])
        if _op_name(bound) == "relax.negative":
            return call.args[0]
        return None
    return _function_pass("AbsOfNegative", rule)


# one attribute value: sum with keepdims=True computed as max
def sum_keepdims():
    def rule(_m, call):
        if _op_name(call) == "relax.sum" and bool(call.attrs.keepdims):
            return relax.op.max(call.args[0], call.attrs.axis, True)
        return None
    return _function_pass("SumKeepdims", rule)


# one broadcast shape: add of a lower-rank second input computed as subtract
def broadcast_add():
    def rule(_m, call):
        if _op_name(call) == "relax.add" and 0 < _rank(call.args[1]) < _rank(call.args[0]):
            return relax.op.subtract(call.args[0], call.args[1])
        return None
    return _function_pass("BroadcastAdd", rule)


# one IR feature: cannot handle If
def raise_on_if():
    def complaint(mod):
        found = []
        for f in mod.functions.values():
            if isinstance(f, relax.Function):
                relax.analysis.post_order_visit(f, lambda e: found.append(e) if isinstance(e, relax.If) else None)
        return "cannot handle If" if found else ""
    return _module_check("RaiseOnIf", complaint)


# modules with several functions
def raise_on_several_functions():
    def complaint(mod):
        n = len(mod.functions)
        return f"expected one function, found {n}" if n > 1 else ""
    return _module_check("RaiseOnSeveralFunctions", complaint)
