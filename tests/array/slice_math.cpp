// Serial: slice normalisation and composition against the brute-force numpy reference.
#include "support/test_support.hpp"

#include <garray/array/detail/transfer_plan.hpp>

using garray::_;
using garray::all;
using garray::idx;
using garray::range;
using garray::Section;
using garray::Shape;

namespace {

// Expands a section back into per-dimension base index lists.
template <std::size_t N>
std::array<std::vector<test::Index>, N> expand(const Section<N>& s) {
  std::array<std::vector<test::Index>, N> r;
  for (std::size_t d = 0; d < N; ++d)
    for (test::Index k = 0; k < s.count[d]; ++k) r[d].push_back(s.start[d] + k * s.step[d]);
  return r;
}

}  // namespace

TEST_CASE("normalize matches numpy on hand-picked cases") {
  const Shape<1> n10{10};
  auto check = [&](auto slice, std::vector<test::Index> want) {
    const auto s = garray::normalize(n10, slice);
    CHECK(expand(s)[0] == want);
  };
  check(idx[range(1, -1)], {1, 2, 3, 4, 5, 6, 7, 8});
  check(idx[range(_, _, -1)], {9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  check(idx[range(_, _, -3)], {9, 6, 3, 0});
  check(idx[range(8, 2, -2)], {8, 6, 4});
  check(idx[range(-100, 100)], {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  check(idx[range(100, -100, -4)], {9, 5, 1});
  check(idx[range(5, 5)], {});
  check(idx[range(7, 2)], {});
  check(idx[range(-3, _)], {7, 8, 9});
  check(idx[range(_, -20, -1)], {9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  check(idx[all], {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  const auto s = garray::normalize(n10, idx[-1]);
  CHECK(s.dropped[0]);
  CHECK(s.start[0] == 9);
  CHECK(s.rank() == 0);
}

TEST_CASE("normalize matches the brute-force numpy reference on random cases") {
  test::Rng g(test::shared_seed());
  for (int iter = 0; iter < 20000; ++iter) {
    const test::Index len = test::uniform(g, 0, 12);
    const auto it = test::random_item(g, len, len > 0);
    INFO("len=" << len << " start=" << (it.start ? std::to_string(*it.start) : "_")
                << " stop=" << (it.stop ? std::to_string(*it.stop) : "_") << " step=" << it.step
                << " index=" << it.is_index << ":" << it.value);
    garray::Slice<1, 1> sl;
    sl.items[0] = test::to_item(it);
    const auto s = garray::normalize(Shape<1>{len}, sl);
    CHECK(expand(s)[0] == test::ref_indices(it, len));
    CHECK(s.dropped[0] == it.is_index);
  }
}

TEST_CASE("composition of random slice chains equals applying them in order") {
  test::Rng g(test::shared_seed() + 1);
  for (int iter = 0; iter < 3000; ++iter) {
    const auto shape = test::random_shape<3>(g, 9);
    Section<3> sec = Section<3>::full(shape);
    // Reference: the explicit base-index list of every kept dimension.
    std::array<std::vector<test::Index>, 3> ref;
    std::array<bool, 3> dropped{};
    for (std::size_t d = 0; d < 3; ++d)
      for (test::Index i = 0; i < shape[d]; ++i) ref[d].push_back(i);
    const int chain = static_cast<int>(test::uniform(g, 1, 4));
    for (int c = 0; c < chain; ++c) {
      garray::Slice<3, 3> sl;  // runtime items; only the first `kept` are used
      std::size_t kept = 0;
      for (std::size_t d = 0; d < 3; ++d) kept += dropped[d] ? 0 : 1;
      if (kept == 0) break;
      std::size_t j = 0;
      for (std::size_t d = 0; d < 3; ++d) {
        if (dropped[d]) continue;
        const auto len = static_cast<test::Index>(ref[d].size());
        const auto it = test::random_item(g, len, len > 0);
        sl.items[j++] = test::to_item(it);
        std::vector<test::Index> next;
        for (auto pos : test::ref_indices(it, len)) next.push_back(ref[d][static_cast<std::size_t>(pos)]);
        ref[d] = next;
        if (it.is_index) dropped[d] = true;
      }
      // compose with exactly `kept` items
      switch (kept) {
        case 1: {
          garray::Slice<1, 1> s1;
          s1.items[0] = sl.items[0];
          sec = garray::compose(sec, s1);
          break;
        }
        case 2: {
          garray::Slice<2, 2> s2;
          s2.items = {sl.items[0], sl.items[1]};
          sec = garray::compose(sec, s2);
          break;
        }
        default: sec = garray::compose(sec, sl);
      }
    }
    const auto got = expand(sec);
    bool same = true;
    for (std::size_t d = 0; d < 3; ++d) {
      same = same && sec.dropped[d] == dropped[d];
      // an empty selection in any dimension makes the whole selection empty
      if (sec.size() > 0) same = same && got[d] == ref[d];
    }
    if (sec.size() == 0) same = same && test::selected_count<3>(ref) == 0;
    CHECK(same);
  }
}

TEST_CASE("bad slices throw the documented errors") {
  const Shape<2> s{4, 5};
  CHECK_THROWS_AS(garray::normalize(s, idx[range(0, 3, 0)]), garray::InvalidSlice);
  CHECK_THROWS_AS(garray::normalize(s, idx[4]), garray::BoundsError);
  CHECK_THROWS_AS(garray::normalize(s, idx[-5]), garray::BoundsError);
  CHECK_THROWS_AS(garray::normalize(s, idx[all][5]), garray::BoundsError);
  CHECK_NOTHROW(garray::normalize(s, idx[-4][-5]));
  try {
    garray::normalize(s, idx[all][7], "GlobalArray<double,2>::get");
    CHECK(false);
  } catch (const garray::BoundsError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("GlobalArray<double,2>::get") != std::string::npos);
    CHECK(msg.find("index 7") != std::string::npos);
    CHECK(msg.find("dim 1") != std::string::npos);
    CHECK(msg.find("[rank ") != std::string::npos);
  }
  // composing onto a view with fewer kept dims than items
  auto row = garray::normalize(s, idx[2]);
  CHECK_THROWS_AS(garray::compose(row, idx[1][1]), garray::InvalidSlice);
}

TEST_CASE("k_range selects exactly the section elements inside a block") {
  test::Rng g(test::shared_seed() + 2);
  for (int iter = 0; iter < 20000; ++iter) {
    const test::Index len = test::uniform(g, 1, 30);
    const auto it = test::random_item(g, len, false);
    garray::Slice<1, 1> sl;
    sl.items[0] = test::to_item(it);
    const auto s = garray::normalize(Shape<1>{len}, sl);
    const test::Index lo = test::uniform(g, 0, len), hi = test::uniform(g, lo, len);
    const auto [k0, k1] = garray::detail::k_range(s.start[0], s.step[0], s.count[0], lo, hi);
    std::vector<test::Index> want, got;
    for (test::Index k = 0; k < s.count[0]; ++k) {
      const auto i = s.start[0] + k * s.step[0];
      if (i >= lo && i < hi) want.push_back(k);
    }
    for (auto k = k0; k < k1; ++k) got.push_back(k);
    CHECK(got == want);
  }
}

TEST_CASE("ellipsis stands for the dimensions the other items leave, as in numpy") {
  using garray::ellipsis;
  const Shape<3> s{4, 5, 6};
  auto n = [&](auto sl) { return garray::normalize(s, sl); };
  CHECK(n(idx[ellipsis][2]) == n(idx[all][all][2]));
  CHECK(n(idx[1][ellipsis]) == n(idx[1][all][all]));
  CHECK(n(idx[1][ellipsis]) == n(idx[1]));
  CHECK(n(idx[1][ellipsis][range(0, 2)]) == n(idx[1][all][range(0, 2)]));
  CHECK(n(idx[ellipsis]) == Section<3>::full(s));
  CHECK(n(idx[ellipsis][1][2][3]) == n(idx[1][2][3]));
  CHECK(n(idx[range(_, _, -1)][ellipsis][-1]) == n(idx[range(_, _, -1)][all][-1]));
  CHECK_THROWS_AS(n(idx[ellipsis][0][ellipsis]), garray::InvalidSlice);
  // on a view: the ellipsis covers the view's kept dimensions only
  const auto row = n(idx[2]);  // 2 kept dims
  CHECK(garray::compose(row, idx[ellipsis][-1]) == n(idx[2][all][-1]));
  // random: an ellipsis anywhere equals padding with `all` at that place
  test::Rng g(test::shared_seed() + 3);
  for (int iter = 0; iter < 2000; ++iter) {
    const auto shape = test::random_shape<3>(g, 6);
    const auto k = static_cast<std::size_t>(test::uniform(g, 0, 3));  // items given explicitly
    const auto at = static_cast<std::size_t>(test::uniform(g, 0, static_cast<test::Index>(k)));
    std::array<garray::SliceItem, 3> its{};
    for (std::size_t q = 0; q < k; ++q) its[q] = test::to_item(test::random_item(g, shape[q < at ? q : 3 - k + q], true));
    garray::Slice<3, 3> padded;  // items with `all` filling the ellipsis' place
    for (std::size_t d = 0; d < 3; ++d) {
      if (d < at) padded.items[d] = its[d];
      else if (d >= 3 - (k - at)) padded.items[d] = its[d - (3 - k)];
      else padded.items[d] = garray::SliceItem{};
    }
    bool same = true;
    auto with_ellipsis = [&](auto sl) {
      for (std::size_t q = 0; q < k; ++q) sl.items[q] = its[q];
      sl.ellipsis_at = static_cast<int>(at);
      return sl;
    };
    try {
      const auto want = garray::normalize(shape, padded);
      switch (k) {
        case 0: same = garray::normalize(shape, with_ellipsis(garray::Slice<0, 0>{})) == want; break;
        case 1: same = garray::normalize(shape, with_ellipsis(garray::Slice<1, 1>{})) == want; break;
        case 2: same = garray::normalize(shape, with_ellipsis(garray::Slice<2, 2>{})) == want; break;
        default: same = garray::normalize(shape, with_ellipsis(garray::Slice<3, 3>{})) == want; break;
      }
    } catch (const garray::Error&) {
      same = false;
    }
    CHECK(same);
  }
}
