"""Semantics-preserving rewrites of Relay modules: HIRGen's function rewrites (TVM 0.19).

Each follows the contract of dialects/mutation.py (`Mutator(name, sites, rewrite)`), under
the names the Relax mutators use for the same ideas. HIRGen (section 3.3.2) rewrites a
global function f three ways, each changing only the call chain, so the mutant computes
what the original does:

    func_to_closure   a new global g(params) binds f's body as a local closure and
                      returns its call; calls to f become calls to g
    wrap_return       a new global g() returns f; a call f(args) becomes g()(args)
    call_wrap         a new global g(params) returns f(params); calls to f become calls to g

They need a global function besides main; `outline_main` makes one where there is none
(main's body becomes a global f, and main returns f(params)). PolyJuice's ``commute``
swaps the two arguments of one call of an op whose traits (from the case's call
records: op name -> traits) say ``commutative``; an op not in that table is never
swapped. Every mutant is type-checked; a mutator whose result does not type-check is
hirfuzz's bug (the worker reports it so).
"""
from __future__ import annotations

from typing import Callable

import tvm
from tvm import relay

from ..mutation import MutatorRegistry
from .text import fresh_variables

REGISTRY = MutatorRegistry()
MUTATORS = REGISTRY.mutators
mutator = REGISTRY.mutator
mutate = REGISTRY.mutate


def copy_module(mod: tvm.IRModule) -> tvm.IRModule:
    return tvm.IRModule(dict(mod.functions), dict(mod.type_definitions), attrs=mod.attrs)


def fresh_name(mod: tvm.IRModule, prefix: str) -> str:
    taken = {gv.name_hint for gv in mod.get_global_vars()}
    i = 0
    while f"{prefix}{i}" in taken:
        i += 1
    return f"{prefix}{i}"


def callees(mod: tvm.IRModule) -> list[relay.GlobalVar]:
    """Global functions other than main, in a fixed order."""
    return sorted((gv for gv in mod.get_global_vars() if gv.name_hint != "main"), key=lambda gv: gv.name_hint)


def fresh_params(func: relay.Function) -> list[relay.Var]:
    return [relay.var(p.name_hint, p.type_annotation) for p in func.params]


class _RedirectCalls(relay.ExprMutator):
    """Every call of `target` becomes `make_call(args)`; other uses of it stay."""

    def __init__(self, target: relay.GlobalVar, make_call: Callable):
        super().__init__()
        self.target = target
        self.make_call = make_call

    def visit_call(self, call):
        new = super().visit_call(call)
        if isinstance(call.op, relay.GlobalVar) and call.op.same_as(self.target):
            return self.make_call(list(new.args))
        return new


def redirect_calls(mod: tvm.IRModule, target: relay.GlobalVar, make_call: Callable, skip=()) -> tvm.IRModule:
    for gv in list(mod.get_global_vars()):
        if gv.name_hint in skip or not isinstance(mod[gv], relay.Function):
            continue
        mod[gv] = _RedirectCalls(target, make_call).visit(mod[gv])
    return mod


def _typed(mod: tvm.IRModule) -> tvm.IRModule:
    return relay.transform.InferType()(mod)


def _main(mod: tvm.IRModule, traits: dict) -> list[relay.GlobalVar]:
    return [mod.get_global_var("main")]


@mutator("outline_main", _main, structural=True)
def _outline_main(mod: tvm.IRModule, main_gv, rng) -> tvm.IRModule:
    main = mod[main_gv]
    new = copy_module(mod)
    f = relay.GlobalVar(fresh_name(new, "outlined"))
    params = fresh_params(main)
    new[f] = relay.Function(main.params, main.body, main.ret_type)
    new["main"] = relay.Function(params, relay.Call(f, params), main.ret_type)
    return _typed(new)


def _callees(mod: tvm.IRModule, traits: dict) -> list[relay.GlobalVar]:
    return callees(mod)


def _through_new_global(rewrite: Callable) -> Callable:
    """The mutator's rewrite(mod, f, rng): `rewrite(copy, f, g)` on a copy of the module,
    g a new global."""
    def rewrite_copy(mod: tvm.IRModule, f: relay.GlobalVar, rng) -> tvm.IRModule:
        new = copy_module(mod)
        return _typed(rewrite(new, f, relay.GlobalVar(fresh_name(new, "g"))))
    return rewrite_copy


@mutator("func_to_closure", _callees, structural=True)
@_through_new_global
def _func_to_closure(mod, f, g):
    func = mod[f]
    params = fresh_params(func)
    local = relay.Var("local_f")
    closure = fresh_variables(relay.Function(func.params, func.body, func.ret_type))  # f stays in the module
    body = relay.Let(local, closure, relay.Call(local, params))
    redirect_calls(mod, f, lambda args: relay.Call(g, args))
    mod[g] = relay.Function(params, body, func.ret_type)
    return mod


@mutator("wrap_return", _callees, structural=True)
@_through_new_global
def _wrap_return(mod, f, g):
    func = mod[f]
    func_type = relay.FuncType([p.type_annotation for p in func.params], func.ret_type)
    mod[g] = relay.Function([], f, func_type)
    return redirect_calls(mod, f, lambda args: relay.Call(relay.Call(g, []), args), skip=(g.name_hint,))


@mutator("call_wrap", _callees, structural=True)
@_through_new_global
def _call_wrap(mod, f, g):
    func = mod[f]
    params = fresh_params(func)
    mod[g] = relay.Function(params, relay.Call(f, params), func.ret_type)
    return redirect_calls(mod, f, lambda args: relay.Call(g, args), skip=(g.name_hint,))


def _commutative_calls(mod, traits) -> list[tuple[relay.GlobalVar, relay.Call]]:
    """(function, call) for each call of a two-argument op with the commutative trait."""
    found = []
    for gv in callees(mod) + [mod.get_global_var("main")]:
        func = mod[gv]
        if not isinstance(func, relay.Function):
            continue

        def visit(e, gv=gv):
            if (isinstance(e, relay.Call) and isinstance(e.op, tvm.ir.Op) and len(e.args) == 2
                    and "commutative" in traits.get(e.op.name, ())):
                found.append((gv, e))
        relay.analysis.post_order_visit(func, visit)
    return found


@mutator("commute", _commutative_calls)
def _commute(mod: tvm.IRModule, site, rng) -> tvm.IRModule:
    gv, target = site
    new = copy_module(mod)
    new[gv] = _Swap(target).visit(new[gv])
    return _typed(new)


class _Swap(relay.ExprMutator):
    """The call `target` (every use of it: it is one node) with its two arguments swapped."""

    def __init__(self, target: relay.Call):
        super().__init__()
        self.target = target

    def visit_call(self, call):
        new = super().visit_call(call)
        if call.same_as(self.target):
            return relay.Call(new.op, [new.args[1], new.args[0]], new.attrs, new.type_args, new.span)
        return new

