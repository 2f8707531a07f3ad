#pragma once
// Distribution<N>: how an N-d array is cut into one block per rank.
//
// A Cartesian process grid procs[0] x ... x procs[N-1] and, per dimension, block
// boundaries bounds[d][0] = 0 <= ... <= bounds[d][procs[d]] = shape[d]. Grid coordinates
// map to ranks in row-major order; ranks beyond the grid own nothing. Blocks may be empty
// (more ranks than rows, irregular boundaries with repeats): owning nothing is normal.
//
//   blocked() over 4 ranks, 6x8:      slab(1) over 3 ranks, 6x8:
//     +-------+-------+                 +----+---+---+
//     |  r0   |  r1   |  rows 0-2       |    |   |   |
//     +-------+-------+                 | r0 |r1 |r2 |
//     |  r2   |  r3   |  rows 3-5       |    |   |   |
//     +-------+-------+                 +----+---+---+
//
// A Distribution is first a *spec* (blocked / slab / grid / irregular) and becomes a full
// map when resolved against a shape and a rank count, which GlobalArray does on creation.
// Pure index math, no MPI.

#include <garray/array/box.hpp>
#include <garray/runtime/context.hpp>
#include <garray/runtime/error.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace garray {

/// How an N-d array is cut into one block per rank: a Cartesian process grid (row-major
/// grid coordinates -> ranks; ranks beyond the grid own nothing) and per-dimension block
/// boundaries. First a *spec* (blocked(), slab(), grid(), irregular(), replicated()); the
/// GlobalArray constructor resolves it against the shape and the context's rank count.
/// Every member is Local: pure index math, no MPI.
template <std::size_t N>
class Distribution {
 public:
  /// Which spec this distribution was made from.
  enum class Kind {
    blocked,    ///< balanced grid over all dimensions (the default)
    slab,       ///< all ranks along one axis
    grid,       ///< an explicit process grid
    irregular,  ///< explicit block starts per dimension
    replicated  ///< every rank holds the whole array
  };

  /// Local. Balanced grid over all dimensions, blocks as square as possible (the default,
  /// as GA; the grid balanced_grid() picks).
  static Distribution blocked() { return Distribution(Kind::blocked); }
  /// Local. All ranks along dimension `axis`, one slab each (caput / MpiArray style);
  /// resolving throws InvalidArgument if `axis` >= N.
  static Distribution slab(std::size_t axis) {
    Distribution d(Kind::slab);
    d.axis_ = axis;
    return d;
  }
  /// Local. An explicit process grid (pencils); the product may be less than the rank
  /// count (the remaining ranks own nothing); resolving throws InvalidArgument if it is
  /// larger or a dimension is < 1.
  static Distribution grid(std::array<int, N> procs) {
    Distribution d(Kind::grid);
    d.procs_ = procs;
    return d;
  }
  /// Local. Irregular blocks: per dimension the start of every block (GA's `map`), first 0,
  /// non-decreasing, at most the extent (repeats make empty blocks); the grid has
  /// starts[d].size() blocks along d. Checked when resolved (InvalidArgument).
  static Distribution irregular(std::array<std::vector<Index>, N> starts) {
    Distribution d(Kind::irregular);
    for (std::size_t k = 0; k < N; ++k) {
      d.procs_[k] = static_cast<int>(starts[k].size());
      d.bounds_[k] = std::move(starts[k]);
    }
    return d;
  }

  /// Local. Every rank holds the whole array (D2O's `not`): reads are local, writes through the
  /// library go to every copy. As a map it is a 1-block grid whose block every rank holds:
  /// block(r) is the whole array for every rank, owner() names rank 0's copy.
  static Distribution replicated() { return Distribution(Kind::replicated); }

  Kind kind() const noexcept { return kind_; }  ///< Local. The spec it was made from.
  /// Local. True for replicated().
  bool is_replicated() const noexcept { return kind_ == Kind::replicated; }
  /// Local. True once resolve() made the full map (the queries below need it).
  bool resolved() const noexcept { return resolved_; }

  /// Local (pure index math). Returns the full map of this spec for `shape` over `nranks`
  /// ranks; this object is unchanged. A resolved map resolves as the spec it was made from (an
  /// irregular map by its block starts), so a.distribution() makes an array with a's blocks. Throws
  /// InvalidArgument naming `what` for a negative extent, a shape with more elements than int64 holds, or a
  /// spec that does not fit.
  Distribution resolve(const Shape<N>& shape, int nranks, std::string_view what) const {
    Distribution r = *this;
    r.shape_ = shape;
    r.nranks_ = nranks;
    Index elements = 1;
    for (std::size_t d = 0; d < N; ++d) {
      if (shape[d] < 0) detail::raise<InvalidArgument>(what, ": negative extent ", shape[d], " in dim ", d);
      if (__builtin_mul_overflow(elements, shape[d], &elements))
        detail::raise<InvalidArgument>(what, ": shape ", detail::seq(shape), " has more elements than int64 holds");
    }
    switch (kind_) {
      case Kind::blocked: r.procs_ = balanced_grid(shape, nranks); break;
      case Kind::slab:
        if (axis_ >= N) detail::raise<InvalidArgument>(what, ": slab axis ", axis_, " for a ", N, "-d array");
        r.procs_.fill(1);
        r.procs_[axis_] = nranks;
        break;
      case Kind::grid:
      case Kind::irregular: break;
      case Kind::replicated: r.procs_.fill(1); break;
    }
    std::int64_t p = 1;
    bool overflow = false;  // the grid's product does not fit an int64 (grids read from files)
    for (std::size_t d = 0; d < N; ++d) {
      if (r.procs_[d] < 1)
        detail::raise<InvalidArgument>(what, ": process grid ", detail::seq(r.procs_), " has a dimension < 1");
      overflow = overflow || __builtin_mul_overflow(p, r.procs_[d], &p);
    }
    if (overflow)
      detail::raise<InvalidArgument>(what, ": process grid ", detail::seq(r.procs_),
                                     " needs more ranks than an int64 counts; the group has ", nranks);
    if (p > nranks)
      detail::raise<InvalidArgument>(what, ": process grid ", detail::seq(r.procs_), " needs ", p,
                                     " ranks but the group has ", nranks);
    for (std::size_t d = 0; d < N; ++d) {
      auto& b = r.bounds_[d];
      if (kind_ == Kind::irregular) {
        if (resolved_) b.pop_back();  // a resolved map: back to its block starts (then re-checked)
        if (b.empty() || b.front() != 0)
          detail::raise<InvalidArgument>(what, ": irregular block starts in dim ", d, " must begin with 0");
        for (std::size_t i = 1; i < b.size(); ++i)
          if (b[i] < b[i - 1] || b[i] > shape[d])
            detail::raise<InvalidArgument>(what, ": irregular block starts ", detail::seq(b), " in dim ", d,
                                           " must be non-decreasing and <= extent ", shape[d]);
        b.push_back(shape[d]);
      } else {
        b = balanced_bounds(shape[d], r.procs_[d]);
      }
    }
    r.nblocks_ = static_cast<int>(p);
    r.grid_strides_ = grid_strides(r.procs_);
    r.resolved_ = true;
    return r;
  }

  // ---- queries on a resolved distribution (all Local, pure arithmetic) ----------------
  /// Local. The shape it was resolved for.
  const Shape<N>& shape() const noexcept { return shape_; }
  /// Local. The process grid: number of blocks along each dimension.
  const std::array<int, N>& procs() const noexcept { return procs_; }
  /// Local. The rank count it was resolved for.
  int nranks() const noexcept { return nranks_; }
  /// Local. Ranks that own a (possibly empty) block of the grid; ranks >= nblocks() own nothing.
  int nblocks() const noexcept { return nblocks_; }
  /// Local. Block boundaries along d: procs()[d] + 1 values from 0 to shape()[d].
  const std::vector<Index>& bounds(std::size_t d) const noexcept { return bounds_[d]; }

  /// Local. Grid coordinates of `rank` (rank < nblocks()).
  std::array<int, N> coords(int rank) const noexcept {
    std::array<int, N> c{};
    for (std::size_t d = 0; d < N; ++d) {
      c[d] = rank / grid_strides_[d];
      rank -= c[d] * grid_strides_[d];
    }
    return c;
  }
  /// Local. The rank at grid coordinates `c` (the inverse of coords()).
  int rank_of(const std::array<int, N>& c) const noexcept {
    int r = 0;
    for (std::size_t d = 0; d < N; ++d) r += c[d] * grid_strides_[d];
    return r;
  }
  /// Local. The block owned by `rank` (empty for ranks outside the grid; the whole array for every
  /// rank of a replicated distribution).
  Box<N> block(int rank) const noexcept {
    Box<N> b;
    if (kind_ == Kind::replicated && rank >= 0 && rank < nranks_) rank = 0;
    if (rank < 0 || rank >= nblocks_) return b;
    const auto c = coords(rank);
    for (std::size_t d = 0; d < N; ++d) {
      b.lo[d] = bounds_[d][static_cast<std::size_t>(c[d])];
      b.hi[d] = bounds_[d][static_cast<std::size_t>(c[d]) + 1];
    }
    return b;
  }
  /// Local. Grid coordinate along d of the block holding index i (0 <= i < shape[d]).
  GARRAY_DETAIL_INLINE int coord_of(std::size_t d, Index i) const noexcept {
    const auto& b = bounds_[d];
    // Last block whose start is <= i: skips empty blocks that start at the same index.
    return static_cast<int>(std::upper_bound(b.begin(), b.end() - 1, i) - b.begin()) - 1;
  }
  /// Local. Rank stride of grid dimension d (rank = sum_d coord[d] * grid_stride(d)).
  int grid_stride(std::size_t d) const noexcept { return grid_strides_[d]; }
  /// Local. The rank owning global index `i` (which must be inside the shape; rank 0's
  /// copy for a replicated distribution).
  int owner(const Shape<N>& i) const noexcept {
    int r = 0;
    for (std::size_t d = 0; d < N; ++d) r += coord_of(d, i[d]) * grid_strides_[d];
    return r;
  }
  /// Local. Calls f(rank, block) for every non-empty block intersecting `box`, in row-major
  /// grid order. Walks grid
  /// coordinates, so no rank -> coordinate divisions on this (hot) path.
  template <class F>
  void for_each_block(const Box<N>& box, F&& f) const {
    if (box.empty()) return;
    std::array<int, N> c0{}, c1{}, c{};
    for (std::size_t d = 0; d < N; ++d) {
      c0[d] = coord_of(d, box.lo[d]);
      c1[d] = coord_of(d, box.hi[d] - 1);
    }
    c = c0;
    while (true) {
      Box<N> b;
      int r = 0;
      for (std::size_t d = 0; d < N; ++d) {
        const auto k = static_cast<std::size_t>(c[d]);
        b.lo[d] = bounds_[d][k];
        b.hi[d] = bounds_[d][k + 1];
        r += c[d] * grid_strides_[d];
      }
      if (!intersect(b, box).empty()) f(r, b);
      std::size_t d = N;
      while (d > 0) {
        --d;
        if (++c[d] <= c1[d]) break;
        c[d] = c0[d];
        if (d == 0) return;
      }
    }
  }

  /// Local. A hash of the resolved map (replicated or not, shape, every block boundary),
  /// equal on ranks that agree on it and for specs that resolve to the same blocks (slab(0),
  /// grid({p}) and blocked() of a 1-D array): the array cache's key and collective
  /// signatures use it.
  std::uint64_t signature() const noexcept {
    std::uint64_t h = detail::hash_mix(0x51ed, is_replicated() ? 1 : 0);
    for (std::size_t d = 0; d < N; ++d) {
      h = detail::hash_mix(h, static_cast<std::uint64_t>(shape_[d]));
      for (auto v : bounds_[d]) h = detail::hash_mix(h, static_cast<std::uint64_t>(v));
    }
    return h;
  }
  /// Local. "blocked grid [2, 2]" etc. for messages (the grid only once resolved).
  std::string describe() const {
    std::ostringstream os;
    const char* names[] = {"blocked", "slab", "grid", "irregular", "replicated"};
    os << names[static_cast<int>(kind_)];
    if (resolved_) os << " grid " << detail::seq(procs_);
    return os.str();
  }

  /// Local. Returns the p + 1 boundaries of a balanced split of n into p blocks: the first n % p blocks get one more element.
  static std::vector<Index> balanced_bounds(Index n, int p) {
    std::vector<Index> b(static_cast<std::size_t>(p) + 1);
    const Index q = n / p, rem = n % p;
    for (int i = 0; i <= p; ++i) b[static_cast<std::size_t>(i)] = i * q + std::min<Index>(i, rem);
    return b;
  }

  /// Local. Returns the process grid `blocked()` picks: among all factorisations of nranks into N factors,
  /// the one with the smallest largest block, then the smallest block surface, then the most
  /// ranks on the leading dimensions (so 2-d arrays prefer row slabs on ties).
  static std::array<int, N> balanced_grid(const Shape<N>& shape, int nranks) {
    std::array<int, N> best{}, cur{};
    best.fill(1);
    if constexpr (N == 0) return best;
    best[0] = nranks;
    double best_vol = std::numeric_limits<double>::max(), best_surf = best_vol;
    auto score = [&](const std::array<int, N>& p, double& vol, double& surf) {
      std::array<double, N> b{};
      vol = 1;
      for (std::size_t d = 0; d < N; ++d) {
        b[d] = static_cast<double>(detail_ceil(shape[d], p[d]));
        vol *= b[d];
      }
      surf = 0;
      for (std::size_t d = 0; d < N; ++d) surf += b[d] > 0 ? vol / b[d] : 0;
    };
    auto visit = [&](auto&& self, std::size_t d, int rem) -> void {
      if (d + 1 == N) {
        cur[d] = rem;
        double v, s;
        score(cur, v, s);
        if (v < best_vol || (v == best_vol && s < best_surf)) {
          best = cur;
          best_vol = v;
          best_surf = s;
        }
        return;
      }
      for (int f = rem; f >= 1; --f) {  // larger factors first: earlier dims win ties
        if (rem % f) continue;
        cur[d] = f;
        self(self, d + 1, rem / f);
      }
    };
    visit(visit, 0, nranks);
    return best;
  }

 private:
  explicit Distribution(Kind k) : kind_(k) { procs_.fill(1); }
  static Index detail_ceil(Index n, int p) {
    return n / p + (n % p != 0 ? 1 : 0);
  }  // no n + p - 1: n may be near the maximum
  static std::array<int, N> grid_strides(const std::array<int, N>& p) {
    std::array<int, N> s{};
    int acc = 1;
    for (std::size_t d = N; d-- > 0;) {
      s[d] = acc;
      acc *= p[d];
    }
    return s;
  }

  Kind kind_;
  std::size_t axis_ = 0;
  bool resolved_ = false;
  Shape<N> shape_{};
  int nranks_ = 0;
  int nblocks_ = 0;
  std::array<int, N> procs_{};
  std::array<int, N> grid_strides_{};
  std::array<std::vector<Index>, N> bounds_{};
};

}  // namespace garray
