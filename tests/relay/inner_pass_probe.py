"""Run in the Relay environment by test_relay_inner_pass.py: FoldConstant's dropped callee
(bench27 relay seed 17 0007, L22) under DeadCodeElimination(inline_once) then FoldScaleAxis,
whose Sequential runs FoldConstant last, and under FoldConstant itself; one JSON line each
with what the worker's reply says of the failing pass."""
import json
import numpy as np
import tvm
from tvm import relay
from hirfuzz.dialects import load_dialect
from hirfuzz.worker import failure_reply

dialect = load_dialect("relay")
v1, local = relay.var("v1"), relay.var("local1")
body = relay.Let(v1, relay.nn.relu(relay.const(np.array([3, -1, 4, -1, 5, -9], "int64"))),
                 relay.Let(local, relay.Function([], relay.reshape(v1, [-1])), relay.Call(local, [])))
mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([], body)))
DCE = {"name": "DeadCodeElimination", "args": {"inline_once": True, "ignore_impurity": False}}
for name in ("FoldScaleAxis", "FoldConstant"):
    try:
        dialect.apply_passes(mod, {"passes": [DCE, {"name": name, "args": {}}], "opt_level": 3})
        print(json.dumps({"pass": name, "status": "ok"}))
    except Exception as exc:
        reply = failure_reply(dialect, "passes", exc)
        print(json.dumps({"pass": name, **{k: reply.get(k) for k in ("failed_pass", "inner_passes", "message")}}))
