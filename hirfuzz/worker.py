"""The worker: a process that imports TVM once and lowers, builds and runs many cases.

TVM can segfault, abort, hang or eat memory, so it never runs in the coordinator. The
coordinator starts ``python -m hirfuzz.worker`` and speaks JSON lines over a private pipe
(the worker points its own stdout at stderr first, so whatever TVM prints cannot corrupt
the protocol). A request is a case; the reply says which stage failed and how, or carries
the outputs. A signal or a hang is seen by the coordinator as a dead or silent worker.
"""
from __future__ import annotations

import json
import os
import sys
import time
from collections import OrderedDict
from typing import Callable

# HIRFUZZ_BUILD_CACHE: how many builds a worker keeps for reuse across cases (default
# CACHE_SIZE); "0" turns reuse off altogether, within a case too (to compare with it on)
CACHE_ENV = "HIRFUZZ_BUILD_CACHE"
CACHE_SIZE = 8
# configuration keys that do not reach the build: the passes ran before it, which module
# a configuration takes is in the module itself, and its oracle judges what it built
NOT_BUILD_SETTINGS = ("passes", "module", "plain", "oracle", "check_only")


class BuildCache:
    """Builds a worker made, reused by a module structurally equal to the one built under
    the same build settings (target, opt level, executor, pipeline, exec mode): a pass
    sequence that changed nothing, a mutant equal to its original, a case the reducer
    runs again. Least recently used entries go first past `capacity`.

    A reuse gives what a fresh build would: the module is compared in full
    (`structural_equal`, after the hash), the build is loaded anew (a fresh VM or graph
    module) and run on the case's own inputs, and a build that raised raises the same error
    again (only for the same module and settings). A module whose hash changed while it
    was built (a Relay build that updates its input) is not kept.
    """

    def __init__(self, capacity: int = CACHE_SIZE):
        self.capacity = max(1, capacity)
        self.entries: OrderedDict = OrderedDict()  # (hash, settings) -> [(module, case, result)]
        self.case = 0  # the case being executed (a counter): reuse within it, or across cases

    @staticmethod
    def from_env() -> "BuildCache | None":
        size = os.environ.get(CACHE_ENV, "").strip()
        if size == "0":
            return None
        return BuildCache(int(size) if size.isdigit() else CACHE_SIZE)

    @staticmethod
    def key(module, config: dict) -> tuple:
        settings = json.dumps({k: v for k, v in config.items() if k not in NOT_BUILD_SETTINGS}, sort_keys=True)
        return (_structural_hash(module), settings)

    def lookup(self, module, key: tuple):
        """(result, "case" or "cache") for a module built before under `key`, or None."""
        equal = _structural()[0]
        for stored, case, result in self.entries.get(key, []):
            # the stored module's hash again: nothing changed it since
            if _structural_hash(stored) == key[0] and equal(stored, module):
                self.entries.move_to_end(key)
                return result, ("case" if case == self.case else "cache")
        return None

    def store(self, module, key: tuple, result: tuple):
        if _structural_hash(module) != key[0]:
            return  # the build changed the module it was given: its result is not this module's
        self.entries.setdefault(key, []).append((module, self.case, result))
        self.entries.move_to_end(key)
        while len(self.entries) > self.capacity:
            self.entries.popitem(last=False)


def _structural():
    """(structural_equal, structural_hash): in tvm.ir up to TVM 0.19, in tvm_ffi since."""
    import tvm
    if hasattr(tvm.ir, "structural_equal"):
        return tvm.ir.structural_equal, tvm.ir.structural_hash
    import tvm_ffi
    return tvm_ffi.structural_equal, tvm_ffi.structural_hash


def _structural_hash(module) -> int:
    return int(_structural()[1](module))


def execute_case(request: dict, dialect, cache: "BuildCache | None" = None) -> dict:
    """Lower and check one case, then build and run it under each configuration; never raises.

    A case may carry a lowering plan (functions, closures, IR features) and a mutation
    (seeded mutators giving a second, equivalent module); each configuration names the
    module it builds (0: the original, 1: the mutant). The reply describes the first
    configuration (the baseline); the others' replies, of the same form, are under
    "others". A failure before building fails them all alike.

    Builds are reused through `cache` (a worker's `BuildCache`; None: one for this case
    alone, unless HIRFUZZ_BUILD_CACHE=0 turns reuse off). Besides "timings" (TVM's time:
    "lower", then "build" with the passes and the load, and "run"), a reply has
    "stages" (seconds per stage: lower, well_formed, mutate for the case; passes, build,
    load, run for each configuration's reply), "builds_saved", and "reused_build"
    ("case" or "cache") in each configuration reply that reused one. The configurations
    at the positions the request's GIVEN_CONFIGS lists are neither built nor run: their
    replies say GIVEN_STATUS (protocol).
    """
    from .breadcrumbs import TRAIL, Stage
    from .protocol import GIVEN_CONFIGS, GIVEN_STATUS, GRADIENT, decode_array, error_reply, make_config
    if cache is None and os.environ.get(CACHE_ENV, "").strip() != "0":
        cache = BuildCache()
    if cache is not None:
        cache.case += 1
    dialect.take_diagnostics()  # a new case: what earlier ones reported is not its own
    stage = "lower"
    t0 = time.perf_counter()
    case_stages = {}
    try:
        TRAIL.at(Stage.LOWER)
        mod = dialect.lower(request)
        case_stages["lower"] = time.perf_counter() - t0
        stage = "well_formed"
        TRAIL.at(Stage.WELL_FORMED)
        dialect.check_well_formed(mod)
        case_stages["well_formed"] = time.perf_counter() - t0 - case_stages["lower"]
    except Exception as exc:  # every exception is data for the oracle
        reply = error_reply(stage, exc, dialect.take_diagnostics())
        reply["timings"] = {"lower": time.perf_counter() - t0}
        case_stages[stage] = reply["timings"]["lower"] - case_stages.get("lower", 0.0)
        reply["stages"] = case_stages
        return reply
    modules = [mod]
    plain = {}  # the graph lowered without its plan: for executors that take dataflow only, and the loss (gradient)
    mutation = request.get("mutation")
    notes = {}
    t_mutate = time.perf_counter()
    if mutation:
        try:
            TRAIL.at(Stage.MUTATE)
            mutant, applied = _mutate(dialect, mod, mutation, request)
            if applied:  # no mutator applies: no mutant, its configurations skipped (a reduced
                modules.append(mutant)  # program that fails without one is not a mutant's)
            notes["mutators"] = applied
        except Exception as exc:  # a mutator that fails or breaks the module is hirfuzz's bug
            notes["mutation_error"] = f"{type(exc).__name__}: {str(exc)[:2000]}"
    lowered = time.perf_counter() - t0
    if mutation:
        case_stages["mutate"] = time.perf_counter() - t_mutate
    configs = request.get("configs") or [make_config(target=request.get("target", "llvm"), dialect=dialect.name)]
    inputs = [decode_array(a) for a in request.get("inputs", [])]
    replies = []
    given = set(request.get(GIVEN_CONFIGS) or [])
    for position, config in enumerate(configs):
        if position in given:  # the coordinator holds its reply (a follow-up's original's)
            replies.append({"status": GIVEN_STATUS, "timings": {}, "stages": {}})
            continue
        TRAIL.enter_config(position)
        if replies and replies[-1]["status"] == "error":
            # a failed configuration may have changed its module in place (TVM 0.19's
            # ToMixedPrecision, failing, retypes the module it was given, and every pass run on
            # it after fails alike): the configurations after it run on the program made anew
            modules, plain = _lowered_again(dialect, request, modules), {}
        index = config.get("module", 0)
        if index >= len(modules):
            replies.append({"status": "skipped", "timings": {}})
            continue
        module = modules[index]
        if config.get(GRADIENT):  # its own program: the loss (protocol.GRADIENT)
            config = with_require_grads(config, request, dialect.name)
            loss = _loss_module(dialect, request, config, plain)
            if isinstance(loss, dict):
                replies.append(loss)
                continue
            module = loss
        elif config.get("plain") and request.get("plan"):
            try:
                if "module" not in plain:
                    t_plain = time.perf_counter()
                    TRAIL.at(Stage.LOWER)
                    plain["module"] = dialect.lower({**request, "plan": None})
                    case_stages["lower"] += time.perf_counter() - t_plain
            except Exception as exc:  # noqa: BLE001 - data for the oracle, as any lowering failure
                replies.append({**error_reply("lower", exc, dialect.take_diagnostics()), "timings": {}})
                continue
            module = plain["module"]
        replies.append(run_config(dialect, module, config, inputs, request.get("run", True), cache,
                                  anew=lambda config=config: module_anew(dialect, request, config)))
    replies[0]["timings"]["lower"] = lowered
    reply = replies[0]
    reply["others"] = replies[1:]
    reply.update(notes)
    reply["case_stages"] = case_stages
    reply["builds_saved"] = sum(1 for r in replies if r.get("reused_build"))
    return reply


def _lowered_again(dialect, request: dict, modules: list) -> list:
    """The case's program (and its mutant, where it has one) made anew; `modules` where that
    fails, as it did not the first time."""
    try:
        return [module_anew(dialect, request, {"module": index}) for index in range(len(modules))]
    except Exception:  # noqa: BLE001 - the modules the case began with stand
        dialect.take_diagnostics()
        return modules


def module_anew(dialect, request: dict, config: dict):
    """The module `config` runs on, made anew from the request: the loss (a gradient
    configuration's), the program lowered without its plan, the program, or its mutant."""
    from .protocol import GRADIENT
    if config.get(GRADIENT):
        return dialect.lower_loss(request, config)
    if config.get("plain") and request.get("plan"):
        return dialect.lower({**request, "plan": None})
    mod = dialect.lower(request)
    if config.get("module", 0) == 1:
        return _mutate(dialect, mod, request["mutation"], request)[0]
    return mod


def with_require_grads(config: dict, request: dict, dialect_name: str) -> dict:
    """A gradient configuration with the parameters its autodiff is asked for
    (protocol.REQUIRE_GRADS), from the request's own graph."""
    from .core.gradients import differentiated_positions
    from .core.graph import Graph
    from .dialects import dialect_info
    from .protocol import REQUIRE_GRADS
    graph = Graph.from_json(request["graph"])
    return {**config, REQUIRE_GRADS: differentiated_positions(graph, dialect_info(dialect_name).declared_no_grad())}


def _loss_module(dialect, request: dict, config: dict, made: dict):
    """The loss program a gradient configuration differentiates (made once a case, kept in
    `made`), or its reply where there is none: skipped where the dialect or the graph has
    nothing to differentiate, a lowering failure as any other's."""
    from .dialects.base import ExecutorCannotTake
    from .protocol import AUTODIFF, GRADIENT, error_reply
    key = ("loss", config[GRADIENT], config.get(AUTODIFF))
    if key not in made:
        try:
            made[key] = dialect.lower_loss(request, config)
        except ExecutorCannotTake as exc:
            return {"status": "skipped", "reason": str(exc), "timings": {}}
        except Exception as exc:  # noqa: BLE001 - data for the oracle, as any lowering failure
            return {**error_reply("lower", exc, dialect.take_diagnostics()), "timings": {}}
    return made[key]


def probe_programs(request: dict, dialect) -> dict:
    """Apply a pass sequence, one pass at a time, to each of many small programs (a pass
    probe: core.probe) without building them; never raises. Per program and pass, the
    reply says "unchanged", "changed" (structurally), "raised" or "ill-formed" ("invalid":
    the program did not lower; "not run": an earlier pass raised), and the first error.
    Structural hashes are taken before and after each pass, so a pass that changes its
    input in place (Relay's) is seen changing it."""
    from .dialects.base import IllFormedAfterPass
    config = request["config"]
    steps = config["passes"]
    results = []
    for program in request["programs"]:
        outcomes, detail = ["not run"] * len(steps), ""
        try:
            mod = dialect.lower(program)
            dialect.check_well_formed(mod)
        except Exception as exc:  # noqa: BLE001 - a program TVM refuses says nothing of the pass
            dialect.take_diagnostics()
            results.append({"outcomes": ["invalid"] * len(steps), "detail": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        for i, step in enumerate(steps):
            try:
                before = _structural_hash(mod)
                mod = dialect.apply_passes(mod, {**config, "passes": [step]})
                outcomes[i] = "unchanged" if _structural_hash(mod) == before else "changed"
            except IllFormedAfterPass as exc:
                outcomes[i], detail = "ill-formed", f"{type(exc.cause).__name__}: {exc.cause}"[:300]
                break
            except Exception as exc:  # noqa: BLE001 - what the pass raised is what the probe records
                outcomes[i], detail = "raised", f"{type(exc).__name__}: {exc}"[:300]
                break
        dialect.take_diagnostics()
        results.append({"outcomes": outcomes, "detail": detail})
    return {"status": "ok", "results": results}


def check_user_passes(request: dict) -> dict:
    """Make each of a user's pass steps as a case would (import its module, take its factory,
    call it with the step's arguments) and say what is wrong with each that does not give a
    tvm.transform.Pass: {"problems": [{"name", "problem"}]}. The coordinator asks before a
    campaign starts, so that a broken pass catalog stops it instead of being filed as TVM's
    findings. Never raises."""
    import tvm
    problems = []
    for step in request["steps"]:
        problem = _user_pass_problem(step, tvm.transform.Pass)
        if problem is not None:
            problems.append({"name": step["name"], "problem": problem})
    return {"status": "ok", "problems": problems}


def _user_pass_problem(step: dict, pass_class) -> str | None:
    from .core.passes import user_module
    module_name, factory_name = step["import"].split(":")
    try:
        module = user_module(step)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - whatever the user's module raises
        return f"importing {module_name} raised {_first_line(exc)}"
    where = f"module {module_name} ({getattr(module, '__file__', None)})"
    if not hasattr(module, factory_name):
        return f"{where} has no attribute '{factory_name}'"
    factory = getattr(module, factory_name)
    if not callable(factory):
        return f"{where}: '{factory_name}' is a {type(factory).__name__}, not a function"
    call = f"{factory_name}({', '.join(f'{k}={v!r}' for k, v in step['args'].items())})"
    try:
        made = factory(**step["args"])
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - whatever the user's factory raises
        return f"{call} raised {_first_line(exc)}"
    if not isinstance(made, pass_class):
        kind = type(made)
        name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
        return f"{call} returned a {name}, not a tvm.transform.Pass"
    return None


def _first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[0][:300]}" if lines else type(exc).__name__


def render_case(request: dict, dialect) -> dict:
    """The text of the module a configuration builds (for reproducers); never raises."""
    from .protocol import GRADIENT, encode_array, error_reply
    try:
        if request.get(GRADIENT):  # a gradient configuration's own program: the loss
            text, consts = dialect.render(dialect.lower_loss(request, request))
            return {"status": "ok", "script": text, "consts": [encode_array(c) for c in consts]}
        mod = dialect.lower({**request, "plan": None} if request.get("plain") else request)
        if request.get("module", 0) == 1:
            mutation = request["mutation"]
            mod, _ = _mutate(dialect, mod, mutation, request)
        text, consts = dialect.render(mod)
    except Exception as exc:
        return error_reply("render", exc, dialect.take_diagnostics())
    return {"status": "ok", "script": text, "consts": [encode_array(c) for c in consts]}


def _mutate(dialect, mod, mutation: dict, request: dict):
    """The case's mutant and the mutators applied, as its mutation says (a follow-up mutant's
    draws among the structure-building mutators alone: campaign.followups)."""
    return dialect.mutate(mod, mutation["seed"], mutation["count"], _traits(request),
                          structural_only=bool(mutation.get("structural")))


def _traits(request: dict) -> dict:
    """The case's op traits, from its call records: dialect op name -> traits."""
    from .core.calls import op_traits
    return op_traits((request.get("calls") or {}).values())


# a configuration is run protocol.REPEAT_RUNS times where its first run took less than this:
# runs take milliseconds but for Relay's interpreter (the higher-order gradient's: seconds),
# where more runs would cost a campaign more than they could find
RUN_AGAIN_UNDER_S = 1.0


def run_repeatedly(dialect, executable, config: dict, inputs: list) -> list:
    """The outputs to judge of REPEAT_RUNS runs: the first run's, or the first later run's
    that differ from them. A kernel that reads memory it never wrote is right on fresh pages
    and wrong on what an earlier run left, so a worker fresh from a restart would miss it,
    and a reduction trial pass by chance; a run whose results differ from the first's is
    the one to judge (nondeterminism within tolerance is no finding there either)."""
    from .protocol import REPEAT_RUNS
    t0 = time.perf_counter()
    first = dialect.run(executable, config, inputs)
    if time.perf_counter() - t0 >= RUN_AGAIN_UNDER_S:
        return first
    for _ in range(REPEAT_RUNS - 1):
        again = dialect.run(executable, config, inputs)
        if not _same_arrays(first, again):
            return again
    return first


def _same_arrays(a: list, b: list) -> bool:
    """Bit for bit (NaN where NaN): two runs of one program on one input."""
    import numpy as np
    return len(a) == len(b) and all(
        x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y, equal_nan=x.dtype.kind in "fc")
        for x, y in zip(a, b))


def run_config(dialect, mod, config: dict, inputs: list, run: bool, cache: "BuildCache | None" = None,
               anew: Callable | None = None) -> dict:
    """Passes, build (or a reused build: `BuildCache`), load and run under one configuration.
    "timings" keeps its meaning ("build": passes, build and load; "run"); "stages" has
    each on its own. A check-only configuration (protocol.CHECK_ONLY) stops after its
    passes: "ok" with no outputs, its time under "passes" alone. `anew` makes `mod` again,
    for the failures a failed pass hid to be looked for on a module no failure touched."""
    from .breadcrumbs import TRAIL, Stage
    from .dialects.base import ILL_FORMED_STAGE, ExecutorCannotTake
    from .protocol import CHECK_ONLY, PAST_FAILURES, encode_array
    timings, stages, extra = {}, {}, {}
    stage = "passes"
    t_start = t0 = time.perf_counter()
    try:
        TRAIL.at(Stage.PASSES)  # making the sequence's passes (a user's factory may kill it)
        mod = dialect.apply_passes(mod, config)  # its breadcrumbs name each pass
        stages["passes"] = _lap(t0)
        if config.get(CHECK_ONLY):
            timings["passes"] = stages["passes"]
            return {"status": "ok", "outputs": [], "timings": timings, "stages": stages}
        stage = "build"
        TRAIL.at(Stage.BUILD)
        t0 = time.perf_counter()
        built, reused = _build(dialect, mod, config, cache)
        stages["build"] = _lap(t0)
        if reused:
            extra["reused_build"] = reused
        if built[0] == "error":  # a failed build, made again or replayed: the same error
            timings["build"] = _lap(t_start)
            return {**built[1], "timings": timings, "stages": stages, **extra}
        stage = dialect.load_stage
        TRAIL.at(Stage.LOAD)
        t0 = time.perf_counter()
        executable = dialect.load(built[1], config)
        stages["load"] = _lap(t0)
        timings["build"] = _lap(t_start)
        outputs = []
        if run:
            stage = "run"
            TRAIL.at(Stage.RUN)
            t0 = time.perf_counter()
            outputs = run_repeatedly(dialect, executable, config, inputs)
            timings["run"] = stages["run"] = _lap(t0)
    except ExecutorCannotTake as exc:
        return {"status": "skipped", "reason": str(exc), "timings": timings, "stages": stages}
    except Exception as exc:
        reply, failed_at = failure_reply(dialect, stage, exc), TRAIL.pass_position
    else:
        return {"status": "ok", "outputs": [encode_array(o) for o in outputs], "timings": timings, "stages": stages,
                **extra}
    # past the handler: a failure raised while handling another carries that one's traceback
    # too ("During handling of the above exception"), whose TVM frames would key it
    if reply["stage"] in ("passes", ILL_FORMED_STAGE):
        t0 = time.perf_counter()
        reply[PAST_FAILURES] = failures_past(dialect, lambda: _made_anew(dialect, mod, anew), config, failed_at)
        stages["passes_past"] = _lap(t0)
    reply["timings"] = timings
    reply["stages"] = stages
    reply.update(extra)
    return reply


def _made_anew(dialect, mod, anew: Callable | None):
    """`anew()` (the module made again), or `mod` where there is no way to or it fails."""
    if anew is None:
        return mod
    try:
        return anew()
    except Exception:  # noqa: BLE001 - it was made once; the module given stands
        dialect.take_diagnostics()
        return mod


def failure_reply(dialect, stage: str, exc: BaseException) -> dict:
    """What failed at `stage`, as a reply: a pass's ill-formed output (the check's own
    complaint and the pass it blames: judge._crash), or an exception, with the pass of the
    sequence that raised and the passes within it that raise alike."""
    from .breadcrumbs import TRAIL
    from .dialects.base import ILL_FORMED_STAGE, INNER_PASSES, IllFormedAfterPass
    from .protocol import error_reply
    if isinstance(exc, IllFormedAfterPass):
        reply = error_reply(ILL_FORMED_STAGE, exc.cause, dialect.take_diagnostics())
        reply.update(blamed_pass=exc.pass_name, inner_passes=exc.inner_passes)
        return reply
    reply = error_reply(stage, exc, dialect.take_diagnostics())
    if stage == "passes" and TRAIL.pass_name:
        reply["failed_pass"] = TRAIL.pass_name
    if getattr(exc, INNER_PASSES, None):
        reply["inner_passes"] = getattr(exc, INNER_PASSES)
    return reply


# how many failed passes of one sequence a worker goes on past (each costs the sequence's passes again)
MOST_PAST = 3


def failures_past(dialect, module: Callable, config: dict, failed: int | None) -> list[dict]:
    """The failures a failed pass of the configuration's sequence (at position `failed`) hid:
    the sequence run again check-only without it, then without the next pass that fails as
    well, and so on (MOST_PAST at most), each failure's reply saying which positions it ran
    without (protocol.without_passes); each run on `module()`, the program made anew, as a
    failing pass may change the module it is given (execute_case). The first failure may be a bug the campaign has
    filed already; the judge then looks here for one it has not (judge.Judge.classify).
    The breadcrumbs say which passes are left out, so a death on the way is pinned to the
    sequence that died."""
    from .breadcrumbs import TRAIL
    from .protocol import PAST_DROPPED, without_passes
    steps = config.get("passes") or []
    dropped = [] if failed is None else [failed]
    found = []
    try:
        while dropped and len(found) < MOST_PAST and len(dropped) < len(steps):
            kept = [position for position in range(len(steps)) if position not in dropped]
            TRAIL.dropped = tuple(sorted(dropped))
            TRAIL.pass_position = None
            try:
                dialect.apply_passes(module(), without_passes(config, dropped))
                break
            except Exception as exc:  # noqa: BLE001 - every failure is data for the oracle
                found.append({**failure_reply(dialect, "passes", exc), PAST_DROPPED: sorted(dropped)})
                if TRAIL.pass_position is None:
                    break
                dropped.append(kept[TRAIL.pass_position])
    finally:
        TRAIL.dropped = ()
    return found


def _lap(t0: float) -> float:
    return time.perf_counter() - t0


def _build(dialect, mod, config: dict, cache: "BuildCache | None") -> tuple:
    """(("ok", build) or ("error", error reply), None or where a reused build came from).
    ExecutorCannotTake passes through: it is no build result."""
    from .dialects.base import BUILD_PASSES, ExecutorCannotTake
    from .protocol import error_reply
    key = None
    BUILD_PASSES.clear()  # what an earlier build that failed left
    if cache is not None:
        try:
            key = cache.key(mod, config)
            found = cache.lookup(mod, key)
        except Exception:  # noqa: BLE001 - hashing is no stage of TVM's under test: build without
            cache = found = None
        if found is not None:
            return found
    try:
        result = ("ok", dialect.build(mod, config))
    except ExecutorCannotTake:
        raise
    except Exception as exc:  # noqa: BLE001 - data for the oracle
        reply = error_reply("build", exc, dialect.take_diagnostics())
        if BUILD_PASSES:  # the pass inside the build that raised (dialects.base.build_pass_watcher)
            reply["failed_pass"] = BUILD_PASSES[-1]
        result = ("error", reply)
    if cache is not None:
        cache.store(mod, key, result)
    return result, None


def tvm_build_info(tvm) -> dict:
    """The commit TVM was built from and its LLVM version, for bug reports: TVM 0.19 says
    both in libinfo; apache-tvm 0.27 keeps its commit in `tvm._version` and says LLVM's major
    version only."""
    info = tvm.support.libinfo()
    try:
        from tvm._version import commit_id  # apache-tvm's wheels: "g" and the short hash
    except ImportError:
        commit_id = None
    commit = info.get("GIT_COMMIT_HASH") or commit_id or ""
    llvm = info.get("LLVM_VERSION")
    if not llvm:
        try:
            llvm = str(tvm.target.codegen.llvm_version_major())
        except Exception:  # noqa: BLE001 - a TVM built without LLVM
            llvm = ""
    return {"commit": commit.removeprefix("g") if len(commit) <= 12 else commit, "llvm": llvm}


def serve(dialect_name: str) -> int:
    proto_out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # TVM's prints go to the log, not into the protocol
    sys.stdout = sys.stderr
    hello = {"ready": True, "pid": os.getpid(), "python": sys.executable,
             "python_version": ".".join(map(str, sys.version_info[:3])),  # for the bug report
             "memory_bound": memory_bound()}
    try:  # what this interpreter lacks is said in the handshake, not in a traceback
        import tvm
        hello["tvm"] = tvm.__version__
        hello.update(tvm_build_info(tvm))
        from .dialects import load_dialect
        dialect = load_dialect(dialect_name)
        hello.update(dialect.describe_installation())
        hello.update(_memory_kb())  # what starting took: the coordinator sizes --max-memory advice on it
        _reset_peak()
    except Exception as exc:  # noqa: BLE001 - any failure here means this TVM cannot serve
        what = f"cannot serve the {dialect_name} dialect" if "tvm" in hello else "cannot import TVM"
        hello.update(ready=False, error=f"{what}: {type(exc).__name__}: {exc}")
        proto_out.write(json.dumps(hello) + "\n")
        return 1
    proto_out.write(json.dumps(hello) + "\n")
    from .breadcrumbs import TRAIL
    TRAIL.on = True  # where this worker is goes to its log, for the coordinator to read if it dies
    cache = BuildCache.from_env()
    for line in sys.stdin:
        if not line.strip():
            continue
        t_read = time.perf_counter()
        request = json.loads(line)
        t_start = time.perf_counter()
        TRAIL.start_request()
        if request.get("kind") == "test-crash" or _has_edge(request.get("graph"), request.get("crash_if_edge")):
            _test_crash(request)  # test-only hooks: see campaign.cases._plant
        if request.get("kind") == "render":
            reply = render_case(request, dialect)
        elif request.get("kind") == "probe":
            reply = probe_programs(request, dialect)
        elif request.get("kind") == "check-passes":
            reply = check_user_passes(request)
        else:
            reply = execute_case(request, dialect, cache)
        # the worker's own time, and its decoding of the request: the rest of the round
        # trip is the pipe's (campaign.sandbox)
        reply["worker_s"] = time.perf_counter() - t_start
        reply["decode_s"] = t_start - t_read
        reply["case"] = request.get("case")
        reply.update(_memory_kb())
        _reset_peak()  # the next reply's peak is its own case's
        proto_out.write(json.dumps(reply) + "\n")
    return 0


# the variable that tells a worker its --max-memory bound (sandbox.Worker sets it), which it
# names in its hello
MEMORY_BOUND_VARIABLE = "HIRFUZZ_MEMORY_BOUND_MB"


def _bound_mb() -> int:
    """The --max-memory bound on this worker's resident memory, in MB (0: none), as the
    coordinator, which enforces it, passed it (MEMORY_BOUND_VARIABLE)."""
    try:
        return max(0, int(os.environ.get(MEMORY_BOUND_VARIABLE, "0")))
    except ValueError:
        return 0


def memory_bound() -> dict:
    """The hello's word on the memory bound this worker runs under: none, or a bound on its
    resident memory that the coordinator measures and enforces (no rlimit: an address-space
    limit would hide the GPU from CUDA, whose initialisation reserves far more than it uses)."""
    limit = _bound_mb()
    if not limit:
        return {"kind": "none"}
    return {"kind": "resident", "limit_mb": limit, "enforced_by": "coordinator"}


# /proc/self/status's lines -> the reply's keys: resident memory now, and its peak (since
# the last _reset_peak: over the case just answered)
_MEMORY_LINES = {"VmRSS": "rss_kb", "VmHWM": "rss_peak_kb"}


def _reset_peak():
    """Start VmHWM (the peak resident memory) again from the current resident memory, so
    that each reply's peak is its case's (Linux 4.0 and later; elsewhere it stays the
    process's peak)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _memory_kb() -> dict:
    """This process's resident memory in kB, now ("rss_kb") and at its peak ("rss_peak_kb"),
    0 where unknown; and the bound on it, "limit_kb" (0 for none)."""
    found = {**dict.fromkeys(_MEMORY_LINES.values(), 0), "limit_kb": _bound_mb() * 1024}
    try:
        with open("/proc/self/status") as f:
            for line in f:  # "VmRSS:\t  201976 kB"
                name, _, value = line.partition(":")
                if name in _MEMORY_LINES:
                    found[_MEMORY_LINES[name]] = int(value.split()[0])
    except OSError:
        pass
    return found


def _has_edge(graph: dict | None, edge: list | None) -> bool:
    """Test-only: does the graph feed an `edge[0]` op straight into an `edge[1]` op?"""
    if not graph or not edge:
        return False
    ops = {n["id"]: n.get("op") for n in graph["nodes"]}
    for n in graph["nodes"]:
        if n.get("op") != edge[1]:
            continue
        for item in n["inputs"]:
            refs = item if item and isinstance(item[0], list) else [item]
            if any(ops.get(r[0]) == edge[0] for r in refs):
                return True
    return False


def _test_crash(request: dict):
    """Test-only misbehaviour: lets tests kill a worker without relying on a TVM bug."""
    how = request.get("how", "abort")
    if how == "segfault":
        import ctypes
        ctypes.string_at(0)
    if how == "abort":
        os.abort()
    if how == "hang":
        while True:
            time.sleep(1)
    if how == "oom":  # fills 64 MB blocks (bytearray writes its zeros: resident at once)
        # until hirfuzz kills it for its bound. It stops growing far past it (four times the
        # bound, or 4 GB without one) and holds what it has: a coordinator busy elsewhere (a
        # worker restarting) reads it late, and a test whose bound failed never fills the machine
        ceiling_mb = 4 * (_bound_mb() or 1024)
        hog = []
        while len(hog) * 64 < ceiling_mb:
            hog.append(bytearray(64 << 20))
        while True:
            time.sleep(1)
    if how == "huge":  # one allocation the machine refuses, as TVM taking a negative size as a huge one
        bytearray(1 << 50)


def main(argv=None) -> int:
    import argparse
    parser = argparse.ArgumentParser(prog="python -m hirfuzz.worker")
    parser.add_argument("--dialect", default="relax")
    args = parser.parse_args(argv)
    return serve(args.dialect)


if __name__ == "__main__":
    sys.exit(main())
