"""A disruptive case's violating call added to a lowered Relay module (in workers, TVM 0.19).

Plain TVM code, imported lazily: `repro.py` copies this function's source verbatim into
reproducers, so the script builds exactly what the worker built. Relay has no match_cast:
a "match-cast-lie" is a parameter declared with one shape and passed an array of another
at run time (the executor's own input check is what is tested).
"""
from __future__ import annotations


def apply_violation(mod, plan, relay_op):
    """Add the violating call: `main` becomes `main_valid`, and a new `main` calls it and
    returns its results followed by the violating call's. `relay_op` resolves the op name
    (composites included); type inference, where Relay checks calls, runs last."""
    import tvm
    from tvm import relay
    valid = mod["main"]
    main_valid = relay.GlobalVar("main_valid")
    mod = tvm.IRModule({**{gv: f for gv, f in mod.functions.items() if gv.name_hint != "main"},
                        main_valid: valid}, mod.type_definitions)
    params = [relay.var(p.name_hint, p.type_annotation) for p in valid.params]
    out = relay.Call(main_valid, params)
    n = plan["n_results"]
    results = [out] if n == 1 else [relay.TupleGetItem(out, i) for i in range(n)]
    ret = valid.checked_type.ret_type  # lowering ran type inference
    result_types = [ret] if n == 1 else list(ret.fields)[:n]
    used = []  # the tensors the call reads, in order: a function's parameters when wrapped

    def decode(a, inner):
        if isinstance(a, dict):
            return [decode(x, inner) for x in a["list"]] if "list" in a else a["value"]
        value = params[a[1]] if a[0] == "param" else results[a[1]]
        if not inner:
            return value
        if not any(value.same_as(u) for u, _ in used):
            ty = valid.params[a[1]].type_annotation if a[0] == "param" else result_types[a[1]]
            used.append((value, relay.var(f"a{len(used)}", ty)))
        return next(p for u, p in used if value.same_as(u))

    def violating_call(inner):
        call = relay_op(plan["op"])(*[decode(a, inner) for a in plan["args"]], **plan["kwargs"])
        if isinstance(call, relay.expr.TupleWrapper):
            call = call.astuple()
        if plan["arity"] and isinstance(call, relay.Call):
            args = list(call.args)
            args = args[:-1] if plan["arity"] < 0 else args + args[:1]
            call = relay.Call(call.op, args, call.attrs, call.type_args)
        return call

    if plan.get("wrap") is None:
        bad = violating_call(False)
    else:
        body = violating_call(True)
        func = relay.Function([p for _, p in used], body)
        if plan["wrap"] == "global":
            callee = relay.GlobalVar("bad")
            mod[callee] = func
            bad = relay.Call(callee, [u for u, _ in used])
        else:
            local = relay.var("bad")
            bad = relay.Let(local, func, relay.Call(local, [u for u, _ in used]))
    mod["main"] = relay.Function(params, relay.Tuple(results + [bad]) if n else bad)
    return relay.transform.InferType()(mod)
