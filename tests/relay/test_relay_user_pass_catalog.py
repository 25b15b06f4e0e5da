"""Relay: a user's pass catalog is checked on a worker under TVM 0.19 before the campaign
starts, as Relax's is (tests/relax/test_user_pass_catalog.py)."""
from test_relay_campaign import relay_campaign
from user_pass_catalogs import BROKEN, GOOD, check_ran, check_refused

SMALL = ["--iterations", 2, "--ops", 4, "--jobs", 1, "--only-ops", "add,multiply,exp", "--dtypes", "float32"]


def test_a_catalog_with_passes_that_cannot_be_made_stops_the_campaign(tmp_path):
    out = tmp_path / "out"
    check_refused(relay_campaign("--passes", BROKEN, "--out", out, *SMALL), out)


def test_a_catalog_whose_passes_are_fine_runs(tmp_path):
    out = tmp_path / "out"
    check_ran(relay_campaign("--passes", GOOD, "--pass-seq", "Identity,Picky", "--out", out, *SMALL), out, cases=2)
