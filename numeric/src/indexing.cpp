// The rank-local parts of advanced indexing (indexing.hpp) that do not depend on the
// operands' types, compiled once into libgarray_numeric.
#include <garray/numeric/indexing.hpp>

#include <algorithm>
#include <utility>

namespace garray::detail {

MaskCounts count_mask(const Context& ctx, Index mine) {
  MaskCounts c;
  c.mine = mine;
  std::vector<std::int64_t> all(static_cast<std::size_t>(ctx.size()));
  const std::int64_t m64 = mine;
  check_mpi(MPI_Allgather(&m64, 1, MPI_INT64_T, all.data(), 1, MPI_INT64_T, ctx.comm()), "MPI_Allgather");
  for (int r = 0; r < ctx.size(); ++r) {
    if (r < ctx.rank()) c.offset += all[static_cast<std::size_t>(r)];
    c.total += all[static_cast<std::size_t>(r)];
  }
  return c;
}

struct RepeatMarks::State {
  State(const Context& ctx, Index size) : me(ctx.rank()), marks(ctx, Shape<1>{size}) {}
  int me;
  GlobalArray<std::int64_t, 1> marks;  // 2^r summed over the ranks r writing each target
  std::vector<Shape<1>> distinct;      // this rank's distinct targets
  std::vector<std::uint32_t> group;    // position j -> its target's entry in distinct
};

namespace {
/// Test builds: fault point "put.marks", armed on **every** rank, makes the next put take
/// the rank-order path it takes beyond 62 ranks (so the suite at 2-4 ranks runs it too).
/// Armed on some ranks only, the ranks would take different paths: never do that.
bool rank_order_forced() {
  try {
    fault_point("put.marks");
    return false;
  } catch (...) {
    return true;
  }
}
}  // namespace

RepeatMarks::RepeatMarks(const Context& ctx, Index size, Index total) {
  const int p = ctx.size();
  if (p > 1 && p <= 62 && total / p + 1 < (Index{1} << 32) && !rank_order_forced())
    state_ = std::make_unique<State>(ctx, size);
}

RepeatMarks::~RepeatMarks() = default;

void RepeatMarks::group(const std::vector<Index>& target) {
  State& s = *state_;
  const std::size_t cnt = target.size();
  std::vector<std::pair<Index, std::uint32_t>> tj(cnt);
  for (std::size_t j = 0; j < cnt; ++j) tj[j] = {target[j], static_cast<std::uint32_t>(j)};
  std::sort(tj.begin(), tj.end());
  s.group.resize(cnt);
  for (std::size_t q = 0; q < cnt; ++q) {
    if (q == 0 || tj[q].first != tj[q - 1].first) s.distinct.push_back(Shape<1>{tj[q].first});
    s.group[tj[q].second] = static_cast<std::uint32_t>(s.distinct.size() - 1);
  }
}

void RepeatMarks::mark() {
  State& s = *state_;
  if (s.distinct.empty()) return;
  const std::vector<std::int64_t> bit(s.distinct.size(), std::int64_t{1} << s.me);
  s.marks.scatter_acc(s.distinct, bit);
  s.marks.fence();
}

std::vector<char> RepeatMarks::keep() {
  State& s = *state_;
  std::vector<std::int64_t> seen(s.distinct.size());
  if (!s.distinct.empty()) s.marks.gather(s.distinct, std::span<std::int64_t>(seen));
  std::vector<char> k(s.group.size());
  for (std::size_t j = 0; j < k.size(); ++j)
    k[j] = (static_cast<std::uint64_t>(seen[s.group[j]]) >> (s.me + 1)) == 0;
  return k;
}

}  // namespace garray::detail
