// Data movement: scatter_from/gather/allgather round trips, from_local, redistribute and
// transpose between every pair of distributions (blocked, slab on each axis, explicit grid,
// irregular, replicated), replicated arrays staying identical under one-sided writes,
// enumerate/for_each_owned/owners, memory statistics and bad input.
#include "support/outcome.hpp"
#include "array/movement_support.hpp"

#include <complex>
#include <deque>

using garray::Shape;
using garray::Index;

namespace {

using test::message_of;
using test::contains;

template <std::size_t N>
Shape<N> random_ghost(test::Rng& g) {
  Shape<N> gh{};
  if (test::uniform(g, 0, 2) == 0)
    for (auto& x : gh) x = test::uniform(g, 0, 2);
  return gh;
}

/// The array's blocks are those `spec` gives for its shape on its context, for every rank
/// (the distribution asked for, not merely one of the same kind).
template <class T, std::size_t N>
bool has_blocks_of(const garray::GlobalArray<T, N>& a, const garray::Distribution<N>& spec) {
  const auto want = spec.resolve(a.shape(), a.context().size(), "test");
  bool ok = a.distribution().kind() == spec.kind();
  for (int r = 0; r < a.context().size(); ++r) ok = ok && a.distribution().block(r) == want.block(r);
  return ok;
}

/// Every rank's own copy of a replicated array equals the reference (reads are local).
template <class T, std::size_t N>
bool local_copy_equals(garray::GlobalArray<T, N>& a, test::Reference<T, N>& ref) {
  auto blk = a.access();
  bool ok = blk.box() == garray::Box<N>{Shape<N>{}, a.shape()};
  std::array<std::vector<garray::Index>, N> ids;
  for (std::size_t d = 0; d < N; ++d)
    for (garray::Index i = 0; i < a.shape()[d]; ++i) ids[d].push_back(i);
  test::for_each_selected<N>(ids, [&](const Shape<N>& i, garray::Index) { ok = ok && blk.view()(i) == ref.at(i); });
  return ok;
}

template <class T, std::size_t N>
void roundtrip_case(const garray::Context& ctx, test::Rng& g, garray::Index max_extent) {
  const auto shape = test::random_shape<N>(g, max_extent);
  auto ref = test::filled_reference<T, N>(shape);
  for (const auto& dist : test::every_distribution<N>(g, shape, ctx.size())) {
    const int root = static_cast<int>(test::uniform(g, 0, ctx.size() - 1));
    const auto ghost = random_ghost<N>(g);
    INFO("shape " << garray::detail::seq(shape) << " " << dist.describe() << " root " << root << " ghost "
                  << garray::detail::seq(ghost));
    boost::multi_array<T, N> none;
    auto a = ctx.rank() == root ? garray::scatter_from(ctx, root, ref.a, shape, dist, ghost)
                                : garray::scatter_from(ctx, root, none, shape, dist, ghost);
    CHECK(has_blocks_of(a, dist));
    CHECK(a.ghost() == ghost);
    CHECK(test::equal_on_all_ranks(a, ref));
    const int groot = static_cast<int>(test::uniform(g, 0, ctx.size() - 1));
    auto back = garray::gather(a, groot);
    if (ctx.rank() == groot) CHECK(back == ref.a);
    else CHECK(back.num_elements() == 0);
    auto every = garray::allgather(a);
    CHECK(test::all_ranks(every == ref.a));
  }
}

template <class T, std::size_t N>
void redistribute_case(const garray::Context& ctx, test::Rng& g, garray::Index max_extent) {
  const auto shape = test::random_shape<N>(g, max_extent);
  auto ref = test::filled_reference<T, N>(shape);
  const auto dists = test::every_distribution<N>(g, shape, ctx.size());
  boost::multi_array<T, N> none;
  for (const auto& from : dists) {
    auto src = garray::scatter_from(ctx, 0, ctx.rank() == 0 ? ref.a : none, shape, from, random_ghost<N>(g));
    {  // without a ghost width: the source's
      const auto& to = dists[static_cast<std::size_t>(test::uniform(g, 0, static_cast<garray::Index>(dists.size()) - 1))];
      auto keep = garray::redistribute(src, to);
      CHECK(keep.ghost() == src.ghost());
      CHECK(has_blocks_of(keep, to));
      CHECK(test::equal_on_all_ranks(keep, ref));
    }
    for (const auto& to : dists) {
      const auto ghost = random_ghost<N>(g);
      INFO("shape " << garray::detail::seq(shape) << " " << from.describe() << " -> " << to.describe()
                    << " ghost " << garray::detail::seq(ghost));
      auto& st = ctx.stats();
      st.temp_bytes_peak = 0;
      const auto window_before = st.window_bytes;
      const auto rma_before = st.mpi_rma_calls;
      auto dst = garray::redistribute(src, to, ghost);
      const auto block_bytes =
          static_cast<std::int64_t>(dst.layout_of(ctx.rank()).elements) * static_cast<std::int64_t>(sizeof(T));
      // Memory: no temporaries at all, and the only new memory is the new padded block.
      CHECK(st.temp_bytes_peak <= 2 * block_bytes);
      CHECK(st.temp_bytes_peak == 0);
      CHECK(st.window_bytes - window_before <= block_bytes);
      // Messages: at most one get per old owner (plus nothing else).
      int owners = 0;
      if (!dst.local_box().empty())
        owners = from.is_replicated() ? 1 : static_cast<int>(garray::owners(src, dst.local_box()).size());
      CHECK(st.mpi_rma_calls - rma_before <= owners);
      CHECK(has_blocks_of(dst, to));
      CHECK(dst.ghost() == ghost);
      CHECK(test::equal_on_all_ranks(dst, ref));
      if (to.is_replicated()) CHECK(test::all_ranks(local_copy_equals(dst, ref)));
    }
    CHECK(test::equal_on_all_ranks(src, ref));  // the source is untouched
  }
}

template <class T, std::size_t N>
void transpose_case(const garray::Context& ctx, test::Rng& g, garray::Index max_extent) {
  const auto shape = test::random_shape<N>(g, max_extent);
  auto ref = test::filled_reference<T, N>(shape);
  const auto dists = test::every_distribution<N>(g, shape, ctx.size());
  std::array<std::size_t, N> perm{};
  std::iota(perm.begin(), perm.end(), std::size_t{0});
  std::shuffle(perm.begin(), perm.end(), g);
  Shape<N> tshape{};
  for (std::size_t d = 0; d < N; ++d) tshape[d] = shape[perm[d]];
  test::Reference<T, N> tref(tshape);
  std::array<std::vector<garray::Index>, N> ids;
  for (std::size_t d = 0; d < N; ++d)
    for (garray::Index i = 0; i < tshape[d]; ++i) ids[d].push_back(i);
  test::for_each_selected<N>(ids, [&](const Shape<N>& i, garray::Index) {
    Shape<N> j{};
    for (std::size_t d = 0; d < N; ++d) j[perm[d]] = i[d];
    tref.at(i) = ref.at(j);
  });
  boost::multi_array<T, N> none;
  const auto tdists = test::every_distribution<N>(g, tshape, ctx.size());
  for (const auto& from : dists) {
    auto src = garray::scatter_from(ctx, 0, ctx.rank() == 0 ? ref.a : none, shape, from, random_ghost<N>(g));
    const auto& to = tdists[static_cast<std::size_t>(test::uniform(g, 0, static_cast<garray::Index>(tdists.size()) - 1))];
    const auto ghost = random_ghost<N>(g);
    INFO("shape " << garray::detail::seq(shape) << " perm " << garray::detail::seq(perm) << " " << from.describe()
                  << " -> " << to.describe() << " ghost " << garray::detail::seq(ghost));
    ctx.stats().temp_bytes_peak = 0;
    auto t = garray::transpose(src, perm, to, ghost);
    CHECK(t.shape() == tshape);
    CHECK(has_blocks_of(t, to));
    CHECK(t.ghost() == ghost);
    CHECK(ctx.stats().temp_bytes_peak == 0);
    CHECK(test::equal_on_all_ranks(t, tref));
  }
}

}  // namespace

TEST_CASE_TEMPLATE("scatter_from then gather/allgather round-trips for every distribution", T, double,
                   std::int32_t, std::complex<float>) {
  garray::Context ctx;
  const auto seed = test::shared_seed();
  INFO("seed " << seed << " (rerun with GARRAY_TEST_SEED=" << seed << ")");
  test::Rng g(seed);
  for (int c = 0; c < 3; ++c) roundtrip_case<T, 1>(ctx, g, 3 * ctx.size() + 5);
  for (int c = 0; c < 3; ++c) roundtrip_case<T, 2>(ctx, g, ctx.size() + 6);
  for (int c = 0; c < 2; ++c) roundtrip_case<T, 3>(ctx, g, 5);
}

TEST_CASE_TEMPLATE("redistribute between every pair of distributions matches the reference", T, double,
                   std::int64_t) {
  garray::Context ctx;
  const auto seed = test::shared_seed();
  INFO("seed " << seed << " (rerun with GARRAY_TEST_SEED=" << seed << ")");
  test::Rng g(seed);
  for (int c = 0; c < 2; ++c) redistribute_case<T, 1>(ctx, g, 3 * ctx.size() + 5);
  for (int c = 0; c < 2; ++c) redistribute_case<T, 2>(ctx, g, ctx.size() + 6);
  redistribute_case<T, 3>(ctx, g, 5);
}

TEST_CASE_TEMPLATE("transpose permutes dimensions for every source distribution", T, double, std::int32_t) {
  garray::Context ctx;
  const auto seed = test::shared_seed();
  INFO("seed " << seed << " (rerun with GARRAY_TEST_SEED=" << seed << ")");
  test::Rng g(seed);
  for (int c = 0; c < 3; ++c) transpose_case<T, 2>(ctx, g, ctx.size() + 7);
  for (int c = 0; c < 3; ++c) transpose_case<T, 3>(ctx, g, 6);
  transpose_case<T, 4>(ctx, g, 4);
}

TEST_CASE("redistribute of a 2-d row slab to a column slab moves only the off-diagonal blocks") {
  garray::Context ctx;
  using D = garray::Distribution<2>;
  const garray::Index n = 8 * ctx.size();
  auto ref = test::filled_reference<double, 2>({n, n});
  boost::multi_array<double, 2> none;
  auto rows = garray::scatter_from(ctx, 0, ctx.rank() == 0 ? ref.a : none, {n, n}, D::slab(0));
  auto& st = ctx.stats();
  const auto before = st[garray::Op::get];
  auto cols = garray::redistribute(rows, D::slab(1));
  const auto& after = st[garray::Op::get];
  CHECK(after.calls - before.calls == 1);
  CHECK(after.local_bytes - before.local_bytes == 8 * 8 * static_cast<std::int64_t>(sizeof(double)));
  CHECK(after.remote_bytes - before.remote_bytes ==
        (ctx.size() - 1) * 8 * 8 * static_cast<std::int64_t>(sizeof(double)));
  CHECK(test::equal_on_all_ranks(cols, ref));
}

TEST_CASE_TEMPLATE("from_local concatenates the ranks' arrays along an axis", T, double, std::int32_t) {
  garray::Context ctx;
  const auto seed = test::shared_seed();
  INFO("seed " << seed);
  test::Rng g(seed);
  const int p = ctx.size(), me = ctx.rank();
  for (int c = 0; c < 6; ++c) {
    const std::size_t axis = static_cast<std::size_t>(test::uniform(g, 0, 2));
    Shape<3> common = test::random_shape<3>(g, 4);
    std::vector<garray::Index> ext(static_cast<std::size_t>(p));
    for (auto& e : ext) e = test::uniform(g, 0, 4);  // zero-length pieces too
    Shape<3> shape = common;
    shape[axis] = std::accumulate(ext.begin(), ext.end(), garray::Index{0});
    garray::Index start = std::accumulate(ext.begin(), ext.begin() + me, garray::Index{0});
    Shape<3> mine = common;
    mine[axis] = ext[static_cast<std::size_t>(me)];
    boost::multi_array<T, 3> local(mine);
    for (garray::Index i = 0; i < mine[0]; ++i)
      for (garray::Index j = 0; j < mine[1]; ++j)
        for (garray::Index k = 0; k < mine[2]; ++k) {
          Shape<3> gi{i, j, k};
          gi[axis] += start;
          local[i][j][k] = test::value_at<T, 3>(shape, gi);
        }
    const Shape<3> ghost{static_cast<garray::Index>(c % 2), 0, static_cast<garray::Index>(c % 2)};
    auto a = garray::from_local(ctx, local, axis, ghost);
    INFO("axis " << axis << " shape " << garray::detail::seq(shape));
    CHECK(a.shape() == shape);
    CHECK(a.ghost() == ghost);
    garray::Box<3> want{{}, shape};
    want.lo[axis] = start;
    want.hi[axis] = start + ext[static_cast<std::size_t>(me)];
    CHECK((a.local_box() == want || (a.local_box().empty() && want.empty())));
    auto ref = test::filled_reference<T, 3>(shape);
    CHECK(test::equal_on_all_ranks(a, ref));
  }
}

TEST_CASE_TEMPLATE("a replicated array keeps identical copies under put/acc/scatter/read_inc", T, double,
                   std::int64_t) {
  garray::Context ctx;
  const auto seed = test::shared_seed();
  INFO("seed " << seed);
  test::Rng g(seed);
  const int p = ctx.size(), me = ctx.rank();
  for (int c = 0; c < 4; ++c) {
    const auto shape = test::random_shape<2>(g, 9);
    garray::GlobalArray<T, 2> a(ctx, shape, garray::Distribution<2>::replicated(), random_ghost<2>(g));
    test::Reference<T, 2> ref(shape);
    CHECK(a.local_box() == garray::Box<2>{Shape<2>{}, shape});
    CHECK(a.owner({0, 0}) == me);
    for (int round = 0; round < 3; ++round) {
      const int writer = round % p;
      const auto rs = test::random_slice<2>(g, shape);
      const auto sec = garray::compose(garray::Section<2>::full(shape), rs.slice);
      std::vector<T> vals(static_cast<std::size_t>(sec.size()));
      for (auto& v : vals) v = test::make_value<T>(test::uniform(g, -9, 9));
      test::for_each_selected<2>(rs.ref, [&](const Shape<2>& i, garray::Index pos) { ref.at(i) = vals[static_cast<std::size_t>(pos)]; });
      if (me == writer) a.put_section(sec, vals);
      a.sync();
      for (int r = 0; r < p; ++r) {  // accumulates from everyone
        const auto as = test::random_slice<2>(g, shape);
        const auto asec = garray::compose(garray::Section<2>::full(shape), as.slice);
        std::vector<T> av(static_cast<std::size_t>(asec.size()));
        for (auto& v : av) v = test::make_value<T>(test::uniform(g, -9, 9));
        test::for_each_selected<2>(as.ref, [&](const Shape<2>& i, garray::Index pos) { ref.at(i) += T{2} * av[static_cast<std::size_t>(pos)]; });
        if (me == r) a.acc_section(asec, av, T{2});
      }
      // index lists: one scatter by the writer, scatter_acc by everyone
      std::vector<Shape<2>> list;
      std::vector<T> lv;
      for (int k = 0; k < 4; ++k) {
        list.push_back({test::uniform(g, 0, shape[0] - 1), test::uniform(g, 0, shape[1] - 1)});
        lv.push_back(test::make_value<T>(test::uniform(g, -9, 9)));
      }
      a.sync();
      if (me == writer) a.scatter(std::span<const Shape<2>>(list.data(), 1), std::span<const T>(lv.data(), 1));
      ref.at(list[0]) = lv[0];
      a.sync();
      a.scatter_acc(list, lv);
      for (std::size_t k = 0; k < list.size(); ++k) ref.at(list[k]) += static_cast<T>(p) * lv[k];
      a.sync();
      CHECK(test::all_ranks(local_copy_equals(a, ref)));
      CHECK(test::equal_on_all_ranks(a, ref));
      std::vector<T> got(list.size());
      a.gather(list, got);
      bool ok = true;
      for (std::size_t k = 0; k < list.size(); ++k) ok = ok && got[k] == ref.at(list[k]);
      CHECK(ok);
      // reads are local: no traffic to other ranks
      const auto before = ctx.stats()[garray::Op::get].remote_pieces;
      std::vector<T> all(static_cast<std::size_t>(a.size()));
      a.get_section(garray::Section<2>::full(shape), all);
      CHECK(ctx.stats()[garray::Op::get].remote_pieces == before);
      a.sync();
    }
    if constexpr (std::is_integral_v<T>) {
      std::vector<T> olds(1);
      olds[0] = a.read_inc({0, 0}, T{3});
      a.sync();
      std::vector<T> all_olds(static_cast<std::size_t>(p));
      MPI_Allgather(olds.data(), 1, garray::mpi_type<T>(), all_olds.data(), 1, garray::mpi_type<T>(), MPI_COMM_WORLD);
      std::sort(all_olds.begin(), all_olds.end());
      bool ok = true;  // atomic: the old values are ref, ref+3, ref+6, ...
      for (int r = 0; r < p; ++r) ok = ok && all_olds[static_cast<std::size_t>(r)] == ref.at({0, 0}) + T{3} * r;
      CHECK(ok);
      ref.at({0, 0}) += T{3} * p;
      CHECK(test::all_ranks(local_copy_equals(a, ref)));
    }
  }
}

TEST_CASE("enumerate, for_each_owned and owners describe this rank's block") {
  garray::Context ctx;
  using D = garray::Distribution<2>;
  const std::vector<garray::Index> row_starts =
      ctx.size() >= 3 ? std::vector<garray::Index>{0, 3, 3} : std::vector<garray::Index>{0};
  garray::GlobalArray<double, 2> a(ctx, {7, 5}, D::irregular({row_starts, std::vector<garray::Index>{0}}), {1, 1});
  const auto b = a.local_box();
  std::vector<garray::IndexPair> rows;
  for (auto pr : garray::enumerate(a, 0)) rows.push_back(pr);
  CHECK(static_cast<garray::Index>(rows.size()) == (b.empty() ? 0 : b.extent(0)));
  bool ok = true;
  for (std::size_t k = 0; k < rows.size(); ++k)
    ok = ok && rows[k].local == static_cast<garray::Index>(k) && rows[k].global == b.lo[0] + static_cast<garray::Index>(k);
  CHECK(ok);
  garray::Index visited = 0;
  garray::for_each_owned(a, [&](const Shape<2>& l, const Shape<2>& gi, double& v) {
    ok = ok && gi[0] == b.lo[0] + l[0] && gi[1] == b.lo[1] + l[1] && b.contains(gi);
    v = static_cast<double>(gi[0] * 10 + gi[1]);
    ++visited;
  });
  CHECK(ok);
  CHECK(visited == b.volume());
  a.sync();
  CHECK(a.get(garray::idx[4][2]) == 42.0);
  if (ctx.size() >= 3) {  // rank 0 rows 0-2, rank 1 nothing, rank 2 rows 3-6
    const auto o = garray::owners(a, garray::Box<2>{{2, 0}, {9, 2}});
    REQUIRE(o.size() == 2);
    CHECK(o[0].first == 0);
    CHECK(o[0].second == garray::Box<2>{{2, 0}, {3, 2}});
    CHECK(o[1].first == 2);
    CHECK(o[1].second == garray::Box<2>{{3, 0}, {7, 2}});
  }
  CHECK(garray::is_local(a, {0, 0}) == (ctx.rank() == 0));
  CHECK_THROWS_AS((void)garray::enumerate(a, 2), garray::InvalidArgument);
}

TEST_CASE("bad input to movement collectives throws on every rank and changes nothing") {
  garray::Context ctx;
  using D = garray::Distribution<2>;
  const int p = ctx.size(), me = ctx.rank();
  auto ref = test::filled_reference<double, 2>({5, 6});
  boost::multi_array<double, 2> none;
  const auto& full = me == 0 ? ref.a : none;
  const auto created = ctx.stats().arrays_created;
  std::string m;
  // root out of range, the same on every rank
  m = message_of<garray::InvalidArgument>([&] { (void)garray::scatter_from(ctx, p, full, {5, 6}); });
  CHECK(contains(m, "scatter_from<double,2>: root " + std::to_string(p) + " out of range [0, " + std::to_string(p)));
  m = message_of<garray::InvalidArgument>([&] { (void)garray::scatter_from(ctx, -1, full, {5, 6}); });
  CHECK(contains(m, "root -1"));
  // the root's data has the wrong shape: SizeMismatch on every rank
  boost::multi_array<double, 2> wrong(boost::extents[5][5]);
  m = message_of<garray::SizeMismatch>([&] { (void)garray::scatter_from(ctx, 0, me == 0 ? wrong : none, {5, 6}); });
  if (me == 0) CHECK(contains(m, "root's data has shape [5, 5]"));
  else CHECK(contains(m, "another rank"));
  // the root out of range on one rank only: that rank InvalidArgument, the others
  // CollectiveMismatch naming it (the SizeMismatch exception is only for the root's data)
  if (p > 1)
    test::expect_one_rank_error<garray::InvalidArgument>(me, 1, "root " + std::to_string(p + 5), [&] {
      (void)garray::scatter_from(ctx, me == 1 ? p + 5 : 0, full, {5, 6});
    });
  // ranks disagree on the root
  if (p > 1) {
    m = message_of<garray::CollectiveMismatch>([&] { (void)garray::scatter_from(ctx, me == 1 ? 1 : 0, full, {5, 6}); });
    CHECK(contains(m, "scatter_from"));
  }
  // a bad distribution
  CHECK_THROWS_AS((void)garray::scatter_from(ctx, 0, full, {5, 6}, D::grid({p + 1, 1})), garray::InvalidArgument);
  CHECK(ctx.stats().arrays_created == created);  // nothing was created

  auto a = garray::scatter_from(ctx, 0, full, {5, 6}, D::slab(1));
  m = message_of<garray::InvalidArgument>([&] { (void)garray::gather(a, p + 2); });
  CHECK(contains(m, "gather<double,2>: root " + std::to_string(p + 2)));
  m = message_of<garray::InvalidArgument>([&] { (void)garray::transpose(a, {1, 1}); });
  CHECK(contains(m, "is not a permutation"));
  m = message_of<garray::InvalidArgument>([&] { (void)garray::transpose(a, {0, 2}); });
  CHECK(contains(m, "[0, 2]"));
  if (p > 1) {
    m = message_of<garray::CollectiveMismatch>([&] { (void)garray::transpose(a, me == 0 ? std::array<std::size_t, 2>{1, 0} : std::array<std::size_t, 2>{0, 1}); });
    CHECK(contains(m, "transpose"));
    m = message_of<garray::CollectiveMismatch>([&] { (void)garray::redistribute(a, me == 0 ? D::slab(0) : D::slab(1)); });
    CHECK(contains(m, "create"));
  }
  CHECK_THROWS_AS((void)garray::redistribute(a, D::irregular({std::vector<garray::Index>{1}, std::vector<garray::Index>{0}})),
                  garray::InvalidArgument);
  CHECK(test::equal_on_all_ranks(a, ref));  // nothing changed

  // from_local: differing extents off the axis, named with the rank; bad axis
  boost::multi_array<double, 2> loc(boost::extents[2][me == p - 1 ? 4 : 3]);
  if (p > 1) {
    m = message_of<garray::InvalidArgument>([&] { (void)garray::from_local(ctx, loc, 0); });
    CHECK(contains(m, "rank " + std::to_string(p - 1) + " has 4 in dim 1"));
  }
  m = message_of<garray::InvalidArgument>([&] { (void)garray::from_local(ctx, loc, 2); });
  CHECK(contains(m, "axis 2"));
  if (p > 1) {  // bad on one rank only: that rank its error, the others CollectiveMismatch with it
    boost::multi_array<double, 2> sq(boost::extents[2][3]);
    test::expect_one_rank_error<garray::InvalidArgument>(
        me, p - 1, "axis 2", [&] { (void)garray::from_local(ctx, sq, me == p - 1 ? 2 : 0); });
    boost::multi_array<double, 2> colmajor(boost::extents[2][3], boost::fortran_storage_order());
    test::expect_one_rank_error<garray::SizeMismatch>(
        me, p - 1, "row-major", [&] { (void)garray::from_local(ctx, me == p - 1 ? colmajor : sq, 0); });
  }
  CHECK(ctx.stats().arrays_created == created + 1);
}

namespace {

/// Every cell of this rank's frame (both dimensions periodic) mirrors the reference. Local.
template <class T>
bool periodic_frame_matches(garray::GlobalArray<T, 2>& a, test::Reference<T, 2>& ref) {
  auto blk = a.access();
  const auto b = blk.box();
  if (b.empty()) return true;
  const auto g = a.ghost();
  const auto s = a.shape();
  bool ok = true;
  for (Index i = b.lo[0] - g[0]; i < b.hi[0] + g[0]; ++i)
    for (Index j = b.lo[1] - g[1]; j < b.hi[1] + g[1]; ++j) {
      const Index si = ((i % s[0]) + s[0]) % s[0], sj = ((j % s[1]) + s[1]) % s[1];
      ok = ok && blk.view()[i][j] == ref.a[si][sj];
    }
  return ok;
}

}  // namespace

TEST_CASE(
    "gather, allgather, redistribute, transpose and update_ghosts first complete every rank's unfenced puts and "
    "unwaited put_nb/acc_nb on the array: the result holds them, and the requests are done") {
  // semantics.md, the table, get_nb / put_nb / acc_nb: "A collective on the array (`sync()`,
  // `fill()`, ...) first completes this rank's outstanding requests on it as their `wait()`
  // would ... and the `Request` is done"; sync(): "every operation of every rank on the array
  // is complete". The movement collectives say the same (movement.hpp, halo.hpp: "completes
  // everyone's outstanding operations first (as sync())"). Only sync() and fill() have such
  // a test (transfers.cpp). movement.cpp starts every source from scatter_from, which is
  // already synchronised. halo.cpp's rank-0 puts are blocking and never nonblocking. This
  // fails if a movement collective read its source before the writes issued on it had
  // completed (its handshake without the array's window, or without complete_all). The result
  // would then miss writes still on their way to the owners, on rma and mixed windows, or a
  // request would not be done() when the call returns.
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  const auto seed = test::shared_seed();
  INFO("seed " << seed << " (rerun with GARRAY_TEST_SEED=" << seed << ")");
  test::Rng g(seed);
  using T = std::int64_t;  // sums are exact in every order
  const Index rows = 2 * p + 3, cols = 2048, half = cols / 2;
  const Shape<2> shape{rows, cols};
  const char* kinds[] = {"gather", "allgather", "redistribute", "transpose", "update_ghosts"};
  for (int round = 0; round < 10; ++round) {
    const int kind = round % 5;
    const auto dist = round < 5 ? test::last_rank_owns_no_rows(rows, p) : test::random_distribution<2>(g, shape, p);
    garray::GlobalArray<T, 2> a(ctx, shape, dist, {1, 1});
    INFO("round " << round << ": " << kinds[kind] << ", source " << a.distribution().describe());
    test::Reference<T, 2> ref(shape);
    std::deque<std::vector<T>> keep;  // buffers of the unwaited requests (a deque never moves them)
    std::vector<garray::Request> reqs;
    // Columns [0, half): row i put by rank i % p (blocking for even i / p, put_nb otherwise).
    // Columns [half, cols): every rank's acc_nb (no element is both put and accumulated).
    for (Index i = 0; i < rows; ++i) {
      std::vector<T> row(static_cast<std::size_t>(half));
      for (Index j = 0; j < half; ++j) {
        row[static_cast<std::size_t>(j)] = (round + 1) * T{1000003} + i * cols + j;
        ref.a[i][j] = row[static_cast<std::size_t>(j)];
      }
      if (i % p != me) continue;
      const garray::Section<2> sec{{i, 0}, {1, 1}, {1, half}};
      if ((i / p) % 2 == 0) {
        a.put_section(sec, row);
      } else {
        keep.push_back(std::move(row));
        reqs.push_back(a.put_section_nb(sec, keep.back()));
      }
    }
    for (int r = 0; r < p; ++r)
      for (Index i = 0; i < rows; ++i)
        for (Index j = half; j < cols; ++j) ref.a[i][j] += T{r + 1} * (round + 1);
    keep.emplace_back(static_cast<std::size_t>(rows * half), T{me + 1} * (round + 1));
    reqs.push_back(a.acc_section_nb(garray::Section<2>{{0, half}, {1, 1}, {rows, half}}, keep.back()));
    bool ok = true;
    switch (kind) {
      case 0: {
        const int root = round % p;
        const auto back = garray::gather(a, root);
        ok = ctx.rank() == root ? back == ref.a : back.num_elements() == 0;
        break;
      }
      case 1:
        ok = garray::allgather(a) == ref.a;
        break;
      case 2: {
        Shape<2> ghost{test::uniform(g, 0, 1), test::uniform(g, 0, 1)};
        auto dst = garray::redistribute(a, test::random_distribution<2>(g, shape, p), ghost);
        for (const auto& r : reqs) ok = ok && r.done();
        ok = test::equal_on_all_ranks(dst, ref) && ok;
        break;
      }
      case 3: {
        auto t = garray::transpose(a, {1, 0}, test::random_distribution<2>(g, Shape<2>{cols, rows}, p));
        for (const auto& r : reqs) ok = ok && r.done();
        test::Reference<T, 2> tref(Shape<2>{cols, rows});
        for (Index i = 0; i < rows; ++i)
          for (Index j = 0; j < cols; ++j) tref.a[j][i] = ref.a[i][j];
        ok = test::equal_on_all_ranks(t, tref) && ok;
        break;
      }
      default:
        garray::update_ghosts(a, {true, true});
        for (const auto& r : reqs) ok = ok && r.done();
        ok = periodic_frame_matches(a, ref) && ok;
        ok = test::equal_on_all_ranks(a, ref) && ok;
    }
    bool done = true;
    for (const auto& r : reqs) done = done && r.done();
    CHECK(test::all_ranks(done, ctx.comm()));
    CHECK(test::all_ranks(ok, ctx.comm()));
    for (auto& r : reqs) r.wait();
    a.sync();
  }
}

// Arrays with an extent-0 dimension through scatter_from, redistribute, transpose,
// update_ghosts and gather (halo audit).
namespace extent_zero {
TEST_CASE("extent-0 dimensions through scatter_from, redistribute, transpose, update_ghosts, gather") {
  garray::Context ctx;
  const auto seed = test::shared_seed();
  INFO("seed " << seed);
  test::Rng g(seed);
  boost::multi_array<double, 3> none;
  for (const Shape<3>& shape : {Shape<3>{0, 4, 3}, Shape<3>{4, 0, 3}, Shape<3>{2, 3, 0}}) {
    auto ref = test::filled_reference<double, 3>(shape);
    for (const auto& dist : test::every_distribution<3>(g, shape, ctx.size())) {
      INFO("shape " << garray::detail::seq(shape) << " " << dist.describe());
      auto a = garray::scatter_from(ctx, 0, ctx.rank() == 0 ? ref.a : none, shape, dist, Shape<3>{1, 2, 1});
      CHECK(a.local_box().empty());
      CHECK(a.access().view().num_elements() == 0u);  // no frame
      garray::update_ghosts(a, {true, true, true});
      auto b = garray::redistribute(a, test::every_distribution<3>(g, shape, ctx.size()).back(), {2, 0, 1});
      CHECK(b.size() == 0);
      auto t = garray::transpose(b, {2, 0, 1}, garray::Distribution<3>::blocked(), {1, 1, 1});
      CHECK(t.shape() == Shape<3>{shape[2], shape[0], shape[1]});
      garray::update_ghosts(t);
      CHECK(garray::gather(t, ctx.size() - 1).num_elements() == 0u);
      CHECK(garray::allgather(a).num_elements() == 0u);
    }
  }
}
}  // namespace extent_zero
