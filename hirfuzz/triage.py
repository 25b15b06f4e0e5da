"""Triage: signatures for deduplication, standalone reproducers, and finding folders.

A finding's signature keys a crash on its kind, stage, exception type, deepest TVM source
frame and normalised message (or on the signal), and a wrong result on the oracle; the
same signature is reported once and counted. Each new finding gets a standalone
``repro.py`` that uses only tvm and numpy: it rebuilds the module with BlockBuilder calls
(so it works even when TVM crashes while printing), prints it as TVMScript, builds and
runs it, and exits 1 while the bug is there. hirfuzz runs that script before reporting
and keeps the finding only if the script fails the same way.
"""
from __future__ import annotations

import ast
import hashlib
import inspect
import json
import os
import re
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .compile import describe as describe_config
from .graph import Graph, Ref

MARK = "HIRFUZZ-REPRO"
_FRAME = re.compile(r'File "[^"]*?/src/([^"]+)", line \d+, in (.+)')
# a TVM check is known by its condition: what follows "is false:" names the IR at hand
_CHECK = re.compile(r"(Check failed: .*?)(?: is false\b.*)?(?:$|\n)")


@dataclass
class Finding:
    kind: str                 # crash, hang, wrong-result
    oracle: str               # crash or reference
    stage: str                # lower, well_formed, build, run, or worker
    signature: str
    message: str              # one line, for the screen
    detail: str = ""          # full exception text, log tail or mismatch description
    case: int = -1
    hits: int = 1
    path: str = ""
    confirmed: bool = False
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)


# --- signatures -------------------------------------------------------------------------------

def normalize_message(message: str) -> str:
    text = message.strip()
    check = _CHECK.search(text)
    line = check.group(1) if check else next((ln for ln in text.splitlines() if ln.strip()), "")
    line = re.sub(r"0x[0-9a-fA-F]+", "0x?", line)
    line = re.sub(r"\b(lv|gv|x|c|v)\d+\b", "V", line)
    line = re.sub(r"\d+", "N", line)
    line = re.sub(r"\s+", " ", line)
    return line[:200]


def top_tvm_frame(trace: str) -> str:
    frames = _FRAME.findall(trace or "")
    if not frames:
        return ""
    path, fn = frames[-1]
    return f"{path}:{fn.strip()}"


def crash_signature(stage: str, exc_type: str, message: str, trace: str) -> str:
    return "|".join(["crash", stage, exc_type, top_tvm_frame(trace), normalize_message(message)])


def death_signature(reason: str, sig: str | None) -> str:
    return f"{'hang' if reason == 'timeout' else 'crash'}|worker|{sig or reason}"


def short_id(signature: str) -> str:
    return hashlib.sha1(signature.encode()).hexdigest()[:10]


# --- reproducer -------------------------------------------------------------------------------

class _Code:
    """A Python expression in the reproducer; its repr is the text, so lists of them print."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self):
        return self.text


def _literal(value) -> str:
    return repr(value)


def _array_code(a: np.ndarray) -> str:
    return f"np.array({a.tolist()!r}, dtype={a.dtype.name!r})"


def render_module_code(graph: Graph, specs) -> str:
    """Python that rebuilds the lowered module with BlockBuilder calls (tvm + numpy only)."""
    names: dict[Ref, str] = {}
    lines = ["def build_module():", "    bb = relax.BlockBuilder()"]
    params = []
    for n in graph.variables:
        name = f"x{n.id}"
        names[Ref(n.id)] = name
        params.append(name)
        lines.append(f"    {name} = relax.Var({name!r}, relax.TensorType({list(n.type.shape)!r}, {n.type.dtype!r}))")
    lines.append(f"    with bb.function('main', [{', '.join(params)}]):")
    lines.append("        with bb.dataflow():")
    for node in graph.nodes:
        if node.kind == "const":
            name = f"c{node.id}"
            names[Ref(node.id)] = name
            arr = np.asarray(node.value, dtype=node.type.dtype)
            lines.append(f"            {name} = relax.const({_array_code(arr)}, {node.type.dtype!r})")
        if node.kind != "op":
            continue
        spec = specs.ops[node.op]
        env = {ispec.name: ([_Code(names[r]) for r in item] if isinstance(item, list) else _Code(names[item]))
               for ispec, item in zip(spec.inputs, node.inputs)}
        args, kwargs = spec.call_arguments(node.attrs, node.dtype, env)
        call_text = ", ".join([repr(a) for a in args] + [f"{k}={_literal(v)}" for k, v in kwargs.items()])
        name = f"lv{node.id}"
        lines.append(f"            {name} = bb.emit(relax.op.{spec.relax}({call_text}))")
        if spec.multi_output:
            for i in range(len(node.outputs)):
                names[Ref(node.id, i)] = f"{name}_{i}"
                lines.append(f"            {name}_{i} = bb.emit(relax.TupleGetItem({name}, {i}))")
        else:
            names[Ref(node.id)] = name
    results = [names[r] for r in graph.results()]
    out = results[0] if len(results) == 1 else f"relax.Tuple([{', '.join(results)}])"
    lines.append(f"            gv = bb.emit_output({out})")
    lines.append("        bb.emit_func_output(gv)")
    lines.append("    return bb.get()")
    return "\n".join(lines)


_REPRO_MAIN = '''

def flatten(value):
    if isinstance(value, tvm.runtime.Tensor):
        return [value.numpy()]
    return [a for v in value for a in flatten(v)]


def main():
    stage = "setup"  # what the script needs besides TVM (a user's pass module): not the bug
    try:
        pass_list = passes()
        stage = "lower"
        mod = build_module()
        print(mod.script())
        stage = "well_formed"
        relax.analysis.well_formed(mod)
        with tvm.transform.PassContext(opt_level=OPT_LEVEL):
            stage = "passes"
            mod = tvm.transform.Sequential(pass_list)(mod)
            stage = "build"
            mod = prepare_for_build(mod)
            executable = relax.build(mod, target=TARGET, relax_pipeline=PIPELINE, exec_mode=EXEC_MODE)
        if not RUN:
            print("{mark} ok")
            return 0
        stage = "run"
        dev = tvm.cuda(0) if TARGET.startswith("cuda") else tvm.cpu(0)
        vm = relax.VirtualMachine(executable, dev)
        outputs = flatten(vm["main"](*[tvm.runtime.tensor(a, dev) for a in INPUTS]))
    except Exception as exc:
        print(f"{mark} stage={{stage}} error={{type(exc).__name__}}")
        raise
    if EXPECT_REJECTION:
        print("{mark} accepted")
        return 1
    if EXPECTED is None:
        print("{mark} ok")
        return 0
    failed = False
    for i, (got, (want, rtol, atol)) in enumerate(zip(outputs, EXPECTED)):
        if want is None:
            continue  # not comparable: rounding may have been amplified
        if got.dtype != want.dtype or got.shape != want.shape:
            print(f"result {{i}}: got {{got.dtype}}{{list(got.shape)}}, expected {{want.dtype}}{{list(want.shape)}}")
            failed = True
        elif atol == 0 and rtol == 0:
            if not np.array_equal(got, want):
                print(f"result {{i}}: {{int(np.sum(got != want))}} elements differ\\n got {{got}}\\n expected {{want}}")
                failed = True
        elif not np.allclose(got.astype("float64"), want.astype("float64"), rtol=rtol, atol=atol):
            print(f"result {{i}}: outside rtol={{rtol}} atol={{atol}}\\n got {{got}}\\n expected {{want}}")
            failed = True
    print("{mark} mismatch" if failed else "{mark} ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
'''.format(mark=MARK)


def _source_of(module_file: str, name: str) -> str:
    """The source text of a top-level function of a hirfuzz module, without importing it."""
    text = (Path(__file__).parent / module_file).read_text()
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.get_source_segment(text, node)
    raise ValueError(f"{module_file} has no function {name}")


def _pass_code(step: dict) -> str:
    if step.get("import"):
        return f"user_pass({step['import']!r}, {step.get('search_dir')!r}, {step['args']!r})"
    args = ", ".join(f"{k}={v!r}" for k, v in step["args"].items())
    return f"relax.transform.{step['name']}({args})"


_USER_PASS = """

def user_pass(path, search_dir, args):
    \"\"\"A pass from the user's own module (`import:` in their pass catalog).\"\"\"
    import importlib
    if search_dir and search_dir not in sys.path:
        sys.path.insert(0, search_dir)
    module, factory = path.split(":")
    return getattr(importlib.import_module(module), factory)(**args)
"""


def render_reproducer(graph: Graph, specs, finding: Finding, config: dict, inputs: list[np.ndarray],
                      run: bool, expected: list | None, tvm_version: str | None,
                      violation_plan: dict | None = None, module_script: dict | None = None) -> str:
    """A standalone script: exits 1 (exception, mismatch) or dies while the bug is present.

    With a violation plan (disruptive mode) the script adds the violating call with the
    very function the worker used, and a program that builds and runs is the bug.
    """
    user_modules = sorted({f"{step['import'].split(':')[0]} (from {step.get('search_dir') or 'site-packages'})"
                           for step in config.get("passes", []) if step.get("import")})
    header = [
        '"""hirfuzz reproducer.',
        "",
        f"Finding: {finding.kind} ({finding.oracle} oracle) at stage '{finding.stage}'",
        f"Message: {finding.message}",
        f"TVM: {tvm_version or 'unknown'}; built as: {describe_config(config)}",
        *([f"Needs your pass module(s): {', '.join(user_modules)}; the script puts that folder on sys.path"]
          if user_modules else []),
        "Run: python repro.py   (exit status 0 means the bug no longer reproduces)",
        '"""',
        "import sys",
        "",
        "import numpy as np",
        "import tvm",
        "from tvm import relax",
        "",
        f"TARGET = {config['target']!r}",
        f"OPT_LEVEL = {config['opt_level']!r}",
        f"PIPELINE = {config['pipeline']!r}",
        f"EXEC_MODE = {config['exec_mode']!r}",
        f"RUN = {run!r}",
        "",
    ]
    # the worker's own precondition step, copied verbatim (read as text: mutate imports TVM,
    # which the coordinator never does)
    header += ["", _source_of("mutate.py", "prepare_for_build"), "", _source_of("mutate.py", "_has_local_functions")]
    passes = [_pass_code(step) for step in config.get("passes", [])]
    if any(step.get("import") for step in config.get("passes", [])):
        header.append(_USER_PASS)
    header += ["", "def passes():", f"    return [{', '.join(passes)}]", ""]
    if module_script is None:
        body = [render_module_code(graph, specs), ""]
    elif "error" in module_script:
        # no faithful TVMScript: say so; the reproducer check will then keep it unconfirmed
        body = ["def build_module():",
                f"    raise RuntimeError({('hirfuzz could not print this module: ' + module_script['error'])!r})", ""]
    else:
        body = ["from tvm.script import ir as I, relax as R, tirx as T  # noqa: E402,E741", "",
                "def TypeVar(name):  # how the printer spells a global function's symbolic dimension",
                "    return tvm.tirx.Var(name, 'int64')", "",
                "_c = [  # the module's tensor constants",
                *[f"    {_array_code(c)}," for c in module_script["consts"]], "]", "",
                module_script["script"].strip(), "", "",
                "def build_module():", "    return Module", ""]
    if violation_plan is not None:
        from .disrupt import apply_violation
        body[0] = body[0].replace("def build_module():", "def build_valid_module():", 1)
        body += [inspect.getsource(apply_violation), "",
                 f"VIOLATION = {violation_plan!r}", "",
                 "def build_module():",
                 "    return apply_violation(build_valid_module(), VIOLATION)", ""]
    body.append(f"EXPECT_REJECTION = {violation_plan is not None!r}  # an invalid program: accepting it is the bug")
    body.append("INPUTS = [")
    body += [f"    {_array_code(a)}," for a in inputs]
    body.append("]")
    if expected is None:
        body.append("EXPECTED = None")
    else:
        body.append("EXPECTED = [  # (expected value or None if not comparable, rtol, atol)")
        for value, rtol, atol in expected:
            body.append(f"    ({_array_code(value) if value is not None else 'None'}, {rtol!r}, {atol!r}),")
        body.append("]")
    return "\n".join(header + body) + _REPRO_MAIN


@dataclass
class ReproOutcome:
    reproduced: bool
    observed: str
    output: str
    harness_error: str = ""   # the script could not get as far as the bug: hirfuzz's problem


def _harness_error(proc: subprocess.CompletedProcess, last_mark: str) -> str:
    """Why the script failed before reaching what it reproduces, or "" if it got there.

    A script that stops in its set-up (a user's pass module it cannot import), or raises
    before printing any mark (TVM or numpy missing, a file it needs gone), says nothing
    about the bug; counting it as "did not reproduce" would lose the finding.
    """
    if proc.returncode <= 0 or (last_mark and not last_mark.startswith(f"{MARK} stage=setup ")):
        return ""
    lines = [ln for ln in (proc.stderr or "").splitlines() if ln.strip()]
    return lines[-1].strip() if lines else f"exit {proc.returncode} before reaching the program"


def _cpu_limit(seconds: float):
    """The kernel ends a script that spins past `seconds` of CPU time (SIGXCPU), even if
    hirfuzz is gone (a second Ctrl-C while a script is checked leaves it behind)."""
    def apply():
        import resource
        limit = max(1, int(seconds))
        resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 5))
    return apply


def check_reproducer(script: Path, finding: Finding, timeout_s: float) -> ReproOutcome:
    """Run the saved script alone and say whether it fails the way the fuzzer saw.

    A hang is judged on CPU time, which a loaded machine does not stretch: a build that is
    merely slow finishes within `timeout_s` CPU-seconds. The wall-clock limit, twice as
    long, catches a script that hangs asleep.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    hang = finding.kind == "hang"
    try:
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              timeout=timeout_s * (2 if hang else 1), cwd=script.parent, env=env,
                              start_new_session=True, preexec_fn=_cpu_limit(timeout_s + (0 if hang else 10)))
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode("utf-8", "replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return ReproOutcome(hang, "hang", out[-4000:])
    output = (proc.stdout or "") + (proc.stderr or "")
    if proc.returncode == -signal.SIGXCPU:
        return ReproOutcome(hang, f"hang: over {timeout_s:.0f} s of CPU time", output[-4000:])
    if proc.returncode < 0:
        observed = f"signal {signal.Signals(-proc.returncode).name}"
        want = finding.extra.get("signal")
        return ReproOutcome(finding.kind == "crash" and finding.stage == "worker" and want in observed,
                            observed, output[-4000:])
    marks = [ln for ln in (proc.stdout or "").splitlines() if ln.startswith(MARK)]
    last = marks[-1] if marks else ""
    harness = _harness_error(proc, last)
    if harness:
        return ReproOutcome(False, f"the reproducer could not run: {harness}", output[-4000:], harness)
    if finding.kind == "wrong-result":
        return ReproOutcome(last == f"{MARK} mismatch", last or f"exit {proc.returncode}", output[-4000:])
    if finding.kind == "silent-acceptance":
        return ReproOutcome(last == f"{MARK} accepted", last or f"exit {proc.returncode}", output[-4000:])
    want = f"{MARK} stage={finding.stage} error={finding.extra.get('exc_type')}"
    if finding.stage == "worker":
        # the worker died of a signal, but Python may have turned it into an exception
        return ReproOutcome(proc.returncode != 0 and last != f"{MARK} ok", last or f"exit {proc.returncode}",
                            output[-4000:])
    return ReproOutcome(last == want, last or f"exit {proc.returncode}", output[-4000:])


# --- finding folders -------------------------------------------------------------------------

def finding_files(finding: Finding, case_json: dict, repro: str, log: str) -> dict:
    return {
        "finding.json": json.dumps(finding.to_json(), indent=2) + "\n",
        "case.json": json.dumps(case_json) + "\n",
        "repro.py": repro,
        "log.txt": log,
    }
