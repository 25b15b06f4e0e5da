"""The coordinator's side of a worker: start it, send a case, wait with a time limit.

A worker that dies (signal, abort, out of memory) or stays silent past the case's time
limit is killed and reported as a `Death`; the next `submit` starts a fresh one. The
worker runs in its own session with an address-space limit, and its stderr (TVM's logs,
crash backtraces) goes to a log file whose tail is kept for the finding.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

READY_TIMEOUT_S = 120


@dataclass
class Death:
    """A worker that did not answer: killed by a signal, exited, or hung past the limit."""
    reason: str            # "signal", "exit" or "timeout"
    signal: str | None
    returncode: int | None
    log_tail: str

    def describe(self) -> str:
        if self.reason == "timeout":
            return "hang: no answer within the time limit"
        if self.reason == "signal":
            return f"killed by {self.signal}"
        return f"worker exited with status {self.returncode}"


class WorkerError(RuntimeError):
    """The worker could not even start (a broken installation, not a TVM finding)."""


def _limit_memory(max_bytes: int | None):
    def apply():
        os.setsid()
        if max_bytes:
            import resource
            resource.setrlimit(resource.RLIMIT_AS, (max_bytes, max_bytes))
    return apply


class Worker:
    def __init__(self, log_path: Path, spec_dir: str | None = None, max_memory_mb: int | None = None):
        self.log_path = Path(log_path)
        self.spec_dir = spec_dir
        self.max_bytes = max_memory_mb * 1024 * 1024 if max_memory_mb else None
        self.proc: subprocess.Popen | None = None
        self.tvm_version = None
        self.restarts = 0
        self.startup_s = 0.0
        self._buffer = b""

    # --- life cycle -------------------------------------------------------------------------

    def start(self):
        t0 = time.monotonic()
        try:
            self._start()
        finally:
            self.startup_s += time.monotonic() - t0

    def _start(self):
        cmd = [sys.executable, "-m", "hirfuzz.worker"]
        if self.spec_dir:
            cmd += ["--specs", str(self.spec_dir)]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        env = dict(os.environ)
        env.setdefault("TVM_BACKTRACE", "1")
        root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                     preexec_fn=_limit_memory(self.max_bytes), env=env)
        log.close()
        self._buffer = b""
        hello = self._read_line(READY_TIMEOUT_S)
        if not isinstance(hello, dict) or not hello.get("ready"):
            tail = self.log_tail()
            self.kill()
            raise WorkerError(f"the TVM worker did not start; its log ({self.log_path}) ends with:\n{tail}")
        self.tvm_version = hello.get("tvm")

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
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()

    # --- cases ------------------------------------------------------------------------------

    def submit(self, request: dict):
        if self.proc is None or self.proc.poll() is not None:
            if self.proc is not None:
                self.restarts += 1
                self.kill()
            self.start()
        self.proc.stdin.write((json.dumps(request) + "\n").encode())
        self.proc.stdin.flush()

    def wait(self, timeout_s: float) -> dict | Death:
        reply = self._read_line(timeout_s)
        if isinstance(reply, dict):
            return reply
        # no reply: the worker died or hung
        if reply == "timeout":
            self.kill()
            self.restarts += 1
            return Death("timeout", None, None, self.log_tail())
        code = self.proc.wait()
        self.kill()
        self.restarts += 1
        if code < 0:
            return Death("signal", signal.Signals(-code).name, code, self.log_tail())
        return Death("exit", None, code, self.log_tail())

    def _read_line(self, timeout_s: float):
        deadline = time.monotonic() + timeout_s
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return "eof"
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def log_tail(self, limit: int = 6000) -> str:
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return ""
        return data[-limit:].decode("utf-8", "replace")
