"""Check-only pass sequences (`--pass-checks`) in Relay: the same worker code, under TVM 0.19
in its own environment, runs their passes and builds none of them."""
import json
import subprocess

import pytest

from hirfuzz.campaign.cases import CaseMaker
from hirfuzz.campaign.coordinator import Settings
from hirfuzz.campaign.judge import Judge
from hirfuzz.core.passes import load_catalog
from hirfuzz.core.spec import load_specs
from hirfuzz.dialects import dialect_info
from hirfuzz.protocol import CHECK_ONLY
from relay_env import relay_interpreter_alone, run_in_relay
from test_relay_campaign import SIMPLE_OPS, relay_campaign

# runs one request through Relay's worker code (worker.execute_case) and prints the reply
EXECUTE = ("import json, sys; from hirfuzz.dialects import load_dialect; from hirfuzz.worker import execute_case; "
           "print(json.dumps(execute_case(json.load(open(sys.argv[1])), load_dialect('relay'))))")


def test_relay_check_only_sequences_run_their_passes_and_are_never_built(tmp_path):
    info = dialect_info("relay")
    specs = load_specs(dialect="relay")
    settings = Settings(dialect="relay", ops=4, seed=2, only_ops=SIMPLE_OPS.split(","), dtypes=["float32"],
                        mutations=0, pass_checks=3)
    case = CaseMaker(settings, specs, info, load_catalog(builtin=info.catalog)).make_case(0)
    checks = [c for c in case.configs if c.get(CHECK_ONLY)]
    assert len(checks) == 3 and case.configs[-3:] == checks
    assert [step["name"] for step in checks[0]["passes"]] == ["FoldScaleAxis", "ToBasicBlockNormalForm", "AlterOpLayout"]
    request = tmp_path / "request.json"
    request.write_text(json.dumps(case.request))
    proc = run_in_relay("-c", EXECUTE, request, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    reply = json.loads(proc.stdout.splitlines()[-1])
    replies = [reply, *reply["others"]]
    assert "build" in replies[0]["stages"]  # the baseline is built
    for checked in replies[-3:]:  # their passes ran (FoldScaleAxis, AlterOpLayout, ...) and passed
        assert checked["status"] == "ok" and checked["outputs"] == [] and set(checked["stages"]) == {"passes"}, checked
    # their empty outputs are compared with nothing: no mismatch
    outcome = Judge(specs, {}).classify(case, reply)
    assert outcome.finding is None and outcome.status.value == "ok", outcome


@pytest.mark.slow  # a Relay campaign of two cases, a reduction and its reproducers checked: about a minute
def test_a_relay_pass_crash_found_by_a_check_only_sequence_is_filed_and_reproduced_by_its_script(tmp_path):
    # case 1 of seed 2: a check-only sequence runs DynamicToStatic on a module with a global
    # function, whose type inference fails (TVM 0.19; bench14's Relay campaign found it built)
    out = tmp_path / "out"
    proc = relay_campaign("--seed", 2, "--ops", 4, "--only-ops", SIMPLE_OPS, "--dtypes", "float32", "--mutations", 0,
                          "--pass-checks", 4, "--iterations", 2, "--jobs", 1, "--out", out)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    (row,) = summary["findings"]
    assert row["signature"].startswith("pass-order|crash|passes|DiagnosticError||"), row
    assert (summary["pass_checks"]["run"], summary["pass_checks"]["findings"]) == (8, 1)
    finding = json.loads((out / row["path"] / "finding.json").read_text())
    assert finding["confirmed"] and finding["extra"]["config"][CHECK_ONLY]
    assert finding["extra"]["pass_names"] == ["DynamicToStatic"]
    script = (out / row["path"] / "repro.py").read_text()
    assert "relay.build" not in script and "create_executor" not in script  # nothing of it is built
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "repro.py").write_text(script)
    python, env = relay_interpreter_alone()
    ran = subprocess.run([python, "repro.py"], cwd=alone, capture_output=True, text=True, timeout=300, env=env)
    assert ran.returncode != 0 and "DiagnosticError" in ran.stderr, ran.stderr[-2000:]
