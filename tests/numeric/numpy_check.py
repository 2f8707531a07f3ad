#!/usr/bin/python3
"""Checks garray results against NumPy (run by test_numpy_compat with /usr/bin/python3).

Input: a file of JSON lines written by rank 0 of tests/numeric/numpy_compat.cpp, one per
case: {"op": ..., "args": {...}, "x": array, "y": array, "got": array or scalar}, arrays as
{"dtype": ..., "shape": [...], "data": [...]} (complex elements as [re, im]). For each case
this script computes NumPy's own result from the same inputs and compares: dtype and shape
exactly, integers and creation routines bitwise, floating point within a tolerance of the
dtype. Exit status 0 when every case agrees; the disagreements are printed.
"""
import json
import sys

import numpy as np

DT = {"float32": np.float32, "float64": np.float64, "int32": np.int32, "int64": np.int64,
      "complex64": np.complex64, "complex128": np.complex128, "bool": np.bool_}


def arr(o):
    if not isinstance(o, dict):
        return o
    dt = np.dtype(DT[o["dtype"]])
    d = o["data"]
    if dt.kind == "c":
        d = [complex(re, im) for re, im in d]
    return np.array(d, dtype=dt).reshape(o["shape"])


def scal(o, dtype):
    dt = np.dtype(DT[dtype])
    if dt.kind == "c":
        return dt.type(complex(o[0], o[1]))
    return dt.type(o)


def view_index(items):
    """A view as a tuple of ints (dropped dimensions) and [start, stop, step] slices (stop
    null: past the beginning)."""
    return tuple(i if isinstance(i, int) else slice(i[0], i[1], i[2]) for i in items)


def expected(c):
    op, a = c["op"], c.get("args", {})
    x = arr(c["x"]) if "x" in c else None
    y = arr(c["y"]) if "y" in c else None
    dt = DT.get(a.get("dtype", ""), None)
    if op == "py":  # NumPy statements over x, y, z that set r (tests/numeric/numpy_broadcast.cpp)
        env = {"np": np, "x": x, "y": y, "z": arr(c["z"]) if "z" in c else None}
        with np.errstate(all="ignore"):
            exec(a["code"], env)  # noqa: S102 (the test's own case file)
        return env["r"]
    if op == "zeros": return np.zeros(a["shape"], dtype=dt)
    if op == "ones": return np.ones(a["shape"], dtype=dt)
    if op == "full": return np.full(a["shape"], a["value"], dtype=dt)
    if op == "empty": return np.empty(a["shape"], dtype=dt)
    if op == "zeros_like": return np.zeros_like(x)
    if op == "ones_like": return np.ones_like(x)
    if op == "full_like": return np.full_like(x, a["value"])
    if op == "empty_like": return np.empty_like(x)
    if op == "arange": return np.arange(a["start"], a["stop"], a["step"], dtype=dt)
    if op == "linspace": return np.linspace(a["start"], a["stop"], a["num"], endpoint=a["endpoint"], dtype=dt)
    if op == "eye": return np.eye(a["n"], a["m"], k=a["k"], dtype=dt)
    if op == "astype":
        with np.errstate(all="ignore"):
            import warnings
            warnings.simplefilter("ignore")
            return x.astype(dt)
    if op == "cast_to_int64":  # astype<int64>(cast<via>(x)): bool and unsigned casts
        return x.astype(np.dtype(a["via"])).astype(np.int64)
    if op == "assign_expr":  # a = x * 2 + y (a of dtype, same shape)
        r = np.empty(x.shape, dtype=dt)
        r[...] = x * x.dtype.type(2) + y
        return r
    if op == "assign_view":  # a = x[::-1] (reversed along every axis)
        r = np.empty(x.shape, dtype=dt)
        r[...] = x[tuple(slice(None, None, -1) for _ in x.shape)]
        return r
    if op == "assign_copy":  # a = y (another array: elements copied)
        r = np.empty(y.shape, dtype=dt)
        r[...] = y
        return r
    if op == "assign_alias":  # x = x[::-1] on the same array: NumPy reads first
        r = x.copy()
        r[...] = r[::-1]
        return r
    with np.errstate(all="ignore"):
        if op == "add": return x + y
        if op == "sub": return x - y
        if op == "mul": return x * y
        if op == "div": return x / y
        if op == "minimum": return np.minimum(x, y)
        if op == "maximum": return np.maximum(x, y)
        if op == "min_axis": return np.min(x, axis=a["axis"])
        if op == "max_axis": return np.max(x, axis=a["axis"])
        s = a.get("s")
        if isinstance(s, list):
            s = complex(s[0], s[1])
        if op == "mul_scalar": return x * s
        if op == "add_scalar": return x + s
        if op == "scalar_div": return s / (x * x + 1)
    if op == "str":  # str() of a view of x under print options (tests/array/print.cpp)
        v = x[view_index(a["view"])] if "view" in a else x
        with np.printoptions(**a.get("options", {})):
            return str(v)
    if op == "sum": return np.sum(x)
    if op == "prod": return np.prod(x)
    if op == "mean": return np.mean(x)
    if op == "mean_axis": return np.mean(x, axis=a["axis"])
    if op == "sum_axis": return np.sum(x, axis=a["axis"])
    if op == "var": return np.var(x, ddof=a["ddof"])
    if op == "std": return np.std(x, ddof=a["ddof"])
    if op == "argmax": return np.argmax(x)
    if op == "argmin": return np.argmin(x)
    if op == "any": return np.any(x)
    if op == "all": return np.all(x)
    if op == "count_nonzero": return np.count_nonzero(x)
    with np.errstate(all="ignore"):  # NaN operands
        if op == "min": return np.min(x)
        if op == "max": return np.max(x)
    r = expected_scans(op, a, c, x)
    if r is not None:
        return r
    raise ValueError("unknown op " + op)


# ---- scans and axis reductions (tests/numeric/numpy_scans.cpp) --------------------------
def expected_scans(op, a, c, x):
    """cumsum/cumprod (axis absent: flattened) and the axis reductions; "as_bool": the
    operand is x != 0 as a bool array (garray: a comparison expression)."""
    if x is not None and c.get("as_bool"):
        x = x.astype(np.bool_)
    ax = a.get("axis")
    import warnings
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if op == "cumsum": return np.cumsum(x, axis=ax)
        if op == "cumprod": return np.cumprod(x, axis=ax)
        if op == "argmax_axis": return np.argmax(x, axis=ax)
        if op == "argmin_axis": return np.argmin(x, axis=ax)
        if op == "var_axis": return np.var(x, axis=ax, ddof=a["ddof"])
        if op == "std_axis": return np.std(x, axis=ax, ddof=a["ddof"])
        if op == "count_nonzero_axis": return np.asarray(np.count_nonzero(x, axis=ax), dtype=np.int64)
        # garray has no bool element type: any/all along an axis give int32 0/1
        if op == "any_axis": return np.any(x, axis=ax).astype(np.int32)
        if op == "all_axis": return np.all(x, axis=ax).astype(np.int32)
    return None


def tol(dt):
    """Relative and absolute tolerance of a floating result (sums in another order)."""
    return 1e-4 if np.dtype(dt) in (np.float32, np.complex64) else 1e-10


def compare(c, want):
    got = c["got"]
    if isinstance(got, str):  # printed text: identical, character for character
        return got == want, f"got\n{got}\nnumpy\n{want}"
    exact = c.get("exact", False)
    if isinstance(got, dict):
        g = arr(got)
        w = np.asarray(want)
        if c["op"] in ("empty", "empty_like"):
            return g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        if g.dtype != w.dtype or g.shape != w.shape:
            return False, f"dtype/shape {g.dtype}{g.shape} vs numpy {w.dtype}{w.shape}"
        if w.dtype.kind in "fc" and not exact:
            ok = np.allclose(g, w, rtol=tol(w.dtype), atol=tol(w.dtype), equal_nan=True)
        else:
            ok = np.array_equal(g, w, equal_nan=w.dtype.kind in "fc")
        return ok, f"got {g!r}\nnumpy {w!r}"
    w = np.asarray(want)
    dtype = c.get("got_dtype")
    if dtype is not None and np.dtype(DT[dtype]) != w.dtype:
        return False, f"result dtype {dtype} vs numpy {w.dtype}"
    g = scal(got, dtype) if dtype else got
    if w.dtype.kind in "fc":
        ok = np.allclose(g, w, rtol=tol(w.dtype), atol=tol(w.dtype), equal_nan=True)
    else:
        ok = g == w
    return bool(ok), f"got {g!r} numpy {w!r}"


def main():
    bad = 0
    n = 0
    with open(sys.argv[1]) as f:
        for line in f:
            if not line.strip():
                continue
            c = json.loads(line)
            n += 1
            try:
                ok, why = compare(c, expected(c))
            except Exception as e:  # noqa: BLE001
                ok, why = False, repr(e)
            if not ok:
                bad += 1
                if bad <= 20:
                    print("MISMATCH", c["op"], c.get("args"), c.get("x", {}).get("dtype") if isinstance(c.get("x"), dict) else "", why)
    print(f"numpy_check: {n} cases, {bad} mismatches")
    return 1 if bad or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
