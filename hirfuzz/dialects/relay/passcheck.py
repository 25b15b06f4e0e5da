"""Check the Relay pass catalog against TVM 0.19 (runs under the Relay environment only).

    python -m hirfuzz.dialects.relay.passcheck --check CATALOG.json [--only NAME,...]

CATALOG.json is the catalog as the coordinator loaded it (`[{name, args, requires,
establishes, preserves_results, import?, search_dir?}, ...]`: PyYAML is not in the Relay
environment). For every pass and each choice of each argument (the others at their first
choice), on each sample module: the passes that establish what it requires run first; the
input must not change; for passes that preserve results, the VM must give what it gives for
the original module. Prints one JSON line per case:
{"pass", "args", "sample", "status": ok | error | mutated | mismatch | skipped, "detail"}.
"""
from __future__ import annotations

import json
import sys
import traceback

import numpy as np
import tvm
from tvm import relay

from ...core.passes import argument_variants
from .passes import apply_passes, instantiate_pass

F32 = "float32"


# --- sample modules ------------------------------------------------------------------------------

def _const(shape, seed, dtype=F32):
    values = np.random.default_rng(seed).uniform(-1, 1, size=shape).astype(dtype)
    return relay.const(values, dtype=dtype)


def dataflow_module():
    """One dataflow main with the patterns the rewriting passes look for: parallel conv2d and
    dense branches, bias_add, batch_norm, dropout, pad before conv, a divide by a constant, a
    multiply by a constant after conv (scale folding), exp, a reshape with a constant shape."""
    x = relay.var("x", shape=(1, 3, 8, 8), dtype=F32)
    padded = relay.nn.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = lambda seed: relay.nn.conv2d(padded, _const((4, 3, 3, 3), seed), channels=4, kernel_size=(3, 3))
    y = relay.add(conv(1), conv(2))
    y = relay.multiply(y, _const((4, 1, 1), 3))
    y = relay.nn.bias_add(y, _const((4,), 4))
    y = relay.nn.batch_norm(y, _const((4,), 5), _const((4,), 6), _const((4,), 7),
                            relay.const(np.full((4,), 0.5, F32), dtype=F32))[0]
    y = relay.nn.dropout(relay.nn.relu(y), rate=0.5)
    y = relay.nn.max_pool2d(y, pool_size=(2, 2), strides=(2, 2))
    flat = relay.reshape(y, relay.const(np.array([1, 64], "int64"), dtype="int64"))  # dyn.reshape
    dense = lambda seed: relay.nn.dense(flat, _const((5, 64), seed))
    out = relay.divide(relay.exp(relay.add(dense(8), dense(9))), relay.const(4.0, F32))
    return tvm.IRModule.from_expr(relay.Function([x], out)), [_input((1, 3, 8, 8), 10)]


def global_call_module():
    """main calls two typed global functions.

    Neither is marked Inline=1: on TVM 0.19 the VM then fails to compile even the original
    module ("g is marked as inline but not inlined", inline.cc:205)."""
    mod = tvm.IRModule()
    a, b = relay.var("a", shape=(2, 3), dtype=F32), relay.var("b", shape=(2, 3), dtype=F32)
    ty = relay.TensorType((2, 3), F32)
    f = relay.GlobalVar("f")
    mod[f] = relay.Function([a, b], relay.add(relay.multiply(a, b), a), ret_type=ty)
    c = relay.var("c", shape=(2, 3), dtype=F32)
    g = relay.GlobalVar("g")
    mod[g] = relay.Function([c], relay.tanh(c), ret_type=ty)
    x, y = relay.var("x", shape=(2, 3), dtype=F32), relay.var("y", shape=(2, 3), dtype=F32)
    body = relay.subtract(relay.Call(f, [x, relay.Call(g, [y])]), relay.const(1.5, F32))
    mod["main"] = relay.Function([x, y], body, ret_type=ty)
    return mod, [_input((2, 3), 11), _input((2, 3), 12)]


def closure_module():
    """main binds a closure with let, calls it inside a tuple, and picks a field with If."""
    x = relay.var("x", shape=(3,), dtype=F32)
    cond = relay.var("cond", shape=(), dtype="bool")
    a = relay.var("a", shape=(3,), dtype=F32)
    g = relay.var("g")
    closure = relay.Function([a], relay.multiply(a, relay.const(2.0, F32)))
    t = relay.var("t")
    pair = relay.Tuple([relay.Call(g, [x]), relay.add(x, relay.const(1.0, F32))])
    pick = relay.If(cond, relay.TupleGetItem(t, 0), relay.TupleGetItem(t, 1))
    body = relay.Let(g, closure, relay.Let(t, pair, pick))
    inputs = [_input((3,), 13), tvm.nd.array(np.array(True))]
    return tvm.IRModule.from_expr(relay.Function([x, cond], body)), inputs


def _input(shape, seed):
    return tvm.nd.array(np.random.default_rng(seed).uniform(-1, 1, size=shape).astype(F32))


def pure_dataflow_module():
    """Dataflow without dropout or batch_norm, which have no gradient: for FirstOrderGradient."""
    x = relay.var("x", shape=(2, 4), dtype=F32)
    y = relay.nn.relu(relay.nn.dense(x, _const((3, 4), 14)))
    out = relay.sum(relay.multiply(relay.tanh(y), relay.const(0.5, F32)), axis=1)
    return tvm.IRModule.from_expr(relay.Function([x], out)), [_input((2, 4), 15)]


SAMPLES = {"dataflow": dataflow_module, "global-call": global_call_module, "closure": closure_module,
           "pure-dataflow": pure_dataflow_module}


# --- running and comparing -----------------------------------------------------------------------

def run_vm(mod, inputs) -> list[np.ndarray]:
    with tvm.transform.PassContext(opt_level=3):
        result = relay.create_executor("vm", mod=mod, device=tvm.cpu(0), target="llvm").evaluate()(*inputs)
    return _flatten(result)


def _flatten(value) -> list[np.ndarray]:
    if isinstance(value, (tvm.runtime.container.ADT, list, tuple)):
        return [array for item in value for array in _flatten(item)]
    return [value.numpy()]


def same_results(expected, actual) -> str | None:
    if len(expected) != len(actual):
        return f"{len(expected)} outputs before, {len(actual)} after"
    for i, (e, a) in enumerate(zip(expected, actual)):
        if e.shape != a.shape or e.dtype != a.dtype:
            return f"output {i}: {e.dtype}{list(e.shape)} before, {a.dtype}{list(a.shape)} after"
        if not np.allclose(e, a, rtol=1e-5, atol=1e-5, equal_nan=True):
            return f"output {i}: max difference {np.max(np.abs(e - a))}"
    return None


# --- cases ---------------------------------------------------------------------------------------

def prerequisites(entry: dict, catalog: list[dict]) -> list[dict]:
    """Steps establishing what the pass requires (the first catalog pass for each property)."""
    steps = []
    for prop in entry.get("requires", []):
        provider = next(e for e in catalog if prop in e.get("establishes", []))
        steps.append(step_for(provider, {k: v[0] for k, v in provider.get("args", {}).items()}))
    return steps


def step_for(entry: dict, args: dict) -> dict:
    step = {"name": entry["name"], "args": args}
    for key in ("import", "search_dir"):
        if entry.get(key):
            step[key] = entry[key]
    return step


def check_case(entry, args, catalog, sample_name, expected_cache) -> dict:
    case = {"pass": entry["name"], "args": args, "sample": sample_name}
    mod, inputs = SAMPLES[sample_name]()
    mod = relay.transform.InferType()(mod)
    before = mod.astext(show_meta_data=True)
    config = {"passes": prerequisites(entry, catalog) + [step_for(entry, args)], "opt_level": 2}
    try:
        out = apply_passes(mod, config)
    except Exception as exc:  # a pass that raises is what the test reports
        return {**case, "status": "error", "detail": _short(exc)}
    if mod.astext(show_meta_data=True) != before:
        return {**case, "status": "mutated", "detail": "apply_passes changed its input module"}
    if not entry.get("preserves_results", True):
        return {**case, "status": "ok", "detail": "ran (results may change by design)"}
    try:
        if sample_name not in expected_cache:
            expected_cache[sample_name] = run_vm(mod, inputs)
        if tvm.ir.structural_equal(out, mod):  # unchanged: nothing new to run
            return {**case, "status": "ok", "detail": "module unchanged"}
        actual = run_vm(out, inputs)
    except Exception as exc:
        return {**case, "status": "error", "detail": "running the result: " + _short(exc)}
    why = same_results(expected_cache[sample_name], actual)
    return {**case, "status": "mismatch" if why else "ok", "detail": why or ""}


def check_instantiation(entry, args) -> dict:
    case = {"pass": entry["name"], "args": args, "sample": None}
    try:
        instantiate_pass(step_for(entry, args))
    except Exception as exc:
        return {**case, "status": "error", "detail": _short(exc)}
    return {**case, "status": "ok", "detail": ""}


def _short(exc) -> str:
    text = str(exc).strip().splitlines()
    tail = [line for line in text if line.strip()][-3:]
    return f"{type(exc).__name__}: " + " | ".join(tail)[:600]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2 or argv[0] != "--check":
        sys.exit("usage: python -m hirfuzz.dialects.relay.passcheck --check CATALOG.json [--only A,B]")
    catalog = json.loads(open(argv[1]).read())
    only = set(argv[argv.index("--only") + 1].split(",")) if "--only" in argv else None
    expected: dict = {}
    for entry in catalog:
        if only and entry["name"] not in only:
            continue
        for args in argument_variants(entry.get("args", {})):
            print(json.dumps(check_instantiation(entry, args)), flush=True)
            for sample in SAMPLES:
                try:
                    result = check_case(entry, args, catalog, sample, expected)
                except Exception:
                    result = {"pass": entry["name"], "args": args, "sample": sample, "status": "error",
                              "detail": "check itself failed: " + traceback.format_exc()[-600:]}
                print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
