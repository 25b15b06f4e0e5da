"""Does a narrowed call make a finding fail? A counterfactual on saved Relax campaigns.

    python tools/narrowing_effect.py OUT [OUT ...]

tools/root_causes.py --narrowing keys a finding on the first pass of its failing sequence
whose output has a call typed narrower than its operator infers (narrowing.narrowed_calls),
without checking that the narrowing is what fails later. This tool checks it: for each
crash finding (a worker's death included) whose failing configuration (case.json's last)
has such a pass (one whose output has narrowed calls its input has not), the configuration
runs again as a campaign runs it (worker.execute_case: passes each checked well-formed, then
the build unless it is check-only; nothing run), once as saved (before) and once with `WidenNarrowedCalls` (narrowing.widened: each narrowed
binding gets back the match_cast that checked it) inserted right after that pass (after).
A failure that goes away after is caused by the narrowing; one that stays is not. Each row
also says whether the narrowing pass's output prints as TVMScript that parses back as
itself: where it does, the later failure needs no narrowing pass (a user can write the
narrowed program), so it is the later pass's too.

Each run is a child process (a pass may kill it). Prints one row per finding of the
campaign: its narrowing pass and calls, and its failure before and after; then, per
campaign, how many the widening clears.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WIDEN_STEP = {"name": "WidenNarrowedCalls", "import": "hirfuzz.dialects.relax.narrowing:widening_pass",
              "search_dir": str(ROOT), "args": {}}
CHILD_SECONDS = 600
HEAD = 110  # characters of a message shown


def first_narrowing(case_json: dict, config: dict) -> dict:
    """{"position", "pass", "calls", "parses_back", "left", "well_formed"}: the first step of
    `config` whose output has narrowed calls its input has not (narrowing.first_narrowing_step),
    whether that output parses back, and what widening it leaves (widening_check); {} where
    none has (or a pass raises first: nothing it outputs)."""
    from hirfuzz.core.spec import load_specs
    from hirfuzz.dialects import load_dialect
    from hirfuzz.dialects.relax.narrowing import first_narrowing_step
    from root_causes import lowering_request
    mod = load_dialect("relax").lower(lowering_request(case_json, load_specs()))
    steps = config.get("passes") or []
    try:
        narrowing = first_narrowing_step(mod, steps, config["opt_level"])
    except Exception:  # noqa: BLE001 - a pass fails before any narrowing
        return {}
    if narrowing is None:
        return {}
    return {"position": narrowing.position, "pass": steps[narrowing.position]["name"], "calls": narrowing.calls,
            "parses_back": parses_back(narrowing.output), **widening_check(narrowing.output)}


def parses_back(mod) -> str:
    """Whether `mod` printed as TVMScript parses back as itself ("strictly": TVM's parser
    checks it well-formed too), i.e. whether a user could write the narrowed program, and
    the rest of the sequence fail on it with no narrowing pass before."""
    from hirfuzz.dialects.relax.text import module_to_script
    try:
        text, _ = module_to_script(mod)
    except Exception as exc:  # noqa: BLE001 - the answer is that it does not
        # the parser's message leads; its source excerpt follows
        return f"no: {(str(exc).strip().splitlines() or [type(exc).__name__])[0][:HEAD]}"
    return "strictly" if "check_well_formed=False" not in text else "only unchecked"


def widening_check(mod) -> dict:
    """{"left": the narrowed calls `widened` leaves, "well_formed": TVM's complaint about
    its output ("" where none)}: what the "after" run starts from, checked."""
    from tvm import relax
    from hirfuzz.dialects.relax.narrowing import narrowed_calls, widened
    wide = widened(mod)
    try:
        relax.analysis.well_formed(wide)
        complaint = ""
    except Exception as exc:  # noqa: BLE001 - reported, not raised: the row says so
        complaint = str(exc).strip().splitlines()[-1]
    return {"left": narrowed_calls(wide), "well_formed": complaint}


def with_widening_after(config: dict, position: int) -> dict:
    """`config` with the widening step right after its step at `position`."""
    passes = list(config["passes"])
    return {**config, "passes": passes[:position + 1] + [WIDEN_STEP] + passes[position + 1:]}


def failure(case_json: dict, config: dict) -> dict:
    """{"status", "key", "message"}: how the case's program fares under `config`, judged
    as a campaign judges it (the key: core.finding.root_key of its signature)."""
    from hirfuzz.campaign.cases import Case
    from hirfuzz.campaign.judge import Judge
    from hirfuzz.campaign.reducer import _PREFIXES
    from hirfuzz.core.finding import root_key
    from hirfuzz.core.graph import Graph
    from hirfuzz.core.spec import load_specs
    from hirfuzz.dialects import load_dialect
    from hirfuzz.worker import execute_case
    from root_causes import lowering_request
    specs = load_specs()
    request = {**lowering_request(case_json, specs), "configs": [config], "run": False}
    reply = execute_case(request, load_dialect("relax"))
    case = Case(index=case_json["case"], graph=Graph.from_json(case_json["graph"]), inputs=[], runnable=False,
                expected=[], gen_ms=0.0, configs=[config])
    finding = Judge(specs, {}).classify(case, reply).finding
    if finding is None:
        return {"status": "passes", "key": "", "message": ""}
    key = root_key(finding.signature, _PREFIXES) or finding.signature
    return {"status": "fails", "key": key, "message": finding.message}


def in_child(*args: str) -> dict:
    """This tool's answer to `--child ARGS` from a child process; a death or a hang says so."""
    try:
        done = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True,
                              timeout=CHILD_SECONDS, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"status": "hangs", "key": "hang", "message": f"no answer in {CHILD_SECONDS} s"}
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"status": "dies", "key": f"exit {done.returncode}", "message": tail}
    return json.loads(done.stdout.strip().splitlines()[-1])


def child(args: list[str]) -> int:
    """--child probe FOLDER | --child run FOLDER [POSITION]: one step, its answer as JSON."""
    what, folder = args[0], Path(args[1])
    case_json = json.loads((folder / "case.json").read_text())
    config = case_json["configs"][-1]
    if what == "probe":
        answer = first_narrowing(case_json, config)
    else:
        answer = failure(case_json, with_widening_after(config, int(args[2])) if len(args) > 2 else config)
    print(json.dumps(answer))
    return 0


def measure(folder: Path) -> dict | None:
    """A crash finding's narrowing and its failure before and after widening; None for
    another finding."""
    finding = json.loads((folder / "finding.json").read_text())
    if finding["kind"] != "crash" or not (folder / "case.json").is_file():
        return None
    row = {"folder": folder.name, "narrowing": in_child("probe", str(folder))}
    if "position" not in row["narrowing"]:
        return row
    row["before"] = in_child("run", str(folder))
    row["after"] = in_child("run", str(folder), str(row["narrowing"]["position"]))
    return row


def verdict(row: dict) -> str:
    """What widening did to the finding's failure."""
    before, after = row["before"], row["after"]
    if before["status"] == "passes":
        return "does not fail again"
    if after["status"] == "passes":
        return "CLEARED"
    return "same failure" if after["key"] == before["key"] else "fails otherwise"


def print_row(campaign: str, row: dict) -> None:
    narrowing = row["narrowing"]
    if "position" not in narrowing:
        detail = "" if narrowing.get("status") != "dies" else f" (probe died: {narrowing['message'][:HEAD]})"
        print(f"{campaign}/{row['folder']}: no narrowing pass{detail}")
        return
    print(f"{campaign}/{row['folder']}: narrowing pass {narrowing['pass']} (step {narrowing['position']}) "
          f"-> {verdict(row)}")
    for call in narrowing["calls"]:
        print(f"    narrowed  {call[:HEAD * 2]}")
    print(f"    parses back as TVMScript: {narrowing['parses_back']}")
    if narrowing["left"] or narrowing["well_formed"]:
        print(f"    WIDENING  leaves {narrowing['left']}; ill-formed: {narrowing['well_formed'][:HEAD]}")
    for when in ("before", "after"):
        answer = row[when]
        print(f"    {when:<9} {answer['status']}: {answer['message'][:HEAD]}")
        if answer["key"]:
            print(f"    {'':<9} key {answer['key'][:HEAD]}")


def campaign_name(out: Path) -> str:
    """A campaign's folder and the one above it (bench19/relax-now): names repeat across benches."""
    return f"{out.resolve().parent.name}/{out.resolve().name}"


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        return child(argv[1:])
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    summary = []
    for out in map(Path, argv):
        if not (out / "findings").is_dir():
            print(f"narrowing_effect: error: {out}: no findings/ folder (not a campaign's --out)", file=sys.stderr)
            return 2
        rows = []
        for folder in sorted(p for p in (out / "findings").iterdir() if (p / "finding.json").is_file()):
            row = measure(folder)
            if row is None:
                continue
            rows.append(row)
            print_row(campaign_name(out), row)
            sys.stdout.flush()
        narrowed = [row for row in rows if "position" in row["narrowing"]]
        summary.append((campaign_name(out), len(rows), len(narrowed), sum(verdict(r) == "CLEARED" for r in narrowed)))
    print(f"\n{'campaign':<28} {'crashes':>8} {'narrowed':>9} {'cleared':>8}")
    for name, crashes, narrowed, cleared in summary:
        print(f"{name:<28} {crashes:>8} {narrowed:>9} {cleared:>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
