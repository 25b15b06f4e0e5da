"""The worker: a process that imports TVM once and lowers, builds and runs many cases.

TVM can segfault, abort, hang or eat memory, so it never runs in the coordinator. The
coordinator starts ``python -m hirfuzz.worker`` and speaks JSON lines over a private pipe
(the worker points its own stdout at stderr first, so whatever TVM prints cannot corrupt
the protocol). A request is a case; the reply says which stage failed and how, or carries
the outputs. A signal or a hang is seen by the coordinator as a dead or silent worker.
"""
from __future__ import annotations

import base64
import io
import json
import os
import sys
import time
import traceback

import numpy as np

STAGES = ("lower", "well_formed", "passes", "build", "run")


def encode_array(a: np.ndarray) -> str:
    buf = io.BytesIO()
    np.save(buf, np.asarray(a), allow_pickle=False)  # (ascontiguousarray would make rank 0 rank 1)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def decode_array(text: str) -> np.ndarray:
    return np.load(io.BytesIO(base64.b64decode(text)), allow_pickle=False)


def error_reply(stage: str, exc: BaseException) -> dict:
    return {"status": "error", "stage": stage, "exc_type": type(exc).__name__,
            "message": str(exc), "traceback": traceback.format_exc()}


def execute_case(request: dict, specs) -> dict:
    """Lower and check one case, then build and run it under each configuration; never raises.

    The reply describes the first configuration (the baseline); the others' replies, of
    the same form, are under "others". A failure before building fails them all alike.
    """
    from tvm import relax

    from .compile import make_config
    from .graph import Graph
    from .lower import lower_graph

    stage = "lower"
    t0 = time.perf_counter()
    try:
        graph = Graph.from_json(request["graph"])
        mod = lower_graph(graph, specs)
        if request.get("violation") is not None:
            from .disrupt import apply_violation
            mod = apply_violation(mod, request["violation"])
        stage = "well_formed"
        relax.analysis.well_formed(mod)
    except Exception as exc:  # every exception is data for the oracle
        reply = error_reply(stage, exc)
        reply["timings"] = {"lower": time.perf_counter() - t0}
        return reply
    lowered = time.perf_counter() - t0
    configs = request.get("configs") or [make_config("vm", request.get("target", "llvm"))]
    inputs = [decode_array(a) for a in request.get("inputs", [])]
    replies = [run_config(mod, config, inputs, request.get("run", True)) for config in configs]
    replies[0]["timings"]["lower"] = lowered
    reply = replies[0]
    reply["others"] = replies[1:]
    return reply


def run_config(mod, config: dict, inputs: list, run: bool) -> dict:
    from .compile import apply_passes, build_module
    from .run import run_module
    timings = {}
    stage = "passes"
    try:
        t0 = time.perf_counter()
        mod = apply_passes(mod, config)
        stage = "build"
        executable = build_module(mod, config)
        timings["build"] = time.perf_counter() - t0
        outputs = []
        if run:
            stage = "run"
            t0 = time.perf_counter()
            outputs = run_module(executable, config, inputs)
            timings["run"] = time.perf_counter() - t0
    except Exception as exc:
        reply = error_reply(stage, exc)
        reply["timings"] = timings
        return reply
    return {"status": "ok", "outputs": [encode_array(o) for o in outputs], "timings": timings}


def serve(spec_dir: str | None) -> int:
    proto_out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # TVM's prints go to the log, not into the protocol
    sys.stdout = sys.stderr
    import tvm

    from .spec import load_specs
    specs = load_specs(spec_dir)
    proto_out.write(json.dumps({"ready": True, "tvm": tvm.__version__, "pid": os.getpid()}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if request.get("kind") == "test-crash" or _has_edge(request.get("graph"), request.get("crash_if_edge")):
            _test_crash(request)  # test-only hooks: see campaign._plant
        reply = execute_case(request, specs)
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
    parser.add_argument("--specs", default=None)
    args = parser.parse_args(argv)
    return serve(args.specs)


if __name__ == "__main__":
    sys.exit(main())
