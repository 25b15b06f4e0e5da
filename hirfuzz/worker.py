"""The worker: a process that imports TVM once and lowers, builds and runs many cases.

TVM can segfault, abort, hang or eat memory, so it never runs in the coordinator. The
coordinator starts ``python -m hirfuzz.worker`` and speaks JSON lines over a private pipe
(the worker points its own stdout at stderr first, so whatever TVM prints cannot corrupt
the protocol). A request is a case; the reply says which stage failed and how, or carries
the outputs. A signal or a hang is seen by the coordinator as a dead or silent worker.
"""
from __future__ import annotations

import json
import os
import sys
import time

def execute_case(request: dict, dialect) -> dict:
    """Lower and check one case, then build and run it under each configuration; never raises.

    A case may carry a lowering plan (functions, closures, IR features) and a mutation
    (seeded mutators giving a second, equivalent module); each configuration names the
    module it builds (0: the original, 1: the mutant). The reply describes the first
    configuration (the baseline); the others' replies, of the same form, are under
    "others". A failure before building fails them all alike.
    """
    from .protocol import decode_array, error_reply, make_config
    dialect.take_diagnostics()  # a new case: what earlier ones reported is not its own
    stage = "lower"
    t0 = time.perf_counter()
    try:
        mod = dialect.lower(request)
        stage = "well_formed"
        dialect.check_well_formed(mod)
    except Exception as exc:  # every exception is data for the oracle
        reply = error_reply(stage, exc, dialect.take_diagnostics())
        reply["timings"] = {"lower": time.perf_counter() - t0}
        return reply
    modules = [mod]
    plain = {}  # the graph lowered without its plan, for executors that take dataflow only
    mutation = request.get("mutation")
    notes = {}
    if mutation:
        try:
            mutant, applied = dialect.mutate(mod, mutation["seed"], mutation["count"], _traits(request))
            modules.append(mutant)
            notes["mutators"] = applied
        except Exception as exc:  # a mutator that fails or breaks the module is hirfuzz's bug
            notes["mutation_error"] = f"{type(exc).__name__}: {str(exc)[:2000]}"
    lowered = time.perf_counter() - t0
    configs = request.get("configs") or [make_config(target=request.get("target", "llvm"), dialect=dialect.name)]
    inputs = [decode_array(a) for a in request.get("inputs", [])]
    replies = []
    for config in configs:
        index = config.get("module", 0)
        if index >= len(modules):
            replies.append({"status": "skipped", "timings": {}})
            continue
        module = modules[index]
        if config.get("plain") and request.get("plan"):
            try:
                if "module" not in plain:
                    plain["module"] = dialect.lower({**request, "plan": None})
            except Exception as exc:  # noqa: BLE001 - data for the oracle, as any lowering failure
                replies.append({**error_reply("lower", exc, dialect.take_diagnostics()), "timings": {}})
                continue
            module = plain["module"]
        replies.append(run_config(dialect, module, config, inputs, request.get("run", True)))
    replies[0]["timings"]["lower"] = lowered
    reply = replies[0]
    reply["others"] = replies[1:]
    reply.update(notes)
    return reply


def render_case(request: dict, dialect) -> dict:
    """The text of the module a configuration builds (for reproducers); never raises."""
    from .protocol import encode_array, error_reply
    try:
        mod = dialect.lower({**request, "plan": None} if request.get("plain") else request)
        if request.get("module", 0) == 1:
            mutation = request["mutation"]
            mod, _ = dialect.mutate(mod, mutation["seed"], mutation["count"], _traits(request))
        text, consts = dialect.render(mod)
    except Exception as exc:
        return error_reply("render", exc, dialect.take_diagnostics())
    return {"status": "ok", "script": text, "consts": [encode_array(c) for c in consts]}


def _traits(request: dict) -> dict:
    """The case's op traits, from its call records: dialect op name -> traits."""
    from .core.calls import op_traits
    return op_traits((request.get("calls") or {}).values())


def run_config(dialect, mod, config: dict, inputs: list, run: bool) -> dict:
    from .dialects.base import ExecutorCannotTake
    from .protocol import encode_array, error_reply
    timings = {}
    stage = "passes"
    try:
        t0 = time.perf_counter()
        mod = dialect.apply_passes(mod, config)
        stage = "build"
        executable = dialect.build(mod, config)
        timings["build"] = time.perf_counter() - t0
        outputs = []
        if run:
            stage = "run"
            t0 = time.perf_counter()
            outputs = dialect.run(executable, config, inputs)
            timings["run"] = time.perf_counter() - t0
    except ExecutorCannotTake as exc:
        return {"status": "skipped", "reason": str(exc), "timings": timings}
    except Exception as exc:
        reply = error_reply(stage, exc, dialect.take_diagnostics())
        reply["timings"] = timings
        return reply
    return {"status": "ok", "outputs": [encode_array(o) for o in outputs], "timings": timings}


def serve(dialect_name: str) -> int:
    proto_out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # TVM's prints go to the log, not into the protocol
    sys.stdout = sys.stderr
    hello = {"ready": True, "pid": os.getpid(), "python": sys.executable}
    try:  # what this interpreter lacks is said in the handshake, not in a traceback
        import tvm
        hello["tvm"] = tvm.__version__
        from .dialects import load_dialect
        dialect = load_dialect(dialect_name)
        hello.update(dialect.describe_installation())
    except Exception as exc:  # noqa: BLE001 - any failure here means this TVM cannot serve
        what = f"cannot serve the {dialect_name} dialect" if "tvm" in hello else "cannot import TVM"
        hello.update(ready=False, error=f"{what}: {type(exc).__name__}: {exc}")
        proto_out.write(json.dumps(hello) + "\n")
        return 1
    proto_out.write(json.dumps(hello) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if request.get("kind") == "test-crash" or _has_edge(request.get("graph"), request.get("crash_if_edge")):
            _test_crash(request)  # test-only hooks: see campaign.cases._plant
        if request.get("kind") == "render":
            reply = render_case(request, dialect)
        else:
            reply = execute_case(request, dialect)
        reply["case"] = request.get("case")
        reply["rss_kb"] = _rss_kb()
        proto_out.write(json.dumps(reply) + "\n")
    return 0


def _rss_kb() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _has_edge(graph: dict | None, edge: list | None) -> bool:
    """Test-only: does the graph feed an `edge[0]` op straight into an `edge[1]` op?"""
    if not graph or not edge:
        return False
    ops = {n["id"]: n.get("op") for n in graph["nodes"]}
    for n in graph["nodes"]:
        if n.get("op") != edge[1]:
            continue
        for item in n["inputs"]:
            refs = item if item and isinstance(item[0], list) else [item]
            if any(ops.get(r[0]) == edge[0] for r in refs):
                return True
    return False


def _test_crash(request: dict):
    """Test-only misbehaviour: lets tests kill a worker without relying on a TVM bug."""
    how = request.get("how", "abort")
    if how == "segfault":
        import ctypes
        ctypes.string_at(0)
    if how == "abort":
        os.abort()
    if how == "hang":
        while True:
            time.sleep(1)
    if how == "oom":
        hog = []
        while True:
            hog.append(bytearray(64 << 20))


def main(argv=None) -> int:
    import argparse
    parser = argparse.ArgumentParser(prog="python -m hirfuzz.worker")
    parser.add_argument("--dialect", default="relax")
    args = parser.parse_args(argv)
    return serve(args.dialect)


if __name__ == "__main__":
    sys.exit(main())
