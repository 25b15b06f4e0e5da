"""Failures on a target alone, told from llvm's, and the op-spec `targets:` entries that record
them: the pure comparison on recorded results (apache-tvm 0.27 on an H100, cuda-facts.md), the
file conformance --write-targets writes, and tools/merge_target_exclusions.py on real spec files."""
import subprocess
import sys

import yaml

from conftest import ROOT
from hirfuzz.campaign.target_failures import (Outcome, SampleResult, TargetEntry, is_known, new_entries,
                                              read_entries, read_known_entries, target_specific_failures,
                                              write_entries, wrong_results)
from merge_target_exclusions import merge_into_text

MOD_F16 = ("InternalError: Check failed: (false) is false: Non single or double precision floating point "
           "in Mod, expected 32 or 64 bits but got 16 bits.")
MEAN_I64 = "InternalError: Check failed: block_realize == old_block_realize_.get() (0x3a4bb620 vs. 0x3a45bc70) :"


def result(op, dtype, target, outcome, index=0, error="", stage=""):
    return SampleResult(op, dtype, index, target, outcome, stage=stage or ("build" if error else ""), error=error)


# recorded on the H100 (cuda-facts.md), with one failure llvm shares and one wrong result added
RECORDED = [
    result("mod", "float16", "llvm", Outcome.PASSED),
    result("mod", "float16", "cuda", Outcome.FAILED, error=MOD_F16),
    result("mod", "float32", "llvm", Outcome.PASSED),
    result("mod", "float32", "cuda", Outcome.PASSED),
    result("mean", "int64", "llvm", Outcome.NOT_COMPARED),
    result("mean", "int64", "cuda", Outcome.FAILED, error=MEAN_I64),
    result("nn.conv1d", "float16", "llvm", Outcome.PASSED),
    result("nn.conv1d", "float16", "cuda", Outcome.FAILED, error="AssertionError: "),
    result("nn.conv1d", "float64", "llvm", Outcome.PASSED, index=1),
    result("nn.conv1d", "float64", "cuda", Outcome.FAILED, index=1, error="AssertionError: "),
    result("sort", "int8", "llvm", Outcome.FAILED, error="TVMError: the spec's own"),
    result("sort", "int8", "cuda", Outcome.FAILED, error="TVMError: the spec's own"),
    result("exp", "float16", "llvm", Outcome.PASSED),
    result("exp", "float16", "cuda", Outcome.WRONG, error="result 0: 3 of 8 differ"),
    result("round", "float16", "cuda", Outcome.FAILED, error="RuntimeError: "),   # llvm never answered
]


def test_only_failures_on_the_target_alone_count():
    failures = target_specific_failures(RECORDED, "cuda")
    assert [(f.op, f.dtype) for f in failures] == [
        ("mod", "float16"), ("mean", "int64"), ("nn.conv1d", "float16"), ("nn.conv1d", "float64")]
    assert target_specific_failures(RECORDED, "llvm") == []


def test_wrong_results_are_findings_not_exclusions():
    assert [(w.op, w.dtype) for w in wrong_results(RECORDED, "cuda")] == [("exp", "float16")]
    entries = new_entries(target_specific_failures(RECORDED, "cuda"), {}, "relax", "x")
    assert "exp" not in entries


def test_new_entries_group_an_ops_dtypes_by_error():
    entries = new_entries(target_specific_failures(RECORDED, "cuda"), {}, "relax",
                          "conformance --target cuda on NVIDIA H100, TVM 0.27.0, 2026-11-24")
    assert entries["nn.conv1d"]["cuda"] == [TargetEntry(
        "AssertionError: ", "measured: conformance --target cuda on NVIDIA H100, TVM 0.27.0, 2026-11-24; "
        "fails at build in 2 sample(s)", ("float16", "float64"), "", ("relax",))]
    assert entries["mod"]["cuda"][0].dtypes == ("float16",)
    assert entries["mod"]["cuda"][0].error == MOD_F16


def test_known_entries_are_not_new():
    known = {"mod": {"cuda": [TargetEntry("anything", dtypes=("float16",))]},
             # a condition is matched by the error, its addresses aside
             "mean": {"cuda": [TargetEntry(MEAN_I64.replace("0x3a4bb620", "0x1"), when="a.rank > 1",
                                           dtypes=("int64",), dialects=("relax",))]},
             # a condition with another error: not this failure
             "nn.conv1d": {"cuda": [TargetEntry("ValueError: Error in pass: _pipeline", when="groups > 1")]}}
    failures = target_specific_failures(RECORDED, "cuda")
    assert [is_known(known, f, "relax") for f in failures] == [True, True, False, False]
    assert not is_known(known, failures[1], "relay")   # the entry is Relax's
    assert list(new_entries(failures, known, "relax", "x")) == ["nn.conv1d"]


def test_the_written_file_reads_back(tmp_path):
    entries = new_entries(target_specific_failures(RECORDED, "cuda"), {}, "relax", "x")
    path = tmp_path / "cuda.yaml"
    write_entries(path, entries, "a header\nof two lines")
    assert path.read_text().startswith("# a header\n# of two lines\n")
    assert read_entries(path) == entries


def without_target_blocks(spec_dir):
    """The shipped specs already record these failures: take their `targets:` blocks out of
    the copy, so the merge has them to add."""
    for path in spec_dir.glob("*.yaml"):
        kept, inside = [], False
        for line in path.read_text().splitlines(keepends=True):
            indent = len(line) - len(line.lstrip())
            if line.strip() == "targets:" and indent == 4:
                inside = True
                continue
            if inside and line.strip() and indent <= 4:
                inside = False
            if not inside:
                kept.append(line)
        path.write_text("".join(kept))
    return spec_dir


def _merge(entries_file, spec_dir):
    return subprocess.run([sys.executable, str(ROOT / "tools" / "merge_target_exclusions.py"), str(entries_file),
                           "--spec-dir", str(spec_dir)], capture_output=True, text=True, cwd=ROOT)


def test_merge_adds_entries_and_leaves_the_rest_of_the_text(tmp_path, spec_copy):
    without_target_blocks(spec_copy)
    entries = new_entries(target_specific_failures(RECORDED, "cuda"), {}, "relax", "measured: here")
    write_entries(tmp_path / "cuda.yaml", entries, "test")
    before = {p.name: p.read_text() for p in spec_copy.glob("*.yaml")}
    proc = _merge(tmp_path / "cuda.yaml", spec_copy)
    assert proc.returncode == 0, proc.stderr
    assert "4 entries added" not in proc.stdout and "3 entries added" in proc.stdout   # conv1d's two dtypes: one
    after = {p.name: p.read_text() for p in spec_copy.glob("*.yaml")}
    assert {n for n in before if before[n] != after[n]} == {"binary.yaml", "reduction.yaml", "nn.yaml"}
    for name in ("binary.yaml", "reduction.yaml", "nn.yaml"):
        old, new = before[name].splitlines(), after[name].splitlines()
        added = len(new) - len(old)
        start = next(i for i, (a, b) in enumerate(zip(old, new)) if a != b)
        assert new[:start] + new[start + added:] == old   # one block inserted, nothing else touched
        assert new[start].strip() == "targets:"
    assert read_known_entries(spec_copy)["nn.conv1d"]["cuda"] == entries["nn.conv1d"]["cuda"]
    mod, mod_before = (next(o for o in yaml.safe_load(text["binary.yaml"])["ops"] if o["name"] == "mod")
                       for text in (after, before))
    assert mod["dialects"] == mod_before["dialects"] and "targets" not in mod["dialects"]["relax"]  # after, not inside
    assert mod["targets"]["cuda"][0]["error"] == MOD_F16
    again = _merge(tmp_path / "cuda.yaml", spec_copy)
    assert again.returncode == 0 and "0 entries added" in again.stdout
    assert {p.name: p.read_text() for p in spec_copy.glob("*.yaml")} == after


def test_merge_keeps_hand_written_entries(tmp_path, spec_copy):
    without_target_blocks(spec_copy)
    binary = spec_copy / "binary.yaml"
    hand = ("    targets:\n      cuda:\n        # written by hand\n"
            "        - dtypes: [float16]\n          error: \"a hand-written line\"\n"
            "          note: \"src/target/source/codegen_cuda.cc: no 16-bit fmod\"\n")
    text = binary.read_text()
    anchor = "    note: truncated remainder (sign of the dividend), like np.fmod, for integers and floats\n"
    binary.write_text(text.replace(anchor, hand + anchor))
    found = {"mod": {"cuda": [TargetEntry(MOD_F16, "measured", ("float16", "int8"), "", ("relax",))]}}
    write_entries(tmp_path / "cuda.yaml", found, "test")
    proc = _merge(tmp_path / "cuda.yaml", spec_copy)
    assert proc.returncode == 0, proc.stderr
    merged = binary.read_text()
    assert "# written by hand" in merged and merged.count("targets:") == text.count("targets:") + 1
    mod = next(o for o in yaml.safe_load(merged)["ops"] if o["name"] == "mod")
    assert mod["targets"]["cuda"] == [
        {"dtypes": ["float16"], "error": "a hand-written line", "note": "src/target/source/codegen_cuda.cc: no 16-bit fmod"},
        {"dtypes": ["int8"], "dialects": ["relax"], "error": MOD_F16, "note": "measured"}]


def test_merge_names_an_unknown_op(tmp_path, spec_copy):
    write_entries(tmp_path / "cuda.yaml", {"no_such_op": {"cuda": [TargetEntry("E")]}}, "test")
    proc = _merge(tmp_path / "cuda.yaml", spec_copy)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"merge_target_exclusions: no op spec in {spec_copy} for no_such_op"]


def test_merge_into_text_inserts_at_the_ops_end_without_dialects():
    text = "ops:\n  - name: a\n    dtypes: [int8]\n\n  # b's comment\n  - name: b\n    dtypes: [int8]\n"
    merged = merge_into_text(text, "a", "cuda", [TargetEntry("E: x", "n", ("int8",))])
    assert merged == ("ops:\n  - name: a\n    dtypes: [int8]\n    targets:\n      cuda:\n"
                      "        - dtypes: [int8]\n          error: \"E: x\"\n          note: \"n\"\n"
                      "\n  # b's comment\n  - name: b\n    dtypes: [int8]\n")


def test_judge_counts_a_known_failure_on_cuda_and_reports_an_unknown_one(specs):
    """A real sample of mod float16 and a worker's answer as it comes back for a case run on llvm
    (the reference's values) and on cuda (the H100's build error, recorded)."""
    from hirfuzz.campaign.conformance import judge, make_configs, make_samples
    from hirfuzz.protocol import encode_array

    configs = make_configs("relax", None, "cuda")
    assert [(c["name"], c["target"]) for c in configs] == [("vm", "llvm"), ("vm", "cuda")]
    sample, request = next(item for op, item in make_samples(specs, ["mod"], 1, 0, configs)
                           if item[0].dtype == "float16")
    assert request["configs"] == configs
    answer = {"status": "ok", "outputs": [encode_array(f.value) for f in sample.expected],
              "others": [{"status": "error", "stage": "build", "exc_type": "InternalError", "message": MOD_F16}]}
    known = {"mod": {"cuda": [TargetEntry("no 16-bit fmod", dtypes=("float16",))]}}
    problems, compared, known_count, results = judge(sample, answer, configs, "relax", known)
    assert (problems, compared, known_count) == ([], 1, 1)
    assert [(r.target, r.outcome) for r in results] == [("llvm", Outcome.PASSED), ("cuda", Outcome.FAILED)]
    problems, _, known_count, _ = judge(sample, answer, configs, "relax", {})
    assert known_count == 0
    assert problems == [f"{sample.description} on vm on cuda: build: {MOD_F16}"]
    # the same failure on llvm as well is the spec's, whatever the entries say
    both = dict(answer, status="error", stage="build", exc_type="InternalError", message=MOD_F16)
    problems, _, known_count, _ = judge(sample, both, configs, "relax", known)
    assert known_count == 0 and len(problems) == 2
