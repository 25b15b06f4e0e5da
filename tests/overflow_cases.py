"""Single-op programs whose integer results overflow in a way TVM defines (8- and 16-bit ops
wrap, shifts stay below the bit width, means truncate): the reference must compute what
TVM computes, in both dialects (tests/relax and tests/relay run them)."""
import numpy as np

from hirfuzz.core.graph import Graph, Node, Ref, TensorType

# (op, dtype, inputs, out_shape, attrs)
OVERFLOW_CASES = [
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
    # division truncates in the inputs' own dtype: a uint64 at 2**63 or above stays positive
    # (the reference once went through int64: an H100 campaign's false alarm, bitwise_not then
    # divide), and a signed quotient rounds towards zero
    ("divide", "uint64", [[2 ** 64 - 3, 2 ** 63, 7], [2, 3, 2]], None, {}),
    ("divide", "int64", [[-7, 7, -2 ** 62 - 1, 6], [2, -2, 3, -3]], None, {}),
]


def graph_of(op, dtype, values, out_shape, attrs):
    """A graph of one op on variables holding `values`, and those values as arrays."""
    g = Graph()
    arrays = [np.asarray(v, dtype=dtype) for v in values]
    for arr in arrays:
        g.add(Node(len(g.nodes), "var", [TensorType(arr.shape, dtype)]))
    shape = out_shape if out_shape is not None else arrays[0].shape
    g.add(Node(len(g.nodes), "op", [TensorType(tuple(shape), dtype)], op=op, dtype=dtype,
               inputs=[Ref(i) for i in range(len(arrays))], attrs=attrs))
    return g, arrays
