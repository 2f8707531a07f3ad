#!/usr/bin/env python3
"""NumPy reference for bench_laplace: PerformancePython's laplace.py, numeric variant.

    /usr/bin/python3 bench/laplace/laplace_numpy.py --sizes 2000,4000 --iters 8

Prints ms per iteration (median over iterations) and the final error, to compare with
bench_laplace's numpy variant at np=1 (same grid, same zero interior, same boundary).
"""
import argparse
import time

import numpy


def bc(x, y):
    return x**2 - y**2


def solve(n, iters):
    dx = dy = 1.0 / (n - 1)
    u = numpy.zeros((n, n), "d")
    x = numpy.arange(0.0, 1.0 + dx * 0.5, dx)
    y = numpy.arange(0.0, 1.0 + dy * 0.5, dy)
    u[0, :] = bc(0.0, y)
    u[-1, :] = bc(1.0, y)
    u[:, 0] = bc(x, 0.0)
    u[:, -1] = bc(x, 1.0)
    dx2, dy2 = dx * dx, dy * dy
    dnr_inv = 0.5 / (dx2 + dy2)
    times, err = [], 0.0
    for _ in range(iters):
        t0 = time.perf_counter()
        old_u = u.copy()
        u[1:-1, 1:-1] = ((u[0:-2, 1:-1] + u[2:, 1:-1]) * dy2 + (u[1:-1, 0:-2] + u[1:-1, 2:]) * dx2) * dnr_inv
        err = numpy.sqrt(numpy.sum((u - old_u) ** 2))
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2] * 1e3, err


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2000,4000")
    ap.add_argument("--iters", type=int, default=8)
    ap.add_argument("--csv", default="", help="append rows (n,np,contender,ms_per_iter,...) to this CSV")
    a = ap.parse_args()
    for n in (int(s) for s in a.sizes.split(",")):
        ms, err = solve(n, a.iters)
        print(f"n={n} numpy-python ms/iter {ms:.3f} error {err:.17g} (numpy {numpy.__version__})")
        if a.csv:
            with open(a.csv, "a") as f:
                f.write(f"{n},1,NumPy,{ms},,,{err:.17g},\n")


if __name__ == "__main__":
    main()
