"""Where a case's time went, stage by stage (stats.jsonl "timings", summary "stage_totals_s").

The coordinator's stages: making the case (`generate`; `inputs`, where the reference
interpreter runs; `prepare`, its request), `wait` (made, until handed to a worker: cases
are made when a worker is idle, so this is small), `transfer` (the request encoded and
written, the reply decoded, and the round trip less the worker's own time: the pipe and
the coordinator's delay in reading it), `compare` (judging the answer) and `idle` (how long
the worker waited for this case since its previous answer). The worker's (worker.py):
`lower`, `well_formed`, `mutate`, and for each configuration `passes`, `build` (nothing,
or the cache's look-up, when a build was reused), `load` (the VM or graph module) and
`run`, summed here over configurations and listed one by one in "config_timings"
(`passes_past`: a failed sequence run again past its failed passes, worker.failures_past). `worker`
is the worker's whole time on the case.
"""
from __future__ import annotations

import time
from contextlib import contextmanager

STAGES = ("generate", "inputs", "prepare", "wait", "transfer", "idle", "lower", "well_formed", "mutate",
          "passes", "passes_past", "build", "load", "run", "compare", "worker")


def case_timings(case, answer, wait_s: float, compare_s: float) -> tuple[dict, list]:
    """(seconds per stage, per-configuration seconds) for one answered case; a dead
    worker's answer (not a dict) has the coordinator's stages only."""
    t = {k: v for k, v in case.timings.items()}
    t["wait"] = wait_s
    t["compare"] = compare_s
    configs = []
    if isinstance(answer, dict):
        for k, v in (answer.get("case_stages") or answer.get("stages") or {}).items():
            if k in ("lower", "well_formed", "mutate"):
                t[k] = t.get(k, 0.0) + v
        for reply in [answer] + answer.get("others", []):
            stages = dict(reply.get("stages") or {}) if reply is not answer or "case_stages" in answer else {}
            for k, v in stages.items():
                t[k] = t.get(k, 0.0) + v
            if reply.get("reused_build"):
                stages["reused"] = reply["reused_build"]
            if reply.get("given"):  # a follow-up's original's reply: not run again (campaign.followups)
                stages["given"] = True
            configs.append(stages)
        worker = answer.get("worker_s")
        pipe = answer.get("pipe") or {}
        if worker is not None:
            t["worker"] = worker
        if pipe:
            t["transfer"] = pipe.get("encode", 0.0) + pipe.get("decode", 0.0) + max(
                0.0, pipe.get("round_trip", 0.0) - (worker or 0.0))
            if "idle" in pipe:
                t["idle"] = pipe["idle"]
    return {k: round(t[k], 6) for k in STAGES if k in t}, [{k: (round(v, 6) if isinstance(v, float) else v)
                                                              for k, v in c.items()} for c in configs]


def add_totals(totals: dict, timings: dict):
    for k, v in timings.items():
        totals[k] = totals.get(k, 0.0) + v


# The coordinator's own work, per stage (summary.json "coordinator_s"): `make`, drawing or
# taking the cases it hands out (campaign.makers); `dispatch`, sending them to workers;
# `judge`, the oracles' verdicts; `record`, counting and filing them (tallies, finding
# tables, stats.jsonl); `summary`, `checkpoint` and `report`, the files it rewrites.
COORDINATOR_STAGES = ("make", "dispatch", "judge", "record", "summary", "checkpoint", "report")


class CoordinatorClock:
    """Seconds the coordinator spent per stage (COORDINATOR_STAGES): wall time, and the CPU
    time of its thread (what the stage costs, less what it waited for)."""

    def __init__(self):
        self.seconds = dict.fromkeys(COORDINATOR_STAGES, 0.0)
        self.cpu_seconds = dict.fromkeys(COORDINATOR_STAGES, 0.0)

    @contextmanager
    def stage(self, name: str):
        t0, cpu0 = time.perf_counter(), time.thread_time()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - t0
            self.cpu_seconds[name] += time.thread_time() - cpu0

    def figures(self) -> dict:
        return {k: round(v, 3) for k, v in self.seconds.items()}
