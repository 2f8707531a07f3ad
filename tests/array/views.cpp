// Views: random chains of slicings (negative steps, dropped dimensions) used with every
// operation that takes a region, against a serial reference on every rank; copy between
// arrays of different distributions and overlapping copies in one array; statistics that
// prove negative steps cost no extra communication; bad input.
//
// Every rank draws the same random numbers (shared seed), so every rank applies every
// rank's operations to its reference and executes only its own.
#include <complex>
#include <garray/array/copy.hpp>
#include <set>

#include "support/test_support.hpp"

using garray::Index;

using garray::_;
using garray::all;
using garray::idx;
using garray::range;
using garray::Shape;
using garray::View;

namespace {

/// Reference of a view: per base dimension the base indices it selects, in view order
/// (a dropped dimension has exactly one).
template <std::size_t N>
struct RefView {
  std::array<std::vector<Index>, N> ids;
  std::array<bool, N> dropped{};
};

template <std::size_t N>
RefView<N> full_ref(const Shape<N>& shape) {
  RefView<N> r;
  for (std::size_t d = 0; d < N; ++d)
    for (Index i = 0; i < shape[d]; ++i) r.ids[d].push_back(i);
  return r;
}

/// The base indices of a reference view in row-major view order.
template <std::size_t N>
std::vector<Shape<N>> elements(const RefView<N>& rv) {
  std::vector<Shape<N>> out;
  test::for_each_selected<N>(rv.ids, [&](const Shape<N>& i, Index) { out.push_back(i); });
  return out;
}

template <std::size_t M>
Index linear(const Shape<M>& k, const Shape<M>& shape) {
  Index p = 0;
  for (std::size_t d = 0; d < M; ++d) p = p * shape[d] + k[d];
  return p;
}

template <class T>
std::vector<T> random_values(test::Rng& g, Index n) {
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = test::make_value<T>(test::uniform(g, -40, 40));
  return v;
}

/// Applies item `it` (a RefItem) to kept dimension d of a reference view.
template <std::size_t N>
void apply_item(RefView<N>& rv, std::size_t d, const test::RefItem& it) {
  const auto len = static_cast<Index>(rv.ids[d].size());
  std::vector<Index> next;
  for (auto pos : test::ref_indices(it, len)) next.push_back(rv.ids[d][static_cast<std::size_t>(pos)]);
  rv.ids[d] = next;
  if (it.is_index) rv.dropped[d] = true;
}

/// Slices `v` 0..depth more times at random (full slices, short slices, integer indices
/// that drop a dimension; random negative steps and out-of-range bounds), mirroring each
/// step on the reference, then calls f(view, reference).
template <class T, std::size_t N, std::size_t M, class F>
void with_random_view(test::Rng& g, View<T, N, M> v, RefView<N> rv, int depth, F&& f) {
  if constexpr (M == 0) {
    f(v, rv);
  } else {
    if (depth == 0) {
      f(v, rv);
      return;
    }
    std::array<std::size_t, M> kd{};  // base dimension of each kept dimension
    for (std::size_t d = 0, j = 0; d < N; ++d)
      if (!rv.dropped[d]) kd[j++] = d;
    const auto choice = test::uniform(g, 0, 3);
    std::vector<std::size_t> droppable;
    for (std::size_t j = 0; j < M; ++j)
      if (!rv.ids[kd[j]].empty()) droppable.push_back(j);
    if (choice == 0 && !droppable.empty()) {  // one integer Index: M -> M-1
      const std::size_t q =
          droppable[static_cast<std::size_t>(test::uniform(g, 0, static_cast<Index>(droppable.size()) - 1))];
      garray::Slice<M, M - 1> s;
      std::vector<test::RefItem> items(M);
      for (std::size_t j = 0; j < M; ++j) {
        const auto len = static_cast<Index>(rv.ids[kd[j]].size());
        if (j == q) {
          items[j].is_index = true;
          items[j].value = test::uniform(g, -len, len - 1);
        } else {
          items[j] = test::random_item(g, len, false);
        }
        s.items[j] = test::to_item(items[j]);
      }
      for (std::size_t j = 0; j < M; ++j) apply_item(rv, kd[j], items[j]);
      with_random_view<T, N, M - 1>(g, v[s], rv, depth - 1, f);
    } else if (choice == 1) {  // fewer indices than dimensions: the rest stay whole
      const auto it = test::random_item(g, static_cast<Index>(rv.ids[kd[0]].size()), false);
      garray::Slice<1, 1> s;
      s.items[0] = test::to_item(it);
      apply_item(rv, kd[0], it);
      with_random_view<T, N, M>(g, v[s], rv, depth - 1, f);
    } else {
      garray::Slice<M, M> s;
      std::vector<test::RefItem> items(M);
      for (std::size_t j = 0; j < M; ++j) {
        items[j] = test::random_item(g, static_cast<Index>(rv.ids[kd[j]].size()), false);
        s.items[j] = test::to_item(items[j]);
      }
      for (std::size_t j = 0; j < M; ++j) apply_item(rv, kd[j], items[j]);
      with_random_view<T, N, M>(g, v[s], rv, depth - 1, f);
    }
  }
}

/// A random view of `a` with view shape `ks`, keeping the base dimensions marked in
/// `keep` (random steps of both signs, random integers for dropped dimensions).
template <class T, std::size_t N, std::size_t M>
std::pair<View<T, N, M>, RefView<N>> view_with_shape(test::Rng& g, garray::GlobalArray<T, N>& a,
                                                     const std::array<bool, N>& keep, const Shape<M>& ks) {
  garray::Slice<N, M> s;
  RefView<N> rv;
  std::size_t j = 0;
  for (std::size_t d = 0; d < N; ++d) {
    const Index len = a.shape()[d];
    garray::SliceItem& it = s.items[d];
    if (!keep[d]) {
      it.is_index = true;
      it.value = test::uniform(g, -len, len - 1);
      rv.ids[d] = {it.value < 0 ? it.value + len : it.value};
      rv.dropped[d] = true;
      continue;
    }
    const Index c = ks[j++];
    if (c == 0) {
      const Index at = test::uniform(g, 0, len);
      it.r = range(at, at);
      continue;
    }
    const Index smax = c == 1 ? 3 : std::min<Index>(3, (len - 1) / (c - 1));
    Index step = test::uniform(g, 1, std::max<Index>(1, smax));
    const Index span = (c - 1) * step;
    const Index low = test::uniform(g, 0, len - 1 - span);
    if (test::uniform(g, 0, 1) == 0) {
      // numpy spelling with a negative start sometimes
      const Index start = test::uniform(g, 0, 1) ? low : low - len;
      it.r = range(start, low + span + 1, step);
    } else {
      step = -step;
      const Index stop = low - 1;
      it.r = stop < 0 ? range(low + span, _, step) : range(low + span, stop, step);
    }
    for (Index k = 0; k < c; ++k) rv.ids[d].push_back(step > 0 ? low + k * step : low + span + k * step);
  }
  return {View<T, N, M>(a, garray::normalize(a.shape(), s)), rv};
}

template <class T, std::size_t N>
garray::GlobalArray<T, N> random_array(const garray::Context& ctx, test::Rng& g, const Shape<N>& shape) {
  const auto dist = test::random_distribution<N>(g, shape, ctx.size());
  Shape<N> ghost{};
  if (test::uniform(g, 0, 2) == 0)
    for (auto& x : ghost) x = test::uniform(g, 0, 1);
  return garray::GlobalArray<T, N>(ctx, shape, dist, ghost);
}

/// Random contents, written by rank 0, mirrored in `ref`.
template <class T, std::size_t N>
void randomize(test::Rng& g, garray::GlobalArray<T, N>& a, test::Reference<T, N>& ref) {
  const auto vals = random_values<T>(g, a.size());
  std::copy(vals.begin(), vals.end(), ref.a.data());
  if (a.context().rank() == 0) a.put_section(garray::Section<N>::full(a.shape()), vals);
  a.sync();
}

/// copy(dst view of a new array of rank ND, v) with a random distribution and dropped dims.
template <class T, std::size_t ND, std::size_t N, std::size_t M>
bool copy_to_other(const garray::Context& ctx, test::Rng& g, View<T, N, M> v, const RefView<N>& rv,
                   test::Reference<T, N>& ref) {
  static_assert(ND >= M);
  const auto ks = v.shape();
  std::array<bool, ND> keep{};
  {
    std::vector<std::size_t> dims(ND);
    for (std::size_t d = 0; d < ND; ++d) dims[d] = d;
    std::shuffle(dims.begin(), dims.end(), g);
    for (std::size_t q = 0; q < M; ++q) keep[dims[q]] = true;
  }
  Shape<ND> shape{};
  for (std::size_t d = 0, j = 0; d < ND; ++d)
    shape[d] = keep[d] ? std::max<Index>(1, ks[j++] * test::uniform(g, 1, 3)) : test::uniform(g, 1, 4);
  auto b = random_array<T, ND>(ctx, g, shape);
  test::Reference<T, ND> refb(shape);
  randomize(g, b, refb);
  auto [dv, drv] = view_with_shape<T, ND, M>(g, b, keep, ks);
  INFO("copy into " << dv.describe() << " of " << b.distribution().describe() << " from " << v.describe());
  const auto src = elements(rv), dst = elements(drv);
  bool ok = src.size() == dst.size();
  for (std::size_t q = 0; ok && q < src.size(); ++q) refb.at(dst[q]) = ref.at(src[q]);
  garray::copy(dv, v);
  ok = ok && test::equal_on_all_ranks(b, refb);
  return ok;
}

/// Every operation that takes a region, on view `v` of `a`, against the reference.
template <class T, std::size_t N, std::size_t M>
void exercise(const garray::Context& ctx, test::Rng& g, garray::GlobalArray<T, N>& a,
              test::Reference<T, N>& ref, View<T, N, M> v, const RefView<N>& rv) {
  const int p = ctx.size(), me = ctx.rank();
  const auto els = elements(rv);
  const auto n = static_cast<Index>(els.size());
  const auto shp = v.shape();
  INFO("view " << v.describe() << " shape " << garray::detail::seq(shp) << " of "
               << garray::detail::seq(a.shape()) << " " << a.distribution().describe());
  CHECK(v.size() == n);
  auto expected = [&] {
    std::vector<T> e;
    for (const auto& i : els) e.push_back(ref.at(i));
    return e;
  };

  // get (blocking, nonblocking, as a value / boost array)
  {
    std::vector<T> out(static_cast<std::size_t>(n));
    if (test::uniform(g, 0, 1))
      v.get(out);
    else
      v.get_nb(out).wait();
    CHECK(out == expected());
    if constexpr (M == 0) {
      CHECK(v.get() == ref.at(els[0]));
    } else {
      const auto arr = v.get();
      CHECK(std::equal(arr.data(), arr.data() + arr.num_elements(), expected().begin()));
    }
    a.sync();  // everyone has read before anyone writes
  }
  // put from one writer
  {
    const int writer = static_cast<int>(test::uniform(g, 0, p - 1));
    const auto vals = random_values<T>(g, n);
    for (Index q = 0; q < n; ++q)
      ref.at(els[static_cast<std::size_t>(q)]) = vals[static_cast<std::size_t>(q)];
    if (me == writer) {
      if constexpr (M == 0)
        v.put(vals[0]);
      else
        v.put(vals);
    }
    a.sync();
  }
  // accumulate from everyone
  for (int r = 0; r < p; ++r) {
    const auto vals = random_values<T>(g, n);
    const T alpha = test::make_value<T>(test::uniform(g, -2, 3));
    for (Index q = 0; q < n; ++q)
      ref.at(els[static_cast<std::size_t>(q)]) += alpha * vals[static_cast<std::size_t>(q)];
    if (me == r) {
      if (test::uniform(g, 0, 1))
        v.accumulate(vals, alpha);
      else
        v.acc_nb(vals, alpha).wait();
    } else {
      (void)test::uniform(g, 0, 1);
    }
  }
  a.sync();
  CHECK(test::equal_on_all_ranks(a, ref));

  // gather / scatter / scatter_acc with view coordinates (negative ones count from the end)
  if (n > 0) {
    auto random_positions = [&](std::size_t count, bool distinct) {
      std::vector<Shape<M>> ks;
      std::set<Index> seen;
      for (std::size_t q = 0; q < count; ++q) {
        Shape<M> k{};
        for (std::size_t d = 0; d < M; ++d) {
          k[d] = test::uniform(g, 0, shp[d] - 1);
          if (test::uniform(g, 0, 1)) k[d] -= shp[d];
        }
        Shape<M> kk = k;
        for (std::size_t d = 0; d < M; ++d) kk[d] += kk[d] < 0 ? shp[d] : 0;
        if (distinct && !seen.insert(linear(kk, shp)).second) continue;
        ks.push_back(k);
      }
      return ks;
    };
    auto at = [&](const Shape<M>& k) -> T& {
      Shape<M> kk = k;
      for (std::size_t d = 0; d < M; ++d) kk[d] += kk[d] < 0 ? shp[d] : 0;
      return ref.at(els[static_cast<std::size_t>(linear(kk, shp))]);
    };
    const auto gk = random_positions(static_cast<std::size_t>(test::uniform(g, 1, 12)), false);
    std::vector<T> got(gk.size());
    v.gather(gk, got);
    bool ok = true;
    for (std::size_t q = 0; q < gk.size(); ++q) ok = ok && got[q] == at(gk[q]);
    CHECK(ok);
    a.sync();

    const int writer = static_cast<int>(test::uniform(g, 0, p - 1));
    const auto sk = random_positions(static_cast<std::size_t>(test::uniform(g, 1, 12)), true);
    const auto sv = random_values<T>(g, static_cast<Index>(sk.size()));
    for (std::size_t q = 0; q < sk.size(); ++q) at(sk[q]) = sv[q];
    if (me == writer) v.scatter(sk, sv);
    a.sync();
    for (int r = 0; r < p; ++r) {
      const auto ak = random_positions(static_cast<std::size_t>(test::uniform(g, 1, 12)), false);
      const auto av = random_values<T>(g, static_cast<Index>(ak.size()));
      const T alpha = test::make_value<T>(test::uniform(g, -2, 2));
      for (std::size_t q = 0; q < ak.size(); ++q) at(ak[q]) += alpha * av[q];
      if (me == r) v.scatter_acc(ak, av, alpha);
    }
    a.sync();
    CHECK(test::equal_on_all_ranks(a, ref));
  }

  // access(): the owned parts, in view coordinates, cover the view exactly once
  {
    bool ok = true;
    Index mine = 0;
    const T one = test::make_value<T>(1);
    {
      auto vb = v.access();
      mine = vb.size();
      CHECK(vb.size() == v.local_size());
      if constexpr (M == 0) {
        if (T* e = vb.element()) {
          ok = ok && *e == ref.at(els[0]);
          *e += one;
        }
        ok = ok && (vb.element() != nullptr) == (vb.size() == 1);
      } else {
        const auto b = vb.box();
        CHECK(b == v.local_box());
        ok = ok && vb.size() == (b.empty() ? 0 : b.volume());
        std::array<std::vector<Index>, M> ks;
        for (std::size_t d = 0; d < M; ++d)
          for (Index k = b.lo[d]; k < b.hi[d]; ++k) ks[d].push_back(k);
        if (!b.empty())
          test::for_each_selected<M>(ks, [&](const Shape<M>& k, Index) {
            const auto gi = v.base_index(k);
            ok = ok && gi == els[static_cast<std::size_t>(linear(k, shp))];
            ok = ok && a.owner(gi) == me;
            T& x = vb.view()(k);
            ok = ok && x == ref.at(gi);
            x += one;
          });
      }
    }
    CHECK(ok);
    Index total = 0;
    MPI_Allreduce(&mine, &total, 1, MPI_INT64_T, MPI_SUM, ctx.comm());
    CHECK(total == n);
    for (const auto& i : els) ref.at(i) += one;
    a.sync();
  }

  // fill
  {
    const T val = test::make_value<T>(test::uniform(g, -9, 9));
    for (const auto& i : els) ref.at(i) = val;
    if (test::uniform(g, 0, 1))
      garray::fill(v, val);
    else
      v.fill(val);
    CHECK(test::equal_on_all_ranks(a, ref));
  }

  // copy into another array of the same rank and of rank M (different distributions)
  CHECK(copy_to_other<T, N>(ctx, g, v, rv, ref));
  CHECK(copy_to_other<T, (M == 0 ? 1 : M)>(ctx, g, v, rv, ref));

  // copy within the same array: overlapping in general; numpy result (source read first)
  {
    auto [dv, drv] = view_with_shape<T, N, M>(
        g, a,
        [&] {
          std::array<bool, N> k{};
          for (std::size_t d = 0; d < N; ++d) k[d] = !rv.dropped[d];
          return k;
        }(),
        shp);
    INFO("overlapping copy into " << dv.describe());
    const auto dst = elements(drv);
    std::vector<T> src;
    for (const auto& i : els) src.push_back(ref.at(i));
    for (std::size_t q = 0; q < dst.size(); ++q) ref.at(dst[q]) = src[q];
    garray::copy(dv, v);
    CHECK(test::equal_on_all_ranks(a, ref));
  }
}

template <class T, std::size_t N>
void random_views_case(const garray::Context& ctx, test::Rng& g, Index max_extent, int views) {
  const auto shape = test::random_shape<N>(g, max_extent);
  auto a = random_array<T, N>(ctx, g, shape);
  test::Reference<T, N> ref(shape);
  randomize(g, a, ref);
  INFO("array " << garray::detail::seq(shape) << " " << a.distribution().describe() << " ghost "
                << garray::detail::seq(a.ghost()));
  for (int k = 0; k < views; ++k) {
    const int depth = static_cast<int>(test::uniform(g, 1, 4));
    with_random_view<T, N, N>(g, a.view(), full_ref(shape), depth,
                              [&](auto v, const auto& rv) { exercise(ctx, g, a, ref, v, rv); });
  }
}

using test::message_of;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE_TEMPLATE("random views with every operation match the serial reference (2-d)", T, double,
                   std::int64_t, std::complex<float>) {
  garray::Context ctx;
  const auto seed = test::shared_seed();
  INFO("seed " << seed);
  test::Rng g(seed);
  for (int iter = 0; iter < 6; ++iter) random_views_case<T, 2>(ctx, g, 12, 4);
}

TEST_CASE("random views with every operation match the serial reference (1-d, 3-d)") {
  garray::Context ctx;
  const auto seed = test::shared_seed();
  INFO("seed " << seed);
  test::Rng g(seed);
  for (int iter = 0; iter < 4; ++iter) random_views_case<double, 1>(ctx, g, 20, 4);
  for (int iter = 0; iter < 6; ++iter) random_views_case<double, 3>(ctx, g, 7, 4);
}

TEST_CASE("numpy examples: composed views, rank-0 views, access in view coordinates") {
  garray::Context ctx;
  garray::GlobalArray<double, 2> u(ctx, {6, 7});
  {
    auto blk = u.access();
    for (auto i = blk.lo(0); i < blk.hi(0); ++i)
      for (auto j = blk.lo(1); j < blk.hi(1); ++j) blk.view()[i][j] = static_cast<double>(10 * i + j);
  }
  u.sync();
  auto inner = u[idx[range(1, -1)][range(1, -1)]];  // u[1:-1, 1:-1]
  CHECK(inner.shape() == Shape<2>{4, 5});
  auto rev = inner[idx[range(_, _, -2)][all]];  // inner[::-2, :] = u[4:0:-2, 1:-1]
  CHECK(rev.shape() == Shape<2>{2, 5});
  const auto r = rev.get();
  CHECK(r[0][0] == 41.0);
  CHECK(r[1][4] == 25.0);
  auto col = u[idx[all][3]];  // u[:, 3]
  CHECK(col.shape() == Shape<1>{6});
  CHECK(col[idx[-1]].get() == 53.0);  // u[:, 3][-1]
  CHECK(u[idx[3][4]].get() == 34.0);  // 0-d view: a value
  CHECK(u[idx[3]][idx[4]].get() == 34.0);
  CHECK(u[idx[range(_, _, -1)]][idx[0][range(_, _, 3)]].get()[2] == 56.0);  // u[::-1][0, ::3]

  {  // mixed view/array copies: b[::-1] = u, then u2 = b[::-1]
    garray::GlobalArray<double, 2> b(ctx, {6, 7}, garray::Distribution<2>::slab(1)), u2(ctx, {6, 7});
    garray::copy(b[idx[range(_, _, -1)]], u);
    CHECK(b[idx[0][2]].get() == 52.0);
    garray::copy(u2, b[idx[range(_, _, -1)]]);
    const auto all_u2 = u2.view().get(), all_u = u.view().get();
    CHECK(all_u2 == all_u);
  }
  u.sync();  // everyone has read before anyone writes
  // 0-d views: put / accumulate a value, fill, gather
  auto e = u[idx[-1][-1]];
  if (ctx.rank() == 0) e.put(100.0);
  u.sync();
  if (ctx.rank() == ctx.size() - 1) e.accumulate(2.0, 3.0);
  u.sync();
  CHECK(e.get() == 106.0);
  garray::fill(e, 7.0);
  CHECK(u.get(idx[5][6]) == 7.0);
  {
    const std::vector<Shape<0>> one(3);
    std::vector<double> out(3);
    e.gather(one, out);
    CHECK(out == std::vector<double>{7, 7, 7});
    auto eb = e.access();
    CHECK((eb.element() != nullptr) == (u.owner({5, 6}) == ctx.rank()));
    if (eb.element()) CHECK(*eb.element() == 7.0);
  }
  u.sync();
  // access on a reversed view: view coordinates, negative strides
  {
    auto vb = rev.access();
    bool ok = true;
    for (auto i = vb.lo(0); i < vb.hi(0); ++i)
      for (auto j = vb.lo(1); j < vb.hi(1); ++j) {
        const auto gi = rev.base_index({i, j});
        ok = ok && gi[0] == 4 - 2 * i && gi[1] == 1 + j &&
             vb.view()[i][j] == static_cast<double>(10 * gi[0] + gi[1]);
      }
    CHECK(ok);
  }
}

TEST_CASE("negative steps cost no extra communication") {
  garray::Context ctx;
  using A2 = garray::GlobalArray<double, 2>;
  A2 a(ctx, {13, 11});
  std::vector<double> fwd(6 * 11), bwd(6 * 11);
  std::vector<double> vals(6 * 11);
  for (std::size_t q = 0; q < vals.size(); ++q) vals[q] = static_cast<double>(q);
  auto f = a[idx[range(1, 12, 2)][all]];                                   // rows 1, 3, ..., 11
  auto b = a[idx[range(_, _, -1)]][idx[range(1, _, 2)][range(_, _, -1)]];  // rows 11..1, cols reversed
  auto delta = [&](auto&& op, garray::Op kind) {
    const garray::Stats before = ctx.stats();
    op();
    const garray::Stats& after = ctx.stats();
    return std::array<std::int64_t, 5>{after[kind].remote_pieces - before[kind].remote_pieces,
                                       after[kind].local_pieces - before[kind].local_pieces,
                                       after[kind].remote_bytes - before[kind].remote_bytes,
                                       after.mpi_rma_calls - before.mpi_rma_calls,
                                       after[kind].calls - before[kind].calls};
  };
  if (ctx.rank() == 0) {
    const auto pf = delta([&] { f.put(vals); }, garray::Op::put);
    a.fence();
    const auto pb = delta([&] { b.put(vals); }, garray::Op::put);
    a.fence();
    CHECK(pf == pb);
    const auto af = delta([&] { f.accumulate(vals); }, garray::Op::acc);
    const auto ab = delta([&] { b.accumulate(vals); }, garray::Op::acc);
    CHECK(af == ab);
  }
  a.sync();
  const auto gf = delta([&] { f.get(fwd); }, garray::Op::get);
  const auto gb = delta([&] { b.get(bwd); }, garray::Op::get);
  CHECK(gf == gb);
  CHECK(gf[4] == 1);
  if (ctx.size() > 1) CHECK(gf[0] + gf[1] > 1);  // the view spans several owners
  // b is f reversed in both dimensions; f = put(vals) reversed + 2 * vals(acc of both)
  bool ok = true;
  for (std::size_t i = 0; i < 6; ++i)
    for (std::size_t j = 0; j < 11; ++j) ok = ok && bwd[i * 11 + j] == fwd[(5 - i) * 11 + (10 - j)];
  CHECK(ok);
  CHECK(fwd[0] == vals[vals.size() - 1] + vals[0] + vals[vals.size() - 1]);
}

TEST_CASE("rma windows: a put and an accumulate make one MPI call per owner piece, the own piece a copy for put only") {
  garray::Context ctx;
  using A2 = garray::GlobalArray<double, 2>;
  A2 a(ctx, {9, 10});
  a.fill(0.0);
  if (a.window_kind() != garray::WindowKind::rma) return;  // test_array.rma
  int remote = 0;  // owners other than this rank of a piece of the whole array
  bool own = false;
  a.distribution().for_each_block(garray::Box<2>{{0, 0}, {9, 10}}, [&](int r, const auto&) {
    if (r == ctx.rank()) own = true;
    else ++remote;
  });
  const std::vector<double> ones(90, 1.0);
  garray::Stats& st = ctx.stats();
  garray::Stats before = st;
  if (ctx.rank() == 0) {
    a.put(idx[range()][range()], std::span<const double>(ones));
    CHECK(st[garray::Op::put].remote_pieces - before[garray::Op::put].remote_pieces == remote);
    CHECK(st.mpi_rma_calls - before.mpi_rma_calls == remote);  // the own piece: a memory copy
  }
  a.sync();
  before = st;
  a.accumulate(idx[range()][range()], std::span<const double>(ones));
  CHECK(st[garray::Op::acc].remote_pieces - before[garray::Op::acc].remote_pieces == remote);
  CHECK(st.mpi_rma_calls - before.mpi_rma_calls == remote + (own ? 1 : 0));  // atomics: all by MPI
  a.sync();
  bool ok = true;
  const auto got = a.view().get();
  for (Index i = 0; i < 9; ++i)
    for (Index j = 0; j < 10; ++j) ok = ok && got[i][j] == 1.0 + ctx.size();
  CHECK(ok);
}

TEST_CASE("copy lands in destination memory, one get per destination piece") {
  garray::Context ctx;
  using A2 = garray::GlobalArray<double, 2>;
  A2 a(ctx, {9, 10}), b(ctx, {9, 10}), c(ctx, {9, 10}, garray::Distribution<2>::slab(1));
  {
    auto blk = a.access();
    for (auto i = blk.lo(0); i < blk.hi(0); ++i)
      for (auto j = blk.lo(1); j < blk.hi(1); ++j) blk.view()[i][j] = static_cast<double>(10 * i + j);
  }
  a.sync();
  garray::Stats& st = ctx.stats();
  // same distribution: each block copies onto itself without a temporary or MPI call
  st.temp_bytes_peak = 0;
  garray::Stats before = st;
  garray::copy(b, a);
  CHECK(st.temp_bytes_peak == 0);
  CHECK(st[garray::Op::get].calls - before[garray::Op::get].calls == (b.local_box().empty() ? 0 : 1));
  CHECK(st[garray::Op::get].remote_pieces == before[garray::Op::get].remote_pieces);
  CHECK(st.mpi_rma_calls == before.mpi_rma_calls);
  // different distribution: one piece per source owner, MPI calls only for remote ones
  // (rma windows), still no temporary: slab(0) -> slab(1) blocks are contiguous rows
  garray::GlobalArray<double, 2> d(ctx, {9, 10}, garray::Distribution<2>::slab(0));
  before = st;
  garray::copy(c, a);
  garray::copy(d, c);
  CHECK(st[garray::Op::get].calls - before[garray::Op::get].calls ==
        (c.local_box().empty() ? 0 : 1) + (d.local_box().empty() ? 0 : 1));
  int owners = 0;  // source owners of my destination blocks
  a.distribution().for_each_block(c.local_box(), [&](int, const auto&) { ++owners; });
  c.distribution().for_each_block(d.local_box(), [&](int, const auto&) { ++owners; });
  const auto& go = st[garray::Op::get];
  CHECK(go.local_pieces + go.remote_pieces - before[garray::Op::get].local_pieces -
            before[garray::Op::get].remote_pieces ==
        owners);
  CHECK(st.temp_bytes_peak == 0);
  if (a.window_kind() == garray::WindowKind::rma)
    CHECK(st.mpi_rma_calls - before.mpi_rma_calls ==
          go.remote_pieces - before[garray::Op::get].remote_pieces);
  bool ok = true;
  const auto all_d = d.view().get();
  for (Index i = 0; i < 9; ++i)
    for (Index j = 0; j < 10; ++j) ok = ok && all_d[i][j] == static_cast<double>(10 * i + j);
  CHECK(ok);
  // an overlapping copy goes through a temporary and stays correct
  garray::copy(d[idx[range(1, _)]], d[idx[range(_, -1)]]);
  const auto shifted = d.view().get();
  ok = true;
  for (Index i = 0; i < 9; ++i)
    for (Index j = 0; j < 10; ++j)
      ok = ok && shifted[i][j] == static_cast<double>(10 * std::max<Index>(0, i - 1) + j);
  CHECK(ok);
  // reversing in place: x = x[::-1] (also a hazard within one rank's block)
  garray::GlobalArray<double, 1> x(ctx, {11});
  {
    auto blk = x.access();
    for (auto i = blk.lo(0); i < blk.hi(0); ++i) blk.view()[i] = static_cast<double>(i);
  }
  x.sync();
  garray::copy(x.view(), x[idx[range(_, _, -1)]]);
  const auto xr = x.view().get();
  ok = true;
  for (Index i = 0; i < 11; ++i) ok = ok && xr[i] == static_cast<double>(10 - i);
  CHECK(ok);
}

TEST_CASE("copy with a broadcast source: NumPy's values, the source piece fetched once per rank") {
  garray::Context ctx;
  using A2 = garray::GlobalArray<double, 2>;
  const auto seed = test::shared_seed();
  INFO("seed " << seed);
  test::Rng g(seed);
  const Shape<2> shape{9, 7};
  for (int round = 0; round < 4; ++round) {
    A2 a(ctx, shape, test::random_distribution<2>(g, shape, ctx.size()));
    A2 b(ctx, shape, test::random_distribution<2>(g, shape, ctx.size()), {1, 1});
    test::Reference<double, 2> ra(shape), rb(shape);
    randomize(g, a, ra);
    randomize(g, b, rb);
    const auto av = ra.a;  // a's values before the copies below
    garray::Stats& st = ctx.stats();
    // each copy: at most one get per rank (the source piece of its block, then replicated)
    auto one_fetch = [&](auto&& f) {
      const auto before = st[garray::Op::get].calls;
      f();
      return st[garray::Op::get].calls - before <= 1;
    };
    // a column (9, 1) into every column of b
    CHECK(one_fetch([&] { garray::copy(b.view(), a[idx[all][range(2, 3)]]); }));
    for (Index i = 0; i < 9; ++i)
      for (Index j = 0; j < 7; ++j) rb.a[i][j] = av[i][2];
    CHECK(test::equal_on_all_ranks(b, rb));
    // a row (1, 7) into rows 1..7 of b
    CHECK(one_fetch([&] { garray::copy(b[idx[range(1, 8)]], a[idx[range(4, 5)]]); }));
    for (Index i = 1; i < 8; ++i)
      for (Index j = 0; j < 7; ++j) rb.a[i][j] = av[4][j];
    CHECK(test::equal_on_all_ranks(b, rb));
    // one element (1, 1) into a reversed, strided view of b
    CHECK(one_fetch([&] { garray::copy(b[idx[range(_, _, -2)][range(5, 0, -3)]], a[idx[range(3, 4)][range(5, 6)]]); }));
    for (Index i = 8; i >= 0; i -= 2)
      for (Index j = 5; j > 0; j -= 3) rb.a[i][j] = av[3][5];
    CHECK(test::equal_on_all_ranks(b, rb));
    // a reversed column, stretched along the columns
    CHECK(one_fetch([&] { garray::copy(b.view(), a[idx[range(_, _, -1)][range(6, 7)]]); }));
    for (Index i = 0; i < 9; ++i)
      for (Index j = 0; j < 7; ++j) rb.a[i][j] = av[8 - i][6];
    CHECK(test::equal_on_all_ranks(b, rb));
    // the same array, not overlapping: a[0:5] = a[8:9] (a bounding-box test alone took
    // the direct path, which read rows 8..12 instead of repeating row 8)
    CHECK(one_fetch([&] { garray::copy(a[idx[range(0, 5)]], a[idx[range(8, 9)]]); }));
    for (Index i = 0; i < 5; ++i)
      for (Index j = 0; j < 7; ++j) ra.a[i][j] = av[8][j];
    CHECK(test::equal_on_all_ranks(a, ra));
    // ... and a[1:, 2] = a[0:1, 2] through view assignment (NumPy's a[1:, 2:3] = a[:1, 2:3])
    const auto av2 = ra.a;
    a[idx[range(1, _)][range(2, 3)]] = a[idx[range(0, 1)][range(2, 3)]];
    for (Index i = 1; i < 9; ++i) ra.a[i][2] = av2[0][2];
    CHECK(test::equal_on_all_ranks(a, ra));
    // the same array, overlapping: a = a[0:1] (NumPy: row 0 read before anything is written)
    const auto av3 = ra.a;
    CHECK(one_fetch([&] { garray::copy(a.view(), a[idx[range(0, 1)]]); }));
    for (Index i = 0; i < 9; ++i)
      for (Index j = 0; j < 7; ++j) ra.a[i][j] = av3[0][j];
    CHECK(test::equal_on_all_ranks(a, ra));
  }
}

TEST_CASE("copy: a broadcast within one 1-d array, x[1:] = x[0:1], repeats the element") {
  garray::Context ctx;
  for (Index n : {Index{4}, Index{11}}) {
    garray::GlobalArray<double, 1> x(ctx, {n});
    {
      auto blk = x.access();
      for (Index i = blk.lo(0); i < blk.hi(0); ++i) blk.view()[i] = static_cast<double>(i) + 1.0;
    }
    x.sync();
    x[idx[range(1, _)]] = x[idx[range(0, 1)]];
    std::vector<double> got(static_cast<std::size_t>(n));
    x.get(idx[range()], std::span<double>(got));
    for (Index i = 0; i < n; ++i) CHECK(got[static_cast<std::size_t>(i)] == 1.0);
  }
}

TEST_CASE("copy completes every rank's earlier writes to both arrays before it reads") {
  // No fence or sync between the puts and the copy: copy's handshake completes them (the
  // writer's outstanding puts to the source, and to the destination, which copy overwrites
  // only where it writes). On rma windows a put stays outstanding until completed.
  garray::Context ctx;
  using A2 = garray::GlobalArray<double, 2>;
  const int p = ctx.size(), last = p - 1;
  A2 src(ctx, {8, 6}, garray::Distribution<2>::slab(0)), dst(ctx, {8, 6}, garray::Distribution<2>::slab(1));
  std::vector<double> v(48), w(6, -5.0);
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = 1.0 + static_cast<double>(k);
  if (ctx.rank() == last) {
    src.put(idx[all][all], std::span<const double>(v));     // every owner's block of the source
    dst.put(idx[range(7, 8)], std::span<const double>(w));  // a row of dst that copy leaves alone
  }
  garray::copy(dst[idx[range(0, 7)]], src[idx[range(0, 7)]]);
  const auto got = dst.view().get();
  bool ok = true;
  for (Index i = 0; i < 8; ++i)
    for (Index j = 0; j < 6; ++j) ok = ok && got[i][j] == (i < 7 ? v[static_cast<std::size_t>(6 * i + j)] : -5.0);
  CHECK(test::all_ranks(ok));
}

TEST_CASE("views: bad input throws the documented error and changes nothing") {
  garray::Context ctx;
  using A2 = garray::GlobalArray<double, 2>;
  test::Rng g(test::shared_seed());
  A2 a(ctx, {5, 8});
  test::Reference<double, 2> ref(a.shape());
  randomize(g, a, ref);
  auto row = a[idx[2]];  // 1-d, length 8
  std::vector<double> buf(8, -1.0);

  std::string m = message_of<garray::BoundsError>([&] { (void)row[idx[8]]; });
  CHECK(contains(m, "index 8 out of range for extent 8 in dim 0"));
  CHECK(contains(m, "[rank "));
  CHECK(contains(m, "GlobalArray<double,2>::operator[]"));  // the call made, not ::get
  m = message_of<garray::BoundsError>([&] { (void)a[idx[all][-9]]; });
  CHECK(contains(m, "index -9"));
  CHECK(contains(m, "dim 1"));
  CHECK(contains(m, "GlobalArray<double,2>::operator[]"));
  m = message_of<garray::BoundsError>([&] { (void)a[idx[range(1, 3)]][idx[2]]; });  // view has 2 rows
  CHECK(contains(m, "index 2 out of range for extent 2"));
  m = message_of<garray::InvalidSlice>([&] { (void)row[idx[range(0, 4, 0)]]; });
  CHECK(contains(m, "step cannot be zero"));
  {  // a hand-built slice whose items disagree with its type
    garray::Slice<2, 2> s = idx[all][all];
    s.items[1].is_index = true;
    m = message_of<garray::InvalidSlice>([&] { (void)a[s]; });
    CHECK(contains(m, "cannot be a 2-d view"));
    CHECK(contains(m, "::operator[]"));
  }
  m = message_of<garray::SizeMismatch>([&] { row.put(std::span<const double>(buf.data(), 7)); });
  CHECK(contains(m, "7 elements"));
  {
    boost::multi_array<double, 2> wrong(boost::extents[2][3]);
    m = message_of<garray::SizeMismatch>([&] { a[idx[range(0, 2)]].put(wrong); });
    CHECK(contains(m, "for a view of shape [2, 8]"));
  }
  {
    const std::vector<Shape<1>> ks{{1}, {-8}, {8}};
    std::vector<double> vals(3, -5.0);
    m = message_of<garray::BoundsError>([&] { row.scatter(ks, vals); });
    CHECK(contains(m, "scatter(view)"));
    CHECK(contains(m, "entry 2 [8]"));
    CHECK(contains(m, "view shape [8]"));
    m = message_of<garray::SizeMismatch>([&] { row.gather(ks, std::span<double>(vals.data(), 2)); });
    CHECK(contains(m, "3 indices but 2 values"));
  }
  a.sync();
  CHECK(test::equal_on_all_ranks(a, ref));

  // copy: shape mismatch on every rank
  A2 b(ctx, {8, 5});
  test::Reference<double, 2> refb(b.shape());
  randomize(g, b, refb);
  m = message_of<garray::SizeMismatch>([&] { garray::copy(b, a); });
  CHECK(contains(m, "source shape [5, 8] does not broadcast to destination shape [8, 5]"));
  m = message_of<garray::SizeMismatch>([&] { garray::copy(b[idx[0]], a[idx[0]]); });
  CHECK(contains(m, "source shape [8] does not broadcast to destination shape [5]"));
  CHECK(test::equal_on_all_ranks(b, refb));
  CHECK(test::equal_on_all_ranks(a, ref));

  if (ctx.size() > 1) {
    // collective misuse: ranks disagree on the views, the value, or only one rank errs
    m = message_of<garray::CollectiveMismatch>(
        [&] { garray::copy(b[idx[0]], a[idx[all][ctx.rank() == 0 ? 1 : 2]]); });
    CHECK(contains(m, "garray::copy"));
    m = message_of<garray::CollectiveMismatch>([&] { garray::fill(a[idx[ctx.rank() == 0 ? 1 : 2]], 3.0); });
    CHECK(contains(m, "fill"));
    m = message_of<garray::CollectiveMismatch>([&] { a[idx[1]].fill(ctx.rank() == 0 ? 1.0 : 2.0); });
    CHECK(contains(m, "fill"));
    const bool culprit = ctx.rank() == ctx.size() - 1;
    bool threw_error = false;
    try {
      garray::copy(b[idx[0]], culprit ? a[idx[range(0, 4)][1]] : a[idx[all][1]]);
    } catch (const garray::SizeMismatch&) {
      threw_error = culprit;
    } catch (const garray::CollectiveMismatch&) {
      threw_error = !culprit;
    }
    CHECK(threw_error);
    CHECK(test::equal_on_all_ranks(b, refb));
    CHECK(test::equal_on_all_ranks(a, ref));
  }
}

TEST_CASE("user guide: views (slicing, one-sided transfers, fill, copy, access in view coordinates)") {
  // The guide's examples ("Views"), verbatim between the markers, checked against a serial
  // model of u and b.
  garray::Context ctx;
  const double p = ctx.size();
  using Ref = boost::multi_array<double, 2>;
  const auto value = [](Index i, Index j) { return static_cast<double>(10 * i + j); };
  const auto load = [&](garray::GlobalArray<double, 2>& a) {  // a[i, j] = 10 i + j
    a.sync();                                                 // every rank has read a before this rank writes
    {
      auto blk = a.access();
      for (auto i = blk.lo(0); i < blk.hi(0); ++i)
        for (auto j = blk.lo(1); j < blk.hi(1); ++j) blk.view()[i][j] = value(i, j);
    }
    a.sync();
  };
  const auto whole = [](garray::GlobalArray<double, 2>& a) {
    Ref r(boost::extents[6][7]);
    const auto v = test::whole_array(a);
    std::copy(v.begin(), v.end(), r.data());
    return r;
  };
  // clang-format off
  // guide-example: views, the arrays
  using garray::idx, garray::range, garray::all, garray::_;
  garray::GlobalArray<double, 2> u(ctx, {6, 7});
  garray::GlobalArray<double, 2> b(ctx, {6, 7}, garray::Distribution<2>::slab(1));  // for copy() below
  // end guide-example
  // clang-format on
  load(u);
  // clang-format off
  // guide-example: views, slicing, transfers, fill and copy
  auto inner = u[idx[range(1, -1)][range(1, -1)]];  // u[1:-1, 1:-1]   View<double, 2, 2>
  auto col   = u[idx[all][3]];                      // u[:, 3]         View<double, 2, 1>
  auto rev   = inner[idx[range(_, _, -2)]];          // inner[::-2]     = u[4:0:-2, 1:-1]
  double x   = u[idx[3][4]].get();                  // u[3, 4]: a 0-d view reads as a value

  auto m = rev.get();                               // one-sided: a boost::multi_array<double, 2>
  std::vector<double> buf(col.size());
  col.get(buf);                                     // or into your own buffer (row-major)
  if (ctx.rank() == 0) u[idx[all][0]].put(buf);     // u[:, 0] = buf: one-sided, complete at fence()/sync()
  u[idx[all][-1]].accumulate(buf, 2.0);             // u[:, -1] += 2 * buf, from every rank (atomic)
  if (ctx.rank() == 0) u[idx[0][1]].put(1.0);       // 0-d views take a value

  garray::fill(inner, 0.0);                         // collective: u[1:-1, 1:-1] = 0
  garray::copy(b[idx[range(_, _, -1)]], u);          // collective: b[::-1] = u (any distributions)
  garray::copy(u[idx[range(1, _)]], u[idx[range(_, -1)]]);  // u[1:] = u[:-1], overlapping: numpy result
  // end guide-example
  // clang-format on
  CHECK(x == 34.0);
  CHECK(inner.shape() == Shape<2>{4, 5});
  CHECK(col.shape() == Shape<1>{6});
  REQUIRE(rev.shape() == Shape<2>{2, 5});
  REQUIRE(m.shape()[0] == 2);
  REQUIRE(m.shape()[1] == 5);
  bool ok = true;
  for (Index k = 0; k < 2; ++k)
    for (Index c = 0; c < 5; ++c) ok = ok && m[k][c] == value(4 - 2 * k, 1 + c);  // rows 4, 2; columns 1..5
  CHECK(ok);
  REQUIRE(buf.size() == 6);
  for (Index i = 0; i < 6; ++i) ok = ok && buf[static_cast<std::size_t>(i)] == value(i, 3);
  CHECK(ok);
  // The serial model: the writes, the fill, b[::-1] = u, then u[1:] = u[:-1] (numpy order).
  Ref model(boost::extents[6][7]);
  for (Index i = 0; i < 6; ++i)
    for (Index j = 0; j < 7; ++j) model[i][j] = value(i, j);
  for (Index i = 0; i < 6; ++i) {
    model[i][0] = value(i, 3);
    model[i][6] += p * 2.0 * value(i, 3);
  }
  model[0][1] = 1.0;
  for (Index i = 1; i < 5; ++i)
    for (Index j = 1; j < 6; ++j) model[i][j] = 0.0;
  Ref model_b(boost::extents[6][7]);
  for (Index i = 0; i < 6; ++i)
    for (Index j = 0; j < 7; ++j) model_b[5 - i][j] = model[i][j];
  for (Index i = 5; i >= 1; --i)
    for (Index j = 0; j < 7; ++j) model[i][j] = model[i - 1][j];
  CHECK(test::all_ranks(whole(u) == model));
  CHECK(test::all_ranks(whole(b) == model_b));

  load(u);  // fresh values, so that the access below writes something visible
  {
    // clang-format off
    // guide-example: views, access in view coordinates
    auto vb = rev.access();                 // rev = u[4:0:-2, 1:-1]
    auto& w = vb.view();
    for (auto i = vb.lo(0); i < vb.hi(0); ++i)
      for (auto j = vb.lo(1); j < vb.hi(1); ++j) w[i][j] *= 2;   // writes u[4 - 2i, 1 + j]
    // destructor ends the access; u.sync() publishes the writes
    // end guide-example
    // clang-format on
    CHECK(vb.size() == rev.local_size());
  }
  u.sync();
  for (Index i = 0; i < 6; ++i)
    for (Index j = 0; j < 7; ++j)
      model[i][j] = value(i, j) * ((i == 4 || i == 2) && j >= 1 && j <= 5 ? 2.0 : 1.0);
  CHECK(test::all_ranks(whole(u) == model));
}
