"""Integer semantics against TVM 0.19 (Relay): the single-op overflow cases of
tests/relax/test_relax_int_semantics.py, built and run on a Relay worker; wherever the
reference compares a result, TVM computes exactly its value."""
import tempfile
from pathlib import Path

import numpy as np

from hirfuzz.campaign.sandbox import Pool
from hirfuzz.core.calls import call_records
from hirfuzz.core.graph import Graph, Node, Ref, TensorType
from hirfuzz.core.reference import interpret
from hirfuzz.core.spec import load_specs
from hirfuzz.dialects import dialect_info
from hirfuzz.protocol import decode_array, encode_array, make_config
from relay_env import relay_interpreter

CASES = [
    ("sum", "int8", [[100, 100, 100]], (), {"axis": None, "keepdims": False}),
    ("sum", "uint16", [[60000, 60000]], (), {"axis": None, "keepdims": False}),
    ("prod", "int16", [[2 ** 10, 2 ** 10, 3]], (), {"axis": None, "keepdims": False}),
    ("cumsum", "int16", [[30000, 30000, 10]], None, {"axis": 0, "exclusive": False}),
    ("cumsum", "int8", [[100, 100, 100]], None, {"axis": 0, "exclusive": True}),
    ("cumprod", "uint8", [[16, 16, 3]], None, {"axis": 0, "exclusive": False}),
    ("add", "int8", [[120, -100], [100, -100]], None, {}),
    ("subtract", "uint8", [[1, 2], [2, 200]], None, {}),
    ("multiply", "int16", [[300, -300], [300, 300]], None, {}),
    ("square", "uint16", [[300, 1000]], None, {}),
    ("abs", "int8", [[-128, -5]], None, {}),
    ("negative", "int16", [[-32768, 5]], None, {}),
    ("mean", "uint64", [[2 ** 62 + 1, 2 ** 62 + 3]], (), {"axis": None, "keepdims": False}),
    ("mean", "int64", [[[-7, -2], [7, 2]]], (2,), {"axis": [1], "keepdims": False}),
    ("mean", "int64", [[-2 ** 62, -2 ** 62 + 1, -1]], (), {"axis": None, "keepdims": False}),
    ("left_shift", "int8", [[1, 3, -1], [7, 6, 7]], None, {}),
    ("left_shift", "uint64", [[1, 3], [63, 62]], None, {}),
    ("right_shift", "int32", [[-2 ** 31, 5], [31, 1]], None, {}),
    ("right_shift", "uint16", [[65535, 5], [15, 1]], None, {}),
    ("matmul", "int8", [[[100, 100]], [[100], [3]]], (1, 1), {}),
    ("nn.dense", "int8", [[[100, 100]], [[100, 3]]], (1, 1), {}),
]


def graph_of(op, dtype, values, out_shape, attrs):
    g = Graph()
    arrays = [np.asarray(v, dtype=dtype) for v in values]
    for arr in arrays:
        g.add(Node(len(g.nodes), "var", [TensorType(arr.shape, dtype)]))
    shape = out_shape if out_shape is not None else arrays[0].shape
    g.add(Node(len(g.nodes), "op", [TensorType(tuple(shape), dtype)], op=op, dtype=dtype,
               inputs=[Ref(i) for i in range(len(arrays))], attrs=attrs))
    return g, arrays


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
