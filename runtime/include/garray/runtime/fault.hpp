#pragma once
// Fault injection for the failure-rule tests (docs/semantics.md, "Failure rule"). Test
// builds only: with GARRAY_FAULT_INJECTION defined (the target garray_runtime_testing and
// everything linking it), `detail::fault_point("copy.fetch")` throws on the rank that armed
// that point; in every other build it is an empty inline function the optimiser removes.
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
namespace detail {
void fault_point(std::string_view point);
}
#else
namespace detail {
inline void fault_point(std::string_view) noexcept {}
}  // namespace detail
#endif
}  // namespace garray
