"""A configuration that fails may leave its module changed in place: TVM 0.19's ToMixedPrecision,
failing, retypes the module it was given, so every pass run on it afterwards fails alike (seen in
a campaign: two unconfirmed "findings" of passes that ran after it, which no reproducer showed).
The worker makes the program anew for the configurations after a failed one, and for the
failures a failed pass hid (worker.failures_past). Shown here with a dialect whose failing
pass dirties the module it is given, as that one did."""
from hirfuzz.protocol import CHECK_ONLY, PAST_FAILURES
from hirfuzz.worker import execute_case


class DirtyingDialect:
    """Lowers to a plain dict; pass "Dirty" marks its module and raises, and any pass given
    a marked module raises "dirty module"."""
    name = "relax"

    def __init__(self):
        self.lowered = 0

    def lower(self, request):
        self.lowered += 1
        return {"dirty": False}

    def check_well_formed(self, module):
        pass

    def take_diagnostics(self):
        return []

    def apply_passes(self, module, config):
        from hirfuzz.breadcrumbs import TRAIL, Stage
        for position, step in enumerate(config.get("passes") or []):
            TRAIL.at(Stage.PASSES, step["name"], position)
            if module["dirty"]:
                raise ValueError("dirty module")
            if step["name"] == "Dirty":
                module["dirty"] = True
                raise ValueError("the pass's own failure")
        return module


def check_only(*names: str) -> dict:
    return {"name": "vm", "target": "llvm", "opt_level": 2, CHECK_ONLY: True,
            "passes": [{"name": n, "args": {}} for n in names]}


def test_configurations_after_a_failed_one_and_the_failures_it_hid_run_on_the_program_made_anew():
    dialect = DirtyingDialect()
    configs = [check_only(), check_only("Dirty", "Fine", "Dirty", "Fine"), check_only("Fine")]
    reply = execute_case({"case": 0, "configs": configs, "run": False}, dialect, cache=None)
    failed, after = reply["others"]
    assert "the pass's own failure" in failed["message"]
    # the rest of its sequence on a clean module: the second Dirty fails as itself, and
    # without it too the sequence runs on a clean one, and passes
    assert [(p["message"], p["dropped"]) for p in failed[PAST_FAILURES]] == [("the pass's own failure", [0])]
    assert after["status"] == "ok"      # the next configuration is not the failed one's victim
    assert dialect.lowered == 4         # the case, each run of the failed sequence's rest, the next configuration
