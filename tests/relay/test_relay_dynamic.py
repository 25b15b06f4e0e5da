"""Dynamic shapes on Relay (dialects/relay/dynamic.py): a plan's dynamic parameters are `?`
dimensions, the VM runs the operators' shape functions, and their faults are findings;
TVM 0.19's missing shape functions are a limit, never a finding."""
import json
import subprocess

from relay_env import relay_interpreter_alone, run_in_relay
from test_relay_campaign import relay_campaign

UNIT_SCRIPT = """
import tvm
from tvm import relay
from hirfuzz.dialects.base import ExecutorCannotTake
from hirfuzz.dialects.relay.dynamic import dynamic_limits, is_dynamic, with_dynamic_params

def module(op):
    x = relay.var("x0", shape=(2, 3, 4, 4), dtype="float32")
    return relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], op(x))))

relu = with_dynamic_params(module(relay.nn.relu), {"x0"})
assert is_dynamic(relu), relu
assert "Tensor[(?, 3, 4, 4), float32]" in relu.astext(), relu.astext()
assert not is_dynamic(with_dynamic_params(module(relay.nn.relu), {"x1"}))   # another parameter
# TVM 0.19 has no shape function for sin: the module stays static
assert not is_dynamic(with_dynamic_params(module(relay.sin), {"x0"}))

# nor where the `?` would reach a function declared static: type inference lets (?, 3, 4, 4)
# through as (2, 3, 4, 4), and TVM 0.19's VM compiler fails on it ("prim_shape_fn_states")
f = relay.GlobalVar("f")
a = relay.var("a", shape=(2, 3, 4, 4), dtype="float32")
called = relay.transform.InferType()(tvm.IRModule({f: relay.Function([a], relay.nn.relu(a), a.type_annotation)}))
x = relay.var("x0", shape=(2, 3, 4, 4), dtype="float32")
called["main"] = relay.Function([x], relay.Call(f, [x]))
called = relay.transform.InferType()(called)
assert not is_dynamic(with_dynamic_params(called, {"x0"}))

def vm_build_says_limit(mod, words):  # building mod on the VM is a skip by design naming words
    try:
        with dynamic_limits(mod):
            relay.create_executor("vm", mod=mod, device=tvm.cpu(), target="llvm").evaluate()
    except ExecutorCannotTake as exc:
        assert words in str(exc), exc
    else:
        raise AssertionError("no limit said")

# a pass may bring such an operator in after lowering: the VM compiler's refusal is a limit
x = relay.var("x0", shape=(relay.Any(), 3, 4, 4), dtype="float32")
vm_build_says_limit(relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], relay.nn.lrn(x)))),
                    "cannot find ShapeFunc for nn.lrn")
# autotvm's x86 templates split static axes only: a grouped conv2d's `?` weight is a limit too
w = relay.var("x1", shape=(relay.Any(), 1, 4, 2), dtype="float32")
d = relay.var("x0", shape=(6, 5, 5, 1), dtype="float32")
conv = relay.nn.conv2d(d, w, padding=[0, 0, 0, 1], groups=5, channels=10, kernel_size=[4, 2])
vm_build_says_limit(relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([d, w], conv))),
                    "Invalid type of axis")
# the same error on a static module is no limit of dynamic shapes: it goes through
try:
    with dynamic_limits(relu):
        raise ValueError("an error of another kind")
except ValueError:
    pass
print("DYNAMIC OK")
"""


def test_a_dynamic_parameter_is_a_question_mark_dimension_where_every_operator_has_a_shape_function():
    run = run_in_relay("-c", UNIT_SCRIPT, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "DYNAMIC OK" in run.stdout


def dynamic_findings(out) -> list:
    """The folders of a campaign's findings whose reduced program keeps a dynamic parameter."""
    summary = json.loads((out / "summary.json").read_text())
    assert summary["unconfirmed"] == [], summary["unconfirmed"]
    return [out / f["path"] for f in summary["findings"]
            if (json.loads((out / f["path"] / "case.json").read_text())["lowering"].get("plan") or {}).get("dynamic_params")]


def run_alone(folder, script: str) -> subprocess.CompletedProcess:
    """A script's text run in `folder` under the Relay environment, without hirfuzz on the path."""
    python, env = relay_interpreter_alone()
    return subprocess.run([python, "-c", script], cwd=folder, capture_output=True, text=True, env=env, timeout=300)


def assert_the_shape_function_is_at_fault(folder, kernel_buffer: str):
    """repro.py alone fails at the kernel's shape assertion; with its `?` made the batch the
    inputs have, the same program runs."""
    script = (folder / "repro.py").read_text()
    assert "Tensor[(?," in script, script
    alone = run_alone(folder, script)
    assert alone.returncode == 1 and kernel_buffer in alone.stderr, alone.stdout + alone.stderr[-3000:]
    variable = next(n for n in json.loads((folder / "case.json").read_text())["graph"]["nodes"] if n["kind"] == "var")
    static = script.replace("Tensor[(?,", f"Tensor[({variable['outputs'][0]['shape'][0]},")
    ran = run_alone(folder, static)
    assert ran.returncode == 0, ran.stderr[-3000:]


def test_max_pool2d_s_shape_function_ignoring_dilation_is_found_and_reproduces_alone(tmp_path):
    # TVM 0.19's _pool2d_shape_func (python/tvm/relay/op/nn/_nn.py) computes the output size
    # without `dilation`: on a `?` batch the VM allocates that size, and the kernel's shape
    # assertion fails at run time; the static program runs
    out = tmp_path / "out"
    proc = relay_campaign("--only-ops", "nn.max_pool2d", "--ops", 1, "--iterations", 30, "--seed", 1,
                          "--gradients", 0, "--check-cases", 0, "--jobs", 1, "--out", out)
    assert proc.returncode == 0, proc.stderr
    [folder] = dynamic_findings(out)
    assert "dilation=" in (folder / "repro.py").read_text()
    assert_the_shape_function_is_at_fault(folder, "pool_max.shape")


def test_a_baseline_that_cannot_take_a_dynamic_program_is_a_skip_and_conv2d_s_shape_function_a_finding(tmp_path):
    # a grouped conv2d's `?` weight is a limit of autotvm's x86 templates: the baseline's build
    # skips it, which stopped the coordinator (KeyError 'outputs', bench29 relay seed 23);
    # conv2d's shape function on an asymmetric padding computes the wrong width
    out = tmp_path / "out"
    proc = relay_campaign("--only-ops", "nn.conv2d", "--ops", 1, "--iterations", 40, "--seed", 3,
                          "--gradients", 0, "--check-cases", 0, "--jobs", 1, "--out", out)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["skipped_by_design"].get("vm", 0) >= 1, summary["skipped_by_design"]
    statuses = [json.loads(line)["status"] for line in (out / "stats.jsonl").read_text().splitlines()]
    assert "skipped" in statuses, statuses
    [folder] = dynamic_findings(out)
    assert_the_shape_function_is_at_fault(folder, "conv2d_NCHWc")
