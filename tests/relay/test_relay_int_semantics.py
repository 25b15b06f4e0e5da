"""Integer semantics against TVM 0.19 (Relay): the single-op overflow cases of
tests/relax/test_relax_int_semantics.py, built and run on a Relay worker; wherever the
reference compares a result, TVM computes exactly its value."""
import tempfile
from pathlib import Path

import numpy as np

from hirfuzz.campaign.sandbox import Pool
from hirfuzz.core.calls import call_records
from hirfuzz.core.graph import Ref
from hirfuzz.core.reference import interpret
from hirfuzz.core.spec import load_specs
from hirfuzz.dialects import dialect_info
from hirfuzz.protocol import decode_array, encode_array, make_config
from overflow_cases import OVERFLOW_CASES, graph_of
from relay_env import relay_interpreter

CASES = OVERFLOW_CASES + [("nn.dense", "int8", [[[100, 100]], [[100, 3]]], (1, 1), {})]


def test_tvm_019_computes_what_the_reference_compares():
    specs = load_specs(dialect="relay")
    python, env = relay_interpreter()
    configs = [make_config(dialect_info("relay").baseline, "llvm", dialect="relay")]
    pool = Pool(1, Path(tempfile.mkdtemp(prefix="hirfuzz-int-")), None, None, python, env, "relay")
    pool.start()
    problems, answered = [], 0

    def judge(done):
        nonlocal answered
        for _, (op, dtype, facts), answer in done:
            answered += 1
            if not isinstance(answer, dict) or answer.get("status") == "error":
                problems.append(f"{op} [{dtype}]: {answer}")
                continue
            got = decode_array(answer["outputs"][0])
            if got.dtype != facts.value.dtype or not np.array_equal(got, facts.value):
                problems.append(f"{op} [{dtype}]: TVM {got!r}, reference {facts.value!r}")
    try:
        for i, (op, dtype, values, out_shape, attrs) in enumerate(CASES):
            g, arrays = graph_of(op, dtype, values, out_shape, attrs)
            facts = interpret(g, specs, dict(enumerate(arrays)))[Ref(len(arrays))]
            assert facts.stable and not facts.failed, (op, dtype)
            request = {"case": i, "graph": g.to_json(), "calls": call_records(g, specs), "configs": configs,
                       "run": True, "inputs": [encode_array(a) for a in arrays]}
            while not pool.idle():
                judge(pool.wait())
            pool.idle()[0].submit((op, dtype, facts), request, 120.0)
        while pool.in_flight():
            judge(pool.wait())
    finally:
        pool.close()
    assert answered == len(CASES)
    assert not problems, "\n".join(problems)
