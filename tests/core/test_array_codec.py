"""The arrays of the worker pipe (protocol.encode_array / decode_array): read back as np.load
reads them, whatever their dtype, byte order, rank or memory order."""
import base64
import io

import numpy as np
import pytest

from hirfuzz.protocol import decode_array, encode_array

ARRAYS = [np.arange(6, dtype=np.float32).reshape(2, 3), np.float64(3.5), np.array(2.0), np.zeros((0, 3), np.int8),
          np.array([True, False]), np.arange(24, dtype=">i4").reshape(2, 3, 4), np.asfortranarray(np.ones((2, 3))),
          np.array([1 + 2j], np.complex64), np.full((1,), np.nan, np.float16), np.array(["ab"]),
          np.arange(3, dtype=np.uint64), np.zeros((2, 1, 1, 3), np.int64)]


@pytest.mark.parametrize("array", ARRAYS, ids=lambda a: f"{a.dtype.str}{np.shape(a)}")
def test_an_array_decodes_as_np_load_reads_it(array):
    text = encode_array(array)
    decoded, loaded = decode_array(text), np.load(io.BytesIO(base64.b64decode(text)))
    assert decoded.dtype == loaded.dtype and decoded.shape == loaded.shape
    assert np.array_equal(decoded, loaded, equal_nan=decoded.dtype.kind in "fc")
    assert decoded.flags.writeable and decoded.flags.f_contiguous == loaded.flags.f_contiguous


def test_a_truncated_array_is_refused():
    data = base64.b64decode(encode_array(np.arange(6, dtype=np.float32)))
    with pytest.raises(ValueError):
        decode_array(base64.b64encode(data[:-4]).decode())
