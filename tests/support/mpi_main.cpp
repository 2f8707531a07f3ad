// Our own doctest main for MPI test binaries (distro doctest has no MPI extension).
//
// Every rank runs every test in the same order. Rank 0 prints normally; other ranks print
// only failures, each line prefixed with "[rank r]". At the end the failure count is reduced
// so rank 0 names the failing ranks, and every rank returns the same exit code.
//
// Fail fast: a rank that leaves a test case early (an exception escaped it, or a REQUIRE
// failed) would leave the other ranks waiting in that test's next collective until ctest's
// timeout. Once doctest has printed the failure, that rank aborts the job (MPI_Abort) and
// names the test case; failed CHECKs do not leave the test case and keep the summary above.
// tests/support/fail_fast.sh checks both.

#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <mpi.h>

#if defined(GARRAY_TEST_WITH_GA)  // test_ga_compat: Global Arrays next to garray
#include <ga.h>
#include <macdecls.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define GARRAY_TEST_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GARRAY_TEST_LSAN 1
#endif
#endif
#if defined(GARRAY_TEST_LSAN)
#include <sanitizer/lsan_interface.h>
#endif

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <streambuf>
#include <string>
#include <thread>
#include <vector>

namespace {

/// Forwards to another streambuf, inserting a prefix at the start of every line.
class PrefixBuf : public std::streambuf {
 public:
  PrefixBuf(std::streambuf* out, std::string prefix) : out_(out), prefix_(std::move(prefix)) {}

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    if (at_line_start_) out_->sputn(prefix_.data(), static_cast<std::streamsize>(prefix_.size()));
    at_line_start_ = c == '\n';
    return out_->sputc(static_cast<char>(c));
  }
  int sync() override { return out_->pubsync(); }

 private:
  std::streambuf* out_;
  std::string prefix_;
  bool at_line_start_ = true;
};

/// The leak check runs here, before MPI_Finalize, and not at exit: everything garray or the
/// tests lost is unreachable now, while what Open MPI still holds is reachable (its own
/// finalize-time leaks are not garray's). An MPI handle garray forgot to free (a datatype,
/// a communicator, a window) shows as a leak inside libmpi. No-op without ASan and with
/// ASAN_OPTIONS=detect_leaks=0.
void leak_check() {
#if defined(GARRAY_TEST_LSAN)
  __lsan_do_leak_check();
#endif
}

/// The fail-fast listener (see the top of this file). Listeners run before the console
/// reporter, so the failure is only noted in log_assert/test_case_exception and acted on at
/// the next event after it: the test case's end, or its re-entry for the next subcase (a
/// rank re-entering while the others still wait in the previous subcase would pair
/// collectives of different subcases).
class FailFast : public doctest::IReporter {
 public:
  explicit FailFast(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData& tc) override {
    name_ = tc.m_name;
    how_ = nullptr;
  }
  void test_case_reenter(const doctest::TestCaseData&) override { abort_if_left(); }
  void test_case_end(const doctest::CurrentTestCaseStats&) override { abort_if_left(); }
  void test_case_exception(const doctest::TestCaseException& e) override {
    // A crash (a signal: SIGSEGV, or mpiexec's SIGTERM after another rank aborted) ends this
    // process anyway, and mpiexec then ends the job.
    if (!e.is_crash) how_ = "an exception escaped it";
  }
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData& ad) override {
    if (ad.m_failed && (ad.m_at & doctest::assertType::is_require) != 0) how_ = "a REQUIRE failed";
  }
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}

 private:
  void abort_if_left() const {
    if (!how_) return;
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::cout.flush();
    std::printf("[mpi] rank %d left test case \"%s\" early (%s; reported above): aborting every rank, "
                "none is left waiting in a collective\n",
                rank, name_.c_str(), how_);
    std::fflush(stdout);
    // MPICH's launcher kills every process at MPI_Abort and may drop output its proxies have
    // not forwarded yet (seen: the report above cut short in 4 of 10 runs): let it drain.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  std::string name_;
  const char* how_ = nullptr;
};
REGISTER_LISTENER("mpi_fail_fast", 1, FailFast);

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  {
#if defined(GARRAY_TEST_LSAN)
    // Under LeakSanitizer (tests/long/sanitizers.sh): what MPI_Init allocates and drops is
    // Open MPI's, and some of it comes from components it dlcloses before exit (frames
    // "<unknown module>" that no suppression can match), so it is not tracked.
    __lsan::ScopedDisabler lsan_off;
#endif
    // What garray::required_thread_level() says (read here without garray: a malformed
    // GARRAY_PROGRESS is for the Context to report, tests/runtime/progress.cpp).
    const char* progress = std::getenv("GARRAY_PROGRESS");
    const bool thread = progress && std::string(progress) == "thread";
    MPI_Init_thread(&argc, &argv, thread ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED, &provided);
#if defined(GARRAY_TEST_WITH_GA)
    GA_Initialize();
    MA_init(C_DBL, 1 << 20, 4 << 20);
#endif
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  PrefixBuf buf(std::cout.rdbuf(), "[rank " + std::to_string(rank) + "] ");
  std::ostream prefixed(&buf);

  int failed = 0;
  {
    doctest::Context ctx;
    ctx.setOption("order-by", "file");
    ctx.setOption("no-colors", true);
    ctx.applyCommandLine(argc, argv);
    if (rank != 0) {
      ctx.setOption("minimal", true);
      ctx.setCout(&prefixed);
    }
    const int rc = ctx.run();
    failed = rc != 0 ? 1 : 0;
    if (ctx.shouldExit()) {
#if defined(GARRAY_TEST_WITH_GA)
      GA_Terminate();
#endif
      MPI_Finalize();
      return rc;
    }
  }
  prefixed.flush();
  std::cout.flush();

  std::vector<int> all(static_cast<std::size_t>(size), 0);
  MPI_Gather(&failed, 1, MPI_INT, all.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) {
    std::ostringstream os;
    for (int r = 0; r < size; ++r)
      if (all[static_cast<std::size_t>(r)]) os << ' ' << r;
    std::printf("[mpi] %d ranks: %s%s\n", size, any ? "FAILED on ranks" : "all passed", os.str().c_str());
    std::fflush(stdout);
  }
  leak_check();  // a rank with leaks exits here with ASan's exit code: mpiexec fails the run
#if defined(GARRAY_TEST_WITH_GA)
  GA_Terminate();
#endif
  MPI_Finalize();
  return any ? 1 : 0;
}
