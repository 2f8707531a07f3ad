#!/usr/bin/env python3
"""NumPy reference for bench_laplace: PerformancePython's laplace.py, numeric variant.

    /usr/bin/python3 bench/laplace/laplace_numpy.py --sizes 2000,4000 --iters 10 --repeat 5

Prints ms per iteration and the final error, to compare with bench_laplace's numpy variant
at np=1 (same grid, same zero interior, same boundary). The statistic is bench_laplace's:
per solve (--iters steps from the initial field, the first step's page faults included),
the whole loop's time divided by the steps; then the median over --repeat solves.
"""
import argparse
import os
import statistics
import time

import numpy

# bench_laplace's CSV header: rows appended here carry the same columns
CSV_HEADER = ("n,np,contender,ms_per_iter,ratio_to_mpi,ratio_to_serial,error,late_windows,paired_ratio_to_mpi,"
              "paired_ratio_to_hand_same_layout")


def bc(x, y):
    return x**2 - y**2


def solve(n, iters):
    """One solve from the initial field: (ms per iteration over the whole loop, final error)."""
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
    err = 0.0
    t0 = time.perf_counter()
    for _ in range(iters):
        old_u = u.copy()
        u[1:-1, 1:-1] = ((u[0:-2, 1:-1] + u[2:, 1:-1]) * dy2 + (u[1:-1, 0:-2] + u[1:-1, 2:]) * dx2) * dnr_inv
        err = numpy.sqrt(numpy.sum((u - old_u) ** 2))
    return (time.perf_counter() - t0) * 1e3 / iters, err


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2000,4000")
    ap.add_argument("--iters", type=int, default=10, help="steps per solve (bench_laplace's default)")
    ap.add_argument("--repeat", type=int, default=5, help="solves per size, median reported (bench_laplace's default)")
    ap.add_argument("--csv", default="", help="append rows (n,np,contender,ms_per_iter,...) to this CSV")
    a = ap.parse_args()
    if a.iters < 1 or a.repeat < 1:
        ap.error("--iters and --repeat must be at least 1")
    for n in (int(s) for s in a.sizes.split(",")):
        runs = [solve(n, a.iters) for _ in range(a.repeat)]
        ms = statistics.median(r[0] for r in runs)
        err = runs[-1][1]
        print(f"n={n} numpy-python ms/iter {ms:.3f} (median of {a.repeat} solves) error {err:.17g} "
              f"(numpy {numpy.__version__})")
        if a.csv:
            fresh = not os.path.exists(a.csv) or os.path.getsize(a.csv) == 0
            with open(a.csv, "a") as f:
                if fresh:
                    f.write(CSV_HEADER + "\n")
                f.write(f"{n},1,NumPy,{ms},,,{err:.17g},,,\n")


if __name__ == "__main__":
    main()
