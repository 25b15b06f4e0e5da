"""Two inference functions lacking one check, whose ops then trip over one later check in
TVM's source, are one disruptive finding (findings.FindingTables.joined_by_later_failure)."""
import json
import threading
from types import SimpleNamespace

import pytest

from hirfuzz.campaign.findings import FindingTables
from hirfuzz.campaign.known import KnownFindings
from hirfuzz.campaign.outdir import OutDir
from hirfuzz.core.finding import Finding

SORT_DISPATCH = {"exc_type": "InternalError", "where": "runtime/extra/contrib/sort/sort.cc",
                 "said": "Unsupported input dtype: DT"}


def _finding(op, site, fails_at, case):
    return Finding(kind="poor-diagnostic", oracle="disruptive", stage="run", message="", case=case,
                   signature=f"missing-check|dtype-unsupported|{site}",
                   extra={"fails_at": fails_at, "violation": {"kind": "dtype-unsupported", "op": op, "dtype": "int16",
                                                              "detail": f"{op} on int16"}})


def _tables(tmp_path):
    return FindingTables(OutDir(tmp_path), 0, SimpleNamespace(findings_hits=0), KnownFindings(frozenset(), {}),
                         threading.RLock(), lambda line: None)


def test_ops_typed_apart_that_fail_later_at_one_check_are_one_finding(tmp_path):
    tables = _tables(tmp_path)
    sort = _finding("sort", "InferTypeSort", SORT_DISPATCH, 1)
    tables.file_finding("findings", sort, {"repro.py": "print()\n"})
    topk = _finding("topk", "InferTypeTopK", SORT_DISPATCH, 2)
    tables.record(SimpleNamespace(index=2), topk, "")
    tables.write_hits()  # as the next checkpoint does
    saved = json.loads((tmp_path / sort.path / "finding.json").read_text())
    assert saved["hits"] == 2 and [h["op"] for h in saved["extra"]["hit_by"]] == ["sort", "topk"]
    assert list(tables.findings) == [sort.signature]


@pytest.mark.parametrize("where, said", [("run", "std::bad_alloc"), ("_ffi/base.py", "Check failed: (f)")])
def test_a_later_failure_that_names_no_tvm_source_joins_nothing(tmp_path, where, said):
    """A bare std::bad_alloc at run time, or TVM 0.19's error raised from its FFI's Python,
    says nothing of which check is missing: nn.pad's negative width and another op's stay
    two findings."""
    tables = _tables(tmp_path)
    bare = {"exc_type": "InternalError", "where": where, "said": said}
    pad = _finding("nn.pad", "InferTypePad", bare, 1)
    tables.file_finding("findings", pad, {"repro.py": "print()\n"})
    tile = _finding("tile", "InferTypeTile", bare, 2)
    assert tables.joined_by_later_failure(tile) == tile.signature
