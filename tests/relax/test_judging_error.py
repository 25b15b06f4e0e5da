"""A bug of hirfuzz's own in judging one case's answer does not end the campaign (bench29
relay seed 23 stopped at 1273 s on a KeyError judging a reply it had never met): the case
is filed in hirfuzz-bugs/ with the traceback, the campaign runs on, and the command ends
with exit status 3 and a line saying so. The fault is planted in hirfuzz's judge; the
campaign is the CLI's, on real TVM workers."""
import json
import subprocess
import sys

from conftest import ROOT

PLANTED = """
import sys
from hirfuzz.campaign.judge import Judge
classify = Judge.classify
def failing_on_case_1(self, case, answer, known=None):
    if case.index == 1:
        return {}["outputs"]
    return classify(self, case, answer, known)
Judge.classify = failing_on_case_1
from hirfuzz.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_case_hirfuzz_fails_to_judge_is_its_own_bug_and_the_campaign_goes_on(tmp_path):
    out = tmp_path / "out"
    args = ("--iterations", 4, "--ops", 4, "--seed", 2, "--jobs", 1, "--no-progress", "--no-pass-fuzz", "--out", out)
    proc = subprocess.run([sys.executable, "-c", PLANTED, *map(str, args)], capture_output=True, text=True,
                          timeout=600, cwd=ROOT)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "hirfuzz's own bug: it failed judging 1 case(s)" in proc.stderr
    assert "Traceback" not in proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cases"] == 4
    [bug] = summary["hirfuzz_bugs"]
    assert (bug["kind"], bug["stage"]) == ("judge-error", "judge")
    assert bug["message"].startswith("hirfuzz failed judging case 1's answer: KeyError: 'outputs'")
    log = (out / bug["path"] / "log.txt").read_text()
    assert "failing_on_case_1" in log and "KeyError" in log
    statuses = [json.loads(line)["status"] for line in (out / "stats.jsonl").read_text().splitlines()]
    assert statuses.count("unjudged") == 1 and len(statuses) == 4
