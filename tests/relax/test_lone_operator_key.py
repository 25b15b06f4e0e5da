"""A pass's failures on a program reduced to one operator are one finding, whatever the
message (core.finding.lone_operator_key): a real campaign of one-operator `stack` programs
under ConvertLayout on TVM 0.27, whose InferLayoutStack fails three ways by the axis and
rank drawn (a negative axis: basic_string::replace; an axis equal to the inputs' rank:
Index -1; 0-d inputs: SIGFPE). Before, each was a finding of its own (bench18f, bench20)."""
import json

from conftest import run_hirfuzz


def test_convert_layout_on_stack_failing_three_ways_is_one_finding(tmp_path):
    out = tmp_path / "out"
    # --no-direct: the graphs depend on the seed alone, not on what the probe (bounded by --time) saw
    proc = run_hirfuzz("--only-ops", "stack", "--pass-seq", "ConvertLayout", "--no-direct", "--ops", 1,
                       "--iterations", 14, "--time", 90, "--seed", 0, "--jobs", 1, "--versions", "none",
                       "--no-progress", "--out", out)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["findings"]) == 1, [f["message"] for f in summary["findings"]]
    finding = json.loads((out / summary["findings"][0]["path"] / "finding.json").read_text())
    assert finding["confirmed"] and finding["extra"]["operator_key"] == "root|pass-operator|ConvertLayout|stack"
    merged = finding["extra"]["merged"]
    # the three failures, each confirmed by its own scripts before it joined
    def failure(saved: dict) -> str:
        return saved["extra"].get("exc_type") or saved["extra"]["signal"]
    failures = {failure(finding)} | {failure(json.loads((out / m["path"] / "finding.json").read_text())) for m in merged}
    assert failures == {"IndexError", "InternalError", "SIGFPE"}, failures
    for m in merged:
        joined = json.loads((out / m["path"] / "finding.json").read_text())
        assert joined["confirmed"] and (out / m["path"] / "repro.py").is_file()
        assert "root|pass-operator|ConvertLayout|stack" in m["root_keys"]
