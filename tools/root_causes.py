"""Findings per root cause of saved Relax campaigns, before and after the pass catalog's
`runs_inside_it`: each confirmed finding's reduced program is run once more under its
failing configuration, with its steps as saved (no `runs_inside_it`: before) and as the
catalog makes them now (after), judged as a campaign judges it, and keyed
(core.finding.root_key). Needs the TVM the campaigns ran (apache-tvm 0.27).

    python tools/root_causes.py [--narrowing] [--alone] | --saved] OUT [OUT ...]

Prints, per finding, its root key before and after where they differ, then per campaign
the findings and the distinct root keys: as saved, before and after. Only a finding that
failed in a pass (a raise or an ill-formed output) is run again: where a build, a run or a
worker's death fails, which pass TVM runs inside another plays no part, and its saved
root key stands (its signature's, where the campaign saved none), but for a worker's death,
keyed now on the fatal line its log ends with (core.finding.death_root_key), where it has one.

--saved runs nothing again: each finding's key as saved and as hirfuzz keys it now from what
it saved (current_key: a crash or death from its signature, detail and message, and its
case.json's lowering plan and passes; any other as saved). Relay campaigns' programs this tool
cannot run (it lowers with Relax): use --saved for them.

--narrowing projects a check hirfuzz does not make (issue 27's "one finding per root
cause", the CanonicalizeBindings family): after each pass of a finding's failing
sequence, is any call typed narrower than its operator infers from its arguments now
(dialects/relax/narrowing.narrowed_calls: a static shape where inference gives a symbolic
one: a match_cast dropped, nothing checks the claim at run time)? A finding whose sequence has such a pass is keyed on the first
one (or on the first pass it runs inside itself that narrows alike, alone), whatever
fails later; the others keep their key. TVM's well_formed makes this check only for
call_tir (its FValidate). A projection: that the narrowed call is what fails later is
not checked here (a program may carry it and fail for another reason); tools/narrowing_effect.py
checks it (the failure with the narrowing undone: narrowing.widened), and campaigns key a
finding on its narrowing only where that check clears it (reduction step narrowing_cause).
tools/narrowing_triggers.py finds each narrowing a refinement CanonicalizeBindings makes on
purpose (it substitutes the constants a kept match_cast binds the symbols to, then drops
the match_cast this made trivial), so it is no well-formedness check; bench26's readers
count the failures it leads to as one TVM fault.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tvm  # noqa: E402

from hirfuzz.campaign.cases import Case  # noqa: E402
from hirfuzz.campaign.judge import Judge  # noqa: E402
from hirfuzz.campaign.reducer import _PREFIXES, operator_key_on  # noqa: E402
from hirfuzz.campaign.reduction_steps import (PASS_STAGES, failure_position, fails_no_later,  # noqa: E402
                                              narrowing_pass)
from hirfuzz.core.calls import call_records  # noqa: E402
from hirfuzz.core.finding import (ROOT, Finding, failed_pass_of, narrowing_root_key, pass_failed_in,  # noqa: E402
                                  pass_root_key, root_key, stale_type_carrier)
from hirfuzz.core.graph import Graph  # noqa: E402
from hirfuzz.core.passes import load_catalog  # noqa: E402
from hirfuzz.core.reduce import keep_operators  # noqa: E402
from hirfuzz.core.spec import load_specs  # noqa: E402
from hirfuzz.dialects import dialect_info, load_dialect  # noqa: E402
from hirfuzz.dialects.relax.narrowing import first_narrowing_step, new_narrowed_calls  # noqa: E402
from hirfuzz.dialects.relax.passes import EVERY_LEVEL, instantiate_pass  # noqa: E402
from hirfuzz.protocol import CHECK_ONLY  # noqa: E402
from hirfuzz.worker import execute_case  # noqa: E402


def saved_key(finding: dict) -> str:
    """The root key a campaign saved, or its signature's (a death's: the signature itself)."""
    return (finding["extra"].get("root_key") or root_key(finding["signature"], _PREFIXES)
            or finding["signature"])


def current_key(finding: dict, case_json: dict | None = None, one_root_cause: frozenset = frozenset()) -> str:
    """The root key hirfuzz gives a saved finding now without running it, from its signature
    and its detail (a worker's death: the fatal line of its log; a crash: the frame of TVM's
    Python that raised it): a crash in a pass no frame places is keyed on the pass that raised
    where the finding says (extra.failed_pass), else on its reduced program's one pass; a
    ToMixedPrecision type error also on what in its reduced program (`case_json`, its
    case.json) carries the stale type (stale_type_carrier); a failure in a pass of
    `one_root_cause` (its catalog entry's) on that pass alone; a crash a campaign found
    going away with a pass's narrowing checked (extra.narrowed_by: a trial, which this does
    not run again) on that pass as keyed now (reduction_steps.narrowing_pass); any other as
    saved."""
    narrowed_by = finding["extra"].get("narrowed_by")
    if narrowed_by and case_json is not None:
        return narrowing_root_key(narrowing_pass(case_json["configs"][-1]["passes"][narrowed_by["position"]]))
    if finding["kind"] != "crash" or narrowed_by:
        return saved_key(finding)
    failed_in = pass_failed_in(finding["extra"], finding.get("stage", "passes"))
    if failed_in in one_root_cause:
        return pass_root_key(failed_in)
    failed_pass = failed_pass_of(finding["extra"], finding["extra"].get("pass_names") or [], finding.get("stage", "passes"))
    construct = ""
    if case_json is not None:
        construct = stale_type_carrier(case_json.get("lowering"), case_json.get("graph"),
                                       case_json["configs"][-1].get("passes") or [])
    return (root_key(finding["signature"], _PREFIXES, failed_pass, finding.get("detail", ""), finding["message"],
                     construct) or finding["signature"])


def operator_key(finding: dict, case_json: dict | None) -> str | None:
    """The second key hirfuzz gives a saved finding now (reducer.operator_key_on), from its
    case.json (its reduced program), else None."""
    if case_json is None:
        return None
    case = SimpleNamespace(graph=Graph.from_json(case_json["graph"]), lowering=case_json.get("lowering"),
                           configs=case_json["configs"], disruption=case_json.get("disruption"))
    return operator_key_on("findings", Finding(**finding), case)


def root_causes(keys: list[list[str]]) -> int:
    """How many root causes findings with these keys are: two findings that share a key are
    one (findings.FindingTables.join_root joins on any of them)."""
    groups: list[set[str]] = []
    for finding_keys in keys:
        joined = [g for g in groups if g & set(finding_keys)]
        merged = set(finding_keys).union(*joined)
        groups = [g for g in groups if g not in joined] + [merged]
    return len(groups)


def with_catalog_steps(config: dict, catalog) -> dict:
    """`config` with each step as the catalog makes it now: its `runs_inside_it`."""
    steps = [{**step, "runs_inside_it": list(catalog.entries[step["name"]].runs_inside_it)}
             if step["name"] in catalog.entries and catalog.entries[step["name"]].runs_inside_it else step
             for step in config["passes"]]
    return {**config, "passes": steps}


def lowering_request(case_json: dict, specs) -> dict:
    """What a worker lowers a saved case's reduced program from: its graph, call records and lowering."""
    graph = Graph.from_json(case_json["graph"])
    return {"graph": case_json["graph"], "calls": call_records(graph, specs), **(case_json.get("lowering") or {})}


def rerun_key(case_json: dict, config: dict, specs, dialect, judge: Judge) -> str:
    """The root key of the reduced program failing under `config` once more ('did not
    fail' where it passed)."""
    graph = Graph.from_json(case_json["graph"])
    reply = execute_case({**lowering_request(case_json, specs), "configs": [config], "run": False}, dialect)
    case = Case(index=case_json["case"], graph=graph, inputs=[], runnable=False, expected=[], gen_ms=0.0,
                configs=[config])
    outcome = judge.classify(case, reply)
    if outcome.finding is None:
        return "did not fail"
    return root_key(outcome.finding.signature, _PREFIXES) or outcome.finding.signature


NARROWED = "a call is typed narrower than its operator infers"


def first_narrowing(case_json: dict, config: dict, specs, dialect, catalog) -> str | None:
    """The first pass of `config` (or the first pass it runs inside itself that does so
    alone, on its input, at every level as a campaign's search does) whose output has a
    narrowed call its input has not; None where none has."""
    mod = dialect.lower(lowering_request(case_json, specs))
    narrowing = first_narrowing_step(mod, config["passes"], config["opt_level"])
    if narrowing is None:
        return None
    step = config["passes"][narrowing.position]
    entry = catalog.entries.get(step["name"])
    with tvm.transform.PassContext(opt_level=EVERY_LEVEL):
        for inner in (entry.runs_inside_it if entry else []):
            inner_output = instantiate_pass({"name": inner, "args": {}})(narrowing.input)
            if new_narrowed_calls(narrowing.input, inner_output):
                return inner
    return step["name"]


def narrowing_key(folder: Path, key: str, specs, dialect, catalog) -> str:
    """`key`, or the projected key of a finding whose failing sequence narrows a call. The
    passes run in this process: a worker's death or a hang keeps its key."""
    finding = json.loads((folder / "finding.json").read_text())
    case_json = json.loads((folder / "case.json").read_text())
    config = case_json["configs"][-1]
    if finding["kind"] != "crash" or finding["stage"] == "worker" or not config.get("passes"):
        return key
    try:
        narrowing = first_narrowing(case_json, config, specs, dialect, catalog)
    except Exception:  # noqa: BLE001 - a pass that raises before any narrowing: the key stands
        return key
    return f"{ROOT}|ill-formed|{narrowing}|{NARROWED}" if narrowing else key


def alone_key(folder: Path, key: str, specs, dialect, judge: Judge) -> str:
    """`key`, or the key of the failure of one of the reduced program's operators alone
    under its failing sequence, as a campaign's step `operator_alone` (BlameOperatorAlone)
    finds it: each operator plainly lowered, check-only, the first that fails in a pass no
    later than the finding failed."""
    finding = Finding(**json.loads((folder / "finding.json").read_text()))
    case_json = json.loads((folder / "case.json").read_text())
    graph, config = Graph.from_json(case_json["graph"]), {**case_json["configs"][-1], CHECK_ONLY: True}
    latest = failure_position(finding, config["passes"] or [])
    if finding.kind != "crash" or len(graph.operators) < 2 or not config["passes"] or latest is None:
        return key
    for node in graph.operators:
        alone, _ = keep_operators(graph, {node.id})
        request = {"graph": alone.to_json(), "calls": call_records(alone, specs), "configs": [config], "run": False}
        case = Case(index=case_json["case"], graph=alone, inputs=[], runnable=False, expected=[], gen_ms=0.0,
                    configs=[config])
        found = judge.classify(case, execute_case(request, dialect)).finding
        if fails_no_later(found, config["passes"], latest):
            failed_pass = failed_pass_of(found.extra, [step["name"] for step in config["passes"]], found.stage)
            return root_key(found.signature, _PREFIXES, failed_pass, found.detail, found.message) or key
    return key


def campaign_keys(out: Path, catalog, specs, dialect, judge: Judge) -> list[tuple[str, str, str, str]]:
    """(finding folder, saved, before, after) root keys of each confirmed finding of `out`."""
    rows = []
    for folder, finding in saved_findings(out):
        saved, now = saved_key(finding), current_key(finding, saved_case(folder))
        if finding["kind"] != "crash" or finding["stage"] not in PASS_STAGES:
            rows.append((folder.name, saved, now, now))
            continue
        case_json = json.loads((folder / "case.json").read_text())
        config = case_json["configs"][-1]  # the failing one: isolation put it last
        before = rerun_key(case_json, config, specs, dialect, judge)
        after = rerun_key(case_json, with_catalog_steps(config, catalog), specs, dialect, judge)
        rows.append((folder.name, saved, before, after))
    return rows


def saved_keys(out: Path) -> list[tuple[str, str, str]]:
    """(finding folder, saved, now) root keys of each finding of `out`, nothing run (current_key)."""
    dialect = json.loads((out / "campaign.json").read_text())["settings"].get("dialect", "relax")
    catalog = load_catalog(builtin=dialect_info(dialect).catalog)
    one_root_cause = frozenset(name for name, entry in catalog.entries.items() if entry.one_root_cause)
    rows = []
    for folder, finding in saved_findings(out):
        case_json = saved_case(folder)
        now = [current_key(finding, case_json, one_root_cause)] + [k for k in [operator_key(finding, case_json)] if k]
        rows.append((folder.name, saved_key(finding), now))
    return rows


def saved_case(folder: Path) -> dict | None:
    """A finding's case.json (its reduced program), None where it kept none."""
    path = folder / "case.json"
    return json.loads(path.read_text()) if path.is_file() else None


def saved_findings(out: Path):
    """(folder, finding.json as read) of each finding `out` filed, in order."""
    for folder in sorted(p for p in (out / "findings").iterdir() if (p / "finding.json").is_file()):
        yield folder, json.loads((folder / "finding.json").read_text())


def print_saved(outs: list[Path]) -> int:
    """--saved: per campaign, the findings and their distinct root keys as saved and now."""
    table = []
    for out in outs:
        rows = saved_keys(out)
        for name, saved, now in rows:
            if [saved] != now:
                print(f"{out.name}/{name}\n  saved  {saved[:140]}" + "".join(f"\n  now    {k[:140]}" for k in now))
        table.append((out.name, len(rows), len({r[1] for r in rows}), root_causes([r[2] for r in rows])))
    print(f"\n{'campaign':<20} {'findings':>8} {'saved':>9} {'now':>9}   (distinct root keys)")
    for name, findings, saved, now in table:
        print(f"{name:<20} {findings:>8} {saved:>9} {now:>9}")
    return 0


def main(argv: list[str]) -> int:
    narrowing, saved_only, alone = "--narrowing" in argv, "--saved" in argv, "--alone" in argv
    argv = [a for a in argv if a not in ("--narrowing", "--saved", "--alone")]
    if not argv:
        print(__doc__.strip().splitlines()[6].strip(), file=sys.stderr)
        return 2
    outs = [Path(a) for a in argv]
    for out in outs:
        if not (out / "findings").is_dir():
            print(f"root_causes: error: {out}: no findings/ folder (not a campaign's --out)", file=sys.stderr)
            return 2
    if saved_only:
        return print_saved(outs)
    catalog, specs, dialect = load_catalog(), load_specs(), load_dialect("relax")
    judge = Judge(specs, {})
    table = []
    for out in outs:
        rows = campaign_keys(out, catalog, specs, dialect, judge)
        for name, saved, before, after in rows:
            if before != after or saved != before:
                print(f"{out.name}/{name}\n  saved  {saved[:140]}\n  before {before[:140]}\n  after  {after[:140]}")
        counts = [len({row[i] for row in rows}) for i in (1, 2, 3)]
        if narrowing:
            projected = [narrowing_key(out / "findings" / name, after, specs, dialect, catalog)
                         for name, _, _, after in rows]
            for (name, *_, after), key in zip(rows, projected):
                if key != after:
                    print(f"{out.name}/{name}\n  after     {after[:140]}\n  narrowing {key[:140]}")
            counts.append(len(set(projected)))
        if alone:
            # on the keys as saved: what the campaign's own keying would have made of them
            keyed = [alone_key(out / "findings" / name, saved, specs, dialect, judge) for name, saved, _, _ in rows]
            for (name, saved, *_), key in zip(rows, keyed):
                if key != saved:
                    print(f"{out.name}/{name}\n  saved     {saved[:140]}\n  alone     {key[:140]}")
            counts.append(len(set(keyed)))
        table.append((out.name, len(rows), *counts))
    columns = ("saved", "before", "after") + (("narrowing",) if narrowing else ()) + (("alone",) if alone else ())
    print(f"\n{'campaign':<20} {'findings':>8} " + " ".join(f"{c:>9}" for c in columns) + "   (distinct root keys)")
    for name, findings, *counts in table:
        print(f"{name:<20} {findings:>8} " + " ".join(f"{c:>9}" for c in counts))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
