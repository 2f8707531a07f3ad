// bench_util.hpp - small helpers shared by the libgarray benchmarks (header only).
//
//   Timer t; ...; t.seconds()            wall-clock timer on MPI_Wtime
//   median(v)                            median of a sample (v taken by value)
//   time_reps(R, W, body, between)       run body W times untimed, then R timed reps
//   side_by_side(comm, R, serial, fused) serial (rank 0) and garray alternately: medians
//   calibrate_iters(op, min_s)           inner-loop count so one rep lasts >= min_s
//   CsvWriter, open_csv(comm, ...)       append rows to a CSV file, header on creation
//   all_ranks_ok(comm, ok), report_failure(...)   validation outcome agreed by every rank
//   mpi_library_version(), osc_setup()   what the numbers were measured with
//   parse_bytes("64K"), format_bytes(n)  size helpers for command lines and tables
//   parse_size_reps(argc, argv, ...)     --n/--reps (or positional n reps) and --help
#pragma once

#include <mpi.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace garray::bench {

/// Parses the command line into `vm` (store and notify), then runs `check` (unless --help was
/// given), which throws boost::program_options::error naming the option for a value the
/// benchmark cannot run with (see require()). On a bad option or value prints "NAME: what was
/// wrong (see --help)" to stderr and returns false: the caller finalises MPI and exits with
/// code 2, as every rank parses the same command line.
inline bool parse_command_line(int argc, char** argv, const boost::program_options::options_description& opts,
                               boost::program_options::variables_map& vm, std::string_view name,
                               const std::function<void()>& check = {}) {
  namespace po = boost::program_options;
  try {
    po::store(po::parse_command_line(argc, argv, opts), vm);
    po::notify(vm);
    if (check && vm.count("help") == 0) check();
    return true;
  } catch (const std::exception& e) {  // po::error, or a library check inside `check` (resolve(), ...)
    std::cerr << name << ": " << e.what() << " (see --help)\n";
    return false;
  }
}

/// A benchmark's main: runs `body`; an exception that escapes it (a library error, e.g. an
/// array too large for --n) is printed as "NAME: what" on the ranks that got it instead of
/// reaching std::terminate. With one rank MPI is then finalised and the exit code is 1; with
/// several the job is aborted (MPI_Abort, code 1): the other ranks may not have thrown (an
/// allocation that failed on rank 0 only) and would wait for this one forever.
inline int guarded_main(std::string_view name, int argc, char** argv, int (*body)(int, char**)) {
  try {
    return body(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << name << ": " << e.what() << std::endl;
  }
  int init = 0, fin = 0, size = 1;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) {
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 1) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Finalize();
  }
  return 1;
}

/// Throws boost::program_options::error(what) unless `ok`: a bad option value, reported as
/// parse_command_line() reports an unknown option ("what" names the option).
inline void require(bool ok, const std::string& what) {
  if (!ok) throw boost::program_options::error(what);
}

// ---- timing ------------------------------------------------------------------------------

class Timer {
 public:
  Timer() : t0_(MPI_Wtime()) {}
  void reset() { t0_ = MPI_Wtime(); }
  [[nodiscard]] double seconds() const { return MPI_Wtime() - t0_; }

 private:
  double t0_;
};

inline double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2 == 1) return *mid;
  return 0.5 * (*mid + *std::max_element(v.begin(), mid));
}

/// Median over reps of a[r] / b[r] (NaN if there are none): the two variants ran one after
/// the other in rep r, so a slow spell of the machine that lasts a rep hits both. Steadier on
/// a noisy machine than the ratio of the medians.
inline double paired_ratio(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> r;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) r.push_back(a[i] / b[i]);
  return median(std::move(r));
}

inline void no_between() {}

// Runs `body` `warmup` times untimed, then `reps` times timed; returns seconds per rep.
// `between` runs after every rep (warmups included) outside the timed region, e.g. to
// complete outstanding operations so that one rep's backlog does not leak into the next.
template <class Body, class Between = void (*)()>
std::vector<double> time_reps(int reps, int warmup, Body&& body, Between&& between = no_between) {
  for (int i = 0; i < warmup; ++i) {
    body();
    between();
  }
  std::vector<double> times;
  times.reserve(static_cast<std::size_t>(std::max(reps, 0)));
  for (int i = 0; i < reps; ++i) {
    const Timer t;
    body();
    times.push_back(t.seconds());
    between();
  }
  return times;
}

/// Medians of a side-by-side comparison: seconds of each side and the per-round ratio
/// serial / garray.
struct Side {
  double serial, garray, ratio;
};

/// Times `serial` (rank 0 only) and `fused` (every rank of `comm`) alternately, one untimed
/// round and then `reps` rounds, so both sides see the same machine state (the machine is
/// shared and noisy: back-to-back blocks of reps drift apart). Rank 0's times.
template <class S, class G>
Side side_by_side(MPI_Comm comm, int reps, S&& serial, G&& fused) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<double> ts, tg, r;
  for (int i = -1; i < reps; ++i) {
    double s = 0;
    if (rank == 0) {
      const Timer t;
      serial();
      s = t.seconds();
    }
    MPI_Barrier(comm);
    const Timer t;
    fused();
    const double g = t.seconds();
    if (i < 0) continue;
    ts.push_back(s);
    tg.push_back(g);
    r.push_back(s / g);
  }
  return {median(ts), median(tg), median(r)};
}

// Number of back-to-back calls of `op` needed for one rep to last at least `min_seconds`
// (doubling probe, then extrapolation). Returns at least 1 and at most `max_iters`.
template <class Op>
std::size_t calibrate_iters(Op&& op, double min_seconds, std::size_t max_iters = std::size_t{1} << 22) {
  std::size_t n = 1;
  for (;;) {
    const Timer t;
    for (std::size_t i = 0; i < n; ++i) op();
    const double s = t.seconds();
    if (s >= min_seconds / 4 || n >= max_iters) {
      const double per_op = std::max(s, 1e-9) / static_cast<double>(n);
      const double want = std::ceil(min_seconds / per_op);
      return std::clamp<std::size_t>(static_cast<std::size_t>(want), 1, max_iters);
    }
    n *= 2;
  }
}

// Keeps the compiler from discarding stores whose results are never read (memcpy variants).
inline void clobber_memory() { asm volatile("" ::: "memory"); }
inline void do_not_optimize(const void* p) { asm volatile("" : : "r"(p) : "memory"); }

// ---- CSV ---------------------------------------------------------------------------------

// Appends rows to `path`; writes `header` first if the file is new or empty. A writer built
// from an empty path is disabled and ignores rows. A file that already starts with another
// header holds another table: refused (throws), as its columns would not match. Fields are
// formatted as `<<` formats them (doubles to 6 significant digits); one that contains a
// comma, a quote or a line break is quoted as RFC 4180 says (labels such as "ucx, thread"
// would otherwise shift the columns).
class CsvWriter {
 public:
  CsvWriter() = default;
  CsvWriter(const std::string& path, std::string_view header) {
    if (path.empty()) return;
    std::error_code ec;
    const bool fresh = !std::filesystem::exists(path, ec) || std::filesystem::file_size(path, ec) == 0;
    if (!fresh) {
      std::ifstream in(path);
      std::string first;
      std::getline(in, first);
      if (!first.empty() && first.back() == '\r') first.pop_back();
      if (in && first != header)
        throw std::runtime_error("CSV file '" + path + "' holds another table (header '" + first +
                                 "'; this one is '" + std::string(header) + "'): use another file");
    }
    out_.open(path, std::ios::app);
    if (!out_) throw std::runtime_error("cannot open CSV file '" + path + "'");
    if (fresh) out_ << header << '\n';
  }

  [[nodiscard]] bool enabled() const { return out_.is_open(); }

  template <class... Fields>
  void row(const Fields&... fields) {
    if (!enabled()) return;
    const char* sep = "";
    ((out_ << sep << quoted(fields), sep = ","), ...);
    out_ << '\n';
    out_.flush();
  }

 private:
  template <class T>
  static std::string quoted(const T& field) {
    std::ostringstream os;
    os << field;
    std::string s = os.str();
    if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) {
      if (c == '"') q += '"';
      q += c;
    }
    return q + '"';
  }

  std::ofstream out_;
};

/// A CsvWriter on rank 0 of `comm` (disabled on the other ranks, and for an empty path).
/// **Collective**: when rank 0 cannot open the file (no such directory, another table in it)
/// it prints why, as `name: ...`, and every rank gets nothing, so that all of them can end
/// with the same exit code before anything is measured.
inline std::optional<CsvWriter> open_csv(MPI_Comm comm, const std::string& path, std::string_view header,
                                         std::string_view name) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::optional<CsvWriter> w;
  int ok = 1;
  try {
    w.emplace(rank == 0 ? path : std::string(), header);
  } catch (const std::exception& e) {
    std::cerr << name << ": " << e.what() << '\n';
    ok = 0;
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, comm);
  if (ok == 0) w.reset();
  return w;
}

// ---- validation --------------------------------------------------------------------------

/// True when `ok` holds on every rank of `comm`. **Collective**: every benchmark agrees on
/// the outcome of its checks before it reports, so that all ranks exit alike.
inline bool all_ranks_ok(MPI_Comm comm, bool ok) {
  int in = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&in, &all, 1, MPI_INT, MPI_MIN, comm);
  return all == 1;
}

/// Prints "BENCH: FAIL CONTENDER: WHAT [rank r]" to stderr: which contender failed which
/// check, and where (the other ranks may have passed theirs).
inline void report_failure(std::string_view bench, std::string_view contender, std::string_view what) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::ostringstream os;  // one write, so the ranks' lines do not interleave
  os << bench << ": FAIL " << contender << ": " << what << " [rank " << rank << "]\n";
  std::cerr << os.str() << std::flush;
}

// ---- what are we running on --------------------------------------------------------------

inline std::string mpi_library_version() {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(buf, &len);
  std::string s(buf, static_cast<std::size_t>(std::max(len, 0)));
  if (const auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  while (!s.empty() && (s.back() == '\0' || std::isspace(static_cast<unsigned char>(s.back())))) s.pop_back();
  return s;
}

// One-sided component selection as requested by the environment (mpiexec --mca osc X sets
// OMPI_MCA_osc in the ranks' environment). "default" means the MPI library chooses.
inline std::string osc_setup() {
  const char* v = std::getenv("OMPI_MCA_osc");
  return (v != nullptr && *v != '\0') ? std::string(v) : std::string("default");
}

inline void print_run_info(std::ostream& os, std::string_view bench_name, int nranks) {
  os << "# " << bench_name << '\n'
     << "# MPI library : " << mpi_library_version() << '\n'
     << "# osc         : " << osc_setup() << '\n'
     << "# ranks       : " << nranks << '\n';
}

// ---- sizes -------------------------------------------------------------------------------

// "8", "64K", "1KiB", "8M", "1G" -> bytes (binary multiples). Throws on malformed input.
inline std::size_t parse_bytes(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
  if (pos == 0) throw std::invalid_argument("bad size '" + std::string(text) + "'");
  const std::string digits(text.substr(0, pos));
  const std::string too_big = "size '" + std::string(text) + "' is too large (at most 2^48 bytes)";
  if (digits.size() > 15) throw std::invalid_argument(too_big);  // beyond any shift below
  const std::size_t value = std::stoull(digits);
  std::string unit;
  for (char c : text.substr(pos)) unit += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() > 1 && unit.back() == 'B') unit.pop_back();  // KB, KIB, MB, ...
  if (unit.size() > 1 && unit.back() == 'I') unit.pop_back();  // KI, MI, ...
  int shift = -1;
  if (unit.empty() || unit == "B") shift = 0;
  if (unit == "K") shift = 10;
  if (unit == "M") shift = 20;
  if (unit == "G") shift = 30;
  if (shift < 0) throw std::invalid_argument("bad size unit in '" + std::string(text) + "'");
  if (value > (std::size_t{1} << (48 - shift))) throw std::invalid_argument(too_big);  // no wrap to 0
  return value << shift;
}

inline std::string format_bytes(std::size_t n) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (u < 3 && n >= 1024 && n % 1024 == 0) {
    n /= 1024;
    ++u;
  }
  return std::to_string(n) + " " + units[u];
}

// ---- command line --------------------------------------------------------------------------

/// The command line of a benchmark that takes an array extent and a repetition count:
/// `--n N --reps R` or positionally `N R`, and `--help`. Every rank parses the same argv
/// (call after MPI_Init, before any collective); rank 0 prints the help or the error. Returns
/// the exit code when the program should stop (0 after --help, 2 for a bad command line),
/// nothing when it should run.
inline std::optional<int> parse_size_reps(int argc, char** argv, const char* name, const char* what,
                                          long long& n, int& reps) {
  namespace po = boost::program_options;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  po::options_description opts(std::string(name) + " options");
  opts.add_options()("help", "show this help")("n", po::value(&n)->default_value(n), what)(
      "reps", po::value(&reps)->default_value(reps), "timed rounds (medians; after one warm-up)");
  po::positional_options_description pos;
  pos.add("n", 1).add("reps", 1);
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(opts).positional(pos).run(), vm);
    po::notify(vm);
    if (vm.count("help")) {
      if (rank == 0) std::cout << "usage: " << name << " [--n N] [--reps R]   (or: " << name << " [N [R]])\n" << opts;
      return 0;
    }
    if (n < 1 || reps < 1) throw po::error("--n and --reps must be at least 1");
  } catch (const po::error& e) {
    if (rank == 0) std::cerr << name << ": " << e.what() << " (--help lists the options)\n";
    return 2;
  }
  return std::nullopt;
}

}  // namespace garray::bench
