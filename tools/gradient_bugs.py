"""The TVM autodiff bugs tools/gradient_check.py found (issue 27; take_mode_ignored found beside
it, reading the code it pointed at), each as its minimal
program: relax.transform.Gradient("main"), built on llvm, main_adjoint run, and TVM's
gradient printed beside the true one (worked out by hand in each docstring), or the crash.
Needs only tvm (apache-tvm 0.27) and numpy:

    python tools/gradient_bugs.py            # every bug
    python tools/gradient_bugs.py cumsum     # the bugs whose name holds "cumsum"

Line numbers are apache/tvm main at 5d4dc87 (the same code as apache-tvm 0.27).
"""
from __future__ import annotations

import sys

import numpy as np
import tvm
from tvm import relax


def program(params: list[tuple[str, tuple, str]], body) -> tvm.IRModule:
    """main(params) in one dataflow block returning sum(body(*params))."""
    variables = [relax.Var(name, relax.TensorType(shape, dtype)) for name, shape, dtype in params]
    bb = relax.BlockBuilder()
    with bb.function("main", variables):
        with bb.dataflow():
            value = bb.emit(body(*variables))
            loss = bb.emit_output(relax.op.sum(value))
        bb.emit_func_output(loss)
    return bb.get()


def adjoint(mod: tvm.IRModule, *inputs: np.ndarray, require_grads=None):
    """TVM's gradients of main's parameters (those of `require_grads`, by position)."""
    params = mod["main"].params
    wanted = [params[i] for i in require_grads] if require_grads is not None else None
    grad_mod = relax.transform.Gradient("main", require_grads=wanted)(mod)
    vm = relax.VirtualMachine(relax.build(grad_mod, target="llvm"), tvm.cpu())
    _, grads = vm["main_adjoint"](*[tvm.runtime.tensor(x) for x in inputs])
    return [g.numpy() for g in grads]


def cumsum_exclusive():
    """sum(cumsum(x, exclusive=True)) for x = (x0, x1, x2) is 2*x0 + x1: gradient (2, 1, 0).
    TVM returns the inclusive cumsum's (3, 2, 1): cumsum_grad ignores `exclusive`
    (python/tvm/relax/op/_op_gradient.py:837)."""
    mod = program([("x", (3,), "float64")], lambda x: relax.op.cumsum(x, axis=0, exclusive=True))
    return adjoint(mod, np.array([1.0, 2.0, 3.0])), [np.array([2.0, 1.0, 0.0])]


def where_broadcast():
    """sum(where(c, x, y)) with x of shape (3,) broadcast to (2, 3): x's gradient is the count
    of True per column, shape (3,). TVM returns where(c, 1, 0), shape (2, 3): where_grad does
    not collapse_sum_to the value's own shape (_op_gradient.py:928-929)."""
    mod = program([("c", (2, 3), "bool"), ("x", (3,), "float64"), ("y", (2, 3), "float64")],
                  lambda c, x, y: relax.op.where(c, x, y))
    cond = np.array([[True, False, True], [False, True, True]])
    got = adjoint(mod, cond, np.ones(3), np.ones((2, 3)), require_grads=[1, 2])
    return got, [np.array([1.0, 1.0, 2.0]), (~cond).astype("float64")]


def max_pool_overlap():
    """max_pool2d of [5, 1, 3] with pool 2, stride 1: windows (5, 1) and (1, 3), sum 8, gradient
    (1, 0, 1). TVM returns the input's values or uninitialised memory at some elements: topi's
    pool_grad bounds a window's index below only (include/tvm/topi/nn/pooling.h:151-160), so
    where an element's window index (i + pad) / stride - w passes the output (overlapping
    windows, as here, or rows left over after padding) it reads past the argmax buffer and
    the output's gradient."""
    mod = program([("x", (1, 1, 1, 3), "float64")],
                  lambda x: relax.op.nn.max_pool2d(x, pool_size=(1, 2), strides=(1, 1)))
    return adjoint(mod, np.array([[[[5.0, 1.0, 3.0]]]])), [np.array([[[[1.0, 0.0, 1.0]]]])]


def avg_pool_ceil_divisor():
    """avg_pool2d of [1, 2, 3, 4] with pool 3, stride 3, ceil_mode and count_include_pad: the
    forward takes [1, 2, 3] / 3 and [4] / 1 (sum 6), so the gradient is (1/3, 1/3, 1/3, 1).
    TVM's is 1/3 everywhere: topi's avg pool_grad divides by the whole pool with
    count_include_pad (include/tvm/topi/nn/pooling.h:192), where the forward divides a window
    ceil_mode cuts short by its part inside the padded input."""
    mod = program([("x", (1, 1, 1, 4), "float64")],
                  lambda x: relax.op.nn.avg_pool2d(x, (1, 3), (1, 3), ceil_mode=True, count_include_pad=True))
    return adjoint(mod, np.array([[[[1.0, 2.0, 3.0, 4.0]]]])), [np.array([[[[1 / 3, 1 / 3, 1 / 3, 1.0]]]])]


def take_negative_axis():
    """sum(take(x, [2, 0], axis=-2)) for x of shape (3, 2): gradient rows 0 and 2 ones, row 1
    zeros. TVM's take_backward legalization (python/tvm/relax/transform/legalize_ops/grad.py:
    163-164 and 192) compares loop positions with the negative axis unnormalised: wrong
    values, and writes out of bounds (a larger case dies with "malloc(): invalid next size")."""
    mod = program([("x", (3, 2), "float64"), ("i", (2,), "int32")],
                  lambda x, i: relax.op.take(x, i, axis=-2))
    got = adjoint(mod, np.arange(6.0).reshape(3, 2), np.array([2, 0], "int32"), require_grads=[0])
    return got, [np.array([[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]])]


def take_mode_ignored():
    """sum(take(x, [5, 1], mode="wrap")) for x of 4: index 5 wraps to 1, gradient (0, 2, 0, 0)
    (with mode="clip" it clips to 3: (0, 1, 0, 1)). TVM gives (0, 1, 0, 0) either way: take_grad
    passes no mode to take_backward (_op_gradient.py:896), whose legalization indexes with the
    index as it is, writing the out-of-range one past the buffer. hirfuzz's take spec keeps
    indices in range, so gradient_check.py cannot draw this one: found reading take_backward."""
    mod = program([("x", (4,), "float64"), ("i", (2,), "int32")],
                  lambda x, i: relax.op.take(x, i, axis=0, mode="wrap"))
    got = adjoint(mod, np.arange(4.0), np.array([5, 1], "int32"), require_grads=[0])
    return got, [np.array([0.0, 2.0, 0.0, 0.0])]


def triu_partials():
    """Any triu: Gradient fails with "partials number != inputs number": triu_grad returns one
    partial (_op_gradient.py:436) for triu's two arguments (x, k), which
    src/relax/transform/gradient.cc:402 checks."""
    mod = program([("x", (3, 3), "float64")], lambda x: relax.op.triu(x, 0))
    return adjoint(mod, np.ones((3, 3))), [np.triu(np.ones((3, 3)))]


def conv2d_dilation():
    """Any dilated conv2d (here stride 1): Gradient fails ("Conv2dTranspose expects the output
    padding less than the strides"), or, with other strides, returns the data's gradient in the
    wrong shape: conv2d_grad's output_padding uses the filter size, not the dilated one
    (_op_gradient.py:1201-1202)."""
    mod = program([("x", (1, 1, 5, 5), "float64"), ("w", (1, 1, 2, 2), "float64")],
                  lambda x, w: relax.op.nn.conv2d(x, w, dilation=(2, 2)))
    ones = np.ones((1, 1, 5, 5))
    expected_x = np.zeros((1, 1, 5, 5))
    for i in range(3):
        for j in range(3):
            expected_x[0, 0, i:i + 3:2, j:j + 3:2] += 1.0   # w is ones: each tap adds 1
    return adjoint(mod, ones, np.ones((1, 1, 2, 2))), [expected_x, np.full((1, 1, 2, 2), 9.0)]


def take_indices_rank():
    """take with 2-D (or 0-D) indices: Gradient succeeds, and building main_adjoint fails on a
    bare AssertionError: take_backward's legalization asserts 1-D indices
    (legalize_ops/grad.py:178) though relax.take takes any rank."""
    mod = program([("x", (4,), "float64"), ("i", (2, 2), "int32")], lambda x, i: relax.op.take(x, i, axis=0))
    got = adjoint(mod, np.arange(4.0), np.array([[0, 1], [3, 3]], "int32"), require_grads=[0])
    return got, [np.array([1.0, 1.0, 0.0, 2.0])]


def permute_dims_rank0():
    """permute_dims(x, axes=[]) of a rank-0 x: Gradient fails with "Index -2 out of bounds 0":
    SimplifyGradient's IsTransposeOp reads axes[ndim - 2] for ndim 0
    (src/relax/transform/gradient_simplifier.cc:105)."""
    mod = program([("x", (), "float64")], lambda x: relax.op.permute_dims(x, axes=[]))
    return adjoint(mod, np.array(1.5)), [np.array(1.0)]


BUGS = [cumsum_exclusive, where_broadcast, max_pool_overlap, avg_pool_ceil_divisor, take_negative_axis,
        take_mode_ignored, triu_partials, conv2d_dilation, take_indices_rank, permute_dims_rank0]


def main(argv: list[str]) -> int:
    chosen = [bug for bug in BUGS if not argv or any(word in bug.__name__ for word in argv)]
    for bug in chosen:
        print(f"== {bug.__name__}: {bug.__doc__.splitlines()[0]}")
        try:
            got, expected = bug()
        except Exception as exc:  # noqa: BLE001 - the crash is what the bug is
            lines = str(exc).strip().splitlines()
            print(f"   TVM fails: {type(exc).__name__}: {lines[-1] if lines else '(no message)'}")
            continue
        for g, e in zip(got, expected):
            same = g.shape == e.shape and np.allclose(g, e)
            print(f"   {'right' if same else 'WRONG'}: TVM {g.tolist()}  expected {e.tolist()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
