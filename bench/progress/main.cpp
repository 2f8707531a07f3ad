// bench_progress - latency of a one-sided get from a target that waits in MPI ("idle") and
// from a target computing without MPI calls ("busy"), issue 13.
//
// np=2 (run across two hosts: rank 1 is the target, rank 0 the origin). Per rep and size:
//   idle  the target waits in MPI_Barrier while the origin times a.get() of `size` bytes
//         from the target's block, then joins the barrier
//   busy  after a barrier the target computes for --busy seconds without calling MPI; the
//         origin sleeps --delay seconds (so the target is inside its loop) and times the
//         same get
//   busy + progress()   the same, the target calling ctx.progress() every --poll seconds
//   busy + MPI_Iprobe   the same, the target calling MPI_Iprobe on the context's
//         communicator every --poll seconds (what ctx.progress() did before it also tested
//         a pending receive: Open MPI's pml/ucx runs its whole progress engine only on every
//         100th probe)
// Medians over --reps; the ratio busy/idle is the bar of issue 13 (<= 2 with the progress
// option on). The progress mode is the environment's (GARRAY_PROGRESS=none|thread): run it
// once per mode (bench/progress/run_cluster.sh does, across the simulated hosts).
#include <mpi.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdint>
#include <garray/garray.hpp>
#include <iomanip>
#include <iostream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.hpp"

namespace gb = garray::bench;
namespace po = boost::program_options;

namespace {
// Computes for `seconds`, calling poll() every `every` seconds (never if every <= 0). No
// other MPI call inside (MPI_Wtime is not a progress call).
template <class Poll>
double compute(double seconds, double every, Poll&& poll) {
  const double t0 = MPI_Wtime();
  double x = 0, next = every;
  while (MPI_Wtime() - t0 < seconds) {
    for (int i = 0; i < 1000; ++i) x += i * 1e-9;
    if (every > 0 && MPI_Wtime() - t0 >= next) {
      poll();
      next += every;
    }
  }
  return x;
}
}  // namespace

static int bench_main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, garray::required_thread_level(), &provided);
  int status = 0;
  {
    int reps = 7;
    double busy = 0.1, delay = 0.01, poll = 0.001;
    std::string csv, label;
    po::options_description opts("bench_progress options");
    opts.add_options()("help", "show this help")("reps", po::value(&reps)->default_value(reps), "repetitions (medians)")(
        "busy", po::value(&busy)->default_value(busy), "seconds the busy target computes")(
        "delay", po::value(&delay)->default_value(delay), "seconds the origin waits before its get")(
        "poll", po::value(&poll)->default_value(poll), "seconds between the polling target's progress calls")(
        "label", po::value(&label)->default_value(""), "a tag for the CSV row (e.g. the MPI and settings)")(
        "csv", po::value(&csv)->default_value(""), "append results to this CSV file");
    po::variables_map vm;
    const auto check = [&] {
      gb::require(reps >= 1, "--reps must be at least 1");
      gb::require(busy > 0 && poll > 0, "--busy and --poll must be positive");
      gb::require(busy <= 3600 && poll <= 3600,
                  "--busy and --poll must be at most 3600 seconds (and finite)");
      // the get must start while the target is still inside its loop, or "busy" measures an
      // idle target
      gb::require(delay >= 0 && delay <= busy / 2, "--delay must be between 0 and half of --busy");
    };
    if (!gb::parse_command_line(argc, argv, opts, vm, "bench_progress", check)) {
      MPI_Finalize();
      return 2;
    }
    garray::Context ctx;
    const int p = ctx.size(), me = ctx.rank();
    if (vm.count("help") || p != 2) {
      if (me == 0) std::cout << (p != 2 ? "bench_progress: run with 2 ranks (one per host)\n" : "") << opts << '\n';
      MPI_Finalize();
      return p != 2 && !vm.count("help") ? 2 : 0;
    }
    char host[MPI_MAX_PROCESSOR_NAME] = {}, other[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    MPI_Get_processor_name(host, &len);
    MPI_Sendrecv(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 1 - me, 0, other, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 1 - me, 0,
                 ctx.comm(), MPI_STATUS_IGNORE);
    if (me == 0) {
      gb::print_run_info(std::cout, "bench_progress", p);
      std::cout << "# " << ctx.describe();
      std::cout << "# origin " << host << ", target " << other << "; busy " << busy << " s, medians of " << reps
                << " reps\n";
    }
    const garray::Index n = 1 << 17;  // 1 MiB of doubles per rank
    garray::GlobalArray<double, 1> a(ctx, {2 * n}, garray::Distribution<1>::slab(0));
    garray::for_each_owned(a, [](const garray::Shape<1>&, const garray::Shape<1>& g, double& v) {
      v = static_cast<double>(g[0]);
    });
    a.sync();
    std::vector<double> buf(n);
    bool ok = true;
    struct Cell {
      std::size_t bytes;
      std::vector<double> idle, busy, polled, probed;
    };
    std::vector<Cell> cells = {{8, {}, {}, {}, {}}, {std::size_t(n) * 8, {}, {}, {}, {}}};
    for (int r = 0; r < reps + 1; ++r)  // one warm-up rep
      for (auto& c : cells) {
        const garray::Index cnt = static_cast<garray::Index>(c.bytes / 8);
        auto one = [&] {
          // (untimed) a get that transfers nothing must not pass on the previous one's data
          std::fill(buf.begin(), buf.begin() + cnt, std::numeric_limits<double>::quiet_NaN());
          const gb::Timer t;
          a.get(garray::idx[garray::range(n, n + cnt)], std::span<double>(buf.data(), static_cast<std::size_t>(cnt)));
          const double s = t.seconds();
          for (garray::Index i = 0; i < cnt && ok; ++i)
            if (buf[static_cast<std::size_t>(i)] != double(n + i)) {
              gb::report_failure("bench_progress", "garray get",
                                 "element " + std::to_string(i) + " of " + std::to_string(cnt) + " is " +
                                     std::to_string(buf[static_cast<std::size_t>(i)]) + ", want " +
                                     std::to_string(double(n + i)));
              ok = false;
            }
          return s;
        };
        // idle: the target waits in MPI
        MPI_Barrier(ctx.comm());
        double s = 0;
        if (me == 0) s = one();
        MPI_Barrier(ctx.comm());
        if (me == 0 && r > 0) c.idle.push_back(s);
        // busy: the target computes without MPI calls (every <= 0), or polling with `poll`
        const auto busy_get = [&](double every, auto&& poll_fn, std::vector<double>& out) {
          MPI_Barrier(ctx.comm());
          if (me == 1) {
            if (compute(busy, every, poll_fn) < 0) std::cout << "";
          } else {
            std::this_thread::sleep_for(std::chrono::duration<double>(delay));
            s = one();
          }
          MPI_Barrier(ctx.comm());
          if (me == 0 && r > 0) out.push_back(s);
        };
        busy_get(0, [] {}, c.busy);
        busy_get(poll, [&] { ctx.progress(); }, c.polled);
        busy_get(poll, [&] {
          int flag = 0;
          MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, ctx.comm(), &flag, MPI_STATUS_IGNORE);
        }, c.probed);
      }
    int all_ok = ok ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_MIN, ctx.comm());
    if (me == 0) {
      std::cout << "| progress | get | idle target (us) | busy target (us) | busy/idle | busy, progress() every "
                << poll * 1e3 << " ms (us) | busy, MPI_Iprobe every " << poll * 1e3
                << " ms (us) |\n|---|---:|---:|---:|---:|---:|---:|\n";
      for (const auto& c : cells) {
        const double i = gb::median(c.idle) * 1e6, b = gb::median(c.busy) * 1e6;
        const double pp = gb::median(c.polled) * 1e6, pi = gb::median(c.probed) * 1e6;
        std::cout << "| " << garray::to_string(ctx.progress_mode()) << " | " << gb::format_bytes(c.bytes) << " | "
                  << std::fixed << std::setprecision(1) << i << " | " << b << " | " << std::setprecision(2) << b / i
                  << " | " << std::setprecision(1) << pp << " | " << pi << " |\n";
        if (!csv.empty()) {
          gb::CsvWriter w(csv, "bench,label,progress,bytes,idle_s,busy_s,busy_over_idle,busy_progress_calls_s,"
                               "busy_iprobe_calls_s,poll_s");
          w.row("progress", label, garray::to_string(ctx.progress_mode()), c.bytes, i * 1e-6, b * 1e-6, b / i,
                pp * 1e-6, pi * 1e-6, poll);
        }
      }
      std::cout << "check=" << (all_ok ? "pass" : "FAIL") << '\n';
    }
    status = all_ok ? 0 : 1;
  }
  MPI_Finalize();
  return status;
}

int main(int argc, char** argv) {
  return garray::bench::guarded_main("bench_progress", argc, argv, bench_main);
}
