// The laplace app's solver: every variant against the serial in-process reference, bitwise,
// on small grids and distributions with tiny and empty blocks; errors per iteration bitwise
// identical across variants; bad input.
//
// From a zero interior the nonzero region advances one row/column per step, so a short run
// never reaches a block boundary and cannot catch halo bugs. The cases below therefore also
// start from a hash of the global I (every element changes in the first step, so every
// ghost cell matters at once) and run long enough for the zero-start front to cross every
// block of the small grids.
#include "support/test_support.hpp"

#include "laplace.hpp"

#include <exception>
#include <stdexcept>
#include <sstream>
#include <string>
#include <vector>

namespace lp = garray::laplace;
using Dist = garray::Distribution<2>;
using I = garray::Index;

namespace {

/// The variants the solver implements in this build.
std::vector<lp::Variant> variants() {
  std::vector<lp::Variant> v;
  for (auto x : lp::all_variants) v.push_back(x);
  return v;
}

/// Distributions that stress the halo: balanced, row and column slabs (blocks one row or
/// column thin or empty when the grid is smaller than the rank count), and irregular rows
/// with an empty block in the middle (so a ghost row comes from a rank that is not the grid
/// neighbour).
std::vector<std::pair<std::string, Dist>> distributions(int p, I nx) {
  std::vector<std::pair<std::string, Dist>> d;
  d.emplace_back("blocked", Dist::blocked());
  d.emplace_back("rows " + std::to_string(p) + "x1", Dist::grid({p, 1}));
  d.emplace_back("cols 1x" + std::to_string(p), Dist::grid({1, p}));
  std::vector<I> starts;
  for (int k = 0; k < p; ++k) starts.push_back(std::min<I>(nx, 2 * ((k + 1) / 2)));
  d.emplace_back("irregular rows with an empty block", Dist::irregular({starts, std::vector<I>{0}}));
  return d;
}

std::string describe(const lp::Problem& p, const std::string& dist, lp::Variant v) {
  std::ostringstream os;
  os << p.nx << "x" << p.ny << (p.init == lp::Init::hash ? " hash" : " zero") << " init, " << dist << ", variant "
     << lp::to_string(v);
  return os.str();
}

bool same_field(const boost::multi_array<double, 2>& a, const boost::multi_array<double, 2>& b) {
  if (a.shape()[0] != b.shape()[0] || a.shape()[1] != b.shape()[1]) return false;
  for (std::size_t k = 0; k < a.num_elements(); ++k)
    if (a.data()[k] != b.data()[k]) return false;  // bitwise for non-NaN values
  return true;
}

}  // namespace

TEST_CASE("every variant equals the serial reference bitwise, errors per step included") {
  garray::Context ctx;
  const std::vector<std::array<I, 2>> shapes{{7, 5}, {33, 33}, {64, 17}, {3, 40}, {40, 3}, {2, 9}, {5, 2}};
  for (auto init : {lp::Init::hash, lp::Init::zero}) {
    for (auto [nx, ny] : shapes) {
      const lp::Problem prob{nx, ny, init};
      // From a hash every ghost cell matters in the first step already; a few steps catch
      // stale ghosts. From zeros, run until the front has crossed every block (only the
      // shapes where that takes long enough to be a distinct case: the others are cheap).
      if (init == lp::Init::zero && nx * ny < 1000 && nx != 7) continue;
      const int iters = init == lp::Init::hash ? 6 : static_cast<int>(std::max(nx, ny)) + 3;
      for (const auto& [dname, dist] : distributions(ctx.size(), nx)) {
        if (init == lp::Init::zero && dname.starts_with("cols")) continue;  // hash covers it
        std::vector<std::vector<double>> errs;
        for (auto v : variants()) {
          INFO(describe(prob, dname, v));
          lp::Solver s(ctx, prob, v, dist);
          const auto r = s.solve(iters, -1.0, true);  // eps < 0: run every step
          const auto ref = lp::reference_solve(prob, s.distribution(), iters, -1.0);
          CHECK(r.iterations == iters);
          CHECK(r.errors == ref.errors);
          CHECK(r.error == ref.errors.back());
          CHECK(same_field(s.field(), ref.u));
          errs.push_back(r.errors);
        }
        for (std::size_t k = 1; k < errs.size(); ++k) {
          INFO(describe(prob, dname, variants()[k]) << " vs " << lp::to_string(variants()[0]));
          CHECK(errs[k] == errs[0]);
        }
      }
    }
  }
}

TEST_CASE("errors are identical on every rank and reset() starts over") {
  garray::Context ctx;
  const lp::Problem prob{29, 31, lp::Init::hash};
  for (auto v : variants()) {
    INFO("variant " << lp::to_string(v));
    lp::Solver s(ctx, prob, v);
    const auto a = s.solve(12, -1.0, true);
    double mine[2] = {a.error, -a.error}, ext[2] = {0, 0};
    MPI_Allreduce(mine, ext, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    CHECK(ext[0] == a.error);
    CHECK(-ext[1] == a.error);
    s.reset();
    const auto b = s.solve(12, -1.0, true);
    CHECK(a.errors == b.errors);
  }
}

TEST_CASE("numpy variant: nine temporaries per step, none allocating a window once cached") {
  garray::Context ctx;
  const lp::Problem prob{40, 30, lp::Init::hash};
  for (int depth : {0, 3}) {
    INFO("cache depth " << depth);
    lp::set_cache_depth(ctx, depth);
    CHECK(lp::cache_depth(ctx) == depth);
    lp::Solver s(ctx, prob, lp::Variant::numpy);
    s.step();
    s.step();
    const auto before = ctx.stats();
    s.solve(3, -1.0);
    const auto after = ctx.stats();
    CHECK(after.arrays_created - before.arrays_created == 9 * 3);
    CHECK(after.windows_allocated - before.windows_allocated == (depth == 0 ? 9 * 3 : 0));
  }
  // kernel and fused create nothing per step.
  for (auto v : {lp::Variant::kernel, lp::Variant::fused}) {
    lp::Solver s(ctx, prob, v);
    const auto before = ctx.stats().arrays_created;
    s.solve(3, -1.0);
    CHECK(ctx.stats().arrays_created == before);
  }
}

TEST_CASE("solve stops as soon as err <= eps, on every rank") {
  garray::Context ctx;
  const lp::Problem prob{17, 13, lp::Init::zero};
  const auto ref = lp::reference_solve(prob, Dist::blocked().resolve({17, 13}, ctx.size(), "test"), 50, -1.0);
  // A threshold between the errors of steps 4 and 5 (errors decrease here): stops after 5.
  REQUIRE(ref.errors[4] < ref.errors[3]);
  const double eps = 0.5 * (ref.errors[3] + ref.errors[4]);
  for (auto v : variants()) {
    INFO("variant " << lp::to_string(v));
    lp::Solver s(ctx, prob, v);
    const auto r = s.solve(50, eps, true);
    CHECK(r.iterations == 5);
    CHECK(r.error == ref.errors[4]);
    CHECK(lp::reference_solve(prob, s.distribution(), 50, eps).errors.size() == 5);
  }
}

TEST_CASE("the initial field follows laplace.py's boundary assignment order") {
  const lp::Problem p{5, 4, lp::Init::zero};
  const double dx = 0.25, dy = 1.0 / 3.0;
  auto bc = [](double x, double y) { return x * x - y * y; };
  CHECK(lp::initial_value(p, 0, 1) == bc(0.0, 1 * dy));    // u[0,:] = BC(0, y)
  CHECK(lp::initial_value(p, 4, 2) == bc(1.0, 2 * dy));    // u[-1,:] = BC(1, y)
  CHECK(lp::initial_value(p, 2, 0) == bc(2 * dx, 0.0));    // u[:,0] = BC(x, 0)
  CHECK(lp::initial_value(p, 3, 3) == bc(3 * dx, 1.0));    // u[:,-1] = BC(x, 1)
  CHECK(lp::initial_value(p, 0, 3) == bc(0.0, 1.0));       // corners: the columns come last
  CHECK(lp::initial_value(p, 4, 0) == bc(4 * dx, 0.0));
  CHECK(lp::initial_value(p, 4, 3) == bc(4 * dx, 1.0));
  CHECK(lp::initial_value(p, 2, 2) == 0.0);
  const lp::Problem h{5, 4, lp::Init::hash};
  CHECK(lp::initial_value(h, 2, 2) != 0.0);
  CHECK(lp::initial_value(h, 2, 2) >= -1.0);
  CHECK(lp::initial_value(h, 2, 2) < 1.0);
  CHECK(lp::initial_value(h, 2, 1) != lp::initial_value(h, 1, 2));
  const auto c = lp::Coefficients::of(p);
  CHECK(c.dnr_inv == 0.5 / (dx * dx + dy * dy));
  REQUIRE(dx != dy);  // a non-square grid: dx2 and dy2 swapped would show
  CHECK(c.dx2 == dx * dx);
  CHECK(c.dy2 == dy * dy);
  // The exact operation order of laplace.py: ((up + down)*dy2 + (left + right)*dx2)*dnr_inv.
  CHECK(lp::jacobi(0.1, 0.7, 0.3, 0.9, c) == ((0.1 + 0.7) * c.dy2 + (0.3 + 0.9) * c.dx2) * c.dnr_inv);
}

TEST_CASE("bad input throws the documented exception on every rank") {
  garray::Context ctx;
  using S = lp::Solver;
  CHECK_THROWS_AS(S(ctx, lp::Problem{1, 5}, lp::Variant::kernel), garray::InvalidArgument);
  // Only one rank passes a bad grid: every rank throws (no rank creates arrays alone).
  CHECK_THROWS_AS(S(ctx, lp::Problem{ctx.rank() == ctx.size() - 1 ? 0 : 6, 5}, lp::Variant::kernel),
                  garray::InvalidArgument);
  if (ctx.size() > 1)
    CHECK_THROWS_AS(S(ctx, lp::Problem{6, 5 + ctx.rank()}, lp::Variant::kernel), garray::CollectiveMismatch);
  CHECK_THROWS_AS(S(ctx, lp::Problem{6, 5}, lp::Variant::kernel, Dist::grid({ctx.size() + 1, 1})),
                  garray::InvalidArgument);
  // a replicated distribution: InvalidArgument on every rank (on one rank only: that rank
  // InvalidArgument, the others CollectiveFailure naming it; nobody creates arrays alone)
  for (const lp::Variant v : {lp::Variant::kernel, lp::Variant::fused, lp::Variant::numpy})
    CHECK_THROWS_WITH_AS(S(ctx, lp::Problem{6, 5}, v, Dist::replicated()), doctest::Contains("replicated"),
                         garray::InvalidArgument);
  if (ctx.size() > 1) {
    const bool bad = ctx.rank() == 1;
    std::string m;
    bool own = false, peer = false;  // (test_laplace is built without fault injection: no outcome.hpp)
    try {
      S s(ctx, lp::Problem{6, 5}, lp::Variant::kernel, bad ? Dist::replicated() : Dist::blocked());
    } catch (const garray::CollectiveFailure& e) {
      peer = true;
      m = e.what();
    } catch (const garray::InvalidArgument& e) {
      own = true;
      m = e.what();
    }
    CAPTURE(m);
    CHECK((bad ? own : peer));
    CHECK(m.find("replicated") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(lp::parse_variant("fast"), doctest::Contains("unknown variant 'fast'"), garray::InvalidArgument);
  CHECK(lp::parse_variant("numpy") == lp::Variant::numpy);
  CHECK_THROWS_AS(lp::parse_grid("2x"), garray::InvalidArgument);
  CHECK_THROWS_AS(lp::parse_grid("0x2"), garray::InvalidArgument);
  CHECK_THROWS_AS(lp::parse_grid("22"), garray::InvalidArgument);
  CHECK(lp::parse_grid("3x1").procs() == std::array<int, 2>{3, 1});
  CHECK(lp::parse_grid("auto").kind() == Dist::Kind::blocked);
  // The solver still works after the failed constructions.
  lp::Solver s(ctx, lp::Problem{6, 5, lp::Init::hash}, lp::Variant::kernel);
  CHECK(s.solve(3, -1.0).iterations == 3);
  lp::Solver t(ctx, lp::Problem{6, 5, lp::Init::hash}, lp::Variant::kernel);
  CHECK_THROWS_AS(t.field_rows(4, 3, {}), garray::BoundsError);
}

TEST_CASE("combine_partials: the rank-order sum on every rank; a rank that failed makes every rank throw") {
  garray::Context ctx;
  const int p = ctx.size();
  std::vector<double> all;
  for (int r = 0; r < p; ++r) all.push_back(1.0 / (r + 3) + 1e-17 * r);
  const double mine = all[static_cast<std::size_t>(ctx.rank())];
  CHECK(lp::combine_partials(ctx.comm(), mine) == lp::reference_combine(all));  // bitwise
  for (int victim : {0, p - 1}) {
    CAPTURE(victim);
    std::exception_ptr err;
    if (ctx.rank() == victim) err = std::make_exception_ptr(std::runtime_error("sweep broke on the victim"));
    std::string what;
    int failed_rank = -2;
    bool own = false;
    try {
      (void)lp::combine_partials(ctx.comm(), mine, err);
    } catch (const garray::CollectiveFailure& e) {
      what = e.what();
      failed_rank = e.failed_rank();
    } catch (const std::runtime_error& e) {
      what = e.what();
      own = true;
    }
    INFO("what := " << std::string(what));
    CHECK(what.find("sweep broke on the victim") != std::string::npos);  // every rank learns why
    if (ctx.rank() == victim) {
      CHECK(own);  // the victim rethrows its own error
    } else {
      CHECK(failed_rank == victim);
    }
  }
  // and the communicator is usable afterwards (nothing left in flight)
  CHECK(lp::combine_partials(ctx.comm(), mine) == lp::reference_combine(all));
}
