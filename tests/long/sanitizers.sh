#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + LeakSanitizer + UndefinedBehaviorSanitizer
# (issue 12). Not part of CI: the instrumented build takes about an hour at -j1 on 2 cores
# (the 95 tests then ~4 minutes). Results and what each suppression is for:
# docs/performance.md ("ASan + UBSan + LeakSanitizer").
#
# Usage: tests/long/sanitizers.sh BUILD_DIR [extra ctest arguments, e.g. -L mpi; not -R/-E]
#   JOBS=n     parallel build jobs (default 1)
#   CTEST_J=n  parallel ctest jobs (default 1)
#   OPS=n      operations per element type in the random differential test (default 2000;
#              CI runs 10,000, tests/long/random_ops.sh 100,000)
# Exit status: 0 iff the build and every test passed with no sanitizer report.
#
# What is suppressed and why: tests/sanitizers/lsan.supp (leaks inside Open MPI/PMIx only).
# Everything else fails the test: any ASan error, any UBSan report (not recoverable:
# -fno-sanitize-recover=undefined) and any other leak.
set -u
build=${1:?usage: sanitizers.sh BUILD_DIR [ctest arguments]}
shift
src=$(cd "$(dirname "$0")/../.." && pwd)
supp=$src/tests/sanitizers

# The flags, also exported so that install_consumer's fresh CMake project (which links the
# instrumented libgarray_runtime.a) is compiled and linked the same way.
# float-cast-overflow is not part of GCC's "undefined": a float -> int conversion out of range
# (which garray's stores define as NumPy does, detail::store_cast) would otherwise pass unseen.
export CXXFLAGS="-fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer -fno-sanitize-recover=undefined,float-cast-overflow"
export LDFLAGS="-fsanitize=address,undefined,float-cast-overflow"

cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="$CXXFLAGS" -DCMAKE_EXE_LINKER_FLAGS="$LDFLAGS" \
  -DGARRAY_TEST_MPICH=OFF -DGARRAY_TEST_CLUSTER=OFF -DGARRAY_BUILD_BENCH=OFF || exit 1
cmake --build "$build" -j "${JOBS:-1}" || exit 1

# detect_leaks: the doctest main runs the leak check itself before MPI_Finalize.
# UBSan: print the stack of every report; a report aborts the process (non-zero exit).
export ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1
export LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export GARRAY_TEST_OPS=${OPS:-2000}

# Processes whose main() is not the doctest main (the laplace CLI, the installed consumer)
# would run the leak check at exit, after MPI_Finalize, where Open MPI's own finalize-time
# leaks (from components it has dlclosed: unsymbolisable) are reported: leaks off for them,
# ASan and UBSan on.
apps='^(laplace_cli_check\..*|laplace_checkpoint_restart|install_consumer)$'
status=0
ctest --test-dir "$build" -j "${CTEST_J:-1}" --output-on-failure -E "$apps" "$@" || status=1
ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 \
  ctest --test-dir "$build" -j "${CTEST_J:-1}" --output-on-failure -R "$apps" "$@" || status=1
exit $status
