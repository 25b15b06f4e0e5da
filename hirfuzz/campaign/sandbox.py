"""The coordinator's side of workers: start them, hand out cases, collect answers or deaths.

A worker that dies (signal, abort, out of memory) or stays silent past its case's time
limit is killed and its case answered with a `Death`; the next case it is given starts a
fresh process. Each worker runs in its own session (a Ctrl-C for the coordinator does not
reach it), and its stderr (TVM's logs, crash backtraces) goes to a log file whose tail is
kept for the finding. Workers are recycled after a number of cases, so that memory TVM
leaks stays bounded. --max-memory bounds each worker's resident memory: read here every
MEMORY_POLL_S, and enforced by killing the worker, never by an rlimit on its address space
(CUDA's initialisation reserves far more address space than it uses, and under such a
limit TVM sees no GPU). A worker may be lent to a reduction thread (campaign's `reducer`),
which then drives it alone until it gives it back.
"""
from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..breadcrumbs import Place, last_place
from ..worker import MEMORY_BOUND_VARIABLE
from .environment import worker_environment
from .verify import check_finding_scripts

READY_TIMEOUT_S = 120
# how often the coordinator reads a bounded worker's resident memory while it works (a
# read of /proc/PID/statm costs microseconds); an allocation faster than this gets past
# the bound by what it allocates in that time before it is killed
MEMORY_POLL_S = 0.1


@dataclass
class Death:
    """A worker that did not answer: killed by a signal, exited, hung past the limit, or
    killed by hirfuzz past its --max-memory bound."""
    reason: str            # "signal", "exit", "timeout" or "memory"
    signal: str | None
    returncode: int | None
    log_tail: str          # what this worker process wrote to its log (its last part)
    # the --max-memory bound (MB) it ran out of (`reason` "memory", or an end that shows it:
    # `ran_out_of_memory`): the bound's doing, not TVM's crash
    memory_limit_mb: int | None = None
    resident_mb: int | None = None  # its resident memory when hirfuzz killed it (reason "memory")
    # where it died (its log's last breadcrumb: breadcrumbs.py), for a signal or an exit;
    # None where it died before any step of a case
    place: Place | None = None

    def describe(self) -> str:
        if self.reason == "timeout":
            return "hang: no answer within the time limit"
        if self.reason == "memory":
            return (f"ran out of the --max-memory limit ({self.memory_limit_mb} MB of resident memory): "
                    f"killed by hirfuzz at {self.resident_mb} MB")
        died = (f"killed by {self.signal}" if self.reason == "signal"
                else f"worker exited with status {self.returncode} (out of memory or an uncaught error)")
        if self.memory_limit_mb is not None:
            return f"ran out of the --max-memory limit ({self.memory_limit_mb} MB of resident memory): {died}"
        return f"{died} {self.place.describe()}" if self.place else died


# what a process says as it runs out of memory: Python, C++ (std::bad_alloc, which TVM 0.19
# prints "std: :bad_alloc"; uncaught, it aborts), LLVM ("LLVM ERROR: out of memory", then
# abort) and the C library (ENOMEM's strerror)
_OUT_OF_MEMORY = re.compile(r"\bMemoryError\b|\bbad_alloc\b|out of memory|Cannot allocate memory", re.IGNORECASE)
# "near" the bound: within a quarter of it, or this many MB of it (building a 20-operator
# Relax case takes about 60 MB above starting)
MEMORY_HEADROOM_MB = 64


def memory_evidence(text: str) -> str:
    """The line of a worker's log (or of an error it reported) that says it ran out of
    memory, or "". TVM short of memory raises (a bad_alloc turned into a TVMError) as often
    as it dies."""
    return next((ln.strip() for ln in text.splitlines() if _OUT_OF_MEMORY.search(ln)), "")


def near_bound(peak_kb: int, limit_kb: int) -> bool:
    """Was a worker whose resident memory peaked at `peak_kb` near its bound `limit_kb`
    (0: none)?"""
    if not limit_kb or not peak_kb:
        return False
    return limit_kb - peak_kb < max(MEMORY_HEADROOM_MB * 1024, limit_kb // 4)


def short_of_room(answer: dict) -> bool:
    """Was a worker that reported an error near its --max-memory bound when it answered
    (the case's peak resident memory, which the reply carries with the bound)? Then an
    error saying it lacked memory is the bound's doing: TVM asking for one large block
    the machine would not give. Far from it (a quarter of the bound or more still free),
    a failed allocation asked for more than any small generated program needs, which is
    TVM's bug (a negative size taken as a huge one), and its script, run without any
    limit, fails alike."""
    return near_bound(answer.get("rss_peak_kb", 0), answer.get("limit_kb", 0))


def ran_out_of_memory(log_tail: str, peak_kb: int, limit_kb: int) -> bool:
    """Did a worker that died on its own (its log output, and the peak resident memory
    hirfuzz saw in its case) die for want of memory near its bound?"""
    return near_bound(peak_kb, limit_kb) and bool(memory_evidence(log_tail))


_KILLED_FOR_MEMORY = "memory"  # what `Worker._read_blocking` says of a process past its bound


class WorkerError(RuntimeError):
    """The worker could not even start (a broken installation, not a TVM finding)."""


def suggested_memory_mb(start_mb: int) -> int:
    """A --max-memory that leaves a worker whose resident memory is `start_mb` once started
    room to build (about 60 MB for 20 Relax operators; cases reach 100s of operators), in
    256 MB steps."""
    return -(-(start_mb + 512) // 256) * 256


_PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024 if hasattr(os, "sysconf") else 4


def resident_kb(pid: int) -> int:
    """A process's resident memory in kB (/proc/PID/statm's second field, in pages), or 0
    where it cannot be read (gone, or not Linux)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE_KB
    except (OSError, IndexError, ValueError):
        return 0


def _own_session(cpu: int | None):
    def apply():
        os.setsid()
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})
    return apply


class Worker:
    """One worker process; at most one case in flight."""

    def __init__(self, log_path: Path, max_memory_mb: int | None = None, recycle_after: int | None = None,
                 python: str | None = None, extra_env: dict | None = None, dialect: str = "relax"):
        self.log_path = Path(log_path)
        self.max_memory_mb = max_memory_mb       # the bound on its resident memory (None: none)
        self.recycle_after = recycle_after
        self.python = python or sys.executable   # the interpreter holding the TVM under test
        self.extra_env = dict(extra_env or {})   # what that interpreter needs (LD_LIBRARY_PATH...)
        self.dialect = dialect
        self.hello: dict = {}                    # the handshake: TVM version, targets, devices
        self.proc: subprocess.Popen | None = None
        self.tvm_version = None
        self.restarts = 0          # replaced after a death
        self.recycles = 0          # replaced after `recycle_after` cases
        self.startup_s = 0.0
        self.served = 0            # cases answered by the current process
        self.busy_s = 0.0          # wall time with a case in flight (answered or not)
        self.case = None           # what is in flight
        self.cpu: int | None = None  # the core it is pinned to, if any
        self.lent = False          # working for a reduction thread, not the pool's loop
        self.submitted = self.deadline = 0.0
        self._buffer = b""
        self.answered_at = 0.0     # when it last answered (or died)
        self.pipe: dict = {}       # the case in flight's pipe timings (submit, _read_nonblocking)
        self.log_start = 0         # where the current process's output begins in the log
        self.limit_kb = 0          # the bound the current process runs under (0: none)
        self.peak_kb = 0           # the highest resident memory any of its processes reached
        self.case_peak_kb = 0      # ... while the case in flight (or the last one) ran

    # --- life cycle -------------------------------------------------------------------------

    def start(self):
        t0 = time.monotonic()
        try:
            self.spawn()
            self.await_ready()
        finally:
            self.startup_s += time.monotonic() - t0

    def spawn(self, bounded: bool = True):
        """Start the process (under the --max-memory bound unless `bounded` is False)."""
        cmd = [self.python, "-m", "hirfuzz.worker", "--dialect", self.dialect]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        self.limit_kb = self.max_memory_mb * 1024 if bounded and self.max_memory_mb else 0
        self.case_peak_kb = 0
        env = worker_environment(self.extra_env)
        env.pop(MEMORY_BOUND_VARIABLE, None)
        if self.limit_kb:  # the worker names it in its hello
            env[MEMORY_BOUND_VARIABLE] = str(self.max_memory_mb)
        with open(self.log_path, "ab") as log:
            try:
                self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                             preexec_fn=_own_session(self.cpu), env=env)
            except OSError as exc:  # not a program at all (a text file, a folder, gone)
                raise WorkerError(f"{self.python}: cannot run it as Python ({exc.strerror or exc})") from None
        self._buffer = b""
        self.served = 0
        self.answered_at = 0.0  # a new process has waited for nothing yet

    def await_ready(self):
        hello = self._read_blocking(READY_TIMEOUT_S)
        if isinstance(hello, dict) and hello.get("ready"):
            # a start that went past the bound between two reads is refused alike
            self._saw_resident(hello.get("rss_peak_kb", 0))
            if not self._past_bound(hello.get("rss_peak_kb", 0)):
                self.hello = hello
                self.tvm_version = hello.get("tvm")
                return
            hello = _KILLED_FOR_MEMORY
        tail = self.log_tail()
        self.kill()
        if hello == _KILLED_FOR_MEMORY:
            self._refuse_memory_limit()
        if isinstance(hello, dict) and hello.get("error"):
            raise WorkerError(f"{self.python} (TVM {hello.get('tvm', 'not found')}): {hello['error']}")
        raise WorkerError(f"the TVM worker under {self.python} did not start; its log ({self.log_path}) "
                          f"ends with:\n{tail}")

    def _refuse_memory_limit(self):
        """Raise a WorkerError naming --max-memory, with a bound that works, for a worker
        that went past it while starting: measured by starting one without the bound.
        Returns where that one does not start either (the bound is not the cause)."""
        self.spawn(bounded=False)
        hello = self._read_blocking(READY_TIMEOUT_S)
        self.kill()
        if not isinstance(hello, dict) or not hello.get("ready"):
            return
        needs_mb = -(-hello.get("rss_peak_kb", 0) // 1024)
        raise WorkerError(f"--max-memory {self.max_memory_mb}: too small for a worker to start (it bounds each "
                          f"worker's resident memory, and {self.dialect} on TVM {hello.get('tvm')} under "
                          f"{self.python} takes {needs_mb} MB just to start); use --max-memory "
                          f"{suggested_memory_mb(needs_mb)} or more")

    # --- the memory bound -------------------------------------------------------------------

    @property
    def poll_s(self) -> float | None:
        """How long the pool may wait on this worker before reading its memory again (None:
        no bound to check, wait for its answer alone)."""
        return MEMORY_POLL_S if self.limit_kb else None

    def _past_bound(self, kb: int) -> bool:
        return bool(self.limit_kb) and kb > self.limit_kb

    def _saw_resident(self, kb: int):
        self.case_peak_kb = max(self.case_peak_kb, kb)
        self.peak_kb = max(self.peak_kb, kb)

    def _resident_past_bound(self) -> int:
        """The current process's resident memory (kB) where it is past the bound, else 0."""
        if not self.limit_kb or self.proc is None:
            return 0
        kb = resident_kb(self.proc.pid)
        self._saw_resident(kb)
        return kb if self._past_bound(kb) else 0

    def _memory_death(self, resident: int) -> Death:
        """Kill the current process, which went past the bound at `resident` kB."""
        tail = self.log_tail()
        self.kill()
        self.restarts += 1
        return Death("memory", None, None, tail, memory_limit_mb=self.max_memory_mb,
                     resident_mb=-(-resident // 1024))

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        self.proc = None

    def close(self):
        if self.alive():
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()

    # --- cases ------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self.case is not None

    def submit(self, case, request: dict, timeout_s: float):
        if self.alive() and self.recycle_after and self.served >= self.recycle_after:
            self.close()
            self.recycles += 1
        if not self.alive():
            if self.proc is not None:
                self.kill()
            self.start()
        self.case = case
        self.case_peak_kb = 0
        t0 = time.perf_counter()
        self.proc.stdin.write((json.dumps(request) + "\n").encode())
        self.proc.stdin.flush()
        self.pipe = {"encode": time.perf_counter() - t0}  # the request's way there, then the reply's
        self.submitted = time.monotonic()
        if self.answered_at:  # how long this worker waited for the case since its last answer
            self.pipe["idle"] = self.submitted - self.answered_at
        self.deadline = self.submitted + timeout_s

    def fileno(self) -> int:
        return self.proc.stdout.fileno()

    def collect(self, now: float):
        """The answer for the case in flight if there is one yet: a reply dict or a Death."""
        if not self.busy:
            return None
        got = self._read_nonblocking()
        if isinstance(got, dict):
            self.served += 1
            peak = got.get("rss_peak_kb", 0)  # the case's peak, as the worker measured it
            self._saw_resident(peak)
            if self._past_bound(peak):  # past the bound between two reads: the bound's all the same
                return self._finish(self._memory_death(peak))
            return self._finish(got)
        if got == "eof":
            code = self.proc.wait()
            tail = self.log_tail()
            self.kill()
            self.restarts += 1
            memory = self.max_memory_mb if (self._past_bound(self.case_peak_kb)
                                            or ran_out_of_memory(tail, self.case_peak_kb, self.limit_kb)) else None
            # read past TVM's backtrace, however long, to the last breadcrumb
            place = last_place(self.log_path, self.log_start)
            if code < 0:
                return self._finish(Death("signal", signal.Signals(-code).name, code, tail, memory, place=place))
            return self._finish(Death("exit", None, code, tail, memory, place=place))
        resident = self._resident_past_bound()
        if resident:
            return self._finish(self._memory_death(resident))
        if now >= self.deadline:
            self.kill()
            self.restarts += 1
            return self._finish(Death("timeout", None, None, self.log_tail()))
        return None

    def _finish(self, answer):
        self.answered_at = time.monotonic()
        self.busy_s += self.answered_at - self.submitted
        self.case = None
        return answer

    def run_one(self, request: dict, timeout_s: float):
        """Submit and wait: for the reducer, which runs one case at a time."""
        self.submit(True, request, timeout_s)
        while True:
            left = max(0.0, self.deadline - time.monotonic())
            if self.proc is not None and b"\n" not in self._buffer:
                select.select([self.fileno()], [], [], min(left, self.poll_s or left))
            answer = self.collect(time.monotonic())
            if answer is not None:
                return answer

    # --- the pipe ---------------------------------------------------------------------------

    def _read_nonblocking(self):
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([self.fileno()], [], [], 0)
            if not ready:
                return None
            chunk = os.read(self.fileno(), 1 << 20)
            if not chunk:
                return "eof"
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        t0 = time.perf_counter()
        got = json.loads(line)
        if isinstance(got, dict) and self.case is not None:
            # the reply's: its decoding, and the round trip from sending to a whole line
            self.pipe.update(decode=time.perf_counter() - t0, round_trip=time.monotonic() - self.submitted)
            got["pipe"] = self.pipe
        return got

    def _read_blocking(self, timeout_s: float):
        """The next line (a dict), "eof", "timeout", or _KILLED_FOR_MEMORY where the process
        went past its bound meanwhile (killed)."""
        deadline = time.monotonic() + timeout_s
        while True:
            got = self._read_nonblocking()
            if got is not None:
                return got
            if self._resident_past_bound():
                self.kill()
                return _KILLED_FOR_MEMORY
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            select.select([self.fileno()], [], [], min(left, self.poll_s or left))

    def check_scripts(self, folder: Path, finding, timeout_s: float):
        """Run a finding's saved scripts alone under this worker's interpreter (verify's check)."""
        return check_finding_scripts(folder, finding, timeout_s=timeout_s, python=self.python,
                                     extra_env=self.extra_env, dialect=self.dialect)

    def log_tail(self, limit: int = 6000) -> str:
        """The last `limit` bytes the current process wrote to the log (not an earlier one's:
        what a dead worker said is evidence of how it died)."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(self.log_start, size - limit))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""


@dataclass
class Interpreter:
    """Where one dialect's workers run: the Python holding its TVM (None: this one) and the
    variables that Python needs."""
    dialect: str
    python: str | None = None
    env: dict = field(default_factory=dict)


class PoolBase:
    """What the local pool and the Ray pool share: their workers (`workers`, the first IR
    being `dialect`), what those said of their TVM, their busy time, closing them."""
    dialect: str
    workers: list

    def close(self):
        for w in self.workers:
            w.close()

    @property
    def busy_s(self) -> float:
        return sum(w.busy_s for w in self.workers)

    @property
    def tvm_version(self):
        return self.installation.get("tvm")

    @property
    def installation(self) -> dict:
        """What the workers' TVM said of itself in the handshake."""
        return self.installation_of(self.dialect)

    def installation_of(self, dialect: str) -> dict:
        return next((w.hello for w in self.workers if w.hello and w.dialect == dialect), {})


class Pool(PoolBase):
    """N workers; the coordinator hands cases to idle ones and collects answers. A cross-IR
    campaign's pool also holds N workers of its second dialect (`cross`), each under that
    dialect's own interpreter."""

    def __init__(self, n: int, log_dir: Path, max_memory_mb: int | None, recycle_after: int | None,
                 python: str | None = None, extra_env: dict | None = None, dialect: str = "relax",
                 cross: Interpreter | None = None):
        self.dialect = dialect
        self.cross = cross
        self.workers = [Worker(Path(log_dir) / f"worker-{i}.log", max_memory_mb, recycle_after, python, extra_env,
                               dialect)
                        for i in range(n)]
        if cross is not None:
            self.workers += [Worker(Path(log_dir) / f"worker-{cross.dialect}-{i}.log", max_memory_mb, recycle_after,
                                    cross.python, cross.env, cross.dialect)
                             for i in range(n)]
        cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []  # Linux only
        if len(self.workers) == len(cpus):
            # workers that fill the machine get a core each, as AFL++ binds its instances:
            # fewer migrations between caches (about 6% less CPU time per case, measured
            # with --jobs 2 on 2 cores). Fewer workers are left to the scheduler, which
            # knows what else runs there.
            for w, cpu in zip(self.workers, cpus):
                w.cpu = cpu
        self.first_start_s = 0.0

    @property
    def jobs(self) -> int:
        """Workers per IR."""
        return len(self.workers) // (1 if self.cross is None else 2)

    def nodes(self) -> None:
        """Cases per node: one machine has none to tell (RayPool has)."""
        return None

    def start(self):
        """Start every worker at once: each spends a second or more importing TVM."""
        t0 = time.monotonic()
        for w in self.workers:
            w.spawn()
        for w in self.workers:
            w.await_ready()
        self.first_start_s = time.monotonic() - t0

    def idle(self, dialect: str | None = None) -> list[Worker]:
        return [w for w in self.workers if not w.busy and not w.lent and dialect in (None, w.dialect)]

    def in_flight(self) -> list:
        return [w.case for w in self.workers if w.busy and not w.lent]

    def wait(self, max_wait_s: float = 1.0) -> list[tuple[Worker, object, object]]:
        """Block until some answer is ready (or max_wait_s passes); return (worker, case, answer)."""
        busy = [w for w in self.workers if w.busy and not w.lent]
        if not busy:
            return []
        now = time.monotonic()
        if not any(b"\n" in w._buffer for w in busy):
            # a bounded worker's memory is read at least every MEMORY_POLL_S (in `collect`)
            polls = [w.poll_s for w in busy if w.poll_s is not None]
            wait = min([max_wait_s] + polls + [max(0.0, w.deadline - now) for w in busy])
            select.select([w.fileno() for w in busy], [], [], wait)
        now = time.monotonic()
        done = []
        for w in busy:
            case = w.case
            answer = w.collect(now)
            if answer is not None:
                done.append((w, case, answer))
        return done

    @property
    def restarts(self) -> int:
        return sum(w.restarts for w in self.workers)

    @property
    def recycles(self) -> int:
        return sum(w.recycles for w in self.workers)

    @property
    def startup_s(self) -> float:
        """Wall time spent starting workers: the first, parallel start, then each restart."""
        return self.first_start_s + sum(w.startup_s for w in self.workers)

    @property
    def startup_worker_s(self) -> float:
        """Workers' time spent starting: the first, parallel start counts for each of them."""
        return self.first_start_s * len(self.workers) + sum(w.startup_s for w in self.workers)
