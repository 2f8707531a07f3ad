// bench_indexing: advanced indexing (issue 15) against a plain serial loop.
//
//   t = take(a, idx)        a: n doubles, idx: m random int64 in [-n, n) (repeats, negatives)
//   put(a, idx, v)          v: m doubles
//   s = masked_select(a, a > 0.5)
//
// Columns (median seconds over --reps, after one warm-up):
//   serial_take / serial_put / serial_select   loops over std::vector on rank 0 alone
//                                              (t[k] = a[idx[k]] with the sign fix-up, ...)
//   take / put / select                         garray, the slowest rank
// Run at np=1 (garray's overhead over the loop) and np=2 (scaling). Prints key=value lines on
// rank 0 and appends a CSV row per run with --csv.
#include <bench_util.hpp>

#include <garray/garray.hpp>

#include <boost/program_options.hpp>

#include <iostream>
#include <random>
#include <vector>

namespace po = boost::program_options;
namespace gb = garray::bench;
using garray::Index;
using garray::bench::median;
using garray::bench::time_reps;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  {
    po::options_description opts("bench_indexing options");
    opts.add_options()("help,h", "show help")("n", po::value<Index>()->default_value(4000000), "array length")(
        "m", po::value<Index>()->default_value(1000000), "index array length")(
        "reps", po::value<int>()->default_value(5), "timed repetitions")(
        "csv", po::value<std::string>()->default_value(""), "append results to this CSV file");
    po::variables_map vm;
    if (!gb::parse_command_line(argc, argv, opts, vm, "bench_indexing")) {
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
      double s_take = 0, s_put = 0, s_sel = 0;
      if (root) {
        std::vector<double> a(static_cast<std::size_t>(n)), t(static_cast<std::size_t>(m)), v(t.size());
        std::vector<std::int64_t> idx(t.size());
        std::mt19937_64 g(7);
        for (auto& x : a) x = std::uniform_real_distribution<double>(0, 1)(g);
        for (auto& x : idx) x = std::uniform_int_distribution<std::int64_t>(-n, n - 1)(g);
        for (auto& x : v) x = 2.0;
        s_take = median(time_reps(reps, 1, [&] {
          for (std::size_t k = 0; k < t.size(); ++k) {
            const std::int64_t i = idx[k] < 0 ? idx[k] + n : idx[k];
            if (i < 0 || i >= n) throw std::runtime_error("index");
            t[k] = a[static_cast<std::size_t>(i)];
          }
          garray::bench::do_not_optimize(t.data());
        }));
        s_put = median(time_reps(reps, 1, [&] {
          for (std::size_t k = 0; k < t.size(); ++k) {
            const std::int64_t i = idx[k] < 0 ? idx[k] + n : idx[k];
            if (i < 0 || i >= n) throw std::runtime_error("index");
            a[static_cast<std::size_t>(i)] = v[k];
          }
          garray::bench::do_not_optimize(a.data());
        }));
        std::vector<double> sel;
        s_sel = median(time_reps(reps, 1, [&] {
          sel.clear();
          for (double x : a)
            if (x > 0.5) sel.push_back(x);
          garray::bench::do_not_optimize(sel.data());
        }));
      }
      ctx.barrier();
      garray::GlobalArray<double, 1> a(ctx, {n}), v(ctx, {m});
      garray::GlobalArray<std::int64_t, 1> idx(ctx, {m});
      garray::fill_random(a, 1);
      garray::fill_random(idx, 2, std::int64_t{-n}, std::int64_t{n});
      v.fill(2.0);
      double t_take = median(time_reps(reps, 1, [&] { auto t = garray::take(a, idx); }));
      double t_put = median(time_reps(reps, 1, [&] { garray::put(a, idx, v); }));
      double t_sel = median(time_reps(reps, 1, [&] { auto s = garray::masked_select(a, a > 0.5); }));
      for (double* t : {&t_take, &t_put, &t_sel}) MPI_Allreduce(MPI_IN_PLACE, t, 1, MPI_DOUBLE, MPI_MAX, ctx.comm());
      if (root) {
        std::cout << "n=" << n << "\nm=" << m << "\nranks=" << ctx.size() << "\nreps=" << reps << "\n";
        std::cout << "serial_take_s=" << s_take << "\ntake_s=" << t_take << "\ntake_speed_vs_serial=" << s_take / t_take
                  << "\n";
        std::cout << "serial_put_s=" << s_put << "\nput_s=" << t_put << "\nput_speed_vs_serial=" << s_put / t_put << "\n";
        std::cout << "serial_select_s=" << s_sel << "\nselect_s=" << t_sel
                  << "\nselect_speed_vs_serial=" << s_sel / t_sel << "\n";
        const auto csv = vm["csv"].as<std::string>();
        if (!csv.empty()) {
          garray::bench::CsvWriter w(csv, "n,m,ranks,serial_take_s,take_s,serial_put_s,put_s,serial_select_s,select_s");
          w.row(n, m, ctx.size(), s_take, t_take, s_put, t_put, s_sel, t_sel);
        }
      }
    }
  }
  MPI_Finalize();
  return 0;
}
