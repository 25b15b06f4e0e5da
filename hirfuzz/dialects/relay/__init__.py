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

import re

from ...core.passes import CatalogSection
from ...data import PASS_CATALOG
from ..info import DialectInfo, SetupCheck
from ..base import FailureAlias

# A type error is a diagnostic, which the worker renders itself (dialect.py): a
# DiagnosticError. A script renders it with TVM's own renderer, which cannot show a node
# whose source is not in the module's source map (a pass that builds a new IRModule drops
# the map of the text the script parsed) and raises a TVMError quoting the diagnostic.
UNRENDERED_DIAGNOSTIC = FailureAlias(
    name="DiagnosticError", raised="TVMError",
    report=re.compile(r"The source maps are not populated for this module\.[^\n]*\nError: ([^\n]*)"))

# "plain": the executor builds the graph lowered without functions, closures or If (a
# program equal to the case's), so that it is compared on every case, not skipped
EXECUTORS = {
    "vm": {"kind": "vm", "opt_level": 3},
    "build": {"kind": "build", "opt_level": 3, "plain": True},
    "graph": {"kind": "graph", "opt_level": 2, "plain": True},
    "debug": {"kind": "debug", "opt_level": 0},
}

# what `setup` builds and runs in an environment that offers Relay (info.SetupCheck)
_SETUP_CHECK = """
import json, numpy as np, tvm
from tvm import relay
from tvm.contrib import graph_executor
x = relay.var("x", shape=(2, 3), dtype="float32")
func = relay.Function([x], relay.add(relay.nn.relu(x), relay.const(1.0, dtype="float32")))
with tvm.transform.PassContext(opt_level=3):
    lib = relay.build(tvm.IRModule.from_expr(func), target="llvm")
module = graph_executor.GraphModule(lib["default"](tvm.cpu()))
data = np.array([[-1.5, 0.0, 2.0], [3.0, -4.0, 0.5]], dtype="float32")
module.set_input("x", data)
module.run()
np.testing.assert_allclose(module.get_output(0).numpy(), np.maximum(data, 0) + 1)
print(json.dumps({"tvm": tvm.__version__}))
"""

INFO = DialectInfo(name="relay", tvm="TVM 0.19 (python -m hirfuzz setup relay)", executors=EXECUTORS,
                   baseline="vm", catalog=CatalogSection(PASS_CATALOG, "relay"),
                   implementation="hirfuzz.dialects.relay.dialect",
                   reproducer="hirfuzz.dialects.relay.repro", namespace="relay",
                   build_words="`relay.build` / `create_executor`",
                   setup_check=SetupCheck("relay", "relay.build and run a tiny function on llvm", _SETUP_CHECK),
                   # symbolic shapes cast back to static ones are Relax's (match_cast); Relay's
                   # dynamic parameters are `?` dimensions (dynamic.py)
                   plan_knobs={"p_match_cast": 0.0, "p_shape_of": 0.0},
                   mutators=True, writes_plain_modules=False,
                   # Relay's VM compiles at opt_level 0 only programs already in A-normal form
                   # ("Calls out of a let block are not supported ... set opt_level >= 1")
                   pass_opt_levels=(1, 2, 3),
                   composite_prefix="hirfuzz.", environment="relay", failure_aliases=(UNRENDERED_DIAGNOSTIC,),
                   # FirstOrderGradient (the gradient oracle; its default share: settings.py)
                   gradients="hirfuzz.dialects.relay.gradients")
