"""Relay on TVM 0.19: what the coordinator knows of it (no TVM imported here).

HIRGen's four executors:

    vm     relay.create_executor("vm"): runs every program (closures, If, globals): the baseline
    build  relay.build + graph_executor (HIRGen's "build")
    graph  relay.create_executor("graph")
    debug  relay.create_executor("debug"): Relay's interpreter

The graph executor and relay.build take one dataflow `main` only (no calls to other
global functions, no closures, no If): a program they cannot take by design is skipped
for them and counted, never reported.
"""
from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from .. import DialectInfo

EXECUTORS = {
    "vm": {"kind": "vm", "pipeline": "default", "opt_level": 3},
    "build": {"kind": "build", "pipeline": "default", "opt_level": 3},
    "graph": {"kind": "graph", "pipeline": "default", "opt_level": 2},
    "debug": {"kind": "debug", "pipeline": "default", "opt_level": 0},
}

INFO = DialectInfo(name="relay", tvm="TVM 0.19 (python -m hirfuzz setup relay)", executors=EXECUTORS,
                   baseline="vm", catalog=Path(str(files(__name__) / "passes.yaml")),
                   implementation="hirfuzz.dialects.relay.dialect")
