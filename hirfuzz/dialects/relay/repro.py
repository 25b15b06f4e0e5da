"""Standalone reproducers for Relay findings: a script that needs only TVM 0.19 and numpy.

The module travels as Relay text (`astext(show_meta_data=True)`, which `tvm.relay.fromtext`
parses back; tensor constants are in its metadata section). The script parses it, runs
the pass sequence, builds it for the finding's executor, runs it and exits 1 while the
bug is there. Writing it imports no TVM: it runs in the coordinator.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ...core.finding import Finding
from ...core.graph import Graph
from ...protocol import REPRO_MARK as MARK
from ..reproducer import CHECK_RESULTS, USER_PASS, data_lines, docstring, source_of

_FLATTEN = '''

def flatten(value):
    if isinstance(value, tvm.nd.NDArray):
        return [value.numpy()]
    return [a for v in value for a in flatten(v)]
'''

_BUILD_WITH_CREATE_EXECUTOR = '''

def build(mod):
    """relay.create_executor(EXECUTOR): compiled by evaluate(), inside the PassContext."""
    dev = tvm.cpu(0)
    with tvm.transform.PassContext(opt_level=OPT_LEVEL):
        function = relay.create_executor(EXECUTOR, mod=mod, device=dev, target=TARGET).evaluate()
    return lambda inputs: flatten(function(*[tvm.nd.array(a, dev) for a in inputs]))
'''

_BUILD_WITH_RELAY_BUILD = '''

def build(mod):
    """relay.build and the graph executor."""
    from tvm.contrib import graph_executor
    dev = tvm.cpu(0)
    with tvm.transform.PassContext(opt_level=OPT_LEVEL):
        lib = relay.build(mod, target=TARGET)
    graph = graph_executor.GraphModule(lib["default"](dev))
    names = [p.name_hint for p in mod["main"].params]

    def run(inputs):
        for name, a in zip(names, inputs):
            if graph.get_input_index(name) >= 0:  # an input the program never reads is dropped
                graph.set_input(name, a)
        graph.run()
        return [graph.get_output(i).numpy() for i in range(graph.get_num_outputs())]
    return run
'''

_MAIN = '''

def main():
    stage = "setup"  # what the script needs besides TVM (a user's pass module): not the bug
    try:
        pass_list = passes()
        stage = "lower"
        mod = tvm.relay.fromtext(MODULE)
        if VIOLATION is not None:
            mod = apply_violation(mod, VIOLATION, tvm_relay_op)
        stage = "well_formed"
        mod = relay.transform.InferType()(mod)
        for pass_ in pass_list:  # one at a time, each output checked, as hirfuzz does
            stage = "passes"
            mod = run_step(mod, pass_, OPT_LEVEL)
            stage = "ill_formed_after_pass"
            check_well_formed_after(pass_, mod)
        stage = "build"
        run = build(mod)
        if not RUN:
            print("{mark} ok")
            return 0
        stage = "run"
        outputs = run(INPUTS)
    except Exception as exc:
        print(f"{mark} stage={{stage}} error={{type(exc).__name__}}")
        raise
'''.format(mark=MARK)

HERE = Path(__file__).parent

# the first pass whose output is not well-formed is the one to blame (passes.apply_passes)
_CHECK_AFTER = '''def check_well_formed_after(pass_, mod):
    try:
        check_well_formed(mod)
    except Exception as exc:
        lines = [ln for ln in str(exc).splitlines() if ln.strip() and not ln.startswith((" ", "Traceback"))]
        print(f"well_formed before {pass_.info.name}: True")
        print(f"well_formed after {pass_.info.name}: False: {lines[0] if lines else type(exc).__name__}")
        raise'''


def _apply_passes_code() -> str:
    """How the worker runs a sequence (passes.py), copied verbatim: InferType before each pass,
    and each pass required by its PassContext, so that none is silently skipped."""
    return "\n\n".join(["", source_of(HERE / "passes.py", "pass_names"), source_of(HERE / "passes.py", "run_step"),
                        source_of(HERE / "passes.py", "check_well_formed"), _CHECK_AFTER, ""])


def _pass_code(step: dict) -> str:
    if step.get("import"):
        return f"user_pass({step['import']!r}, {step.get('search_dir')!r}, {step['args']!r})"
    args = ", ".join(f"{k}={v!r}" for k, v in step["args"].items())
    return f"relay.transform.{step['name']}({args})"


def _text_literal(text: str) -> str:
    """The module's text as a literal a reader can read: triple-quoted where that is exact."""
    quotes = "'" * 3
    if "\\" in text or quotes in text or text.endswith("'"):
        return repr(text)
    return quotes + text + quotes


def _violation_lines(plan: dict | None) -> list[str]:
    """Disruptive mode: the worker's own code adding the violating call (violate.py)."""
    if plan is None:
        return ["VIOLATION = None", ""]
    return [source_of(HERE / "ops.py", "tvm_relay_op"), "",
            source_of(HERE / "violate.py", "apply_violation"), "", f"VIOLATION = {plan!r}", ""]


def render_reproducer(graph: Graph, specs, finding: Finding, config: dict, inputs: list[np.ndarray],
                      run: bool, expected: list | None, tvm_version: str | None,
                      violation_plan: dict | None = None, module_script: dict | None = None) -> str:
    """A standalone script: exits 1 (exception, mismatch) or dies while the bug is present.
    `module_script` is the module's Relay text as the worker printed it."""
    lines = [*docstring(finding, config, tvm_version, "TVM 0.19 with Relay (python -m hirfuzz setup relay)"),
             "import os", "import sys", "", "import numpy as np", "",
             'os.environ.setdefault("TOPHUB_LOCATION", "NONE")  # building must not download tuning logs',
             "import tvm  # noqa: E402", "from tvm import relay  # noqa: E402", "",
             f"TARGET = {config['target']!r}", f"OPT_LEVEL = {config['opt_level']!r}",
             f"EXECUTOR = {config['kind']!r}", f"RUN = {run!r}", ""]
    steps = config.get("passes", [])
    if any(step.get("import") for step in steps):
        lines.append(USER_PASS)
    lines += ["", "def passes():", f"    return [{', '.join(_pass_code(s) for s in steps)}]", _apply_passes_code()]
    if module_script is None or "error" in module_script:
        # no faithful text: say so; the reproducer check then keeps the finding unconfirmed
        why = (module_script or {}).get("error", "the worker printed no module")
        lines += ["", f"raise RuntimeError({('hirfuzz could not print this module: ' + why)!r})", ""]
    else:
        lines += ["", f"MODULE = {_text_literal(module_script['script'])}", ""]
    lines += _violation_lines(violation_plan)
    lines += data_lines(inputs, expected, rejection=violation_plan is not None)
    build = _BUILD_WITH_RELAY_BUILD if config["kind"] == "build" else _BUILD_WITH_CREATE_EXECUTOR
    return "\n".join(lines) + _FLATTEN + build + _MAIN + CHECK_RESULTS
