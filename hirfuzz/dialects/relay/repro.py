"""Standalone reproducers for Relay findings: a script that needs only TVM 0.19 and numpy.

The module travels as Relay text (text.py) with its tensor constants as NumPy arrays, which
the script hands to `tvm.relay.parse` for the text's `meta[relay.Constant][k]`. It parses it, runs
the pass sequence, builds it for the finding's executor, runs it and exits 1 while the
bug is there. Writing it imports no TVM: it runs in the coordinator.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ...core.finding import Finding
from ...core.graph import Graph
from ...protocol import CHECK_ONLY, REPRO_MARK as MARK
from ..base import ReproducerWriter
from .gradients import Autodiff, autodiff_of
from ..reproducer import (BEFORE_RUN, CHECK_RESULTS, GRADIENT_DIFFERS, GRADIENT_VERDICT, USER_PASS,
                          gradient_expectation_lines,
                          Reach, ViolatingCall, array_code, arity_line, call_text,
                          device_expression, target_code,
                          check_lines, data_lines, repeated_check_lines, docstring, finish_short, flatten_lines, input_lines, pass_call,
                          source_of, steps_to_show, user_pass_imports)

_FLATTEN = '''

def flatten(value):
    if isinstance(value, tvm.nd.NDArray):
        return [value.numpy()]
    return [a for v in value for a in flatten(v)]
'''

_BUILD_WITH_CREATE_EXECUTOR = '''

def build(mod):
    """relay.create_executor(EXECUTOR): compiled by evaluate(), inside the PassContext."""
    dev = tvm.cuda(0) if tvm.target.Target(TARGET).kind.name == "cuda" else tvm.cpu(0)
    with tvm.transform.PassContext(opt_level=OPT_LEVEL):
        function = relay.create_executor(EXECUTOR, mod=mod, device=dev, target=TARGET).evaluate()
    return lambda inputs: flatten(function(*[tvm.nd.array(a, dev) for a in inputs]))
'''

_BUILD_WITH_RELAY_BUILD = '''

def build(mod):
    """relay.build and the graph executor."""
    from tvm.contrib import graph_executor
    dev = tvm.cuda(0) if tvm.target.Target(TARGET).kind.name == "cuda" else tvm.cpu(0)
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
        mod = tvm.relay.parse(MODULE, init_meta_table={{"relay.Constant": [relay.const(c) for c in _c]}} if _c else None)
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
        runs = [run(INPUTS) for _ in range(RUNS)]
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
             f"TARGET = {target_code(config['target'])}", f"OPT_LEVEL = {config['opt_level']!r}",
             f"EXECUTOR = {config['kind']!r}", f"RUN = {run!r}", "", "",
             source_of(HERE / "dialect.py", "print_diagnostics"), "",
             "",
             "# the worker's renderer: a type error is a DiagnosticError wherever TVM lost its source",
             "tvm.ir.diagnostics.override_renderer(print_diagnostics)", ""]
    steps = config.get("passes", [])
    if any(step.get("import") for step in steps):
        lines.append(USER_PASS)
    lines += ["", "def passes():", f"    return [{', '.join(_pass_code(s) for s in steps)}]", _apply_passes_code()]
    if module_script is None or "error" in module_script:
        # no faithful text: say so; the reproducer check then keeps the finding unconfirmed
        why = (module_script or {}).get("error", "the worker printed no module")
        lines += ["", f"raise RuntimeError({('hirfuzz could not print this module: ' + why)!r})", ""]
    else:
        lines += ["", f"MODULE = {_text_literal(module_script['script'])}", "",
                  "_c = [  # the module's tensor constants: meta[relay.Constant][k]",
                  *[f"    {array_code(c)}," for c in module_script["consts"]], "]", ""]
    lines += _violation_lines(violation_plan)
    lines += data_lines(inputs, expected, rejection=violation_plan is not None)
    build = _BUILD_WITH_RELAY_BUILD if config["kind"] == "build" else _BUILD_WITH_CREATE_EXECUTOR
    return "\n".join(lines) + _FLATTEN + build + _MAIN + CHECK_RESULTS


# --- the short reproducer a maintainer reads ---------------------------------------------------

# each pass required by its context, so that none is skipped at the configured opt_level
_REQUIRED_NAMES = [
    "def names(p):  # a pass, the passes inside it and those it requires: run whatever the opt_level",
    "    return [p.info.name, *map(str, p.info.required), *[n for q in getattr(p, 'passes', None) or [] for n in names(q)]]",
    ""]


def _pass_lines(steps: list[dict], opt_level: int) -> list[str]:
    """How hirfuzz runs a sequence (passes.run_step): InferType, then each pass, required."""
    if not steps:
        return []
    passes = ", ".join(pass_call(step, "relay.transform") for step in steps)
    return [f"for p in [{passes}]:",
            f"    with tvm.transform.PassContext(opt_level={opt_level}, required_pass=names(p)):",
            "        mod = tvm.transform.Sequential([relay.transform.InferType(), p])(mod)"]


def _run_lines(config: dict, inputs: list[np.ndarray], run: bool) -> list[str]:
    """Build for the finding's executor, and run it on the inputs: `result`."""
    lines = _build_lines(config)
    if not run:
        return lines
    return lines + input_lines(inputs) + _executor_lines(config) + _result_lines(config)


def _build_lines(config: dict) -> list[str]:
    """Build for the finding's executor: `run` (create_executor's function) or `lib`."""
    opt, target = config["opt_level"], config["target"]
    if config["kind"] != "build":
        return [f"with tvm.transform.PassContext(opt_level={opt}):",
                f"    run = relay.create_executor({config['kind']!r}, mod=mod, device={device_expression(config)}, "
                f"target={target_code(target)}).evaluate()"]
    return [f"with tvm.transform.PassContext(opt_level={opt}):", f"    lib = relay.build(mod, target={target_code(target)})"]


def _executor_lines(config: dict) -> list[str]:
    """What runs a built library: a graph module (create_executor's function runs itself)."""
    if config["kind"] != "build":
        return []
    return [f"graph = graph_executor.GraphModule(lib['default']({device_expression(config)}))"]


def _result_lines(config: dict) -> list[str]:
    """One run on `inputs`: `result`."""
    if config["kind"] != "build":
        return [f"result = run(*[tvm.nd.array(a, {device_expression(config)}) for a in inputs])"]
    return ["for p, a in zip(mod['main'].params, inputs):",
            "    if graph.get_input_index(p.name_hint) >= 0:  # an input the program never reads is dropped",
            "        graph.set_input(p.name_hint, a)",
            "graph.run()",
            "result = [graph.get_output(i) for i in range(graph.get_num_outputs())]"]


def render_short(finding: Finding, config: dict, inputs: list[np.ndarray], run: bool, expected: list | None,
                 module_script: dict) -> str:
    """repro.py: the module as Relay text with its constants, its inputs, the pass, build
    and run lines, and the check; it raises (an exception, or an AssertionError for a wrong
    result) while the bug is there. Nothing of hirfuzz's is in it."""
    run = run and finding.stage not in BEFORE_RUN  # it fails before running: no inputs to show
    steps = steps_to_show(finding, config.get("passes", []))
    blamed = finding.extra.get("blamed_pass")
    runs = blamed is None and not config.get(CHECK_ONLY)
    compares = run and runs and bool(check_lines(finding, expected))
    lines = ["import numpy as np", "import tvm", "from tvm import relay",
             *(["from tvm.contrib import graph_executor"] if config["kind"] == "build" and run and runs else []),
             *user_pass_imports(steps), ""]
    if blamed is not None:
        lines += [source_of(HERE / "passes.py", "check_well_formed"), ""]
    if steps:
        lines += _REQUIRED_NAMES
    if compares:
        lines += flatten_lines("tvm.nd.NDArray")
    lines.append(f"TEXT = {_text_literal(module_script['script'])}")
    consts = module_script["consts"]
    if consts:
        lines += ["constants = [  # meta[relay.Constant][k]", *[f"    {array_code(c)}," for c in consts], "]",
                  "mod = tvm.relay.parse(TEXT, init_meta_table={'relay.Constant': [relay.const(c) for c in constants]})"]
    else:
        lines.append("mod = tvm.relay.parse(TEXT)")
    lines.append("mod = relay.transform.InferType()(mod)")
    lines += _pass_lines(steps, config["opt_level"])
    if blamed is not None:
        return "\n".join(lines + ["check_well_formed(mod)  # raises: the pass left an ill-formed module"]) + "\n"
    if not runs:  # a check-only sequence's failure: its passes raise, nothing was built
        return "\n".join(lines) + "\n"
    if not compares:
        return "\n".join(lines + _run_lines(config, inputs, run)) + "\n"
    lines += [*_build_lines(config), *input_lines(inputs), *_executor_lines(config)]
    lines += repeated_check_lines(finding, expected, [*_result_lines(config), "outputs = flatten(result)"])
    return "\n".join(lines) + "\n"


# --- a disruptive finding's short reproducer: the violating call alone --------------------------

def _var_lines(call: ViolatingCall, prefix: str) -> list[str]:
    return [f"{prefix}{i.index} = relay.var('{prefix}{i.index}', shape={i.shape!r}, dtype={i.dtype!r})"
            for i in call.inputs]


def _violation_module_lines(call: ViolatingCall, wrapped: bool) -> list[str]:
    """Relay code making `mod`, type-inferred: main holds the call, or calls the global
    function (wrap "global") or let-bound closure (wrap "local") that holds it, as the worker
    built it; main's parameters are x0, x1, ..., the function's a0, a1, ... Relay has no
    match_cast: a lied parameter is declared with one shape and passed an array of another."""
    prefix = "a" if wrapped and call.wrap else "x"
    lines = [*_var_lines(call, prefix), f"call = {call_text(call, 'relay', prefix)}"]
    if call.tuple_result:
        lines.append("call = call.astuple() if isinstance(call, relay.expr.TupleWrapper) else call")
    lines += [*arity_line(call, "relay.Call", "type_args"), "mod = tvm.IRModule()"]
    inner, outer = _param_list(call, "a"), _param_list(call, "x")
    if prefix == "x":
        main = "call"
    elif call.wrap == "global":
        lines += ["bad = relay.GlobalVar('bad')", f"mod[bad] = relay.Function({inner}, call)", *_var_lines(call, "x")]
        main = f"relay.Call(bad, {outer})"
    else:
        lines += [*_var_lines(call, "x"), "bad = relay.var('bad')"]
        main = f"relay.Let(bad, relay.Function({inner}, call), relay.Call(bad, {outer}))"
    return lines + [f"mod['main'] = relay.Function({outer}, {main})", "mod = relay.transform.InferType()(mod)"]


def _param_list(call: ViolatingCall, prefix: str) -> str:
    return f"[{', '.join(f'{prefix}{i.index}' for i in call.inputs)}]"


def render_violation_short(finding: Finding, config: dict, call: ViolatingCall, wrapped: bool) -> str:
    """repro.py for a disruptive finding: the violating call alone, its inputs the function's
    parameters (in a global function or closure too where `wrapped`), type-inferred, then
    as much as the finding's stage needs: the build for its executor, the run on the case's
    values. A poor diagnostic or a crash fails as TVM fails; a silent acceptance raises while
    TVM accepts the program. Nothing of hirfuzz's is in it."""
    reach = Reach.of(finding)
    body = _violation_module_lines(call, wrapped)
    if reach >= Reach.BUILD:
        body += _run_lines(config, [i.value for i in call.inputs], reach >= Reach.RUN)
    runs = reach >= Reach.RUN
    imports = [*(["import numpy as np"] if runs else []), "import tvm", "from tvm import relay",
               *(["from tvm.contrib import graph_executor"] if config["kind"] == "build" and runs else [])]
    return finish_short(finding, call, imports, body)


# --- a gradient finding's reproducer (the gradient oracle: campaign/oracles/gradient.py) --------

_GRADIENT_MAIN = """

{differs}

def main():
    stage = "lower"
    try:
        mod = tvm.relay.parse(MODULE, init_meta_table={{"relay.Constant": [relay.const(c) for c in _c]}} if _c else None)
        print(mod.astext(show_meta_data=False))
        stage = "well_formed"
        mod = relay.transform.InferType()(mod)
        stage = "passes"
        mod = differentiate(mod)
        stage = "ill_formed_after_pass"
        check_well_formed(mod)
        stage = "build"
        run = build(mod)
        if not RUN:
            print("{mark} ok")
            return 0
        stage = "run"
        runs = [run(INPUTS) for _ in range(RUNS)]
""".format(mark=MARK, differs=GRADIENT_DIFFERS) + GRADIENT_VERDICT


# each autodiff's function in passes.py, which the reproducer carries
AUTODIFF_FUNCTIONS = {Autodiff.FIRST_ORDER: "loss_and_float_gradients",
                      Autodiff.HIGHER_ORDER: "higher_order_loss_and_float_gradients"}


def render_gradient(graph: Graph, specs, finding: Finding, config: dict, inputs: list[np.ndarray], run: bool,
                    expected: dict | None, tvm_version: str | None, module_script: dict | None = None) -> str:
    """repro.py of a gradient finding: the loss program (main's float results summed, as the
    worker printed it), its autodiff (FirstOrderGradient, or the higher-order one on the
    interpreter: the configuration's executor), the result narrowed to the loss and the float
    parameters' gradients (the worker's own code), built and run; for a wrong result, the
    loss and each gradient checked against the reference's and the finite differences
    `expected` holds (see the Relax writer's render_gradient), judged where smooth."""
    autodiff = AUTODIFF_FUNCTIONS[autodiff_of(config)]
    lines = [*docstring(finding, config, tvm_version, "TVM 0.19 with Relay (python -m hirfuzz setup relay)"),
             "import os", "import sys", "", "import numpy as np", "",
             'os.environ.setdefault("TOPHUB_LOCATION", "NONE")  # building must not download tuning logs',
             "import tvm  # noqa: E402", "from tvm import relay  # noqa: E402", "",
             f"TARGET = {target_code(config['target'])}", f"OPT_LEVEL = {config['opt_level']!r}",
             f"EXECUTOR = {config['kind']!r}", f"RUN = {run!r}", "", "",
             *[part for name in ("check_well_formed", "copy_module", "with_float_gradients", autodiff)
               for part in (source_of(HERE / "passes.py", name), "", "")],
             f"differentiate = {autodiff}", ""]
    if module_script is None or "error" in module_script:
        why = (module_script or {}).get("error", "the worker printed no module")
        lines += ["", f"raise RuntimeError({('hirfuzz could not print this module: ' + why)!r})", ""]
    else:
        lines += ["", f"MODULE = {_text_literal(module_script['script'])}", "",
                  "_c = [  # the module's tensor constants: meta[relay.Constant][k]",
                  *[f"    {array_code(c)}," for c in module_script["consts"]], "]", ""]
    lines += ["INPUTS = [", *[f"    {array_code(a)}," for a in inputs], "]"]
    lines += gradient_expectation_lines(expected)
    return "\n".join(lines) + _FLATTEN + _BUILD_WITH_CREATE_EXECUTOR + _GRADIENT_MAIN


class RelayReproducerWriter(ReproducerWriter):
    render_reproducer = staticmethod(render_reproducer)
    render_short = staticmethod(render_short)
    render_violation_short = staticmethod(render_violation_short)
    render_gradient = staticmethod(render_gradient)


WRITER = RelayReproducerWriter()
