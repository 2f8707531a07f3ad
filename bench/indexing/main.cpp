// bench_indexing: advanced indexing (issue 15) against a plain serial loop.
//
//   t = take(a, idx)        a: n doubles, idx: m random int64 in [-n, n) (repeats, negatives)
//   put(a, idx, v)          v: m doubles
//   s = masked_select(a, a > 0.5)
//
// Columns (median seconds over --reps, after one warm-up round):
//   serial_take / serial_put / serial_select   loops over std::vector on rank 0 alone
//                                              (t[k] = a[idx[k]] with the sign fix-up, ...)
//   take / put / select                         garray, rank 0's time (every call ends in a
//                                              collective that completes everywhere)
// Both sides get the same a and idx (the same hash of the position), so the same access
// pattern and the same selection. Per operation, serial and garray alternate round by round
// (garray::bench::side_by_side); *_speed_vs_serial is the ratio of the medians, *_paired the
// median of the per-round ratios. take and masked_select return a new distributed array per
// call (its window comes from the array cache after the warm-up), while the serial loops
// write into preallocated vectors. After each operation (untimed) garray's result is
// compared with the serial one, exactly (both copy the same doubles): take's values, `a`
// after the puts (v is 2.0 everywhere, so repeated indices do not matter), the selection's
// length and values; exit code 1 on a mismatch. Run at np=1 (garray's overhead over the
// loop) and np=2 (scaling). Prints key=value lines on rank 0 and appends a CSV row per run
// with --csv.
#include <bench_util.hpp>
#include <boost/program_options.hpp>
#include <cstdint>
#include <garray/garray.hpp>
#include <iostream>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace po = boost::program_options;
namespace gb = garray::bench;
using garray::Index;
using garray::bench::Side;

namespace {

// The inputs, as functions of the position (serial and garray alike): splitmix64 of it.
std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
double a_value(Index i) { return static_cast<double>(mix(static_cast<std::uint64_t>(i)) >> 11) * 0x1.0p-53; }
std::int64_t idx_value(Index k, Index n) {  // in [-n, n)
  const auto span = static_cast<std::uint64_t>(2 * n);
  return static_cast<std::int64_t>(mix(static_cast<std::uint64_t>(k) ^ 0x5bd1e995ULL) % span) - n;
}

// Rank 0: garray's `got` against the serial loop's `want`; reports the first difference.
bool same(const std::vector<double>& got, const std::vector<double>& want, const char* contender,
          const char* what) {
  if (got.size() != want.size()) {
    gb::report_failure("bench_indexing", contender,
                       std::string(what) + ": " + std::to_string(got.size()) +
                           " elements, the serial loop has " + std::to_string(want.size()));
    return false;
  }
  for (std::size_t k = 0; k < got.size(); ++k)
    if (got[k] != want[k]) {
      gb::report_failure("bench_indexing", contender,
                         std::string(what) + ": element " + std::to_string(k) + " is " +
                             std::to_string(got[k]) + ", the serial loop has " + std::to_string(want[k]));
      return false;
    }
  return true;
}

// Collective: the whole 1-d array on rank 0 (empty elsewhere).
std::vector<double> on_root(const garray::GlobalArray<double, 1>& x, bool root) {
  std::vector<double> out;
  if (root) {
    out.resize(static_cast<std::size_t>(x.shape()[0]));
    x.get_section(garray::Section<1>::full(x.shape()), std::span<double>(out));
  }
  x.context().barrier();
  return out;
}

}  // namespace

static int bench_main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  {
    po::options_description opts("bench_indexing options");
    opts.add_options()("help,h", "show help")("n", po::value<Index>()->default_value(4000000), "array length")(
        "m", po::value<Index>()->default_value(1000000), "index array length")(
        "reps", po::value<int>()->default_value(5), "timed repetitions")(
        "csv", po::value<std::string>()->default_value(""), "append results to this CSV file");
    po::variables_map vm;
    const auto check = [&] {
      gb::require(vm["n"].as<Index>() >= 1, "--n must be at least 1");
      gb::require(vm["m"].as<Index>() >= 1, "--m must be at least 1");
      gb::require(vm["reps"].as<int>() >= 1, "--reps must be at least 1");
    };
    if (!gb::parse_command_line(argc, argv, opts, vm, "bench_indexing", check)) {
      MPI_Finalize();
      return 2;
    }
    garray::Context ctx;
    if (vm.count("help")) {
      if (ctx.rank() == 0) std::cout << opts << "\n";
    } else {
      const Index n = vm["n"].as<Index>(), m = vm["m"].as<Index>();
      const int reps = vm["reps"].as<int>();
      const bool root = ctx.rank() == 0;
      if (root) garray::bench::print_run_info(std::cout, "bench_indexing", ctx.size());
      auto csv = gb::open_csv(ctx.comm(), vm["csv"].as<std::string>(),
                              "n,m,ranks,serial_take_s,take_s,serial_put_s,put_s,serial_select_s,select_s",
                              "bench_indexing");
      if (!csv) {
        rc = 1;
      } else {
        // the serial side: rank 0 only
        std::vector<double> sa, t, v, sel;
        std::vector<std::int64_t> sidx;
        if (root) {
          sa.resize(static_cast<std::size_t>(n));
          t.resize(static_cast<std::size_t>(m));
          v.assign(t.size(), 2.0);
          sidx.resize(t.size());
          for (Index i = 0; i < n; ++i) sa[static_cast<std::size_t>(i)] = a_value(i);
          for (Index k = 0; k < m; ++k) sidx[static_cast<std::size_t>(k)] = idx_value(k, n);
        }
        garray::GlobalArray<double, 1> a(ctx, {n}), gv(ctx, {m});
        garray::GlobalArray<std::int64_t, 1> idx(ctx, {m});
        garray::generate(a, [](const garray::Shape<1>& i) { return a_value(i[0]); });
        garray::generate(idx, [n](const garray::Shape<1>& k) { return idx_value(k[0], n); });
        gv.fill(2.0);
        bool ok = true;

        const Side take = gb::side_by_side(
            ctx.comm(), reps,
            [&] {
              for (std::size_t k = 0; k < t.size(); ++k) {
                const std::int64_t i = sidx[k] < 0 ? sidx[k] + n : sidx[k];
                if (i < 0 || i >= n) throw std::runtime_error("index");
                t[k] = sa[static_cast<std::size_t>(i)];
              }
              garray::bench::do_not_optimize(t.data());
            },
            [&] { auto r = garray::take(a, idx); });
        {
          const auto got = on_root(garray::take(a, idx), root);
          if (root) ok = same(got, t, "garray take", "take(a, idx)") && ok;
        }
        const Side put = gb::side_by_side(
            ctx.comm(), reps,
            [&] {
              for (std::size_t k = 0; k < t.size(); ++k) {
                const std::int64_t i = sidx[k] < 0 ? sidx[k] + n : sidx[k];
                if (i < 0 || i >= n) throw std::runtime_error("index");
                sa[static_cast<std::size_t>(i)] = v[k];
              }
              garray::bench::do_not_optimize(sa.data());
            },
            [&] { garray::put(a, idx, gv); });
        {
          const auto got = on_root(a, root);
          if (root) ok = same(got, sa, "garray put", "a after put(a, idx, v)") && ok;
        }
        const Side select = gb::side_by_side(
            ctx.comm(), reps,
            [&] {
              sel.clear();
              for (double x : sa)
                if (x > 0.5) sel.push_back(x);
              garray::bench::do_not_optimize(sel.data());
            },
            [&] { auto r = garray::masked_select(a, a > 0.5); });
        {
          const auto got = on_root(garray::masked_select(a, a > 0.5), root);
          if (root) ok = same(got, sel, "garray masked_select", "masked_select(a, a > 0.5)") && ok;
        }
        ok = gb::all_ranks_ok(ctx.comm(), ok);
        if (!ok) rc = 1;
        if (root) {
          std::cout << "n=" << n << "\nm=" << m << "\nranks=" << ctx.size() << "\nreps=" << reps << "\n";
          const auto line = [](const char* op, const Side& x) {
            std::cout << "serial_" << op << "_s=" << x.serial << "\n"
                      << op << "_s=" << x.garray << "\n"
                      << op << "_speed_vs_serial=" << x.serial / x.garray << "\n"
                      << op << "_speed_vs_serial_paired=" << x.ratio << "\n";
          };
          line("take", take);
          line("put", put);
          line("select", select);
          std::cout << "check=" << (ok ? "pass" : "FAIL") << "\n";
          csv->row(n, m, ctx.size(), take.serial, take.garray, put.serial, put.garray, select.serial,
                   select.garray);
        }
      }
    }
  }
  MPI_Finalize();
  return rc;
}

int main(int argc, char** argv) {
  return garray::bench::guarded_main("bench_indexing", argc, argv, bench_main);
}
