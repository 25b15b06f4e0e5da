"""The reducer keeps a Relay finding's failure: a pass sequence's failure whose configuration
fails otherwise without the passes stays the pass's finding, and the other failure is filed
as one of its own (issue: DynamicToStatic's type inference failure became a VM crash while
it was reduced, and the bug appeared nowhere)."""
import json
from pathlib import Path

from conftest import put_pending
from test_relay_campaign import relay_campaign

CASE = Path(__file__).parent / "data" / "dynamic_to_static_beside_a_vm_crash.json"


def test_a_pass_failure_beside_another_crash_is_filed_as_the_pass_failure(tmp_path):
    out = tmp_path / "out"
    args = ["--iterations", 1, "--ops", 2, "--only-ops", "abs", "--no-pass-fuzz", "--jobs", 1, "--seed", 3,
            "--out", out]
    first = relay_campaign(*args)
    assert first.returncode == 0, first.stderr
    # the finding as the campaign kept it when first seen, in pending/: the resume finishes it
    data = json.loads(CASE.read_text())
    seen = data["finding"]
    put_pending(out, "crash-dynamic-to-static", seen,
                {k: data[k] for k in ("folder", "case", "graph", "disruption", "configs", "lowering")}, data["log"])
    resumed = relay_campaign(*args)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["unconfirmed"] == [], summary["unconfirmed"]
    # the VM's crash met without the pass is a finding of its own, not the pass's renamed
    by_oracle = {f["oracle"]: f for f in summary["findings"]}
    assert sorted(by_oracle) == ["executor", "pass-order"], summary["findings"]
    assert by_oracle["pass-order"]["signature"] == seen["signature"]
    assert "IsFullyUnconstrained" in by_oracle["executor"]["message"]
    filed = by_oracle["pass-order"]
    assert filed["oracle"] == "pass-order" and "DynamicToStatic" in filed["message"], filed
    folder = out / filed["path"]
    finding = json.loads((folder / "finding.json").read_text())
    assert finding["confirmed"] and finding["extra"]["pass_names"] == ["DynamicToStatic"]
    # the trial without passes ran as the drop_passes step's, and was not taken
    dropped = finding["extra"]["reduction"]["steps"]["drop_passes"]
    assert (dropped["calls"], dropped["successes"]) == (1, 0), dropped
    assert "IsFullyUnconstrained" not in (folder / "repro-output.txt").read_text()
    assert "relay.transform.DynamicToStatic()" in (folder / "repro.py").read_text()
    # the harnesses (reduced, and as generated) say the failure first seen in their headers
    for script in (folder / "check.py", folder / "original" / "repro.py"):
        header = script.read_text().split('"""')[1]
        assert "type inference pass was unable to infer a type" in header and "DynamicToStatic" in header, header


FAULTS = Path(__file__).parent / "data" / "max_pool2d_gradient_faults.json"


def test_two_faults_of_one_operator_s_gradient_are_two_findings_each_with_the_attributes_it_needs(tmp_path):
    """TVM 0.19's max_pool2d gradient is wrong with a dilation, and apart from that on a
    window reaching past the input into its padding (the Relay reader's R27 and R33). Keyed
    on the operator alone they were one finding (bench24: R33 merged into R27). Each
    attribute made plain where the failure holds, what stays is what each needs: a dilation,
    or only a window's sizes; the root keys name that, and two findings are filed, each
    reproducer with the plainest attributes."""
    out = tmp_path / "out"
    args = ["--iterations", 1, "--ops", 2, "--only-ops", "abs", "--no-pass-fuzz", "--jobs", 1, "--seed", 3,
            "--versions", "none", "--out", out]
    first = relay_campaign(*args)
    assert first.returncode == 0, first.stderr
    for name, saved in json.loads(FAULTS.read_text())["findings"].items():
        put_pending(out, f"wrong-result-{name}", saved["finding"], saved["case"])
    resumed = relay_campaign(*args)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["findings"]) == 2 and summary["unconfirmed"] == [], summary
    keys = {}
    for row in summary["findings"]:
        finding = json.loads((out / row["path"] / "finding.json").read_text())
        [node] = [n for n in json.loads((out / row["path"] / "case.json").read_text())["graph"]["nodes"]
                  if n["kind"] == "op"]
        assert node["op"] == "nn.max_pool2d" and not node["attrs"]["ceil_mode"]
        needs = finding["extra"]["needs"]["nn.max_pool2d"]
        keys[finding["extra"]["root_key"].split("|needs ")[1]] = (needs, node["attrs"])
        assert finding["extra"]["reduction"]["steps"]["simplify_attributes"]["successes"] >= 1
    assert set(keys) == {"nn.max_pool2d[dilation]", "nn.max_pool2d[window]"}, keys
    dilated, dilated_attrs = keys["nn.max_pool2d[dilation]"]
    assert "dilation" in dilated and (dilated_attrs["dh"], dilated_attrs["dw"]) != (1, 1)
    window, window_attrs = keys["nn.max_pool2d[window]"]
    assert "dilation" not in window and (window_attrs["dh"], window_attrs["dw"]) == (1, 1)
