"""Workers on a Ray cluster (--ray): a pool whose slots are Ray actors, each hosting the
sandbox on its node.

The coordinator stays one process: it draws every case (or has --makers actors draw them,
campaign.makers), judges every answer and writes every file, exactly as with the local
`sandbox.Pool`, whose interface `RayPool` keeps
(`idle`, `in_flight`, `wait`, lending to reductions). Each slot is one `SandboxHost` actor
holding one `sandbox.Worker` on its node, so a TVM segfault kills that worker process
(answered with a `Death`, restarted, recycled, as on one machine), never the actor.

A node that dies takes its actors with it: their cases in flight are handed to the next
free slot (of their IR) before any new case, so each is judged once; the dead slots are
started again wherever the cluster has a free CPU. Ray is imported only here, and only
when --ray is given.
"""
from __future__ import annotations

import atexit
import fcntl
import shutil
import socket
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from ..errors import HirfuzzError
from .sandbox import READY_TIMEOUT_S, PoolBase, Interpreter, Worker, WorkerError
from .verify import ReproOutcome

RAY_MISSING = "--ray needs the ray extra: pip install 'hirfuzz[ray]'"
CONNECT_TIMEOUT_S = 30.0
# an answer later than the case's own limit by this much means the actor is lost, not slow
ANSWER_GRACE_S = READY_TIMEOUT_S + 60.0
REVIVE_EVERY_S = 5.0
# with no slot alive for this long (every node gone, none joining), the campaign stops
NO_SLOT_LIMIT_S = 120.0
LOCAL = "local"   # --ray with no address: start a Ray instance on this machine


def import_ray():
    try:
        import ray
    except ImportError:
        raise HirfuzzError(RAY_MISSING) from None
    return ray


def package_with_data() -> str:
    """The hirfuzz package as the nodes get it, the op specs and pass catalog inside it as a
    wheel has them (hirfuzz.data): Ray ships the package folder alone, and a checkout (or an
    editable install) keeps them beside it, so a case maker on a node found no op specs. The
    package itself where it has them (a wheel); else a copy, removed when this process ends."""
    import hirfuzz
    from ..data import PASS_CATALOG, SPEC_DIR
    package = Path(hirfuzz.__file__).resolve().parent
    if SPEC_DIR.parent == package:
        return str(package)
    folder = tempfile.mkdtemp(prefix="hirfuzz-ray-")
    atexit.register(shutil.rmtree, folder, True)
    copy = Path(folder) / "hirfuzz"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(SPEC_DIR, copy / SPEC_DIR.name)
    shutil.copy2(PASS_CATALOG, copy / PASS_CATALOG.name)
    return str(copy)


def connect(address: str) -> None:
    """Join the cluster at `address` (or start a local instance), or fail with one line
    within CONNECT_TIMEOUT_S: ray.init alone retries an unreachable address for minutes."""
    ray = import_ray()
    if ray.is_initialized():
        return
    _probe(address)
    # the nodes run this checkout's hirfuzz, whatever they have installed
    kwargs = dict(runtime_env={"py_modules": [package_with_data()]}, logging_level="error", log_to_driver=False,
                  configure_logging=True)
    if address == LOCAL:
        # in this thread: the processes of a Ray instance started here die with the thread
        # that started them; a local start does not hang
        try:
            ray.init(**kwargs)
        except Exception as exc:
            raise HirfuzzError(f"--ray: cannot start Ray on this machine: {_first_line(exc)}") from None
        return
    failure: list[BaseException] = []

    def init():
        try:
            ray.init(address=address, **kwargs)
        except BaseException as exc:  # reported by the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=init, daemon=True, name="hirfuzz-ray-init")
    thread.start()
    thread.join(CONNECT_TIMEOUT_S)
    if thread.is_alive():
        raise HirfuzzError(f"--ray {address}: no Ray cluster answered within {CONNECT_TIMEOUT_S:.0f} s")
    if failure:
        raise HirfuzzError(f"--ray {address}: cannot join the Ray cluster: {_first_line(failure[0])}")


def _probe(address: str):
    """A host:port that nobody listens on is refused in one line, at once."""
    if address in (LOCAL, "auto"):
        return
    hostport = address.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise HirfuzzError(f"--ray {address}: expected HOST:PORT (as `ray start --head` prints), "
                           "ray://HOST:PORT or auto")
    try:
        socket.create_connection((host, int(port)), timeout=min(10.0, CONNECT_TIMEOUT_S)).close()
    except OSError as exc:
        raise HirfuzzError(f"--ray {address}: cannot reach a Ray cluster there ({exc.strerror or exc})") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


# --- on the node ---------------------------------------------------------------------------

@dataclass
class NodeInterpreter:
    """Where a slot's worker runs on its node: a managed environment (set up there on first
    use), an interpreter path that must exist there, or the node's own Python."""
    dialect: str
    python: str | None = None
    env: dict = field(default_factory=dict)
    managed: str | None = None

    def resolve(self) -> tuple[str | None, dict]:
        if self.managed:
            return _managed_python(self.managed)
        if self.python and not Path(self.python).is_file():
            raise WorkerError(f"{self.python} (--tvm-python) does not exist on node {socket.gethostname()}")
        return self.python, self.env


def _managed_python(name: str) -> tuple[str, dict]:
    """The managed environment `name` on this node, made on first use; actors of one node
    take turns, so it is made once."""
    from ..envs import envs_home, resolve_interpreter, setup
    home = envs_home()
    home.mkdir(parents=True, exist_ok=True)
    with open(home / f".setup-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            setup(name)
            return resolve_interpreter(name)
        except HirfuzzError as exc:
            raise WorkerError(f"node {socket.gethostname()}: {exc}") from None


class SandboxHost:
    """The Ray actor: one sandbox worker on this node (started, restarted, recycled by
    `sandbox.Worker`), and reproducer checks run here under that worker's interpreter."""

    def __init__(self, where: NodeInterpreter, max_memory_mb: int | None, recycle_after: int | None):
        self.where = where
        self.limits = (max_memory_mb, recycle_after)
        self.folder = Path(tempfile.mkdtemp(prefix="hirfuzz-node-"))
        self.worker: Worker | None = None

    def start(self) -> dict:
        """Start the worker; its handshake, with the node it runs on (or {"error": ...})."""
        import ray
        try:
            python, env = self.where.resolve()
            self.worker = Worker(self.folder / "worker.log", *self.limits, python=python, extra_env=env,
                                 dialect=self.where.dialect)
            self.worker.start()
        except WorkerError as exc:
            return {"error": str(exc)}
        node = ray.get_runtime_context().get_node_id()
        return {**self.worker.hello, "node": f"{socket.gethostname()}/{node[:8]}"}

    def run(self, request: dict, timeout_s: float):
        """(the answer: a reply dict or a Death, the worker's counts so far)."""
        try:
            answer = self.worker.run_one(request, timeout_s)
        except WorkerError as exc:
            answer = {"worker_error": str(exc)}
        w = self.worker
        return answer, {"restarts": w.restarts, "recycles": w.recycles, "startup_s": w.startup_s}

    def check_scripts(self, files: dict, finding, timeout_s: float) -> ReproOutcome:
        folder = Path(tempfile.mkdtemp(dir=self.folder))
        for name, text in files.items():
            (folder / name).write_text(text)
        return self.worker.check_scripts(folder, finding, timeout_s)

    def close(self):
        if self.worker is not None:
            self.worker.close()


# --- on the coordinator --------------------------------------------------------------------

class SlotState(Enum):
    STARTING = "starting"   # its actor is being placed, or its worker importing TVM
    READY = "ready"
    DEAD = "dead"           # its actor was lost (or not started yet)


class RaySlot:
    """One actor, seen by the coordinator and the reducer as a `sandbox.Worker`: submit a
    case and collect it through the pool, or `run_one` while lent to a reduction."""

    def __init__(self, pool: "RayPool", where: NodeInterpreter):
        self.pool = pool
        self.where = where
        self.dialect = where.dialect
        self.hello: dict = {}
        self.node = ""
        self.actor = None
        self.state = SlotState.DEAD
        self.starting = None          # the start call's reference, while STARTING
        self.case = None
        self.request: dict | None = None
        self.timeout_s = 0.0
        self.ref = None
        self.lent = False
        self.submitted = self.deadline = 0.0
        self.busy_s = 0.0
        self.case_s = 0.0             # of busy_s, the pool's cases (not a reduction's runs)
        self.counts: dict = {}        # the actor's worker's restarts, recycles, startup_s
        self.earlier: Counter = Counter()  # the counts of this slot's dead actors

    @property
    def busy(self) -> bool:
        return self.case is not None

    @property
    def ready(self) -> bool:
        return self.state == SlotState.READY

    def spawn(self):
        """A new actor for this slot, placed by Ray; ready once its `starting` call answers."""
        self.earlier.update(self.counts)
        self.counts = {}
        # spread over the nodes: a node lost takes fewer slots with it
        self.actor = self.pool.actor_class.options(scheduling_strategy="SPREAD").remote(self.where,
                                                                                     *self.pool.limits)
        self.starting = self.actor.start.remote()
        self.state = SlotState.STARTING

    def started(self, hello: dict):
        self.starting = None
        if hello.get("error"):
            raise WorkerError(hello["error"])
        self.hello, self.node = hello, hello["node"]
        self.state = SlotState.READY

    def died(self):
        self.state, self.starting, self.ref = SlotState.DEAD, None, None
        try:
            self.pool.ray.kill(self.actor)
        except Exception:  # gone with its node already
            pass

    def submit(self, case, request: dict, timeout_s: float):
        self.case, self.request, self.timeout_s = case, request, timeout_s
        self.submitted = time.monotonic()
        self.deadline = self.submitted + timeout_s + ANSWER_GRACE_S
        self.ref = self.actor.run.remote(request, timeout_s)

    def finish(self, result):
        """The answer of the call in flight, its counts kept."""
        answer, self.counts = result
        self.busy_s += time.monotonic() - self.submitted
        self.case_s += time.monotonic() - self.submitted
        self.case = self.ref = None
        return _worker_answer(answer)

    def run_one(self, request: dict, timeout_s: float):
        """Submit and wait, for a reduction."""
        t0 = time.monotonic()
        try:
            answer, self.counts = self._call("run", (request, timeout_s), timeout_s + ANSWER_GRACE_S)
        finally:
            self.busy_s += time.monotonic() - t0
        return _worker_answer(answer)

    def check_scripts(self, folder: Path, finding, timeout_s: float) -> ReproOutcome:
        """The finding's saved scripts run alone on this slot's node, under its worker's Python."""
        files = {p.name: p.read_text() for p in folder.iterdir() if p.is_file()}
        # both scripts run, one after the other, each within timeout_s
        return self._call("check_scripts", (files, finding, timeout_s), timeout_s * 3 + ANSWER_GRACE_S)

    def _call(self, method: str, args: tuple, timeout_s: float):
        """A call on this (lent) slot's actor; an actor lost with its node is started again
        wherever the cluster has room, and the call made again, once."""
        ray = self.pool.ray
        for _ in range(2):
            if not self.ready:
                self._restart_blocking()
            try:
                return ray.get(getattr(self.actor, method).remote(*args), timeout=timeout_s)
            except self.pool.lost_errors:
                self.died()
        raise WorkerError(f"the Ray actor on {self.node or 'its node'} was lost twice")

    def _restart_blocking(self):
        self.spawn()
        try:
            self.started(self.pool.ray.get(self.starting, timeout=READY_TIMEOUT_S))
        except self.pool.lost_errors:
            self.died()
            raise WorkerError("no Ray node could start a worker") from None

    def close(self):
        if self.actor is None or not self.ready:
            return
        try:
            self.pool.ray.get(self.actor.close.remote(), timeout=10)
        except Exception:  # a node gone, or slow: the actor goes with the job anyway
            pass
        self.pool.ray.kill(self.actor)


def _worker_answer(answer):
    """A worker's answer, or the WorkerError its actor met starting it (a broken
    installation on that node: raised, as a local pool raises it)."""
    if isinstance(answer, dict) and "worker_error" in answer:
        raise WorkerError(answer["worker_error"])
    return answer


@dataclass
class Lost:
    """A case (or a cross-IR half) whose actor died before answering: it runs again."""
    slot: RaySlot
    case: object
    request: dict
    timeout_s: float


class RayPool(PoolBase):
    """`sandbox.Pool`'s interface over a Ray cluster: up to `cap` slots per IR (one CPU
    each), as many as the cluster's CPUs allow."""

    def __init__(self, address: str, cap: int | None, max_memory_mb: int | None, recycle_after: int | None,
                 main: NodeInterpreter, cross: NodeInterpreter | None = None):
        self.ray = import_ray()
        self.address = address
        self.cap = cap
        self.limits = (max_memory_mb, recycle_after)
        self.interpreters = [main] + ([cross] if cross is not None else [])
        self.dialect = main.dialect
        self.workers: list[RaySlot] = []
        self.lost: list[Lost] = []
        self.cases_by_node: Counter = Counter()
        self.rerun = 0                        # cases run again after their node was lost
        self.first_start_s = 0.0
        self.last_revive = 0.0
        self.none_alive_since: float | None = None

    @property
    def lost_errors(self) -> tuple:
        exc = self.ray.exceptions
        return (exc.RayActorError, exc.ActorUnavailableError, exc.GetTimeoutError)

    @property
    def jobs(self) -> int:
        """Slots per IR."""
        return len(self.workers) // len(self.interpreters)

    def start(self):
        t0 = time.monotonic()
        connect(self.address)
        self.actor_class = self.ray.remote(num_cpus=1)(SandboxHost)
        cpus = int(self.ray.cluster_resources().get("CPU", 0))
        per_ir = max(1, cpus // len(self.interpreters))
        n = min(self.cap, per_ir) if self.cap else per_ir
        self.workers = [RaySlot(self, where) for where in self.interpreters for _ in range(n)]
        for slot in self.workers:
            slot.spawn()
        for slot in self.workers:
            try:
                slot.started(self.ray.get(slot.starting, timeout=READY_TIMEOUT_S))
            except self.lost_errors as exc:
                raise WorkerError(f"--ray {self.address}: a worker's actor did not start "
                                  f"({_first_line(exc)})") from None
        self._check_same_tvm()
        self.first_start_s = time.monotonic() - t0

    def _check_same_tvm(self):
        """Every node of one IR runs the same TVM: findings would mix compilers otherwise."""
        for where in self.interpreters:
            versions = {s.hello.get("tvm"): s.node for s in self.workers if s.dialect == where.dialect}
            if len(versions) > 1:
                detail = ", ".join(f"TVM {v} on {node}" for v, node in versions.items())
                raise WorkerError(f"the Ray nodes run different TVMs for {where.dialect}: {detail}")

    # --- what the coordinator and the reducer call ------------------------------------------

    def idle(self, dialect: str | None = None) -> list[RaySlot]:
        """Free slots; none of an IR while a lost case of that IR waits for one."""
        waiting = {lost.slot.dialect for lost in self.lost}
        return [s for s in self.workers if s.ready and not s.busy and not s.lent
                and dialect in (None, s.dialect) and s.dialect not in waiting]

    def in_flight(self) -> list:
        return [s.case for s in self.workers if s.busy and not s.lent] + [lost.case for lost in self.lost]

    def wait(self, max_wait_s: float = 1.0) -> list[tuple[RaySlot, object, object]]:
        self._revive()
        self._resubmit_lost()
        busy = [s for s in self.workers if s.busy and not s.lent]
        starting = [s for s in self.workers if s.state == SlotState.STARTING and not s.lent]
        refs = [s.ref for s in busy] + [s.starting for s in starting]
        if not refs:
            time.sleep(min(max_wait_s, 0.2))  # lost cases wait for a slot to start
            return []
        now = time.monotonic()
        timeout = min([max_wait_s] + [max(0.0, s.deadline - now) for s in busy])
        ready, _ = self.ray.wait(refs, num_returns=1, timeout=timeout)
        if ready:
            ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
        ready = set(ready)
        for slot in starting:
            if slot.starting in ready:
                self._take_start(slot)
        done = [answer for slot in busy if (answer := self._collect(slot, ready)) is not None]
        self._resubmit_lost()
        return done

    def _collect(self, slot: RaySlot, ready: set):
        case = slot.case
        # a pass probe's batch of programs is no case: nodes.cases counts cases' answers
        is_case = slot.request.get("kind") != "probe"
        if slot.ref not in ready:
            if time.monotonic() >= slot.deadline:
                self._lose(slot)
            return None
        try:
            answer = slot.finish(self.ray.get(slot.ref))
        except self.lost_errors:
            self._lose(slot)
            return None
        if is_case:
            self.cases_by_node[slot.node] += 1
        return slot, case, answer

    def _take_start(self, slot: RaySlot):
        try:
            slot.started(self.ray.get(slot.starting))
        except self.lost_errors:
            slot.died()
        except WorkerError as exc:  # a node whose installation cannot serve: the user's to fix
            raise HirfuzzError(f"--ray {self.address}: a worker could not start on a node: {exc}") from None

    def _lose(self, slot: RaySlot):
        """The slot's actor is gone (its node died) or silent: its case runs elsewhere."""
        self.lost.append(Lost(slot, slot.case, slot.request, slot.timeout_s))
        self.rerun += 1
        slot.case = None
        slot.died()

    def _resubmit_lost(self):
        for lost in list(self.lost):
            slot = next((s for s in self.workers if s.ready and not s.busy and not s.lent
                         and s.dialect == lost.slot.dialect), None)
            if slot is None:
                continue
            self.lost.remove(lost)
            slot.submit(lost.case, lost.request, lost.timeout_s)

    def _revive(self):
        """Start dead slots again where the cluster has a CPU free (Ray places them)."""
        now = time.monotonic()
        if any(s.ready for s in self.workers):
            self.none_alive_since = None
        elif self.none_alive_since is None:
            self.none_alive_since = now
        elif now - self.none_alive_since > NO_SLOT_LIMIT_S:
            raise HirfuzzError(f"--ray {self.address}: no node of the cluster has run a worker for "
                               f"{NO_SLOT_LIMIT_S:.0f} s; resume later with the same --out")
        if now - self.last_revive < REVIVE_EVERY_S:
            return
        self.last_revive = now
        free = int(self.ray.available_resources().get("CPU", 0))
        for slot in [s for s in self.workers if s.state == SlotState.DEAD and not s.lent][:free]:
            slot.spawn()

    # --- figures ----------------------------------------------------------------------------

    def _count(self, name: str):
        return sum(s.counts.get(name, 0) + s.earlier.get(name, 0) for s in self.workers)

    @property
    def restarts(self) -> int:
        return self._count("restarts")

    @property
    def recycles(self) -> int:
        return self._count("recycles")

    @property
    def case_s(self) -> float:
        """Wall time from handing a case to an actor to its answer, summed (tools/bench_ray.py)."""
        return sum(s.case_s for s in self.workers)

    @property
    def startup_s(self) -> float:
        """Wall time: the first start (joining the cluster, every actor at once), then the
        workers started again after a death or a recycle, one by one."""
        first = sum(s.earlier.get("startup_s", 0) for s in self.workers)  # of actors since replaced
        return self.first_start_s + first

    @property
    def startup_worker_s(self) -> float:
        return self._count("startup_s")

    def nodes(self) -> dict:
        """summary.json's `nodes`: how many ran cases, how many each, and how many cases were
        run again after their node was lost."""
        return {"used": len(self.cases_by_node), "cases": dict(sorted(self.cases_by_node.items())),
                "rerun": self.rerun}


def node_interpreter(interpreter: Interpreter, managed: str | None) -> NodeInterpreter:
    return NodeInterpreter(interpreter.dialect, interpreter.python, dict(interpreter.env), managed)

