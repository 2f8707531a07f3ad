#pragma once
// The owner-computes engine, part 1 of 3 (detail/engine.hpp has the overview): where an
// operand's elements come from. Slots (a bound pointer + strides), the per-thread scratch
// arena, the section/box arithmetic of pieces, and the leaf sources: LocalSource (a local
// multi_array), ViewSource (a view read in place or fetched per sub-box), BroadcastSource
// (a view under NumPy's broadcasting map) and FetchGroup (one snapshot of an aliasing
// array's region).

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <vector>
#include <garray/array/detail/transfer_plan.hpp>
#include <garray/array/global_array.hpp>
#include <garray/numeric/expr.hpp>
#include <garray/runtime/context.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/fault.hpp>

namespace garray::detail {

inline constexpr std::size_t max_dims = 16;

/// A bound operand: element k of the iteration space is at ptr + sum_d k[d] * str[d].
struct Slot {
  const void* ptr = nullptr;
  std::array<Index, max_dims> str{};
};

/// Largest scratch memory a thread keeps between calls (more is freed at the end of a call).
inline constexpr std::size_t scratch_keep_bytes = std::size_t{1} << 30;
/// Most sub-boxes a piece is split into (cuts beyond are dropped, innermost dims first).
inline constexpr std::size_t max_sub_boxes = 4096;

/// Bump allocator for fetched data: uninitialised, 64-byte aligned chunks. reset() ends
/// every allocation and merges the chunks into one, so the next call of the same size
/// allocates nothing. Local, not thread-safe (one per thread, see ScratchLease).
class ScratchArena {
 public:
  void* alloc(std::size_t bytes) {
    bytes = (bytes + 63) & ~std::size_t{63};
    for (; cur_ < chunks_.size(); ++cur_) {
      Chunk& c = chunks_[cur_];
      if (c.cap - c.used >= bytes) {
        void* r = c.base + c.used;
        c.used += bytes;
        return r;
      }
    }
    std::size_t cap = bytes;
    for (const auto& c : chunks_) cap = std::max(cap, c.cap);
    chunks_.push_back(make(cap));
    cur_ = chunks_.size() - 1;
    chunks_.back().used = bytes;
    return chunks_.back().base;
  }
  template <class T>
  T* alloc_array(std::size_t n) {
    return static_cast<T*>(alloc(n * sizeof(T)));
  }
  void reset() {
    std::size_t total = 0;
    for (const auto& c : chunks_) total += c.cap;
    if (chunks_.size() > 1 || total > scratch_keep_bytes) {
      chunks_.clear();
      if (total <= scratch_keep_bytes) chunks_.push_back(make(total));
    }
    for (auto& c : chunks_) c.used = 0;
    cur_ = 0;
  }

 private:
  struct Chunk {
    std::unique_ptr<std::byte[]> mem;
    std::byte* base = nullptr;
    std::size_t cap = 0, used = 0;
  };
  static Chunk make(std::size_t cap) {
    Chunk c;
    c.mem.reset(new std::byte[cap + 64]);  // default-initialised: no zero fill
    const auto addr = reinterpret_cast<std::uintptr_t>(c.mem.get());
    c.base = c.mem.get() + ((64 - addr % 64) % 64);
    c.cap = cap;
    return c;
  }
  std::vector<Chunk> chunks_;
  std::size_t cur_ = 0;
};

/// The thread's arena, taken lazily by a Plan for one call; a nested call gets its own.
class ScratchLease {
 public:
  ScratchLease() = default;
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  ~ScratchLease() {
    if (!arena_) return;
    arena_->reset();
    if (!own_) tls().busy = false;
  }
  ScratchArena& get() {
    if (!arena_) {
      auto& t = tls();
      if (!t.busy) {
        t.busy = true;
        arena_ = &t.arena;
      } else {
        own_ = std::make_unique<ScratchArena>();
        arena_ = own_.get();
      }
    }
    return *arena_;
  }

 private:
  struct Tls {
    ScratchArena arena;
    bool busy = false;
  };
  static Tls& tls() {
    thread_local Tls t;
    return t;
  }
  ScratchArena* arena_ = nullptr;
  std::unique_ptr<ScratchArena> own_;
};

/// True if progressions {s1 + k t1, k < c1} and {s2 + j t2, j < c2} share an element.
inline bool progressions_meet(Index s1, Index t1, Index c1, Index s2, Index t2, Index c2) noexcept {
  if (c1 == 0 || c2 == 0) return false;
  if (c1 > c2) {
    std::swap(s1, s2);
    std::swap(t1, t2);
    std::swap(c1, c2);
  }
  for (Index k = 0; k < c1; ++k) {
    const Index x = s1 + k * t1 - s2;
    if (x % t2 != 0) continue;
    const Index j = x / t2;
    if (j >= 0 && j < c2) return true;
  }
  return false;
}

/// True if two sections of the same array select a common element (exact).
template <std::size_t N>
bool sections_overlap(const Section<N>& a, const Section<N>& b) noexcept {
  for (std::size_t d = 0; d < N; ++d)
    if (!progressions_meet(a.start[d], a.step[d], a.count[d], b.start[d], b.step[d], b.count[d]))
      return false;
  return true;
}

/// True if every rank holds the whole array (a replicated distribution).
template <class A>
bool holds_everything(const A& a) {
  return a.context().size() > 1 && !a.box_of(0).empty() && a.box_of(0) == a.box_of(1);
}

/// The part of `sec` (an M-dim selection of an N-d array) inside `box`, as a box [k0, k1)
/// of the selection's index space. Empty if any dimension misses.
template <std::size_t N, std::size_t M>
bool owned_piece(const Section<N>& sec, const Box<N>& box, Shape<M>& k0, Shape<M>& k1) {
  if (box.empty()) return false;
  std::size_t j = 0;
  bool any = true;
  for (std::size_t d = 0; d < N; ++d) {
    const auto [a, b] = k_range(sec.start[d], sec.step[d], sec.count[d], box.lo[d], box.hi[d]);
    if (b <= a) any = false;
    if (sec.dropped[d]) continue;
    if (j < M) {
      k0[j] = a;
      k1[j] = b;
    }
    ++j;
  }
  return any;
}

/// The sub-section of `sec` whose kept dimensions are restricted to [k0, k1).
template <std::size_t N, std::size_t M>
Section<N> piece_section(const Section<N>& sec, const Shape<M>& k0, const Shape<M>& k1) {
  Section<N> p = sec;
  std::size_t j = 0;
  for (std::size_t d = 0; d < N; ++d) {
    if (sec.dropped[d]) continue;
    p.start[d] = sec.start[d] + k0[j] * sec.step[d];
    p.count[d] = k1[j] - k0[j];
    ++j;
  }
  return p;
}

/// Binds slot `s` to selection `p` stored in a dense row-major buffer holding region `r`
/// (p's elements are elements of r).
template <std::size_t N>
void map_into(const Section<N>& r, const void* buf, std::size_t elem, const Section<N>& p, Slot& s) {
  const Shape<N> rs = row_major_strides(r.count);
  Index off = 0;
  std::size_t j = 0;
  for (std::size_t d = 0; d < N; ++d) {
    off += (p.start[d] - r.start[d]) / r.step[d] * rs[d];
    if (!p.dropped[d]) s.str[j++] = p.step[d] / r.step[d] * rs[d];
  }
  s.ptr = static_cast<const std::byte*>(buf) + off * static_cast<Index>(elem);
}

/// Where one leaf's data is: bound to a Slot per sub-box of the piece.
template <std::size_t M>
struct LeafSource {
  virtual ~LeafSource() = default;
  /// Adds this leaf's owner-boundary cuts strictly inside (k0[j], k1[j]) to cuts[j].
  virtual void add_cuts(const Shape<M>&, const Shape<M>&, std::array<std::vector<Index>, M>&) const {}
  /// Binds `s` to sub-box [b0, b1) of the piece; may fetch that sub-piece (one get).
  virtual void bind(const Shape<M>& b0, const Shape<M>& b1, Slot& s, ScratchArena& sc) const = 0;
};

/// A local (replicated) array: element k at base + sum_d k[d] * str[d] elements.
template <class T, std::size_t M>
struct LocalSource final : LeafSource<M> {
  const T* base = nullptr;
  Shape<M> str{};
  void bind(const Shape<M>& b0, const Shape<M>&, Slot& s, ScratchArena&) const override {
    Index off = 0;
    for (std::size_t d = 0; d < M; ++d) {
      off += b0[d] * str[d];
      s.str[d] = str[d];
    }
    s.ptr = base + off;
  }
};

/// First k >= 0 of the progression s + k t (t != 0) on the far side of boundary b (the
/// index where s + k t crosses from < b to >= b or back).
inline Index boundary_cut(Index s, Index t, Index b) noexcept {
  const auto floor_div = [](Index x, Index y) {
    return x / y - ((x % y != 0) && ((x < 0) != (y < 0)) ? 1 : 0);
  };
  if (t > 0) return -floor_div(s - b, t);  // ceil((b - s) / t)
  return floor_div(s - b, -t) + 1;
}

/// A view leaf of a distributed array.
template <class T, std::size_t N, std::size_t M>
struct ViewSource final : LeafSource<M> {
  const GlobalArray<T, N>* a = nullptr;
  Section<N> sec;
  bool snapshot = false;  // aliases the output: read from `buf` holding `region`
  Section<N> region;
  const T* buf = nullptr;

  void add_cuts(const Shape<M>& k0, const Shape<M>& k1,
                std::array<std::vector<Index>, M>& cuts) const override {
    if (snapshot) return;
    const auto& dist = a->distribution();
    std::size_t j = 0;
    for (std::size_t d = 0; d < N; ++d) {
      if (sec.dropped[d]) continue;
      const auto& bd = dist.bounds(d);
      if (j < M && sec.step[d] != 0)
        for (std::size_t i = 1; i + 1 < bd.size(); ++i) {
          const Index c = boundary_cut(sec.start[d], sec.step[d], bd[i]);
          if (k0[j] < c && c < k1[j]) cuts[j].push_back(c);
        }
      ++j;
    }
  }
  void bind(const Shape<M>& b0, const Shape<M>& b1, Slot& s, ScratchArena& sc) const override {
    const Section<N> sub = piece_section(sec, b0, b1);
    if (snapshot) {
      map_into(region, buf, sizeof(T), sub, s);
      return;
    }
    const Box<N> bb = sub.bounding_box();
    if (intersect(bb, a->local_box()) == bb) {
      // In place: this rank's own block, no copy.
      const auto lay = a->layout_of(a->context().rank());
      s.ptr = reinterpret_cast<const T*>(detail::ArrayAccess::window(*a).base()) + lay.offset(sub.start);
      std::size_t j = 0;
      for (std::size_t d = 0; d < N; ++d)
        if (!sub.dropped[d]) s.str[j++] = sub.step[d] * lay.strides[d];
      return;
    }
    // Remote (one owner when the cuts were applied): fetch just this sub-piece.
    const auto n = static_cast<std::size_t>(sub.size());
    T* dst = sc.alloc_array<T>(n);
    a->get_section(sub, std::span<T>(dst, n));
    map_into(sub, dst, sizeof(T), sub, s);
  }
};

/// A view leaf of `K` dimensions broadcast into an expression of `M` >= K dimensions:
/// leaf dimension e is expression dimension e + M - K; the leading M - K expression
/// dimensions, and those where the leaf has extent 1 but the expression more (`stretched`),
/// read the leaf at index 0 (stride 0). The leaf is bound through `in` on the leaf box that
/// a sub-box maps to; every later sub-box mapping to the same leaf box (a row broadcast down
/// the row bands of a piece also cut into columns: the sub-boxes of one band alternate
/// between its leaf boxes) reuses that binding (the scratch it fetched into lives until the
/// call ends), so each rank fetches a broadcast operand once per distinct piece of it, never
/// once per element or per band.
template <class T, std::size_t N, std::size_t K, std::size_t M>
struct BroadcastSource final : LeafSource<M> {
  static constexpr std::size_t lead = M - K;
  ViewSource<T, N, K> in;
  std::array<bool, M> stretched{};
  mutable std::map<std::pair<Shape<K>, Shape<K>>, Slot> seen;  // leaf boxes bound in this call

  void leaf_box(const Shape<M>& b0, const Shape<M>& b1, Shape<K>& l0, Shape<K>& l1) const {
    for (std::size_t e = 0; e < K; ++e) {
      const std::size_t d = e + lead;
      l0[e] = stretched[d] ? 0 : b0[d];
      l1[e] = stretched[d] ? 1 : b1[d];
    }
  }
  void add_cuts(const Shape<M>& k0, const Shape<M>& k1, std::array<std::vector<Index>, M>& cuts) const override {
    Shape<K> l0{}, l1{};
    leaf_box(k0, k1, l0, l1);
    std::array<std::vector<Index>, K> lc;
    in.add_cuts(l0, l1, lc);
    for (std::size_t e = 0; e < K; ++e)
      if (!stretched[e + lead]) cuts[e + lead].insert(cuts[e + lead].end(), lc[e].begin(), lc[e].end());
  }
  void bind(const Shape<M>& b0, const Shape<M>& b1, Slot& s, ScratchArena& sc) const override {
    Shape<K> l0{}, l1{};
    leaf_box(b0, b1, l0, l1);
    auto [it, fresh] = seen.try_emplace({l0, l1});
    if (fresh) {
      try {
        in.bind(l0, l1, it->second, sc);
      } catch (...) {
        seen.erase(it);
        throw;
      }
    }
    const Slot& b = it->second;
    s.ptr = b.ptr;
    for (std::size_t d = 0; d < M; ++d) s.str[d] = (d < lead || stretched[d]) ? 0 : b.str[d - lead];
  }
};

struct FetchGroupBase {
  virtual ~FetchGroupBase() = default;
  virtual void fetch(ScratchArena& sc) = 0;
  std::uint64_t id = 0;
  std::size_t dims = 0;  // the leaves' number of dimensions (a group per array and leaf rank)
};

/// The aliasing leaves of one array: snapshotted before the aliasing barrier.
template <class T, std::size_t N, std::size_t M>
struct FetchGroup final : FetchGroupBase {
  const GlobalArray<T, N>* a = nullptr;
  struct Member {
    Section<N> piece;
    ViewSource<T, N, M>* src;
  };
  std::vector<Member> members;

  void fetch(ScratchArena& sc) override {
    Box<N> bb = members.front().piece.bounding_box();
    Index total = 0;
    for (const auto& m : members) {
      const Box<N> b = m.piece.bounding_box();
      for (std::size_t d = 0; d < N; ++d) {
        bb.lo[d] = std::min(bb.lo[d], b.lo[d]);
        bb.hi[d] = std::max(bb.hi[d], b.hi[d]);
      }
      total += m.piece.size();
    }
    if (members.size() > 1 && bb.volume() <= 2 * total) {
      // One region covering every leaf: each remote element crosses the network once.
      Section<N> r;
      for (std::size_t d = 0; d < N; ++d) {
        r.start[d] = bb.lo[d];
        r.step[d] = 1;
        r.count[d] = bb.extent(d);
      }
      const auto n = static_cast<std::size_t>(r.size());
      T* buf = sc.alloc_array<T>(n);
      a->get_section(r, std::span<T>(buf, n));
      for (const auto& m : members) {
        m.src->region = r;
        m.src->buf = buf;
      }
      return;
    }
    for (const auto& m : members) {
      const auto n = static_cast<std::size_t>(m.piece.size());
      T* buf = sc.alloc_array<T>(n);
      a->get_section(m.piece, std::span<T>(buf, n));
      m.src->region = m.piece;
      m.src->buf = buf;
    }
  }
};

}  // namespace garray::detail
