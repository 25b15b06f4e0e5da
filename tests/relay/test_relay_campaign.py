"""Relay campaigns end to end: the coordinator here, workers under TVM 0.19."""
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from conftest import ROOT, SPECS, run_hirfuzz
from relay_env import relay_interpreter, relay_interpreter_alone
from reproducer_rules import check_violation_scripts

# add whose reference is subtract: every executor disagrees with the reference, a finding
# whose reproducer must confirm it alone, in the Relay environment
WRONG_ADD = """
ops:
  - name: add_wrong
    inputs:
      - a
      - {name: b, shape: "a.shape"}
    constraints: ["b.shape == a.shape"]
    dtypes: [int32]
    reference: np.subtract(a, b)
    dialects:
      relay: {op: add}
"""

SIMPLE_OPS = "add,subtract,multiply,maximum,minimum,negative,abs,exp,sigmoid,tanh,floor,ceil,nn.relu,sum,mean"


def relay_campaign(*args):
    """A Relay campaign in the managed environment, named as a user names it."""
    if os.environ.get("HIRFUZZ_RELAY_PYTHON"):
        python, env = relay_interpreter()
        return run_hirfuzz("--ir", "relay", "--tvm-python", python, "--no-progress", *args, env=env)
    return run_hirfuzz("--ir", "relay", "--tvm-python", "relay", "--no-progress", *args)


def test_every_executor_agrees_with_the_reference_on_valid_programs(tmp_path):
    out = tmp_path / "out"
    proc = relay_campaign("--only-ops", SIMPLE_OPS, "--dtypes", "float32,int32", "--iterations", 8, "--ops", 10,
                          "--executors", "build,graph,debug", "--no-pass-fuzz", "--out", out, "--jobs", 2)
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["dialect"] == "relay" and s["tvm"].startswith("0.19")
    assert s["executors"] == ["vm", "build", "graph", "debug"]
    assert s["cases"] == 8 and s["valid"] == 8  # every program passes Relay's type inference
    assert s["compared"] == 8 and s["findings"] == [] and s["hirfuzz_bugs"] == []
    assert s["ir_features"], "cases were lowered with functions, closures and If"


def spec_folder(tmp_path, text: str):
    """A spec folder holding one planted op spec (and the shipped tolerances)."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "ops.yaml").write_text(text)
    (specs / "tolerances.yaml").write_text((SPECS / "tolerances.yaml").read_text())
    return specs


def test_a_wrong_result_is_confirmed_and_replays_from_its_script_alone(tmp_path):
    specs = spec_folder(tmp_path, WRONG_ADD)
    out = tmp_path / "out"
    proc = relay_campaign("--specs", specs, "--iterations", 2, "--ops", 3, "--executors", "build",
                          "--no-pass-fuzz", "--out", out, "--jobs", 1)
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert len(s["findings"]) == 1 and s["unconfirmed"] == []
    folder = out / s["findings"][0]["path"]
    script = (folder / "check.py").read_text()
    assert "TVM 0.19" in script and "tvm.relay.parse" in script and "import hirfuzz" not in script
    python, alone_env = relay_interpreter_alone()
    alone = subprocess.run([python, "check.py"], cwd=folder, capture_output=True, text=True, env=alone_env)
    assert alone.returncode == 1 and "HIRFUZZ-REPRO mismatch" in alone.stdout, alone.stdout + alone.stderr
    # the short script a maintainer reads fails alike, with numpy's assertion
    short = subprocess.run([python, "repro.py"], cwd=folder, capture_output=True, text=True, env=alone_env)
    assert short.returncode == 1 and "Mismatched elements" in short.stderr, short.stdout + short.stderr
    replayed = subprocess.run([sys.executable, "-m", "hirfuzz.replay", out], capture_output=True, text=True,
                              cwd=ROOT, env={**os.environ, **alone_env})
    assert replayed.returncode == 1 and "1 still reproduce" in replayed.stdout, replayed.stdout


def test_a_source_build_on_pythonpath_does_not_shadow_the_relay_environment(tmp_path):
    """TVM's documented set-up exports PYTHONPATH=$TVM_HOME/python: a user fuzzing Relax from
    a source build still runs Relay, and checks its findings, under TVM 0.19."""
    import sysconfig
    build = tmp_path / "tvm" / "python"
    build.mkdir(parents=True)
    for package in ("tvm", "tvm_ffi"):  # apache-tvm 0.27, laid out as a source build's python/
        (build / package).symlink_to(Path(sysconfig.get_paths()["purelib"]) / package)
    out = tmp_path / "out"
    proc = run_hirfuzz("--ir", "relay", "--tvm-python", "relay", "--no-progress", "--specs",
                       spec_folder(tmp_path, WRONG_ADD), "--iterations", 1, "--ops", 2, "--executors", "build",
                       "--no-pass-fuzz", "--out", out, "--jobs", 1, env={"PYTHONPATH": str(build)})
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "campaign.json").read_text())["installation"]["tvm"].startswith("0.19")
    s = json.loads((out / "summary.json").read_text())
    assert len(s["findings"]) == 1 and s["unconfirmed"] == [], s["unconfirmed"]


def test_relay_under_a_tvm_without_relay_is_one_clear_error(tmp_path):
    """apache-tvm 0.27, the interpreter running these tests, has no tvm.relay."""
    proc = run_hirfuzz("--ir", "relay", "--tvm-python", sys.executable, "--only-ops", "add",
                       "--iterations", 1, "--out", tmp_path / "out", "--no-progress", "--jobs", 1)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "cannot serve the relay dialect" in proc.stderr and "0.27" in proc.stderr, proc.stderr


def test_list_ops_and_passes_name_what_relay_supports():
    ops = run_hirfuzz("--ir", "relay", "--list-ops")
    assert ops.returncode == 0, ops.stderr
    names = ops.stdout.split()
    assert "add" in names and "nn.relu" in names
    passes = run_hirfuzz("--ir", "relay", "--list-passes")
    assert passes.returncode == 0 and "FoldConstant" in passes.stdout.split()


def test_mutants_agree_with_the_original(tmp_path):
    """HIRGen's function rewrites (and outlining main) leave what the program computes alone."""
    out = tmp_path / "out"
    proc = relay_campaign("--only-ops", SIMPLE_OPS, "--dtypes", "float32", "--iterations", 10, "--ops", 8,
                          "--mutations", 3, "--no-pass-fuzz", "--out", out, "--jobs", 2, "--seed", 2)
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["findings"] == [] and s["hirfuzz_bugs"] == [], s["findings"] + s["hirfuzz_bugs"]
    used = s["mutators"]
    assert {"func_to_closure", "wrap_return", "call_wrap"} <= set(used), used


def test_disruptive_mode_classifies_what_relay_does(tmp_path):
    # seed 10: its 24 cases meet both a silent acceptance and poor diagnostics (seed 3's did
    # until each case drew its graph from a stream of its own, seed 5's until session 22's
    # Relay ops joined the draws, seed 6's until session 23's, seed 9's until the quantization ops)
    out = tmp_path / "out"
    proc = relay_campaign("--mode", "disruptive", "--iterations", 24, "--ops", 3, "--out", out, "--seed", 10,
                          "--jobs", 2)
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    d = s["disruptive"]
    assert sum(d["classes"].values()) == s["cases"] == 24
    assert d["classes"]["clean-rejection"] > 0
    assert s["unconfirmed"] == []  # every reported finding reproduced from its script
    for f in s["findings"]:
        assert f["kind"] in ("poor-diagnostic", "crash", "silent-acceptance") and f["oracle"] == "disruptive"
        assert not f["message"].startswith("Traceback"), f["message"]  # the error, not the backtrace's header
    # issue 15 item 5: repro.py is the violating call alone (Relay's API, its inputs
    # parameters), and run alone in TVM 0.19 it fails as check.py, the whole program, does
    assert {f["kind"] for f in s["findings"]} == {"silent-acceptance", "poor-diagnostic"}, s["findings"]
    python, env = relay_interpreter_alone()
    forms = Counter(check_violation_scripts(out, f, python, env) for f in s["findings"])
    assert d["reproducers"] == dict(forms) and forms["call"] + forms["call-in-function"] >= 1, forms


# add whose second input never broadcasts against the first: Relay's type inference refuses it
# with a diagnostic, which the message must carry (the DiagnosticError itself says nothing)
BAD_BROADCAST = """
ops:
  - name: add_unbroadcastable
    inputs:
      - {name: a, rank: [1, 3]}
      - {name: b, shape: "[d + 1 for d in a.shape]"}
    dtypes: [float32]
    reference: a
    dialects:
      relay: {op: add}
"""


def test_a_type_error_says_what_relay_diagnosed(tmp_path):
    specs = spec_folder(tmp_path, BAD_BROADCAST)
    out = tmp_path / "out"
    proc = relay_campaign("--specs", specs, "--iterations", 1, "--ops", 1, "--no-pass-fuzz", "--out", out,
                          "--jobs", 1)
    assert proc.returncode == 0, proc.stderr
    kept = list((out / "spec-disagreements").glob("*/finding.json"))
    assert len(kept) == 1
    finding = json.loads(kept[0].read_text())
    assert finding["message"].startswith("DiagnosticError: Incompatible broadcast type"), finding["message"]


# topk of a tuple projection (the "tuple" lowering feature) in a global function: after
# DynamicToStatic, Relay's type inference fails (a TVM 0.19 bug with global functions); without
# the pass, the VM at opt_level 1 fails its virtual_device check on the projection (another)
TUPLE_TOPK = {"format": 1, "nodes": [
    {"id": 0, "kind": "var", "outputs": [{"shape": [1, 1, 5, 5], "dtype": "uint8"}]},
    {"id": 1, "kind": "op", "outputs": [{"shape": [1, 1, 5, 5], "dtype": "int32"}], "op": "topk", "dtype": "uint8",
     "inputs": [[0, 0]], "attrs": {"axis": -3, "k": 1, "largest": False, "ret_type": "indices", "out": "int32"}}]}
IN_A_GLOBAL_THROUGH_A_TUPLE = {
    "format": 1, "functions": [{"start": 1, "end": 1, "kind": "global", "captures": [], "as_value": False,
                                "plain": False}],
    "plain_nodes": [], "node_features": {"1": ["tuple"]}, "dynamic_params": [], "allow_known_bugs": False}


def test_a_crash_met_without_the_passes_is_a_finding_of_its_own_not_the_first_one_renamed(tmp_path):
    """Isolating a pass-order crash tries its configuration without the passes. There the VM
    crashes otherwise (seen in a seed-23 campaign): that is another finding, confirmed, and
    the first keeps its own failure. It used to be renamed half-way (the VM crash's
    signature, the type error's stage and exception): its scripts, failing as the VM crash
    does, were then 'did not fail alike', filed as hirfuzz's problem; the type error was lost."""
    from hirfuzz.campaign.coordinator import Campaign, Settings
    from hirfuzz.core.graph import Graph
    from hirfuzz.core.spec import load_specs
    from hirfuzz.protocol import make_config
    python, env = relay_interpreter()
    settings = Settings(out=str(tmp_path / "out"), iterations=1, dialect="relay", tvm_python=python, tvm_env=env,
                        pass_fuzz=False)
    campaign = Campaign(settings, load_specs(dialect="relay"), progress=False)
    configs = [make_config("vm", dialect="relay"),
               make_config("vm", passes=[{"name": "DynamicToStatic", "args": {}}], opt_level=1, dialect="relay")]
    # the campaign's one case is this program (as a resumed campaign runs the cases left in flight)
    campaign.supply.queue = [campaign.maker.make_case(0, Graph.from_json(TUPLE_TOPK), configs=configs,
                                               lowering={"plan": IN_A_GLOBAL_THROUGH_A_TUPLE})]
    campaign.supply.next_index = 1
    s = campaign.run()
    assert s["unconfirmed"] == [], s["unconfirmed"]
    found = {f["oracle"]: f for f in s["findings"]}
    assert sorted(found) == ["executor", "pass-order"], s["findings"]
    typing, vm = found["pass-order"], found["executor"]
    assert (typing["stage"], typing["message"].split(": ")[:2]) == ("passes", ["after DynamicToStatic()", "DiagnosticError"])
    assert vm["stage"] == "build" and "!virtual_device->IsFullyUnconstrained()" in vm["message"], vm
    assert vm["message"].endswith("under vm on llvm (opt_level 1)"), vm["message"]
    folder = tmp_path / "out" / vm["path"]
    assert "%0.0" in (folder / "repro.py").read_text()  # the tuple projection, no pass
    observed = (folder / "repro-output.txt").read_text().splitlines()[0]
    assert observed == "observed: check.py: HIRFUZZ-REPRO stage=build error=InternalError; repro.py: raised InternalError"
    assert s["finding_hits"] == sum(f["hits"] for f in s["findings"]) == 2
