#pragma once
// What a collective call ended with, for tests of the failure rule and of collective misuse
// (every rank throws, and which exception each rank sees).
#include <garray/runtime/error.hpp>
#include <garray/runtime/fault.hpp>

#include <exception>
#include <string>

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

}  // namespace test
