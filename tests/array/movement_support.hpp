#pragma once
// Helpers shared by the data-movement tests (movement.cpp, halo.cpp): one distribution of
// every kind for a shape, including replicated, and arrays filled from a reference.
#include "support/test_support.hpp"

#include <garray/array/halo.hpp>
#include <garray/array/movement.hpp>

#include <string>
#include <vector>

namespace test {

/// Every kind of distribution for `shape` over `nranks`: blocked, a slab on each axis, a
/// random explicit grid, a random irregular one (empty blocks likely) and replicated.
template <std::size_t N>
std::vector<garray::Distribution<N>> every_distribution(Rng& g, const garray::Shape<N>& shape, int nranks) {
  using D = garray::Distribution<N>;
  std::vector<D> out{D::blocked()};
  for (std::size_t a = 0; a < N; ++a) out.push_back(D::slab(a));
  // a random grid and a random irregular map (random_distribution's kinds 2 and 3)
  for (int want : {2, 3}) {
    for (int tries = 0; tries < 100; ++tries) {
      D d = random_distribution<N>(g, shape, nranks);
      if (static_cast<int>(d.kind()) == want) {
        out.push_back(d);
        break;
      }
    }
  }
  out.push_back(D::replicated());
  return out;
}

/// A distinct, exactly representable value for every global index.
template <class T, std::size_t N>
T value_at(const garray::Shape<N>& shape, const garray::Shape<N>& i, garray::Index salt = 0) {
  garray::Index lin = 0;
  for (std::size_t d = 0; d < N; ++d) lin = lin * shape[d] + i[d];
  return make_value<T>(lin + 1 + salt);
}

/// A reference array filled with value_at.
template <class T, std::size_t N>
Reference<T, N> filled_reference(const garray::Shape<N>& shape, garray::Index salt = 0) {
  Reference<T, N> ref(shape);
  std::array<std::vector<garray::Index>, N> ids;
  for (std::size_t d = 0; d < N; ++d)
    for (garray::Index i = 0; i < shape[d]; ++i) ids[d].push_back(i);
  for_each_selected<N>(ids, [&](const garray::Shape<N>& i, garray::Index) { ref.at(i) = value_at<T, N>(shape, i, salt); });
  return ref;
}

template <class X>
std::string str(const X& x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

}  // namespace test
