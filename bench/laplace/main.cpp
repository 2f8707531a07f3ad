// bench_laplace - the Laplace benchmark (issue 7): garray's three variants against a
// hand-written MPI halo-exchange Jacobi and a plain serial loop, in one run.
//
// Every contender computes the same Jacobi step with the same floating-point operations
// and the error sqrt(sum((new-old)^2)) accumulated as it goes; serial, mpi and kernel run the
// very same loop (laplace::sweep), so their ratios measure communication and library costs.
// The fields agree bitwise; the errors' sums do not: each contender sums the squared changes
// of its blocks, but the hand-written MPI reduces the per-rank partials with MPI_Allreduce
// (whatever order the MPI library takes), garray gathers them and sums them in rank order
// (laplace::combine_partials), and serial sums the whole grid in one pass:
//   serial   one std::vector pair, buffers swapped, the error in the same pass (rank 0 only;
//            the other ranks wait; meaningful at np=1)
//   mpi      plain MPI, no garray: row slabs (the same rows as garray's blocked split at
//            np=2); mpi:blocked on garray's default balanced grid (the blocks the garray
//            variants get by default). Ghost rows and columns (an MPI_Type_vector) by
//            nonblocking receives and sends and one MPI_Waitall, the same fused loop, buffers
//            swapped, MPI_Allreduce of the error
//   kernel / fused / numpy   garray::laplace::Solver (apps/laplace), default distribution;
//            with the suffix :rows (e.g. kernel:rows) on mpi's row slabs
// Per grid size n: --repeat rounds; in each round every contender solves --iters steps from
// the initial field (rounds interleave the contenders so drift hits all alike). Reported: the
// median ms per iteration, the ratio to mpi on row slabs ("x mpi": of the medians, and
// "paired": the median of the per-round ratios; `mpi` and `mpi:rows` are the same contender;
// at np >= 3 the garray variants' default blocked grid is not row slabs, so these ratios
// compare different layouts, as the header says), the paired ratio to the hand-written
// version on the same layout ("x hand": kernel vs mpi:blocked, kernel:rows vs mpi), the
// ratio to serial, and for numpy the windows allocated after the first iteration (bar: 0).
// CSV rows (--csv) feed bench/laplace/plot.sh.
//
// After the rounds (untimed) every contender's error after the last step is compared with
// the reference's (serial if it ran, else the first mpi contender, else the first one)
// within n*n*eps relative: the fields are the same bitwise, and each way of summing the
// (n-2)^2 squared changes (all >= 0) lies within (n*n - 1) * eps / 2 relative of the exact
// sum. The garray variants on one layout must also agree with each other bitwise (they
// combine their partials alike). Exit code 1 on a mismatch, 2 for a bad command line (every
// rank parses it alike).
#include <mpi.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <garray/garray.hpp>
#include <iostream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "laplace.hpp"

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
  /// The hand-written version on the blocks of `spec` resolved for this communicator (row
  /// slabs `grid({np, 1})`, or the default blocked grid: the same blocks the garray variant
  /// of that layout gets).
  HandMpi(MPI_Comm comm, const lp::Problem& p, const garray::Distribution<2>& spec)
      : p_(p), c_(lp::Coefficients::of(p)), comm_(comm) {
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const auto d = spec.resolve({p.nx, p.ny}, size, "bench_laplace: hand-written MPI");
    box_ = d.block(rank);
    // A neighbour across each face of my block: the block next to mine on the process grid,
    // if I own something and it does (balanced bounds: an empty block has empty successors).
    auto neighbour = [&](std::size_t dim, int delta) {
      if (box_.empty()) return MPI_PROC_NULL;
      auto c = d.coords(rank);
      c[dim] += delta;
      if (c[dim] < 0 || c[dim] >= d.procs()[dim]) return MPI_PROC_NULL;
      const int r = d.rank_of(c);
      return d.block(r).empty() ? MPI_PROC_NULL : r;
    };
    up_ = neighbour(0, -1);
    dn_ = neighbour(0, +1);
    left_ = neighbour(1, -1);
    right_ = neighbour(1, +1);
    rows_ = box_.extent(0);
    cols_ = box_.extent(1);
    stride_ = cols_ + 2;  // one ghost cell on each side
    const auto n = static_cast<std::size_t>((rows_ + 2) * stride_);
    u_.resize(n);
    v_.resize(n);
    check(MPI_Type_vector(static_cast<int>(rows_), 1, static_cast<int>(stride_), MPI_DOUBLE, &column_),
          "MPI_Type_vector");
    check(MPI_Type_commit(&column_), "MPI_Type_commit");
    reset();
  }
  ~HandMpi() { MPI_Type_free(&column_); }
  HandMpi(const HandMpi&) = delete;
  HandMpi& operator=(const HandMpi&) = delete;

  void reset() {
    for (I i = box_.lo[0]; i < box_.hi[0]; ++i)
      for (I j = box_.lo[1]; j < box_.hi[1]; ++j) at(u_, i, j) = lp::initial_value(p_, i, j);
    v_ = u_;
  }
  double step() {
    // Ghost rows and columns (corners are not needed): every receive posted, every send
    // started, then one wait, as a careful MPI programmer writes it.
    std::array<MPI_Request, 8> rq;
    int n = 0;
    const int cnt = static_cast<int>(cols_), one = 1;
    auto xfer = [&](void* recv_buf, void* send_buf, int count, MPI_Datatype t, int peer, int tag_in, int tag_out) {
      if (peer == MPI_PROC_NULL) return;
      check(MPI_Irecv(recv_buf, count, t, peer, tag_in, comm_, &rq[n++]), "MPI_Irecv");
      check(MPI_Isend(send_buf, count, t, peer, tag_out, comm_, &rq[n++]), "MPI_Isend");
    };
    if (!box_.empty()) {
      // tag = direction of travel: 0 up, 1 down, 2 left, 3 right
      xfer(&at(u_, box_.lo[0] - 1, box_.lo[1]), &at(u_, box_.lo[0], box_.lo[1]), cnt, MPI_DOUBLE, up_, 1, 0);
      xfer(&at(u_, box_.hi[0], box_.lo[1]), &at(u_, box_.hi[0] - 1, box_.lo[1]), cnt, MPI_DOUBLE, dn_, 0, 1);
      xfer(&at(u_, box_.lo[0], box_.lo[1] - 1), &at(u_, box_.lo[0], box_.lo[1]), one, column_, left_, 3, 2);
      xfer(&at(u_, box_.lo[0], box_.hi[1]), &at(u_, box_.lo[0], box_.hi[1] - 1), one, column_, right_, 2, 3);
      check(MPI_Waitall(n, rq.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    }
    const I i0 = std::max<I>(box_.lo[0], 1), i1 = std::min<I>(box_.hi[0], p_.nx - 1);
    const I j0 = std::max<I>(box_.lo[1], 1), j1 = std::min<I>(box_.hi[1], p_.ny - 1);
    double partial = 0.0;
    if (i0 < i1 && j0 < j1) partial = lp::sweep(&at(u_, i0, j0), &at(v_, i0, j0), stride_, i1 - i0, j1 - j0, c_);
    u_.swap(v_);
    double s = 0.0;
    check(MPI_Allreduce(&partial, &s, 1, MPI_DOUBLE, MPI_SUM, comm_), "MPI_Allreduce");
    return std::sqrt(s);
  }

 private:
  double& at(std::vector<double>& a, I i, I j) {
    return a[static_cast<std::size_t>((i - box_.lo[0] + 1) * stride_ + (j - box_.lo[1] + 1))];
  }
  lp::Problem p_;
  lp::Coefficients c_;
  MPI_Comm comm_;
  garray::Box<2> box_;
  int up_ = MPI_PROC_NULL, dn_ = MPI_PROC_NULL, left_ = MPI_PROC_NULL, right_ = MPI_PROC_NULL;
  I rows_ = 0, cols_ = 0, stride_ = 2;
  MPI_Datatype column_ = MPI_DATATYPE_NULL;
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

/// A contender "name[:layout]": the hand-written version defaults to row slabs, the garray
/// variants to the default (blocked) distribution.
struct Contender {
  std::string name, layout;
};
Contender contender(const std::string& c) {
  const auto colon = c.find(':');
  Contender k{c.substr(0, colon), colon == std::string::npos ? "" : c.substr(colon + 1)};
  if (k.layout.empty()) k.layout = k.name == "mpi" ? "rows" : "blocked";
  return k;
}
garray::Distribution<2> layout_of(const Contender& k, int np) {
  return k.layout == "rows" ? garray::Distribution<2>::grid({np, 1}) : garray::Distribution<2>::blocked();
}

// Throws boost::program_options::error naming the option for a bad command line.
bool parse(int argc, char** argv, Options& o, bool root) {
  std::string sizes = "2000,4000", contenders = "serial,mpi,kernel,fused,numpy";
  po::options_description desc("bench_laplace: Laplace Jacobi, garray variants vs hand-written MPI and serial\nOptions");
  // clang-format off
  desc.add_options()
    ("help,h", "print this help and exit")
    ("sizes", po::value(&sizes)->default_value(sizes), "grid sizes n (n x n), comma separated")
    ("iters", po::value(&o.iters)->default_value(o.iters), "Jacobi steps per solve")
    ("repeat", po::value(&o.repeat)->default_value(o.repeat), "solves per contender (median reported)")
    ("contenders", po::value(&contenders)->default_value(contenders), "subset of serial,mpi,kernel,fused,numpy, each but serial optionally with a layout suffix: :rows (row slabs, process grid np x 1; mpi's default) or :blocked (the default balanced grid; the garray variants' default), e.g. mpi:blocked or kernel:rows")
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
  for (const auto& s : split(sizes)) {
    std::size_t used = 0;
    long long n = 0;
    try {
      n = std::stoll(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    // (a grid needs an interior: the serial loop's pointers start at row 1, column 1)
    if (used != s.size() || n < 3) throw po::error("--sizes: '" + s + "' is not a grid size >= 3");
    o.sizes.push_back(n);
  }
  if (o.sizes.empty()) throw po::error("--sizes: no size given");
  o.contenders = split(contenders);
  if (o.contenders.empty()) throw po::error("--contenders: no contender given");
  std::vector<std::string> seen;  // name:layout, so that mpi and mpi:rows are one contender
  for (const auto& c : o.contenders) {
    const Contender k = contender(c);
    if (k.name != "serial" && k.name != "mpi") {
      try {
        lp::parse_variant(k.name);
      } catch (const std::exception& e) {
        throw po::error("--contenders: " + std::string(e.what()));
      }
    }
    if (k.name == "serial" && c != "serial") throw po::error("--contenders: serial takes no layout ('" + c + "')");
    if (k.layout != "rows" && k.layout != "blocked")
      throw po::error("--contenders: unknown layout in '" + c + "' (:rows or :blocked)");
    const std::string key = k.name + ":" + k.layout;
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      throw po::error("--contenders: '" + c + "' is given twice");
    seen.push_back(key);
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
  try {
    if (!parse(argc, argv, o, world.rank() == 0)) return 0;
  } catch (const po::error& e) {  // every rank parses the same command line: all end here
    if (world.rank() == 0) std::cerr << "bench_laplace: " << e.what() << " (see --help)\n";
    return 2;
  }
  garray::Context ctx(MPI_COMM_WORLD, o.rank_order);
  const int rank = ctx.rank(), np = ctx.size();
  const bool root = rank == 0;
  if (root) {
    gb::print_run_info(std::cout, "bench_laplace", np);
    std::cout
        << "# window kind : " << garray::to_string(ctx.window_kind()) << '\n'
        << "# rank order  : " << garray::to_string(ctx.rank_order())
        << (ctx.renumbered() ? " (renumbered)" : "") << '\n'
        << "# iters/solve : " << o.iters << ", rounds: " << o.repeat << '\n'
        << "# x mpi, paired: against mpi (the hand-written MPI on row slabs, np x 1); x hand: against the\n"
        << "#   hand-written MPI on the contender's own layout (mpi:blocked for the blocked grid)\n"
        << "# errors: the hand-written MPI reduces its partial sums with MPI_Allreduce, garray gathers\n"
        << "#   them and sums them in rank order: compared within n*n*eps (relative), not bitwise\n";
  }
  int status = 0;
  gb::CsvWriter csv(root ? o.csv : std::string(),
                    "n,np,contender,ms_per_iter,ratio_to_mpi,ratio_to_serial,error,late_windows,paired_ratio_to_mpi,"
                    "paired_ratio_to_hand_same_layout");

  for (I n : o.sizes) {
    const lp::Problem prob{n, n, lp::Init::zero};
    std::map<std::string, Sample> res;
    std::unique_ptr<Serial> serial;
    std::map<std::string, std::unique_ptr<HandMpi>> hands;
    std::map<std::string, std::unique_ptr<lp::Solver>> solvers;
    std::map<std::string, std::string> hand_of_layout;  // layout -> the hand-written contender on it
    for (const auto& c : o.contenders) {
      const Contender k = contender(c);
      if (k.name == "serial") {
        if (root) serial = std::make_unique<Serial>(prob);
      } else if (k.name == "mpi") {
        hands[c] = std::make_unique<HandMpi>(ctx.comm(), prob, layout_of(k, np));
        hand_of_layout.emplace(k.layout, c);
      } else {
        solvers[c] = std::make_unique<lp::Solver>(ctx, prob, lp::parse_variant(k.name), layout_of(k, np));
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
        } else if (hands.count(c)) {
          auto& hand = *hands[c];
          hand.reset();
          ctx.barrier();
          gb::Timer t;
          for (int it = 0; it < o.iters; ++it) s.err = hand.step();
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
    hands.clear();
    serial.reset();

    // ---- every contender's error against the reference's (untimed; rank 0 holds them all) --
    bool ok = true;
    std::string ref;
    if (root) {
      for (const auto& c : o.contenders)
        if (c == "serial") ref = c;
      for (const auto& c : o.contenders)
        if (ref.empty() && contender(c).name == "mpi") ref = c;
      if (ref.empty()) ref = o.contenders.front();
      const double want = res[ref].err;
      const double tol =
          static_cast<double>(n) * static_cast<double>(n) * std::numeric_limits<double>::epsilon();
      std::map<std::string, std::string> garray_of_layout;  // layout -> its first garray variant
      for (const auto& c : o.contenders) {
        const double got = res[c].err;
        if (!(std::abs(got - want) <= tol * std::abs(want))) {
          gb::report_failure("bench_laplace", c,
                             "n=" + std::to_string(n) + ": error after the last step " + std::to_string(got) +
                                 ", " + ref + "'s " + std::to_string(want) + " (tolerance " +
                                 std::to_string(tol) + " relative)");
          ok = false;
        }
        // garray's variants combine their partials alike (laplace.hpp): bitwise on one layout
        const Contender k = contender(c);
        if (k.name == "serial" || k.name == "mpi") continue;
        const std::string first = garray_of_layout.emplace(k.layout, c).first->second;
        if (first != c && !(got == res[first].err)) {
          gb::report_failure("bench_laplace", c,
                             "n=" + std::to_string(n) + ": error after the last step " + std::to_string(got) +
                                 ", not bitwise " + first + "'s " + std::to_string(res[first].err) +
                                 " (the same layout)");
          ok = false;
        }
      }
    }
    ok = gb::all_ranks_ok(ctx.comm(), ok);
    if (!ok) status = 1;

    if (root) {
      // mpi and mpi:rows are one contender: the hand-written version on row slabs
      const auto rows_hand = hand_of_layout.find("rows");
      const Sample* mpi = rows_hand != hand_of_layout.end() ? &res[rows_hand->second] : nullptr;
      const double t_mpi = mpi ? gb::median(mpi->ms) : NAN;
      const double t_ser = res.count("serial") ? gb::median(res["serial"].ms) : NAN;
      const auto grid = garray::Distribution<2>::blocked().resolve({n, n}, np, "bench_laplace").procs();
      std::printf("\n n=%lld np=%d  (ms per iteration, median of %d; blocked grid %dx%d, row slabs %dx1)\n",
                  static_cast<long long>(n), np, o.repeat, grid[0], grid[1], np);
      // "x hand": paired ratio to the hand-written version on the same layout (mpi for
      // row slabs, mpi:blocked for the blocked grid), if that one ran
      std::printf("  %-12s %10s %9s %9s %9s %9s  %-24s %s\n", "", "ms/iter", "x mpi", "paired", "x hand", "x serial",
                  "error", "late windows");
      for (const auto& c : o.contenders) {
        const Sample& s = res[c];
        const double t = gb::median(s.ms);
        // per round, this contender and mpi ran seconds apart
        const double paired = mpi ? gb::paired_ratio(s.ms, mpi->ms) : NAN;
        const auto h = hand_of_layout.find(contender(c).layout);
        const double same = c != "serial" && h != hand_of_layout.end() ? gb::paired_ratio(s.ms, res[h->second].ms) : NAN;
        char err[40];
        std::snprintf(err, sizeof err, "%.17g", s.err);
        std::printf("  %-12s %10.3f %9.3f %9.3f %9.3f %9.3f  %-24s %lld\n", c.c_str(), t, t / t_mpi, paired, same,
                    t / t_ser, err, s.late_windows);
        csv.row(n, np, c, t, t / t_mpi, t / t_ser, err, s.late_windows, paired, same);
      }
      std::printf("  check: every error within %.1e (relative) of %s's: %s\n",
                  static_cast<double>(n) * static_cast<double>(n) * std::numeric_limits<double>::epsilon(),
                  ref.c_str(), ok ? "pass" : "FAIL");
    }
  }
  return status;
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
