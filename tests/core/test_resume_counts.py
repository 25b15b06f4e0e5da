"""What a resumed campaign knows of the findings an earlier run of it kept (campaign
machinery only: no worker, no TVM). The run before is cut off by opening the same folder
again, as a kill -9 leaves it: whatever it wrote after its last checkpoint is on disk."""
import json

from hirfuzz.campaign.coordinator import Campaign, Settings
from hirfuzz.core.finding import Finding
from hirfuzz.core.spec import load_specs

FIRST = "wrong-result|pass-order|float32|FoldConstant,PlantedChangeConstant,CanonicalizeBindings"
MINIMAL = "wrong-result|pass-order|float32|PlantedChangeConstant"


def wrong_result(signature: str) -> Finding:
    return Finding(kind="wrong-result", oracle="pass-order", stage="run", signature=signature, message="m", case=0)


def test_hits_counted_before_a_checkpoint_follow_a_finding_renamed_after_it(tmp_path):
    """A pass-order finding seen three times, checkpointed while pending, then renamed to its
    minimal sequence, filed and hit once more before the kill: the resumed run counts the
    three hits for the filed finding, and the fourth again when its case runs again."""
    specs, settings = load_specs(), Settings(out=str(tmp_path / "out"), iterations=0)
    first = Campaign(settings, specs, progress=False)
    case = first.maker.make_case(0)
    found = wrong_result(FIRST)
    first.tables.keep("findings", case, found, "log")
    for _ in range(2):
        first.tables.record(case, wrong_result(FIRST), "log")
    first.checkpoint()
    with first.tables.lock:  # what the reduction does after it
        assert not first.tables.rename_finding(found, MINIMAL)
    first.tables.file_finding("findings", found, {"repro.py": "raise SystemExit(1)\n"})
    first.tables.record(case, wrong_result(FIRST), "log")
    saved = tmp_path / "out" / found.path / "finding.json"
    # a hit is written to finding.json with the next checkpoint, before its state.json (a kill
    # between the two leaves the file ahead of the state)
    assert found.hits == 4 and json.loads(saved.read_text())["hits"] == 3
    first.tables.write_hits()
    assert json.loads(saved.read_text())["hits"] == 4

    resumed = Campaign(settings, specs, progress=False)
    assert list(resumed.tables.findings) == [MINIMAL] and resumed.tables.findings[MINIMAL].hits == 3
    assert not resumed.reductions.pending and not any((tmp_path / "out" / "pending").iterdir())
    assert json.loads(saved.read_text())["hits"] == 3
    resumed.tables.record(case, wrong_result(FIRST), "log")  # the case judged after the checkpoint, again
    assert resumed.tables.findings[MINIMAL].hits == 4


def test_hirfuzz_own_bugs_are_filed_and_known_again_on_resume(tmp_path):
    specs, settings = load_specs(), Settings(out=str(tmp_path / "out"), iterations=0)
    first = Campaign(settings, specs, progress=False)
    case = first.maker.make_case(0)
    bug = Finding(kind="mutator-error", oracle="mutation", stage="mutate", signature="mutator-error|boom",
                  message="boom", detail="Traceback: boom", case=0)
    first.tables.hirfuzz_bug(case, bug)
    first.checkpoint()
    [folder] = (tmp_path / "out" / "hirfuzz-bugs").iterdir()
    assert (folder / "log.txt").read_text() == "Traceback: boom" and bug.path == f"hirfuzz-bugs/{folder.name}"

    resumed = Campaign(settings, specs, progress=False)
    resumed.tables.hirfuzz_bug(case, Finding(kind="mutator-error", oracle="mutation", stage="mutate",
                                      signature="mutator-error|boom", message="boom", case=0))
    assert [f.hits for f in resumed.tables.own_bugs.values()] == [2]
    assert [d.name for d in (tmp_path / "out" / "hirfuzz-bugs").iterdir()] == [folder.name]
