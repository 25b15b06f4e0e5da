"""`python -m hirfuzz conformance --target`: llvm as it always was, cuda told from the workers'
handshake (one line and exit 2 without a GPU), and on a GPU the shipped specs clean on cuda."""
import subprocess
import sys

import pytest
import tvm

from conftest import ROOT, run_hirfuzz

CUDA_VISIBLE = bool(tvm.runtime.enabled("cuda") and tvm.cuda(0).exist)
NO_DEVICE = "hirfuzz conformance: no CUDA device on this machine (or the TVM under "


@pytest.mark.skipif(CUDA_VISIBLE, reason="this machine has a GPU")
def test_cuda_without_a_gpu_is_one_line():
    proc = run_hirfuzz("conformance", "--ir", "relax", "--target", "cuda", "--ops", "add", timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(NO_DEVICE), proc.stderr
    assert lines[0].endswith("was built without CUDA): nothing checked")
    assert proc.stdout == ""


@pytest.mark.skipif(CUDA_VISIBLE, reason="this machine has a GPU")
def test_the_in_process_report_on_cuda_without_a_gpu_is_one_line():
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "conformance_report.py"), "--target", "cuda",
                           "--ops", "add"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("conformance_report: no CUDA device on this machine"), proc.stderr
    assert proc.stdout == ""


def test_llvm_is_unchanged():
    proc = run_hirfuzz("conformance", "--target", "llvm", "--ops", "add,exp", "--samples", "1", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [
        "op   samples  compared  problems  dtypes",
        "add       11        11         0  int8,int16,int32,int64,uint8,uint16,uint32,uint64,float16,float32,float64",
        "exp        3         3         0  float16,float32,float64",
        "2 of 2 ops conform; 0 problems"]


@pytest.mark.parametrize("args, message", [
    (["--target", "bogus"], "hirfuzz conformance: error: --target bogus: unknown target; use llvm or cuda"),
    (["--write-targets", "x.yaml"],
     "hirfuzz conformance: error: --write-targets: needs --target cuda (llvm is the baseline the target is told from)"),
])
def test_bad_target_arguments_are_one_line(args, message):
    proc = run_hirfuzz("conformance", "--ops", "add", *args, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [message]


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA_VISIBLE, reason="no CUDA device")
def test_shipped_specs_are_clean_on_cuda(tmp_path):
    """Among them the op-dtypes CUDA cannot build (cuda-facts.md: mean int64, mod float16,
    nn.conv1d): each a failure the specs' `targets: cuda:` entries know, so none is a problem
    and nothing is left to write."""
    out = tmp_path / "cuda.yaml"
    proc = run_hirfuzz("conformance", "--target", "cuda", "--ops", "add,exp,mean,mod,nn.conv1d",
                       "--samples", "1", "--jobs", "4", "--write-targets", out, timeout=300)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr
    assert "5 of 5 ops conform; 0 problems" in proc.stdout
    assert "0 new cuda entries for 0 ops" in proc.stdout
