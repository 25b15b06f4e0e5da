"""Reports: a ready-to-paste bug report per finding, and the campaign's report.md.

    python -m hirfuzz.report OUT     rewrite OUT/report.md from what is on disk
"""
from __future__ import annotations

import json
import platform
import re
import sys
from pathlib import Path

from ..core.violation_key import MISSING_CHECK
from ..protocol import GRADIENT, GRADIENT_PASS, REPRO_MARK
from .counterpart import counterpart_sentence
from .outdir import OutputError, write_atomic
from .titles import METADATA_NOTE, collapse_dumps, message_error, shorten, split_exception, title
from .target_independence import target_line
from .versions import version_key, versions_sentence

def _expected(finding: dict, info) -> str:
    kind, stage, extra = finding["kind"], finding["stage"], finding.get("extra", {})
    if stage == "ill_formed_after_pass":
        return f"`{extra.get('blamed_pass')}` returns a well-formed module."
    if extra.get("violation"):
        v = extra["violation"]
        return f"TVM rejects the program with a diagnostic naming the problem ({v['kind']} on {v['op']}: {v['detail']})."
    if kind == "wrong-result":
        return "The results equal NumPy's, within the tolerances in the script's check."
    if kind == "hang":
        return "Building and running this small program finishes within seconds."
    if stage == "passes" and extra.get("failed_pass") == GRADIENT_PASS:
        return f"{info.gradient_support().autodiff_pass(extra.get('config') or {})} differentiates the valid module without error."
    if stage == "passes":
        return f"The passes ({extra.get('passes')}) transform the valid module without error."
    return f"The program is valid, so {info.build_words} compiles it and it runs."


def _actual(finding: dict, outcome) -> str:
    if finding["kind"] == "wrong-result":
        return (finding.get("detail") or finding["message"]).splitlines()[0]
    if finding["kind"] == "silent-acceptance":
        return "TVM builds and runs the program without an error."
    said = _final_error(outcome.output) if outcome is not None else ""
    return readable_error(said or message_error(finding))


def readable_error(line: str) -> str:
    """TVM's error as it said it, less its clutter: the exception by its own name
    (InternalError, not tvm.error.InternalError), IR objects printed whole as their name
    and "(...)", and no note on metadata."""
    exc_type, rest = split_exception(line)
    rest = collapse_dumps(METADATA_NOTE.sub("", rest), elided="(...)", keep=40)
    return f"{exc_type}: {rest}" if exc_type and rest else exc_type or rest


_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b:?")


def _final_error(output: str) -> str:
    """The last line of a Python traceback that names the error raised."""
    lines = [ln for ln in output.splitlines() if _ERROR_LINE.match(ln)]
    return lines[-1] if lines else ""


_WRAPPER_FRAMES = ('  File "<frozen runpy>"', '  File "<string>"')
_FRAME_START = re.compile(r"^ {2}(File \"|\d+: )")
_SITE = re.compile(r"(?:/[^\s\"':]+)*/(?:site|dist)-packages/")
_ABSOLUTE = re.compile(r"(?<![\w.~])/(?:[\w.+@-]+/)+(?=[\w.+@-])")
_TVM_SOURCE = re.compile(r"(?<![\w.~])/(?:[\w.+@-]+/)*?(src|include|3rdparty)/")


def clean_traceback(text: str, keep: int = 3) -> str:
    """A script's output as a report shows it: the last `keep` frames of each traceback,
    the final error, and no path of this machine's (TVM's files relative to its package or
    source tree, others by their name)."""
    text = _SITE.sub("", text)
    text = _TVM_SOURCE.sub(lambda m: m.group(1) + "/", text)
    text = _ABSOLUTE.sub("", text)
    out, frames = [], []

    def flush():
        shown = [frame for frame in frames if frame]
        if len(shown) > keep:
            out.append("  ...")
        out.extend(line for frame in shown[-keep:] for line in frame)
        frames.clear()

    for line in text.splitlines():
        if line.startswith(_WRAPPER_FRAMES):
            frames.append([])  # hirfuzz's runner of the script: dropped, and what it shows
        elif _FRAME_START.match(line):
            frames.append([line])
        elif frames and line.startswith("    "):
            frames[-1].append(line)
        else:
            flush()
            out.append(line)
    flush()
    return "\n".join(out)


def _well_formed_lines(finding: dict, outcome) -> list[str]:
    """For a pass's bug: what `well_formed` said before and after the pass to blame."""
    extra = finding.get("extra", {})
    if not extra.get("passes"):
        return []
    said = [ln for ln in (outcome.harness_output if outcome is not None else "").splitlines()
            if ln.startswith("well_formed ")]
    if said:
        return [f"- {ln}" for ln in said]
    if finding["stage"] in ("build", "run") or finding["kind"] == "wrong-result":
        return ["- well_formed before and after every pass: True"]
    return []


def _environment(installation: dict, target: str) -> list[str]:
    commit = installation.get("commit") or "unknown"
    llvm = installation.get("llvm") or "unknown"
    return [f"- TVM {installation.get('tvm') or 'unknown'} (commit {commit}), LLVM {llvm}",
            f"- built as: {target}",
            # the Python TVM ran under (--tvm-python may name another than hirfuzz's)
            f"- Python {installation.get('python_version') or platform.python_version()}, "
            f"{platform.system()} {platform.machine()}"]


def _how_it_fails(finding: dict, repro: str) -> str:
    if REPRO_MARK in repro:  # hirfuzz's harness (a disruptive finding's whose call alone did not fail alike)
        return "it exits with status 1 while the bug is present"
    if finding["kind"] == "silent-acceptance":
        return ("it raises an AssertionError while TVM accepts the invalid program, and passes once TVM "
                "rejects it with an error")
    if finding["kind"] == "poor-diagnostic":
        return f"it raises TVM's internal error ({finding['extra'].get('exc_type')}) while the bug is present"
    if finding["kind"] == "crash" and finding.get("extra", {}).get("violation"):
        return f"it fails while the bug is present (the fuzzer's process died of {finding['extra'].get('signal')} on it)"
    return "it raises while the bug is present"


def _mutant_lines(finding: dict) -> list[str]:
    """A finding a mutant exposed (oracles/mutation.py): what the program is, and that the
    original is handled correctly."""
    extra = finding.get("extra", {})
    config = extra.get("config") or {}
    if not config.get("module"):
        return []
    rewrites = ", ".join(extra.get("mutators") or []) or "hirfuzz's mutators"
    after = f" after the same passes ({', '.join(s['name'] for s in config['passes'])})" if config.get("passes") else ""
    return [f"**Rewritten program:** the program below is a semantics-preserving rewrite ({rewrites}) of a "
            f"generated one; the original program is handled correctly under the same configuration{after} "
            "(it builds, runs and agrees with NumPy), and the rewritten one agrees with NumPy when built "
            "without passes." if after else
            f"**Rewritten program:** the program below is a semantics-preserving rewrite ({rewrites}) of a "
            "generated one; the original program is handled correctly (it builds, runs and agrees with NumPy).", ""]


def _keyed_as_lines(finding: dict) -> list[str]:
    """Where one operator of the program fails alone (reduction_steps BlameOperatorAlone: the
    same passes; BlameGradientOperatorAlone: its gradient), or a pass's narrowing is what
    it fails of (NarrowingCause): the fault the failure grew from, which the finding is one of."""
    extra = finding.get("extra", {})
    narrowed_by = extra.get("narrowed_by")
    if narrowed_by:  # reduction_steps.NarrowingCause
        inside = f" (through the `{narrowed_by['inside']}` it runs inside itself)" if narrowed_by.get("inside") else ""
        return [f"**Likely root:** `{narrowed_by['pass']}`{inside} types calls narrower than their operators infer and "
                "drops the run-time check that made it sound; with each such call checked again (a `match_cast` "
                "after it, right after that pass), the program passes.", ""]
    keyed = extra.get("keyed_as")
    if not keyed:
        return []
    what = "its gradient is wrong" if finding.get("oracle") == "gradient" else "fails the same passes"
    return [f"**Likely root:** `{keyed['operator']}` alone: {what}: {shorten(keyed['message'], 300)}", ""]


def bug_report(finding: dict, repro: str, outcome, installation: dict, target: str, info, graph=None,
               plan: dict | None = None) -> str:
    """Markdown for an issue tracker: title, environment, expected and actual behaviour in a
    line each, `well_formed` before and after a pass's bug, the script and what it printed.

    `outcome` is what the scripts printed when hirfuzz ran them alone (None if it did not),
    so the report shows TVM's own traceback, trimmed, rather than the fuzzer's.
    """
    shown = clean_traceback(outcome.output if outcome is not None and outcome.output else
                            finding.get("detail") or finding["message"])
    if len(shown) > 3000:
        shown = "...\n" + shown[-3000:]
    reduced = finding.get("extra", {}).get("reduced_from")
    size = (f" Reduced from {reduced} to {finding['extra'].get('ops')} operators." if reduced else "")
    well_formed = _well_formed_lines(finding, outcome)
    return "\n".join([
        f"### {title(finding, graph, info, plan)}",
        "",
        "**Environment**",
        *_environment(installation or {}, target),
        "",
        *versions_lines(finding),
        *target_line(finding),
        f"{EXPECTED_HEADING} {_expected(finding, info)}",
        "",
        *hit_by_lines(finding),
        f"**Actual:** {shorten(clean_traceback(_actual(finding, outcome)), 300)}",
        "",
        *_keyed_as_lines(finding),
        *(["**well_formed**", "", *well_formed, ""] if well_formed else []),
        *_mutant_lines(finding),
        *_other_ir(finding),
        "**Steps to reproduce**",
        "",
        f"Run the script below with `python repro.py`; {_how_it_fails(finding, repro)}.{size}",
        "",
        "```python",
        repro.rstrip(),
        "```",
        "",
        "**Output**",
        "",
        "```",
        shown.rstrip(),
        "```",
        "",
    ])


VERSIONS_HEADING = "**TVM releases:**"
BASELINE_HEADING = "**Baseline:**"
EXPECTED_HEADING = "**Expected:**"


def versions_lines(finding: dict) -> list[str]:
    """The line that dates the bug (its repro.py run under other releases: versions.py),
    where it was tried under more than the campaign's TVM."""
    extra = finding.get("extra", {})
    versions, baseline = extra.get("versions") or {}, extra.get("baseline")
    lines = [f"{VERSIONS_HEADING} {versions_sentence(versions)}", ""] if len(versions) >= 2 else []
    if baseline:
        verdict = "new in the build under test" if extra.get("new_in_build") else "not new in the build under test"
        lines += [f"{BASELINE_HEADING} {baseline['verdict']} on TVM {baseline['tvm']} ({baseline['python']}): {verdict}.", ""]
    return lines


def with_versions_lines(report: str, finding: dict) -> str:
    """A bug report with its dating lines (versions_lines) made anew (replay --versions):
    whatever stood between the environment and the expected behaviour is replaced."""
    lines = report.split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith((VERSIONS_HEADING, BASELINE_HEADING, EXPECTED_HEADING))]
    expected = [i for i in starts if lines[i].startswith(EXPECTED_HEADING)]
    if not expected:  # not a report bug_report wrote: left as it is
        return report
    return "\n".join(lines[:starts[0]] + versions_lines(finding) + lines[expected[0]:])


HIT_BY_HEADING = "**Also hit by:**"


def hit_by_lines(finding: dict) -> list[str]:
    """A disruptive finding met by more than one op or dtype: each, and the script kept for
    each other op that failed alone as its hit did (oracles/disruptive.py: one finding per
    missing check; also_scripts.py)."""
    hits = finding.get("extra", {}).get("hit_by") or []
    if len(hits) < 2:
        return []
    ops: dict[str, list[str]] = {}
    kept: dict[str, str] = {}
    for hit in hits:
        ops.setdefault(hit["op"], []).append(hit["dtype"])
        if hit.get("script"):
            kept.setdefault(hit["op"], hit["script"])
    said = "; ".join(f"{op} on {', '.join(dtypes)}" + (f" ({kept[op]})" if op in kept else "")
                     for op, dtypes in ops.items())
    return [f"{HIT_BY_HEADING} {said}. {_one_check(finding.get('signature', ''))}", ""]


def _one_check(signature: str) -> str:
    """Why the hits are one finding (core/violation_key.py)."""
    if signature.startswith(f"{MISSING_CHECK}|"):
        _, kind, site = signature.split("|", 2)
        return (f"One missing check: each got past {site}, which lets {kind} through, whatever "
                "later failed on it.")
    return ("One missing check: the same violation kind fails at the same place in TVM with the same "
            "message, op names and dtypes aside.")


def with_hit_by_lines(report: str, finding: dict) -> str:
    """A bug report with its hit-by line (hit_by_lines) made anew, just before the actual
    behaviour: a later hit listed another op or dtype."""
    lines = report.split("\n")
    old = next((i for i, line in enumerate(lines) if line.startswith(HIT_BY_HEADING)), None)
    if old is not None:  # the line and the blank line after it
        del lines[old:old + 2]
    actual = next((i for i, line in enumerate(lines) if line.startswith("**Actual:**")), None)
    if actual is None:  # not a report bug_report wrote: left as it is
        return report
    return "\n".join(lines[:actual] + hit_by_lines(finding) + lines[actual:])


def _other_ir(finding: dict) -> list[str]:
    """A cross-IR campaign's word on what the other IR's TVM did with the program found,
    and on what each release of it did with the reduced program (counterpart.py)."""
    extra = finding.get("extra", {})
    other, counterpart = extra.get("cross_ir"), extra.get("counterpart") or {}
    lines = [f"The same program in the other IR: {other}.", ""] if other else []
    return lines + ([counterpart_sentence(counterpart), ""] if counterpart.get("versions") else [])


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
    forms = d.get("reproducers") or {}
    if forms:
        alone = forms.get("call", 0) + forms.get("call-in-function", 0)
        lines += ["", f"Findings whose repro.py is the violating call alone: {alone}; the whole program "
                      f"(the call alone did not fail alike, so unconfirmed): {forms.get('harness', 0)}."]
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


UNCLASSIFIED = {"class": "unclassified", "component": "?", "evidence": "saved before hirfuzz classified findings"}


def _regressions_section(out: Path, findings: list[dict]) -> list[str]:
    """Findings whose repro.py passes on an older TVM release: a maintainer fixes these
    before a release, so they come first (each is listed again among the findings)."""
    regressions = [{**f, "regression_since": _saved_regression(out, f)} for f in findings]
    regressions = [f for f in regressions if f["regression_since"]]
    if not regressions:
        return []
    lines = [f"## Regressions ({len(regressions)})", "", "| since | title | reproducer |", "|---|---|---|"]
    for f in sorted(regressions, key=lambda f: version_key(f["regression_since"]), reverse=True):
        rel = _relative(out, f["path"])
        title_cell = _table_cell(_report_title(out, f))
        lines.append(f"| {f['regression_since']} | {title_cell} | [{rel}/repro.py]({rel}/repro.py) |")
    return lines + [""]


def _table_cell(text: str) -> str:
    """Text for a cell of a markdown table: 160 characters at most, its bars escaped."""
    return text[:160].replace("|", "\\|")


def _new_in_build_section(out: Path, findings: list[dict]) -> list[str]:
    """Findings whose repro.py passes on --baseline: what the pass developer's change broke."""
    new = [f for f in findings if f.get("new_in_build")]
    if not new:
        return []
    lines = [f"## New in your build ({len(new)} of {len(findings)}: their repro.py passes on --baseline)", "",
             "| title | reproducer |", "|---|---|"]
    for f in new:
        rel = _relative(out, f["path"])
        lines.append(f"| {_table_cell(_report_title(out, f))} | [{rel}/repro.py]({rel}/repro.py) |")
    return lines + [""]


def _saved_regression(out: Path, f: dict) -> str | None:
    """Since which release a finding fails: its finding.json says so once replay --versions
    dated it after the campaign (summary.json's row, written before, does not)."""
    try:
        saved = json.loads((out / _relative(out, f["path"]) / "finding.json").read_text())
    except (OSError, ValueError):
        return f.get("regression_since")
    return saved.get("extra", {}).get("regression_since")


def _findings_section(out: Path, findings: list[dict]) -> list[str]:
    """The findings grouped by triage class and component (pass, operator, codegen, VM),
    each with the evidence for its class."""
    if not findings:
        return ["None.", ""]
    groups: dict[tuple, list] = {}
    for f in findings:
        triage = f.get("triage") or _saved_triage(out, f)
        groups.setdefault((triage["class"], triage["component"]), []).append((f, triage))
    lines = []
    for (cls, component), items in sorted(groups.items()):
        lines += [f"### {cls}: {component} ({len(items)})", "",
                  "| hits | ops | title | evidence | reproducer |", "|---|---|---|---|---|"]
        for f, triage in items:
            rel = _relative(out, f["path"])
            cells = [_report_title(out, f), triage["evidence"]]
            cells = [_table_cell(c) for c in cells]
            lines.append(f"| {f['hits']} | {f.get('ops', '')} | {cells[0]} | {cells[1]} | [{rel}/repro.py]({rel}/repro.py) |")
        lines.append("")
    return lines


def _relative(out: Path, path: str) -> str:
    """A finding's folder relative to the campaign folder, as report.md links it: summary.json
    has it so; an older summary.json had it absolute, or relative to where hirfuzz ran."""
    for base in (out, out.resolve(), Path.cwd() / out):
        try:
            return Path(path).relative_to(base).as_posix()
        except ValueError:
            continue
    return path


def _listed(out: Path, f: dict) -> str:
    """A pending, unconfirmed or spec-disagreement entry: hits, message, a link to its folder."""
    rel = _relative(out, f["path"])
    return f"- x{f['hits']} {f['message'][:120]} ([{rel}]({rel}))" + (f": {f['reason']}" if f.get("reason") else "")


def _saved_triage(out: Path, f: dict) -> dict:
    """A finding's class from its finding.json (summaries written before they had one)."""
    try:
        return json.loads((out / _relative(out, f["path"]) / "finding.json").read_text())["extra"]["triage"]
    except (OSError, ValueError, KeyError):
        return UNCLASSIFIED


def _report_title(out: Path, f: dict) -> str:
    """The title line of a finding's bug-report.md, or its message where there is none."""
    try:
        first = (out / _relative(out, f["path"]) / "bug-report.md").read_text().splitlines()[0]
    except (OSError, IndexError):
        return f["message"]
    return first.removeprefix("### ")


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


def _targets_section(summary: dict) -> list[str]:
    """With more than one target: how far each target's configuration got, and what
    generation left out for a target that cannot build it."""
    progress = summary.get("targets_progress") or {}
    if len(progress) < 2:
        return []
    lines = ["## Targets", ""]
    for kind, row in progress.items():
        said = ", ".join(f"{n} {status}" for status, n in sorted(row.items(), key=lambda item: -item[1]))
        lines.append(f"- {kind}: {said} (of {sum(row.values())} cases)")
    generation = summary.get("generation") or {}
    for kind, avoided in (generation.get("avoided") or {}).items():
        lines.append(f"- left out for {kind} (op specs' `targets:` entries): "
                     + ", ".join(f"{what} {n}" for what, n in sorted(avoided.items(), key=lambda item: -item[1])))
    stripped = generation.get("plan_features_stripped") or {}
    if stripped:
        lines.append("- plan features stripped for the targets (hirfuzz/targets.yaml): "
                     + ", ".join(f"{feature} {n}" for feature, n in stripped.items()))
    return lines + [""]


def _avoided_section(summary: dict) -> list[str]:
    """The constructs generation stopped drawing as a confirmed finding fails on them alone."""
    avoided = summary.get("avoided_constructs") or {}
    rows = avoided.get("constructs") or []
    if not rows:
        return []
    lines = ["## Constructs avoided", "",
             "Generation stopped drawing these, each failing alone in a confirmed finding "
             "(--no-avoid-found keeps them):", ""]
    lines += [_avoided_row(row) for row in rows]
    return lines + [""]


def _avoided_row(row: dict) -> str:
    where = "in gradient cases" if row["target"] == GRADIENT else f"on {row['target']}"
    # a plan form (campaign.avoidance.PlanForm) is taken out of plans, an op-dtype out of draws
    what = "plans lowered without it" if row["construct"].startswith("plan[") else "draws turned down"
    return f"- {row['construct']} {where}: from case {row['from_case']}, {row['draws_avoided']} {what} ({row['finding']})"


def _out_of_memory(memory: dict | None) -> str:
    if not memory or not memory.get("cases"):
        return ""
    return (f"; {memory['cases']} case(s) ran out of the --max-memory limit ({memory['limit_mb']} MB per worker): "
            "not findings, a larger limit runs them")


def checked_only(data: dict) -> str:
    """The check-only cases (--check-cases), among those well-formed and not built."""
    n = data.get("checked_only")
    return f"; {n} check-only, never built" if n else ""


def _pass_checks_line(checks: dict | None) -> list[str]:
    """The check-only pass sequences' line (--pass-checks), where there were any."""
    if not checks or not checks.get("run"):
        return []
    return [f"- check-only pass sequences (not built): {checks['run']} run ({checks['per_case']} per case) in "
            f"{checks['seconds']:.0f} s; {checks['findings']} confirmed finding(s) first shown by one"]


def _check_ops(summary: dict) -> str:
    """" (N in a check-only case)" where check-only cases draw another size (--check-ops)."""
    n = summary.get("check_ops_per_graph")
    return f" ({n} in a check-only case)" if n and n != summary["ops_per_graph"] else ""


def campaign_report(out: Path, summary: dict) -> str:
    rows = _stats(out)
    lines = [
        "# hirfuzz campaign report",
        "",
        f"- mode `{summary['mode']}`, seed {summary['seed']}, {summary['ops_per_graph']} operators per graph"
        f"{_check_ops(summary)}, "
        f"targets `{','.join(summary['targets'])}`, executors `{','.join(summary['executors'])}`, TVM {summary.get('tvm')}",
        f"- {summary['cases']} cases in {summary['elapsed_s']:.0f} s "
        f"({summary['cases'] / max(summary['elapsed_s'], 1e-9):.2f} cases/s, {summary.get('jobs', 1)} workers)"
        + ("" if summary.get("disruptive") else f"; {summary['valid']} well-formed, {summary['built']} built, "
           f"{summary['compared']} compared with the reference" + _fully(summary) + checked_only(summary)),
        f"- hirfuzz's own share of wall time: {100 * summary['overhead_share']:.1f}%; "
        f"worker restarts {summary['worker_restarts']}" + _out_of_memory(summary.get("out_of_memory")),
        *_pass_checks_line(summary.get("pass_checks")),
        "",
    ] + _new_in_build_section(out, summary["findings"]) + _regressions_section(out, summary["findings"]) + \
        _disruptive_section(summary.get("disruptive")) + _domain_section(summary.get("domain_unmet")) + \
        _probe_section(summary.get("probe")) + _targets_section(summary) + _avoided_section(summary) + [
        "## Findings",
        "",
    ]
    lines += _findings_section(out, summary["findings"])
    lines += _known_section(summary.get("known_hits_by_signature"))
    for key, heading in (("pending", "Pending (found, not yet reduced and checked; finished when the campaign resumes)"),
                         ("unconfirmed", "Unconfirmed (hirfuzz's problem, not TVM's)"),
                         ("spec_disagreements", "Spec disagreements (TVM rejected programs the specs call valid)")):
        if summary.get(key):
            lines += [f"## {heading}", ""] + [_listed(out, f) for f in summary[key]] + [""]
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
    try:
        write_atomic(out / "report.md", campaign_report(out, summary))
    except OutputError as exc:
        print(f"hirfuzz.report: error: {exc}", file=sys.stderr)
        return 2
    print(out / "report.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
