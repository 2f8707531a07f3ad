// laplace: PerformancePython's laplace.py (GAiN's port) on libgarray. Parses options, runs
// the solver (laplace.hpp) and prints key=value lines on rank 0.
//
//   mpiexec -n 2 build/apps/laplace/laplace                       # 1000x1000, 100 iterations
//   mpiexec -n 4 build/apps/laplace/laplace --nx 4000 --ny 4000 --variant fused --grid 2x2
//   mpiexec -n 3 build/apps/laplace/laplace --nx 33 --ny 17 --init hash --check
//   mpiexec -n 3 build/apps/laplace/laplace --reproducible      # error= the same bits at any np
//   mpiexec -n 4 build/apps/laplace/laplace --iters 400 --checkpoint ck.h5 --checkpoint-every 50
//   mpiexec -n 2 build/apps/laplace/laplace --iters 500 --restart ck.h5     # resumes at step 400
#include <boost/program_options.hpp>
#include <garray/garray.hpp>

#include "laplace.hpp"

#ifdef GARRAY_HAVE_IO
#include <fcntl.h>
#include <unistd.h>

#include <garray/array/io.hpp>
#endif

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
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
  garray::Index nx = 1000, ny = 1000;
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
  bool reproducible = false;
  std::string checkpoint;
  int checkpoint_every = 0;
  std::string restart;
  garray::RankOrder rank_order = garray::RankOrder::node;
};

bool is_hdf5_name(const std::string& name) {
  auto ends = [&](std::string_view e) {
    return name.size() >= e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0;
  };
  return ends(".h5") || ends(".hdf5");
}

/// `m` without the "laplace: " its caller is about to print before it.
std::string unprefixed(std::string m) {
  constexpr std::string_view prefix = "laplace: ";
  if (m.starts_with(prefix)) m.erase(0, prefix.size());
  return m;
}

/// A garray error of a parser (parse_grid, parse_variant) as an option error: without the
/// "laplace: " and the " [rank r/p]" that parse_everywhere prints around it.
template <class F>
auto as_option_error(F&& f) {
  try {
    return f();
  } catch (const garray::Error& e) {
    std::string m = unprefixed(e.what());
    if (const std::string stamp = garray::detail::rank_suffix(); m.ends_with(stamp))
      m.resize(m.size() - stamp.size());
    throw po::error(m);
  }
}

// Returns false after --help. Every value is checked here, before anything runs, so that a
// bad one ends every rank with exit code 2 (README); `nranks`: the job's size (--grid).
bool parse(int argc, char** argv, Options& o, bool root, int nranks) {
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
    ("rank-order", po::value(&o.rank_order)->default_value(o.rank_order),
     "node: number the ranks node by node (MPI_COMM_TYPE_SHARED), so neighbouring blocks share a node "
     "whatever the launcher's placement; given: as mpiexec numbered them")
    ("repeat", po::value(&o.repeat)->default_value(o.repeat), "solve this many times; report medians")
    ("output", po::value(&o.output),
     "write the final field to FILE: .h5/.hdf5 as HDF5 dataset \"u\" written collectively (no gather; "
     "needs parallel HDF5), .npy, or text otherwise (both gathered on rank 0)")
    ("init", po::value(&o.init)->default_value(o.init), "initial interior: zero (laplace.py) or hash (of the global index)")
    ("quiet,q", po::bool_switch(&o.quiet), "print only the results, no configuration or statistics")
    ("reproducible", po::bool_switch(&o.reproducible),
     "error = the exact sum of the squared changes rounded once: the same bits at every rank count "
     "and process grid (garray::reproducible)")
    ("check", po::bool_switch(&o.check),
     "compare with a serial in-process reference (small grids); exit 1 on mismatch")
    ("checkpoint", po::value(&o.checkpoint),
     "write checkpoints (HDF5) to FILE: every --checkpoint-every steps and at the end; written to "
     "FILE.tmp and renamed into place when complete")
    ("checkpoint-every", po::value(&o.checkpoint_every)->default_value(o.checkpoint_every),
     "steps between checkpoints (0: only at the end)")
    ("restart", po::value(&o.restart),
     "resume from checkpoint FILE (any rank count and grid); --iters counts the whole run's steps");
  // clang-format on
  po::variables_map vm;
  // no positional options: a stray word ("laplace 2000") is an error, not ignored
  po::store(po::command_line_parser(argc, argv)
                .options(desc)
                .positional(po::positional_options_description{})
                .run(),
            vm);
  if (vm.count("help")) {
    if (root) std::cout << desc << '\n';
    return false;
  }
  po::notify(vm);
  if (o.nx < 2 || o.ny < 2) throw po::error("--nx and --ny must be >= 2");
  // two arrays of nx x ny doubles (with ghost cells): their byte count must fit an int64,
  // which is what the library would refuse later (exit 1, without naming the options)
  if (o.nx > (std::int64_t{1} << 58) / o.ny)
    throw po::error("--nx " + std::to_string(o.nx) + " x --ny " + std::to_string(o.ny) +
                    " is too large (nx * ny must stay below 2^58)");
  (void)as_option_error([&] { return lp::parse_variant(o.variant); });
  const garray::Distribution<2> grid = as_option_error([&] { return lp::parse_grid(o.grid); });
  if (const std::int64_t need = std::int64_t{grid.procs()[0]} * grid.procs()[1];
      grid.kind() == garray::Distribution<2>::Kind::grid && need > nranks)
    throw po::error("--grid " + o.grid + " needs " + std::to_string(need) + " ranks; the job has " +
                    std::to_string(nranks));
  if (o.cache_depth < -1) throw po::error("--cache-depth must be >= -1 (-1: the library default)");
  for (const char* name : {"output", "checkpoint", "restart"})
    if (vm.count(name) && vm[name].as<std::string>().empty())
      throw po::error(std::string("--") + name + " needs a file name");
  if (vm.count("checkpoint-every") && !vm["checkpoint-every"].defaulted() && o.checkpoint.empty())
    throw po::error("--checkpoint-every needs --checkpoint FILE");
  if (o.repeat < 1) throw po::error("--repeat must be >= 1");
  if (o.iters < 0) throw po::error("--iters must be >= 0");
  if (o.init != "zero" && o.init != "hash") throw po::error("--init must be zero or hash");
  if (o.checkpoint_every < 0) throw po::error("--checkpoint-every must be >= 0");
#ifndef GARRAY_HAVE_IO
  if (!o.checkpoint.empty() || !o.restart.empty())
    throw po::error("--checkpoint and --restart need garray built with parallel HDF5");
#endif
  if ((!o.checkpoint.empty() || !o.restart.empty()) && o.repeat != 1)
    throw po::error("--checkpoint and --restart need --repeat 1");
  if (o.check && !o.restart.empty()) throw po::error("--check cannot be combined with --restart");
  if (o.check && (o.nx > (garray::Index{1} << 24) / std::max<garray::Index>(o.ny, 1)))
    throw po::error("--check needs a grid of at most 2^24 points (it runs a serial copy)");
#ifndef GARRAY_HAVE_IO
  if (is_hdf5_name(o.output)) throw po::error("--output " + o.output + ": .h5 needs garray built with parallel HDF5");
#endif
  return true;
}

/// Every option as text, for comparing the ranks' command lines.
std::string canonical(const Options& o) {
  std::ostringstream s;
  s << o.nx << ' ' << o.ny << ' ' << o.iters << ' ' << g17(o.eps) << ' ' << o.variant << ' ' << o.cache_depth << ' '
    << o.grid << ' ' << o.repeat << ' ' << o.output << '\n' << o.init << ' ' << o.quiet << o.check << o.reproducible
    << ' ' << o.checkpoint << '\n' << o.checkpoint_every << ' ' << o.restart << '\n' << o.rank_order;
  return s.str();
}

/// Parses the command line on every rank and makes every rank end the same way: all run with
/// the same options, or all stop (MPMD launches can give ranks different command lines; a
/// rank that stopped alone would leave the others waiting in their first collective).
/// Returns -1 to run, else the exit code (0 after --help, 2 for bad or differing options).
int parse_everywhere(const garray::Context& world, int argc, char** argv, Options& o) {
  const bool first = world.rank() == 0;
  int outcome = 0;  // 0 run, 1 help, 2 bad options
  std::string why;
  try {
    outcome = parse(argc, argv, o, first, world.size()) ? 0 : 1;
  } catch (const po::error& e) {
    outcome = 2;
    why = e.what();
  }
  // One agreement (the library's handshake): a rank with bad options is a failed rank; the
  // options, with the outcome, are the signature
  namespace gd = garray::detail;
  const gd::Agreement a = gd::agree_with_errors(
      world.comm(), gd::hash_mix(gd::hash_string(canonical(o)), static_cast<std::uint64_t>(outcome)),
      outcome == 2 ? gd::LocalFault::invalid : gd::LocalFault::none);
  if (a.failed_rank >= 0) {
    if (outcome == 2)  // one write per rank: the ranks' lines do not interleave
      std::cerr << ("laplace: " + why + " (see --help)" + garray::detail::rank_suffix() + "\n");
    return 2;
  }
  if (!a.signatures_equal) {
    if (first)
      std::cerr << "laplace: the ranks were given different options; every rank must run with the same "
                   "command line\n";
    return 2;
  }
  return outcome == 1 ? 0 : -1;
}

/// Test hook (GARRAY_LAPLACE_KILL=phase:step:rank, phase "step" or "checkpoint"): the given
/// rank SIGKILLs itself after that step, or in the middle of writing that step's checkpoint
/// (the data written, the file not yet closed or renamed). For the checkpoint/restart tests.
void kill_point(const char* phase, long step, int rank) {
  static const char* spec = std::getenv("GARRAY_LAPLACE_KILL");
  if (!spec) return;
  const std::string s(spec), p(phase);
  if (s.rfind(p + ":", 0) != 0) return;
  long want_step = -1;
  int want_rank = -1;
  if (std::sscanf(s.c_str() + p.size() + 1, "%ld:%d", &want_step, &want_rank) != 2) return;
  if (want_step == step && want_rank == rank) {
    std::fflush(nullptr);
    std::raise(SIGKILL);
  }
}

#ifdef GARRAY_HAVE_IO
namespace io = garray::io;

/// Writes the field as dataset "u" of `f` with the run's parameters as attributes.
void write_state(io::File& f, lp::Solver& s, const Options& o, long step, double err) {
  io::write(f, "u", s.current_array());
  f.set_attribute("nx", std::int64_t{o.nx});
  f.set_attribute("ny", std::int64_t{o.ny});
  f.set_attribute("init", o.init);
  f.set_attribute("eps", o.eps);
  f.set_attribute("step", std::int64_t{step});
  f.set_attribute("error", err);
}

/// A checkpoint: written to path.tmp, closed (collective: every rank's data is in the file),
/// then renamed over `path` by rank 0 (after an fsync) and agreed. A kill at any point leaves
/// the previous checkpoint intact.
void write_checkpoint(const garray::Context& ctx, const std::string& path, lp::Solver& s, const Options& o,
                      long step, double err) {
  const std::string tmp = path + ".tmp";
  {
    io::File f(ctx, tmp, io::Mode::create);
    write_state(f, s, o, step, err);
    kill_point("checkpoint", step, ctx.rank());
    f.close();
  }
  std::string why;
  if (ctx.rank() == 0) {
    const int fd = ::open(tmp.c_str(), O_RDONLY);
    if (fd < 0 || ::fsync(fd) != 0) why = "cannot fsync " + tmp;
    if (fd >= 0) ::close(fd);
    if (why.empty() && std::rename(tmp.c_str(), path.c_str()) != 0)
      why = "cannot rename " + tmp + " to " + path;
  }
  ctx.agree("laplace: checkpoint", [&] {
    if (!why.empty()) garray::throw_error<garray::InvalidArgument>("laplace: checkpoint: ", why);
  });
}

/// Reads a checkpoint into the solver after checking it belongs to this problem. Returns the
/// step and the error it was written at.
std::pair<long, double> read_checkpoint(const garray::Context& ctx, const std::string& path, lp::Solver& s,
                                        const Options& o) {
  io::File f(ctx, path, io::Mode::read_only);
  const auto nx = f.attribute<std::int64_t>("nx"), ny = f.attribute<std::int64_t>("ny");
  const auto init = f.attribute<std::string>("init");
  const double eps = f.attribute<double>("eps");
  const long step = static_cast<long>(f.attribute<std::int64_t>("step"));
  const double err = f.attribute<double>("error");
  std::ostringstream bad;
  if (nx != o.nx || ny != o.ny)
    bad << " grid " << nx << "x" << ny << " (this run: " << o.nx << "x" << o.ny << ")";
  if (init != o.init) bad << " init " << init << " (this run: " << o.init << ")";
  if (eps != o.eps) bad << " eps " << g17(eps) << " (this run: " << g17(o.eps) << ")";
  if (!bad.str().empty())
    garray::throw_error<garray::InvalidArgument>("laplace: --restart ", path, ": the checkpoint is for",
                                                 bad.str());
  s.restore([&](garray::GlobalArray<double, 2>& a) { io::read(f, "u", a); });
  return {step, err};
}
#endif

int run(int argc, char** argv) {
  Options o;
  // For parsing (rank 0 prints; it stays rank 0 in either order). Kept alive: if garray
  // initialised MPI, the last context to go finalises it.
  const garray::Context world;
  if (const int code = parse_everywhere(world, argc, argv, o); code >= 0) return code;
  garray::Context ctx(MPI_COMM_WORLD, o.rank_order);
  const bool root = ctx.rank() == 0;
  const lp::Variant variant = lp::parse_variant(o.variant);
  const lp::Problem prob{o.nx, o.ny, o.init == "hash" ? lp::Init::hash : lp::Init::zero, o.reproducible};
  if (o.cache_depth >= 0) lp::set_cache_depth(ctx, o.cache_depth);

  std::optional<lp::Solver> holder(std::in_place, ctx, prob, variant, lp::parse_grid(o.grid));
  lp::Solver& solver = *holder;
  const auto dist = solver.distribution();

  std::ostringstream os;
  if (root && !o.quiet) {
    os << "app=laplace\nnx=" << o.nx << "\nny=" << o.ny << "\niters=" << o.iters << "\neps=" << o.eps
       << "\nvariant=" << lp::to_string(variant) << "\ninit=" << o.init
       << "\nreproducible=" << (o.reproducible ? 1 : 0)
       << "\nprocess_grid=" << dist.procs()[0] << 'x' << dist.procs()[1]
       << "\ncache_depth=" << lp::cache_depth(ctx) << "\nrepeat=" << o.repeat << '\n'
       << ctx.describe();
    std::string text = os.str();
    std::erase(text, '\0');  // some MPI libraries count the terminator in the version length
    std::cout << text << std::flush;
  }

  // Restart: the field and the step count from the checkpoint; --iters counts every step.
  long start_step = 0;
  double start_err = 0;
#ifdef GARRAY_HAVE_IO
  if (!o.restart.empty()) {
    std::tie(start_step, start_err) = read_checkpoint(ctx, o.restart, solver, o);
    if (root && !o.quiet)
      std::cout << "restart=" << o.restart << "\nrestart_step=" << start_step << '\n' << std::flush;
  }
#endif
  const bool converged = start_step > 0 && start_err <= o.eps;  // the checkpointed run had stopped
  const int todo = converged ? 0 : static_cast<int>(std::max<long>(0, o.iters - start_step));

  std::function<void(int, double)> after_step;
  after_step = [&](int k, double err) {
    const long step = start_step + k;
    kill_point("step", step, ctx.rank());
#ifdef GARRAY_HAVE_IO
    if (!o.checkpoint.empty() && o.checkpoint_every > 0 && step % o.checkpoint_every == 0)
      write_checkpoint(ctx, o.checkpoint, solver, o, step, err);
#else
    (void)err;
#endif
  };

  std::vector<double> per_iter, total;
  lp::SolveResult res;
  for (int r = 0; r < o.repeat; ++r) {
    if (r > 0) solver.reset();
    res = solver.solve(todo, o.eps, o.check, after_step);
    total.push_back(res.seconds);
    per_iter.push_back(res.iterations > 0 ? res.seconds / res.iterations : 0.0);
  }
  const long final_step = start_step + res.iterations;
  if (res.iterations == 0) res.error = start_err;  // nothing left to do: the checkpoint's error
#ifdef GARRAY_HAVE_IO
  // The final state, unless the last step just wrote it.
  if (!o.checkpoint.empty() &&
      (o.checkpoint_every == 0 || final_step % o.checkpoint_every != 0 || res.iterations == 0))
    write_checkpoint(ctx, o.checkpoint, solver, o, final_step, res.error);
#endif

  int status = 0;
  std::string check_msg;
  if (o.check) {
    // Every rank compares the whole field and the errors with its own serial run; ctx.agree:
    // a rank failing in it (out of memory) makes every rank throw instead of waiting
    const bool same = ctx.agree("laplace: --check", [&] {
      const auto ref = lp::reference_solve(prob, dist, o.iters, o.eps);
      bool ok = ref.errors.size() == res.errors.size();
      std::size_t first_bad = 0;
      for (std::size_t k = 0; ok && k < ref.errors.size(); ++k)
        if (ref.errors[k] != res.errors[k]) {  // bitwise: same operations in the same order
          ok = false;
          first_bad = k;
        }
      const auto u = solver.field();
      garray::Index bad_i = -1, bad_j = -1;
      for (garray::Index i = 0; i < o.nx && bad_i < 0; ++i)
        for (garray::Index j = 0; j < o.ny; ++j)
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
        m << (ok ? "" : "; ") << "u[" << bad_i << "][" << bad_j << "] = " << g17(u[bad_i][bad_j])
          << " vs reference " << g17(ref.u[bad_i][bad_j]);
      check_msg = m.str();
      return ok && bad_i < 0;
    });
    const bool ok = ctx.agree(same);
    status = ok ? 0 : 1;
    check_msg = ok ? "pass" : "FAIL " + check_msg;
  }

#ifdef GARRAY_HAVE_IO
  if (!o.output.empty() && is_hdf5_name(o.output)) {  // collective: each rank writes its block
    io::File f(ctx, o.output, io::Mode::create);
    write_state(f, solver, o, final_step, res.error);
  } else
#endif
      if (!o.output.empty()) {
    // rank 0 writes; ctx.agree: if it cannot (no such directory, disk full), every rank throws
    ctx.agree("laplace: --output", [&] {
      if (root) lp::write_field(o.output, solver.field());
    });
  }

  if (root) {
    std::ostringstream r;
    r << "iterations=" << res.iterations << "\nsteps=" << final_step
      << "\ntime_per_iter_ms=" << median(per_iter) * 1e3 << "\nsolve_time_s=" << median(total)
      << "\nerror=" << g17(res.error) << '\n';
    if (o.check) r << "check=" << check_msg << '\n';
    if (!o.output.empty()) r << "output=" << o.output << '\n';
    std::cout << r.str() << std::flush;
  }
  holder.reset();  // collective: the solver's arrays go back to the cache before the table
  if (!o.quiet) garray::print_stats(ctx, std::cout);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "laplace: " << unprefixed(e.what()) << '\n';
    return 1;
  }
}
