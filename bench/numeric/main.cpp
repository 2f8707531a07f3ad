// bench_numeric: the owner-computes numeric layer against a plain serial loop.
//
//   out = (a + b) * c + d * e        5 inputs, n x n doubles (default 4000 x 4000)
//
// Columns (median seconds per evaluation over --reps, after one warm-up round):
//   serial   a plain loop over std::vector on rank 0 alone (the bar: garray at np=1 should
//            be >= 0.9x its speed)
//   fused    garray: `out.view() = (a + b) * c + d * e`, one owner-computes pass
//   eager    garray operator by operator: every binary operation materialises a new array
//            through garray::eval (temporaries come from the array cache when enabled)
// Both sides get the same inputs (the same formula of the row-major position). Every round
// runs serial (rank 0; the others wait at a barrier), fused and eager in turn, so a slow
// spell of the shared machine hits all alike; fused/eager are the slowest rank's median,
// the *_paired keys the median of rank 0's per-round ratios. Afterwards (untimed) each
// contender's every element is compared with the formula (see check_out()); exit code 1 on
// a mismatch. Run at np=1 and np=2 for the strong-scaling ratio. Prints key=value lines on
// rank 0 and appends a CSV row per run with --csv.
//
// --reductions: instead, the plain reductions against the reproducible ones (exact
// accumulation + one allreduce + one rounding, garray::reproducible) on the same fused passes,
// interleaved rep by rep (plain, then reproducible) so machine noise hits both alike:
//   sum(a)   dot(a, b)   norm2(a - b)   assign_norm2_diff(out, (a + b) * c, d)
// Prints <case>_plain_s, <case>_repro_s and <case>_ratio (median seconds, slowest rank);
// exit code 1 when a plain value is further from the reproducible one than rounding allows.
// The two modes write different tables: give them different --csv files (a file holding
// the other table is refused).
#include <bench_util.hpp>
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <functional>
#include <garray/garray.hpp>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

namespace po = boost::program_options;
namespace gb = garray::bench;
using garray::bench::median;

namespace {

// The inputs, as functions of the row-major position i (serial and garray alike).
double in_a(std::size_t i) { return 0.5 + static_cast<double>(i % 7); }
double in_b(std::size_t i) { return 1.0 / (1.0 + static_cast<double>(i % 13)); }
double in_c(std::size_t i) { return 0.25 * static_cast<double>(i % 5); }
double in_d(std::size_t i) { return static_cast<double>(i % 3); }
constexpr double in_e = 2.0;
double expected(std::size_t i) { return (in_a(i) + in_b(i)) * in_c(i) + in_d(i) * in_e; }

// `got` against expected(i). Every term is >= 0 (no cancellation) and each contender
// rounds at most once more or less than expected() (a multiply-add the compiler contracted):
// 4 ulps of the value.
bool close_to_expected(double got, std::size_t i) {
  const double want = expected(i);
  return std::abs(got - want) <= 4 * std::numeric_limits<double>::epsilon() * std::abs(want);
}

// Collective. Every element of `out` this rank owns against the formula; reports the first
// wrong one of `contender`.
bool check_out(garray::GlobalArray<double, 2>& out, garray::Index n, const char* contender) {
  bool ok = true;
  garray::for_each_owned(out, [&](const garray::Shape<2>&, const garray::Shape<2>& g, double& v) {
    const auto i = static_cast<std::size_t>(g[0] * n + g[1]);
    if (ok && !close_to_expected(v, i)) {
      gb::report_failure("bench_numeric", contender,
                         "out[" + std::to_string(g[0]) + "][" + std::to_string(g[1]) +
                             "] = " + std::to_string(v) + ", want " + std::to_string(expected(i)));
      ok = false;
    }
  });
  return gb::all_ranks_ok(out.context().comm(), ok);
}

}  // namespace

static int bench_main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  {
    po::options_description opts("bench_numeric options");
    opts.add_options()("help,h", "show help")("n", po::value<garray::Index>()->default_value(4000),
                                              "array extent (n x n)")(
        "reps", po::value<int>()->default_value(5), "timed repetitions")(
        "csv", po::value<std::string>()->default_value(""), "append results to this CSV file")(
        "no-serial", "skip the serial loop")("no-eager", "skip the eager operator-by-operator variant")(
        "reductions", "plain vs reproducible reductions on fused passes (see the file comment)");
    po::variables_map vm;
    const auto check = [&] {
      gb::require(vm["n"].as<garray::Index>() >= 1, "--n must be at least 1");
      gb::require(vm["reps"].as<int>() >= 1, "--reps must be at least 1");
    };
    if (!gb::parse_command_line(argc, argv, opts, vm, "bench_numeric", check)) {
      MPI_Finalize();
      return 2;
    }
    garray::Context ctx;
    if (vm.count("help")) {
      if (ctx.rank() == 0) std::cout << opts << "\n";
    } else {
      const garray::Index n = vm["n"].as<garray::Index>();
      const int reps = vm["reps"].as<int>();
      const bool root = ctx.rank() == 0;
      if (root) garray::bench::print_run_info(std::cout, "bench_numeric", ctx.size());
      auto csv = vm.count("reductions") ? gb::open_csv(ctx.comm(), vm["csv"].as<std::string>(),
                                                       "case,n,ranks,plain_s,repro_s,ratio", "bench_numeric")
                                        : gb::open_csv(ctx.comm(), vm["csv"].as<std::string>(),
                                                       "n,ranks,serial_s,fused_s,eager_s", "bench_numeric");
      if (!csv) {
        rc = 1;
      } else if (vm.count("reductions")) {
        using A = garray::GlobalArray<double, 2>;
        A a(ctx, {n, n}), b(ctx, {n, n}), c(ctx, {n, n}), d(ctx, {n, n}), out(ctx, {n, n});
        garray::fill_random(a, 1);
        garray::fill_random(b, 2);
        garray::fill_random(c, 3);
        garray::fill_random(d, 4);
        using garray::reproducible;
        struct Case {
          const char* name;
          std::function<double()> plain, repro;
        };
        const std::vector<Case> cases{
            {"sum", [&] { return garray::sum(a); }, [&] { return garray::sum(a, reproducible); }},
            {"dot", [&] { return garray::dot(a, b); }, [&] { return garray::dot(a, b, reproducible); }},
            {"norm2_diff", [&] { return garray::norm2(a - b); },
             [&] { return garray::norm2(a - b, reproducible); }},
            {"assign_norm2_diff", [&] { return garray::assign_norm2_diff(out, (a + b) * c, d); },
             [&] { return garray::assign_norm2_diff(out, (a + b) * c, d, reproducible); }},
        };
        if (root) std::cout << "n=" << n << "\nranks=" << ctx.size() << "\nreps=" << reps << "\n";
        for (const auto& k : cases) {
          std::vector<double> tp, tr;
          double vp = k.plain(), vr = k.repro();  // warm-up
          for (int r = 0; r < reps; ++r) {
            ctx.barrier();
            garray::bench::Timer t0;
            vp = k.plain();
            tp.push_back(t0.seconds());
            ctx.barrier();
            garray::bench::Timer t1;
            vr = k.repro();
            tr.push_back(t1.seconds());
          }
          double mp = median(tp), mr = median(tr);
          MPI_Allreduce(MPI_IN_PLACE, &mp, 1, MPI_DOUBLE, MPI_MAX, ctx.comm());
          MPI_Allreduce(MPI_IN_PLACE, &mr, 1, MPI_DOUBLE, MPI_MAX, ctx.comm());
          // vr is the exact sum rounded once; the plain one sums n*n terms, all >= 0 (squares,
          // or products of inputs in [0, 1)), in some order: within (n*n - 1) * eps / 2 of
          // the exact sum relative to it (half that after norm2's sqrt).
          const double tol =
              static_cast<double>(n) * static_cast<double>(n) * std::numeric_limits<double>::epsilon();
          const bool close = std::abs(vp - vr) <= tol * std::abs(vr);
          if (!close)
            gb::report_failure("bench_numeric", std::string(k.name) + " (plain)",
                               "value " + std::to_string(vp) + " is further than " + std::to_string(tol) +
                                   " relative from the reproducible " + std::to_string(vr));
          const bool agree = gb::all_ranks_ok(ctx.comm(), close);
          if (!agree) rc = 1;
          if (root) {
            std::printf(
                "%s_plain_s=%.6g\n%s_repro_s=%.6g\n%s_ratio=%.3f\n%s_values=%.17g %.17g\n%s_check=%s\n",
                k.name, mp, k.name, mr, k.name, mr / mp, k.name, vp, vr, k.name, agree ? "pass" : "FAIL");
            std::fflush(stdout);
          }
          csv->row(k.name, n, ctx.size(), mp, mr, mr / mp);
        }
      } else {
        const bool with_serial = !vm.count("no-serial"), with_eager = !vm.count("no-eager");
        const auto m = static_cast<std::size_t>(n * n);
        std::vector<double> sa, sb, sc, sd, se, so;  // the serial side: rank 0 only
        if (root && with_serial) {
          for (auto* v : {&sa, &sb, &sc, &sd, &se, &so}) v->resize(m);
          for (std::size_t i = 0; i < m; ++i) {
            sa[i] = in_a(i);
            sb[i] = in_b(i);
            sc[i] = in_c(i);
            sd[i] = in_d(i);
            se[i] = in_e;
          }
        }
        auto serial = [&] {
          double* __restrict op = so.data();
          const double *pa = sa.data(), *pb = sb.data(), *pc = sc.data(), *pd = sd.data(), *pe = se.data();
          for (std::size_t i = 0; i < m; ++i) op[i] = (pa[i] + pb[i]) * pc[i] + pd[i] * pe[i];
          garray::bench::do_not_optimize(op);
        };

        using A = garray::GlobalArray<double, 2>;
        A a(ctx, {n, n}), b(ctx, {n, n}), c(ctx, {n, n}), d(ctx, {n, n}), e(ctx, {n, n}), out(ctx, {n, n});
        const auto pos = [n](const garray::Shape<2>& i) { return static_cast<std::size_t>(i[0] * n + i[1]); };
        garray::generate(a, [pos](const garray::Shape<2>& i) { return in_a(pos(i)); });
        garray::generate(b, [pos](const garray::Shape<2>& i) { return in_b(pos(i)); });
        garray::generate(c, [pos](const garray::Shape<2>& i) { return in_c(pos(i)); });
        garray::generate(d, [pos](const garray::Shape<2>& i) { return in_d(pos(i)); });
        garray::fill(e, in_e);
        auto fused = [&] { out.view() = (a + b) * c + d * e; };
        auto eager = [&] {
          auto t1 = garray::eval(a + b);
          auto t2 = garray::eval(t1 * c);
          auto t3 = garray::eval(d * e);
          garray::add(t2, t3, out);
        };

        // one untimed round, then reps rounds of serial (rank 0), fused, eager
        std::vector<double> ts, tf, te;
        for (int r = -1; r < reps; ++r) {
          double s = 0, f = 0, g = 0;
          if (with_serial && root) {
            const gb::Timer t;
            serial();
            s = t.seconds();
          }
          ctx.barrier();
          {
            const gb::Timer t;
            fused();
            f = t.seconds();
          }
          if (with_eager) {
            ctx.barrier();
            const gb::Timer t;
            eager();
            g = t.seconds();
          }
          if (r < 0) continue;
          ts.push_back(s);
          tf.push_back(f);
          te.push_back(g);
        }
        const double t_serial = with_serial ? median(ts) : 0;  // rank 0's
        const double paired_serial = with_serial ? gb::paired_ratio(ts, tf) : 0;
        const double paired_eager = with_eager ? gb::paired_ratio(te, tf) : 0;
        double t_fused = median(tf), t_eager = with_eager ? median(te) : 0;
        // every rank reports the slowest rank's time
        MPI_Allreduce(MPI_IN_PLACE, &t_fused, 1, MPI_DOUBLE, MPI_MAX, ctx.comm());
        MPI_Allreduce(MPI_IN_PLACE, &t_eager, 1, MPI_DOUBLE, MPI_MAX, ctx.comm());

        // ---- every contender's result (untimed; out refilled with NaN before each pass) ----
        bool ok = true;
        if (with_serial && root)
          for (std::size_t i = 0; i < m; ++i)
            if (!close_to_expected(so[i], i)) {
              gb::report_failure("bench_numeric", "serial",
                                 "out[" + std::to_string(i) + "] = " + std::to_string(so[i]) + ", want " +
                                     std::to_string(expected(i)));
              ok = false;
              break;
            }
        ok = gb::all_ranks_ok(ctx.comm(), ok);
        const double nan = std::numeric_limits<double>::quiet_NaN();
        if (with_eager) {
          garray::fill(out, nan);
          eager();
          ok = check_out(out, n, "eager") && ok;
        }
        garray::fill(out, nan);
        fused();
        ok = check_out(out, n, "fused") && ok;
        const double check = garray::sum(out);
        if (!ok) rc = 1;
        if (root) {
          std::cout << "n=" << n << "\nranks=" << ctx.size() << "\nreps=" << reps << "\n";
          if (with_serial) std::cout << "serial_s=" << t_serial << "\n";
          std::cout << "fused_s=" << t_fused << "\n";
          if (with_serial)
            std::cout << "fused_speed_vs_serial=" << t_serial / t_fused
                      << "\nfused_speed_vs_serial_paired=" << paired_serial << "\n";
          if (with_eager)
            std::cout << "eager_s=" << t_eager << "\neager_over_fused=" << t_eager / t_fused
                      << "\neager_over_fused_paired=" << paired_eager << "\n";
          std::cout << "fused_GB_per_s=" << 6.0 * 8.0 * static_cast<double>(n * n) / t_fused / 1e9 << "\n";
          std::cout << "checksum=" << check << "\n";
          std::cout << "check=" << (ok ? "pass" : "FAIL") << "\n";
          csv->row(n, ctx.size(), t_serial, t_fused, t_eager);
        }
      }
    }
  }
  MPI_Finalize();
  return rc;
}

int main(int argc, char** argv) {
  return garray::bench::guarded_main("bench_numeric", argc, argv, bench_main);
}
