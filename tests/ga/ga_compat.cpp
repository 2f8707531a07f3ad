// "Coming from Global Arrays" (docs/user-guide.md): every row of the table done both ways.
// The garray half runs everywhere; where Global Arrays is installed (Debian
// libglobalarrays-dev, found by cmake/GarrayGlobalArrays.cmake) the GA half runs in the same
// program (GA_Initialize after MPI_Init, in tests/support/mpi_main.cpp) and the results are
// compared. GA's default distribution may differ from garray's: results are compared as
// values, distributions only through what each reports about itself.
#include "support/test_support.hpp"

#include <garray/garray.hpp>

#if defined(GARRAY_TEST_HAVE_GA)
#include <fcntl.h>
#include <ga.h>
#include <macdecls.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

using garray::_;
using garray::all;
using garray::idx;
using garray::range;
using D2 = garray::Distribution<2>;
using A2 = garray::GlobalArray<double, 2>;
using gidx = garray::Index;

namespace {

constexpr int R = 12, C = 10;
double val(gidx i, gidx j) { return static_cast<double>(i * 100 + j); }

std::vector<double> whole(const A2& a) {
  std::vector<double> v(static_cast<std::size_t>(a.size()));
  a.get(idx[all], std::span<double>(v));
  return v;
}
void load(A2& a) {
  {
    auto blk = a.access();
    for (auto i = blk.lo(0); i < blk.hi(0); ++i)
      for (auto j = blk.lo(1); j < blk.hi(1); ++j) blk.view()[i][j] = val(i, j);
  }
  a.sync();
}
std::vector<double> expected_initial(int r = R, int c = C) {
  std::vector<double> v;
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < c; ++j) v.push_back(val(i, j));
  return v;
}

#if defined(GARRAY_TEST_HAVE_GA)
int ga_create(int r = R, int c = C) {
  int dims[2] = {r, c};
  return NGA_Create(C_DBL, 2, dims, const_cast<char*>("t"), nullptr);
}
std::vector<double> ga_whole(int g, int r = R, int c = C) {
  int lo[2] = {0, 0}, hi[2] = {r - 1, c - 1}, ld[1] = {c};
  std::vector<double> v(static_cast<std::size_t>(r * c));
  NGA_Get(g, lo, hi, v.data(), ld);
  return v;
}
/// Fills GA array g (2-d doubles) with f(i, j) through NGA_Access on each rank's patch.
template <class F>
void ga_load(int g, F f) {
  int lo[2], hi[2], ld[1];
  NGA_Distribution(g, GA_Nodeid(), lo, hi);
  if (lo[0] <= hi[0] && lo[1] <= hi[1]) {
    double* p = nullptr;
    NGA_Access(g, lo, hi, &p, ld);
    for (int i = lo[0]; i <= hi[0]; ++i)
      for (int j = lo[1]; j <= hi[1]; ++j) p[(i - lo[0]) * ld[0] + (j - lo[1])] = f(i, j);
    NGA_Release_update(g, lo, hi);
  }
  GA_Sync();
}
void ga_load(int g) { ga_load(g, val); }
#endif

}  // namespace

TEST_CASE("GA row: GA_Initialize / NGA_Create / NGA_Distribution / NGA_Access / GA_Sync / GA_Destroy") {
  garray::Context ctx;                                  // GA_Initialize (+ MA_init)
  A2 a(ctx, {R, C});                                    // NGA_Create(C_DBL, 2, dims, name, NULL)
  const garray::Box<2> mine = a.local_box();            // NGA_Distribution(g, me, lo, hi)
  load(a);                                              // NGA_Access + NGA_Release_update + GA_Sync
  CHECK(whole(a) == expected_initial());
  CHECK(mine.volume() <= R * C);
  CHECK(a.box_of(a.owner({3, 4})).contains({3, 4}));   // NGA_Locate
  int wr = 0, ws = 0;  // GA_Nodeid / GA_Nnodes are ctx.rank() / ctx.size()
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &ws);
  CHECK((ctx.rank() == wr && ctx.size() == ws));
#if defined(GARRAY_TEST_HAVE_GA)
  const int g = ga_create();
  ga_load(g);
  CHECK(ga_whole(g) == whole(a));
  int sub[2] = {3, 4}, lo[2], hi[2];
  const int owner = NGA_Locate(g, sub);
  NGA_Distribution(g, owner, lo, hi);
  CHECK((lo[0] <= 3 && 3 <= hi[0] && lo[1] <= 4 && 4 <= hi[1]));
  CHECK(GA_Nodeid() == ctx.rank());
  CHECK(GA_Nnodes() == ctx.size());
  GA_Destroy(g);
#endif
}

TEST_CASE("GA row: NGA_Create_irreg (block starts per dimension)") {
  garray::Context ctx;
  const int nb = std::min(2, ctx.size());
  std::vector<gidx> rows = {0};
  if (nb == 2) rows.push_back(5);
  A2 a(ctx, {R, C}, D2::irregular({rows, {0}}));  // map = {0, 5, 0}, block = {nb, 1}
  load(a);
  CHECK(whole(a) == expected_initial());
  std::vector<std::array<gidx, 4>> boxes;
  for (int r = 0; r < ctx.size(); ++r) {
    const auto b = a.box_of(r);
    if (!b.empty()) boxes.push_back({b.lo[0], b.hi[0], b.lo[1], b.hi[1]});
  }
  std::sort(boxes.begin(), boxes.end());
  A2 dup(ctx, a.shape(), a.distribution(), a.ghost());  // GA_Duplicate (ghost width kept, as GA)
  CHECK(dup.local_box() == a.local_box());
#if defined(GARRAY_TEST_HAVE_GA)
  int dims[2] = {R, C}, block[2] = {nb, 1};
  std::vector<int> map(rows.begin(), rows.end());
  map.push_back(0);
  const int g = NGA_Create_irreg(C_DBL, 2, dims, const_cast<char*>("irreg"), block, map.data());
  ga_load(g);
  CHECK(ga_whole(g) == whole(a));
  std::vector<std::array<gidx, 4>> gboxes;
  for (int r = 0; r < ctx.size(); ++r) {
    int lo[2], hi[2];
    NGA_Distribution(g, r, lo, hi);
    if (lo[0] <= hi[0] && lo[1] <= hi[1]) gboxes.push_back({lo[0], hi[0] + 1, lo[1], hi[1] + 1});
  }
  std::sort(gboxes.begin(), gboxes.end());
  CHECK(gboxes == boxes);  // the same blocks (GA may hand them to other ranks)
  const int gd = GA_Duplicate(g, const_cast<char*>("dup"));
  int l1[2], h1[2], l2[2], h2[2];
  NGA_Distribution(g, GA_Nodeid(), l1, h1);
  NGA_Distribution(gd, GA_Nodeid(), l2, h2);
  CHECK((l1[0] == l2[0] && l1[1] == l2[1] && h1[0] == h2[0] && h1[1] == h2[1]));
  GA_Destroy(gd);
  GA_Destroy(g);
#endif
}

// GA_Update_ghosts wraps around every dimension (GA's API reference: "all data is wrapped
// around using periodic boundary data"), so the row is update_ghosts(a, {true, true}); the
// whole frame, corners and the cells beyond the array's edges included, is compared with the
// wrapped values on both sides (the test used to skip the ranks at the edge, where
// update_ghosts(a) and GA differ).
TEST_CASE("GA row: NGA_Create_ghosts / GA_Update_ghosts / NGA_Access_ghosts (periodic, every ghost cell)") {
  garray::Context ctx;
  A2 a(ctx, {R, C}, D2::blocked(), {1, 1});
  load(a);
  garray::update_ghosts(a, {true, true});
  const auto wrapped = [](gidx i, gidx j) { return val((i + R) % R, (j + C) % C); };
  bool ok = true;
  {
    auto blk = a.access();  // spans [lo - 1, hi + 1)
    const auto b = blk.box();
    if (!b.empty())
      for (auto i = b.lo[0] - 1; i <= b.hi[0]; ++i)
        for (auto j = b.lo[1] - 1; j <= b.hi[1]; ++j) ok = ok && blk.view()[i][j] == wrapped(i, j);
  }
  CHECK(test::all_ranks(ok));
#if defined(GARRAY_TEST_HAVE_GA)
  int dims[2] = {R, C}, width[2] = {1, 1};
  const int g = NGA_Create_ghosts(C_DBL, 2, dims, width, const_cast<char*>("ghosts"), nullptr);
  ga_load(g);
  GA_Update_ghosts(g);
  int lo[2], hi[2], gd[2], ld[1];
  NGA_Distribution(g, GA_Nodeid(), lo, hi);
  bool gok = true;
  if (lo[0] <= hi[0] && lo[1] <= hi[1]) {
    double* p = nullptr;
    NGA_Access_ghosts(g, gd, &p, ld);  // p points at the ghost corner (lo - 1, lo - 1)
    for (int i = lo[0] - 1; i <= hi[0] + 1; ++i)
      for (int j = lo[1] - 1; j <= hi[1] + 1; ++j)
        gok = gok && p[(i - lo[0] + 1) * ld[0] + (j - lo[1] + 1)] == wrapped(i, j);
    NGA_Release(g, lo, hi);
  }
  CHECK(test::all_ranks(gok));
  GA_Destroy(g);
#endif
}

TEST_CASE("GA row: NGA_Put / NGA_Get / NGA_Acc on a patch, NGA_Strided_*, NGA_Nb* + NGA_NbWait") {
  garray::Context ctx;
  A2 a(ctx, {R, C});
  load(a);
  std::vector<double> patch(4 * 5), got(4 * 5), sgot(5 * 3);
  std::iota(patch.begin(), patch.end(), 1000.0 + ctx.rank());
  const bool writer = ctx.rank() == ctx.size() - 1;
  // patch lo = {2, 3}, hi = {5, 7} (GA's inclusive bounds) is idx[range(2, 6)][range(3, 8)].
  // A put and then an accumulate of the same elements without a fence, as GA allows: one
  // process's writes land in program order (location consistency, semantics.md rule 3)
  if (writer) {
    a.put(idx[range(2, 6)][range(3, 8)], std::span<const double>(patch));
    a.accumulate(idx[range(2, 6)][range(3, 8)], std::span<const double>(patch), 2.0);
    // strided: lo = {1, 0}, hi = {9, 8}, skip = {2, 4}: rows 1,3,5,7,9 x cols 0,4,8
    std::vector<double> s(15, 7.0);
    a.put(idx[range(1, 10, 2)][range(0, 9, 4)], std::span<const double>(s));
    a.accumulate(idx[range(1, 10, 2)][range(0, 9, 4)], std::span<const double>(s), 0.5);
  }
  a.sync();
  a.get(idx[range(2, 6)][range(3, 8)], std::span<double>(got));
  a.get(idx[range(1, 10, 2)][range(0, 9, 4)], std::span<double>(sgot));
  std::vector<double> nb(4 * 5);
  garray::Request rq = a.get_nb(idx[range(2, 6)][range(3, 8)], std::span<double>(nb));
  rq.wait();
  CHECK(nb == got);
  const std::vector<double> row(static_cast<std::size_t>(C), 0.25);
  if (writer) {  // NGA_NbPut / NGA_NbAcc on row 11
    garray::Request rp = a.put_nb(idx[11], std::span<const double>(row));
    rp.wait();
    a.fence();
    garray::Request ra = a.acc_nb(idx[11], std::span<const double>(row), 4.0);
    ra.wait();
  }
  a.sync();
  const auto gv = whole(a);
#if defined(GARRAY_TEST_HAVE_GA)
  const int g = ga_create();
  ga_load(g);
  int lo[2] = {2, 3}, hi[2] = {5, 7}, ld[1] = {5};
  std::vector<double> wpatch(4 * 5);
  MPI_Bcast(patch.data(), 20, MPI_DOUBLE, ctx.size() - 1, MPI_COMM_WORLD);  // the writer's values
  if (writer) {
    double two = 2.0, half = 0.5;
    NGA_Put(g, lo, hi, patch.data(), ld);
    NGA_Acc(g, lo, hi, patch.data(), ld, &two);
    int slo[2] = {1, 0}, shi[2] = {9, 8}, skip[2] = {2, 4}, sld[1] = {3};
    std::vector<double> s(15, 7.0);
    NGA_Strided_put(g, slo, shi, skip, s.data(), sld);
    NGA_Strided_acc(g, slo, shi, skip, s.data(), sld, &half);
  }
  GA_Sync();
  std::vector<double> ggot(20), gsgot(15), gnb(20);
  NGA_Get(g, lo, hi, ggot.data(), ld);
  int slo[2] = {1, 0}, shi[2] = {9, 8}, skip[2] = {2, 4}, sld[1] = {3};
  NGA_Strided_get(g, slo, shi, skip, gsgot.data(), sld);
  ga_nbhdl_t h;
  NGA_NbGet(g, lo, hi, gnb.data(), ld, &h);
  NGA_NbWait(&h);
  GA_Sync();
  if (writer) {
    int rlo[2] = {11, 0}, rhi[2] = {11, C - 1}, rld[1] = {C};
    double four = 4.0;
    std::vector<double> grow = row;
    ga_nbhdl_t hp, ha;
    GA_Init_fence();
    NGA_NbPut(g, rlo, rhi, grow.data(), rld, &hp);
    NGA_NbWait(&hp);
    GA_Fence();
    NGA_NbAcc(g, rlo, rhi, grow.data(), rld, &four, &ha);
    NGA_NbWait(&ha);
  }
  GA_Sync();
  CHECK(ggot == got);
  CHECK(gsgot == sgot);
  CHECK(gnb == nb);
  CHECK(ga_whole(g) == gv);
  GA_Destroy(g);
#endif
}

TEST_CASE("GA row: NGA_Gather / NGA_Scatter / NGA_Scatter_acc / NGA_Read_inc") {
  garray::Context ctx;
  A2 a(ctx, {R, C});
  load(a);
  const std::vector<garray::Shape<2>> where = {{0, 0}, {11, 9}, {5, 5}, {5, 5}};
  const std::vector<double> vals = {1, 2, 3, 4};
  std::vector<double> got(4);
  if (ctx.rank() == 0) a.scatter(std::span<const garray::Shape<2>>(where.data(), 3), std::span<const double>(vals.data(), 3));
  a.sync();
  a.scatter_acc(where, vals, 1.0);  // every rank; repeated index adds both
  a.sync();
  a.gather(where, got);
  garray::GlobalArray<std::int64_t, 1> counter(ctx, {1});
  std::vector<std::int64_t> tickets;
  for (int k = 0; k < 5; ++k) tickets.push_back(counter.read_inc({0}, 1));
#if defined(GARRAY_TEST_HAVE_GA)
  const int g = ga_create();
  ga_load(g);
  int s0[2] = {0, 0}, s1[2] = {11, 9}, s2[2] = {5, 5}, s3[2] = {5, 5};
  int* subs[4] = {s0, s1, s2, s3};
  std::vector<double> gvals = vals, ggot(4);
  if (GA_Nodeid() == 0) NGA_Scatter(g, gvals.data(), subs, 3);
  GA_Sync();
  double one = 1.0;
  NGA_Scatter_acc(g, gvals.data(), subs, 4, &one);
  GA_Sync();
  NGA_Gather(g, ggot.data(), subs, 4);
  CHECK(ggot == got);
  CHECK(ga_whole(g) == whole(a));
  GA_Destroy(g);
  int dims1[1] = {1};
  const int gc = NGA_Create(C_LONG, 1, dims1, const_cast<char*>("counter"), nullptr);
  GA_Zero(gc);
  int zero[1] = {0};
  std::vector<long> gt;
  for (int k = 0; k < 5; ++k) gt.push_back(NGA_Read_inc(gc, zero, 1));
  std::vector<long> all_gt(static_cast<std::size_t>(5 * ctx.size()));
  MPI_Allgather(gt.data(), 5, MPI_LONG, all_gt.data(), 5, MPI_LONG, MPI_COMM_WORLD);
  std::sort(all_gt.begin(), all_gt.end());
  for (std::size_t k = 0; k < all_gt.size(); ++k) CHECK(all_gt[k] == static_cast<long>(k));
  GA_Destroy(gc);
#endif
  std::vector<std::int64_t> all_t(static_cast<std::size_t>(5 * ctx.size()));
  MPI_Allgather(tickets.data(), 5, MPI_INT64_T, all_t.data(), 5, MPI_INT64_T, MPI_COMM_WORLD);
  std::sort(all_t.begin(), all_t.end());
  for (std::size_t k = 0; k < all_t.size(); ++k) CHECK(all_t[k] == static_cast<std::int64_t>(k));
  CHECK(got[2] == 3 + ctx.size() * 7.0);  // scattered 3, then every rank added 3 + 4
}

TEST_CASE("GA row: GA_Init_fence / GA_Fence, GA_Create_mutexes / GA_Lock / GA_Unlock") {
  garray::Context ctx;
  A2 a(ctx, {R, C});
  garray::Mutexes m(ctx, 1);  // GA_Create_mutexes(1)
  const int iters = 20;
  for (int k = 0; k < iters; ++k) {
    m.lock(0);  // GA_Lock(0)
    double v = a.get(idx[0][0]);
    v += 1;
    a.put(idx[range(0, 1)][range(0, 1)], std::span<const double>(&v, 1));
    a.fence();    // GA_Fence (GA_Init_fence has no garray counterpart: fence() covers all)
    m.unlock(0);  // GA_Unlock(0)
  }
  a.sync();
  const double mine = a.get(idx[0][0]);
  CHECK(mine == iters * ctx.size());
  m.destroy();  // GA_Destroy_mutexes()
#if defined(GARRAY_TEST_HAVE_GA)
  const int g = ga_create();
  GA_Zero(g);
  GA_Create_mutexes(1);
  int lo[2] = {0, 0}, hi[2] = {0, 0}, ld[1] = {1};
  for (int k = 0; k < iters; ++k) {
    GA_Lock(0);
    double v = 0;
    NGA_Get(g, lo, hi, &v, ld);
    v += 1;
    GA_Init_fence();
    NGA_Put(g, lo, hi, &v, ld);
    GA_Fence();
    GA_Unlock(0);
  }
  GA_Sync();
  double gv = 0;
  NGA_Get(g, lo, hi, &gv, ld);
  CHECK(gv == mine);
  GA_Destroy_mutexes();
  GA_Destroy(g);
#endif
}

TEST_CASE("GA row: GA_Dgemm / GA_Ddot") {
  garray::Context ctx;
  A2 a(ctx, {R, C}), b(ctx, {R, C}), c(ctx, {R, R});
  load(a);
  load(b);
  garray::scale(b, 0.5);
  garray::gemm(garray::MatOp::none, garray::MatOp::transpose, 1.0, a, b, 0.0, c);  // c = a b^T
  const double d = garray::dot(a, b);
  std::vector<double> cv(static_cast<std::size_t>(R * R));
  c.get(idx[all], std::span<double>(cv));
#if defined(GARRAY_TEST_HAVE_GA)
  const int ga = ga_create(), gb = ga_create(), gc = ga_create(R, R);
  ga_load(ga);
  ga_load(gb);
  double half = 0.5;
  GA_Scale(gb, &half);
  GA_Dgemm('N', 'T', R, R, C, 1.0, ga, gb, 0.0, gc);
  CHECK(ga_whole(gc, R, R) == cv);
  CHECK(GA_Ddot(ga, gb) == d);
  GA_Destroy(gc);
  GA_Destroy(gb);
  GA_Destroy(ga);
#endif
  double s = 0;
  for (int j = 0; j < C; ++j) s += val(2, j) * val(3, j) * 0.5;
  CHECK(cv[2 * R + 3] == s);
}

TEST_CASE("GA row: GA_Add / GA_Scale / GA_Zero / GA_Fill / GA_Copy / NGA_Copy_patch / GA_Transpose") {
  garray::Context ctx;
  A2 a(ctx, {R, C}), b(ctx, {R, C}), c(ctx, {R, C}), z(ctx, {R, C});
  load(a);
  load(b);
  garray::assign(c, 2.0 * a + (-1.0) * b);  // GA_Add(&alpha, a, &beta, b, c)
  garray::scale(c, 3.0);                    // GA_Scale(c, &s)
  garray::fill(z, 1.5);                     // GA_Fill(z, &v)
  garray::copy(b, a);                       // GA_Copy(a, b)
  garray::copy(b[idx[range(0, 2)][range(0, 3)]], a[idx[range(4, 6)][range(5, 8)]]);  // NGA_Copy_patch('N', ...)
  auto t = garray::transpose(a, {1, 0}, D2::blocked());  // GA_Transpose(a, t)
  const auto cv = whole(c), zv = whole(z), bv = whole(b);
  std::vector<double> tv(static_cast<std::size_t>(R * C));
  t.get(idx[all], std::span<double>(tv));
  CHECK(tv[static_cast<std::size_t>(3 * R + 2)] == val(2, 3));
  garray::fill(z, 0.0);  // GA_Zero(z)
  CHECK(garray::sum(z) == 0.0);
#if defined(GARRAY_TEST_HAVE_GA)
  const int ga = ga_create(), gb = ga_create(), gc = ga_create(), gz = ga_create(), gt = ga_create(C, R);
  ga_load(ga);
  ga_load(gb);
  double two = 2.0, minus = -1.0, three = 3.0, v15 = 1.5;
  GA_Add(&two, ga, &minus, gb, gc);
  GA_Scale(gc, &three);
  GA_Fill(gz, &v15);
  GA_Copy(ga, gb);
  int alo[2] = {4, 5}, ahi[2] = {5, 7}, blo[2] = {0, 0}, bhi[2] = {1, 2};
  NGA_Copy_patch('N', ga, alo, ahi, gb, blo, bhi);
  GA_Transpose(ga, gt);
  CHECK(ga_whole(gc) == cv);
  CHECK(ga_whole(gz) == zv);
  CHECK(ga_whole(gb) == bv);
  CHECK(ga_whole(gt, C, R) == tv);
  GA_Zero(gz);
  CHECK(GA_Ddot(gz, gz) == 0.0);
  for (int h : {gt, gz, gc, gb, ga}) GA_Destroy(h);
#endif
}

TEST_CASE("GA row: NGA_Select_elem (argmax / argmin + get)") {
  garray::Context ctx;
  A2 a(ctx, {R, C});
  // A permutation of 0 .. R*C-1 (37 is prime to 120): one maximum and one minimum, inside.
  const auto perm = [](gidx i, gidx j) { return static_cast<double>((i * C + j) * 37 % (R * C)); };
  {
    auto blk = a.access();
    for (auto i = blk.lo(0); i < blk.hi(0); ++i)
      for (auto j = blk.lo(1); j < blk.hi(1); ++j) blk.view()[i][j] = perm(i, j);
  }
  a.sync();
  // NGA_Select_elem(g, "max", &v, sub): the flat index, its subscript, the value
  const auto imax = garray::unravel_index(garray::argmax(a), a.shape());
  const double vmax = a.get(idx[imax[0]][imax[1]]);
  const auto imin = garray::unravel_index(garray::argmin(a), a.shape());  // "min"
  const double vmin = a.get(idx[imin[0]][imin[1]]);
  CHECK(vmax == R * C - 1);
  CHECK(vmin == 0);
  CHECK(perm(imax[0], imax[1]) == vmax);
  CHECK(perm(imin[0], imin[1]) == vmin);
#if defined(GARRAY_TEST_HAVE_GA)
  const int g = ga_create();
  ga_load(g, perm);
  double gmx = 0, gmn = 0;
  int wmax[2], wmin[2];
  NGA_Select_elem(g, const_cast<char*>("max"), &gmx, wmax);
  NGA_Select_elem(g, const_cast<char*>("min"), &gmn, wmin);
  CHECK(gmx == vmax);
  CHECK(gmn == vmin);
  CHECK((wmax[0] == imax[0] && wmax[1] == imax[1]));
  CHECK((wmin[0] == imin[0] && wmin[1] == imin[1]));
  GA_Destroy(g);
#endif
}

namespace {
/// The numbers of a printed array, in the order printed (garray: NumPy's str(), C order).
std::vector<double> numbers_of(const std::string& text) {
  std::string t = text;
  for (char& c : t)
    if (c == '[' || c == ']') c = ' ';
  std::istringstream is(t);
  std::vector<double> v;
  for (double x; is >> x;) v.push_back(x);
  return v;
}
/// "  rank r: [lo0:hi0, lo1:hi1) (n elements)" lines of describe(): the non-empty boxes.
std::vector<std::array<gidx, 4>> boxes_of(const std::string& text) {
  std::vector<std::array<gidx, 4>> b;
  std::istringstream is(text);
  for (std::string line; std::getline(is, line);) {
    std::array<gidx, 4> x{};
    int r = 0;
    long long l0, h0, l1, h1;
    if (std::sscanf(line.c_str(), " rank %d: [%lld:%lld, %lld:%lld)", &r, &l0, &h0, &l1, &h1) == 5) {
      x = {l0, h0, l1, h1};
      b.push_back(x);
    }
  }
  std::sort(b.begin(), b.end());
  return b;
}
#if defined(GARRAY_TEST_HAVE_GA)
/// What GA prints to stdout during f() on this rank (stdout redirected to a file).
template <class F>
std::string captured_stdout(F&& f) {
  std::fflush(stdout);
  char path[] = "/tmp/garray_ga_stdout_XXXXXX";
  const int fd = mkstemp(path);
  const int saved = dup(1);
  dup2(fd, 1);
  close(fd);
  f();
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::remove(path);
  return ss.str();
}
/// GA_Print's table of a 2-d array: GA shows it in Fortran order (rows = C's last index,
/// columns = C's first), 1-based, in blocks of columns headed by their numbers. The values
/// in C order.
std::vector<double> ga_printed_values(const std::string& text, int r, int c) {
  std::vector<double> v(static_cast<std::size_t>(r * c), -1);
  std::istringstream is(text);
  std::vector<int> cols;
  for (std::string line; std::getline(is, line);) {
    std::istringstream ls(line);
    std::vector<std::string> tok;
    for (std::string w; ls >> w;) tok.push_back(w);
    if (tok.empty() || tok[0].find_first_not_of("0123456789") != std::string::npos) continue;
    const bool header = std::all_of(tok.begin(), tok.end(), [](const std::string& w) {
      return w.find_first_not_of("0123456789") == std::string::npos;
    });
    if (header) {
      cols.clear();
      for (const auto& w : tok) cols.push_back(std::stoi(w));
      continue;
    }
    const int row = std::stoi(tok[0]);  // C's last index + 1
    for (std::size_t k = 1; k < tok.size() && k - 1 < cols.size(); ++k)
      v[static_cast<std::size_t>((cols[k - 1] - 1) * c + (row - 1))] = std::stod(tok[k]);
  }
  return v;
}
/// "Process=0	 owns array section: [0:5,0:9]" lines (inclusive bounds): the boxes.
std::vector<std::array<gidx, 4>> ga_printed_boxes(const std::string& text) {
  std::vector<std::array<gidx, 4>> b;
  std::istringstream is(text);
  for (std::string line; std::getline(is, line);) {
    int p = 0, l0, h0, l1, h1;
    if (std::sscanf(line.c_str(), "Process=%d owns array section: [%d:%d,%d:%d]", &p, &l0, &h0, &l1, &h1) == 5 &&
        l0 <= h0 && l1 <= h1)
      b.push_back({l0, h0 + 1, l1, h1 + 1});
  }
  std::sort(b.begin(), b.end());
  return b;
}
#endif
}  // namespace

TEST_CASE("GA row: GA_Print (std::cout << a) and GA_Print_distribution (describe)") {
  garray::Context ctx;
  const int nb = std::min(2, ctx.size());
  std::vector<gidx> rows = {0};
  if (nb == 2) rows.push_back(5);
  A2 a(ctx, {R, C}, D2::irregular({rows, {0}}));
  load(a);
  std::ostringstream os;
  os << a;                                    // GA_Print(g): collective, rank 0 prints
  const std::string dist = garray::describe(a);  // GA_Print_distribution(g): local here
  const std::vector<double> printed = numbers_of(os.str());
  if (ctx.rank() == 0) CHECK(printed == expected_initial());  // every element, C order, exact
  else CHECK(os.str().empty());
  std::vector<std::array<gidx, 4>> boxes;
  for (int r = 0; r < ctx.size(); ++r) {
    const auto b = a.box_of(r);
    if (!b.empty()) boxes.push_back({b.lo[0], b.hi[0], b.lo[1], b.hi[1]});
  }
  std::sort(boxes.begin(), boxes.end());
  CHECK(boxes_of(dist) == boxes);
#if defined(GARRAY_TEST_HAVE_GA)
  int dims[2] = {R, C}, block[2] = {nb, 1};
  std::vector<int> map(rows.begin(), rows.end());
  map.push_back(0);
  const int g = NGA_Create_irreg(C_DBL, 2, dims, const_cast<char*>("printed"), block, map.data());
  ga_load(g);
  const std::string gp = captured_stdout([&] { GA_Print(g); });
  const std::string gd = captured_stdout([&] { GA_Print_distribution(g); });
  if (GA_Nodeid() == 0) {
    CAPTURE(gp);
    CAPTURE(gd);
    CHECK(ga_printed_values(gp, R, C) == printed);  // the same values, where each is
    CHECK(ga_printed_boxes(gd) == boxes_of(dist));  // the same blocks
  }
  GA_Destroy(g);
#endif
}

TEST_CASE("GA row: GA_Brdcst / GA_Dgop are plain MPI on ctx.comm()") {
  garray::Context ctx;
  double x = ctx.rank() + 1.0, sum = 0, b = ctx.rank() == 0 ? 42.0 : 0.0;
  MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, ctx.comm());  // GA_Dgop(&x, 1, "+")
  MPI_Bcast(&b, 1, MPI_DOUBLE, 0, ctx.comm());                   // GA_Brdcst(&b, 8, 0)
  CHECK(sum == ctx.size() * (ctx.size() + 1) / 2.0);
  CHECK(b == 42.0);
#if defined(GARRAY_TEST_HAVE_GA)
  double gx = ctx.rank() + 1.0, gb = GA_Nodeid() == 0 ? 42.0 : 0.0;
  GA_Dgop(&gx, 1, const_cast<char*>("+"));
  GA_Brdcst(&gb, sizeof(double), 0);
  CHECK(gx == sum);
  CHECK(gb == b);
#endif
}

// The guide's GA_Duplicate recipe on an irregular array (see distribution_math.cpp): the
// duplicate has the original's map and signature, numeric calls on it work, and the map
// tiles a wider array.
TEST_CASE(
    "GA_Duplicate of an irregular array: the duplicate has the original's map, numeric calls on it work") {
  garray::Context ctx;
  const int nb = std::min(2, ctx.size());
  std::vector<gidx> rows = {0};
  if (nb == 2) rows.push_back(5);
  A2 a(ctx, {R, C}, D2::irregular({rows, {0}}));
  A2 dup(ctx, a.shape(), a.distribution(), a.ghost());
  for (std::size_t d = 0; d < 2; ++d) CHECK(dup.distribution().bounds(d) == a.distribution().bounds(d));
  CHECK(dup.distribution().signature() == a.distribution().signature());
  load(dup);
  std::string err;
  try {
    auto twice = garray::eval(dup * 2.0);  // blocked like dup (derived_distribution)
    CHECK(twice.local_box() == a.local_box());
    auto z = garray::zeros_like(dup);
    CHECK(z.local_box() == a.local_box());
  } catch (const garray::Error& e) {
    err = e.what();
  }
  CHECK_MESSAGE(err.empty(), err);
  // The same map for a wider array must tile it (or be refused on every rank).
  bool refused = false;
  std::optional<A2> wide;
  try {
    wide.emplace(ctx, garray::Shape<2>{R, 2 * C}, a.distribution());
  } catch (const garray::InvalidArgument&) {
    refused = true;
  }
  if (!refused) {
    gidx covered = 0;
    for (int r = 0; r < ctx.size(); ++r) covered += wide->box_of(r).empty() ? 0 : wide->box_of(r).volume();
    CHECK(covered == wide->size());  // is R * C: columns C..2C-1 have no owner
  }
}
