"""Relay spec conformance: every op spelled for Relay agrees with TVM 0.19, built and run
there, on sampled single-op programs (python -m hirfuzz conformance --ir relay)."""
import pytest

from conftest import SPECS, run_hirfuzz
from hirfuzz.core.spec import load_specs
from relay_env import relay_interpreter


def conformance(*args, env=None):
    python, extra = relay_interpreter()
    return run_hirfuzz("conformance", "--ir", "relay", "--tvm-python", python, *args, env=extra)


@pytest.mark.slow  # minutes on 2 cores: a wrong spelling is caught quickly by the test below; run when specs change
def test_every_relay_op_conforms_on_the_vm():
    proc = conformance("--samples", 1, "--jobs", 2)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr
    assert "problems" in proc.stdout


@pytest.mark.slow
def test_every_relay_op_conforms_on_every_executor():
    proc = conformance("--samples", 4, "--jobs", 2, "--executors", "vm,build,graph,debug", "--seed", 1)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr


def test_a_wrong_relay_spelling_is_a_problem_naming_the_op(tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    for f in SPECS.glob("*.yaml"):
        (specs / f.name).write_text(f.read_text())
    binary = specs / "binary.yaml"
    text = binary.read_text()
    start = text.index("  - name: maximum\n")
    relay_line = text.index("      relay:", start)
    end = text.index("\n", relay_line)
    binary.write_text(text[:relay_line] + "      relay: {op: minimum, dtypes: [int32, float32]}" + text[end:])
    proc = conformance("--spec-dir", specs, "--ops", "maximum,add", "--samples", 2)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert any(ln.startswith("maximum[") and " on vm: result 0: " in ln for ln in lines), proc.stdout
    assert "1 of 2 ops conform" in proc.stdout


def test_an_unknown_relay_op_is_one_clear_error():
    proc = conformance("--ops", "no_such_op")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "no relay spelling for no_such_op" in proc.stderr


def test_at_least_110_ops_are_spelled_for_relay():
    specs = load_specs(dialect="relay")
    assert len(specs.names()) >= 110, sorted(specs.names())


def test_cuda_under_relays_cpu_only_tvm_is_one_line():
    # the registry's TVM 0.19 has no CUDA: its workers' handshake says so
    proc = conformance("--target", "cuda", "--ops", "add")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("hirfuzz conformance: no CUDA device on this machine (or the TVM under ")
    assert lines[0].endswith("was built without CUDA): nothing checked")
