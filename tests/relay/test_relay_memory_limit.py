"""--max-memory with Relay on TVM 0.19, for real: a bound on each worker's resident memory too
small to start is named, and a case that takes a worker past it is the bound's doing, never a
crash finding."""
import re

from hirfuzz.campaign.coordinator import Campaign, Settings
from hirfuzz.campaign.judge import Status
from hirfuzz.campaign.sandbox import Death, Worker
from hirfuzz.core.spec import load_specs

from relay_env import relay_interpreter
from test_relay_campaign import relay_campaign


def test_a_limit_too_small_for_relay_to_start_is_named(tmp_path):
    proc = relay_campaign("--max-memory", 100, "--iterations", 1, "--ops", 3, "--jobs", 1, "--out", tmp_path / "out")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert re.fullmatch(r"hirfuzz: error: --max-memory 100: too small for a worker to start \(.*relay on TVM 0\.19"
                        r".* takes \d+ MB just to start\); use --max-memory \d+ or more", proc.stderr.strip()), proc.stderr


def test_relay_past_its_bound_is_out_of_memory_not_a_crash(tmp_path):
    python, env = relay_interpreter()
    w = Worker(tmp_path / "start.log", python=python, extra_env=env, dialect="relay")
    try:
        w.start()
        limit = -(-w.hello["rss_peak_kb"] // 1024) + 10  # starts; too little to build
    finally:
        w.close()
    settings = Settings(out=str(tmp_path / "out"), iterations=0, ops=6, dialect="relay", tvm_python=python,
                        tvm_env=env, max_memory_mb=limit, seed=1)
    host = Campaign(settings, load_specs(dialect="relay"), progress=False).reductions.host
    cases = [host.make_case(i) for i in range(2)]  # seed 1's first cases: TVM builds them without a limit
    w = Worker(tmp_path / "worker.log", max_memory_mb=limit, python=python, extra_env=env, dialect="relay")
    try:
        answers = [w.run_one(case.request, timeout_s=120) for case in cases for _ in range(2)]
    finally:
        w.close()
    for case, answer in zip([c for c in cases for _ in range(2)], answers):
        outcome = host.classify(case, answer)
        said = answer.describe() if isinstance(answer, Death) else answer
        assert isinstance(answer, Death) and answer.reason == "memory", said
        assert outcome.status is Status.OUT_OF_MEMORY and outcome.finding is None, said
