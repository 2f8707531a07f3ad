// Must compile: `using namespace garray;` next to the C, POSIX and C++ standard headers,
// calling garray names and the standard ones unqualified, collides with nothing.
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <garray/garray.hpp>

using namespace garray;

double f(Context& ctx) {
  Index n = 8;  // POSIX has a function ::index
  Shape<2> shape{n, n};
  GlobalArray<double, 2> a(ctx, shape), b(ctx, shape);
  GlobalArray<std::int64_t, 1> c(ctx, {n});
  fill(a, 1.0);
  copy(b, a);
  a = b;
  a.sync();  // POSIX has a function ::sync
  auto v = a[idx[range(1, -1)][all]];
  v = 2.0;
  assign(b, a + b * 2.0);
  double s = sum(a) + dot(a, b) + norm2(a) + max(a) + min(a) + mean(a);
  s += sqrt(2.0) + std::abs(-1.0) + abs(-1.0) + exp(0.0);  // <cmath>'s global functions
  auto e = eval(sqrt(abs(a)));
  (void)c.read_inc({0});
  (void)argmax(a);
  update_ghosts(a);
  print(a);
  (void)describe(a);
  const char* p = index("abc", 'b');  // the POSIX function itself
  (void)strlen(p);
  (void)raise(0 * SIGINT);  // <csignal>'s raise
  (void)sync;
  return s + e.size();
}
