// bench_matmul - distributed C = A B (n x n doubles) and mutex lock/unlock latency.
//
// Matrix product variants (same values, C checked against closed forms, see Check):
//   garray   garray::gemm(1, A, B, 0, C) on blocked GlobalArrays (the default distribution)
//   pdgemm   ScaLAPACK pdgemm on a block-cyclic layout, one row per block size of --nb
//            (the summary line compares garray with the best of them), process grid as
//            square as possible
//   ga       Global Arrays GA_Dgemm on NGA_Create's default distribution
//   blas     one rank's cblas_dgemm on the whole matrices (np = 1 only: the ceiling)
// Each rep: barrier, the call, the slowest rank's time (MPI_MAX). Reported: median of --reps
// after --warmup untimed calls. All contenders of a size are set up first and timed
// round-robin (one rep of each in turn), so load from elsewhere hits them alike. OpenBLAS threading as the
// environment says (set OPENBLAS_NUM_THREADS=1 with several ranks per node); the value in use is printed.
//
// Mutex variants: one rank locks/unlocks mutex 0 (owned by rank 0) alone ("uncontended",
// from the last rank, i.e. remote when np > 1), and all ranks lock/unlock it in a loop
// ("contended": from the first rank's start to the last rank's end, per acquisition);
// garray::Mutexes vs GA_Lock/GA_Unlock.
#include "bench_util.hpp"

#include <mpi.h>

#include <boost/program_options.hpp>
#include <cblas.h>
#include <garray/garray.hpp>

#if defined(GARRAY_BENCH_HAVE_GA)
#include <ga.h>
#include <macdecls.h>
#endif

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

extern "C" {
#if defined(GARRAY_BENCH_HAVE_GA)  // ScaLAPACK comes with GA's link line
void Cblacs_get(int ctxt, int what, int* val);
void Cblacs_gridinit(int* ctxt, const char* order, int nprow, int npcol);
void Cblacs_gridinfo(int ctxt, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int ctxt);
int numroc_(const int* n, const int* nb, const int* iproc, const int* isrcproc, const int* nprocs);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb, const int* irsrc,
               const int* icsrc, const int* ictxt, const int* lld, int* info);
void pdgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k, const double* alpha,
             const double* a, const int* ia, const int* ja, const int* desca, const double* b, const int* ib,
             const int* jb, const int* descb, const double* beta, double* c, const int* ic, const int* jc,
             const int* descc);
#endif
int openblas_get_num_threads(void);
}

namespace gb = garray::bench;
namespace po = boost::program_options;

namespace {

// A(i, j) and B(i, j): small values, so C's exact checksums are known in closed form.
long a8(long i, long j) { return (i * 7 + j * 3) % 11 - 5; }  // 8 A(i, j)
long b4(long i, long j) { return (i * 5 + j * 2) % 13 - 6; }  // 4 B(i, j)
double aval(long i, long j) { return static_cast<double>(a8(i, j)) * 0.125; }
double bval(long i, long j) { return static_cast<double>(b4(i, j)) * 0.25; }
// sum_ij C_ij = sum_k (sum_i A_ik) (sum_j B_kj)
double exact_checksum(long n) {
  double s = 0;
  for (long k = 0; k < n; ++k) {
    double ca = 0, rb = 0;
    for (long i = 0; i < n; ++i) ca += aval(i, k);
    for (long j = 0; j < n; ++j) rb += bval(k, j);
    s += ca * rb;
  }
  return s;
}

// The plain sum cannot see a permutation of C (a transposed result, swapped blocks). So C is
// also checked exactly: every product A_ik B_kj is a multiple of 1/32 below 1 in magnitude
// and every partial sum one below n, so any correct dgemm, whatever its order of additions,
// yields C_ij exactly and 32 C_ij is an integer. The weighted sum
//   W = sum_ij u_i v_j (32 C_ij) = sum_k (sum_i u_i 8A_ik) (sum_j v_j 4B_kj)   (mod 2^64)
// with weights from a multiplicative hash of the row and of the column (different, so that a
// transpose changes W) is compared in unsigned (wrapping) integer arithmetic: exact.
std::uint64_t wrow(long i) { return (static_cast<std::uint64_t>(i) + 1) * 0x9E3779B97F4A7C15ULL; }
std::uint64_t wcol(long j) { return (static_cast<std::uint64_t>(j) + 7) * 0xC2B2AE3D27D4EB4FULL; }
std::uint64_t exact_weighted(long n) {
  std::uint64_t w = 0;
  for (long k = 0; k < n; ++k) {
    std::uint64_t ca = 0, rb = 0;
    for (long i = 0; i < n; ++i) ca += wrow(i) * static_cast<std::uint64_t>(a8(i, k));
    for (long j = 0; j < n; ++j) rb += wcol(j) * static_cast<std::uint64_t>(b4(k, j));
    w += ca * rb;
  }
  return w;
}

// Both checksums of the C elements one rank holds, then of all ranks (sum()).
struct Check {
  double sum = 0;
  std::uint64_t weighted = 0;
  long long inexact = 0;  // elements that are not a multiple of 1/32 (or not finite)
  void add(long i, long j, double c) {
    sum += c;
    const double c32 = c * 32;
    if (!(std::abs(c32) < 0x1p62) || c32 != std::nearbyint(c32)) {
      ++inexact;
      return;
    }
    weighted += wrow(i) * wcol(j) * static_cast<std::uint64_t>(static_cast<std::int64_t>(c32));
  }
  Check sum_over(MPI_Comm comm) const {
    Check all;
    MPI_Allreduce(&sum, &all.sum, 1, MPI_DOUBLE, MPI_SUM, comm);
    MPI_Allreduce(&weighted, &all.weighted, 1, MPI_UINT64_T, MPI_SUM, comm);  // wraps, as unsigned
    MPI_Allreduce(&inexact, &all.inexact, 1, MPI_LONG_LONG, MPI_SUM, comm);
    return all;
  }
};

struct Options {
  std::vector<int> sizes{2000, 4000};
  std::vector<int> nbs{64, 128, 256};
  int reps = 5, warmup = 1, mutex_iters = 2000;
  std::string variants = "garray,pdgemm,ga,blas,mutex";
  std::string csv;
};

double timed(MPI_Comm comm, const std::function<void()>& f) {
  MPI_Barrier(comm);
  const gb::Timer t;
  f();
  double s = t.seconds(), mx = 0;
  MPI_Allreduce(&s, &mx, 1, MPI_DOUBLE, MPI_MAX, comm);
  return mx;
}
bool wants(const Options& o, const std::string& v) { return ("," + o.variants + ",").find("," + v + ",") != std::string::npos; }

struct Row {
  std::string variant;
  double seconds;
  Check check;
};

// One contender of a size: its data lives in `keep` (freed with it), `run` is one product,
// `checksum` the checksums of C over all ranks (collective). Contenders are timed round-robin (rep 1 of each,
// then rep 2 of each, ...) so that a busy moment on the machine hits all of them alike.
struct Contender {
  std::string name;
  std::function<void()> run;
  std::function<Check()> checksum;
  std::shared_ptr<void> keep;
  std::vector<double> times;
};

Contender garray_gemm(garray::Context& ctx, int n) {
  struct Data {
    garray::GlobalArray<double, 2> a, b, c;
  };
  auto d = std::make_shared<Data>(Data{garray::GlobalArray<double, 2>(ctx, {n, n}), garray::GlobalArray<double, 2>(ctx, {n, n}),
                                       garray::GlobalArray<double, 2>(ctx, {n, n})});
  for (auto* x : {&d->a, &d->b}) {
    auto blk = x->access();
    for (auto i = blk.lo(0); i < blk.hi(0); ++i)
      for (auto j = blk.lo(1); j < blk.hi(1); ++j) blk.view()[i][j] = x == &d->a ? aval(i, j) : bval(i, j);
  }
  d->a.sync();
  d->b.sync();
  Data* p = d.get();
  return {"garray",
          [p] { garray::gemm(1.0, p->a, p->b, 0.0, p->c); },
          [p] {
            Check c;
            {
              auto blk = p->c.access();
              for (auto i = blk.lo(0); i < blk.hi(0); ++i)
                for (auto j = blk.lo(1); j < blk.hi(1); ++j) c.add(i, j, blk.view()[i][j]);
            }
            Check all = c.sum_over(p->c.context().comm());
            all.sum = garray::sum(p->c);
            return all;
          },
          d,
          {}};
}

Contender blas_gemm(int n) {
  struct Data {
    std::vector<double> a, b, c;
  };
  auto d = std::make_shared<Data>();
  const auto nn = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  d->a.resize(nn);
  d->b.resize(nn);
  d->c.resize(nn);
  for (long i = 0; i < n; ++i)
    for (long j = 0; j < n; ++j) {
      d->a[static_cast<std::size_t>(i * n + j)] = aval(i, j);
      d->b[static_cast<std::size_t>(i * n + j)] = bval(i, j);
    }
  Data* p = d.get();
  return {"blas dgemm",
          [p, n] {
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, p->a.data(), n, p->b.data(), n, 0.0,
                        p->c.data(), n);
          },
          [p, n] {
            Check c;
            for (long i = 0; i < n; ++i)
              for (long j = 0; j < n; ++j) c.add(i, j, p->c[static_cast<std::size_t>(i * n + j)]);
            return c;
          },
          d,
          {}};
}

#if defined(GARRAY_BENCH_HAVE_GA)
Contender scalapack_gemm(MPI_Comm comm, int n, int nb) {
  struct Data {
    int ctxt = 0, n = 0, ml = 0, nl = 0, lld = 1;
    int desc[9] = {};
    std::vector<double> a, b, c;
    ~Data() { Cblacs_gridexit(ctxt); }
  };
  auto d = std::make_shared<Data>();
  int p = 0;
  MPI_Comm_size(comm, &p);
  int pr = 1;
  for (int k = 1; k * k <= p; ++k)
    if (p % k == 0) pr = k;
  const int pc = p / pr;
  int myr = 0, myc = 0, npr = 0, npc = 0;
  Cblacs_get(-1, 0, &d->ctxt);
  Cblacs_gridinit(&d->ctxt, "Row", pr, pc);
  Cblacs_gridinfo(d->ctxt, &npr, &npc, &myr, &myc);
  const int zero = 0;
  d->n = n;
  d->ml = numroc_(&n, &nb, &myr, &zero, &pr);
  d->nl = numroc_(&n, &nb, &myc, &zero, &pc);
  d->lld = std::max(1, d->ml);
  int info = 0;
  descinit_(d->desc, &n, &n, &nb, &nb, &zero, &zero, &d->ctxt, &d->lld, &info);
  const auto sz = static_cast<std::size_t>(d->lld) * static_cast<std::size_t>(std::max(d->nl, 1));
  d->a.resize(sz);
  d->b.resize(sz);
  d->c.resize(sz);
  for (int lj = 0; lj < d->nl; ++lj) {
    const long gj = (static_cast<long>(lj / nb) * pc + myc) * nb + lj % nb;
    for (int li = 0; li < d->ml; ++li) {
      const long gi = (static_cast<long>(li / nb) * pr + myr) * nb + li % nb;
      d->a[static_cast<std::size_t>(lj) * d->lld + li] = aval(gi, gj);
      d->b[static_cast<std::size_t>(lj) * d->lld + li] = bval(gi, gj);
    }
  }
  Data* q = d.get();
  return {"pdgemm nb=" + std::to_string(nb),
          [q] {
            const int one = 1;
            const double alpha = 1, beta = 0;
            pdgemm_("N", "N", &q->n, &q->n, &q->n, &alpha, q->a.data(), &one, &one, q->desc, q->b.data(), &one, &one,
                    q->desc, &beta, q->c.data(), &one, &one, q->desc);
          },
          [q, comm, nb, pr, pc, myr, myc] {
            Check c;
            for (int lj = 0; lj < q->nl; ++lj) {
              const long gj = (static_cast<long>(lj / nb) * pc + myc) * nb + lj % nb;
              for (int li = 0; li < q->ml; ++li) {
                const long gi = (static_cast<long>(li / nb) * pr + myr) * nb + li % nb;
                c.add(gi, gj, q->c[static_cast<std::size_t>(lj) * q->lld + li]);
              }
            }
            return c.sum_over(comm);
          },
          d,
          {}};
}

Contender ga_gemm(MPI_Comm comm, int n) {
  struct Data {
    int a = 0, b = 0, c = 0;
    ~Data() {
      GA_Destroy(c);
      GA_Destroy(b);
      GA_Destroy(a);
    }
  };
  auto d = std::make_shared<Data>();
  int dims[2] = {n, n};
  d->a = NGA_Create(C_DBL, 2, dims, const_cast<char*>("A"), nullptr);
  d->b = NGA_Create(C_DBL, 2, dims, const_cast<char*>("B"), nullptr);
  d->c = NGA_Create(C_DBL, 2, dims, const_cast<char*>("C"), nullptr);
  for (int g : {d->a, d->b}) {
    int lo[2], hi[2], ld[1];
    NGA_Distribution(g, GA_Nodeid(), lo, hi);
    if (lo[0] <= hi[0] && lo[1] <= hi[1]) {
      double* p = nullptr;
      NGA_Access(g, lo, hi, &p, ld);
      for (int i = lo[0]; i <= hi[0]; ++i)
        for (int j = lo[1]; j <= hi[1]; ++j)
          p[static_cast<std::size_t>(i - lo[0]) * ld[0] + (j - lo[1])] = g == d->a ? aval(i, j) : bval(i, j);
      NGA_Release_update(g, lo, hi);
    }
  }
  GA_Sync();
  Data* q = d.get();
  return {"GA_Dgemm",
          [q, n] { GA_Dgemm('N', 'N', n, n, n, 1.0, q->a, q->b, 0.0, q->c); },
          [q, comm] {
            Check c;
            int lo[2], hi[2], ld[1];
            NGA_Distribution(q->c, GA_Nodeid(), lo, hi);
            if (lo[0] <= hi[0] && lo[1] <= hi[1]) {
              double* p = nullptr;
              NGA_Access(q->c, lo, hi, &p, ld);
              for (int i = lo[0]; i <= hi[0]; ++i)
                for (int j = lo[1]; j <= hi[1]; ++j)
                  c.add(i, j, p[static_cast<std::size_t>(i - lo[0]) * ld[0] + (j - lo[1])]);
              NGA_Release(q->c, lo, hi);
            }
            return c.sum_over(comm);
          },
          d,
          {}};
}
#endif

// Seconds per lock+unlock pair: one rank alone, then every rank at once (per acquisition).
template <class Lock, class Unlock>
std::pair<double, double> mutex_latency(const Options& o, MPI_Comm comm, Lock&& lock, Unlock&& unlock) {
  int me = 0, p = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &p);
  const int it = o.mutex_iters;
  std::vector<double> alone, all;
  for (int r = 0; r < o.reps; ++r) {
    MPI_Barrier(comm);
    double t = 0;
    if (me == p - 1) {
      const gb::Timer tm;
      for (int k = 0; k < it; ++k) {
        lock();
        unlock();
      }
      t = tm.seconds() / it;
    }
    MPI_Bcast(&t, 1, MPI_DOUBLE, p - 1, comm);
    alone.push_back(t);
    // contended: from the first rank's start to the last rank's end (ranks leave the
    // barrier at different moments; one node, so MPI_Wtime is one clock)
    MPI_Barrier(comm);
    double se[2] = {-MPI_Wtime(), 0};
    for (int k = 0; k < it / p; ++k) {
      lock();
      unlock();
    }
    se[1] = MPI_Wtime();
    double span[2] = {0, 0};
    MPI_Allreduce(se, span, 2, MPI_DOUBLE, MPI_MAX, comm);
    all.push_back((span[1] + span[0]) / ((it / p) * p));
  }
  return {gb::median(alone), gb::median(all)};
}

int run(int argc, char** argv) {
  int me = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  Options o;
  std::string sizes, nbs;
  po::options_description desc("bench_matmul: distributed dgemm (garray, ScaLAPACK, GA, BLAS) and mutex latency\nOptions");
  desc.add_options()("help,h", "print this help")                                                     //
      ("sizes", po::value<std::string>(&sizes)->default_value("2000,4000"), "matrix orders n, comma-separated")  //
      ("nb", po::value<std::string>(&nbs)->default_value("64,128,256"), "ScaLAPACK block sizes to try")          //
      ("reps,r", po::value<int>(&o.reps)->default_value(o.reps), "timed repetitions (median reported)")          //
      ("warmup,w", po::value<int>(&o.warmup)->default_value(o.warmup), "untimed calls first")                   //
      ("mutex-iters", po::value<int>(&o.mutex_iters)->default_value(o.mutex_iters), "lock/unlock pairs per rep") //
      ("variants", po::value<std::string>(&o.variants)->default_value(o.variants),
       "subset of garray,pdgemm,ga,blas,mutex")  //
      ("csv", po::value<std::string>(&o.csv), "append rows bench,n,np,variant,median_s,gflops to FILE");
  po::variables_map vm;
  // every rank parses the same command line: a bad one ends all of them with exit code 2
  const auto parse_list = [](const std::string& s, const char* option) {
    std::vector<int> v;
    std::stringstream ss(s);
    for (std::string t; std::getline(ss, t, ',');) {
      if (t.empty()) continue;
      std::size_t used = 0;
      int x = 0;
      try {
        x = std::stoi(t, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      gb::require(used == t.size() && x >= 1,
                  std::string(option) + ": '" + t + "' is not a positive integer");
      v.push_back(x);
    }
    gb::require(!v.empty(), std::string(option) + ": no value given");
    return v;
  };
  const auto check = [&] {
    o.sizes = parse_list(sizes, "--sizes");
    o.nbs = parse_list(nbs, "--nb");  // (nb 0 divides by zero in numroc_)
    gb::require(o.reps >= 1 && o.warmup >= 0, "--reps must be at least 1 and --warmup at least 0");
    // the contended loop runs mutex_iters / np pairs per rank: at least one each
    gb::require(o.mutex_iters >= p,
                "--mutex-iters must be at least the rank count (" + std::to_string(p) + ")");
    std::stringstream ss(o.variants);
    for (std::string v; std::getline(ss, v, ',');)
      gb::require(v.empty() || v == "garray" || v == "pdgemm" || v == "ga" || v == "blas" || v == "mutex",
                  "--variants: unknown variant '" + v + "' (garray, pdgemm, ga, blas, mutex)");
  };
  if (!gb::parse_command_line(argc, argv, desc, vm, "bench_matmul", check)) return 2;
  if (vm.count("help")) {
    if (me == 0) std::cout << desc << '\n';
    return 0;
  }
  garray::Context ctx;
  if (me == 0) {
    gb::print_run_info(std::cout, "bench_matmul", p);
    std::cout << "# windows     : " << garray::to_string(ctx.window_kind()) << '\n'
              << "# BLAS threads: " << openblas_get_num_threads() << " (OpenBLAS, per rank)\n"
              << "# reps        : median of " << o.reps << " after " << o.warmup << " warmup\n";
  }
  gb::CsvWriter csv(me == 0 ? o.csv : std::string(), "bench,n,np,variant,median_s,gflops");
  int status = 0;
  for (int n : o.sizes) {
    const double flops = 2.0 * n * static_cast<double>(n) * n;
    const double exact = exact_checksum(n);
    const std::uint64_t exact_w = exact_weighted(n);
    std::vector<Contender> cs;
    if (wants(o, "garray")) cs.push_back(garray_gemm(ctx, n));
#if defined(GARRAY_BENCH_HAVE_GA)
    if (wants(o, "pdgemm"))
      for (int nb : o.nbs) cs.push_back(scalapack_gemm(MPI_COMM_WORLD, n, nb));
    if (wants(o, "ga")) cs.push_back(ga_gemm(MPI_COMM_WORLD, n));
#endif
    if (wants(o, "blas") && p == 1) cs.push_back(blas_gemm(n));
    for (int w = 0; w < o.warmup; ++w)
      for (auto& c : cs) timed(MPI_COMM_WORLD, c.run);
    for (int r = 0; r < o.reps; ++r)
      for (auto& c : cs) c.times.push_back(timed(MPI_COMM_WORLD, c.run));
    std::vector<Row> rows;
    for (auto& c : cs) rows.push_back({c.name, gb::median(c.times), c.checksum()});
    cs.clear();
    if (me != 0) continue;
    double best_peer = 0, blas = 0, mine = 0;
    for (const auto& r : rows) {
      if (r.variant.rfind("pdgemm", 0) == 0 || r.variant == "GA_Dgemm")
        best_peer = best_peer == 0 ? r.seconds : std::min(best_peer, r.seconds);
      if (r.variant == "blas dgemm") blas = r.seconds;
      if (r.variant == "garray") mine = r.seconds;
    }
    std::printf("\n# n = %d, np = %d\n%-16s %12s %10s %12s %s\n", n, p, "variant", "median_s", "GFLOP/s", "x garray",
                "checksum");
    for (const auto& r : rows) {
      // the plain sum in double, in some order: 1e-9 relative is far above its rounding
      const bool sum_ok = std::abs(r.check.sum - exact) <= 1e-9 * std::max(1.0, std::abs(exact));
      const bool exact_ok = r.check.inexact == 0 && r.check.weighted == exact_w;
      if (!sum_ok)
        gb::report_failure("bench_matmul", r.variant,
                           "n=" + std::to_string(n) + ": sum of C " + std::to_string(r.check.sum) +
                               ", want " + std::to_string(exact));
      if (r.check.inexact != 0)
        gb::report_failure("bench_matmul", r.variant,
                           "n=" + std::to_string(n) + ": " + std::to_string(r.check.inexact) +
                               " elements of C are not multiples of 1/32 (every exact one is)");
      else if (!exact_ok)
        gb::report_failure("bench_matmul", r.variant,
                           "n=" + std::to_string(n) +
                               ": the weighted sum of 32 C differs from the closed form "
                               "(elements misplaced: transposed, blocks swapped, ...)");
      const bool ok = sum_ok && exact_ok;
      if (!ok) status = 1;
      std::printf("%-16s %12.4f %10.2f %12.3f %s\n", r.variant.c_str(), r.seconds, flops / r.seconds * 1e-9,
                  mine > 0 ? r.seconds / mine : 0.0, ok ? "ok" : "WRONG");
      csv.row("matmul", n, p, r.variant, r.seconds, flops / r.seconds * 1e-9);
    }
    if (mine > 0 && best_peer > 0) std::printf("garray / best(pdgemm, GA_Dgemm) = %.3f\n", mine / best_peer);
    if (mine > 0 && blas > 0) std::printf("garray / blas dgemm = %.3f\n", mine / blas);
  }
  if (wants(o, "mutex")) {
    garray::Mutexes m(ctx, 1);
    const auto [ga_alone, ga_all] = mutex_latency(o, ctx.comm(), [&] { m.lock(0); }, [&] { m.unlock(0); });
    double g1 = 0, g2 = 0;
#if defined(GARRAY_BENCH_HAVE_GA)
    GA_Create_mutexes(1);
    std::tie(g1, g2) = mutex_latency(o, ctx.comm(), [] { GA_Lock(0); }, [] { GA_Unlock(0); });
    GA_Destroy_mutexes();
#endif
    if (me == 0) {
      std::printf("\n# mutex lock+unlock, np = %d (us per pair)\n%-16s %12s %12s\n", p, "variant", "alone", "contended");
      std::printf("%-16s %12.2f %12.2f\n", "garray", ga_alone * 1e6, ga_all * 1e6);
      if (g1 > 0) std::printf("%-16s %12.2f %12.2f\n", "GA_Lock", g1 * 1e6, g2 * 1e6);
      csv.row("mutex_alone", 0, p, "garray", ga_alone, 0);
      csv.row("mutex_contended", 0, p, "garray", ga_all, 0);
      if (g1 > 0) {
        csv.row("mutex_alone", 0, p, "GA_Lock", g1, 0);
        csv.row("mutex_contended", 0, p, "GA_Lock", g2, 0);
      }
    }
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
#if defined(GARRAY_BENCH_HAVE_GA)
  GA_Initialize();
  MA_init(C_DBL, 4 << 20, 16 << 20);  // GA_Dgemm's scratch comes from MA
#endif
  int status = 0;
  try {
    status = run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "bench_matmul: fatal: " << e.what() << '\n';
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
#if defined(GARRAY_BENCH_HAVE_GA)
  GA_Terminate();
#endif
  MPI_Finalize();
  return status;
}
