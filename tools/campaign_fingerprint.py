"""A short fixed-seed Relax campaign, printed as a JSON fingerprint of what it generated
and found: the golden test (tests/relax/test_campaign_golden.py) compares it with one
taken before a restructure, so a refactoring of the coordinator shows it changed nothing.

    python tools/campaign_fingerprint.py [--out DIR] > fingerprint.json

Three campaigns run in this process: a strict one (lowering features, a drawn pass
sequence, a mutant, a second executor), a disruptive one, and a strict one with planted
bugs. Per case the fingerprint keeps a sha256 of its graph, lowering and configurations,
and its status in stats.jsonl; per campaign, the counts summary.json gives and each saved
finding: its signature, hits, size and the (reduced) case its reproducer was made from.

It records cases by wrapping `Campaign.judge`, whose signature (case, answer) and the
case's `graph`, `lowering` and `configs` fields are the only internals it relies on:
they must stay, or this tool must learn the new names, for the golden file to stay
comparable.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hirfuzz.campaign.coordinator import Campaign, Settings  # noqa: E402
from hirfuzz.campaign.oracles import ORACLE_FIELD  # noqa: E402
from hirfuzz.core.passes import load_catalog, parse_sequence  # noqa: E402
from hirfuzz.core.spec import DEFAULT_SPEC_DIR, load_specs  # noqa: E402

PLANTED_PASSES = ROOT / "tests" / "relax" / "planted" / "planted.yaml"
# TVM 0.27 infers add on bool tensors, then fails to build it: a baseline crash at "build"
ADD_BOOL = {"name": "add_bool", "inputs": ["a", {"name": "b", "shape": "a.shape"}], "dtypes": ["bool"],
            "constraints": ["b.shape == a.shape"], "reference": "np.logical_or(a, b)",
            "dialects": {"relax": {"op": "add"}}}

# small and quick (under a minute in all on this machine), yet through every oracle: a
# pass sequence, a mutant and the compiled executor for each strict case
CAMPAIGNS = {
    # mutations pinned: the fingerprint keeps guarding the mutation oracle, off by default
    "strict": dict(mode="strict", seed=11, iterations=30, ops=8, executors=["vm", "compiled"], mutations=1),
    "disruptive": dict(mode="disruptive", seed=5, iterations=8, ops=3, mutations=1),
    # planted bugs, for the statuses and findings a natural short campaign rarely shows: a
    # wrong result after a faulty pass (minimised), a crash of the baseline, a worker killed
    "planted": dict(mode="strict", seed=1, iterations=8, ops=5, only_ops=["add_bool", "add", "exp", "abs"],
                    pass_files=[str(PLANTED_PASSES)], mutations=0,
                    pass_seq="FoldConstant,PlantedChangeConstant,CanonicalizeBindings",
                    # its passes are probed, but generation is not steered by the probe: the
                    # fingerprint guards the coordinator, and tests/relax/test_pass_probe.py the steering
                    direct=False,
                    # nor by its confirmed one-op add_bool crash (campaign.avoidance), which
                    # tests/relax/test_avoid_found.py guards: avoided, cases 4-7 would differ
                    avoid_found=False),
}
PLANTED_CRASHES = "3:segfault"  # case 3's worker dies (HIRFUZZ_TEST_CRASH)
FINDING_TABLES = ("findings", "unconfirmed", "spec_disagreements", "hirfuzz_bugs")
# what summary.json counts; times and worker figures are left out (they vary run to run)
COUNTS = ("cases", "valid", "built", "ran", "compared", "not_run", "disruptive", "ir_features", "mutators")


def digest(data) -> str:
    """sha256 of the data, with this checkout's path made a placeholder: a user pass's step
    records the folder of its module, and the golden file must hold in any checkout."""
    text = json.dumps(data, sort_keys=True).replace(str(ROOT), "<checkout>")
    return hashlib.sha256(text.encode()).hexdigest()


def configs_digest(configs: list | None) -> str:
    """sha256 of a case's configurations without the oracle each names (ORACLE_FIELD, which
    configurations carry since issue 29 and the golden file predates): it repeats what
    the rest of a configuration says, so the hashes stay comparable."""
    return digest(None if configs is None else [{k: v for k, v in c.items() if k != ORACLE_FIELD} for c in configs])


def case_prints(seen: list) -> dict:
    """Each judged case's graph, lowering and configurations, hashed, by case index."""
    return {str(case.index): {"graph": digest(case.graph.to_json()), "lowering": digest(case.lowering),
                              "configs": configs_digest(case.configs)} for case in seen}


def finding_print(out: Path, table: str, row: dict) -> dict:
    """A saved finding: its signature and size, and the case its reproducer was made from
    (after reduction)."""
    case = json.loads((out / row["path"] / "case.json").read_text())
    return {"table": table, "signature": row["signature"], "kind": row["kind"], "oracle": row["oracle"],
            "stage": row["stage"], "hits": row["hits"], "ops": row["ops"], "reduced_from": row["reduced_from"],
            "case": case["case"], "graph": digest(case["graph"]), "lowering": digest(case.get("lowering")),
            "configs": configs_digest(case.get("configs"))}


def run_recording(campaign: Campaign) -> tuple[dict, list]:
    """Run `campaign`, keeping each case it judges, in judging order: (summary, cases).
    tools/bench_floor.py uses it too."""
    seen = []
    judge = Campaign.judge

    def recording_judge(self, case, *answers):
        seen.append(case)
        return judge(self, case, *answers)

    Campaign.judge = recording_judge
    try:
        return campaign.run(), seen
    finally:
        Campaign.judge = judge


def run_campaign(out: Path, specs, **settings) -> dict:
    # what the campaign says goes to stderr: stdout is the fingerprint's
    # versions=[]: confirmed findings are not also run under the other Relax releases set up on
    # this machine (their verdicts are not in the fingerprint; a machine without them, as CI,
    # gives the same one), so the campaigns take the same time on every machine
    with contextlib.redirect_stdout(sys.stderr):
        summary, seen = run_recording(Campaign(Settings(out=str(out), jobs=1, versions=[], **settings), specs,
                                               progress=False))
    cases = case_prints(seen)
    for line in (out / "stats.jsonl").read_text().splitlines():
        record = json.loads(line)
        cases[str(record["case"])]["status"] = record["status"]
    findings = sorted((finding_print(out, table, row) for table in FINDING_TABLES for row in summary[table]),
                      key=lambda f: (f["table"], f["signature"]))
    return {"cases": dict(sorted(cases.items(), key=lambda kv: int(kv[0]))),
            "counts": {k: summary[k] for k in COUNTS}, "findings": findings}


def planted_specs(root: Path):
    """The shipped op specs plus ADD_BOOL."""
    folder = root / "planted-specs"
    shutil.copytree(DEFAULT_SPEC_DIR, folder)
    (folder / "planted.yaml").write_text(yaml.safe_dump({"ops": [ADD_BOOL]}))
    return load_specs(folder)


def fingerprint(root: Path) -> dict:
    root.mkdir(parents=True, exist_ok=True)
    specs = load_specs()
    result = {}
    for name, settings in CAMPAIGNS.items():
        settings = dict(settings)
        if name == "planted":
            catalog = load_catalog(settings["pass_files"])
            settings["pass_seq"] = parse_sequence(settings["pass_seq"], catalog)
            os.environ["HIRFUZZ_TEST_CRASH"] = PLANTED_CRASHES
            try:
                result[name] = run_campaign(root / name, planted_specs(root), **settings)
            finally:
                del os.environ["HIRFUZZ_TEST_CRASH"]
        else:
            result[name] = run_campaign(root / name, specs, **settings)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="folder for the campaigns' output (default: a temporary one)")
    args = parser.parse_args()
    if args.out:
        result = fingerprint(Path(args.out))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            result = fingerprint(Path(tmp))
    print(json.dumps(result, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
