"""A worker that dies in the build after a pass sequence has its sequence minimised, as a
death inside a pass has (reduction_steps._failing_passes): the reproducer and the title then
hold only the passes the death needs (issue 27: titles name only what the reduced program
needs). Real TVM 0.19: float16 asin aborts LLVM in the build (an assertion on debug records,
bench20 relay-now 0019); ToMixedPrecision makes the float16 program, CanonicalizeOps is a
bystander the title named."""
import json

from test_relay_campaign import relay_campaign


def test_a_death_in_the_build_keeps_only_the_passes_it_needs(tmp_path):
    out = tmp_path / "out"
    proc = relay_campaign("--mode", "strict", "--only-ops", "asin", "--pass-seq", "CanonicalizeOps,ToMixedPrecision",
                          "--iterations", 3, "--ops", 1, "--seed", 1, "--out", out, "--jobs", 1, "--versions", "none")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["unconfirmed"] == [], summary["unconfirmed"]
    deaths = [row for row in summary["findings"] if "killed by SIGABRT in the build stage" in row["message"]]
    assert len(deaths) == 1, [row["message"][:120] for row in summary["findings"]]
    folder = out / deaths[0]["path"]
    finding = json.loads((folder / "finding.json").read_text())
    case = json.loads((folder / "case.json").read_text())  # the reduced case, its failing configuration last
    assert [step["name"] for step in case["configs"][-1]["passes"]] == ["ToMixedPrecision"]
    assert finding["extra"]["reduction"]["steps"]["minimise_passes"]["successes"] >= 1
    assert "CanonicalizeOps" not in (folder / "repro.py").read_text()
    title = (folder / "bug-report.md").read_text().splitlines()[0]
    assert title == "### [Bug][Relay] ToMixedPrecision makes TVM crash (SIGABRT)", title
