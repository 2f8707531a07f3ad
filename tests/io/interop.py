"""The h5py side of the garray::io interop test (tests/io/interop.sh).

  interop.py check DIR/cross.h5   files garray wrote: values, dtypes (complex as NumPy
                                  complex), layout attributes, user attributes
  interop.py write DIR/py.h5      a file for garray to read (same formula of the index)
  interop.py left DIR/left.h5     the file garray left open until MPI_Finalize: complete
"""
import sys

import h5py
import numpy as np


def formula(shape, dtype):
    lin = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return (lin.astype(np.float64) * 0.5 - 3.0).astype(dt)
    if dt.kind == "i":
        return (lin * 3 - 7).astype(dt)
    out = np.empty(shape, dtype=dt)  # as C++ computes it: real 0.5*lin, imaginary -(lin)*0.25
    out.real = lin.astype(np.float64) * 0.5
    out.imag = -lin.astype(np.float64) * 0.25
    return out


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def check(path):
    f = h5py.File(path, "r")
    n = 0
    for tname in ["float32", "float64", "int32", "int64", "complex64", "complex128"]:
        for nd in range(1, 5):
            shape = tuple(7 - d for d in range(nd))
            for kind in ["blocked", "slab", "irregular"]:
                d = f[f"{tname}/d{nd}_{kind}"]
                assert d.dtype == np.dtype(tname), (d.name, d.dtype)
                assert same(d[...], formula(shape, tname)), d.name
                assert d.attrs["garray_type"].decode() == tname
                assert list(d.attrs["garray_shape"]) == list(shape)
                assert d.attrs["garray_distribution"].decode() == kind
                assert len(d.attrs["garray_process_grid"]) == nd
                assert len(d.attrs["garray_ghost"]) == nd
                n += 1
    v = f["view_rev"][...]
    full = formula((6, 5), "float64")
    assert same(v, full[::-1, 1:5:2]), v
    assert f.attrs["title"].decode() == "garray interop"
    assert f.attrs["step"] == 250
    assert f["float64/d2_blocked"].attrs["dt"] == 0.125
    print(f"h5py: {n + 1} datasets of {path} match NumPy")


def write(path):
    with h5py.File(path, "w") as f:
        f["f8"] = formula((9, 7), "float64")
        f["f4"] = formula((3, 4, 5), "float32")
        f["i4"] = formula((5, 6), "int32")
        f["i8"] = formula((11,), "int64")
        f["c16"] = formula((4, 3), "complex128")
        f["c8"] = formula((6,), "complex64")
        g = f.create_group("group")
        g.create_dataset("chunked_be", data=formula((8, 5), "float64").astype(">f8"), chunks=(3, 2))
        f.attrs["title"] = "written by h5py"
        f.attrs["answer"] = np.int64(42)
        f.attrs["pi"] = 3.25
        # numpy's longdouble (x87: 80 bits in 16 bytes), beyond double's range, and one within
        f.attrs["huge"] = np.longdouble("1e400")
        f.attrs["wide"] = np.longdouble("0.5")
    print(f"h5py: wrote {path}")


def left(path):
    with h5py.File(path, "r") as f:
        if not same(f["a"][...], formula((5, 4), "float64")):
            sys.exit(f"left.h5: a is {f['a'][...]}")
    print(f"h5py: {path} is complete")


if __name__ == "__main__":
    {"check": check, "write": write, "left": left}[sys.argv[1]](sys.argv[2])
