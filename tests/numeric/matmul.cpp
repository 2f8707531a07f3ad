// gemm / matmul against the serial BLAS on the gathered matrices: random shapes (non-square,
// empty, smaller than the grid), every distribution kind for A, B and C independently,
// every op, every element type, alpha/beta cases, views (strided, reversed) as operands and
// as C, aliasing, panel widths that force many double-buffered panels. Values are small
// integers and alpha/beta dyadic, so every result is exact and compared bitwise.
#include <cblas.h>

#include <array>
#include <cmath>
#include <complex>
#include <garray/garray.hpp>
#include <garray/runtime/fault.hpp>
#include <string>
#include <vector>

#include "numeric/support.hpp"
#include "support/outcome.hpp"

using garray::idx;
using garray::MatOp;
using garray::range;
using gidx = garray::Index;

namespace {

template <class T>
T rand_val(test::Rng& g) {
  if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>)
    return T(static_cast<typename T::value_type>(test::uniform(g, -3, 3)),
             static_cast<typename T::value_type>(test::uniform(g, -3, 3)));
  else
    return static_cast<T>(test::uniform(g, -3, 3));
}

/// A 2-d operand of shape `s`: either a whole array or a random (strided, possibly reversed)
/// view of a larger array. Owns the base array; `base_ref` mirrors its contents.
template <class T>
struct Operand {
  std::unique_ptr<garray::GlobalArray<T, 2>> arr;
  garray::Section<2> sec;
  std::unique_ptr<test::Reference<T, 2>> ref;
  test::Reference<T, 2>& base() { return *ref; }
  garray::View<T, 2, 2> view() { return {*arr, sec}; }

  Operand(garray::Context& ctx, test::Rng& g, garray::Shape<2> s, bool allow_view) {
    const bool as_view = allow_view && s[0] > 0 && s[1] > 0 && test::uniform(g, 0, 2) == 0;
    garray::Shape<2> base = s;
    if (as_view)
      for (auto& e : base) e = e * test::uniform(g, 1, 3) + test::uniform(g, 0, 3);
    arr = std::make_unique<garray::GlobalArray<T, 2>>(ctx, base, test::random_distribution<2>(g, base, ctx.size()));
    ref = std::make_unique<test::Reference<T, 2>>(base);
    for (std::size_t k = 0; k < ref->a.num_elements(); ++k) ref->a.data()[k] = rand_val<T>(g);
    ntest::load(*arr, *ref);
    sec = as_view ? ntest::random_section(g, base, s) : garray::Section<2>::full(base);
  }
  /// Dense row-major copy of the operand (from the reference, not from the array).
  std::vector<T> dense() {
    const auto s = sec.template kept_shape<2>();
    std::vector<T> out;
    for (gidx i = 0; i < s[0]; ++i)
      for (gidx j = 0; j < s[1]; ++j) out.push_back(ref->at(ntest::at(sec, i, j)));
    return out;
  }
};

template <class T>
T pick_scalar(test::Rng& g) {
  static const double vals[] = {1.0, 0.0, 0.5, -2.0, 1.0, 3.0};
  const double v = vals[test::uniform(g, 0, 5)];
  if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>)
    return test::uniform(g, 0, 1) ? T(v, 0) : T(v, -1);
  else
    return static_cast<T>(v);
}

/// op(X)[i][l] of the dense row-major matrix x with `cols` columns.
template <class T>
T op_at(MatOp op, const std::vector<T>& x, gidx cols, gidx i, gidx l) {
  if (op == MatOp::none) return x[static_cast<std::size_t>(i * cols + l)];
  const T v = x[static_cast<std::size_t>(l * cols + i)];
  if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>)
    return op == MatOp::conj_transpose ? std::conj(v) : v;
  else
    return v;
}

/// C = alpha op(A) op(B) + beta C by the definition (beta == 0: C is not read, as BLAS).
template <class T>
void naive_gemm(MatOp oa, MatOp ob, gidx m, gidx n, gidx k, T alpha, const std::vector<T>& a, gidx a_cols,
                const std::vector<T>& b, gidx b_cols, T beta, std::vector<T>& c) {
  for (gidx i = 0; i < m; ++i)
    for (gidx j = 0; j < n; ++j) {
      T s{};
      for (gidx l = 0; l < k; ++l) s += op_at(oa, a, a_cols, i, l) * op_at(ob, b, b_cols, l, j);
      T& out = c[static_cast<std::size_t>(i * n + j)];
      out = beta == T{} ? alpha * s : alpha * s + beta * out;
    }
}

template <class T>
bool equal_everywhere(garray::GlobalArray<T, 2>& a, test::Reference<T, 2>& ref) {
  return test::equal_on_all_ranks(a, ref);
}

template <class T>
void random_gemm_cases(int rounds) {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  const std::string tn(garray::type_name<T>());
  for (int round = 0; round < rounds; ++round) {
    const gidx m = test::uniform(rng, 0, 17), n = test::uniform(rng, 0, 17), k = test::uniform(rng, 0, 17);
    const MatOp oa = static_cast<MatOp>(test::uniform(rng, 0, 2)), ob = static_cast<MatOp>(test::uniform(rng, 0, 2));
    const garray::Shape<2> sa = oa == MatOp::none ? garray::Shape<2>{m, k} : garray::Shape<2>{k, m};
    const garray::Shape<2> sb = ob == MatOp::none ? garray::Shape<2>{k, n} : garray::Shape<2>{n, k};
    Operand<T> a(ctx, rng, sa, true), b(ctx, rng, sb, true), c(ctx, rng, {m, n}, true);
    const T alpha = pick_scalar<T>(rng), beta = pick_scalar<T>(rng);
    garray::GemmOptions opt;
    opt.panel = test::uniform(rng, 0, 3) == 0 ? test::uniform(rng, 1, 4) : 0;
    INFO(tn << " round " << round << " m,n,k " << m << "," << n << "," << k << " ops " << int(oa) << int(ob)
            << " A " << a.sec << " B " << b.sec << " C " << c.sec << " panel " << opt.panel);
    // the serial reference: a plain triple loop on the gathered matrices, op() applied here
    // (not garray's BLAS wrapper, which gemm itself calls)
    auto da = a.dense(), db = b.dense(), dc = c.dense();
    naive_gemm<T>(oa, ob, m, n, k, alpha, da, sa[1], db, sb[1], beta, dc);
    garray::gemm(oa, ob, alpha, a.view(), b.view(), beta, c.view(), opt);
    for (gidx i = 0; i < m; ++i)
      for (gidx j = 0; j < n; ++j) c.base().at(ntest::at(c.sec, i, j)) = dc[static_cast<std::size_t>(i * n + j)];
    // C's view has the product, the rest of C's array and A, B are untouched
    GARRAY_TEST_REQUIRE_ALL(equal_everywhere(*c.arr, c.base()));
    GARRAY_TEST_REQUIRE_ALL(equal_everywhere(*a.arr, a.base()));
    GARRAY_TEST_REQUIRE_ALL(equal_everywhere(*b.arr, b.base()));
  }
}

}  // namespace

TEST_CASE("gemm: random shapes, distributions, ops, views, alpha/beta - double") { random_gemm_cases<double>(200); }
TEST_CASE("gemm: random cases - float") { random_gemm_cases<float>(100); }
TEST_CASE("gemm: random cases - complex<double>") { random_gemm_cases<std::complex<double>>(100); }
TEST_CASE("gemm: random cases - complex<float>") { random_gemm_cases<std::complex<float>>(100); }

TEST_CASE("matmul: a new blocked array; larger sizes not divisible by the grid, both paths") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  for (const auto& [m, k, n] : {std::array<gidx, 3>{37, 53, 29}, std::array<gidx, 3>{64, 1, 70}, {1, 90, 1}}) {
    Operand<double> a(ctx, rng, {m, k}, false), b(ctx, rng, {k, n}, false);
    auto da = a.dense(), db = b.dense();
    std::vector<double> want(static_cast<std::size_t>(m * n));
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0, da.data(), static_cast<int>(k), db.data(), static_cast<int>(n), 0.0,
                want.data(), static_cast<int>(n));
    for (gidx panel : {gidx{0}, gidx{7}}) {
      garray::GemmOptions opt;
      opt.panel = panel;
      auto c = garray::matmul(*a.arr, *b.arr, garray::Distribution<2>::blocked(), opt);
      CHECK(c.shape() == garray::Shape<2>{m, n});
      std::vector<double> got(static_cast<std::size_t>(m * n));
      c.get(idx[garray::all], std::span<double>(got));
      CHECK(test::all_ranks(got == want));
    }
    // a strided view operand forces the fetched (panel) path on shared windows too
    garray::GlobalArray<double, 2> wide(ctx, {m, 2 * k});
    garray::copy(wide[idx[garray::all][range(0, 2 * k, 2)]], *a.arr);
    auto c2 = garray::matmul(wide[idx[garray::all][range(0, 2 * k, 2)]], *b.arr);
    std::vector<double> got(static_cast<std::size_t>(m * n));
    c2.get(idx[garray::all], std::span<double>(got));
    CHECK(test::all_ranks(got == want));
  }
}

TEST_CASE("gemm: C may alias A (a = a @ b), as numpy's a[...] = a @ b") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  Operand<double> a(ctx, rng, {11, 6}, false), b(ctx, rng, {6, 6}, false);
  auto da = a.dense(), db = b.dense();
  std::vector<double> want(66);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 11, 6, 6, 1.0, da.data(), 6, db.data(), 6, 0.0, want.data(), 6);
  garray::gemm(1.0, *a.arr, *b.arr, 0.0, *a.arr);
  std::vector<double> got(66);
  a.arr->get(idx[garray::all], std::span<double>(got));
  CHECK(test::all_ranks(got == want));
}

TEST_CASE("gemm: C may alias B, or overlap a view of A: every operand read before C is written") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  const auto dense_of = [](test::Reference<double, 2>& r, garray::Index i0, garray::Index rows) {
    std::vector<double> out;
    for (garray::Index i = i0; i < i0 + rows; ++i)
      for (garray::Index j = 0; j < static_cast<garray::Index>(r.a.shape()[1]); ++j) out.push_back(r.a[i][j]);
    return out;
  };
  {  // b = a @ b: C is B
    Operand<double> a(ctx, rng, {6, 6}, false), b(ctx, rng, {6, 5}, false);
    auto da = a.dense(), db = b.dense();
    std::vector<double> want(30);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 6, 5, 6, 1.0, da.data(), 6, db.data(), 5, 0.0, want.data(), 5);
    garray::gemm(1.0, *a.arr, *b.arr, 0.0, *b.arr);
    std::vector<double> got(30);
    b.arr->get(idx[garray::all], std::span<double>(got));
    CHECK(test::all_ranks(got == want));
    CHECK(equal_everywhere(*a.arr, a.base()));  // A untouched
  }
  {  // a[2:6] = 2 a[2:6] - a[0:4] @ b: C overlaps the rows of A that the product reads
    Operand<double> a(ctx, rng, {9, 5}, false), b(ctx, rng, {5, 5}, false);
    const auto a04 = dense_of(a.base(), 0, 4), c = dense_of(a.base(), 2, 4);
    auto db = b.dense();
    std::vector<double> want = c;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 4, 5, 5, -1.0, a04.data(), 5, db.data(), 5, 2.0,
                want.data(), 5);
    garray::gemm(-1.0, (*a.arr)[idx[range(0, 4)]], *b.arr, 2.0, (*a.arr)[idx[range(2, 6)]]);
    for (garray::Index i = 0; i < 4; ++i)
      for (garray::Index j = 0; j < 5; ++j) a.base().a[2 + i][j] = want[static_cast<std::size_t>(5 * i + j)];
    CHECK(equal_everywhere(*a.arr, a.base()));  // rows 2..5 the result, the others untouched
    CHECK(equal_everywhere(*b.arr, b.base()));
  }
}

TEST_CASE("gemm completes every rank's earlier writes to A, B and C before it reads") {
  // The last rank puts all three operands and calls gemm at once: no fence, no sync.
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  garray::GlobalArray<double, 2> a(ctx, {5, 4}), b(ctx, {4, 3}, garray::Distribution<2>::slab(1)),
      c(ctx, {5, 3}, garray::Distribution<2>::slab(0));
  std::vector<double> va(20), vb(12), vc(15);
  for (auto* v : {&va, &vb, &vc})
    for (auto& x : *v) x = rand_val<double>(rng);
  if (ctx.rank() == ctx.size() - 1) {
    a.put(idx[garray::all], std::span<const double>(va));
    b.put(idx[garray::all], std::span<const double>(vb));
    c.put(idx[garray::all], std::span<const double>(vc));
  }
  garray::gemm(1.0, a, b, 1.0, c);
  std::vector<double> want = vc, got(15);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 5, 3, 4, 1.0, va.data(), 4, vb.data(), 3, 1.0, want.data(), 3);
  c.get(idx[garray::all], std::span<double>(got));
  CHECK(test::all_ranks(got == want));
}

TEST_CASE("user guide: matrix products") {
  garray::Context ctx;
  // clang-format off
  // guide-example: matrix products
  using garray::idx, garray::range, garray::MatOp;
  garray::GlobalArray<double, 2> a(ctx, {300, 200}), b(ctx, {200, 100}, garray::Distribution<2>::slab(1));
  garray::fill_random(a.view(), 1, -1.0, 1.0);
  garray::fill_random(b.view(), 2, -1.0, 1.0);

  auto c = garray::matmul(a, b);                  // a new 300 x 100 array (blocked), c = a @ b
  garray::gemm(2.0, a, b, 0.5, c);                // c = 2 a b + 0.5 c  (BLAS dgemm semantics)
  garray::GlobalArray<double, 2> d(ctx, {200, 200});
  garray::gemm(MatOp::transpose, MatOp::none, 1.0, a, a, 0.0, d);   // d = a^T a
  // views: sub-matrices, strided or reversed; C may alias A or B (numpy's a[...] = a @ b)
  garray::gemm(1.0, a[idx[range(0, 100)]], b, 0.0, c[idx[range(200, 300)]]);
  // end guide-example
  // clang-format on
  const auto fa = garray::allgather(a), fb = garray::allgather(b), fc = garray::allgather(c),
             fd = garray::allgather(d);
  double err = 0, scale = 0;
  for (int i = 0; i < 300; ++i)
    for (int j = 0; j < 100; ++j) {
      double s = 0;
      if (i >= 200) {
        for (int k = 0; k < 200; ++k) s += fa[i - 200][k] * fb[k][j];
      } else {
        s = 0;
        for (int k = 0; k < 200; ++k) s += fa[i][k] * fb[k][j];
        s = 2.5 * s;  // 2 a b + 0.5 (a b)
      }
      err = std::max(err, std::abs(fc[i][j] - s));
      scale = std::max(scale, std::abs(s));
    }
  for (int i = 0; i < 200; i += 7)
    for (int j = 0; j < 200; j += 11) {
      double s = 0;
      for (int k = 0; k < 300; ++k) s += fa[k][i] * fa[k][j];
      err = std::max(err, std::abs(fd[i][j] - s));
    }
  CHECK(err <= 1e-12 * std::max(1.0, scale) * 300);
}

TEST_CASE("matmul: batched over the leading dimension of 3-d arrays") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  const gidx nb = 3, m = 7, k = 5, n = 6;
  garray::GlobalArray<double, 3> a(ctx, {nb, m, k}), b(ctx, {nb, k, n}, garray::Distribution<3>::slab(2));
  test::Reference<double, 3> ra(a.shape()), rb(b.shape());
  ntest::randomize(rng, ra, -3, 3);
  ntest::randomize(rng, rb, -3, 3);
  ntest::load(a, ra);
  ntest::load(b, rb);
  auto c = garray::matmul(a, b);
  CHECK(c.shape() == garray::Shape<3>{nb, m, n});
  test::Reference<double, 3> want(c.shape());
  for (gidx q = 0; q < nb; ++q)
    for (gidx i = 0; i < m; ++i)
      for (gidx j = 0; j < n; ++j) {
        double s = 0;
        for (gidx l = 0; l < k; ++l) s += ra.at({q, i, l}) * rb.at({q, l, j});
        want.at({q, i, j}) = s;
      }
  CHECK(test::equal_on_all_ranks(c, want));
  garray::GlobalArray<double, 3> bad(ctx, {nb + 1, k, n});
  CHECK_THROWS_AS((void)garray::matmul(a, bad), garray::SizeMismatch);
}

TEST_CASE("gemm: replicated operands and a replicated result (every copy gets the product)") {
  garray::Context ctx;
  auto rng = test::Rng(test::shared_seed());
  using D = garray::Distribution<2>;
  garray::GlobalArray<double, 2> a(ctx, {6, 4}, D::replicated()), b(ctx, {4, 5}), c(ctx, {6, 5}, D::replicated());
  test::Reference<double, 2> ra(a.shape()), rb(b.shape());
  ntest::randomize(rng, ra, -3, 3);
  ntest::randomize(rng, rb, -3, 3);
  {
    auto blk = a.access();  // every rank writes its own copy
    for (gidx i = 0; i < 6; ++i)
      for (gidx j = 0; j < 4; ++j) blk.view()[i][j] = ra.at({i, j});
  }
  a.sync();
  ntest::load(b, rb);
  garray::gemm(1.0, a, b, 0.0, c);
  bool ok = true;
  auto blk = c.access();  // my own copy holds the whole product
  for (gidx i = 0; i < 6; ++i)
    for (gidx j = 0; j < 5; ++j) {
      double s = 0;
      for (gidx l = 0; l < 4; ++l) s += ra.at({i, l}) * rb.at({l, j});
      ok = ok && blk.view()[i][j] == s;
    }
  CHECK(test::all_ranks(ok));
}

TEST_CASE("gemm: beta == 0 does not read C (NaN in C does not propagate)") {
  garray::Context ctx;
  garray::GlobalArray<double, 2> a(ctx, {5, 4}), b(ctx, {4, 3}), c(ctx, {5, 3});
  garray::fill(a, 1.0);
  garray::fill(b, 2.0);
  garray::fill(c, std::nan(""));
  garray::gemm(1.0, a, b, 0.0, c);
  CHECK(garray::sum(c) == 5 * 3 * 8.0);
}

namespace {
using test::message_of;
}  // namespace

TEST_CASE("gemm/matmul bad input: every rank throws, nothing written") {
  garray::Context ctx;
  garray::GlobalArray<double, 2> a(ctx, {4, 5}), b(ctx, {4, 3}), c(ctx, {4, 3});
  garray::fill(c, 7.0);
  auto m = message_of<garray::SizeMismatch>([&] { garray::gemm(1.0, a, b, 0.0, c); });
  CHECK(m.find("garray::gemm<double>") != std::string::npos);
  CHECK(m.find("inner dimensions differ") != std::string::npos);
  m = message_of<garray::SizeMismatch>([&] { (void)garray::matmul(a, b); });
  CHECK(m.find("garray::matmul<double>") != std::string::npos);
  m = message_of<garray::SizeMismatch>([&] { garray::gemm(MatOp::transpose, MatOp::none, 1.0, a, b, 0.0, c); });
  CHECK(m.find("C has shape [4, 3]") != std::string::npos);
  if (ctx.size() > 1) {  // an operand on another group (the same ranks, numbered backwards)
    garray::Context rev = ctx.split(0, ctx.size() - ctx.rank());
    garray::GlobalArray<double, 2> bo(rev, {5, 3});
    m = message_of<garray::InvalidArgument>([&] { garray::gemm(1.0, a, bo, 0.0, c); });
    CHECK(m.find("number the same ranks differently") != std::string::npos);  // not "different groups"
    auto cc = garray::zeros<double>(rev, garray::Shape<2>{4, 3});             // copy refuses it alike
    m = message_of<garray::InvalidArgument>([&] { garray::copy(cc.view(), c.view()); });
    CHECK(m.find("number the same ranks differently") != std::string::npos);
  }
  // ranks disagreeing on alpha: CollectiveMismatch everywhere
  garray::GlobalArray<double, 2> b5(ctx, {5, 3});
  m = message_of<garray::CollectiveMismatch>(
      [&] { garray::gemm(ctx.rank() == 0 && ctx.size() > 1 ? 2.0 : 1.0, a, b5, 0.0, c); });
  CHECK((ctx.size() == 1 ? m == "NO THROW" : m.find("garray::gemm") != std::string::npos));
  if (ctx.size() == 1) garray::fill(c, 7.0);
  CHECK(garray::sum(c) == 7.0 * 12);
}

TEST_CASE("gemm: operands on another handle of the same group are fine") {
  garray::Context ctx, other(MPI_COMM_WORLD);
  garray::GlobalArray<double, 2> a(ctx, {4, 5}), b(other, {5, 3}), c(ctx, {4, 3});
  garray::fill(a, 1.0);
  garray::fill(b, 2.0);
  garray::gemm(1.0, a, b, 0.0, c);
  CHECK(garray::sum(c) == 12 * 10.0);
}

TEST_CASE("matmul of operands on different groups: InvalidArgument on every rank before C is created") {
  garray::Context ctx;
  if (ctx.size() < 2) return;  // one rank: every split numbers it alike
  // The same ranks numbered in reverse (MPI_SIMILAR): one sub-context, not two sibling halves
  // creating windows at once (Open MPI 4.1's osc/rdma fails that at random, ompi#9492).
  const garray::Context half = ctx.split(0, -ctx.rank());
  garray::GlobalArray<double, 2> a(ctx, {4, 5}), b(half, {5, 3});
  garray::GlobalArray<double, 3> a3(ctx, {0, 2, 2}), b3(half, {0, 2, 2});  // no batches
  const auto windows = ctx.stats().windows_allocated;
  const auto hits = ctx.stats().cache_hits;
  const auto held = ctx.cache().windows_held();
  for (const bool three : {false, true}) {
    std::string msg;
    const test::Got g =
        test::outcome([&] { three ? (void)garray::matmul(a3, b3) : (void)garray::matmul(a, b); }, &msg);
    CAPTURE(three);
    CAPTURE(msg);
    CHECK(test::all_ranks(g == test::Got::invalid));
    CHECK(msg.find("number the same ranks differently") != std::string::npos);
  }
  // nothing was created (the window cache and the counters are untouched)
  CHECK(ctx.stats().windows_allocated == windows);
  CHECK(ctx.stats().cache_hits == hits);
  CHECK(ctx.cache().windows_held() == held);
}

#ifdef GARRAY_FAULT_INJECTION
TEST_CASE("gemm: a rank failing mid-product makes every rank throw; A and B unchanged, C unspecified; the context still works") {
  garray::Context ctx;
  garray::GlobalArray<double, 2> a(ctx, {9, 8}), b(ctx, {8, 7}), c(ctx, {9, 7});
  garray::fill(a, 1.0);
  garray::fill(b, 1.0);
  garray::fill(c, 3.0);
  for (const char* point : {"gemm.compute", "gemm.panel"}) {
    const int victim = ctx.size() - 1;  // owns a non-empty block of c at every rank count here
    if (ctx.rank() == victim) garray::testing::arm_fault(point);
    bool threw = false, right_type = false;
    try {
      garray::gemm(1.0, a, b, 1.0, c);
    } catch (const garray::testing::InjectedFault&) {
      threw = true;
      right_type = ctx.rank() == victim;
    } catch (const garray::CollectiveFailure& e) {
      threw = true;
      right_type = ctx.rank() != victim && e.failed_rank() == victim;
    }
    garray::testing::disarm_fault();
    CHECK(test::all_ranks(threw && right_type));
    // C is unspecified now (the other ranks updated their blocks in place); A is unchanged
    CHECK(garray::sum(a) == 72.0);
  }
  garray::gemm(1.0, a, b, 0.0, c);
  CHECK(garray::sum(c) == 8.0 * 63);
}
#endif

// gemm with C aliasing A computes into a private buffer and stores it after an agreement
// (design.md, matmul.hpp): rank 0 owns all columns of a 512 x 512 A = C but the last, which
// it reads last (on rma windows with panel 8 in the last panel); rank 1 finishes its one
// column in microseconds and must not store it before rank 0 read it.
TEST_CASE("gemm a = a @ b: no rank stores C before a slow rank read the column it needs") {
  garray::Context ctx;
  if (ctx.size() < 2) return;
  const garray::Index m = 512;
  using D = garray::Distribution<2>;
  std::array<std::vector<garray::Index>, 2> starts{std::vector<garray::Index>{0},
                                                   std::vector<garray::Index>{0, m - 1}};
  garray::GlobalArray<double, 2> a(ctx, {m, m}, D::irregular(starts));
  garray::GlobalArray<double, 2> b(ctx, {m, m}, D::replicated());
  for (garray::Index panel : {garray::Index{0}, garray::Index{8}}) {
    INFO("panel " << panel);
    garray::generate(
        a, [](const garray::Shape<2>& i) { return static_cast<double>((i[0] * 7 + i[1] * 3) % 7 - 3); });
    garray::generate(
        b, [](const garray::Shape<2>& i) { return static_cast<double>((i[0] * 5 + i[1] * 11) % 7 - 3); });
    const auto a0 = garray::allgather(a);
    const auto b0 = garray::allgather(b);
    garray::GemmOptions opt;
    opt.panel = panel;
    garray::gemm(1.0, a, b, 0.0, a, opt);  // a = a @ b
    const auto got = garray::allgather(a);
    bool ok = true;
    for (garray::Index i = 0; i < m; i += 7)
      for (garray::Index j = 0; j < m; ++j) {
        double s = 0;  // |s| <= 512 * 9: exact in any order
        for (garray::Index k = 0; k < m; ++k) s += a0[i][k] * b0[k][j];
        ok = ok && got[i][j] == s;
      }
    CHECK(test::all_ranks(ok));
  }
}
