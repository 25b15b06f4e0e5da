"""The campaign: generate cases, send them to the worker, judge the replies, keep findings.

The coordinator never imports TVM. While the worker builds and runs case i, the
coordinator generates case i+1, so hirfuzz's own work overlaps TVM's. Everything that
reaches the screen is on disk first: finding folders appear atomically, `summary.json` is
rewritten atomically after every case, and `stats.jsonl` grows by one line per case.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from . import __version__
from .coverage import Coverage
from .errors import HirfuzzError
from .generate import GenStats, generate_graph
from .graph import Graph
from .inputs import choose_inputs
from .oracle import compare_results
from .sandbox import Death, Worker, WorkerError
from .triage import (Finding, check_reproducer, crash_signature, death_signature, finding_files,
                     render_reproducer, save_folder, short_id, write_atomic)
from .worker import decode_array, encode_array

MARKER = "campaign.json"


@dataclass
class Settings:
    mode: str = "strict"
    seed: int = 0
    iterations: int | None = None
    time_s: float | None = None
    ops: int = 20
    out: str = "hirfuzz-out"
    target: str = "llvm"
    guided: bool = True
    only_ops: list[str] | None = None
    dtypes: list[str] | None = None
    timeout_s: float = 60.0
    max_memory_mb: int | None = 8192
    spec_dir: str | None = None
    verify: bool = True


@dataclass
class Case:
    index: int
    graph: Graph
    inputs: list[np.ndarray]
    runnable: bool            # False: an input may trap (integer division by zero)
    expected: list            # TensorFacts per result of main
    gen_ms: float
    violation: str = ""       # the first domain violation, whose results are not compared
    request: dict = field(default_factory=dict)


@dataclass
class Counters:
    cases: int = 0
    valid: int = 0            # passed relax.analysis.well_formed
    built: int = 0
    ran: int = 0
    compared: int = 0         # ran, and at least one result was compared
    not_run: int = 0          # built only: every input draw may trap
    spec_disagreements: int = 0
    unconfirmed: int = 0
    findings_hits: int = 0
    tvm_s: float = 0.0
    gen_s: float = 0.0
    verify_s: float = 0.0


# --- the output folder ------------------------------------------------------------------------

def prepare_out(path: str, settings: Settings) -> Path:
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise HirfuzzError(f"--out {path}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()):
        marker = out / MARKER
        if not marker.is_file():
            raise HirfuzzError(f"--out {path}: folder is not empty and holds no hirfuzz campaign; "
                               "refusing to write into it (choose an empty or new folder)")
        try:
            json.loads(marker.read_text())
        except (OSError, ValueError) as exc:
            raise HirfuzzError(f"--out {path}: {MARKER} is unreadable or corrupt ({exc}); "
                               "refusing to overwrite it") from None
        raise HirfuzzError(f"--out {path}: already holds a hirfuzz campaign; resuming is not "
                           "supported yet, so choose a new folder to keep those results intact")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise HirfuzzError(f"--out {path}: cannot write there ({exc.strerror or exc})") from None
    meta = {"hirfuzz": __version__, "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "settings": asdict(settings)}
    write_atomic(out / MARKER, json.dumps(meta, indent=2) + "\n")
    return out


# --- one campaign -----------------------------------------------------------------------------

class Campaign:
    def __init__(self, settings: Settings, specs, progress: bool = True):
        self.s = settings
        self.specs = specs
        self.progress = progress
        self.out = prepare_out(settings.out, settings)
        self.coverage = Coverage()
        self.gen_rng = np.random.default_rng(settings.seed)
        self.gen_stats = GenStats()
        self.counters = Counters()
        self.findings: dict[str, Finding] = {}
        self.unconfirmed: dict[str, Finding] = {}
        self.disagreements: dict[str, Finding] = {}
        self.worker = Worker(self.out / "workers" / "worker-0.log", settings.spec_dir, settings.max_memory_mb)
        self.started = time.monotonic()
        self.stats_file = open(self.out / "stats.jsonl", "a", buffering=1)
        self.bar = None

    # --- cases ----------------------------------------------------------------------------

    def make_case(self, index: int) -> Case:
        t0 = time.perf_counter()
        graph = generate_graph(self.specs, self.gen_rng, self.s.ops, self.coverage, guided=self.s.guided,
                               ops=self.s.only_ops, dtypes=self.s.dtypes, stats=self.gen_stats)
        gen_ms = (time.perf_counter() - t0) * 1000
        # inputs have their own stream, so the graphs depend on the seed alone
        chosen = choose_inputs(graph, self.specs, np.random.default_rng([self.s.seed, index]))
        inputs = [chosen.values[n.id] for n in graph.variables]
        expected = [chosen.facts[r] for r in graph.results()]
        case = Case(index, graph, inputs, chosen.runnable, expected, gen_ms, chosen.reason)
        case.request = {"case": index, "graph": graph.to_json(), "target": self.s.target,
                        "run": chosen.runnable, "inputs": [encode_array(a) for a in inputs]}
        self.counters.gen_s += time.perf_counter() - t0
        return case

    def done(self, started_cases: int) -> bool:
        if self.s.iterations is not None and started_cases >= self.s.iterations:
            return True
        if self.s.time_s is not None and time.monotonic() - self.started >= self.s.time_s:
            return True
        return False

    def run(self) -> dict:
        try:
            self.worker.start()
        except WorkerError as exc:
            raise HirfuzzError(str(exc)) from None
        self._open_bar()
        index = 0
        pending = self.make_case(index) if not self.done(0) else None
        try:
            while pending is not None:
                case = pending
                self.worker.submit(case.request)
                index += 1
                pending = self.make_case(index) if not self.done(index) else None
                reply = self.worker.wait(self.s.timeout_s)
                self.judge(case, reply)
                self.write_summary()
                self._tick()
        except KeyboardInterrupt:
            self._say("interrupted: writing the summary")
        finally:
            self.worker.close()
            if self.bar is not None:
                self.bar.close()
            self.stats_file.close()
        return self.write_summary(final=True)

    # --- judging replies ------------------------------------------------------------------

    def judge(self, case: Case, reply):
        c = self.counters
        c.cases += 1
        status = "ok"
        if isinstance(reply, Death):
            status = reply.reason
            finding = Finding(kind="hang" if reply.reason == "timeout" else "crash", oracle="crash",
                              stage="worker", signature=death_signature(reply.reason, reply.signal),
                              message=reply.describe(), detail=reply.log_tail, case=case.index,
                              extra={"signal": reply.signal or reply.reason})
            self.record(case, finding, reply.log_tail)
        else:
            c.tvm_s += sum(reply.get("timings", {}).values())
            if reply["status"] == "error":
                status = f"error:{reply['stage']}"
                self.on_error(case, reply)
            else:
                c.valid += 1
                c.built += 1
                status = self.on_success(case, reply)
        self.stats_file.write(json.dumps({
            "case": case.index, "t": round(time.monotonic() - self.started, 3), "status": status,
            "gen_ms": round(case.gen_ms, 3), "findings": len(self.findings),
            "violation": case.violation or None,
            "coverage": self.coverage.counts()}) + "\n")

    def on_error(self, case: Case, reply: dict):
        stage = reply["stage"]
        if stage in ("build", "run"):
            self.counters.valid += 1
            self.counters.built += stage == "run"
        first = next((ln for ln in reply["message"].splitlines() if ln.strip()), reply["exc_type"])
        finding = Finding(kind="crash", oracle="crash", stage=stage,
                          signature=crash_signature(stage, reply["exc_type"], reply["message"], reply["traceback"]),
                          message=f"{reply['exc_type']}: {first[:300]}", detail=reply["traceback"],
                          case=case.index, extra={"exc_type": reply["exc_type"]})
        if stage in ("lower", "well_formed"):
            # TVM refused a program the specs call valid: a spec to fix (or a type-inference
            # bug to look at by hand), never reported as a TVM crash
            finding.kind = "spec-disagreement"
            self.counters.spec_disagreements += 1
            self._keep(self.disagreements, "spec-disagreements", case, finding, reply["traceback"], verify=False)
            return
        self.record(case, finding, reply["traceback"])

    def on_success(self, case: Case, reply: dict) -> str:
        if not case.runnable:
            self.counters.not_run += 1
            return "built"
        self.counters.ran += 1
        if any(f.stable for f in case.expected):
            self.counters.compared += 1
        outputs = [decode_array(a) for a in reply["outputs"]]
        mismatches = compare_results(case.expected, outputs)
        if not mismatches:
            return "ok"
        first = mismatches[0]
        results = case.graph.results()
        node = case.graph.nodes[results[first.index].node] if 0 <= first.index < len(results) else None
        where = f"{node.op}:{node.dtype}" if node is not None else "arity"
        finding = Finding(kind="wrong-result", oracle="reference", stage="run",
                          signature=f"wrong-result|reference|{self.s.target}|{where}",
                          message=f"result {first.index} ({where}) differs from the NumPy reference: {first.detail}",
                          detail="\n".join(f"result {m.index}: {m.detail}" for m in mismatches),
                          case=case.index)
        self.record(case, finding, "")
        return "mismatch"

    # --- findings -------------------------------------------------------------------------

    def record(self, case: Case, finding: Finding, log: str):
        self.counters.findings_hits += 1
        if finding.signature in self.findings:
            self.findings[finding.signature].hits += 1
            self._rewrite_finding_json(self.findings[finding.signature])
            return
        if finding.signature in self.unconfirmed:
            self.unconfirmed[finding.signature].hits += 1
            return
        self._keep(self.findings, "findings", case, finding, log, verify=self.s.verify)

    def _keep(self, table: dict, folder: str, case: Case, finding: Finding, log: str, verify: bool):
        if finding.signature in table:
            table[finding.signature].hits += 1
            return
        expected = None
        if finding.kind == "wrong-result":
            expected = [((f.value if f.stable else None), f.rtol if not f.exact else 0.0,
                         (f.atol * max(1.0, f.magnitude)) if not f.exact else 0.0) for f in case.expected]
        repro = render_reproducer(case.graph, self.specs, finding, self.s.target, case.inputs,
                                  run=case.runnable, expected=expected, tvm_version=self.worker.tvm_version)
        case_json = {"case": case.index, "seed": self.s.seed, "settings": asdict(self.s),
                     "graph": case.graph.to_json(), "runnable": case.runnable}
        name = f"{len(table) + 1:04d}-{finding.kind}-{short_id(finding.signature)}"
        path = save_folder(self.out / folder, name, finding_files(finding, case_json, repro, log, None))
        finding.path = str(path)
        outcome = None
        if verify:
            t0 = time.monotonic()
            outcome = check_reproducer(path / "repro.py", finding, timeout_s=max(self.s.timeout_s, 60))
            self.counters.verify_s += time.monotonic() - t0
            finding.confirmed = outcome.reproduced
            if not outcome.reproduced:
                # the saved script does not fail the same way: not a finding we can stand by
                self.counters.unconfirmed += 1
                target = save_folder(self.out / "unconfirmed", name,
                                     finding_files(finding, case_json, repro, log, outcome))
                shutil.rmtree(path, ignore_errors=True)
                finding.path = str(target)
                self.unconfirmed[finding.signature] = finding
                self._say(f"unconfirmed (its reproducer did not fail the same way): {finding.message}")
                return
            save_folder(self.out / folder, name, finding_files(finding, case_json, repro, log, outcome))
        table[finding.signature] = finding
        label = "finding" if folder == "findings" else "spec disagreement"
        self._say(f"{label} {name}: {finding.message}\n    -> {path}/repro.py")

    def _rewrite_finding_json(self, finding: Finding):
        path = Path(finding.path) / "finding.json"
        if path.parent.is_dir():
            write_atomic(path, json.dumps(finding.to_json(), indent=2) + "\n")

    # --- reporting ------------------------------------------------------------------------

    def summary(self) -> dict:
        c = self.counters
        elapsed = time.monotonic() - self.started
        # TVM's share: building and running cases, starting workers (importing TVM), and
        # re-running reproducers; the rest is hirfuzz's own overhead
        in_tvm = c.tvm_s + self.worker.startup_s + c.verify_s
        return {
            "hirfuzz": __version__, "tvm": self.worker.tvm_version, "mode": self.s.mode,
            "seed": self.s.seed, "target": self.s.target, "ops_per_graph": self.s.ops,
            "coverage_guided": self.s.guided,
            "cases": c.cases, "valid": c.valid, "built": c.built, "ran": c.ran, "compared": c.compared,
            "not_run": c.not_run, "elapsed_s": round(elapsed, 3),
            "time_in_tvm_s": round(in_tvm, 3), "time_building_running_s": round(c.tvm_s, 3),
            "time_starting_workers_s": round(self.worker.startup_s, 3),
            "time_verifying_reproducers_s": round(c.verify_s, 3), "generation_s": round(c.gen_s, 3),
            "overhead_share": round(max(0.0, elapsed - in_tvm) / elapsed, 4) if elapsed > 0 else 0.0,
            "worker_restarts": self.worker.restarts,
            "coverage": self.coverage.counts(),
            "generation": asdict(self.gen_stats),
            "findings": [self._finding_row(f) for f in self.findings.values()],
            "finding_hits": c.findings_hits,
            "unconfirmed": [self._finding_row(f) for f in self.unconfirmed.values()],
            "spec_disagreements": [self._finding_row(f) for f in self.disagreements.values()],
        }

    @staticmethod
    def _finding_row(f: Finding) -> dict:
        return {"signature": f.signature, "kind": f.kind, "oracle": f.oracle, "stage": f.stage,
                "path": f.path, "hits": f.hits, "message": f.message}

    def write_summary(self, final: bool = False) -> dict:
        data = self.summary()
        write_atomic(self.out / "summary.json", json.dumps(data, indent=2) + "\n")
        if final:
            write_atomic(self.out / "coverage.json", json.dumps(self.coverage.to_json()) + "\n")
        return data

    def _open_bar(self):
        if not self.progress:
            return
        from tqdm import tqdm
        self.bar = tqdm(total=self.s.iterations, unit="case", dynamic_ncols=True, leave=True,
                        desc=f"hirfuzz {self.s.mode}")

    def _tick(self):
        if self.bar is None:
            return
        cov = self.coverage.counts()
        self.bar.set_postfix_str(
            f"findings={len(self.findings)} cov(dtype/shape/edge)={cov['op_dtype']}/{cov['op_shape']}/"
            f"{cov['op_edge']} restarts={self.worker.restarts}", refresh=False)
        self.bar.update(1)

    def _say(self, text: str):
        if self.bar is not None:
            self.bar.write(text)
        elif self.progress:
            print(text, flush=True)


def format_summary(data: dict, out: str) -> str:
    cov = data["coverage"]
    lines = [
        f"hirfuzz {data['mode']}: {data['cases']} cases in {data['elapsed_s']:.1f}s "
        f"({data['valid']} well-formed, {data['built']} built, {data['compared']} compared with the reference)",
        f"coverage: op-dtype {cov['op_dtype']}, op-shape {cov['op_shape']}, op-edge {cov['op_edge']}, "
        f"op-path {cov['op_path']}",
        f"time in TVM {data['time_in_tvm_s']:.1f}s; hirfuzz's own share of wall time "
        f"{100 * data['overhead_share']:.1f}%",
        f"findings: {len(data['findings'])} distinct ({data['finding_hits']} hits)",
    ]
    for f in data["findings"]:
        lines.append(f"  [{f['kind']}] x{f['hits']} {f['message'][:150]}")
        lines.append(f"      {f['path']}/repro.py")
    if data["unconfirmed"]:
        lines.append(f"unconfirmed (reproducer did not fail alike; hirfuzz's problem): {len(data['unconfirmed'])}")
    if data["spec_disagreements"]:
        lines.append(f"spec disagreements (TVM rejected a program the specs call valid): "
                     f"{len(data['spec_disagreements'])}, see {out}/spec-disagreements/")
    lines.append(f"summary: {os.path.join(out, 'summary.json')}")
    return "\n".join(lines)
