"""The "fused" executor: the target's own default pipeline (cpu_generic on llvm, which runs
FuseOps and FuseTIR, unlike relax.build's "default" there), through a worker as a campaign
runs it, and in the reproducer a maintainer pastes."""
import numpy as np

from hirfuzz.campaign.sandbox import Worker
from hirfuzz.core.calls import call_records
from hirfuzz.core.coverage import Coverage
from hirfuzz.core.finding import Finding
from hirfuzz.core.generate import generate_graph
from hirfuzz.core.inputs import choose_inputs
from hirfuzz.dialects.relax.repro import WRITER
from hirfuzz.protocol import decode_array, encode_array, make_config


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
