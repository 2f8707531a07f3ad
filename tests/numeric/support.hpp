#pragma once
// Helpers shared by the numeric tests: arrays with random contents mirrored by a serial
// reference, random views given by explicit sections, bitwise comparisons.
#include "support/test_support.hpp"

#include <cstring>
#include <vector>

namespace ntest {

using garray::Index;
using A2 = garray::GlobalArray<double, 2>;
using V2 = garray::View<double, 2, 2>;

/// Loads `ref` into `a` (every rank writes the elements it owns), then syncs. Collective.
template <class T, std::size_t N>
void load(garray::GlobalArray<T, N>& a, test::Reference<T, N>& ref) {
  {
    auto blk = a.access();
    const auto& b = blk.box();
    if (!b.empty()) {
      std::array<std::vector<Index>, N> ids;
      for (std::size_t d = 0; d < N; ++d)
        for (Index i = b.lo[d]; i < b.hi[d]; ++i) ids[d].push_back(i);
      test::for_each_selected<N>(ids, [&](const garray::Shape<N>& i, Index) { blk.view()(i) = ref.at(i); });
    }
  }
  a.sync();
}

/// Random small integer values (exact in double) in [lo, hi].
template <class T, std::size_t N>
void randomize(test::Rng& g, test::Reference<T, N>& ref, Index lo, Index hi) {
  for (std::size_t k = 0; k < ref.a.num_elements(); ++k) ref.a.data()[k] = static_cast<T>(test::uniform(g, lo, hi));
}

/// A random section of a 2-d array of shape `base` with kept shape `s` (steps in +-1, +-2,
/// +-3 where they fit).
inline garray::Section<2> random_section(test::Rng& g, const garray::Shape<2>& base, const garray::Shape<2>& s) {
  garray::Section<2> sec;
  for (std::size_t d = 0; d < 2; ++d) {
    Index step = 1;
    for (int tries = 0; tries < 4; ++tries) {
      const Index cand = test::uniform(g, 1, 3) * (test::uniform(g, 0, 1) ? 1 : -1);
      if ((s[d] - 1) * (cand < 0 ? -cand : cand) < base[d]) {
        step = cand;
        break;
      }
    }
    const Index span = (s[d] - 1) * (step < 0 ? -step : step);
    const Index lo = test::uniform(g, 0, base[d] - 1 - span);
    sec.start[d] = step > 0 ? lo : lo + span;
    sec.step[d] = step;
    sec.count[d] = s[d];
  }
  return sec;
}

/// Base index of view position (i, j) of a 2-d section.
inline garray::Shape<2> at(const garray::Section<2>& s, Index i, Index j) {
  return {s.start[0] + i * s.step[0], s.start[1] + j * s.step[1]};
}

/// Bitwise equality of doubles (NaNs with the same bits compare equal).
inline bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

/// Every rank: the array equals the reference bitwise, any two NaNs matching (full get). Collective.
template <std::size_t N>
bool equal_bits(garray::GlobalArray<double, N>& a, test::Reference<double, N>& ref) {
  std::vector<double> all(static_cast<std::size_t>(a.size()));
  a.get_section(garray::Section<N>::full(a.shape()), all);
  // Bitwise, except that any two NaNs match: which NaN an operation with two NaN operands
  // returns (sign, payload) is not specified by IEEE 754, and the compiler may swap the
  // operands of + and * (x86: the first operand's NaN wins; 0/0 gives -NaN, its negation +NaN)
  bool ok = true;
  for (std::size_t q = 0; ok && q < all.size(); ++q)
    ok = std::memcmp(&all[q], ref.a.data() + q, sizeof(double)) == 0 || (all[q] != all[q] && ref.a.data()[q] != ref.a.data()[q]);
  return test::all_ranks(ok, a.context().comm());
}

/// True on every rank iff `v` has the same bytes on every rank. Collective.
template <class T>
bool same_on_all_ranks(const T& v, MPI_Comm comm = MPI_COMM_WORLD) {
  int p = 0;
  MPI_Comm_size(comm, &p);
  std::vector<T> all(static_cast<std::size_t>(p));
  MPI_Allgather(&v, sizeof(T), MPI_BYTE, all.data(), sizeof(T), MPI_BYTE, comm);
  bool ok = true;
  for (const auto& x : all) ok = ok && std::memcmp(&x, &v, sizeof(T)) == 0;
  return test::all_ranks(ok, comm);
}

}  // namespace ntest
