// The test-only library garray_fault_injection (never installed): see fault.hpp.
#include <garray/runtime/fault.hpp>

#include <algorithm>
#include <new>

namespace garray {
namespace {
struct Armed {
  std::string point;
  int skip = 0;
  bool bad_alloc = false;
  bool on = false;
};
Armed& armed() {
  static Armed a;
  return a;
}
std::vector<std::string>& seen() {
  static std::vector<std::string> s;
  return s;
}
}  // namespace

namespace testing {
void arm_fault(std::string_view point, int skip, bool bad_alloc) {
  armed() = Armed{std::string(point), skip, bad_alloc, true};
}
void disarm_fault() noexcept { armed().on = false; }
bool fault_armed() noexcept { return armed().on; }
const std::vector<std::string>& fault_points_seen() { return seen(); }
}  // namespace testing

namespace {
void fault_point_hook(std::string_view point) {
  auto& s = seen();
  if (std::find(s.begin(), s.end(), point) == s.end()) s.emplace_back(point);
  Armed& a = armed();
  if (!a.on || a.point != point) return;
  if (a.skip-- > 0) return;
  a.on = false;
  if (a.bad_alloc) throw std::bad_alloc();
  detail::raise<testing::InjectedFault>("injected fault at ", point);
}
// Installed before main() runs: every fault point of the program is seen.
[[maybe_unused]] const bool installed = (detail::fault_hook = &fault_point_hook, true);
}  // namespace
}  // namespace garray
