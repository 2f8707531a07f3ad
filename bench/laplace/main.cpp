// bench_laplace - the Laplace benchmark (issue 7): garray's three variants against a
// hand-written MPI halo-exchange Jacobi and a plain serial loop, in one run.
//
// Every contender computes the same Jacobi step with the same floating-point operations
// and the error sqrt(sum((new-old)^2)) accumulated as it goes; serial, mpi and kernel run the
// very same loop (laplace::sweep), so their ratios measure communication and library costs:
//   serial   one std::vector pair, buffers swapped, the error in the same pass (rank 0 only;
//            the other ranks wait; meaningful at np=1)
//   mpi      plain MPI, no garray: row slabs (the same rows as garray's blocked split at
//            np=2), ghost rows by MPI_Sendrecv, the same fused loop, buffers swapped,
//            MPI_Allreduce of the error
//   kernel / fused / numpy   garray::laplace::Solver (apps/laplace), default distribution;
//            with the suffix :rows (e.g. kernel:rows) on mpi's row slabs
// Per grid size n: --repeat rounds; in each round every contender solves --iters steps from
// the initial field (rounds interleave the contenders so drift hits all alike). Reported: the
// median ms per iteration, the ratio to mpi (of the medians, and the median of the per-round
// ratios) and to serial, and for numpy the windows
// allocated after the first iteration (bar: 0). CSV rows (--csv) feed bench/laplace/plot.sh.
#include "bench_util.hpp"

#include "laplace.hpp"

#include <garray/garray.hpp>

#include <boost/program_options.hpp>

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace gb = garray::bench;
namespace lp = garray::laplace;
namespace po = boost::program_options;
using I = garray::Index;

namespace {

struct Options {
  std::vector<I> sizes{2000, 4000};
  int iters = 10;
  int repeat = 5;
  std::vector<std::string> contenders{"serial", "mpi", "kernel", "fused", "numpy"};
  std::string csv;
  garray::RankOrder rank_order = garray::RankOrder::node;
};

// ---- the plain serial loop -------------------------------------------------------------

class Serial {
 public:
  explicit Serial(const lp::Problem& p) : p_(p), c_(lp::Coefficients::of(p)) {
    const auto n = static_cast<std::size_t>(p.nx * p.ny);
    u_.resize(n);
    v_.resize(n);
    reset();
  }
  void reset() {
    for (I i = 0; i < p_.nx; ++i)
      for (I j = 0; j < p_.ny; ++j) u_[static_cast<std::size_t>(i * p_.ny + j)] = lp::initial_value(p_, i, j);
    v_ = u_;
  }
  double step() {
    const I ny = p_.ny;
    const double s = lp::sweep(u_.data() + ny + 1, v_.data() + ny + 1, ny, p_.nx - 2, ny - 2, c_);
    u_.swap(v_);
    return std::sqrt(s);
  }

 private:
  lp::Problem p_;
  lp::Coefficients c_;
  std::vector<double> u_, v_;
};

// ---- the hand-written MPI halo exchange -------------------------------------------------

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string(what) + " failed");
}

class HandMpi {
 public:
  HandMpi(MPI_Comm comm, const lp::Problem& p) : p_(p), c_(lp::Coefficients::of(p)) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
    comm_ = comm;
    // Balanced row slabs: the first nx % p ranks get one row more (garray's split too).
    const I base = p.nx / size_, extra = p.nx % size_;
    lo_ = rank_ * base + std::min<I>(rank_, extra);
    hi_ = lo_ + base + (rank_ < extra ? 1 : 0);
    up_ = (rank_ > 0 && lo_ < hi_) ? rank_ - 1 : MPI_PROC_NULL;
    dn_ = (rank_ + 1 < size_ && hi_ < p.nx) ? rank_ + 1 : MPI_PROC_NULL;
    const auto n = static_cast<std::size_t>((hi_ - lo_ + 2) * p.ny);  // one ghost row each side
    u_.resize(n);
    v_.resize(n);
    reset();
  }
  void reset() {
    for (I i = lo_; i < hi_; ++i)
      for (I j = 0; j < p_.ny; ++j) at(u_, i, j) = lp::initial_value(p_, i, j);
    v_ = u_;
  }
  double step() {
    const I ny = p_.ny;
    const int cnt = static_cast<int>(ny);
    // Ghost rows: send my first row up and receive the row below mine, then the reverse.
    check(MPI_Sendrecv(&at(u_, lo_, 0), cnt, MPI_DOUBLE, up_, 0, &at(u_, hi_, 0), cnt, MPI_DOUBLE, dn_, 0, comm_,
                       MPI_STATUS_IGNORE),
          "MPI_Sendrecv");
    check(MPI_Sendrecv(&at(u_, hi_ - 1, 0), cnt, MPI_DOUBLE, dn_, 1, &at(u_, lo_ - 1, 0), cnt, MPI_DOUBLE, up_, 1,
                       comm_, MPI_STATUS_IGNORE),
          "MPI_Sendrecv");
    const I i0 = std::max<I>(lo_, 1), i1 = std::min<I>(hi_, p_.nx - 1);
    double partial = 0.0;
    if (i0 < i1) partial = lp::sweep(&at(u_, i0, 1), &at(v_, i0, 1), ny, i1 - i0, ny - 2, c_);
    u_.swap(v_);
    double s = 0.0;
    check(MPI_Allreduce(&partial, &s, 1, MPI_DOUBLE, MPI_SUM, comm_), "MPI_Allreduce");
    return std::sqrt(s);
  }

 private:
  double& at(std::vector<double>& a, I i, I j) { return a[static_cast<std::size_t>((i - lo_ + 1) * p_.ny + j)]; }
  lp::Problem p_;
  lp::Coefficients c_;
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1, up_ = MPI_PROC_NULL, dn_ = MPI_PROC_NULL;
  I lo_ = 0, hi_ = 0;
  std::vector<double> u_, v_;
};

// ---- driver -----------------------------------------------------------------------------

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

bool parse(int argc, char** argv, Options& o, bool root) {
  std::string sizes = "2000,4000", contenders = "serial,mpi,kernel,fused,numpy";
  po::options_description desc("bench_laplace: Laplace Jacobi, garray variants vs hand-written MPI and serial\nOptions");
  // clang-format off
  desc.add_options()
    ("help,h", "print this help and exit")
    ("sizes", po::value(&sizes)->default_value(sizes), "grid sizes n (n x n), comma separated")
    ("iters", po::value(&o.iters)->default_value(o.iters), "Jacobi steps per solve")
    ("repeat", po::value(&o.repeat)->default_value(o.repeat), "solves per contender (median reported)")
    ("contenders", po::value(&contenders)->default_value(contenders), "subset of serial,mpi,kernel,fused,numpy; a garray variant with the suffix :rows runs on row slabs (np x 1), as mpi does")
    ("csv", po::value(&o.csv), "append rows to this CSV file (rank 0)")
    ("rank-order", po::value(&o.rank_order)->default_value(o.rank_order),
     "node (number ranks node by node, as laplace does) or given (as mpiexec placed them); every contender, mpi included, runs on that numbering");
  // clang-format on
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, desc), vm);
  if (vm.count("help")) {
    if (root) std::cout << desc << '\n';
    return false;
  }
  po::notify(vm);
  o.sizes.clear();
  for (const auto& s : split(sizes)) o.sizes.push_back(std::stoll(s));
  o.contenders = split(contenders);
  for (const auto& c : o.contenders) {
    const auto colon = c.find(':');
    if (colon != std::string::npos && c.substr(colon) != ":rows")
      throw po::error("--contenders: unknown layout in '" + c + "' (the only suffix is :rows)");
  }
  if (o.iters < 2 || o.repeat < 1) throw po::error("--iters must be >= 2 and --repeat >= 1");
  return true;
}

struct Sample {
  std::vector<double> ms;  // per iteration, one per round
  double err = 0;          // the error after the last step
  long long late_windows = 0;  // windows allocated after the first iteration (garray variants)
};

int run(int argc, char** argv) {
  Options o;
  // rank 0 prints the help (it stays rank 0 in either order); kept alive: if garray
  // initialised MPI, the last context to go finalises it
  const garray::Context world;
  if (!parse(argc, argv, o, world.rank() == 0)) return 0;
  garray::Context ctx(MPI_COMM_WORLD, o.rank_order);
  const int rank = ctx.rank(), np = ctx.size();
  const bool root = rank == 0;
  if (root) {
    gb::print_run_info(std::cout, "bench_laplace", np);
    std::cout << "# window kind : " << garray::to_string(ctx.window_kind()) << '\n'
              << "# rank order  : " << garray::to_string(ctx.rank_order())
              << (ctx.renumbered() ? " (renumbered)" : "") << '\n'
              << "# iters/solve : " << o.iters << ", rounds: " << o.repeat << '\n';
  }
  gb::CsvWriter csv(root ? o.csv : std::string(),
                    "n,np,contender,ms_per_iter,ratio_to_mpi,ratio_to_serial,error,late_windows,paired_ratio_to_mpi");

  for (I n : o.sizes) {
    const lp::Problem prob{n, n, lp::Init::zero};
    std::map<std::string, Sample> res;
    std::unique_ptr<Serial> serial;
    std::unique_ptr<HandMpi> hand;
    std::map<std::string, std::unique_ptr<lp::Solver>> solvers;
    for (const auto& c : o.contenders) {
      if (c == "serial") {
        if (root) serial = std::make_unique<Serial>(prob);
      } else if (c == "mpi") {
        hand = std::make_unique<HandMpi>(ctx.comm(), prob);
      } else {
        // "kernel:rows": the variant on row slabs (process grid np x 1), the hand-written
        // version's decomposition; plain "kernel": the default (blocked) distribution
        const auto colon = c.find(':');
        const std::string variant = c.substr(0, colon), layout = colon == std::string::npos ? "" : c.substr(colon + 1);
        solvers[c] = std::make_unique<lp::Solver>(
            ctx, prob, lp::parse_variant(variant),
            layout.empty() ? garray::Distribution<2>::blocked() : garray::Distribution<2>::grid({np, 1}));
      }
    }
    for (int round = 0; round < o.repeat; ++round) {
      for (const auto& c : o.contenders) {
        Sample& s = res[c];
        ctx.barrier();
        if (c == "serial") {
          if (root) {
            serial->reset();
            gb::Timer t;
            for (int it = 0; it < o.iters; ++it) s.err = serial->step();
            s.ms.push_back(t.seconds() * 1e3 / o.iters);
          }
        } else if (c == "mpi") {
          hand->reset();
          ctx.barrier();
          gb::Timer t;
          for (int it = 0; it < o.iters; ++it) s.err = hand->step();
          double dt = t.seconds();
          MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, ctx.comm());
          s.ms.push_back(dt * 1e3 / o.iters);
        } else {
          auto& sv = *solvers[c];
          sv.reset();
          // The first step separately: the windows it creates are the numpy variant's
          // working set; every later step must reuse them (counted as late_windows).
          ctx.barrier();
          gb::Timer t;
          sv.step();
          const auto w0 = ctx.stats().windows_allocated;
          const auto r = sv.solve(o.iters - 1, -1.0);
          double dt = t.seconds();
          MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, ctx.comm());
          s.ms.push_back(dt * 1e3 / o.iters);
          s.err = r.error;
          s.late_windows += ctx.stats().windows_allocated - w0;
        }
      }
    }
    solvers.clear();
    hand.reset();
    serial.reset();

    if (root) {
      const double t_mpi = res.count("mpi") ? gb::median(res["mpi"].ms) : NAN;
      const double t_ser = res.count("serial") ? gb::median(res["serial"].ms) : NAN;
      std::printf("\n n=%lld np=%d  (ms per iteration, median of %d)\n", static_cast<long long>(n), np, o.repeat);
      std::printf("  %-12s %10s %9s %9s %9s  %-24s %s\n", "", "ms/iter", "x mpi", "paired", "x serial", "error",
                  "late windows");
      for (const auto& c : o.contenders) {
        const Sample& s = res[c];
        const double t = gb::median(s.ms);
        // per round, this contender and mpi ran seconds apart
        const double paired = res.count("mpi") ? gb::paired_ratio(s.ms, res["mpi"].ms) : NAN;
        char err[40];
        std::snprintf(err, sizeof err, "%.17g", s.err);
        std::printf("  %-12s %10.3f %9.3f %9.3f %9.3f  %-24s %lld\n", c.c_str(), t, t / t_mpi, paired, t / t_ser, err,
                    s.late_windows);
        csv.row(n, np, c, t, t / t_mpi, t / t_ser, err, s.late_windows, paired);
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "bench_laplace: " << e.what() << '\n';
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}
