"""Relax's autodiff against finite differences (issue 27): hirfuzz graphs of ops that have
a gradient, their float results summed into one scalar, differentiated by
`relax.transform.Gradient("main")`, built on llvm, and each input's gradient compared with a
central finite difference of hirfuzz's NumPy reference of the same graph, in float64.

Gradient's contract (its docstring, src/relax/transform/gradient.cc): `main` returns a float
scalar, holds one dataflow block, calls no other function, and every op in it registers
FPrimalGradient; only float parameters are asked for (`require_grads`), less those reaching an
input TVM declares without a gradient. Programs outside it are counted, never judged.

The comparison is gradcheck's: an element is judged only where the function is smooth
around it, that is where the central differences at steps h and h/10 agree closely, and
the one-sided differences (forward, backward) agree with them; elsewhere it is skipped
(a kink, a tie, a step). The reference is the graph with every float16/float32 tensor
made float64, so the differences carry no float32 rounding.

    python tools/gradient_check.py --cases 300 --dtype float64 --out /tmp/grad-out

Each case's outcome: ok; out-of-contract; gradient, build or run (that stage failed); shape
(a gradient whose shape is not its parameter's); wrong (values); died (the worker process).
A failure showing one of KNOWN_BUGS is counted under its name (`--avoid-known` draws none of
their constructs, to look for new ones); the others are printed, and saved with `--out`;
`reduce_case` shrinks one to the fewest operators that still fail so.

The finite differences and their judgement are hirfuzz.core.gradients; Gradient's contract
and the ops it differentiates, hirfuzz.dialects.relax.gradients; the loss program and its
differentiation, hirfuzz.dialects.relax (lower.lower_loss, passes.differentiate): what the
gradient oracle of campaigns (`--gradients`, campaign/oracles/gradient.py) runs too.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import re
import sys
import time
import traceback
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hirfuzz.core.calls import call_records  # noqa: E402
from hirfuzz.core.coverage import Coverage  # noqa: E402
from hirfuzz.core.generate import generate_graph  # noqa: E402
from hirfuzz.core.gradients import (GRAD, check_gradient, differentiated_positions, float_results,  # noqa: E402
                                    float_variables, precision_of, reference_loss, widened, widened_values)
from hirfuzz.core.graph import Graph, Node, Ref  # noqa: E402
from hirfuzz.core.inputs import choose_inputs  # noqa: E402
from hirfuzz.core.spec import load_specs  # noqa: E402
from hirfuzz.dialects.relax.gradients import DECLARED_NO_GRAD, gradient_specs, outside_contract  # noqa: E402

FAILURES = ("gradient", "build", "run", "shape", "wrong", "died")


# --- which ops Gradient differentiates --------------------------------------------------------

def gradient_op_names() -> set[str]:
    """The Relax ops that register FPrimalGradient ("relax.nn.conv2d", ...)."""
    import tvm
    return {o for o in tvm.ir.Op.list_op_names()
            if o.startswith("relax.") and tvm.ir.Op.get(o).get_attr("FPrimalGradient") is not None}


def ops_in(mod) -> set[str]:
    """The ops `main` calls."""
    import tvm
    from tvm import relax
    names = set()

    def visit(expr):
        if isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op):
            names.add(expr.op.name)
    relax.analysis.post_order_visit(mod["main"].body, visit)
    return names


# --- TVM -----------------------------------------------------------------------------------------

class OutOfContract(Exception):
    pass


def tvm_adjoint(graph: Graph, calls: dict, values: dict, loss_dtype: str):
    """(stage, outcome): Gradient, build and run of main_adjoint; outcome is (loss, {var id:
    gradient}) or the error message of the stage that failed."""
    import tvm
    from tvm import relax

    why = outside_contract(graph)
    if why:
        raise OutOfContract(why)
    from hirfuzz.dialects.relax.lower import lower_loss
    from hirfuzz.dialects.relax.passes import differentiate
    mod = lower_loss(graph, calls, loss_dtype)
    missing = ops_in(mod) - gradient_op_names()
    if missing:
        raise OutOfContract(f"ops without a gradient: {sorted(missing)}")
    float_vars = float_variables(graph, DECLARED_NO_GRAD)
    if not float_vars:
        raise OutOfContract("no float parameter")
    try:
        grad_mod = differentiate(mod, differentiated_positions(graph, DECLARED_NO_GRAD))
    except Exception as exc:  # noqa: BLE001 - TVM's error is the finding
        return "gradient", _message(exc)
    try:
        exe = relax.build(grad_mod, target="llvm")
        vm = relax.VirtualMachine(exe, tvm.cpu())
    except Exception as exc:  # noqa: BLE001
        return "build", _message(exc)
    try:
        args = [tvm.runtime.tensor(values[n.id]) for n in graph.variables]
        loss, grads = vm["main_adjoint"](*args)
        got = {n.id: grads[i].numpy() for i, n in enumerate(float_vars)}
        return "ok", (float(loss.numpy()), got)
    except Exception as exc:  # noqa: BLE001
        return "run", _message(exc)


def _message(exc: Exception) -> str:
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}"


# --- one case --------------------------------------------------------------------------------------

_SPECS = None


def _specs():
    global _SPECS
    if _SPECS is None:
        _SPECS = load_specs()
    return _SPECS


def draw_case(seed: int, dtype: str, n_ops: int, avoid_known: bool = False):
    """(graph, input values), or None where the draw has no comparable float result (or,
    `avoid_known`, shows a known bug's construct)."""
    specs = _specs()
    rng = np.random.default_rng(seed)
    graph = generate_graph(specs, rng, n_ops, Coverage(), ops=gradient_specs(specs), dtypes=[dtype])
    if not float_results(graph) or (avoid_known and shows_known_bug(graph)):
        return None
    chosen = choose_inputs(graph, specs, rng)
    if not chosen.comparable:
        return None
    return graph, chosen.values


def judge_case(graph: Graph, values: dict, dtype: str) -> dict:
    """What happened to one case: its outcome ("gradient", "build", "run": a stage failed;
    "forward": TVM's loss differs from the reference's; "wrong"; "ok"; "out-of-contract"),
    with the messages and the wrong elements."""
    specs = _specs()
    calls = call_records(graph, specs)
    precision = precision_of(graph)
    try:
        stage, outcome = tvm_adjoint(graph, calls, values, dtype)
    except OutOfContract as exc:
        return {"outcome": "out-of-contract", "message": str(exc)}
    if stage != "ok":
        return {"outcome": stage, "message": outcome}
    loss, grads = outcome
    graph64 = widened(graph)
    values64 = widened_values(values)
    expected = reference_loss(graph64, specs, values64)
    rtol, atol = GRAD[precision]
    if not np.isclose(loss, expected, rtol=rtol * 10, atol=atol * 10 * max(1.0, abs(expected))):
        return {"outcome": "forward", "message": f"loss {loss!r}, reference {expected!r}"}
    misshapen = {var_id: grad.shape for var_id, grad in grads.items() if grad.shape != graph.nodes[var_id].type.shape}
    if misshapen:
        return {"outcome": "shape", "message": "gradient shapes differ from their parameters': " + ", ".join(
            f"x{k} {graph.nodes[k].type.shape} got {shape}" for k, shape in misshapen.items())}
    judged = skipped = nonfinite = 0
    wrong = []
    for var_id, grad in grads.items():
        j = check_gradient(graph64, specs, values64, var_id, grad, precision)
        judged, skipped, nonfinite = judged + j.judged, skipped + j.skipped, nonfinite + j.nonfinite
        wrong += j.wrong
    return {"outcome": "wrong" if wrong else "ok", "judged": judged, "skipped": skipped, "nonfinite": nonfinite,
            "wrong": wrong[:20]}


def run_seed(request: tuple) -> dict:
    seed = request[0]
    try:
        drawn = draw_case(*request)
    except Exception as exc:  # noqa: BLE001 - the generator gave up on this seed
        return {"seed": seed, "outcome": "no-graph", "message": _message(exc)}
    if drawn is None:
        return {"seed": seed, "outcome": "no-graph", "message": "no comparable float result, or a known bug's construct"}
    graph, values = drawn
    try:
        result = judge_case(graph, values, request[1])
    except Exception:  # noqa: BLE001 - hirfuzz's own failure: shown whole
        result = {"outcome": "tool-error", "message": traceback.format_exc()}
    result["seed"] = seed
    result["ops"] = sorted({n.op for n in graph.operators})
    result["graph"] = graph.to_json()
    result["values"] = {str(k): v.tolist() for k, v in values.items()}
    result["value_dtypes"] = {str(k): str(v.dtype) for k, v in values.items()}
    return result


def load_saved(result: dict):
    """(graph, values) of a saved result."""
    graph = Graph.from_json(result["graph"])
    values = {int(k): np.asarray(v, dtype=result["value_dtypes"][k]) for k, v in result["values"].items()}
    for n in graph.variables:   # a rank-0 list read back is a scalar: keep the declared shape
        values[n.id] = values[n.id].reshape(n.type.shape)
    return graph, values


# --- the TVM bugs this check has found, recognised so that a run lists only new failures ------

def _has(graph: Graph, op: str, test=lambda node: True) -> bool:
    return any(n.op == op and test(n) for n in graph.operators)


def _input_rank(graph: Graph, node, slot: int) -> int:
    return graph.type_of(node.inputs[slot]).rank


def _pool_reads_past(graph: Graph, node) -> bool:
    """Whether topi's pool_grad (include/tvm/topi/nn/pooling.h, pool_grad_impl) indexes a
    window past the output for some input element: (i + pad) / stride - w for w from 0."""
    in_h, in_w = graph.type_of(node.inputs[0]).shape[2:]
    out_h, out_w = node.type.shape[2:]
    a = node.attrs
    return ((in_h - 1 + a["pt"]) // a["sh"] >= out_h or (in_w - 1 + a["pl"]) // a["sw"] >= out_w
            or a["sh"] < a["kh"] or a["sw"] < a["kw"])


# name -> (outcome, what the message holds, which graph shows it); each is described in
# tests/test_gradient_check.py beside its minimal program and the TVM source line it comes from
KNOWN_BUGS = {
    "triu-partials": ("gradient", "partials number != inputs number",
                      lambda g: _has(g, "triu")),
    # conv2d_grad's output_padding leaves the dilation out: conv2d_transpose refuses it, or the
    # data's gradient comes back the wrong shape, or a later gradient fails on it
    "conv2d-dilation": (("gradient", "shape", "build", "run"), "",
                        lambda g: _has(g, "nn.conv2d", lambda n: (n.attrs["dh"], n.attrs["dw"]) != (1, 1))),
    "simplifier-rank0-permute": ("gradient", "Index -2 out of bounds 0",
                                 lambda g: _has(g, "permute_dims", lambda n: _input_rank(g, n, 0) == 0)),
    "take-backward-indices": ("build", "AssertionError",
                              lambda g: _has(g, "take", lambda n: _input_rank(g, n, 1) != 1)),
    "cumsum-exclusive": ("wrong", "",
                         lambda g: _has(g, "cumsum", lambda n: n.attrs.get("exclusive"))),
    # where's gradient is not summed back over the broadcast axes of its values: the wrong
    # shape is returned, or a later gradient fails on it (messages vary) or broadcasts it on
    # into wrong values
    "where-broadcast": (("shape", "gradient", "build", "run", "wrong"), "",
                        lambda g: _has(g, "where", lambda n: any(
                            g.type_of(n.inputs[slot]).shape != n.type.shape for slot in (1, 2)))),
    # topi's max pool_grad bounds a window's index below, not above: where an input element's
    # last window index is past the output (overlapping windows, or rows and columns left
    # over, padding included) it reads past the argmax and the output's gradient
    "max-pool-grad-bounds": (("wrong", "died", "run"), "",
                             lambda g: _has(g, "nn.max_pool2d", lambda n: _pool_reads_past(g, n))),
    # topi's avg pool_grad divides by the whole pool with count_include_pad, where the forward
    # divides a window ceil_mode cuts short by its part inside the padded input
    "avg-pool-ceil-divisor": ("wrong", "",
                              lambda g: _has(g, "nn.avg_pool2d", lambda n: n.attrs["ceil_mode"]
                                             and n.attrs["count_include_pad"])),
    # take_backward's legalization indexes with a negative axis unnormalised: wrong values,
    # or writes out of bounds (the process dies)
    "take-backward-negative-axis": (("wrong", "died", "build", "run"), "",
                                    lambda g: _has(g, "take", lambda n: n.attrs["axis"] < 0)),
}


def shows_known_bug(graph: Graph) -> str | None:
    """A known bug this graph has the construct of, whatever it does."""
    for name, (_, _, shown_by) in KNOWN_BUGS.items():
        if shown_by(graph):
            return name
    return None


def known_bug(result: dict, graph: Graph) -> str | None:
    """The known bug a failing result shows, by its outcome, message and graph."""
    for name, (outcome, text, shown_by) in KNOWN_BUGS.items():
        outcomes = outcome if isinstance(outcome, tuple) else (outcome,)
        if result["outcome"] in outcomes and text in result.get("message", "") and shown_by(graph):
            return name
    return None

# --- reduction: drop sink operators while the failure stays -----------------------------------

def without_node(graph: Graph, values: dict, drop: int):
    """The graph without operator `drop` (nothing consumes it) and the leaves only it used."""
    keep_ops = [n for n in graph.operators if n.id != drop]
    used = {r.node for n in keep_ops for r in n.input_refs()}
    kept = [n for n in graph.nodes if (n.kind == "op" and n.id != drop) or (n.kind != "op" and n.id in used)]
    new_id = {n.id: i for i, n in enumerate(kept)}
    renumbered = Graph()
    for node in kept:
        copy = Node.from_json(node.to_json())
        copy.id = new_id[node.id]
        copy.inputs = [[Ref(new_id[r.node], r.index) for r in item] if isinstance(item, list)
                       else Ref(new_id[item.node], item.index) for item in node.inputs]
        renumbered.add(copy)
    return renumbered, {new_id[k]: v for k, v in values.items() if k in new_id}


def same_failure(result: dict, wanted: dict) -> bool:
    """The same outcome, and for a crash the same message up to its numbers and names."""
    if result["outcome"] != wanted["outcome"]:
        return False
    return result["outcome"] in ("wrong", "shape") or _gist(result.get("message", "")) == _gist(wanted.get("message", ""))


def _gist(message: str) -> str:
    return re.sub(r"[0-9]+", "N", message.split("(")[0])[:80]


def reduce_case(graph: Graph, values: dict, dtype: str) -> tuple[Graph, dict, dict]:
    """Greedily the smallest graph (sink operators dropped one at a time) failing as this one does."""
    wanted = judge_case(graph, values, dtype)
    changed = True
    while changed:
        changed = False
        sinks = {r.node for r in graph.results()}
        for op in reversed(graph.operators):
            if op.id not in sinks or len(graph.operators) == 1:
                continue
            smaller, smaller_values = without_node(graph, values, op.id)
            if not float_results(smaller):
                continue
            try:
                result = judge_case(smaller, smaller_values, dtype)
            except Exception:  # noqa: BLE001 - e.g. no float parameter left
                continue
            if same_failure(result, wanted):
                graph, values, wanted, changed = smaller, smaller_values, result, True
                break
    return graph, values, wanted


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", default="float64", choices=["float32", "float64"])
    ap.add_argument("--ops", type=int, default=6, help="operators per graph")
    ap.add_argument("--avoid-known", action="store_true", help="draw no graph with a known bug's construct")
    ap.add_argument("--out", type=Path, default=None, help="folder for every failing case's JSON")
    args = ap.parse_args(argv)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    counts = Counter()
    messages = Counter()
    judged = skipped = nonfinite = 0
    started = time.time()
    requests = [(args.seed + i, args.dtype, args.ops, args.avoid_known) for i in range(args.cases)]
    pool = ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"))
    for request in requests:
        try:
            result = pool.submit(run_seed, request).result(timeout=300)
        except (BrokenProcessPool, TimeoutError) as exc:
            pool.shutdown(cancel_futures=True)
            pool = ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"))
            result = {"seed": request[0], "outcome": "died", "message": type(exc).__name__}
            drawn = draw_case(*request)   # the same draw, to name what died
            if drawn is not None:
                result["graph"] = drawn[0].to_json()
                result["ops"] = sorted({n.op for n in drawn[0].operators})
        outcome = result["outcome"]
        judged += result.get("judged", 0)
        skipped += result.get("skipped", 0)
        nonfinite += result.get("nonfinite", 0)
        if outcome in FAILURES and "graph" in result:
            known = known_bug(result, Graph.from_json(result["graph"]))
            result["known"] = known
        counts[f"{outcome} (known: {result['known']})" if result.get("known") else outcome] += 1
        if result.get("nonfinite"):
            print(f"seed {result['seed']}: {result['nonfinite']} elements of TVM's gradient not finite, not judged "
                  f"{result.get('ops')}", flush=True)
            if args.out:
                (args.out / f"seed{result['seed']}-nonfinite.json").write_text(json.dumps(result))
        if outcome not in ("ok", "no-graph") and not result.get("known"):
            messages[(outcome, result.get("message", "")[:300])] += 1
            if outcome == "out-of-contract":
                continue
            print(f"seed {result['seed']}: {outcome} {result.get('ops')} {result.get('message', '')[:300]}"
                  f"{' ' + str(result['wrong'][:3]) if outcome == 'wrong' else ''}", flush=True)
            if args.out:
                (args.out / f"seed{result['seed']}-{outcome}.json").write_text(json.dumps(result))
    pool.shutdown()
    print(f"\n{args.cases} seeds in {time.time() - started:.0f}s ({args.dtype}, {args.ops} ops): {dict(counts)}")
    print(f"elements judged {judged}, skipped: not smooth {skipped}, TVM's gradient not finite {nonfinite}")
    for (outcome, message), n in messages.most_common():
        print(f"{n:4d} {outcome}: {message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
