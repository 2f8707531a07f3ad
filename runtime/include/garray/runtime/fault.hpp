#pragma once
// Fault injection for the failure-rule tests (docs/semantics.md, "Failure rule"). Test
// builds only: a program linking garray_fault_injection (the target garray_testing, which
// also defines GARRAY_FAULT_INJECTION for the declarations below) installs the hook that
// makes `detail::fault_point("copy.fetch")` throw on the rank that armed that point; in
// every other program the hook is null and a fault point does nothing.
//
//   if (ctx.rank() == 1) garray::testing::arm_fault("sync.complete");
//   CHECK_THROWS(a.sync());   // rank 1: InjectedFault; the others: CollectiveFailure
//
// Fault points are named "<collective>.<step>"; docs/design.md lists them.

#include <garray/runtime/error.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace garray {
#ifdef GARRAY_FAULT_INJECTION
namespace testing {
/// What an armed fault point throws (unless armed with `bad_alloc`).
class InjectedFault : public Error {
 public:
  using Error::Error;
};
/// Local. The `skip`+1-th time this process reaches fault point `point` it throws
/// InjectedFault (or std::bad_alloc), then the point is disarmed. One armed point per process.
void arm_fault(std::string_view point, int skip = 0, bool bad_alloc = false);
/// Local. Disarms the armed point, if any.
void disarm_fault() noexcept;
/// Local. True while a point is armed (it has not fired yet).
bool fault_armed() noexcept;
/// Local. Every fault point name this process has passed, in first-seen order.
const std::vector<std::string>& fault_points_seen();
}  // namespace testing
#endif
namespace detail {
/// Null in every program but the test suite's: the test-only library garray_fault_injection
/// (runtime/src/fault.cpp, never installed) sets it at start-up. With it null a fault point
/// costs a load and a predicted branch; fault points sit on collective paths (and after a
/// request's finishers).
extern void (*fault_hook)(std::string_view point);
inline void fault_point(std::string_view point) {
  if (fault_hook) [[unlikely]]
    fault_hook(point);
}
}  // namespace detail
}  // namespace garray
