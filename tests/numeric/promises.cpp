// Three promises of docs/semantics.md that had no test able to fail when they broke:
//
//  1. Replicated arrays in the numeric layer beyond full reductions and assign_reduce
//     (semantics.md "Atomicity", **Replicated arrays**: a write goes to every copy, the copies
//     are identical; "Reductions": a replicated first operand is counted once, rank 0's copy;
//     the cumsum row: the result is distributed as x when x is a whole array): expressions
//     with replicated operands into blocked outputs, replicated outputs computed from blocked
//     operands (also through views, compound assignment and an aliasing view), axis
//     reductions and scans of replicated arrays. Every rank computes the serial reference;
//     each rank's own copy is read through access(), and the copies are compared bitwise.
//  2. Scans along an axis that no rank boundary splits give NumPy's bits (the cumsum row:
//     "floating point: offset + local prefix, NumPy's bits when the axis is not split"):
//     order-sensitive values (1e16, 1, -1e16 mixed), compared with == to the sequential
//     loop out[k] = out[k-1] + x[k] (np.add.accumulate's order).
//  3. Fetch once under 2-d cuts (the broadcasting row: "A broadcast operand is read in place
//     or fetched once per rank and distinct piece of it"): the bytes gets move are exactly
//     the remote elements each rank needs, once, when its piece is cut along both dimensions
//     by other operands' owners (a row broadcast down the rows, a column across the columns).
//
// Values are chosen so that every comparison can be exact: dyadic numbers (exact sums and
// products in any order) where only the values matter, order-sensitive sums where the order
// is the promise. Every test runs at any rank count (ranks owning nothing included) and on
// every window kind.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <garray/garray.hpp>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "support/test_support.hpp"

namespace {

using garray::Index;
using garray::_;
using garray::idx;
using garray::range;
using D1 = garray::Distribution<1>;
using D2 = garray::Distribution<2>;
using D3 = garray::Distribution<3>;

// ---- helpers -------------------------------------------------------------------------------

/// Calls f(i) for every index i of box b, in row-major order.
template <std::size_t N, class F>
void for_each_index(const garray::Box<N>& b, F&& f) {
  if (b.empty()) return;
  garray::Shape<N> i = b.lo;
  while (true) {
    f(static_cast<const garray::Shape<N>&>(i));
    std::size_t d = N;
    while (d > 0) {
      --d;
      if (++i[d] < b.hi[d]) break;
      i[d] = b.lo[d];
      if (d == 0) return;
    }
  }
}

template <std::size_t N>
garray::Box<N> whole(const garray::Shape<N>& sh) {
  garray::Box<N> b;
  b.hi = sh;
  return b;
}

template <std::size_t N>
Index flat_of(const garray::Shape<N>& i, const garray::Shape<N>& strides) {
  Index f = 0;
  for (std::size_t d = 0; d < N; ++d) f += i[d] * strides[d];
  return f;
}

/// Every rank writes the elements of its block (a replicated array: its whole copy) from the
/// row-major vector v, then sync(). Collective.
template <class T, std::size_t N>
void load_flat(garray::GlobalArray<T, N>& a, const std::vector<T>& v) {
  const auto st = garray::row_major_strides(a.shape());
  {
    auto blk = a.access();
    auto& view = blk.view();
    for_each_index<N>(blk.box(), [&](const garray::Shape<N>& i) {
      view(i) = v[static_cast<std::size_t>(flat_of<N>(i, st))];
    });
  }
  a.sync();
}

/// This rank's block read through access(), row-major (a replicated array: its own copy).
template <class T, std::size_t N>
std::vector<T> own_block(garray::GlobalArray<T, N>& a) {
  std::vector<T> v;
  auto blk = a.access();
  const auto& view = blk.view();
  for_each_index<N>(blk.box(), [&](const garray::Shape<N>& i) { v.push_back(view(i)); });
  return v;
}

/// The whole array by one get (one-sided), row-major.
template <class T, std::size_t N>
std::vector<T> fetch_all(const garray::GlobalArray<T, N>& a) {
  std::vector<T> v(static_cast<std::size_t>(a.size()));
  a.get_section(garray::Section<N>::full(a.shape()), std::span<T>(v));
  return v;
}

template <class T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

/// Every rank reads the whole array and finds `ref` bitwise. Collective: true on every rank
/// iff it held on every rank.
template <class T, std::size_t N>
bool equals_everywhere(const garray::GlobalArray<T, N>& a, const std::vector<T>& ref) {
  return test::all_ranks(same_bytes(fetch_all(a), ref), a.context().comm());
}

/// Every rank's own copy of a replicated array (read through access()) is the whole array
/// and bitwise equal to rank 0's copy. Collective.
template <class T, std::size_t N>
bool copies_identical(garray::GlobalArray<T, N>& a) {
  const MPI_Comm comm = a.context().comm();
  const std::vector<T> mine = own_block(a);
  const bool whole_copy = static_cast<Index>(mine.size()) == a.size();
  std::vector<T> first(static_cast<std::size_t>(a.size()));
  if (a.context().rank() == 0 && whole_copy) first = mine;
  MPI_Bcast(first.data(), static_cast<int>(first.size() * sizeof(T)), MPI_BYTE, 0, comm);
  return test::all_ranks(whole_copy && same_bytes(mine, first), comm);
}

/// `a` is replicated, every rank's own copy (access()) is `ref` bitwise, the copies are
/// identical, and a full get gives `ref` on every rank. Collective (every part runs on every
/// rank, whatever the others found).
template <class T, std::size_t N>
bool replicated_holds(garray::GlobalArray<T, N>& a, const std::vector<T>& ref) {
  const MPI_Comm comm = a.context().comm();
  const bool own = a.distribution().is_replicated() && same_bytes(own_block(a), ref);
  const bool same = copies_identical(a);
  const bool all = equals_everywhere(a, ref);
  return test::all_ranks(own, comm) && same && all;
}

/// No rank's block of `a` splits axis `ax`: each block is empty or spans the whole axis.
template <class T, std::size_t N>
bool axis_unsplit(const garray::GlobalArray<T, N>& a, std::size_t ax) {
  for (int r = 0; r < a.context().size(); ++r) {
    const auto b = a.box_of(r);
    if (!b.empty() && b.extent(ax) != a.shape()[ax]) return false;
  }
  return true;
}

/// The section selecting every element of shape `sh` in reverse along every dimension (its
/// row-major order is the array's reversed).
template <std::size_t N>
garray::Section<N> reversed(const garray::Shape<N>& sh) {
  auto s = garray::Section<N>::full(sh);
  for (std::size_t d = 0; d < N; ++d) {
    s.start[d] = sh[d] - 1;
    s.step[d] = -1;
  }
  return s;
}

/// The serial scan of row-major `v` (shape sh) along ax in NumPy's order: out[k] = x[k] for
/// k = 0, out[k] = op(out[k - 1], x[k]) after (np.add.accumulate / np.multiply.accumulate).
template <std::size_t N, class T, class Op>
std::vector<T> ref_scan(const std::vector<T>& v, const garray::Shape<N>& sh, std::size_t ax, Op op) {
  const auto st = garray::row_major_strides(sh);
  std::vector<T> out(v.size());
  std::size_t q = 0;
  for_each_index<N>(whole<N>(sh), [&](const garray::Shape<N>& i) {
    out[q] = i[ax] == 0 ? v[q] : op(out[q - static_cast<std::size_t>(st[ax])], v[q]);
    ++q;
  });
  return out;
}

/// The serial reduction of row-major `v` (shape sh) along ax: for every other index,
/// f(acc, x, k) over k = 0, 1, ... from `init`; the result row-major over the other dims.
template <std::size_t N, class R, class T, class F>
std::vector<R> ref_reduce(const std::vector<T>& v, const garray::Shape<N>& sh, std::size_t ax, R init, F f) {
  garray::Shape<N> rsh = sh;
  rsh[ax] = 1;  // extent 1 along the axis: its row-major index is the (N-1)-d result's
  const auto rst = garray::row_major_strides(rsh);
  std::vector<R> res(static_cast<std::size_t>(garray::volume(rsh)), init);
  std::size_t q = 0;
  for_each_index<N>(whole<N>(sh), [&](const garray::Shape<N>& i) {
    garray::Shape<N> j = i;
    j[ax] = 0;
    R& r = res[static_cast<std::size_t>(flat_of<N>(j, rst))];
    r = f(r, v[q++], i[ax]);
  });
  return res;
}

/// Values whose sums depend on the order of the additions (1e16 + 1 == 1e16; for float
/// 1e8f + 3 == 1e8f): any reassociation of a scan changes its bits.
template <class T>
std::vector<T> cancelling_values(test::Rng& g, std::size_t n) {
  const T big = std::is_same_v<T, float> ? static_cast<T>(1e8) : static_cast<T>(1e16);
  const T table[] = {big, -big, T(1), T(-1), T(3), T(0.5), T(-2.5), big};
  std::vector<T> v(n);
  for (auto& x : v) x = table[static_cast<std::size_t>(test::uniform(g, 0, 7))];
  return v;
}

/// Values whose products round differently in different associations.
template <class T>
std::vector<T> product_values(test::Rng& g, std::size_t n) {
  const T table[] = {static_cast<T>(1.1), static_cast<T>(0.9),   T(3),
                     T(1) / T(3),         static_cast<T>(-1.25), static_cast<T>(0.7),
                     static_cast<T>(1.3), static_cast<T>(-0.6)};
  std::vector<T> v(n);
  for (auto& x : v) x = table[static_cast<std::size_t>(test::uniform(g, 0, 7))];
  return v;
}

/// Small integers times `scale` in [lo, hi] * scale: exact in double under + - * here.
std::vector<double> dyadic(test::Rng& g, std::size_t n, Index lo, Index hi, double scale) {
  std::vector<double> v(n);
  for (auto& x : v) x = static_cast<double>(test::uniform(g, lo, hi)) * scale;
  return v;
}

struct NamedDist {
  std::string name;
  D2 dist;
};

/// Distributions of a 2-d shape under which no rank boundary splits axis `ax`.
std::vector<NamedDist> unsplit_dists(test::Rng& g, const garray::Shape<2>& sh, std::size_t ax, int p) {
  const std::size_t o = 1 - ax;
  std::vector<NamedDist> r;
  r.push_back({"slab along the other axis", D2::slab(o)});
  std::array<int, 2> procs{1, 1};
  procs[o] = std::max(1, p - 1);  // a rank owns nothing (p >= 2)
  r.push_back({"grid over p - 1 ranks along the other axis", D2::grid(procs)});
  std::array<std::vector<Index>, 2> st;
  st[ax] = {0};
  st[o] = {0};
  for (int b = 1; b < p; ++b) st[o].push_back(test::uniform(g, 0, sh[o]));
  std::sort(st[o].begin(), st[o].end());
  r.push_back({"irregular along the other axis (empty blocks possible)", D2::irregular(st)});
  if (p >= 2) {
    // Two blocks along the axis, the first empty: the grid has 2 blocks along it but the data
    // lies in one (the empty block contributes -0.0 / 1, the exact identities).
    std::array<std::vector<Index>, 2> e;
    e[ax] = {0, 0};
    e[o] = {0};
    r.push_back({"irregular, an empty block before the data along the axis", D2::irregular(e)});
  }
  r.push_back({"replicated", D2::replicated()});
  return r;
}

Index overlap(Index a0, Index a1, Index b0, Index b1) {
  return std::max<Index>(0, std::min(a1, b1) - std::max(a0, b0));
}

/// Elements [lo, hi) along the last dimension of a row operand (shape (1, n) or (n)) that
/// this rank does not hold.
template <std::size_t K>
Index remote_of_row(const garray::GlobalArray<double, K>& row, Index lo, Index hi) {
  const auto& rb = row.local_box();
  return (hi - lo) - (rb.empty() ? 0 : overlap(lo, hi, rb.lo[K - 1], rb.hi[K - 1]));
}

/// Elements [lo, hi) along dimension 0 of a column operand (shape (m, 1)) that this rank
/// does not hold.
Index remote_of_col(const garray::GlobalArray<double, 2>& col, Index lo, Index hi) {
  const auto& cb = col.local_box();
  return (hi - lo) - (cb.empty() ? 0 : overlap(lo, hi, cb.lo[0], cb.hi[0]));
}

/// Elements of box `piece` of a full-shape operand that this rank does not hold.
Index remote_of_full(const garray::GlobalArray<double, 2>& a, const garray::Box<2>& piece) {
  return piece.empty() ? 0 : piece.volume() - garray::intersect(piece, a.local_box()).volume();
}

double bval(Index i, Index j) { return static_cast<double>((i * 7 + j * 3) % 11 - 5); }
double cval(Index i, Index j) { return static_cast<double>((i + 2 * j) % 7 - 3); }
double rowval(Index j) { return static_cast<double>(j % 5 - 2); }
double colval(Index i) { return static_cast<double>(i % 4 + 1); }

/// out = b * row + col (row of shape (1, n) for K = 2, (n) for K = 1; col (m, 1)): the bytes
/// this rank's gets moved are exactly the elements of b, row and col its piece of out needs
/// and does not hold, each once; the values are the serial ones.
template <std::size_t K>
void fetch_once_assign(const garray::Context& ctx, const std::string& name, const garray::Shape<2>& sh,
                       const D2& dout, const D2& db, const garray::Distribution<K>& drow, const D2& dcol) {
  const Index m = sh[0], n = sh[1];
  garray::Shape<K> rsh;
  rsh.fill(1);
  rsh[K - 1] = n;
  garray::GlobalArray<double, 2> out(ctx, sh, dout), b(ctx, sh, db), col(ctx, garray::Shape<2>{m, 1}, dcol);
  garray::GlobalArray<double, K> row(ctx, rsh, drow);
  std::vector<double> bv, rv, cv, ref;
  for (Index i = 0; i < m; ++i)
    for (Index j = 0; j < n; ++j) bv.push_back(bval(i, j));
  for (Index j = 0; j < n; ++j) rv.push_back(rowval(j));
  for (Index i = 0; i < m; ++i) cv.push_back(colval(i));
  for (Index i = 0; i < m; ++i)
    for (Index j = 0; j < n; ++j) ref.push_back(bval(i, j) * rowval(j) + colval(i));
  load_flat(b, bv);
  load_flat(row, rv);
  load_flat(col, cv);

  garray::Stats& st = ctx.stats();
  const garray::OpCounters before = st[garray::Op::get];
  garray::assign(out, b * row + col);
  const garray::OpCounters after = st[garray::Op::get];

  // The driver is the output: this rank computes its block of out.
  const garray::Box<2> piece = out.local_box();
  Index expect = 0;
  if (!piece.empty())
    expect = remote_of_full(b, piece) + remote_of_row(row, piece.lo[1], piece.hi[1]) +
             remote_of_col(col, piece.lo[0], piece.hi[0]);
  const Index got = after.remote_bytes - before.remote_bytes;
  INFO(name << ": rank " << ctx.rank() << " of " << ctx.size() << ", piece " << piece
            << ", remote elements needed " << expect << ", row block " << row.local_box() << ", col block "
            << col.local_box() << ", b block " << b.local_box() << "; remote get bytes " << got << " in "
            << (after.remote_pieces - before.remote_pieces) << " pieces");
  CHECK(got == expect * static_cast<Index>(sizeof(double)));
  CHECK(equals_everywhere(out, ref));
}

/// sum(b * row + c), b the driver: the bytes moved are exactly the elements of c and row
/// that b's block needs and this rank does not hold, each once; the sum is the exact one.
template <std::size_t K>
void fetch_once_reduce(const garray::Context& ctx, const std::string& name, const garray::Shape<2>& sh,
                       const D2& db, const D2& dc, const garray::Distribution<K>& drow) {
  const Index m = sh[0], n = sh[1];
  garray::Shape<K> rsh;
  rsh.fill(1);
  rsh[K - 1] = n;
  garray::GlobalArray<double, 2> b(ctx, sh, db), c(ctx, sh, dc);
  garray::GlobalArray<double, K> row(ctx, rsh, drow);
  std::vector<double> bv, cv, rv;
  double serial = 0;  // small integers: exact in any order
  for (Index i = 0; i < m; ++i)
    for (Index j = 0; j < n; ++j) {
      bv.push_back(bval(i, j));
      cv.push_back(cval(i, j));
      serial += bval(i, j) * rowval(j) + cval(i, j);
    }
  for (Index j = 0; j < n; ++j) rv.push_back(rowval(j));
  load_flat(b, bv);
  load_flat(c, cv);
  load_flat(row, rv);

  garray::Stats& st = ctx.stats();
  const garray::OpCounters before = st[garray::Op::get];
  const double s = garray::sum(b * row + c);
  const garray::OpCounters after = st[garray::Op::get];

  // The driver is b (the first operand of the full shape): this rank reduces its block of b.
  const garray::Box<2> piece = b.local_box();
  Index expect = 0;
  if (!piece.empty()) expect = remote_of_full(c, piece) + remote_of_row(row, piece.lo[1], piece.hi[1]);
  const Index got = after.remote_bytes - before.remote_bytes;
  INFO(name << ": rank " << ctx.rank() << " of " << ctx.size() << ", piece " << piece
            << ", remote elements needed " << expect << ", row block " << row.local_box() << ", c block "
            << c.local_box() << "; remote get bytes " << got << " in "
            << (after.remote_pieces - before.remote_pieces) << " pieces");
  CHECK(got == expect * static_cast<Index>(sizeof(double)));
  CHECK(s == serial);
}

/// Promise 2 on 2-d operands of type T: for each axis and each distribution that does not
/// split it, cumsum and cumprod of the whole array (result distributed as x: the fused
/// pass) and, with `all_kinds`, cumsum of another distribution's array, of a reversed view
/// and of an expression into that distribution: NumPy's sequential bits.
template <class T>
void unsplit_scans(const garray::Context& ctx, test::Rng& rng, bool all_kinds) {
  const int p = ctx.size();
  const garray::Shape<2> sh{5 + p, 4 + 2 * p};
  const auto total = static_cast<std::size_t>(garray::volume(sh));
  const auto add = [](T a, T b) { return static_cast<T>(a + b); };
  const auto mul = [](T a, T b) { return static_cast<T>(a * b); };
  for (std::size_t ax = 0; ax < 2; ++ax) {
    for (const auto& nd : unsplit_dists(rng, sh, ax, p)) {
      INFO("axis " << ax << ", result distribution: " << nd.name << " (" << nd.dist.describe() << ")");
      const std::vector<T> v = cancelling_values<T>(rng, total), w = product_values<T>(rng, total);
      garray::GlobalArray<T, 2> x(ctx, sh, nd.dist), xp(ctx, sh, nd.dist);
      load_flat(x, v);
      load_flat(xp, w);
      {  // the whole array: the result distributed as x
        auto c = garray::cumsum(x, garray::Axis{ax});
        CHECK(c.distribution().signature() == x.distribution().signature());
        CHECK(axis_unsplit(c, ax));
        CHECK(equals_everywhere(c, ref_scan<2>(v, sh, ax, add)));
        auto cp = garray::cumprod(xp, garray::Axis{ax});
        CHECK(axis_unsplit(cp, ax));
        CHECK(equals_everywhere(cp, ref_scan<2>(w, sh, ax, mul)));
      }
      if (!all_kinds) continue;
      {  // an array of a random (possibly splitting) distribution scanned into nd.dist
        garray::GlobalArray<T, 2> y(ctx, sh, test::random_distribution<2>(rng, sh, p));
        load_flat(y, v);
        auto c = garray::cumsum(y, garray::Axis{ax}, nd.dist);
        CHECK(axis_unsplit(c, ax));
        CHECK(equals_everywhere(c, ref_scan<2>(v, sh, ax, add)));
      }
      {  // a view reversed along both axes: its elements are v backwards
        const garray::View<T, 2, 2> rev(x, reversed<2>(sh));
        const std::vector<T> vr(v.rbegin(), v.rend());
        auto c = garray::cumsum(rev, garray::Axis{ax}, nd.dist);
        CHECK(axis_unsplit(c, ax));
        CHECK(equals_everywhere(c, ref_scan<2>(vr, sh, ax, add)));
      }
      {  // an expression (x * 2 is exact)
        std::vector<T> v2(v);
        for (auto& e : v2) e = static_cast<T>(e * T(2));
        auto c = garray::cumsum(x * T(2), garray::Axis{ax}, nd.dist);
        CHECK(axis_unsplit(c, ax));
        CHECK(equals_everywhere(c, ref_scan<2>(v2, sh, ax, add)));
      }
    }
  }
}

}  // namespace

// ---- 1. replicated arrays in the numeric layer ------------------------------------------------

TEST_CASE(
    "replicated operands in expressions into blocked outputs: the serial values, the operands unchanged") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  const int p = ctx.size();
  for (int round = 0; round < 3; ++round) {
    const Index m = test::uniform(rng, 2, 9), n = test::uniform(rng, 2, 9);
    const garray::Shape<2> sh{m, n};
    const auto total = static_cast<std::size_t>(m * n);
    const auto at = [n](Index i, Index j) { return static_cast<std::size_t>(i * n + j); };
    const std::vector<double> rv = dyadic(rng, total, -8, 8, 0.25), bv = dyadic(rng, total, -5, 5, 1.0),
                              rowv = dyadic(rng, static_cast<std::size_t>(n), -4, 4, 0.5);
    garray::GlobalArray<double, 2> r(ctx, sh, D2::replicated());
    garray::GlobalArray<double, 1> rrow(ctx, garray::Shape<1>{n}, D1::replicated());
    garray::GlobalArray<double, 2> b(ctx, sh, test::random_distribution<2>(rng, sh, p));
    garray::GlobalArray<double, 2> out(ctx, sh, test::random_distribution<2>(rng, sh, p));
    garray::GlobalArray<double, 2> out2(ctx, sh, test::random_distribution<2>(rng, sh, p),
                                        garray::Shape<2>{1, 1});
    load_flat(r, rv);
    load_flat(rrow, rowv);
    load_flat(b, bv);
    INFO("round " << round << ", shape " << m << "x" << n << ", b " << b.distribution().describe() << ", out "
                  << out.distribution().describe() << ", out2 " << out2.distribution().describe());

    // a replicated full operand, a blocked operand and a replicated row broadcast down the rows
    garray::assign(out, r * b + rrow);
    std::vector<double> ref(total);
    for (Index i = 0; i < m; ++i)
      for (Index j = 0; j < n; ++j)
        ref[at(i, j)] = rv[at(i, j)] * bv[at(i, j)] + rowv[static_cast<std::size_t>(j)];
    CHECK(equals_everywhere(out, ref));

    // replicated operands only: r reversed along both axes, and the row
    const garray::View<double, 2, 2> rrev(r, reversed<2>(sh));
    garray::assign(out2, rrev * 0.5 - rrow);
    std::vector<double> ref2(total);
    for (Index i = 0; i < m; ++i)
      for (Index j = 0; j < n; ++j)
        ref2[at(i, j)] = rv[at(m - 1 - i, n - 1 - j)] * 0.5 - rowv[static_cast<std::size_t>(j)];
    CHECK(equals_everywhere(out2, ref2));

    // compound assignment with a replicated operand
    out += r;
    for (std::size_t k = 0; k < total; ++k) ref[k] = ref[k] + rv[k];
    CHECK(equals_everywhere(out, ref));

    // eval with a blocked first operand: b's distribution, the replicated copy read where it is
    auto t = garray::eval(b - r);
    CHECK(t.distribution().signature() == b.distribution().signature());
    std::vector<double> ref3(total);
    for (std::size_t k = 0; k < total; ++k) ref3[k] = bv[k] - rv[k];
    CHECK(equals_everywhere(t, ref3));

    // the replicated operands were only read: every copy still as loaded
    CHECK(replicated_holds(r, rv));
    CHECK(replicated_holds(rrow, rowv));
  }
}

TEST_CASE("a replicated output of expressions over blocked operands: every copy holds the serial values") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  const int p = ctx.size();
  for (int round = 0; round < 3; ++round) {
    const Index m = test::uniform(rng, 2, 9), n = test::uniform(rng, 2, 9);
    const garray::Shape<2> sh{m, n};
    const auto total = static_cast<std::size_t>(m * n);
    const auto at = [n](Index i, Index j) { return static_cast<std::size_t>(i * n + j); };
    const std::vector<double> v1 = dyadic(rng, total, -6, 6, 0.5), v2 = dyadic(rng, total, -6, 6, 0.25),
                              vs = dyadic(rng, total, -3, 3, 1.0);
    garray::GlobalArray<double, 2> b1(ctx, sh, test::random_distribution<2>(rng, sh, p));
    garray::GlobalArray<double, 2> b2(ctx, sh, test::random_distribution<2>(rng, sh, p),
                                      garray::Shape<2>{1, 0});
    garray::GlobalArray<double, 2> rsrc(ctx, sh, D2::replicated());
    garray::GlobalArray<double, 2> rout(ctx, sh, D2::replicated());
    load_flat(b1, v1);
    load_flat(b2, v2);
    load_flat(rsrc, vs);
    INFO("round " << round << ", shape " << m << "x" << n << ", b1 " << b1.distribution().describe()
                  << ", b2 " << b2.distribution().describe());

    // every rank computes its whole copy from the blocked operands
    garray::assign(rout, b1 * b2 - 1.5);
    std::vector<double> ref(total);
    for (std::size_t k = 0; k < total; ++k) ref[k] = v1[k] * v2[k] - 1.5;
    CHECK(replicated_holds(rout, ref));

    // compound assignment: the output itself is an operand
    rout += b1;
    for (std::size_t k = 0; k < total; ++k) ref[k] = ref[k] + v1[k];
    CHECK(replicated_holds(rout, ref));

    // a part of the output, reversed along the columns, from a part of b2: only that part of
    // every copy changes
    garray::Section<2> dst = garray::Section<2>::full(sh);
    dst.start = {1, n - 1};
    dst.step = {1, -1};
    dst.count = {m - 1, n};
    garray::Section<2> src = garray::Section<2>::full(sh);
    src.count[0] = m - 1;
    garray::assign(garray::View<double, 2, 2>(rout, dst), garray::View<double, 2, 2>(b2, src) * 2.0);
    for (Index i = 0; i + 1 < m; ++i)
      for (Index j = 0; j < n; ++j) ref[at(1 + i, n - 1 - j)] = v2[at(i, j)] * 2.0;
    CHECK(replicated_holds(rout, ref));

    // the output read through a view of itself that overlaps the written part (NumPy: the
    // right side is read completely first): rout[1:] = rout[:-1] + 1
    garray::Section<2> lower = garray::Section<2>::full(sh), upper = garray::Section<2>::full(sh);
    lower.start[0] = 1;
    lower.count[0] = m - 1;
    upper.count[0] = m - 1;
    garray::assign(garray::View<double, 2, 2>(rout, lower), garray::View<double, 2, 2>(rout, upper) + 1.0);
    const std::vector<double> old = ref;
    for (Index i = 1; i < m; ++i)
      for (Index j = 0; j < n; ++j) ref[at(i, j)] = old[at(i - 1, j)] + 1.0;
    CHECK(replicated_holds(rout, ref));

    // eval with a replicated first operand: the result has its distribution (replicated)
    auto t = garray::eval(rsrc * b1);
    CHECK(t.distribution().is_replicated());
    std::vector<double> reft(total);
    for (std::size_t k = 0; k < total; ++k) reft[k] = vs[k] * v1[k];
    CHECK(replicated_holds(t, reft));
    CHECK(replicated_holds(rsrc, vs));  // only read
  }
}

TEST_CASE("axis reductions of replicated operands count rank 0's copy once: the serial result") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  const int p = ctx.size();
  const Index m = test::uniform(rng, 2, 8), n = test::uniform(rng, 2, 8);
  const garray::Shape<2> sh{m, n};
  const auto total = static_cast<std::size_t>(m * n);
  // small integers (sums exact in any order, ties for argmax) and factors of 2 (exact products)
  const std::vector<double> rv = dyadic(rng, total, -4, 4, 1.0), bv = dyadic(rng, total, -3, 3, 1.0);
  std::vector<double> pv(total);
  const double factors[] = {-2.0, -1.0, 1.0, 2.0, 0.5};
  for (auto& x : pv) x = factors[static_cast<std::size_t>(test::uniform(rng, 0, 4))];
  garray::GlobalArray<double, 2> r(ctx, sh, D2::replicated()), rp(ctx, sh, D2::replicated());
  garray::GlobalArray<double, 2> b(ctx, sh, test::random_distribution<2>(rng, sh, p));
  load_flat(r, rv);
  load_flat(rp, pv);
  load_flat(b, bv);
  std::vector<double> rb(total);
  for (std::size_t k = 0; k < total; ++k) rb[k] = rv[k] * bv[k];

  const auto add = [](double a, double x, Index) { return a + x; };
  const auto mul = [](double a, double x, Index) { return a * x; };
  const double inf = std::numeric_limits<double>::infinity();
  for (std::size_t ax = 0; ax < 2; ++ax) {
    INFO("shape " << m << "x" << n << ", axis " << ax << ", b " << b.distribution().describe());
    const auto rsum = ref_reduce<2>(rv, sh, ax, 0.0, add);
    CHECK(equals_everywhere(garray::sum(r, garray::Axis{ax}), rsum));
    CHECK(equals_everywhere(garray::prod(rp, garray::Axis{ax}), ref_reduce<2>(pv, sh, ax, 1.0, mul)));
    CHECK(equals_everywhere(
        garray::min(r, garray::Axis{ax}),
        ref_reduce<2>(rv, sh, ax, inf, [](double a, double x, Index) { return x < a ? x : a; })));
    CHECK(equals_everywhere(
        garray::max(r, garray::Axis{ax}),
        ref_reduce<2>(rv, sh, ax, -inf, [](double a, double x, Index) { return a < x ? x : a; })));
    std::vector<double> rmean(rsum);
    for (auto& x : rmean) x = x / static_cast<double>(sh[ax]);
    CHECK(equals_everywhere(garray::mean(r, garray::Axis{ax}), rmean));
    struct Best {
      double v;
      Index i;
    };
    const auto best = ref_reduce<2>(rv, sh, ax, Best{0.0, -1}, [](Best a, double x, Index k) {
      return (a.i < 0 || a.v < x) ? Best{x, k} : a;
    });
    std::vector<Index> rarg;
    for (const auto& q : best) rarg.push_back(q.i);
    CHECK(equals_everywhere(garray::argmax(r, garray::Axis{ax}), rarg));
    CHECK(equals_everywhere(garray::count_nonzero(r, garray::Axis{ax}),
                            ref_reduce<2>(rv, sh, ax, Index{0},
                                          [](Index a, double x, Index) { return a + (x != 0.0 ? 1 : 0); })));
    // replicated first operand with a blocked one (rank 0 reduces, fetching b), and the other way round
    const auto rbsum = ref_reduce<2>(rb, sh, ax, 0.0, add);
    CHECK(equals_everywhere(garray::sum(r * b, garray::Axis{ax}), rbsum));
    CHECK(equals_everywhere(garray::sum(b * r, garray::Axis{ax}), rbsum));
  }

  // 3-d, int64: along every axis
  const garray::Shape<3> sh3{2, 3, 1 + p};
  std::vector<std::int64_t> iv(static_cast<std::size_t>(garray::volume(sh3)));
  for (auto& x : iv) x = test::uniform(rng, -9, 9);
  garray::GlobalArray<std::int64_t, 3> ri(ctx, sh3, D3::replicated());
  load_flat(ri, iv);
  for (std::size_t ax = 0; ax < 3; ++ax) {
    INFO("3-d int64, axis " << ax);
    CHECK(equals_everywhere(garray::sum(ri, garray::Axis{ax}),
                            ref_reduce<3>(iv, sh3, ax, std::int64_t{0},
                                          [](std::int64_t a, std::int64_t x, Index) { return a + x; })));
  }

  // Rank 0's copy is the one counted: rank 1's copy made to differ (through access(): keeping
  // copies equal is the program's job) changes nothing.
  if (p > 1) {
    {
      auto blk = r.access();
      if (ctx.rank() == 1)
        for (Index k = 0; k < blk.size(); ++k) blk.data()[k] += 100.0;
    }
    r.sync();
    CHECK(equals_everywhere(garray::sum(r, garray::Axis{0}), ref_reduce<2>(rv, sh, 0, 0.0, add)));
    CHECK(equals_everywhere(
        garray::max(r, garray::Axis{1}),
        ref_reduce<2>(rv, sh, 1, -inf, [](double a, double x, Index) { return a < x ? x : a; })));
  }
}

TEST_CASE("cumsum and cumprod of replicated arrays: replicated results, every copy the serial scan bitwise") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  const int p = ctx.size();
  const garray::Shape<2> sh{4 + p, 3 + p};
  const auto total = static_cast<std::size_t>(garray::volume(sh));
  const auto add = [](double a, double b) { return a + b; };
  const auto mul = [](double a, double b) { return a * b; };
  const std::vector<double> v = cancelling_values<double>(rng, total), w = product_values<double>(rng, total),
                            bv = cancelling_values<double>(rng, total);
  garray::GlobalArray<double, 2> r(ctx, sh, D2::replicated()), rp(ctx, sh, D2::replicated());
  garray::GlobalArray<double, 2> b(ctx, sh, test::random_distribution<2>(rng, sh, p));
  load_flat(r, v);
  load_flat(rp, w);
  load_flat(b, bv);
  for (std::size_t ax = 0; ax < 2; ++ax) {
    INFO("axis " << ax << ", b " << b.distribution().describe());
    const auto ref = ref_scan<2>(v, sh, ax, add);
    // a replicated whole array: the result is replicated (distributed as x), one block along
    // every axis, so every copy is NumPy's sequential scan
    auto c = garray::cumsum(r, garray::Axis{ax});
    CHECK(c.distribution().is_replicated());
    CHECK(replicated_holds(c, ref));
    auto cp = garray::cumprod(rp, garray::Axis{ax});
    CHECK(cp.distribution().is_replicated());
    CHECK(replicated_holds(cp, ref_scan<2>(w, sh, ax, mul)));
    // a reversed view of a replicated array into a replicated result
    const garray::View<double, 2, 2> rev(r, reversed<2>(sh));
    auto cv = garray::cumsum(rev, garray::Axis{ax}, D2::replicated());
    CHECK(replicated_holds(cv, ref_scan<2>(std::vector<double>(v.rbegin(), v.rend()), sh, ax, add)));
    // a blocked operand into a replicated result
    auto cb = garray::cumsum(b, garray::Axis{ax}, D2::replicated());
    CHECK(replicated_holds(cb, ref_scan<2>(bv, sh, ax, add)));
    // a replicated operand into a blocked result that keeps the axis whole
    auto cs = garray::cumsum(r, garray::Axis{ax}, D2::slab(1 - ax));
    CHECK(axis_unsplit(cs, ax));
    CHECK(equals_everywhere(cs, ref));
  }
  // int64: the flattened scan (a blocked 1-d result) and a scan along an axis, exact
  std::vector<std::int64_t> iv(total);
  for (auto& x : iv) x = test::uniform(rng, -50, 50);
  garray::GlobalArray<std::int64_t, 2> ri(ctx, sh, D2::replicated());
  load_flat(ri, iv);
  std::vector<std::int64_t> flat(total);
  std::int64_t acc = 0;
  for (std::size_t k = 0; k < total; ++k) flat[k] = acc += iv[k];
  CHECK(equals_everywhere(garray::cumsum(ri), flat));
  auto ci = garray::cumsum(ri, garray::Axis{1});
  CHECK(ci.distribution().is_replicated());
  CHECK(replicated_holds(ci, ref_scan<2>(iv, sh, 1, [](std::int64_t a, std::int64_t x) { return a + x; })));
  CHECK(replicated_holds(r, v));  // the operands were only read
  CHECK(replicated_holds(ri, iv));
}

// ---- 2. scans along an unsplit axis: NumPy's bits -----------------------------------------------

TEST_CASE(
    "scans along an axis no rank boundary splits are bitwise the serial scan: double, every operand kind") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  unsplit_scans<double>(ctx, rng, true);
}

TEST_CASE("scans along an axis no rank boundary splits are bitwise the serial scan: float") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  unsplit_scans<float>(ctx, rng, false);
}

TEST_CASE("3-d scans along an axis no rank boundary splits (the others split) are bitwise the serial scan") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  const int p = ctx.size();
  const garray::Shape<3> sh{3, 4 + p, 5};
  const auto total = static_cast<std::size_t>(garray::volume(sh));
  const auto add = [](double a, double b) { return a + b; };
  for (std::size_t ax = 0; ax < 3; ++ax) {
    // the ranks spread over the two other dimensions
    std::array<int, 3> g{1, 1, 1};
    const std::size_t o1 = ax == 0 ? 1 : 0, o2 = ax == 2 ? 1 : 2;
    g[o1] = (p % 2 == 0 && p > 2) ? 2 : p;
    g[o2] = p / g[o1];
    const D3 d = D3::grid(g);
    const std::vector<double> v = cancelling_values<double>(rng, total);
    garray::GlobalArray<double, 3> x(ctx, sh, d);
    load_flat(x, v);
    INFO("axis " << ax << ", " << x.distribution().describe());
    auto c = garray::cumsum(x, garray::Axis{ax});
    CHECK(axis_unsplit(c, ax));
    CHECK(equals_everywhere(c, ref_scan<3>(v, sh, ax, add)));
    const garray::View<double, 3, 3> rev(x, reversed<3>(sh));
    auto cr = garray::cumsum(rev, garray::Axis{ax}, d);
    CHECK(axis_unsplit(cr, ax));
    CHECK(equals_everywhere(cr, ref_scan<3>(std::vector<double>(v.rbegin(), v.rend()), sh, ax, add)));
  }
}

// ---- 3. fetch once under 2-d cuts ---------------------------------------------------------------

TEST_CASE(
    "fetch once under 2-d cuts: an assignment with a broadcast row and column moves each remote element "
    "once") {
  garray::Context ctx;
  const int p = ctx.size();
  {
    // Rank 0 computes the whole output; b's row blocks cut its piece along dimension 0, the
    // row's column blocks along dimension 1: it needs pieces of b, row and col from every rank.
    const garray::Shape<2> sh{2 * p + 2, 3 * p + 1};
    fetch_once_assign<2>(ctx, "A: out on rank 0, b row slabs, row (1, n) column slabs, col row slabs", sh,
                         D2::grid({1, 1}), D2::slab(0), D2::slab(1), D2::slab(0));
  }
  {
    // The blocked output (a 2 x 2 grid at 4 ranks) against b's row slabs and a 1-d row
    // broadcast along the missing leading dimension.
    const garray::Shape<2> sh{4 * p, 4 * p};
    fetch_once_assign<1>(ctx, "B: out blocked, b row slabs, row (n) blocked, col blocked", sh, D2::blocked(),
                         D2::slab(0), D1::blocked(), D2::blocked());
  }
  {
    // Column slabs of out, the row's blocks offset by half a slab (every rank but the last
    // needs a piece of its neighbour's row), col entirely on rank 0.
    const garray::Shape<2> sh{3 * p, 4 * p};
    std::array<std::vector<Index>, 2> st{std::vector<Index>{0}, std::vector<Index>{0}};
    for (int r = 0; r + 1 < p; ++r) st[1].push_back(4 * r + 2);
    fetch_once_assign<2>(ctx, "C: out column slabs, b row slabs, row (1, n) offset blocks, col on rank 0", sh,
                         D2::slab(1), D2::slab(0), D2::irregular(st), D2::grid({1, 1}));
  }
}

TEST_CASE("fetch once under 2-d cuts: a full reduction with a broadcast row moves each remote element once") {
  garray::Context ctx;
  const int p = ctx.size();
  {
    const garray::Shape<2> sh{2 * p + 2, 3 * p + 1};
    fetch_once_reduce<2>(ctx, "R1: b on rank 0, c row slabs, row (1, n) column slabs", sh, D2::grid({1, 1}),
                         D2::slab(0), D2::slab(1));
  }
  {
    const garray::Shape<2> sh{3 * p, 4 * p};
    std::array<std::vector<Index>, 1> st{std::vector<Index>{0}};
    for (int r = 0; r + 1 < p; ++r) st[0].push_back(4 * r + 2);
    fetch_once_reduce<1>(ctx, "R2: b column slabs, c row slabs, row (n) offset blocks", sh, D2::slab(1),
                         D2::slab(0), D1::irregular(st));
  }
}

// Written by an audit: the written array is its own index list, values and mask (semantics.md:
// put reads idx and values completely before writing; a may alias them; place likewise).
TEST_CASE("put, place and assign_where with the array as its own index list, values and mask: inputs read first") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  const int p = ctx.size();
  for (int round = 0; round < 8; ++round) {
    const Index n = test::uniform(rng, 1, 23);
    const Index mult = test::uniform(rng, 1, 7), add = test::uniform(rng, 0, 30);
    const garray::Shape<1> sh{n};
    INFO("round " << round << ", n " << n << ", mult " << mult << ", add " << add);

    // ---- put(a, a, a[::-1][:nv]): a is its own index list and its own (cyclic) values.
    // Values are valid indices of a, half of them spelled negatively (from the end).
    garray::GlobalArray<std::int64_t, 1> a(ctx, sh, test::random_distribution<1>(rng, sh, p));
    garray::generate(a, [n, mult, add](const garray::Shape<1>& i) {
      const Index v = (i[0] * mult + add) % n;
      return static_cast<std::int64_t>(i[0] % 2 != 0 ? v - n : v);
    });
    const auto a0 = garray::allgather(a);
    const std::vector<std::int64_t> before(a0.data(), a0.data() + n);
    std::vector<std::int64_t> ref = before;
    const Index nv = test::uniform(rng, 1, n);  // shorter values: cyclic, the wrap-around path
    const auto vals = a[idx[range(_, _, -1)]][idx[range(0, nv)]];  // vals[k] = before[n - 1 - k]
    garray::put(a, a, vals);
    // serial np.put over a snapshot of idx and values: positions in order, the last one wins
    for (Index j = 0; j < n; ++j) {
      Index t = before[static_cast<std::size_t>(j)];
      if (t < 0) t += n;
      ref[static_cast<std::size_t>(t)] = before[static_cast<std::size_t>(n - 1 - (j % nv))];
    }
    {
      const auto got = garray::allgather(a);
      CHECK(test::all_ranks(std::equal(ref.begin(), ref.end(), got.data())));
    }
    // put(a, a, scalar): the targets come from a as it was before this call
    const std::vector<std::int64_t> before2 = ref;
    garray::put(a, a, std::int64_t{7});
    for (Index j = 0; j < n; ++j) {
      Index t = before2[static_cast<std::size_t>(j)];
      if (t < 0) t += n;
      ref[static_cast<std::size_t>(t)] = 7;
    }
    {
      const auto got = garray::allgather(a);
      CHECK(test::all_ranks(std::equal(ref.begin(), ref.end(), got.data())));
    }

    // ---- place(b, b > t, b[::-1][:nw]) and assign_where(b, b < t, b[::-1] * 2)
    garray::GlobalArray<double, 1> b(ctx, sh, test::random_distribution<1>(rng, sh, p));
    garray::fill_random(b, rng(), 0.0, 1.0);
    const auto b0 = garray::allgather(b);
    const std::vector<double> bbefore(b0.data(), b0.data() + n);
    std::vector<double> bref = bbefore;
    const double t = 0.5;
    const Index nw = test::uniform(rng, 1, n);
    garray::place(b, b > t, b[idx[range(_, _, -1)]][idx[range(0, nw)]]);
    for (Index i = 0, k = 0; i < n; ++i)
      if (bbefore[static_cast<std::size_t>(i)] > t) {
        bref[static_cast<std::size_t>(i)] = bbefore[static_cast<std::size_t>(n - 1 - (k % nw))];
        ++k;
      }
    {
      const auto got = garray::allgather(b);
      CHECK(test::all_ranks(std::equal(bref.begin(), bref.end(), got.data())));
    }
    const std::vector<double> bmid = bref;
    garray::assign_where(b, b < t, b[idx[range(_, _, -1)]] * 2.0);
    for (Index i = 0; i < n; ++i) {
      const auto u = static_cast<std::size_t>(i);
      bref[u] = bmid[u] < t ? bmid[static_cast<std::size_t>(n - 1 - i)] * 2.0 : bmid[u];
    }
    {
      const auto got = garray::allgather(b);
      CHECK(test::all_ranks(std::equal(bref.begin(), bref.end(), got.data())));
    }
  }
}
