"""summary.json, and the lines a campaign ends with on screen.

`summary` reads a `CampaignView`: a campaign's settings, tallies, pool, generation state,
findings tables and phases; its keys are an interface (README, tests, benchmarks) and keep
their order.
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from .. import __version__
from ..core.finding import Finding
from ..core.violations import CLASSES
from ..protocol import CHECK_ONLY
from .reduction_steps import step_totals
from .report import checked_only

if TYPE_CHECKING:
    from .cases import CaseMaker
    from .findings import FindingTables
    from .settings import Settings
    from .tallies import Tallies


@dataclass(frozen=True)
class CampaignView:
    """What summary.json is made of, as the campaign stands when it is written."""
    settings: "Settings"
    tallies: "Tallies"
    tables: "FindingTables"
    pool: object             # the campaign's workers (sandbox.Pool or raypool.RayPool)
    maker: "CaseMaker"       # coverage, generation statistics, and the probe's direction
    probes: list             # what probing the passes found (core.probe.PassProbe)
    phases: dict             # name -> {seconds, cases} (campaign.phases)
    resumed: bool
    elapsed_s: float         # over every run of the campaign
    running_s: float         # of this run
    cross_tvm: str | None    # the second IR's TVM, in a cross-IR campaign
    coordinator_s: dict | None = None  # the coordinator's own seconds per stage (timings.CoordinatorClock)
    followups: dict | None = None  # follow-up mutants made, run and waiting (campaign.followups)


def summary(view: CampaignView) -> dict:
    c, s, pool = view.tallies.counters, view.settings, view.pool
    with view.tables.lock:
        tables = {name: [finding_row(f) for f in table.values()] for name, table in view.tables.by_folder.items()}
        pending = [finding_row(finding) for finding in view.tables.pending()]
    return {
        "hirfuzz": __version__, "tvm": pool.tvm_version, "dialect": s.dialect, "mode": s.mode,
        "seed": s.seed, "targets": s.targets, "executors": s.executors, "ops_per_graph": s.ops,
        "coverage_guided": s.guided, "jobs": pool.jobs, "resumed": view.resumed,
        "nodes": pool.nodes(),  # with --ray: the nodes that ran cases, and how many each
        "cases": c.cases, "valid": c.valid, "built": c.built, "ran": c.ran, "compared": c.compared,
        "compared_fully": c.compared_fully, "domain_unmet": _by_count(c.domain_unmet),
        "not_run": c.not_run,
        # check-only cases (--check-cases): well-formed and passed through their sequences, never built
        "checked_only": c.checked,
        "check_ops_per_graph": (s.check_ops or s.ops) if s.check_cases else None,
        # cases whose worker ran out of --max-memory: not findings (a larger limit runs them)
        "out_of_memory": {"cases": c.out_of_memory, "limit_mb": s.max_memory_mb},
        # the bound the workers said in their hello they run under (worker.memory_bound)
        "memory_bound": pool.installation.get("memory_bound"),
        "skipped_by_design": dict(sorted(c.skipped.items())),
        "targets_progress": {kind: dict(sorted(row.items())) for kind, row in c.targets.items()},
        **_times(view),
        "phases": {name: {"seconds": round(f["seconds"], 3), "cases": f["cases"]} for name, f in view.phases.items()},
        "reduction_steps": _reduction_steps(view.tables),
        "coverage": view.maker.coverage.counts(),
        "generation": asdict(view.maker.gen_stats),
        "avoided_constructs": _avoided_constructs(view),
        "findings": tables["findings"],
        "finding_hits": c.findings_hits,
        # cases whose finding a configuration failing with a known one before it would have hidden
        "found_past_known": c.found_past_known,
        # hits of findings --known names (counted in finding_hits too): never filed again
        "known_hits": sum(c.known.values()), "known_hits_by_signature": _by_count(c.known),
        "pending": pending,
        "unconfirmed": tables["unconfirmed"],
        "spec_disagreements": tables["spec-disagreements"],
        "disruptive": _disruptive_summary(view, tables["findings"] + tables["unconfirmed"]) if s.mode == "disruptive" else None,
        "cross_ir": _cross_summary(view) if s.cross_dialect is not None else None,
        "ir_features": dict(sorted(view.tallies.ir_features.items())),
        "mutators": dict(sorted(view.tallies.mutators_used.items())),
        "mutator_figures": _mutator_figures(view),
        "followups": view.followups,
        "hirfuzz_bugs": [finding_row(f) for f in view.tables.own_bugs.values()],
        "probe": _probe_summary(view),
        "pass_checks": _pass_checks(view),
    }


def _pass_checks(view: CampaignView) -> dict:
    """The check-only pass sequences (--pass-checks): per case, those run, the seconds the
    passes of those that passed took (in stage_totals_s's "passes" too), and the confirmed
    findings one of them showed first (finding.json's extra.config is check-only)."""
    c = view.tallies.counters
    with view.tables.lock:
        found = sum(1 for f in view.tables.by_folder["findings"].values()
                    if (f.extra.get("config") or {}).get(CHECK_ONLY))
    return {"per_case": view.settings.pass_checks, "run": c.pass_checks, "seconds": round(c.pass_checks_s, 3),
            "findings": found}


def _avoided_constructs(view: CampaignView) -> dict:
    """What generation stopped drawing as a confirmed finding fails on it alone
    (campaign.avoidance): the construct, its finding, the case it took effect at and the
    draws it turned down; `kept`: constructs left in as nothing else could be drawn."""
    schedule, draws = view.maker.avoidance, view.maker.gen_stats.avoided_found
    return {"enabled": schedule.enabled,
            "constructs": [{"construct": a.construct.name, "target": a.construct.target, "finding": a.finding,
                            "from_case": a.from_case, "draws_avoided": draws.get(a.construct.name, 0)}
                           for a in schedule.avoidances],
            "kept": dict(schedule.kept)}


def _mutator_figures(view: CampaignView) -> dict:
    """Per mutator: the mutants it made (applied), those whose plain build built, and the
    findings (TVM's, confirmed) a mutant through it exposed (oracles/mutation.py)."""
    t = view.tallies
    with view.tables.lock:
        # a rewrite applied twice to one mutant counts once for its finding
        exposed = [name for f in view.tables.by_folder["findings"].values() for name in set(f.extra.get("mutators", []))]
    return {name: {"applied": t.mutators_used.get(name, 0), "built": t.mutants_built.get(name, 0),
                   "findings": exposed.count(name)}
            for name in sorted(set(t.mutators_used) | set(exposed))}


def _probe_summary(view: CampaignView) -> dict:
    """What probing the passes found (probe.json has every site), and whether it steered."""
    passes = [{"passes": p.passes, "programs": len(p.results), "acted": sum(1 for r in p.results if r.strongest.acted),
               "left_out_for_time": p.unprobed, "seconds": round(p.seconds, 2), "says": p.describe()} for p in view.probes]
    direction = view.maker.direction
    return {"probed": passes, "directed": direction is not None,
            "sites_to_exercise": len(direction.patterns) if direction is not None else 0}


def _by_count(counts: dict) -> dict:
    """Most frequent first, then by name."""
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _times(view: CampaignView) -> dict:
    """Where the time went, and the workers' figures."""
    c, pool = view.tallies.counters, view.pool
    elapsed = view.elapsed_s
    # the workers' capacity is --jobs times the wall time; TVM's part of it is building
    # and running cases, starting workers (importing TVM, all at once at first),
    # reducing and re-running reproducers. The rest, hirfuzz's own share, includes any
    # time a worker waited for work.
    in_tvm = c.tvm_s + pool.startup_worker_s + c.verify_s + c.reduce_s
    capacity = len(pool.workers) * elapsed
    return {
        "elapsed_s": round(elapsed, 3),
        "time_in_tvm_s": round(in_tvm, 3), "time_building_running_s": round(c.tvm_s, 3),
        "time_starting_workers_s": round(pool.startup_s, 3),
        "time_verifying_reproducers_s": round(c.verify_s, 3), "time_reducing_s": round(c.reduce_s, 3),
        # with --time: seconds the workers finished findings first instead of fuzzing (reduction_budget)
        "time_finishing_first_s": round(c.finish_first_s, 3),
        "generation_s": round(c.gen_s, 3),
        # this run's coordinator: seconds per stage of its own work (timings.COORDINATOR_STAGES)
        "coordinator_s": view.coordinator_s or {},
        "overhead_share": round(max(0.0, 1 - in_tvm / capacity), 4) if capacity > 0 else 0.0,
        "worker_busy_share": round(pool.busy_s / (len(pool.workers) * max(1e-9, view.running_s)), 4),
        "worker_restarts": pool.restarts, "worker_recycles": pool.recycles,
        "worker_max_rss_mb": round(c.max_rss_kb / 1024, 1),
        # seconds per stage over every case (campaign.timings), and the builds workers reused
        "stage_totals_s": {k: round(v, 3) for k, v in c.stage_s.items()},
        "builds_saved": c.builds_saved, "builds_saved_across_cases": c.builds_saved_across_cases,
        "builds_saved_reducing": c.builds_saved_reducing,
    }


def _reduction_steps(tables: "FindingTables") -> dict:
    """Each reduction step's calls, successes and seconds, summed over the findings filed
    (their finding.json's extra.reduction.steps; campaign/reduction_steps.py)."""
    with tables.lock:
        return step_totals(f for table in tables.by_folder.values() for f in table.values())


def _disruptive_summary(view: CampaignView, findings: list[dict]) -> dict:
    """Disruptive mode's outcomes by class and by the stage that judged them."""
    by_class = view.tallies.disruptive
    classes = {cls: sum(by_class.get(cls, {}).values()) for cls in CLASSES}
    stages: dict[str, int] = {}
    for table in by_class.values():
        for stage, n in table.items():
            stages[stage] = stages.get(stage, 0) + n
    # what the findings' repro.py holds: the violating call alone, or the whole program
    # where the call alone did not fail alike (reproducers.ReproForm; those are unconfirmed)
    forms = Counter(row["reproducer"] for row in findings if row["reproducer"])
    return {"classes": classes, "by_class_and_stage": by_class, "by_stage": stages,
            "violation_coverage": len(view.maker.coverage.sets["violation"]), "reproducers": dict(sorted(forms.items()))}


def finding_row(f: Finding) -> dict:
    """A finding as summary.json lists it; its path is relative to the campaign folder."""
    return {"signature": f.signature, "kind": f.kind, "oracle": f.oracle, "stage": f.stage,
            "path": f.path, "hits": f.hits, "message": f.message, "ops": f.extra.get("ops"),
            "reduced_from": f.extra.get("reduced_from"), "reason": f.extra.get("unconfirmed_reason"),
            "triage": f.extra.get("triage"), "reproducer": f.extra.get("reproducer"),
            "regression_since": f.extra.get("regression_since"), "new_in_build": f.extra.get("new_in_build")}


def _cross_summary(view: CampaignView) -> dict:
    """The second IR of a cross-IR campaign: its TVM, and how its halves of the cases went
    (statuses as stats.jsonl spells them; reference-suspect: results both TVMs computed
    alike and NumPy did not)."""
    return {"dialect": view.settings.cross_dialect, "tvm": view.cross_tvm,
            "outcomes": dict(sorted(view.tallies.counters.cross.items()))}


def _counts_text(counts: dict, shown: int = 8) -> str:
    """"power 3, tan 2, ... (4 more)": the first few of a count table."""
    items = list(counts.items())
    text = ", ".join(f"{k} {n}" for k, n in items[:shown])
    return text + (f", ... ({len(items) - shown} more)" if len(items) > shown else "")


def format_summary(data: dict, out: str) -> str:
    cov = data["coverage"]
    d = data.get("disruptive")
    what = (", ".join(f"{n} {c}" for c, n in d["classes"].items()) + f"; violation coverage {d['violation_coverage']}"
            if d else f"{data['valid']} well-formed, {data['built']} built, {data['compared']} compared with the reference, "
                      f"{data['compared_fully']} with every result{checked_only(data)}")
    lines = [
        f"hirfuzz {data['mode']}: {data['cases']} cases in {data['elapsed_s']:.1f}s ({what})",
        f"coverage: op-dtype {cov['op_dtype']}, op-shape {cov['op_shape']}, op-edge {cov['op_edge']}, "
        f"op-path {cov['op_path']}",
        f"time in TVM {data['time_in_tvm_s']:.1f}s over {data['jobs'] * (2 if data.get('cross_ir') else 1)} "
        f"worker(s); hirfuzz's own share of "
        f"wall time {100 * data['overhead_share']:.1f}%",
        f"findings: {len(data['findings'])} distinct ({data['finding_hits']} hits)",
    ]
    memory = data.get("out_of_memory") or {}
    if memory.get("cases"):
        lines.insert(-1, f"out of memory: {memory['cases']} case(s) needed more than the --max-memory limit "
                         f"({memory['limit_mb']} MB): not findings; a larger --max-memory runs them")
    if data["domain_unmet"]:
        lines.insert(-1, "inputs that could not keep an op in its domain (results below it not compared): "
                         + _counts_text(data["domain_unmet"]))
    cross = data.get("cross_ir")
    if cross:
        outcomes = ", ".join(f"{n} {k}" for k, n in cross["outcomes"].items())
        lines.insert(1, f"cross-IR: the same cases in {cross['dialect']} on TVM {cross['tvm']}: {outcomes}")
    new = [f for f in data["findings"] if f.get("new_in_build")]
    if any(f.get("new_in_build") is not None for f in data["findings"]):
        lines.append(f"new in your build (their repro.py passes on --baseline): {len(new)} of "
                     f"{len(data['findings'])}")
    for f in new + [f for f in data["findings"] if not f.get("new_in_build")]:
        size = f" [{f['reduced_from']} -> {f['ops']} ops]" if f.get("reduced_from") else ""
        size = (" [new in your build]" if f.get("new_in_build") else "") + size
        lines.append(f"  [{f['kind']}] x{f['hits']}{size} {f['message'][:150]}")
        lines.append(f"      {os.path.join(out, f['path'], 'repro.py')}")
    if data.get("known_hits"):
        lines.append(f"known findings (--known): {data['known_hits']} hits of "
                     f"{len(data['known_hits_by_signature'])}, not filed again")
    if data["pending"]:
        lines.append(f"pending (found, not reduced and checked yet; finished on resume): {len(data['pending'])}, "
                     f"see {out}/pending/")
    if data["unconfirmed"]:
        lines.append(f"unconfirmed (hirfuzz's problem, not TVM's): {len(data['unconfirmed'])}")
        for f in data["unconfirmed"]:
            lines.append(f"  {f['message'][:100]}\n      {f.get('reason') or ''}\n      {os.path.join(out, f['path'])}")
    if data["spec_disagreements"]:
        lines.append(f"spec disagreements (TVM rejected a program the specs call valid): "
                     f"{len(data['spec_disagreements'])}, see {out}/spec-disagreements/")
    lines.append(f"report: {os.path.join(out, 'report.md')}")
    return "\n".join(lines)
