"""The "fused" executor: the target's own default pipeline (cpu_generic on llvm, which runs
FuseOps and FuseTIR, unlike relax.build's "default" there), through a worker as a campaign
runs it, and in the reproducer a maintainer pastes."""
import json
import subprocess
import sys

import numpy as np
import pytest

from hirfuzz.campaign.sandbox import Worker
from hirfuzz.core.calls import call_records
from hirfuzz.core.coverage import Coverage
from hirfuzz.core.finding import Finding
from hirfuzz.core.generate import generate_graph
from hirfuzz.core.inputs import choose_inputs
from hirfuzz.dialects.relax.repro import WRITER
from hirfuzz.protocol import decode_array, encode_array, make_config
from conftest import run_hirfuzz


def test_the_fused_executor_builds_with_fusion_and_agrees_with_the_vm(specs, tmp_path):
    g = generate_graph(specs, np.random.default_rng(3), 4, Coverage(), ops=["exp", "add", "multiply"])
    ci = choose_inputs(g, specs, np.random.default_rng(3))
    request = {"case": 1, "graph": g.to_json(), "calls": call_records(g, specs), "run": True,
               "inputs": [encode_array(ci.values[n.id]) for n in g.variables],
               "configs": [make_config("vm"), make_config("fused")]}
    worker = Worker(tmp_path / "worker.log", max_memory_mb=8192)
    try:
        reply = worker.run_one(request, timeout_s=120)
    finally:
        worker.close()
    assert reply["status"] == "ok", reply
    fused = reply["others"][0]
    assert fused["status"] == "ok", fused
    for a, b in zip(reply["outputs"], fused["outputs"]):
        np.testing.assert_allclose(decode_array(a), decode_array(b), rtol=1e-5, atol=1e-6)


def test_the_fused_executor_s_reproducer_builds_with_the_target_s_own_pipeline():
    from hirfuzz.dialects.relax import executors
    import tvm
    config = make_config("fused")
    assert config["pipeline"] == "target-default"
    # what build_module gives relax.build: cpu_generic's pipeline, not the name "default"
    assert not isinstance(executors.relax_pipeline(config, tvm.target.Target("llvm")), str)
    finding = Finding(kind="crash", oracle="executor", stage="build", signature="s", message="m")
    script = WRITER.render_short(finding, config, [], False, None, {"script": "Module = None", "consts": []})
    assert ("ex = relax.build(mod, target='llvm', relax_pipeline=relax.get_default_pipeline(tvm.target.Target('llvm')))"
            in script)
    compile(script, "repro.py", "exec")


@pytest.mark.slow  # a campaign of 16 cases, its finding's scripts run alone
def test_a_campaign_with_the_fused_executor_finds_the_remove_unused_parameters_bug(tmp_path):
    """A real TVM bug only a fusing pipeline meets: FuseTIR runs RemoveUnusedParameters, which
    rewrites a private function with an unused parameter under a new GlobalVar and updates
    only the calls of it (src/relax/transform/remove_unused_parameters.cc, CallSiteMutator);
    a reference to the function as a value (a closure hirfuzz lambda-lifts into main_local1,
    or a function returned by another) keeps the removed GlobalVar, and the VM cannot find
    the function when it is called. relax.build's "default" pipeline on llvm runs no FuseTIR:
    the same program runs there."""
    out = tmp_path / "out"
    proc = run_hirfuzz("--executors", "fused", "--no-pass-fuzz", "--ops", 8, "--iterations", 16, "--seed", 3,
                       "--jobs", 1, "--no-reduce", "--no-progress", "--out", out)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["executors"] == ["vm", "fused"]
    found = [f for f in summary["findings"] if f["oracle"] == "executor" and "Cannot find ffi::Function" in f["message"]]
    assert len(found) == 1, summary["findings"]
    finding = json.loads((out / found[0]["path"] / "finding.json").read_text())
    assert (finding["kind"], finding["stage"], finding["confirmed"]) == ("crash", "run", True)
    assert finding["extra"]["config"]["name"] == "fused"
    repro = (out / found[0]["path"] / "repro.py").read_text()
    fused_build = "relax_pipeline=relax.get_default_pipeline(tvm.target.Target('llvm'))"
    assert fused_build in repro
    # the maintainer's script with relax.build's own "default" pipeline: it runs clean
    plain = tmp_path / "plain.py"
    plain.write_text(repro.replace(f", {fused_build}", ""))
    ran = subprocess.run([sys.executable, str(plain)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-2000:]
