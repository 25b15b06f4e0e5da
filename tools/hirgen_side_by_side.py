"""HIRGen (github.com/haoyang9804/HirGen, its generator unmodified) against TVM 0.19 Relay for
a wall time, to run beside a hirfuzz Relay campaign of the same length (issue 27: README.md,
"Two dialects", has the figures of one such pair). Build HirGen first (cmake .. -G Ninja &&
ninja in its build folder), and `python -m hirfuzz setup relay`.

    python tools/hirgen_side_by_side.py --hirgen PATH/build/hirgen SECONDS OUT_DIR [hirgen options]

(hirgen options default to HirGen's own: -num=100 -testing=nodf -clevel=strict -coverage=yes)

Each round, like HirGen's own loop: run ./hirgen in a persistent work folder (its cov.csv
carries coverage guidance from program to program), adapt the generated output.py to TVM 0.19
(see adapt_program), run it in a fresh process with a 60 s timeout, and judge it the way
HirGen does (runPythonFile: a program fails when python exits non-zero). Failing programs are
saved with their error text under OUT_DIR/failures/; OUT_DIR/summary.tsv gets one line per program.
"""
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hirfuzz.envs import resolve_interpreter  # noqa: E402

PROGRAM_TIMEOUT_S = 60

# HirGen writes negative literals for unsigned dtypes (random.cpp generateAValue). NumPy 1.x,
# which HirGen ran with in 2022, wrapped them around; NumPy 2 (here 2.4) raises OverflowError.
# Restore the wrap-around so those programs test TVM, not NumPy.
PRELUDE = '''\
# --- added by hirgen_side_by_side.py: TVM 0.19 / NumPy 2 adaptation (see that file) ---
import numpy as _np
from tvm import relay as _relay
_hirgen_original_const = _relay.const
def _hirgen_const(value, dtype=None, span=None):
    if dtype is not None and isinstance(value, (bool, int, float, list)):
        value = _np.array(value).astype(dtype)
    return _hirgen_original_const(value, dtype=dtype, span=span)
_relay.const = _hirgen_const
# TVM 0.19 GlobalVar.__call__ builds a *Relax* Call when every argument is a Relax expression,
# which is vacuously true for zero arguments (all([]) is True); TVM of 2022 had no Relax and
# always built a Relay Call. HirGen calls argument-less functions (func_N()), so build Relay.
import tvm.ir.expr as _tvm_ir_expr
def _hirgen_global_var_call(self, *args):
    return _relay.Call(self, list(args))
_tvm_ir_expr.GlobalVar.__call__ = _hirgen_global_var_call
# --- end of adaptation; HirGen's program follows ---
'''

# Ids HirGen gives to its CUDA builds/executors/results (stringUtils.cpp: _generateBuild*,
# generateInputsAndPredictions). This machine's TVM has no CUDA, so those statements are dropped.
CUDA_IDS = "5|6|7|8|13|14|15|16|21|22|23|24"
CUDA_STATEMENT = re.compile(r"cuda|\b(module|intrp|res)(%s)(_\d+)?\b" % CUDA_IDS)
# -testing=df inputs: np.array([...negative...], dtype='uint8') fails under NumPy 2 as above.
INPUT_ARRAY = re.compile(r"np\.array\((.*), dtype='(\w+)'\)$")


def adapt_program(text):
    """HirGen's program, runnable on this TVM 0.19 llvm-only build (all changes listed here)."""
    kept = []
    for line in text.splitlines():
        if CUDA_STATEMENT.search(line):
            continue
        kept.append(INPUT_ARRAY.sub(r"np.array(\1).astype('\2')", line))
    return PRELUDE + "\n".join(kept) + "\n"


def relay_env(extra: dict) -> dict:
    """The variables the managed Relay environment needs, and TVM's backtraces on."""
    return {**os.environ, **extra, "TOPHUB_LOCATION": "NONE", "TVM_BACKTRACE": "1", "PYTHONWARNINGS": "ignore"}


def wait_for_next_second(last_second):
    # hirgen seeds rand() with time(NULL): two runs in one second give the same program.
    while int(time.time()) == last_second:
        time.sleep(0.05)


def generate(hirgen, work_dir, hirgen_args):
    output = work_dir / "output.py"
    if output.exists():
        output.unlink()
    done = subprocess.run([str(hirgen), *hirgen_args], cwd=work_dir, capture_output=True,
                          text=True, timeout=120)
    if done.returncode != 0 or not output.exists():
        return None
    return output.read_text()


def run_program(relay, path, log_path, remaining_s):
    """(status, seconds): status is pass, exception, crash (signal) or timeout."""
    timeout = max(1.0, min(PROGRAM_TIMEOUT_S, remaining_s))
    started = time.time()
    with open(log_path, "w") as log:
        python, extra = relay
        proc = subprocess.Popen([python, str(path)], cwd=path.parent, stdout=log,
                                stderr=subprocess.STDOUT, env=relay_env(extra), start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return "timeout", time.time() - started, timeout < PROGRAM_TIMEOUT_S
    seconds = time.time() - started
    if rc == 0:
        return "pass", seconds, False
    return ("crash" if rc < 0 else "exception"), seconds, False


# Failures whose cause is a documented limitation that the generated program runs into, not a
# TVM defect: the graph executor (relay.build) plans memory statically and rejects Any shapes,
# which HirGen's relay.reshape(x, relay.shape_of(y)) inside called global functions produces.
KNOWN_LIMITATIONS = {
    "graph-executor-dynamic-shape": "Cannot allocate memory symbolic tensor shape",
    # relay-notes.md: the graph executor takes a call to a global function for an external
    # one; graph_runtime.create then finds no such function
    "graph-executor-global-call": "no such function in module",
    # relay-notes.md: the xtc wheel ships an empty relay/std/gradient.rly, so LazyGradientInit
    # (14th in HirGen's pass list) cannot parse its prelude.
    "wheel-lacks-gradient-rly": "relay/std/gradient.rly",
}


def failure_kind(log_text, status):
    if status != "exception":
        return status
    error_end = log_text[-20000:]
    for kind, marker in KNOWN_LIMITATIONS.items():
        if marker in error_end:
            return "limitation:" + kind
    return "exception"


ERROR_LINE = re.compile(r"^([\w.]*(Error|Exception)\b.*|.*Check failed.*|.*Assertion.*failed.*)$")


# Outermost TVM entry point in the C++ backtrace (DynamicToStatic, GraphPlanMemory, DeDup...):
# names the pass that failed, which a DiagnosticError's last line does not.
TVM_ENTRY_FRAME = re.compile(r"^\s*(\d+): tvm::relay::(?:transform::)?([A-Z]\w*)\(")


def failing_tvm_entry(lines):
    frames = [(int(m.group(1)), m.group(2)) for m in map(TVM_ENTRY_FRAME.match, lines) if m]
    return max(frames)[1] if frames else None


def first_error_line(log_text, status):
    lines = [l.strip() for l in log_text.splitlines() if l.strip()]
    errors = [l for l in lines if ERROR_LINE.match(l)]
    if errors:
        line = errors[-1]
        diagnostics = [l for l in lines if l.startswith("error:")]
        if line.startswith("DiagnosticError") and diagnostics:
            line = "DiagnosticError: " + diagnostics[0]
        entry = failing_tvm_entry(log_text.splitlines())
        return ("[%s] %s" % (entry, line) if entry else line)[:300]
    if status == "timeout":
        return "timeout after %d s" % PROGRAM_TIMEOUT_S
    return (lines[-1] if lines else "(no output, status %s)" % status)[:300]


def main():
    args = sys.argv[1:]
    if len(args) < 4 or args[0] != "--hirgen":
        sys.exit("usage: python tools/hirgen_side_by_side.py --hirgen PATH SECONDS OUT_DIR [hirgen options]")
    hirgen, wall_s, out_dir = Path(args[1]).resolve(), float(args[2]), Path(args[3]).resolve()
    hirgen_args = args[4:]
    if not hirgen.is_file():
        sys.exit(f"--hirgen {hirgen}: no such file (build HirGen first)")
    relay = resolve_interpreter("relay")
    work_dir, failures_dir = out_dir / "work", out_dir / "failures"
    work_dir.mkdir(parents=True, exist_ok=True)
    failures_dir.mkdir(exist_ok=True)
    summary = open(out_dir / "summary.tsv", "a", buffering=1)
    summary.write("#index\tutc\tstatus\tkind\tseconds\tprograms\tfailures\tfirst_line\n")
    deadline = time.time() + wall_s
    programs = failures = limitations = 0
    last_second = -1
    while time.time() < deadline:
        wait_for_next_second(last_second)
        last_second = int(time.time())
        text = generate(hirgen, work_dir, hirgen_args)
        if text is None:
            summary.write("-\t%s\thirgen-failed\t-\t0\t%d\t%d\t-\n" % (utc(), programs, failures))
            continue
        program = work_dir / "program.py"
        program.write_text(adapt_program(text))
        status, seconds, cut_by_deadline = run_program(relay, program, work_dir / "program.log",
                                                       deadline - time.time())
        if cut_by_deadline:
            break  # the wall time ran out mid-program: neither counted nor judged
        programs += 1
        log_text = (work_dir / "program.log").read_text(errors="replace")
        line = "-" if status == "pass" else first_error_line(log_text, status)
        kind = failure_kind(log_text, status)
        if status != "pass":
            failures += 1
            limitations += kind.startswith("limitation:")
            save_failure(failures_dir / ("%05d-%s" % (programs, kind.replace(":", "-"))), text, program, log_text)
        summary.write("%d\t%s\t%s\t%s\t%.1f\t%d\t%d\t%s\n"
                      % (programs, utc(), status, kind, seconds, programs, failures, line))
    totals = "programs=%d failures=%d of_which_known_limitations=%d" % (
        programs, failures, limitations)
    summary.write("#total\t%s\t%s\twall_s=%d\n" % (utc(), totals, wall_s))
    print(totals)


def save_failure(folder, original_text, adapted_program, log_text):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hirgen_output.py").write_text(original_text)
    (folder / "program.py").write_text(adapted_program.read_text())
    # the program prints whole modules; keep the error end of its output
    (folder / "error.txt").write_text(log_text[-20000:])


def utc():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


if __name__ == "__main__":
    main()
