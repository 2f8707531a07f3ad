// bench_numeric: the owner-computes numeric layer against a plain serial loop.
//
//   out = (a + b) * c + d * e        5 inputs, n x n doubles (default 4000 x 4000)
//
// Columns (median seconds per evaluation over --reps, after one warm-up):
//   serial   a plain loop over std::vector on rank 0 alone (the bar: garray at np=1 should
//            be >= 0.9x its speed)
//   fused    garray: `out.view() = (a + b) * c + d * e`, one owner-computes pass
//   eager    garray operator by operator: every binary operation materialises a new array
//            through garray::eval (temporaries come from the array cache when enabled)
// Run at np=1 and np=2 for the strong-scaling ratio. Prints key=value lines on rank 0 and
// appends a CSV row per run with --csv.
//
// --reductions: instead, the plain reductions against the reproducible ones (exact
// accumulation + one allreduce + one rounding, garray::reproducible) on the same fused passes,
// interleaved rep by rep (plain, then reproducible) so machine noise hits both alike:
//   sum(a)   dot(a, b)   norm2(a - b)   assign_norm2_diff(out, (a + b) * c, d)
// Prints <case>_plain_s, <case>_repro_s and <case>_ratio (median seconds, slowest rank).
#include <bench_util.hpp>
#include <boost/program_options.hpp>
#include <cstdio>
#include <functional>
#include <garray/garray.hpp>
#include <iostream>
#include <vector>

namespace po = boost::program_options;
namespace gb = garray::bench;
using garray::bench::median;
using garray::bench::time_reps;

int main(int argc, char** argv) {
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
    if (!gb::parse_command_line(argc, argv, opts, vm, "bench_numeric")) {
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
      if (vm.count("reductions")) {
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
          if (root) {
            std::printf("%s_plain_s=%.6g\n%s_repro_s=%.6g\n%s_ratio=%.3f\n%s_values=%.17g %.17g\n", k.name,
                        mp, k.name, mr, k.name, mr / mp, k.name, vp, vr);
            std::fflush(stdout);
          }
          const auto csv = vm["csv"].as<std::string>();
          if (root && !csv.empty()) {
            garray::bench::CsvWriter w(csv, "case,n,ranks,plain_s,repro_s,ratio");
            w.row(k.name, n, ctx.size(), mp, mr, mr / mp);
          }
        }
      } else {
        // serial baseline: rank 0 only, the others wait at the barrier
        double t_serial = 0;
        if (!vm.count("no-serial")) {
          if (root) {
            const auto m = static_cast<std::size_t>(n * n);
            std::vector<double> a(m), b(m), c(m), d(m), e(m), o(m);
            for (std::size_t i = 0; i < m; ++i) {
              a[i] = 0.5 + static_cast<double>(i % 7);
              b[i] = 1.0 / (1.0 + static_cast<double>(i % 13));
              c[i] = 0.25 * static_cast<double>(i % 5);
              d[i] = static_cast<double>(i % 3);
              e[i] = 2.0;
            }
            t_serial = median(time_reps(reps, 1, [&] {
              double* __restrict op = o.data();
              const double *pa = a.data(), *pb = b.data(), *pc = c.data(), *pd = d.data(), *pe = e.data();
              for (std::size_t i = 0; i < m; ++i) op[i] = (pa[i] + pb[i]) * pc[i] + pd[i] * pe[i];
              garray::bench::do_not_optimize(op);
            }));
          }
          ctx.barrier();
        }

        using A = garray::GlobalArray<double, 2>;
        A a(ctx, {n, n}), b(ctx, {n, n}), c(ctx, {n, n}), d(ctx, {n, n}), e(ctx, {n, n}), out(ctx, {n, n});
        garray::fill_random(a, 1);
        garray::fill_random(b, 2);
        garray::fill_random(c, 3);
        garray::fill_random(d, 4);
        garray::fill(e, 2.0);
        auto fused_times = time_reps(reps, 1, [&] { out.view() = (a + b) * c + d * e; });
        double t_fused = median(fused_times);
        double t_eager = 0;
        if (!vm.count("no-eager")) {
          t_eager = median(time_reps(reps, 1, [&] {
            auto t1 = garray::eval(a + b);
            auto t2 = garray::eval(t1 * c);
            auto t3 = garray::eval(d * e);
            garray::add(t2, t3, out);
          }));
        }
        // every rank reports the slowest rank's time
        MPI_Allreduce(MPI_IN_PLACE, &t_fused, 1, MPI_DOUBLE, MPI_MAX, ctx.comm());
        MPI_Allreduce(MPI_IN_PLACE, &t_eager, 1, MPI_DOUBLE, MPI_MAX, ctx.comm());
        const double check = garray::sum(out);
        if (root) {
          std::cout << "n=" << n << "\nranks=" << ctx.size() << "\nreps=" << reps << "\n";
          if (t_serial > 0) std::cout << "serial_s=" << t_serial << "\n";
          std::cout << "fused_s=" << t_fused << "\n";
          if (t_serial > 0) std::cout << "fused_speed_vs_serial=" << t_serial / t_fused << "\n";
          if (t_eager > 0)
            std::cout << "eager_s=" << t_eager << "\neager_over_fused=" << t_eager / t_fused << "\n";
          std::cout << "fused_GB_per_s=" << 6.0 * 8.0 * static_cast<double>(n * n) / t_fused / 1e9 << "\n";
          std::cout << "checksum=" << check << "\n";
          const auto csv = vm["csv"].as<std::string>();
          if (!csv.empty()) {
            garray::bench::CsvWriter w(csv, "n,ranks,serial_s,fused_s,eager_s");
            w.row(n, ctx.size(), t_serial, t_fused, t_eager);
          }
        }
      }
    }
  }
  MPI_Finalize();
  return rc;
}
