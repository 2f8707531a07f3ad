#pragma once
// What a collective call ended with, for tests of the failure rule and of collective misuse
// (every rank throws, and which exception each rank sees).
#include <doctest/doctest.h>
#include <garray/runtime/error.hpp>
#include <garray/runtime/fault.hpp>

#include <exception>
#include <string>
#include <string_view>

namespace test {

/// The outcome of one call: returned normally, the fault injected on this rank, a peer's
/// failure (CollectiveFailure), a mismatch (CollectiveMismatch), InvalidArgument, another
/// garray error, or another exception.
enum class Got { nothing, injected, failure, mismatch, invalid, other_garray, other };

/// Runs f() and classifies how it ended; `msg` (if given) gets the exception's text.
template <class F>
Got outcome(F&& f, std::string* msg = nullptr) {
  try {
    f();
  } catch (const garray::testing::InjectedFault& e) {
    if (msg) *msg = e.what();
    return Got::injected;
  } catch (const garray::CollectiveFailure& e) {
    if (msg) *msg = e.what();
    return Got::failure;
  } catch (const garray::CollectiveMismatch& e) {
    if (msg) *msg = e.what();
    return Got::mismatch;
  } catch (const garray::InvalidArgument& e) {
    if (msg) *msg = e.what();
    return Got::invalid;
  } catch (const garray::Error& e) {
    if (msg) *msg = e.what();
    return Got::other_garray;
  } catch (const std::exception& e) {
    if (msg) *msg = e.what();
    return Got::other;
  }
  return Got::nothing;
}

/// A collective call that is invalid on rank `bad` only (a bad argument, a stale view, a
/// moved-from array there): rank `bad` throws its own error of type Own, every other rank
/// CollectiveMismatch carrying its message ("invalid call on rank <bad>"), and both texts
/// contain `part`. Nobody waits: the invalid rank joined the handshake.
template <class Own, class F>
void expect_one_rank_error(int me, int bad, std::string_view part, F&& call) {
  std::string m;
  bool own = false, mismatch = false;
  try {
    call();
  } catch (const garray::CollectiveMismatch& e) {
    mismatch = true;
    m = e.what();
  } catch (const Own& e) {
    own = true;
    m = e.what();
  } catch (const std::exception& e) {
    m = std::string("WRONG TYPE: ") + e.what();
  }
  CAPTURE(part);
  CAPTURE(m);
  CHECK((me == bad ? own : mismatch));
  CHECK(m.find(part) != std::string::npos);
  if (me != bad) CHECK(m.find("invalid call on rank " + std::to_string(bad)) != std::string::npos);
}

}  // namespace test
