"""References that round as TVM does where rounding decides the result, against apache-tvm
0.27: a discontinuous op computed in a narrow float, whose own rounding crosses the
discontinuity."""
import numpy as np

from test_relax_int_semantics import run_both

# (a, b) in float16 whose quotient rounds up to an integer in float16 (48.9975 to 49, 9.9986
# to 10, 8.9978 to 9): TVM's floor_mod is 0 there, np.mod's (computed wider) about b
# (bench27 relax seed 16 0037, a false alarm)
QUOTIENT_ROUNDS_UP = ([28.78125, 6.7421875, 15.8515625], [0.58740234375, 0.67431640625, 1.76171875])


def test_float16_floor_mod_rounds_its_quotient_as_tvm_does(specs):
    a, b = (np.array(values, dtype="float16") for values in QUOTIENT_ROUNDS_UP)
    assert np.all(np.abs(np.mod(a, b) - b) < 0.01)  # what the reference computed before: about b
    facts, got = run_both(specs, "floor_mod", "float16", a, b)
    assert facts.stable
    np.testing.assert_allclose(got.astype("float64"), facts.value.astype("float64"), atol=1e-3)
    np.testing.assert_allclose(got.astype("float64"), 0.0, atol=1e-2)


def test_an_average_of_values_at_the_float_limit_is_not_compared(specs):
    """Two lowest float32 averaged: TVM sums them in float32 (-inf), the reference in float64
    (-3.4e38); such a value comes from a max pool's window of padding only (bench27 relax
    seed 18 0024, a false alarm). Values below the limit are compared as ever."""
    attrs = dict(kh=1, kw=2, sh=1, sw=1, pt=0, pl=0, pb=0, pr=0, dh=1, dw=1, ceil_mode=False,
                 count_include_pad=False)
    lowest = float(np.finfo("float32").min)
    facts, got = run_both(specs, "nn.avg_pool2d", "float32", [[[[lowest, lowest]]]], out_shape=(1, 1, 1, 1), **attrs)
    assert np.isneginf(got).all() and np.isfinite(facts.value).all()  # what differed
    assert not facts.stable
    facts, got = run_both(specs, "nn.avg_pool2d", "float32", [[[[1.5, 2.5]]]], out_shape=(1, 1, 1, 1), **attrs)
    assert facts.stable and np.allclose(got, facts.value)


def test_a_float_type_numpy_does_not_know_is_never_at_its_limit():
    from hirfuzz.core.reference import _at_float_limit
    assert not _at_float_limit(1e38, "float8_e4m3fn") and not _at_float_limit(1e38, "bfloat16")
    assert _at_float_limit(2e38, "float32") and not _at_float_limit(1e38, "float32")
