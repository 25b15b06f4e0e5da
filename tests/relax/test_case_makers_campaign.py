"""A campaign whose cases are drawn by maker processes (--makers) judges the same cases and
files the same findings as one whose coordinator draws them."""
import json

import pytest

from conftest import run_hirfuzz
from test_campaign_engine import PLANTED_EDGE, planted_args, summary_of


def judged(out) -> dict[int, str]:
    """case -> its status, from stats.jsonl."""
    rows = [json.loads(line) for line in (out / "stats.jsonl").read_text().splitlines()]
    return {row["case"]: row["status"] for row in rows}


@pytest.mark.slow
def test_makers_find_what_the_coordinator_alone_finds(tmp_path):
    """The planted abs>negative bug (HIRFUZZ_TEST_CRASH_EDGE) over 24 cases, past the
    coverage lag: the same statuses case by case, the same finding as often, the same
    coverage and generation statistics."""
    results = {}
    for makers in (0, 2):
        out, specs_home = tmp_path / f"makers-{makers}", tmp_path / f"specs-{makers}"
        specs_home.mkdir()
        proc = run_hirfuzz(*planted_args(specs_home, out, 24, 2), "--makers", makers,
                           env=PLANTED_EDGE)
        assert proc.returncode == 0, proc.stderr
        s = summary_of(out)
        results[makers] = (judged(out), [(f["signature"], f["hits"]) for f in s["findings"]],
                           s["coverage"], s["generation"])
    assert len(results[0][0]) == 24 and results[0][1], results[0]
    assert results[2] == results[0]
