"""A Relay worker asks libtvm for its compile-time flags once (dialects/relay/executors.
keep_one_libinfo), not once per dimension of every call it lowers: the flags it gives are
TVM's, each caller gets its own copy, and a build gives what TVM's own libinfo gives."""
import json

from relay_env import run_in_relay

SCRIPT = r"""
import json
import numpy as np
import tvm
from tvm import relay
from tvm.relay.backend import te_compiler
tvms = te_compiler.libinfo
import hirfuzz.dialects.relay.executors as executors
kept = te_compiler.libinfo
first = kept()
first["INDEX_DEFAULT_I64"] = "changed by a caller"
x = relay.var("x", shape=(2, 3), dtype="float32")
mod = tvm.IRModule.from_expr(relay.Function([x], relay.sum(relay.exp(x), axis=[1])))
data = np.arange(6, dtype="float32").reshape(2, 3)
config = {"kind": "vm", "opt_level": 3, "target": "llvm"}
outputs = {}
for way, libinfo in (("tvm", tvms), ("kept", kept)):
    te_compiler.libinfo = libinfo
    executable = executors.load(executors.build(mod, config), config)
    outputs[way] = executors.run(executable, config, [data])[0].tolist()
print(json.dumps({"replaced": tvms is not kept, "flags_equal": kept() == tvm.support.libinfo(),
                  "copy": kept()["INDEX_DEFAULT_I64"] != "changed by a caller", "outputs": outputs}))
"""


def test_the_worker_keeps_one_copy_of_tvms_flags_and_builds_alike():
    proc = run_in_relay("-c", SCRIPT)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.splitlines()[-1])
    assert seen["replaced"] and seen["flags_equal"] and seen["copy"]
    assert seen["outputs"]["kept"] == seen["outputs"]["tvm"]
