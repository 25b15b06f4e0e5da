"""Replay: run saved reproducers on the installed TVM and say which still fail.

    python -m hirfuzz.replay PATH [PATH ...]
    python -m hirfuzz.replay --versions relax-0.25,relax-0.26,relax PATH [PATH ...]

PATH is a finding folder, or a campaign's --out folder (all its findings). Each finding's
check.py (hirfuzz's harness) and repro.py run alone, as a maintainer would run them after a
fix; both must fail alike for a finding to still reproduce. Exit status: 1 if any
finding still reproduces, 0 if none does, 2 on bad input.

With --versions, each finding's repro.py runs unchanged under each TVM named (a managed
environment or an interpreter), and finding.json records the verdicts (`extra.versions`)
and the release a regression dates from (`extra.regression_since`).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..core.finding import Finding
from ..errors import HirfuzzError
from .oracles import Oracle
from .outdir import write_atomic
from .verify import check_finding_scripts
from .report import campaign_report, with_versions_lines
from .versions import regression_since, release_of, try_releases, versions_sentence


def finding_folders(path: Path) -> list[Path]:
    if (path / "finding.json").is_file():
        return [path]
    root = path / "findings"
    if root.is_dir():
        return sorted(d for d in root.iterdir() if (d / "finding.json").is_file())
    raise ValueError(f"{path}: neither a finding folder (with finding.json) nor a campaign folder (with findings/)")


def campaign_settings(folder: Path) -> dict:
    """The settings of the campaign a finding folder is from (its campaign.json), if known."""
    for marker in (folder / "campaign.json", folder.parent.parent / "campaign.json"):
        try:
            meta = json.loads(marker.read_text())
        except (OSError, ValueError):
            continue
        return meta.get("settings", {})
    return {}


def recorded_interpreter(settings: dict, second_ir: bool = False) -> tuple[str | None, dict]:
    """The interpreter (and its environment) a campaign (its `settings`) ran TVM under; a
    cross-IR campaign's finding in its second IR ran under that IR's."""
    if second_ir:
        return settings.get("cross_python"), settings.get("cross_env") or {}
    return settings.get("tvm_python"), settings.get("tvm_env") or {}


def recorded_dialect(settings: dict, second_ir: bool = False) -> str | None:
    """The IR a campaign (its `settings`) fuzzed (the second one's, for its cross-IR findings)."""
    return settings.get("cross_dialect" if second_ir else "dialect")


def replay(folder: Path, timeout_s: float, python: str | None = None) -> tuple[str, str]:
    """('reproduces' | 'fixed' | 'differs' | 'cannot-run', what was observed)."""
    data = json.loads((folder / "finding.json").read_text())
    finding = Finding(**data)
    second_ir = finding.oracle == Oracle.CROSS_IR
    settings = campaign_settings(folder)
    recorded, env = recorded_interpreter(settings, second_ir)
    outcome = check_finding_scripts(folder, finding, timeout_s, python=python or recorded,
                                    extra_env=env if python is None else {},
                                    dialect=recorded_dialect(settings, second_ir))
    if outcome.reproduced:
        return "reproduces", outcome.observed
    if outcome.harness_error:  # no verdict on the bug: the script never reached it
        return "cannot-run", outcome.observed
    if outcome.observed.endswith(" ok"):
        return "fixed", outcome.observed
    return "differs", outcome.observed


def record_versions(folder: Path, releases: list, timeout_s: float) -> str:
    """Try the finding's repro.py under each release; record and describe the verdicts."""
    path = folder / "finding.json"
    data = json.loads(path.read_text())
    versions = try_releases(folder, Finding(**data), releases, timeout_s)
    data["extra"] = {**data.get("extra", {}), "versions": versions, "regression_since": regression_since(versions)}
    write_atomic(path, json.dumps(data, indent=2) + "\n")
    report = folder / "bug-report.md"
    if report.exists():
        write_atomic(report, with_versions_lines(report.read_text(), data))
    return versions_sentence(versions)


def _rewrite_report(path: Path):
    """A campaign folder's report.md made anew from its summary.json and findings."""
    try:
        summary = json.loads((path / "summary.json").read_text())
    except (OSError, ValueError):
        return  # a finding's folder, or a campaign that never wrote its summary
    write_atomic(path / "report.md", campaign_report(path, summary))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hirfuzz.replay", description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per reproducer (default 120)")
    ap.add_argument("--tvm-python", metavar="PYTHON",
                    help="run the scripts under this interpreter (default: the one the campaign used)")
    ap.add_argument("--versions", metavar="ENV,ENV", type=lambda text: [n for n in text.split(",") if n],
                    help="also run each finding's repro.py under these TVMs (managed environments or interpreters) "
                         "and record where it fails: a regression is dated by the release after the last that passes")
    args = ap.parse_args(argv)
    try:
        releases = [release_of(name) for name in args.versions or []]
        folders = [f for p in args.paths for f in finding_folders(p)]
    except (ValueError, OSError, HirfuzzError) as exc:
        print(f"hirfuzz.replay: error: {exc}", file=sys.stderr)
        return 2
    counts = {"reproduces": 0, "fixed": 0, "differs": 0, "cannot-run": 0}
    for folder in folders:
        try:
            verdict, observed = replay(folder, args.timeout, args.tvm_python)
        except (OSError, ValueError, TypeError) as exc:
            print(f"hirfuzz.replay: error: {folder}/finding.json: {exc}", file=sys.stderr)
            return 2
        counts[verdict] += 1
        print(f"{verdict:<10} {folder}  ({observed})", flush=True)
        if releases:
            print(f"           {record_versions(folder, releases, args.timeout)}", flush=True)
    if releases:
        for path in args.paths:  # a campaign's report.md lists its regressions first
            _rewrite_report(path)
    print(f"{len(folders)} finding(s): {counts['reproduces']} still reproduce, {counts['fixed']} no longer "
          f"fail, {counts['differs']} fail differently"
          + (f", {counts['cannot-run']} could not run (see above)" if counts["cannot-run"] else ""))
    # a script that could not run proves no fix either
    return 1 if counts["reproduces"] or counts["cannot-run"] else 0


if __name__ == "__main__":
    sys.exit(main())
