#!/usr/bin/python3
"""Reference values for tests/numeric/reproducible.cpp: exact sums, correctly rounded.

Input (argv[1]): sets of values, each introduced by a line "set NAME KIND N" (KIND d: double
pairs "x y" in float.hex, one per line; KIND f: float32 values widened to double, one per
line). Output (stdout), one line per set:
  d: NAME fsum(x) sqrt(fsum(x*x)) fsum(x*y) sqrt(fsum((y-x)*(y-x))) fsum(x)/n
  f: NAME the exact sum rounded to float32 (to nearest, ties to even, from the exact
     rational sum: no double rounding)
every value as float.hex. math.fsum is Python's correctly rounded sum (Shewchuk).
"""
import math
import sys
from fractions import Fraction


def round_to_float32(q):
    """The exact rational q rounded to the nearest float32 (ties to even), as a float."""
    if q == 0:
        return 0.0
    sign = -1.0 if q < 0 else 1.0
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    # 2^e <= a < 2^(e+1), adjusting the estimate
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    lsb = max(e - 23, -149)
    m = a / Fraction(2) ** lsb
    r = round(m)  # Fraction rounding: half to even
    if r * 2.0 ** lsb > 3.4028234663852886e38:
        return sign * math.inf
    return sign * math.ldexp(float(r), lsb)


def main():
    lines = open(sys.argv[1]).read().split("\n")
    i = 0
    out = []
    while i < len(lines):
        head = lines[i].split()
        i += 1
        if not head:
            continue
        assert head[0] == "set", head
        name, kind, n = head[1], head[2], int(head[3])
        body = lines[i:i + n]
        i += n
        if kind == "d":
            xs, ys = [], []
            for ln in body:
                a, b = ln.split()
                xs.append(float.fromhex(a))
                ys.append(float.fromhex(b))
            s = math.fsum(xs)
            r = [s, math.sqrt(math.fsum(x * x for x in xs)), math.fsum(x * y for x, y in zip(xs, ys)),
                 math.sqrt(math.fsum((y - x) * (y - x) for x, y in zip(xs, ys))), s / n if n else math.nan]
        else:
            q = sum((Fraction(float.fromhex(ln)) for ln in body), Fraction(0))
            r = [round_to_float32(q)]
        out.append(name + " " + " ".join(float.hex(v) for v in r))
    print("\n".join(out))


main()
