// A random differential run: long sequences of mixed one-sided operations (get/put/acc and
// their nonblocking forms on strided slices with negative steps and dropped dimensions,
// gather/scatter/scatter_acc with repeated and negative indices, read_inc) on random shapes,
// distributions and ghost widths, checked against a serial reference.
//
// Every rank draws the same operations from one shared seed. Phase k's operations on array
// A are issued by rank k % P alone (so their order is defined; the actor checks every get
// and read_inc against the reference as it goes, including reading its own writes); at the
// same time every rank issues commutative operations (accumulate, scatter_acc, acc_nb,
// read_inc) on array B, which must sum exactly. Both arrays are compared with the
// reference after every few phases.
//
// GARRAY_TEST_OPS sets the number of operations on A (default 10000 per element type: the
// CI run); `GARRAY_TEST_OPS=100000` is the long run (docs/performance.md, "Correctness runs").
#include "support/test_support.hpp"

#include <cstdlib>

using garray::Index;

using garray::Shape;

namespace {

Index ops_from_env() {
  if (const char* e = std::getenv("GARRAY_TEST_OPS")) return std::max<Index>(1, std::strtoll(e, nullptr, 10));
  return 10000;
}

template <class T>
T value_of(test::Rng& g) {
  return static_cast<T>(test::uniform(g, -9, 9));
}

// A random index list over `shape` with repeats and negative indices, and its base indices.
std::pair<std::vector<Shape<2>>, std::vector<Shape<2>>> random_list(test::Rng& g, const Shape<2>& shape) {
  const auto n = static_cast<std::size_t>(test::uniform(g, 0, 12));
  std::vector<Shape<2>> idx(n), base(n);
  for (std::size_t j = 0; j < n; ++j) {
    for (std::size_t d = 0; d < 2; ++d) {
      base[j][d] = test::uniform(g, 0, shape[d] - 1);
      idx[j][d] = test::uniform(g, 0, 1) ? base[j][d] - shape[d] : base[j][d];
    }
    if (j > 0 && test::uniform(g, 0, 3) == 0) {  // a repeat
      base[j] = base[j - 1];
      idx[j] = idx[j - 1];
    }
  }
  return {idx, base};
}

}  // namespace

TEST_CASE_TEMPLATE("random mixed one-sided operations match a serial reference", T, std::int64_t, double) {
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  const std::uint64_t seed = test::shared_seed();
  CAPTURE(seed);
  test::Rng g(seed);
  const Index total = ops_from_env();
  Index done = 0;
  bool ok = true;
  while (done < total) {
    // A fresh random array every 500 operations: shapes, distributions, ghosts vary.
    const Shape<2> shape = test::random_shape<2>(g, 9);
    const auto dist = test::random_distribution<2>(g, shape, p);
    Shape<2> ghost{};
    if (test::uniform(g, 0, 2) == 0) ghost = {test::uniform(g, 0, 1), test::uniform(g, 0, 1)};
    garray::GlobalArray<T, 2> a(ctx, shape, dist, ghost), b(ctx, shape, dist, ghost);
    test::Reference<T, 2> ra(shape), rb(shape);
    for (Index phase = 0; phase < 50 && done < total; ++phase) {
      const int actor = static_cast<int>(phase % p);
      for (int j = 0; j < 10; ++j, ++done) {
        const bool act = me == actor;
        const int kind = static_cast<int>(test::uniform(g, 0, 8));
        // a fence after a write half the time: one rank's writes are ordered without it
        // (location consistency), so the reference is the same either way
        const bool fence = test::uniform(g, 0, 1) == 0;
        if (kind <= 4) {  // slice operations
          const auto rs = test::random_slice<2>(g, shape);
          const Index n = test::selected_count<2>(rs.ref);
          std::vector<T> buf(static_cast<std::size_t>(n));
          for (auto& v : buf) v = value_of<T>(g);
          const T alpha = static_cast<T>(test::uniform(g, -2, 2));
          const bool nb = test::uniform(g, 0, 2) == 0;
          if (kind <= 1) {  // get: compare with the reference now
            if (act) {
              std::vector<T> got(buf.size());
              if (nb) a.get_nb(rs.slice, std::span<T>(got)).wait();
              else a.get(rs.slice, std::span<T>(got));
              test::for_each_selected<2>(rs.ref, [&](const Shape<2>& i, Index k) {
                ok = ok && got[static_cast<std::size_t>(k)] == ra.at(i);
              });
            }
          } else if (kind <= 3) {  // put
            if (act) {
              if (nb) a.put_nb(rs.slice, std::span<const T>(buf)).wait();
              else a.put(rs.slice, std::span<const T>(buf));
              if (fence) a.fence();
            }
            test::for_each_selected<2>(rs.ref, [&](const Shape<2>& i, Index k) { ra.at(i) = buf[static_cast<std::size_t>(k)]; });
          } else {  // accumulate
            if (act) {
              if (nb) a.acc_nb(rs.slice, std::span<const T>(buf), alpha).wait();
              else a.accumulate(rs.slice, std::span<const T>(buf), alpha);
              if (fence) a.fence();
            }
            test::for_each_selected<2>(rs.ref, [&](const Shape<2>& i, Index k) {
              ra.at(i) += alpha * buf[static_cast<std::size_t>(k)];
            });
          }
        } else {  // index lists and read_inc
          auto [idx, base] = random_list(g, shape);
          std::vector<T> vals(idx.size());
          for (auto& v : vals) v = value_of<T>(g);
          if (kind == 5) {
            if (act) {
              std::vector<T> got(idx.size());
              a.gather(idx, std::span<T>(got));
              for (std::size_t q = 0; q < idx.size(); ++q) ok = ok && got[q] == ra.at(base[q]);
            }
          } else if (kind == 6) {
            if (act) {
              a.scatter(idx, vals);
              if (fence) a.fence();
            }
            for (std::size_t q = 0; q < idx.size(); ++q) ra.at(base[q]) = vals[q];  // the last one wins
          } else if (kind == 7) {
            if (act) {
              a.scatter_acc(idx, vals, T{2});
              if (fence) a.fence();
            }
            for (std::size_t q = 0; q < idx.size(); ++q) ra.at(base[q]) += T{2} * vals[q];
          } else if constexpr (std::is_integral_v<T>) {
            if (!idx.empty()) {
              if (act) {
                ok = ok && a.read_inc(idx[0], vals[0]) == ra.at(base[0]);
                if (fence) a.fence();
              }
              ra.at(base[0]) += vals[0];
            }
          }
        }
      }
      // Concurrently on B: every rank's commutative operations (all drawn by every rank).
      for (int r = 0; r < p; ++r) {
        for (int j = 0; j < 3; ++j) {
          const int kind = static_cast<int>(test::uniform(g, 0, 3));
          auto [idx, base] = random_list(g, shape);
          std::vector<T> vals(idx.size());
          for (auto& v : vals) v = value_of<T>(g);
          const bool mine = r == me;
          if (kind == 0 && !idx.empty()) {  // one element by accumulate
            const Shape<2>& i = base[0];
            if (mine) b.accumulate(garray::idx[i[0]][i[1]], std::span<const T>(vals.data(), 1), T{3});
            rb.at(i) += T{3} * vals[0];
          } else if (kind == 1) {
            if (mine) b.scatter_acc(idx, vals);
            for (std::size_t q = 0; q < idx.size(); ++q) rb.at(base[q]) += vals[q];
          } else if (kind == 2 && !idx.empty()) {
            const Shape<2>& i = base[0];
            if (mine) b.acc_nb(garray::idx[garray::range(i[0], i[0] + 1)][i[1]], std::span<const T>(vals.data(), 1)).wait();
            rb.at(i) += vals[0];
          } else if constexpr (std::is_integral_v<T>) {
            if (!idx.empty()) {
              if (mine) (void)b.read_inc(idx[0], vals[0]);
              rb.at(base[0]) += vals[0];
            }
          }
        }
      }
      a.sync();
      b.sync();
      if (phase % 10 == 9) ok = test::equal_on_all_ranks(a, ra) && test::equal_on_all_ranks(b, rb) && ok;
    }
    ok = test::equal_on_all_ranks(a, ra) && test::equal_on_all_ranks(b, rb) && ok;
    GARRAY_TEST_REQUIRE_ALL(ok);
  }
}
