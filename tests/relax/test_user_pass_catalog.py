"""A user's pass catalog is checked on a worker before the campaign starts: a pass that cannot
be made stops it with one line naming the file, the pass and the error (issue 24, item 7).
Before, each such pass failed every case that drew it and was filed as a finding of TVM's:
'NotAPass crashes on divide', confirmed."""
from conftest import run_hirfuzz
from user_pass_catalogs import BROKEN, GOOD, check_ran, check_refused

SMALL = ["--iterations", 2, "--ops", 4, "--jobs", 1, "--no-progress", "--only-ops", "add,multiply,exp"]


def test_a_catalog_with_passes_that_cannot_be_made_stops_the_campaign(tmp_path):
    out = tmp_path / "out"
    check_refused(run_hirfuzz("--passes", BROKEN, "--out", out, *SMALL), out)


def test_a_catalog_whose_passes_are_fine_runs(tmp_path):
    out = tmp_path / "out"
    check_ran(run_hirfuzz("--passes", GOOD, "--pass-seq", "Identity,Picky", "--out", out, *SMALL), out, cases=2)
