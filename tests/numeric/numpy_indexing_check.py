#!/usr/bin/python3
"""Checks garray's advanced indexing against NumPy (run by test_numpy_indexing with
/usr/bin/python3). Input: JSON lines written by rank 0 of tests/numeric/numpy_indexing.cpp,
one per case: {"op", "args": {"view": [[start, stop, step], ...], "s": scalar}, "x": base
array, "idx": index array, "mask": int32 0/1 array, "y": values, "got": garray's result}.
The view is taken of x as NumPy would (x[::-1, :] ...); each op is recomputed with NumPy's
own function and compared exactly (dtype, shape, values) by numpy_check.compare.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_check as nc  # noqa: E402


def expected(c):
    op, a = c["op"], c.get("args", {})
    x = nc.arr(c["x"])
    view = nc.view_index(a["view"]) if "view" in a else tuple()
    idx = nc.arr(c["idx"]) if "idx" in c else None
    mask = nc.arr(c["mask"]).astype(bool) if "mask" in c else None
    y = nc.arr(c["y"]) if "y" in c else None
    s = a.get("s")
    if isinstance(s, list):
        s = complex(s[0], s[1])
    xv = x[view]
    if op == "take":
        if "idx_view" in c:
            idx = idx[nc.view_index(c["idx_view"])]
        return np.take(xv, idx)
    if op == "take_axis":
        return np.take(xv, idx, axis=a["axis"])
    if op == "put":
        r = x.copy()
        v = r[view].copy()
        np.put(v, idx, y if y is not None else s)
        r[view] = v
        return r
    if op == "masked_select":
        return xv[mask]
    if op == "select_positive":
        return xv[xv > 0]
    if op == "where_int":
        return np.where(xv > 0, 1, -1)
    if op == "where_abs":
        return np.where(xv > 0, xv, 0 - xv)
    if op == "place":
        r = x.copy()
        v = r[view].copy()
        np.place(v, mask, y)
        r[view] = v
        return r
    if op == "assign_where":
        r = x.copy()
        v = r[view]
        v[mask] = s
        return r
    # the rows of the user guide's table
    if op == "compress_negative":
        return np.compress(xv < 0, xv)
    if op == "where_positive":
        return np.where(xv > 0, xv, 0)
    if op == "zero_negative":
        r = x.copy()
        r[r < 0] = 0
        return r
    if op == "place_above5":
        r = x.copy()
        np.place(r, r > 5, y)
        return r
    raise ValueError("unknown op " + op)


def main():
    bad = n = 0
    with open(sys.argv[1]) as f:
        for line in f:
            if not line.strip():
                continue
            c = json.loads(line)
            n += 1
            try:
                ok, why = nc.compare(c, expected(c))
            except Exception as e:  # noqa: BLE001
                ok, why = False, repr(e)
            if not ok:
                bad += 1
                if bad <= 20:
                    print("MISMATCH", c["op"], c.get("args"), c["x"]["dtype"], why)
    print(f"numpy_indexing_check: {n} cases, {bad} mismatches")
    return 1 if bad or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
