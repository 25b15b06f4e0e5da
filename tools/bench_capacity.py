"""Capacity benchmark: how many workers one coordinator keeps busy.

    python tools/bench_capacity.py [--workers 16,32,64,96] [--makers 2] [--seconds 30]
                                   [--ops 20] [--seed 7] [--speed 1] [--real-scaling SECONDS]

The real coordinator (campaign.coordinator.Campaign's fuzz loop: its case makers, judge,
finding tables, stats.jsonl, summary.json and checkpoints) runs against simulated workers
that need no TVM: each answers its case after the worker time of a real case (drawn per
case index from tools/data/capacity_timings.json: Relax campaigns at 20 ops on this
project's development machine; --timings-from reads other campaigns' stats.jsonl), with
the reference's own results, so the judge compares every output as it would a real
answer. A share of the answers (as in those campaigns) is a crash of the pass-sequence
configuration keyed on one of a few findings already filed, so each is a hit that the
finding tables record. Answers are made and their JSON encoded outside the coordinator's
clock; the coordinator decodes them as it decodes a worker's reply.

For each number of workers it runs --seconds of fuzzing after a warm-up (the first cases
to every worker) and reports the workers' busy share over that window (a worker is busy
from the case's hand-out until its simulated time is over: waiting to be read, judged
and given the next case counts as idle), the coordinator's CPU seconds and its seconds per
stage (timings.COORDINATOR_STAGES), per case. The last line is `feeds_workers=N`: the
largest number tried that was kept at least 95% busy, with every smaller one.

--real-scaling SECONDS also runs the real thing (TVM, this machine's cores): a campaign of
SECONDS at --jobs 1 and one at --jobs 2, `--ops 20 --seed 7 --no-reduce --no-verify`, and
prints their throughput side by side.
"""
from __future__ import annotations

import argparse
import json
from contextlib import contextmanager
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hirfuzz.campaign.coordinator import Campaign, Settings  # noqa: E402
from hirfuzz.campaign.judge import Judge  # noqa: E402
from hirfuzz.campaign.outdir import save_folder  # noqa: E402
from hirfuzz.campaign.phases import Phase  # noqa: E402
from hirfuzz.core.coverage import Coverage  # noqa: E402
from hirfuzz.core.spec import load_specs  # noqa: E402
from hirfuzz.protocol import encode_array  # noqa: E402

TIMINGS = ROOT / "tools" / "data" / "capacity_timings.json"
BUSY_ENOUGH = 0.95
# answers whose pass-sequence configuration crashes, as a share of cases, and on how many
# findings: the campaigns the timings come from hit a filed finding in about one case in four
CRASH_SHARE = 0.25
CRASH_KINDS = 3


# --- simulated workers ----------------------------------------------------------------------

class SimWorker:
    """A worker that answers after a real case's time, with the reference's results."""

    def __init__(self, pool: "SimPool", dialect: str):
        self.pool, self.dialect = pool, dialect
        self.case = None
        self.lent = False
        self.hello = pool.hello
        self.busy_s = 0.0
        self.restarts = self.recycles = 0
        self.startup_s = 0.0
        self.due = 0.0
        self.reply = ""
        self.spans: list[tuple[float, float]] = []  # (handed a case, done with it)

    @property
    def busy(self) -> bool:
        return self.case is not None

    def submit(self, case, request: dict, timeout_s: float):
        text = json.dumps(request)  # what a real worker's submit costs the coordinator
        now = time.monotonic()
        with self.pool.outside_the_coordinator():
            del text
            worker_s = self.pool.worker_s(case.index)
            self.reply = json.dumps(simulated_answer(case, worker_s, self.pool.crash_of(case.index)))
        self.case = case
        self.due = now + worker_s
        self.spans.append((now, self.due))

    def close(self):
        pass


class SimPool:
    """The Pool interface the coordinator uses, over SimWorkers."""

    def __init__(self, n: int, dialect: str, times: list[float], speed: float, crash_signatures: list[str]):
        self.dialect = dialect
        self.hello = {"python": sys.executable, "tvm": "simulated", "targets": ["llvm"], "devices": {}}
        self.times, self.speed = times, speed
        self.crash_signatures = crash_signatures
        self.workers = [SimWorker(self, dialect) for _ in range(n)]
        self.fast_forward = False   # the window is over: answer what is in flight at once
        self.sim_s = self.sim_cpu_s = 0.0  # seconds spent making answers (not the coordinator's)

    @contextmanager
    def outside_the_coordinator(self):
        """Time spent simulating in the coordinator's process, taken off its figures."""
        t0, cpu0 = time.perf_counter(), time.thread_time()
        try:
            yield
        finally:
            self.sim_s += time.perf_counter() - t0
            self.sim_cpu_s += time.thread_time() - cpu0

    def worker_s(self, index: int) -> float:
        return self.times[_pick(index, len(self.times), "time")] / self.speed

    def crash_of(self, index: int) -> int | None:
        """Which planted crash case `index`'s pass-sequence configuration answers (None: none)."""
        if _pick(index, 1000, "crash") >= CRASH_SHARE * 1000:
            return None
        return _pick(index, CRASH_KINDS, "kind")

    # what the coordinator reads of a pool
    jobs = property(lambda self: len(self.workers))
    busy_s = property(lambda self: sum(w.busy_s for w in self.workers))
    tvm_version = property(lambda self: "simulated")
    installation = property(lambda self: self.hello)
    restarts = recycles = 0
    startup_s = startup_worker_s = 0.0

    def installation_of(self, dialect: str) -> dict:
        return self.hello

    def nodes(self):
        return None

    def start(self):
        pass

    def close(self):
        pass

    def idle(self, dialect: str | None = None) -> list:
        return [w for w in self.workers if not w.busy and not w.lent]

    def in_flight(self) -> list:
        return [w.case for w in self.workers if w.busy]

    def wait(self, max_wait_s: float = 1.0) -> list:
        busy = [w for w in self.workers if w.busy]
        if not busy:
            return []
        now = time.monotonic()
        if not self.fast_forward:
            first = min(w.due for w in busy)
            if first > now:
                time.sleep(min(max_wait_s, first - now))
                now = time.monotonic()
        done = []
        for w in busy:
            if self.fast_forward or w.due <= now:
                case, reply = w.case, json.loads(w.reply)  # decoded as a worker's reply is
                w.busy_s += max(0.0, min(now, w.due) - w.spans[-1][0])
                if self.fast_forward:
                    w.spans[-1] = (w.spans[-1][0], min(now, w.due))
                w.case = None
                done.append((w, case, reply))
        return done


def _pick(index: int, n: int, what: str) -> int:
    """A number below n fixed by the case index (the same case gets the same time and answer)."""
    return zlib.crc32(f"{what}:{index}".encode()) % n


def simulated_answer(case, worker_s: float, crash: int | None) -> dict:
    """What a worker that found no bug answers (the reference's results for every
    configuration), but for a planted crash of the second configuration."""
    outputs = [encode_array(f.value) for f in case.expected] if case.runnable else []
    build = worker_s * 0.9 / max(1, len(case.configs))

    def ok():
        return {"status": "ok", "outputs": outputs, "timings": {"build": build}, "stages": {"build": build, "run": 0.001}}
    others = [ok() for _ in case.configs[1:]]
    if crash is not None and others:
        others[0] = planted_crash(crash)
    return {**ok(), "others": others, "case_stages": {"lower": 0.02}, "builds_saved": 0,
            "worker_s": worker_s, "case": case.index}


def planted_crash(kind: int) -> dict:
    return {"status": "error", "stage": "build", "exc_type": "TVMError",
            "message": f"simulated failure number {kind}", "traceback": f"simulated traceback {kind}",
            "timings": {}, "stages": {}}


def plant_findings(campaign: Campaign) -> list[str]:
    """File the planted crashes as findings already on disk, so that their hits are recorded
    as a campaign records hits (no reduction: the simulated workers run none)."""
    signatures = []
    judge = Judge(campaign.specs, {})
    case = campaign.maker.draw_case(10**6, Coverage(), frozenset()).case  # the ledger left as it is
    for kind in range(CRASH_KINDS):
        finding = judge.classify(case, simulated_answer(case, 1.0, kind)).finding
        finding.confirmed = True
        name = f"{kind + 1:04d}-crash-simulated"
        finding.path = f"findings/{name}"
        save_folder(campaign.out / "findings", name, {"finding.json": json.dumps(finding.to_json(), indent=2) + "\n"})
        campaign.tables.findings[finding.signature] = finding
        signatures.append(finding.signature)
    return signatures


# --- one measurement --------------------------------------------------------------------------

def measure(workers: int, args, specs, times: list[float]) -> dict:
    """The coordinator's fuzz loop against `workers` simulated workers for warm-up plus
    args.seconds; the busy share over the window after the warm-up."""
    warmup = args.warmup if args.warmup is not None else 1.5 * statistics.mean(times) / args.speed
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(seed=args.seed, ops=args.ops, out=str(Path(tmp) / "out"), jobs=workers,
                            makers=args.makers, time_s=warmup + args.seconds, reduce=False, verify=False,
                            versions=[], timeout_s=600.0)
        campaign = Campaign(settings, specs, progress=False)
        pool = campaign.pool = SimPool(workers, settings.dialect, times, args.speed, [])
        pool.crash_signatures = plant_findings(campaign)
        campaign.phases.enter(Phase.FUZZ)
        start = time.monotonic()
        campaign.started = campaign.supply.started = start
        window = (start + warmup, start + warmup + args.seconds)
        cpu0 = time.process_time()
        judged0 = {}

        step = campaign.step

        def watched_step():  # the window is over: what is in flight answers at once
            if not judged0 and time.monotonic() >= window[0]:
                judged0.update(cases=campaign.counters.cases, cpu=time.process_time(), sim=pool.sim_s,
                               sim_cpu=pool.sim_cpu_s,
                               stages=dict(campaign.clock.seconds), stages_cpu=dict(campaign.clock.cpu_seconds))
            if time.monotonic() >= window[1] and not pool.fast_forward:
                pool.fast_forward = True
                judged0["cases_in_window"] = campaign.counters.cases - judged0.get("cases", 0)
            return step()
        campaign.step = watched_step
        campaign.fuzz()
        cpu = time.process_time() - judged0.get("cpu", cpu0)
        cases = campaign.counters.cases - judged0.get("cases", 0)
        stages = {k: v - judged0.get("stages", {}).get(k, 0.0) for k, v in campaign.clock.seconds.items()}
        stages_cpu = {k: v - judged0.get("stages_cpu", {}).get(k, 0.0) for k, v in campaign.clock.cpu_seconds.items()}
        sim, sim_cpu = pool.sim_s - judged0.get("sim", 0.0), pool.sim_cpu_s - judged0.get("sim_cpu", 0.0)
        stages["dispatch"] -= sim  # the simulated answers are made as a case is handed out
        stages_cpu["dispatch"] -= sim_cpu
        busy = sum(max(0.0, min(b, window[1]) - max(a, window[0])) for w in pool.workers for a, b in w.spans)
        hits = sum(f.hits for f in campaign.tables.findings.values())
    per_case = {k: 1000 * v / max(1, cases) for k, v in stages.items()}
    per_case_cpu = {k: 1000 * v / max(1, cases) for k, v in stages_cpu.items()}
    return {"workers": workers, "busy": busy / (workers * args.seconds), "cases": cases,
            "cases_per_s": judged0.get("cases_in_window", cases) / args.seconds, "cpu_ms": 1000 * max(0.0, cpu - sim_cpu) / max(1, cases),
            "stages_ms": per_case, "stages_cpu_ms": per_case_cpu, "hits": hits}


def describe(m: dict, makers: int) -> str:
    stages = " ".join(f"{k} {v:.1f}/{m['stages_cpu_ms'][k]:.1f}" for k, v in m["stages_ms"].items())
    return (f"workers={m['workers']} makers={makers}: busy {100 * m['busy']:.1f}%, {m['cases']} cases "
            f"({m['cases_per_s']:.2f}/s, {m['hits']} finding hits); coordinator CPU {m['cpu_ms']:.1f} ms/case; "
            f"ms/case by stage (wall/CPU): {stages}")


# --- the real thing ---------------------------------------------------------------------------

def real_campaign(jobs: int, seconds: float, makers: int | None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        cmd = [sys.executable, "-m", "hirfuzz", "--ir", "relax", "--ops", "20", "--seed", "7", "--no-reduce",
               "--no-verify", "--jobs", str(jobs), "--time", str(seconds), "--out", str(out), "--no-progress"]
        if makers is not None:
            cmd += ["--makers", str(makers)]
        subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
        return json.loads((out / "summary.json").read_text())


def real_scaling(seconds: float, makers: int | None):
    figures = {}
    for jobs in (1, 2):
        s = real_campaign(jobs, seconds, makers)
        fuzzing = s["elapsed_s"] - s["time_starting_workers_s"]
        figures[jobs] = s["cases"] / fuzzing
        print(f"real --jobs {jobs}: {s['cases']} cases in {fuzzing:.1f}s of fuzzing = {figures[jobs]:.3f} cases/s; "
              f"workers busy {100 * s['worker_busy_share']:.0f}%, coordinator s by stage {s['coordinator_s']}",
              flush=True)
    print(f"real scaling --jobs 2 / --jobs 1: {figures[2] / figures[1]:.2f} (load average now "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")


# --- main -------------------------------------------------------------------------------------

def load_times(folders: list[str]) -> list[float]:
    if not folders:
        return [c["worker_s"] for c in json.loads(TIMINGS.read_text())["cases"]]
    times = []
    for folder in folders:
        for line in (Path(folder) / "stats.jsonl").read_text().splitlines():
            worker = json.loads(line).get("timings", {}).get("worker")
            if worker is not None:
                times.append(worker)
    if not times:
        sys.exit(f"bench_capacity: no worker timings in the stats.jsonl of {', '.join(folders)}")
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", default="16,32,64,96", help="numbers of simulated workers to try, in order")
    ap.add_argument("--makers", type=int, default=2, help="case-maker processes (--makers; 0: the coordinator)")
    ap.add_argument("--seconds", type=float, default=30.0, help="the measured window per number of workers")
    ap.add_argument("--warmup", type=float, help="seconds before the window (default: 1.5 mean case times)")
    ap.add_argument("--ops", type=int, default=20)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--speed", type=float, default=1.0, help="divide the workers' times by this (a faster machine)")
    ap.add_argument("--timings-from", nargs="*", default=[], metavar="CAMPAIGN",
                    help="campaign folders whose stats.jsonl give the worker times (default: the bundled ones)")
    ap.add_argument("--real-scaling", type=float, metavar="SECONDS",
                    help="also run real campaigns of SECONDS at --jobs 1 and 2 and compare their throughput")
    args = ap.parse_args()
    times = load_times(args.timings_from)
    print(f"worker times: {len(times)} cases, mean {statistics.mean(times):.2f}s, median "
          f"{statistics.median(times):.2f}s (/{args.speed:g}); load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores", flush=True)
    specs = load_specs(None, dialect="relax")
    fed = 0
    for workers in [int(n) for n in args.workers.split(",")]:
        m = measure(workers, args, specs, times)
        print(describe(m, args.makers), flush=True)
        if m["busy"] < BUSY_ENOUGH:
            break
        fed = workers
    if args.real_scaling:
        real_scaling(args.real_scaling, None)
    print(f"feeds_workers={fed}")


if __name__ == "__main__":
    main()
