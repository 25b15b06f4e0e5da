"""IR helpers shared by the Relax mutators, and the build precondition (`prepare_for_build`).

Sites are bindings at the top level of a global Relax function's body, named
(global var, block index, binding index); `_replace_binding` swaps one for new bindings,
normalised one at a time (ANF). `has_trait` reads an op's traits (spec.TRAITS) from the
case's table: dialect op name ("add", "nn.relu") -> traits; the module calls it
"relax.add". An op missing from the table has none, so it is never rewritten.
"""
from __future__ import annotations

import tvm
from tvm import relax

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



def _dtype_of(e) -> str | None:
    st = _static_tensor(e.ty)
    return st[1] if st else None


def _matched_sites(mod, pred, match):
    """Sites whose binding satisfies `pred(binding, block, func)` and where
    `match(binding, block, index)` finds its pattern (among the block's earlier bindings)."""
    out = []
    for gv, bi, ii in _bindings(mod, pred):
        blk = mod[gv].body.blocks[bi]
        if match(blk.bindings[ii], blk, ii):
            out.append((gv, bi, ii))
    return out


def _replace_matched(mod, site, match, build):
    """`_replace_binding` where `build(emit, binding, found)` also gets what `match` found."""
    gv, bi, ii = site
    blk = mod[gv].body.blocks[bi]
    return _replace_binding(mod, site, lambda emit, b: build(emit, b, match(b, blk, ii)))


def _block_defs(blk, upto: int) -> dict:
    """Var -> value for the VarBindings of `blk` before position `upto`."""
    return {b.var: b.value for b in list(blk.bindings)[:upto] if isinstance(b, relax.VarBinding)}


def has_trait(traits: dict, value, trait: str) -> bool:
    """Is `value` a call of a Relax op that has `trait` in the case's traits table?"""
    name = _op_name(value)
    return name is not None and name.startswith("relax.") and trait in traits.get(name[len("relax."):], ())
