// Must compile: the same includes and calls as the failing cases, used correctly.
#include <garray/garray.hpp>
void f(garray::GlobalArray<std::int64_t, 2>& a, std::span<std::int64_t> buf) {
  a.get(garray::idx[1][2], buf);
  (void)a.read_inc({0, 0}, 1);
}
