// laplace: PerformancePython's laplace.py (GAiN's port) on libgarray. Parses options, runs
// the solver (laplace.hpp) and prints key=value lines on rank 0.
//
//   mpiexec -n 2 build/apps/laplace/laplace                       # 1000x1000, 100 iterations
//   mpiexec -n 4 build/apps/laplace/laplace --nx 4000 --ny 4000 --variant fused --grid 2x2
//   mpiexec -n 3 build/apps/laplace/laplace --nx 33 --ny 17 --init hash --check
#include "laplace.hpp"

#include <garray/garray.hpp>

#include <boost/program_options.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace po = boost::program_options;
namespace lp = garray::laplace;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string g17(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

struct Options {
  garray::index nx = 1000, ny = 1000;
  int iters = 100;
  double eps = 1e-16;
  std::string variant = "kernel";
  int cache_depth = -1;
  std::string grid = "auto";
  int repeat = 1;
  std::string output;
  std::string init = "zero";
  bool quiet = false;
  bool check = false;
};

// Returns false after --help.
bool parse(int argc, char** argv, Options& o, bool root) {
  po::options_description desc(
      "laplace: Jacobi iterations for the Laplace equation on an nx x ny grid (PerformancePython's\n"
      "laplace.py as ported by GAiN), distributed with libgarray.\n\nOptions");
  // clang-format off
  desc.add_options()
    ("help,h", "print this help and exit")
    ("nx", po::value(&o.nx)->default_value(o.nx), "grid points along x (rows), >= 2")
    ("ny", po::value(&o.ny)->default_value(o.ny), "grid points along y (columns), >= 2")
    ("iters", po::value(&o.iters)->default_value(o.iters), "maximum number of iterations")
    ("eps", po::value(&o.eps)->default_value(o.eps, "1e-16"), "stop when the error is <= eps")
    ("variant", po::value(&o.variant)->default_value(o.variant),
     "kernel (local blocks + one-sided ghosts, hand-written loop), fused (one owner-computes "
     "expression per step), numpy (operator by operator through temporaries)")
    ("cache-depth", po::value(&o.cache_depth)->default_value(o.cache_depth),
     "array cache depth per key (-1: library default / GARRAY_CACHE_DEPTH; 0: off)")
    ("grid", po::value(&o.grid)->default_value(o.grid), "process grid PxQ (e.g. 2x1), or auto (balanced)")
    ("repeat", po::value(&o.repeat)->default_value(o.repeat), "solve this many times; report medians")
    ("output", po::value(&o.output), "write the final field to FILE (.npy, or text otherwise)")
    ("init", po::value(&o.init)->default_value(o.init), "initial interior: zero (laplace.py) or hash (of the global index)")
    ("quiet,q", po::bool_switch(&o.quiet), "print only the results, no configuration or statistics")
    ("check", po::bool_switch(&o.check),
     "compare with a serial in-process reference (small grids); exit 1 on mismatch");
  // clang-format on
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, desc), vm);
  if (vm.count("help")) {
    if (root) std::cout << desc << '\n';
    return false;
  }
  po::notify(vm);
  if (o.repeat < 1) throw po::error("--repeat must be >= 1");
  if (o.iters < 0) throw po::error("--iters must be >= 0");
  if (o.init != "zero" && o.init != "hash") throw po::error("--init must be zero or hash");
  return true;
}

int run(int argc, char** argv) {
  garray::Context ctx;
  const bool root = ctx.rank() == 0;
  Options o;
  try {
    if (!parse(argc, argv, o, root)) return 0;
  } catch (const po::error& e) {
    if (root) std::cerr << "laplace: " << e.what() << " (see --help)\n";
    return 2;
  }
  const lp::Variant variant = lp::parse_variant(o.variant);
  const lp::Problem prob{o.nx, o.ny, o.init == "hash" ? lp::Init::hash : lp::Init::zero};
  if (o.cache_depth >= 0) lp::set_cache_depth(ctx, o.cache_depth);
  if (o.check && o.nx * o.ny > (garray::index{1} << 24))
    throw garray::InvalidArgument("laplace: --check needs a grid of at most 2^24 points (it runs a serial copy)");

  std::optional<lp::Solver> holder(std::in_place, ctx, prob, variant, lp::parse_grid(o.grid));
  lp::Solver& solver = *holder;
  const auto dist = solver.distribution();

  std::ostringstream os;
  if (root && !o.quiet) {
    os << "app=laplace\nnx=" << o.nx << "\nny=" << o.ny << "\niters=" << o.iters << "\neps=" << o.eps
       << "\nvariant=" << lp::to_string(variant) << "\ninit=" << o.init << "\nprocess_grid=" << dist.procs()[0] << 'x'
       << dist.procs()[1] << "\ncache_depth=" << lp::cache_depth(ctx) << "\nrepeat=" << o.repeat << '\n'
       << ctx.describe();
    std::string text = os.str();
    std::erase(text, '\0');  // some MPI libraries count the terminator in the version length
    std::cout << text << std::flush;
  }

  std::vector<double> per_iter, total;
  lp::SolveResult res;
  for (int r = 0; r < o.repeat; ++r) {
    if (r > 0) solver.reset();
    res = solver.solve(o.iters, o.eps, o.check);
    total.push_back(res.seconds);
    per_iter.push_back(res.iterations > 0 ? res.seconds / res.iterations : 0.0);
  }

  int status = 0;
  std::string check_msg;
  if (o.check) {
    // Every rank compares the part of the field it owns plus the errors; then agree.
    const auto ref = lp::reference_solve(prob, dist, o.iters, o.eps);
    bool ok = ref.errors.size() == res.errors.size();
    std::size_t first_bad = 0;
    for (std::size_t k = 0; ok && k < ref.errors.size(); ++k)
      if (ref.errors[k] != res.errors[k]) {  // bitwise: same operations in the same order
        ok = false;
        first_bad = k;
      }
    const auto u = solver.field();
    garray::index bad_i = -1, bad_j = -1;
    for (garray::index i = 0; i < o.nx && bad_i < 0; ++i)
      for (garray::index j = 0; j < o.ny; ++j)
        if (u[i][j] != ref.u[i][j]) {
          bad_i = i;
          bad_j = j;
          break;
        }
    std::ostringstream m;
    if (!ok && ref.errors.size() != res.errors.size())
      m << "iterations " << res.errors.size() << " vs reference " << ref.errors.size();
    else if (!ok)
      m << "error of step " << first_bad + 1 << " " << g17(res.errors[first_bad]) << " vs reference "
        << g17(ref.errors[first_bad]);
    if (bad_i >= 0)
      m << (ok ? "" : "; ") << "u[" << bad_i << "][" << bad_j << "] = " << g17(u[bad_i][bad_j]) << " vs reference "
        << g17(ref.u[bad_i][bad_j]);
    ok = ok && bad_i < 0;
    ok = garray::detail::all_ok(ctx.comm(), ok);
    status = ok ? 0 : 1;
    check_msg = ok ? "pass" : "FAIL " + m.str();
  }

  if (!o.output.empty() && root) lp::write_field(o.output, solver.field());

  if (root) {
    std::ostringstream r;
    r << "iterations=" << res.iterations << "\ntime_per_iter_ms=" << median(per_iter) * 1e3
      << "\nsolve_time_s=" << median(total) << "\nerror=" << g17(res.error) << '\n';
    if (o.check) r << "check=" << check_msg << '\n';
    if (!o.output.empty()) r << "output=" << o.output << '\n';
    std::cout << r.str() << std::flush;
  }
  holder.reset();  // collective: the table then shows the windows freed too
  if (!o.quiet) garray::print_stats(ctx, std::cout);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "laplace: " << e.what() << '\n';
    return 1;
  }
}
