"""Reports: a ready-to-paste bug report per finding, and the campaign's report.md.

    python -m hirfuzz.report OUT     rewrite OUT/report.md from what is on disk
"""
from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

EXPECTED = {
    "crash": "The program is valid (every operator within the types, shapes and attributes TVM "
             "accepts), so `relax.build` should compile it and the VM should run it.",
    "hang": "Building and running a program of this size takes well under a second.",
    "wrong-result": "The result should equal NumPy's, within the tolerance noted in the script.",
}


def bug_report(finding: dict, repro: str, actual: str, tvm_version: str | None, target: str, info) -> str:
    """Markdown for an issue tracker: environment, script, expected and actual behaviour.

    `actual` is what the standalone script printed, so the report shows TVM's own
    traceback rather than the fuzzer's.
    """
    actual = actual or finding["message"]
    if len(actual) > 4000:
        actual = "...\n" + actual[-4000:]
    reduced = finding.get("extra", {}).get("reduced_from")
    size = (f"Reduced by hirfuzz from {reduced} to {finding['extra'].get('ops')} operators."
            if reduced else "")
    return "\n".join([
        f"### [{info.name.capitalize()}] {finding['kind']} at {finding['stage']}: {finding['message'][:120]}",
        "",
        "**Environment**",
        f"- TVM {tvm_version or 'unknown'} ({info.tvm}); built as: {target}",
        f"- Python {platform.python_version()}, {platform.system()} {platform.machine()}",
        "",
        "**Expected behaviour**",
        "",
        EXPECTED.get(finding["kind"], ""),
        "",
        "**Actual behaviour**",
        "",
        "```",
        actual.rstrip(),
        "```",
        "",
        *_other_ir(finding),
        "**Steps to reproduce**",
        "",
        f"Save the script below and run `python repro.py` (exit status 1 while the bug is present). {size}",
        "",
        "```python",
        repro.rstrip(),
        "```",
        "",
        f"Found by hirfuzz (signature `{finding['signature']}`).",
        "",
    ])


def _other_ir(finding: dict) -> list[str]:
    """A cross-IR campaign's word on what the other IR's TVM did with the program found."""
    other = finding.get("extra", {}).get("cross_ir")
    return [f"The same program in the other IR: {other}.", ""] if other else []


def _stats(out: Path) -> list[dict]:
    rows = []
    path = out / "stats.jsonl"
    if not path.exists():
        return rows
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue  # a line cut short by a kill
    return rows


def _timeline(rows: list[dict], points: int = 10) -> list[dict]:
    if not rows:
        return []
    step = max(1, len(rows) // points)
    picked = rows[step - 1::step]
    if picked[-1] is not rows[-1]:
        picked.append(rows[-1])
    return picked


def _plot(out: Path, rows: list[dict]) -> str | None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    t = [r["t"] for r in rows]
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.5))
    for key in ("op_dtype", "op_edge", "op_path"):
        ax[0].plot(t, [r["coverage"][key] for r in rows], label=key)
    ax[0].set_xlabel("seconds")
    ax[0].set_title("coverage")
    ax[0].legend()
    ax[1].plot(t, [r["findings"] for r in rows])
    ax[1].set_xlabel("seconds")
    ax[1].set_title("distinct findings")
    fig.tight_layout()
    fig.savefig(out / "coverage.png", dpi=80)
    plt.close(fig)
    return "coverage.png"


def _disruptive_section(d: dict | None) -> list[str]:
    if not d:
        return []
    stages = sorted({st for table in d["by_class_and_stage"].values() for st in table})
    lines = ["## What TVM did with the invalid programs", "",
             f"Violation coverage: {d['violation_coverage']} (op, violation, dtype, rank) tuples.", "",
             "| class | total | " + " | ".join(stages) + " |", "|---" * (len(stages) + 2) + "|"]
    for cls, total in d["classes"].items():
        row = d["by_class_and_stage"].get(cls, {})
        lines.append(f"| {cls} | {total} | " + " | ".join(str(row.get(st, 0)) for st in stages) + " |")
    return lines + [""]


def _fully(summary: dict) -> str:
    """", N with every result": absent from summaries written before hirfuzz counted it."""
    return f", {summary['compared_fully']} with every result" if "compared_fully" in summary else ""


def _domain_section(unmet: dict | None) -> list[str]:
    """The ops whose domain the input search could not keep, so results below them went
    uncompared: graphs the generator might learn to avoid."""
    if not unmet:
        return []
    return ["## Ops whose input domain the inputs could not keep", "",
            "Results computed from such an op's out-of-domain inputs were not compared.", "",
            "| op | cases |", "|---|---|"] + [f"| {op} | {n} |" for op, n in unmet.items()] + [""]


def _known_section(hits: dict | None) -> list[str]:
    """Findings an earlier campaign had (--known): counted here, not filed again."""
    if not hits:
        return []
    # a table cell's pipes are escaped, in code spans too (GitHub's tables)
    return ["## Known findings hit again (--known; not filed again)", "",
            "| hits | signature |", "|---|---|"] + [
        "| {} | `{}` |".format(n, sig[:150].replace("|", "\\|")) for sig, n in hits.items()] + [""]


def _probe_section(probe: dict | None) -> list[str]:
    """What each probed pass acts on (campaign.probe), in words."""
    if not probe or not probe.get("probed"):
        return []
    lines = ["## Pass probe", ""]
    for p in probe["probed"]:
        skipped = f"; {p['left_out_for_time']} more left out for time" if p.get("left_out_for_time") else ""
        lines.append(f"Probed {', '.join(p['passes'])} on {p['programs']} small programs in {p['seconds']:.1f} s "
                     f"(acted on {p['acted']}{skipped}):")
        lines += [""] + [f"- {said}" for said in p["says"]] + [""]
    if probe.get("directed"):
        lines += [f"Generation was steered to the {probe['sites_to_exercise']} probe sites the passes acted on "
                  "(coverage criterion probe_site: those exercised).", ""]
    return lines


def campaign_report(out: Path, summary: dict) -> str:
    rows = _stats(out)
    lines = [
        "# hirfuzz campaign report",
        "",
        f"- mode `{summary['mode']}`, seed {summary['seed']}, {summary['ops_per_graph']} operators per graph, "
        f"targets `{','.join(summary['targets'])}`, executors `{','.join(summary['executors'])}`, TVM {summary.get('tvm')}",
        f"- {summary['cases']} cases in {summary['elapsed_s']:.0f} s "
        f"({summary['cases'] / max(summary['elapsed_s'], 1e-9):.2f} cases/s, {summary.get('jobs', 1)} workers)"
        + ("" if summary.get("disruptive") else f"; {summary['valid']} well-formed, {summary['built']} built, "
           f"{summary['compared']} compared with the reference" + _fully(summary)),
        f"- hirfuzz's own share of wall time: {100 * summary['overhead_share']:.1f}%; "
        f"worker restarts {summary['worker_restarts']}",
        "",
    ] + _disruptive_section(summary.get("disruptive")) + _domain_section(summary.get("domain_unmet")) + \
        _probe_section(summary.get("probe")) + [
        "## Findings",
        "",
    ]
    findings = summary["findings"]
    if not findings:
        lines.append("None.")
    by_kind: dict[tuple, list] = {}
    for f in findings:
        by_kind.setdefault((f["kind"], f["oracle"]), []).append(f)
    for (kind, oracle), items in sorted(by_kind.items()):
        lines += [f"### {kind} ({oracle} oracle): {len(items)}", "",
                  "| hits | ops | stage | message | reproducer |", "|---|---|---|---|---|"]
        for f in items:
            rel = Path(f["path"]).relative_to(out) if f["path"].startswith(str(out)) else f["path"]
            ops = f.get("ops", "")
            msg = f["message"][:100].replace("|", "\\|")
            lines.append(f"| {f['hits']} | {ops} | {f['stage']} | {msg} | [{rel}/repro.py]({rel}/repro.py) |")
        lines.append("")
    lines += _known_section(summary.get("known_hits_by_signature"))
    for key, title in (("pending", "Pending (found, not yet reduced and checked; finished when the campaign resumes)"),
                       ("unconfirmed", "Unconfirmed (hirfuzz's problem, not TVM's)"),
                       ("spec_disagreements", "Spec disagreements (TVM rejected programs the specs call valid)")):
        if summary.get(key):
            lines += [f"## {title}", ""] + [f"- x{f['hits']} {f['message'][:120]} ({f['path']})"
                                            + (f": {f['reason']}" if f.get("reason") else "")
                                            for f in summary[key]] + [""]
    lines += ["## Coverage and findings over time", ""]
    picture = _plot(out, rows) if rows else None
    if picture:
        lines += [f"![coverage and findings over time]({picture})", ""]
    lines += ["| seconds | cases | op-dtype | op-shape | op-edge | op-path | findings |",
              "|---|---|---|---|---|---|---|"]
    for i, r in enumerate(_timeline(rows)):
        c = r["coverage"]
        lines.append(f"| {r['t']:.0f} | {r['case'] + 1} | {c['op_dtype']} | {c['op_shape']} | {c['op_edge']} | "
                     f"{c['op_path']} | {r['findings']} |")
    lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m hirfuzz.report OUT", file=sys.stderr)
        return 2
    out = Path(args[0])
    try:
        summary = json.loads((out / "summary.json").read_text())
    except (OSError, ValueError) as exc:
        print(f"hirfuzz.report: error: {out}/summary.json: {exc}", file=sys.stderr)
        return 2
    (out / "report.md").write_text(campaign_report(out, summary))
    print(out / "report.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
