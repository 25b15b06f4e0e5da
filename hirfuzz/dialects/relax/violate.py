"""A disruptive case's violating call added to a lowered Relax module (in workers).

Plain TVM code, imported lazily: `repro.py` copies this function's source verbatim into
reproducers, so the script builds exactly what the worker built.
"""
from __future__ import annotations


def apply_violation(mod, plan):
    """Add the violating call: `main` becomes `main_valid`, and a new `main` calls it."""
    from tvm import relax
    valid = mod["main"].with_attr("global_symbol", "main_valid")
    bb = relax.BlockBuilder()
    main_valid = bb.add_func(valid, "main_valid")
    params = [relax.Var(p.name, p.ty) for p in valid.params]
    lie = plan["lie"]
    if lie is not None:
        declared = valid.params[lie["param"]].ty
        params[lie["param"]] = relax.Var("lied", relax.TensorType(ndim=len(declared.shape), dtype=declared.dtype))
    with bb.function("main", params):
        args = list(params)
        if lie is not None:
            args[lie["param"]] = bb.match_cast(params[lie["param"]], valid.params[lie["param"]].ty)
        n = plan["n_results"]
        results = []
        if n:  # an empty valid part is not called: TVM 0.27's VM dies running a call whose
            # empty-tuple result is dropped (InternalError "reg < frame->register_file.size()"),
            # which would stand for whatever TVM does with the violation
            out = bb.emit(relax.Call(main_valid, args))
            results = [out] if n == 1 else [bb.emit(relax.TupleGetItem(out, i)) for i in range(n)]

        used = []  # the tensors the call reads, in order: a function's parameters when wrapped

        def decode(a, inner):
            if isinstance(a, dict):
                return [decode(x, inner) for x in a["list"]] if "list" in a else a["value"]
            value = args[a[1]] if a[0] == "param" else results[a[1]]
            if inner is None:
                return value
            if not any(value.same_as(u) for u, _ in used):
                used.append((value, relax.Var(f"a{len(used)}", value.ty)))
            return next(p for u, p in used if value.same_as(u))

        def violating_call(inner):
            fn = relax.op
            for part in plan["op"].split("."):
                fn = getattr(fn, part)
            call = fn(*[decode(a, inner) for a in plan["args"]], **plan["kwargs"])
            if plan["arity"]:
                call_args = list(call.args)
                call_args = call_args[:-1] if plan["arity"] < 0 else call_args + call_args[:1]
                call = relax.Call(call.op, call_args, call.attrs, call.ty_args)
            return call

        if plan.get("wrap") is None:
            bad = bb.emit(violating_call(None))
        else:
            call = violating_call(True)
            inner = relax.BlockBuilder()
            with inner.function("bad", [p for _, p in used], private=True):
                inner.emit_func_output(inner.emit(call))
            func = inner.get()["bad"]
            callee = bb.add_func(func, "bad") if plan["wrap"] == "global" else bb.emit(func, "bad")
            bad = bb.emit(relax.Call(callee, [u for u, _ in used]))
        bb.emit_func_output(relax.Tuple(results + [bad]) if n else bad)
    return bb.get()
