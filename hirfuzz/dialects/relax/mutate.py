"""Mutators: semantics-preserving rewrites of a Relax IRModule (runs inside workers).

Each mutator is a `Mutator(name, applies, apply)`: `applies(mod)` states its precondition
(the module has a site the rewrite can be applied to); `apply(mod, rng)` returns a new,
well-formed module that computes the same results, drawing every choice from `rng`, so
(graph, plan, mutation seed) reproduces a mutant exactly. Mutators compose: a mutant can
be mutated again. `mutate(mod, rng, count)` draws applicable mutators; `prepare_for_build`
runs what TVM requires before `relax.build`.

The rewrites (sites are bindings at the top level of a global Relax function's body):

- HIRGen function rewrites (3.3.2), on a global function f other than main:
  ``func_to_closure`` (a) f becomes a closure inside a new global g with f's parameters
  that calls it; every reference to f now names g, and f is removed;
  ``wrap_return`` (b) a new nullary global g returns f; each call ``f(args)`` becomes
  ``g()(args)``; ``call_wrap`` (c) a new global g calls f; every reference to f names g.
- PolyJuice algebraic rules: ``commute`` (add, multiply, maximum, minimum, comparisons
  for equality, logical and bitwise ops: exact); ``reassociate`` ((a+b)+c = a+(b+c), also *,
  max, min; exact for integers, max and min, within tolerance for floats; float16 *
  excluded: an intermediate could overflow); ``const_split`` (x + C = (x + C1) + (C - C1),
  a constant split in two; exact for integers by wrap-around) and ``const_merge`` (its
  inverse, (x + C1) + C2 = x + (C1 + C2)); ``distribute`` ((a+b)*c = a*c + b*c; integers
  exact, float32/64 within tolerance).
- PolyJuice structural rules: ``transpose_pair`` (an elementwise op computed on permuted
  operands, its result permuted back; lower-rank operands are reshaped with leading ones
  first, so broadcasting is unchanged); ``concat_split`` (split(concat(x, x))[k] = x);
  ``matmul_transpose`` (matmul(x, y) = T(matmul(T(y), T(x))), T swapping the last two
  axes; ranks >= 2); ``expose_output`` (an intermediate of main becomes an extra result).
  EXTRA OUTPUTS: ``expose_output`` appends the exposed tensor *after* main's existing
  results (main then returns a tuple), so a comparison with the unmutated module must
  compare the common prefix: the first len(original results) flattened outputs.
- TorchProbe: ``outline_closure`` / ``outline_global`` (functionalization: a range of
  bindings becomes a closure or a new global function returning every value used after
  the range; the call site binds the original variables, so nothing else changes);
  ``resolve`` (operator resolution: an elementwise op computed on parts of its operands
  split along one axis, the parts concatenated); ``inline_call`` (inlining, the inverse
  of outlining: a call of a simple global function replaced by its body);
  ``always_true_if`` (a binding moved into an ``If`` whose condition is always true,
  the else branch zeros of the same type; a dataflow block holding it becomes plain).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import tvm
from tvm import relax
from tvm.ir.expr import Constant as _Constant


# --- build precondition ----------------------------------------------------------------------

def prepare_for_build(mod: tvm.IRModule) -> tvm.IRModule:
    """What TVM 0.27 requires of a module before `relax.build`.

    Precondition, not a bug: the VM build pipeline (VMShapeLower) cannot handle local
    functions (closures); TVM documents `relax.transform.LambdaLift` as the pass that must
    run first, so it runs here whenever a function contains a nested function. A failure
    of LambdaLift on a well-formed module, a lifted module that is not well-formed, or a
    build failure on a well-formed lifted module is a TVM bug (see lower.KNOWN_TVM_BUGS).
    """
    if _has_local_functions(mod):
        mod = relax.transform.LambdaLift()(mod)
    return mod


def _has_local_functions(mod: tvm.IRModule) -> bool:
    found = []

    def visit(e):
        if isinstance(e, relax.Function):
            found.append(e)
    for _, func in mod.functions_items():
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(func.body, visit)
            if found:
                return True
    return False


# --- registry --------------------------------------------------------------------------------

@dataclass
class Mutator:
    name: str
    applies: Callable[[tvm.IRModule], bool]
    apply: Callable[[tvm.IRModule, np.random.Generator], tvm.IRModule]


MUTATORS: dict[str, Mutator] = {}


def _register(name: str, sites: Callable, rewrite: Callable):
    def applies(mod):
        return bool(sites(mod))

    def apply(mod, rng):
        found = sites(mod)
        if not found:
            raise ValueError(f"mutator {name} does not apply to this module")
        return rewrite(mod, found[int(rng.integers(len(found)))], rng)
    MUTATORS[name] = Mutator(name, applies, apply)


def mutate(mod: tvm.IRModule, rng: np.random.Generator, count: int = 1,
           names: list[str] | None = None) -> tuple[tvm.IRModule, list[str]]:
    """Apply up to `count` mutators, each drawn among those that apply; returns the mutant
    and the names applied, in order. ``expose_output`` in the list means main's results
    gained extra tensors at the end (compare the common prefix)."""
    applied = []
    pool = [MUTATORS[n] for n in (names or sorted(MUTATORS))]
    for _ in range(count):
        ok = [m for m in pool if m.applies(mod)]
        if not ok:
            break
        m = ok[int(rng.integers(len(ok)))]
        mod = m.apply(mod, rng)
        applied.append(m.name)
    return mod, applied


# --- helpers ---------------------------------------------------------------------------------

def _funcs(mod) -> list[tuple[relax.GlobalVar, relax.Function]]:
    return sorted([(gv, f) for gv, f in mod.functions_items() if isinstance(f, relax.Function)],
                  key=lambda p: p[0].name_hint)


def _op_name(value) -> str | None:
    if isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op):
        return value.op.name
    return None


def _static_tensor(ty) -> tuple[list[int], str] | None:
    if not isinstance(ty, relax.TensorType) or ty.shape is None:
        return None
    try:
        return [int(d) for d in ty.shape.values], str(ty.dtype)
    except (TypeError, ValueError, AttributeError):
        try:
            return [int(d) for d in ty.shape], str(ty.dtype)
        except (TypeError, ValueError):
            return None


def _static(ty) -> bool:
    if isinstance(ty, relax.TupleType):
        return all(_static(f) for f in ty.fields)
    return _static_tensor(ty) is not None


def _bindings(mod, pred, main_only=False):
    """Sites (gv, block index, binding index) whose VarBinding satisfies `pred(binding, block)`."""
    out = []
    for gv, f in _funcs(mod):
        if main_only and gv.name_hint != "main":
            continue
        if not isinstance(f.body, relax.SeqExpr):
            continue
        for bi, blk in enumerate(f.body.blocks):
            for ii, b in enumerate(blk.bindings):
                if isinstance(b, relax.VarBinding) and pred(b, blk, f):
                    out.append((gv, bi, ii))
    return out


class _Emit:
    """New bindings for one block; values are normalised one at a time (ANF)."""

    def __init__(self, mod, dataflow: bool):
        self.nb = relax.BlockBuilder(mod)
        self.dataflow = dataflow
        self.out: list = []

    def __call__(self, value, var=None, name="m"):
        value = self.nb.normalize(value)
        if var is None:
            var = (relax.DataflowVar if self.dataflow else relax.Var)(name, value.ty)
        self.out.append(relax.VarBinding(var, value))
        return var


def _rebuild(mod, gv, func, blocks, body=None, ret_ty=None):
    new = relax.Function(func.params, relax.SeqExpr(blocks, func.body.body if body is None else body),
                         func.ret_ty if ret_ty is None else ret_ty, func.is_pure, func.attrs)
    new = relax.BlockBuilder(mod).normalize(new)
    return _with_func(mod, gv, new)


def _with_func(mod, gv, func):
    funcs = {g: f for g, f in mod.functions_items()}
    funcs[gv] = func
    return tvm.IRModule(funcs, attrs=mod.attrs)


def _replace_binding(mod, site, build):
    """Replace the binding at `site` by what `build(emit, binding)` emits."""
    gv, bi, ii = site
    func = mod[gv]
    blocks = list(func.body.blocks)
    blk = blocks[bi]
    df = isinstance(blk, relax.DataflowBlock)
    emit = _Emit(mod, df)
    build(emit, blk.bindings[ii])
    bindings = list(blk.bindings[:ii]) + emit.out + list(blk.bindings[ii + 1:])
    blocks[bi] = relax.DataflowBlock(bindings) if df else relax.BindingBlock(bindings)
    return _rebuild(mod, gv, func, blocks)


def _subst(e, vmap: dict, gmap: dict | None = None):
    """`e` with variables (and global vars) replaced; rebuilt without types (normalise after)."""
    gmap = gmap or {}
    if isinstance(e, relax.Var):  # DataflowVar too
        return vmap.get(e, e)
    if isinstance(e, relax.GlobalVar):
        return gmap.get(e, e)
    if isinstance(e, relax.Call):
        op = e.op if isinstance(e.op, tvm.ir.Op) else _subst(e.op, vmap, gmap)
        return relax.Call(op, [_subst(a, vmap, gmap) for a in e.args], e.attrs, e.ty_args)
    if isinstance(e, relax.Tuple):
        return relax.Tuple([_subst(a, vmap, gmap) for a in e.fields])
    if isinstance(e, relax.TupleGetItem):
        return relax.TupleGetItem(_subst(e.tuple_value, vmap, gmap), e.index)
    if isinstance(e, relax.If):
        return relax.If(_subst(e.cond, vmap, gmap), _subst(e.true_branch, vmap, gmap),
                        _subst(e.false_branch, vmap, gmap))
    if isinstance(e, relax.SeqExpr):
        blocks = []
        for blk in e.blocks:
            bs = []
            for b in blk.bindings:
                if isinstance(b, relax.MatchCast):
                    bs.append(relax.MatchCast(b.var, _subst(b.value, vmap, gmap), b.ty))
                else:
                    bs.append(relax.VarBinding(b.var, _subst(b.value, vmap, gmap)))
            blocks.append(relax.DataflowBlock(bs) if isinstance(blk, relax.DataflowBlock) else relax.BindingBlock(bs))
        return relax.SeqExpr(blocks, _subst(e.body, vmap, gmap))
    if isinstance(e, relax.Function):
        return relax.Function(e.params, _subst(e.body, vmap, gmap), e.ret_ty, e.is_pure, e.attrs)
    return e


def _redirect(mod, old: relax.GlobalVar, new: relax.GlobalVar, skip=()):
    """Every reference to `old` in every Relax function (but those in `skip`) names `new`."""
    out = mod
    for gv, f in _funcs(mod):
        if gv in skip or gv.same_as(old):
            continue
        if not _mentions(f, old):
            continue
        g = relax.Function(f.params, _subst(f.body, {}, {old: new}), f.ret_ty, f.is_pure, f.attrs)
        out = _with_func(out, gv, relax.BlockBuilder(out).normalize(g))
    return out


def _mentions(func, gv) -> bool:
    found = []

    def visit(e):
        if isinstance(e, relax.GlobalVar) and e.same_as(gv):
            found.append(e)
    relax.analysis.post_order_visit(func.body, visit)
    return bool(found)


def _fresh_name(mod, base: str) -> str:
    names = {g.name_hint for g, _ in mod.functions_items()}
    i = 0
    while f"{base}{i}" in names:
        i += 1
    return f"{base}{i}"


def _add_func(mod, func, base):
    """Add `func` as a new global. BlockBuilder.add_func returns the GlobalVar of an existing
    structurally equal function instead of adding a new one (outlining all of f's body would
    then make f call itself), so the new function carries an attribute naming it."""
    name = _fresh_name(mod, base)
    bb = relax.BlockBuilder(mod)
    gv = bb.add_func(func.with_attr("hirfuzz_mutant", name), name)
    return bb.get(), gv


def _without_attrs(f: relax.Function) -> relax.Function:
    return relax.Function(f.params, f.body, f.ret_ty, f.is_pure)


# --- HIRGen function rewrites ----------------------------------------------------------------

def _callees(mod):
    """Global Relax functions other than main that some function refers to."""
    out = []
    funcs = _funcs(mod)
    for gv, f in funcs:
        if gv.name_hint == "main" or f.attrs and "global_symbol" in f.attrs:
            continue
        if any(_mentions(h, gv) for g2, h in funcs if not g2.same_as(gv)):
            out.append(gv)
    return out


def _fresh_params(f):
    return [relax.Var(p.name, p.ty) for p in f.params]


def _func_to_closure(mod, f_gv, rng):
    f = mod[f_gv]
    params = _fresh_params(f)
    local = relax.Var("local_" + f_gv.name_hint, f.ty)
    r = relax.Var("r", f.ret_ty)
    body = relax.SeqExpr([relax.BindingBlock([relax.VarBinding(local, _without_attrs(f)),
                                              relax.VarBinding(r, relax.Call(local, params))])], r)
    g = relax.BlockBuilder(mod).normalize(relax.Function(params, body, f.ret_ty, f.is_pure))
    mod, g_gv = _add_func(mod, g, f_gv.name_hint + "_cl")
    mod = _redirect(mod, f_gv, g_gv, skip=(g_gv,))
    funcs = {gv: fn for gv, fn in mod.functions_items() if not gv.same_as(f_gv)}
    return tvm.IRModule(funcs, attrs=mod.attrs)


def _call_wrap(mod, f_gv, rng):
    f = mod[f_gv]
    params = _fresh_params(f)
    r = relax.Var("r", f.ret_ty)
    body = relax.SeqExpr([relax.BindingBlock([relax.VarBinding(r, relax.Call(f_gv, params))])], r)
    g = relax.BlockBuilder(mod).normalize(relax.Function(params, body, f.ret_ty, f.is_pure))
    mod, g_gv = _add_func(mod, g, f_gv.name_hint + "_call")
    return _redirect(mod, f_gv, g_gv, skip=(g_gv,))


def _top_calls(mod, f_gv):
    return _bindings(mod, lambda b, blk, f: isinstance(b.value, relax.Call) and b.value.op.same_as(f_gv))


def _wrap_return_sites(mod):
    return [gv for gv in _callees(mod) if _top_calls(mod, gv)]


def _wrap_return(mod, f_gv, rng):
    g = relax.BlockBuilder(mod).normalize(relax.Function([], relax.SeqExpr([], f_gv), mod[f_gv].ty, True))
    mod, g_gv = _add_func(mod, g, "get_" + f_gv.name_hint)
    # rewrite call sites from the last, so earlier site indices stay valid
    for site in reversed(_top_calls(mod, f_gv)):
        def build(emit, b):
            h = emit(relax.Call(g_gv, []), name="fn")
            emit(relax.Call(h, list(b.value.args)), var=b.var)
        mod = _replace_binding(mod, site, build)
    return mod


_register("func_to_closure", _callees, _func_to_closure)
_register("wrap_return", _wrap_return_sites, _wrap_return)
_register("call_wrap", _callees, _call_wrap)


# --- PolyJuice algebraic rules ---------------------------------------------------------------

COMMUTATIVE = {"relax.add", "relax.multiply", "relax.maximum", "relax.minimum", "relax.equal",
               "relax.not_equal", "relax.logical_and", "relax.logical_or", "relax.logical_xor",
               "relax.bitwise_and", "relax.bitwise_or", "relax.bitwise_xor"}
ASSOCIATIVE = {"relax.add", "relax.multiply", "relax.maximum", "relax.minimum"}

ELEMENTWISE = {
    "relax.abs", "relax.negative", "relax.exp", "relax.log", "relax.sqrt", "relax.rsqrt", "relax.sin",
    "relax.cos", "relax.tan", "relax.tanh", "relax.sigmoid", "relax.floor", "relax.ceil", "relax.round",
    "relax.sign", "relax.square", "relax.logical_not", "relax.bitwise_not", "relax.astype", "relax.clip",
    "relax.isfinite", "relax.isinf", "relax.isnan", "relax.erf", "relax.nn.relu", "relax.nn.gelu",
    "relax.nn.silu", "relax.nn.leakyrelu", "relax.nn.relu6", "relax.trunc", "relax.asin", "relax.acos",
    "relax.atan", "relax.sinh", "relax.cosh", "relax.asinh", "relax.acosh", "relax.atanh",
    "relax.add", "relax.subtract", "relax.multiply", "relax.divide", "relax.floor_divide", "relax.power",
    "relax.maximum", "relax.minimum", "relax.equal", "relax.not_equal", "relax.less", "relax.less_equal",
    "relax.greater", "relax.greater_equal", "relax.logical_and", "relax.logical_or", "relax.logical_xor",
    "relax.bitwise_and", "relax.bitwise_or", "relax.bitwise_xor", "relax.left_shift", "relax.right_shift",
    "relax.where", "relax.floor_mod", "relax.mod",
}


def _dtype_of(e) -> str | None:
    st = _static_tensor(e.ty)
    return st[1] if st else None


def _block_defs(blk, upto: int) -> dict:
    """Var -> value for the VarBindings of `blk` before position `upto`."""
    return {b.var: b.value for b in list(blk.bindings)[:upto] if isinstance(b, relax.VarBinding)}


def _commute_sites(mod):
    return _bindings(mod, lambda b, blk, f: _op_name(b.value) in COMMUTATIVE and len(b.value.args) == 2)


def _commute(mod, site, rng):
    def build(emit, b):
        c = b.value
        emit(relax.Call(c.op, [c.args[1], c.args[0]], c.attrs, c.ty_args), var=b.var)
    return _replace_binding(mod, site, build)


def _assoc_operand(b, blk, ii):
    """(side, inner call) when an operand of `b` is bound in the same block to the same op."""
    c = b.value
    name = _op_name(c)
    if name not in ASSOCIATIVE or len(c.args) != 2 or not _static_tensor(b.var.ty):
        return None
    dt = _dtype_of(b.var)
    if dt in ("bool", None) or (dt == "float16" and name == "relax.multiply"):
        return None
    defs = _block_defs(blk, ii)
    for side in (0, 1):
        v = defs.get(c.args[side]) if isinstance(c.args[side], relax.Var) else None
        if v is not None and _op_name(v) == name and len(v.args) == 2:
            return side, v
    return None


def _reassoc_sites(mod):
    out = []
    for gv, bi, ii in _bindings(mod, lambda b, blk, f: _op_name(b.value) in ASSOCIATIVE):
        if _assoc_operand(mod[gv].body.blocks[bi].bindings[ii], mod[gv].body.blocks[bi], ii):
            out.append((gv, bi, ii))
    return out


def _reassoc(mod, site, rng):
    gv, bi, ii = site
    blk = mod[gv].body.blocks[bi]

    def build(emit, b):
        side, inner = _assoc_operand(b, blk, ii)
        c = b.value
        a, bb_ = inner.args
        other = c.args[1 - side]
        op = c.op
        if side == 0:   # (a op b) op y  ->  a op (b op y)
            u = emit(relax.Call(op, [bb_, other], c.attrs), name="ra")
            emit(relax.Call(op, [a, u], c.attrs), var=b.var)
        else:           # x op (a op b)  ->  (x op a) op b
            u = emit(relax.Call(op, [other, a], c.attrs), name="ra")
            emit(relax.Call(op, [u, bb_], c.attrs), var=b.var)
    return _replace_binding(mod, site, build)


_CONST_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64")


def _const_add(b):
    c = b.value
    if _op_name(c) != "relax.add" or len(c.args) != 2:
        return None
    for side in (0, 1):
        k = c.args[side]
        if isinstance(k, _Constant) and str(k.value.dtype) in _CONST_DTYPES:
            return side, k
    return None


def _const_split_sites(mod):
    return _bindings(mod, lambda b, blk, f: _const_add(b) is not None)


def _const_split(mod, site, rng):
    def build(emit, b):
        side, k = _const_add(b)
        x = b.value.args[1 - side]
        value = k.value.numpy()
        dt = value.dtype
        if dt.kind == "f":
            part = rng.uniform(-2, 2, size=value.shape).astype(dt)
        else:
            part = rng.integers(0, 5, size=value.shape).astype(dt)
        with np.errstate(over="ignore"):
            rest = np.asarray(np.subtract(value, part, dtype=dt))  # wraps for integers: exact
        u = emit(relax.op.add(x, relax.const(part, str(dt))), name="cs")
        emit(relax.op.add(u, relax.const(rest, str(dt))), var=b.var)
    return _replace_binding(mod, site, build)


def _const_merge_match(b, blk, ii):
    got = _const_add(b)
    if got is None:
        return None
    side, k2 = got
    u = b.value.args[1 - side]
    inner = _block_defs(blk, ii).get(u) if isinstance(u, relax.Var) else None
    if inner is None:
        return None
    got1 = _const_add(relax.VarBinding(u, inner))
    if got1 is None or str(got1[1].value.dtype) != str(k2.value.dtype):
        return None
    return inner.args[1 - got1[0]], got1[1], k2


def _const_merge_sites(mod):
    out = []
    for gv, bi, ii in _const_split_sites(mod):
        blk = mod[gv].body.blocks[bi]
        if _const_merge_match(blk.bindings[ii], blk, ii):
            out.append((gv, bi, ii))
    return out


def _const_merge(mod, site, rng):
    gv, bi, ii = site
    blk = mod[gv].body.blocks[bi]

    def build(emit, b):
        x, k1, k2 = _const_merge_match(b, blk, ii)
        a, c = k1.value.numpy(), k2.value.numpy()
        with np.errstate(over="ignore"):
            merged = np.asarray(np.add(a, c, dtype=a.dtype))
        emit(relax.op.add(x, relax.const(merged, str(a.dtype))), var=b.var)
    return _replace_binding(mod, site, build)


def _distribute_match(b, blk, ii):
    c = b.value
    if _op_name(c) != "relax.multiply" or len(c.args) != 2:
        return None
    dt = _dtype_of(b.var)
    if dt in (None, "bool", "float16"):
        return None
    defs = _block_defs(blk, ii)
    for side in (0, 1):
        s = defs.get(c.args[side]) if isinstance(c.args[side], relax.Var) else None
        if s is not None and _op_name(s) == "relax.add" and len(s.args) == 2:
            return side, s
    return None


def _distribute_sites(mod):
    out = []
    for gv, bi, ii in _bindings(mod, lambda b, blk, f: _op_name(b.value) == "relax.multiply"):
        blk = mod[gv].body.blocks[bi]
        if _distribute_match(blk.bindings[ii], blk, ii):
            out.append((gv, bi, ii))
    return out


def _distribute(mod, site, rng):
    gv, bi, ii = site
    blk = mod[gv].body.blocks[bi]

    def build(emit, b):
        side, s = _distribute_match(b, blk, ii)
        other = b.value.args[1 - side]
        m1 = emit(relax.op.multiply(s.args[0], other), name="d")
        m2 = emit(relax.op.multiply(s.args[1], other), name="d")
        emit(relax.op.add(m1, m2), var=b.var)
    return _replace_binding(mod, site, build)


_register("commute", _commute_sites, _commute)
_register("reassociate", _reassoc_sites, _reassoc)
_register("const_split", _const_split_sites, _const_split)
_register("const_merge", _const_merge_sites, _const_merge)
_register("distribute", _distribute_sites, _distribute)


# --- PolyJuice structural rules --------------------------------------------------------------

def _elementwise_site(b, min_rank=1):
    c = b.value
    if _op_name(c) not in ELEMENTWISE:
        return False
    st = _static_tensor(b.var.ty)
    if st is None or len(st[0]) < min_rank:
        return False
    for a in c.args:
        sa = _static_tensor(a.ty) if hasattr(a, "ty") else None
        if sa is None or len(sa[0]) > len(st[0]):
            return False
    return True


def _transpose_sites(mod):
    return _bindings(mod, lambda b, blk, f: _elementwise_site(b, 2))


def _transpose_pair(mod, site, rng):
    def build(emit, b):
        c = b.value
        shape, _ = _static_tensor(b.var.ty)
        r = len(shape)
        perm = [int(i) for i in rng.permutation(r)]
        if perm == list(range(r)):
            perm = perm[1:] + perm[:1]
        args = []
        for a in c.args:
            sa, _ = _static_tensor(a.ty)
            if len(sa) == 0:
                args.append(a)  # a scalar broadcasts the same either way
                continue
            if len(sa) < r:
                a = emit(relax.op.reshape(a, [1] * (r - len(sa)) + sa), name="tp")
            args.append(emit(relax.op.permute_dims(a, perm), name="tp"))
        t = emit(relax.Call(c.op, args, c.attrs, c.ty_args), name="tp")
        emit(relax.op.permute_dims(t, [int(i) for i in np.argsort(perm)]), var=b.var)
    return _replace_binding(mod, site, build)


def _concat_split_sites(mod):
    return _bindings(mod, lambda b, blk, f: _op_name(b.value) is not None
                     and (_static_tensor(b.var.ty) or [[]])[0] != [])


def _concat_split(mod, site, rng):
    def build(emit, b):
        shape, _ = _static_tensor(b.var.ty)
        axis = int(rng.integers(len(shape)))
        t = emit(b.value, name="cs")
        cat = emit(relax.op.concat([t, t], axis=axis), name="cs")
        parts = emit(relax.op.split(cat, 2, axis=axis), name="cs")
        emit(relax.TupleGetItem(parts, int(rng.integers(2))), var=b.var)
    return _replace_binding(mod, site, build)


def _matmul_sites(mod):
    def ok(b, blk, f):
        if _op_name(b.value) != "relax.matmul":
            return False
        shapes = [_static_tensor(a.ty) for a in b.value.args]
        return all(s is not None and len(s[0]) >= 2 for s in shapes) and _static_tensor(b.var.ty) is not None
    return _bindings(mod, ok)


def _swap_last(rank):
    return list(range(rank - 2)) + [rank - 1, rank - 2]


def _matmul_transpose(mod, site, rng):
    def build(emit, b):
        c = b.value
        x, y = c.args
        xt = emit(relax.op.permute_dims(x, _swap_last(len(_static_tensor(x.ty)[0]))), name="mt")
        yt = emit(relax.op.permute_dims(y, _swap_last(len(_static_tensor(y.ty)[0]))), name="mt")
        t = emit(relax.Call(c.op, [yt, xt], c.attrs, c.ty_args), name="mt")
        emit(relax.op.permute_dims(t, _swap_last(len(_static_tensor(b.var.ty)[0]))), var=b.var)
    return _replace_binding(mod, site, build)


def _returned_vars(func):
    body = func.body.body
    fields = body.fields if isinstance(body, relax.Tuple) else [body]
    return [f for f in fields if isinstance(f, relax.Var)]


def _expose_sites(mod):
    out = []
    for gv, bi, ii in _bindings(mod, lambda b, blk, f: _static_tensor(b.var.ty) is not None, main_only=True):
        f = mod[gv]
        b = f.body.blocks[bi].bindings[ii]
        if not any(v.same_as(b.var) for v in _returned_vars(f)):
            out.append((gv, bi, ii))
    return out


def _expose_output(mod, site, rng):
    """An intermediate of main becomes an extra result, appended after the existing ones."""
    gv, bi, ii = site
    func = mod[gv]
    blocks = list(func.body.blocks)
    blk = blocks[bi]
    var = blk.bindings[ii].var
    if isinstance(blk, relax.DataflowBlock):
        out = relax.Var("exposed", var.ty)
        blocks[bi] = relax.DataflowBlock(list(blk.bindings) + [relax.VarBinding(out, var)])
    else:
        out = var
    body = func.body.body
    if isinstance(body, relax.Tuple):
        fields = list(body.fields)
    elif isinstance(body.ty, relax.TupleType):
        items = [relax.Var(f"res{i}", t) for i, t in enumerate(body.ty.fields)]
        blocks.append(relax.BindingBlock([relax.VarBinding(v, relax.TupleGetItem(body, i))
                                          for i, v in enumerate(items)]))
        fields = items
    else:
        fields = [body]
    fields = fields + [out]
    return _rebuild(mod, gv, func, blocks, relax.Tuple(fields), relax.TupleType([f.ty for f in fields]))


def _resolve_sites(mod):
    def ok(b, blk, f):
        if not _elementwise_site(b, 1):
            return False
        return max(_static_tensor(b.var.ty)[0]) >= 2
    return _bindings(mod, ok)


def _resolve(mod, site, rng):
    """Operator resolution: the op on parts of its operands along one axis, concatenated."""
    def build(emit, b):
        c = b.value
        shape, _ = _static_tensor(b.var.ty)
        r = len(shape)
        axes = [i for i, d in enumerate(shape) if d >= 2]
        axis = axes[int(rng.integers(len(axes)))]
        d = shape[axis]
        k = int(rng.integers(1, min(d - 1, 3) + 1))
        cuts = sorted(int(i) for i in rng.choice(np.arange(1, d), size=k, replace=False))
        per_arg = []
        for a in c.args:
            sa, _ = _static_tensor(a.ty)
            ax = axis - (r - len(sa))
            if ax >= 0 and sa[ax] == d:
                s = emit(relax.op.split(a, cuts, axis=ax), name="rs")
                per_arg.append([emit(relax.TupleGetItem(s, j), name="rs") for j in range(k + 1)])
            else:
                per_arg.append([a] * (k + 1))
        parts = [emit(relax.Call(c.op, [p[j] for p in per_arg], c.attrs, c.ty_args), name="rs")
                 for j in range(k + 1)]
        emit(relax.op.concat(parts, axis=axis), var=b.var)
    return _replace_binding(mod, site, build)


_register("transpose_pair", _transpose_sites, _transpose_pair)
_register("concat_split", _concat_split_sites, _concat_split)
_register("matmul_transpose", _matmul_sites, _matmul_transpose)
_register("expose_output", _expose_sites, _expose_output)
_register("resolve", _resolve_sites, _resolve)


# --- TorchProbe: functionalization (outlining), inlining, always-true conditionals -----------

def _outlinable(b) -> bool:
    if not isinstance(b, relax.VarBinding) or not _static(b.var.ty):
        return False
    v = b.value
    if not (_op_name(v) is not None or isinstance(v, (relax.Tuple, relax.TupleGetItem))):
        return False
    return all(_static(u.ty) for u in relax.analysis.free_vars(v))


def _outline_sites(mod):
    return _bindings(mod, lambda b, blk, f: _outlinable(b))


def _outline(mod, site, rng, local: bool):
    gv, bi, i = site
    func = mod[gv]
    blocks = list(func.body.blocks)
    blk = blocks[bi]
    bindings = list(blk.bindings)
    j = i
    while j + 1 < len(bindings) and _outlinable(bindings[j + 1]) and rng.random() < 0.7:
        j += 1
    rng_b = bindings[i:j + 1]
    defined = [b.var for b in rng_b]
    inputs = []
    for b in rng_b:
        for u in relax.analysis.free_vars(b.value):
            if not any(u.same_as(d) for d in defined) and not any(u.same_as(x) for x in inputs):
                inputs.append(u)
    rest = relax.SeqExpr([relax.BindingBlock(bindings[j + 1:])] + blocks[bi + 1:], func.body.body)
    used_after = relax.analysis.free_vars(rest)
    outs = [d for d in defined if any(d.same_as(u) for u in used_after)]
    if not outs:
        outs = [defined[-1]]
    params = [relax.Var(f"a{k}", u.ty) for k, u in enumerate(inputs)]
    vmap = dict(zip(inputs, params))
    inner = []
    for b in rng_b:
        nv = relax.Var(b.var.name, b.var.ty)
        inner.append(relax.VarBinding(nv, _subst(b.value, vmap)))
        vmap[b.var] = nv
    ret = [vmap[o] for o in outs]
    ret_expr = ret[0] if len(ret) == 1 else relax.Tuple(ret)
    ret_ty = ret[0].ty if len(ret) == 1 else relax.TupleType([r.ty for r in ret])
    new_f = relax.BlockBuilder(mod).normalize(
        relax.Function(params, relax.SeqExpr([relax.BindingBlock(inner)], ret_expr), ret_ty, True))
    if not local:
        mod, callee = _add_func(mod, new_f, "outlined")
        func = mod[gv]
    df = isinstance(blk, relax.DataflowBlock)
    emit = _Emit(mod, df)
    if local:
        callee = emit(new_f, name="outlined")
    call = relax.Call(callee, list(inputs))
    if len(outs) == 1:
        emit(call, var=outs[0])
    else:
        r = emit(call, name="ol")
        for k, o in enumerate(outs):
            emit(relax.TupleGetItem(r, k), var=o)
    new_bindings = bindings[:i] + emit.out + bindings[j + 1:]
    blocks[bi] = relax.DataflowBlock(new_bindings) if df else relax.BindingBlock(new_bindings)
    return _rebuild(mod, gv, func, blocks)


def _inlinable_callee(mod, value):
    if not isinstance(value, relax.Call) or not isinstance(value.op, relax.GlobalVar):
        return None
    if value.op.name_hint == "main":
        return None
    f = mod[value.op]
    if not isinstance(f, relax.Function) or not isinstance(f.body, relax.SeqExpr):
        return None
    for blk in f.body.blocks:
        for b in blk.bindings:
            if not isinstance(b, relax.VarBinding):
                return None
            v = b.value
            if isinstance(v, (relax.Function, relax.If)) or not _static(b.var.ty):
                return None
            if isinstance(v, relax.Call) and not isinstance(v.op, (tvm.ir.Op, relax.GlobalVar)):
                return None
    if not isinstance(f.body.body, (relax.Var, relax.Tuple)):
        return None
    return f


def _inline_sites(mod):
    return _bindings(mod, lambda b, blk, f: _inlinable_callee(mod, b.value) is not None)


def _inline_call(mod, site, rng):
    def build(emit, b):
        f = _inlinable_callee(mod, b.value)
        vmap = dict(zip(f.params, b.value.args))
        for blk in f.body.blocks:
            for ib in blk.bindings:
                vmap[ib.var] = emit(_subst(ib.value, vmap), name=ib.var.name)
        emit(_subst(f.body.body, vmap), var=b.var)
    return _replace_binding(mod, site, build)


def _if_sites(mod):
    def ok(b, blk, f):
        return (not isinstance(blk, relax.DataflowBlock) and _op_name(b.value) is not None
                and _static_tensor(b.var.ty) is not None)
    return _bindings(mod, ok)


def _always_true_if(mod, site, rng):
    """`v = call` in a plain block becomes `v = call if sum(shape(x)) >= rank(x) else zeros`."""
    def build(emit, b):
        shape, dtype = _static_tensor(b.var.ty)
        ranked = [a for a in b.value.args if (_static_tensor(getattr(a, "ty", None)) or [[]])[0]]
        if ranked:
            x = ranked[int(rng.integers(len(ranked)))]
            rank = len(_static_tensor(x.ty)[0])
            s = emit(relax.op.shape_of(x), name="c")
            t = emit(relax.op.shape_to_tensor(s), name="c")
            total = emit(relax.op.sum(t), name="c")
            cond = emit(relax.op.greater_equal(total, relax.const(rank, "int64")), name="c")
        else:
            cond = relax.const(True, "bool")
        emit(relax.If(cond, relax.SeqExpr([], b.value), relax.SeqExpr([], relax.op.zeros(shape, dtype))),
             var=b.var)
    return _replace_binding(mod, site, build)


_register("outline_closure", _outline_sites, lambda m, s, r: _outline(m, s, r, True))
_register("outline_global", _outline_sites, lambda m, s, r: _outline(m, s, r, False))
_register("inline_call", _inline_sites, _inline_call)
_register("always_true_if", _if_sites, _always_true_if)
