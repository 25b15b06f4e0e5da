"""Semantics-preserving rewrites of Relay modules: HIRGen's function rewrites (TVM 0.19).

HIRGen (section 3.3.2) rewrites a global function f three ways, each changing only the
call chain, so the mutant computes what the original does:

    closure_in_global   a new global g(params) binds f's body as a local closure and
                        returns its call; calls to f become calls to g
    wrap_in_nullary     a new global g() returns f; a call f(args) becomes g()(args)
    call_through        a new global g(params) returns f(params); calls to f become calls to g

They need a global function besides main; `outline_main` makes one where there is none
(main's body becomes a global f, and main returns f(params)). PolyJuice's ``commute``
swaps the two arguments of one call of an op whose traits (from the case's call
records: op name -> traits) say ``commutative``; an op not in that table is never
swapped. Every mutant is type-checked; a mutator whose result does not type-check is
hirfuzz's bug (the worker reports it so).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import tvm
from tvm import relay

MUTATORS: dict[str, Callable] = {}


def mutator(fn: Callable) -> Callable:
    """Register fn(mod, rng, traits) -> a mutant, or None where it does not apply."""
    MUTATORS[fn.__name__] = fn
    return fn


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


@mutator
def outline_main(mod: tvm.IRModule, rng: np.random.Generator, traits: dict) -> tvm.IRModule | None:
    main = mod["main"]
    new = copy_module(mod)
    f = relay.GlobalVar(fresh_name(new, "outlined"))
    params = fresh_params(main)
    new[f] = relay.Function(main.params, main.body, main.ret_type)
    new["main"] = relay.Function(params, relay.Call(f, params), main.ret_type)
    return _typed(new)


@mutator
def closure_in_global(mod: tvm.IRModule, rng: np.random.Generator, traits: dict) -> tvm.IRModule | None:
    return _rewrite_one(mod, rng, _closure_in_global)


@mutator
def wrap_in_nullary(mod: tvm.IRModule, rng: np.random.Generator, traits: dict) -> tvm.IRModule | None:
    return _rewrite_one(mod, rng, _wrap_in_nullary)


@mutator
def call_through(mod: tvm.IRModule, rng: np.random.Generator, traits: dict) -> tvm.IRModule | None:
    return _rewrite_one(mod, rng, _call_through)


def _rewrite_one(mod, rng, rewrite) -> tvm.IRModule | None:
    targets = callees(mod)
    if not targets:
        return None
    f = targets[int(rng.integers(len(targets)))]
    new = copy_module(mod)
    g = relay.GlobalVar(fresh_name(new, "g"))
    return _typed(rewrite(new, f, g))


def _closure_in_global(mod, f, g):
    func = mod[f]
    params = fresh_params(func)
    local = relay.Var("local_f")
    body = relay.Let(local, relay.Function(func.params, func.body, func.ret_type), relay.Call(local, params))
    redirect_calls(mod, f, lambda args: relay.Call(g, args))
    mod[g] = relay.Function(params, body, func.ret_type)
    return mod


def _wrap_in_nullary(mod, f, g):
    func = mod[f]
    func_type = relay.FuncType([p.type_annotation for p in func.params], func.ret_type)
    mod[g] = relay.Function([], f, func_type)
    return redirect_calls(mod, f, lambda args: relay.Call(relay.Call(g, []), args), skip=(g.name_hint,))


def _call_through(mod, f, g):
    func = mod[f]
    params = fresh_params(func)
    mod[g] = relay.Function(params, relay.Call(f, params), func.ret_type)
    return redirect_calls(mod, f, lambda args: relay.Call(g, args), skip=(g.name_hint,))


@mutator
def commute(mod: tvm.IRModule, rng: np.random.Generator, traits: dict) -> tvm.IRModule | None:
    calls = _commutative_calls(mod, traits)
    if not calls:
        return None
    gv, target = calls[int(rng.integers(len(calls)))]
    new = copy_module(mod)
    new[gv] = _Swap(target).visit(new[gv])
    return _typed(new)


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


def mutate(mod: tvm.IRModule, rng: np.random.Generator, count: int,
           traits: dict | None = None) -> tuple[tvm.IRModule, list[str]]:
    """`count` rewrites drawn among those that apply; the original is never changed.
    `traits`: op name -> its traits, from the case's call records (core.calls.op_traits)."""
    traits = traits or {}
    applied = []
    for _ in range(count):
        names = sorted(MUTATORS)
        rng.shuffle(names)
        for name in names:
            result = MUTATORS[name](mod, rng, traits)
            if result is not None:
                mod = result
                applied.append(name)
                break
    return mod, applied
