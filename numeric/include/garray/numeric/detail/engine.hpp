#pragma once
// The owner-computes engine behind every numeric operation.
//
//   1. validate   every view leaf: same context as the driver, shape equal to the
//                 expression's; signature of the call (driver, leaves, expression type)
//   2. agree      fence every array involved, then one allreduce comparing signatures:
//                 collective misuse throws CollectiveMismatch on every rank; a local error
//                 is rethrown on every rank (nothing moved yet)
//   3. plan       the driver (the output view, or the first view operand for reductions)
//                 gives this rank's piece: the elements it owns, a box [k0, k1) in the
//                 expression's index space. Every view leaf becomes a LeafSource:
//                   - aliasing leaves (overlapping the output without being it element for
//                     element) are snapshotted: per array, one bounding region when compact,
//                     else one get per leaf (numpy semantics);
//                   - every other leaf is split by owner (below).
//   4. alias      if a snapshot was taken, a barrier after every rank's snapshot and before
//                 any write. The decision uses only the global sections: same everywhere.
//   5. split      the piece is cut into sub-boxes along the preimages of the input arrays'
//                 block boundaries (the cuts of every non-aliasing view leaf, through its
//                 start/step; negative steps and dropped dimensions included), so in each
//                 sub-box every leaf reads from exactly one owner. Per sub-box a leaf is
//                   - read in place (pointer + strides into this rank's window memory) when
//                     that owner is this rank: a stencil's own rows are never copied;
//                   - else fetched, one get_section of just that sub-piece (the halo).
//                 Correctness never depends on the cuts: a sub-box spanning several owners
//                 (cuts capped at max_sub_boxes) is fetched whole, get_section splitting it.
//   6. run        per sub-box the iteration box is collapsed across contiguous dimensions
//                 and the bound expression (raw pointers + strides) runs once per run.
//                 Order-sensitive callers (reductions, assign_reduce) run `ordered`: the
//                 rows of all sub-boxes are interleaved so elements are visited in exactly
//                 the row-major order of the piece (results independent of the cuts).
//   7. finish     writes become visible: MPI_Win_sync and a barrier.
//
// Fetched data lives in a per-thread ScratchArena: uninitialised (no zero fill), 64-byte
// aligned, bump-allocated and reset at the end of every call, its memory KEPT across calls
// (up to scratch_keep_bytes) so repeated steps pay no allocation, zero fill or page faults.
// A nested evaluation on the same thread (e.g. from a user functor) gets a private arena.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <garray/array/detail/transfer_plan.hpp>
#include <garray/array/global_array.hpp>
#include <garray/numeric/expr.hpp>
#include <garray/runtime/context.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/fault.hpp>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <vector>

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
/// a sub-box maps to; consecutive sub-boxes mapping to the same leaf box (a row broadcast
/// down the rows of a split piece) reuse the binding, so each rank fetches a broadcast
/// operand once per distinct piece of it, never once per element.
template <class T, std::size_t N, std::size_t K, std::size_t M>
struct BroadcastSource final : LeafSource<M> {
  static constexpr std::size_t lead = M - K;
  ViewSource<T, N, K> in;
  std::array<bool, M> stretched{};
  mutable bool bound = false;
  mutable Shape<K> last0{}, last1{};
  mutable Slot last;

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
    if (!bound || l0 != last0 || l1 != last1) {
      in.bind(l0, l1, last, sc);
      last0 = l0;
      last1 = l1;
      bound = true;
    }
    s.ptr = last.ptr;
    for (std::size_t d = 0; d < M; ++d) s.str[d] = (d < lead || stretched[d]) ? 0 : last.str[d - lead];
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

/// One evaluation: the driver's piece, the bound operands and the fetched buffers.
template <std::size_t M>
struct Plan {
  std::string_view what;
  std::optional<Context> ctx;
  Shape<M> shape{};
  bool have_driver = false;
  bool stale_driver = false;  // the driver view's array is gone: validate() throws
  bool empty = true;
  Shape<M> k0{}, k1{};
  // the output (assignments)
  bool has_out = false;
  std::uint64_t out_id = 0;
  std::vector<Index> out_start, out_step, out_count;
  std::vector<unsigned char> out_dropped;
  bool alias = false;                                   // a leaf overlaps the output, not element-for-element
  bool pointwise = false;                               // a leaf is the output itself (x += ...)
  std::vector<Slot> slots;                              // per leaf, bound to the current sub-box
  std::vector<std::unique_ptr<LeafSource<M>>> sources;  // per leaf (same order as slots)
  std::vector<std::unique_ptr<FetchGroupBase>> groups;  // aliasing snapshots
  Slot out_piece;                                       // the output at the piece's origin k0
  Slot out_slot;                                        // the output at the current sub-box's origin
  std::size_t out_elem = 0;
  ScratchLease scratch;
  // the current sub-box [b0, b1) of the piece, and its iteration space after collapsing
  Shape<M> b0{}, b1{};
  int nd = 0;
  std::array<Index, max_dims> count{};
  bool unit = true;
  Index chunk = 0;  // > 0: an operand is broadcast along the run; rows are cut into runs of this length
  std::uint64_t sig = 0;
  std::uint64_t salt = 0;  // arguments outside the expression tree (iota's start, a seed, ...)
  std::vector<std::function<void()>> fences, syncs;
  std::vector<std::uint64_t> fenced;

  /// Registers an array involved in the call: its outstanding puts are completed before the
  /// handshake and its window memory synchronised after it.
  template <class T, std::size_t N>
  void fence_once(GlobalArray<T, N>& a) {
    if (std::find(fenced.begin(), fenced.end(), a.id()) != fenced.end()) return;
    fenced.push_back(a.id());
    fences.push_back([&a] { a.fence(); });
    syncs.push_back([&a] { detail::ArrayAccess::window(a).memory_sync(); });
  }

  /// Output section overlap class of a leaf of the output's array: 0 none, 1 identical, 2 other.
  template <std::size_t N>
  int overlap_with_out(std::uint64_t id, const Section<N>& s) const {
    if (!has_out || id != out_id || out_start.size() != N) return 0;
    Section<N> o;
    for (std::size_t d = 0; d < N; ++d) {
      o.start[d] = out_start[d];
      o.step[d] = out_step[d];
      o.count[d] = out_count[d];
      o.dropped[d] = out_dropped[d] != 0;
    }
    if (o == s) return 1;
    return sections_overlap(o, s) ? 2 : 0;
  }
};

template <std::size_t M>
std::string shape_str(const Shape<M>& s) {
  std::ostringstream os;
  os << seq(s);
  return os.str();
}

/// Makes view `v` the driver: its shape is the expression's, this rank's piece is the part
/// of v it owns (for reductions over a replicated array: rank 0's copy only).
template <std::size_t M, class T, std::size_t N>
void set_driver(Plan<M>& p, const View<T, N, M>& v, bool is_output) {
  p.have_driver = true;
  p.ctx = v.context();
  p.shape = v.shape();
  if (!v.live()) {  // a stale view: validate() throws inside the handshake
    p.stale_driver = true;
    return;
  }
  const auto& a = v.array();
  Box<N> box = a.local_box();
  if (!is_output && holds_everything(a) && a.context().rank() != 0) box = Box<N>{};
  p.empty = !owned_piece<N, M>(v.section(), box, p.k0, p.k1);
  if (is_output) {
    p.fence_once(v.array());
    p.has_out = true;
    p.out_id = a.id();
    const auto& s = v.section();
    for (std::size_t d = 0; d < N; ++d) {
      p.out_start.push_back(s.start[d]);
      p.out_step.push_back(s.step[d]);
      p.out_count.push_back(s.count[d]);
      p.out_dropped.push_back(s.dropped[d] ? 1 : 0);
    }
    p.sig = hash_mix(p.sig, a.id());
    for (std::size_t d = 0; d < N; ++d)
      p.sig = hash_mix(hash_mix(hash_mix(p.sig, static_cast<std::uint64_t>(s.start[d])),
                                static_cast<std::uint64_t>(s.step[d])),
                       static_cast<std::uint64_t>(s.count[d]) * 2 + (s.dropped[d] ? 1 : 0));
  }
}

/// True if `s` broadcasts to `full` (NumPy: aligned at the last dimension, each extent
/// equal or 1; no more dimensions than `full`).
template <std::size_t K, std::size_t M>
bool broadcasts_to(const Shape<K>& s, const Shape<M>& full) {
  if constexpr (K > M) {
    return false;
  } else {
    for (std::size_t e = 0; e < K; ++e)
      if (s[e] != full[e + M - K] && s[e] != 1) return false;
    return true;
  }
}

/// The broadcast shape of every shaped leaf of `e` (views, local arrays, index leaves):
/// per dimension the extent that is not 1, else 1. False if two extents differ and neither
/// is 1 (validate() then names the operand).
template <std::size_t M, class E>
bool broadcast_shape(const E& e, Shape<M>& full) {
  full.fill(1);
  bool ok = true;
  const auto join = [&](const auto& sh) {
    constexpr std::size_t K = std::tuple_size_v<std::remove_cvref_t<decltype(sh)>>;
    if constexpr (K <= M) {
      for (std::size_t k = 0; k < K; ++k) {
        Index& f = full[k + M - K];
        if (sh[k] == f || sh[k] == 1) continue;
        if (f == 1) f = sh[k];
        else ok = false;
      }
    } else {
      ok = false;
    }
  };
  e.for_each_leaf([&](const auto& leaf) {
    if constexpr (requires { leaf.v.section(); }) join(leaf.v.shape());
    else if constexpr (requires { leaf.strides; }) join(leaf.shape);
  });
  return ok;
}

/// The broadcast shape of `e` (see broadcast_shape; meaningful once the call's handshake
/// passed, which rejects shapes that do not broadcast).
template <class E>
Shape<static_cast<std::size_t>(E::rank)> expr_shape(const E& e) {
  Shape<static_cast<std::size_t>(E::rank)> full{};
  broadcast_shape(e, full);
  return full;
}

/// Finds the first view leaf of an expression.
template <class E, class F>
void with_first_view(const E& e, F&& f) {
  bool done = false;
  e.for_each_leaf([&](const auto& leaf) {
    if constexpr (requires { leaf.v.section(); }) {
      if (!done) {
        done = true;
        f(leaf.v);
      }
    }
  });
}

/// Calls f(v) for the view leaf that drives a free expression (eval, reductions): the first
/// one of the expression's full broadcast shape. Nothing is called when no operand spans
/// the broadcast shape (`a(m,1) + b(1,n)`).
template <class E, class F>
void with_driver_view(const E& e, F&& f) {
  constexpr std::size_t M = static_cast<std::size_t>(E::rank);
  Shape<M> full{};
  const bool ok = broadcast_shape(e, full);
  bool done = false;
  e.for_each_leaf([&](const auto& leaf) {
    if constexpr (requires { leaf.v.section(); }) {
      if constexpr (std::remove_cvref_t<decltype(leaf.v)>::dims == M) {
        if (!done && (!ok || leaf.v.shape() == full)) {
          done = true;
          f(leaf.v);
        }
      }
    }
  });
}

/// The driver of a free expression: its first view operand of the full broadcast shape (see
/// set_driver); without one, the broadcast shape partitioned as a blocked distribution over
/// the first view operand's context (each rank computes its block).
template <std::size_t M, class E>
void set_free_driver(Plan<M>& p, const E& e) {
  with_driver_view(e, [&](const auto& v) { set_driver(p, v, false); });
  if (p.have_driver) return;
  with_first_view(e, [&](const auto& v) { p.ctx = v.context(); });
  if (!p.ctx) return;  // no view operand: validate() reports it
  p.have_driver = true;
  broadcast_shape(e, p.shape);
  const Box<M> box =
      Distribution<M>::blocked().resolve(p.shape, p.ctx->size(), p.what).block(p.ctx->rank());
  p.empty = box.empty();
  p.k0 = box.lo;
  p.k1 = box.hi;
}

/// Step 1: local validation of every leaf against the driver; accumulates the signature.
template <std::size_t M, class E>
void validate(Plan<M>& p, const E& e) {
  if (p.stale_driver)
    raise<InvalidArgument>(p.what, ": the output (or first operand) is a view of an array that was destroyed, "
                                   "moved from or assigned to");
  int k = 0;
  e.for_each_leaf([&](const auto& leaf) {
    ++k;
    if constexpr (requires { leaf.v.section(); }) {
      auto& a = leaf.v.array();
      if (a.context() != *p.ctx)
        raise<InvalidArgument>(
            p.what, ": operand ", k, " (array #", a.id(),
            ") lives on a different context (process group) than the output/first operand");
      if (!broadcasts_to(leaf.v.shape(), p.shape))
        raise<SizeMismatch>(p.what, ": operand ", k, " has shape ", shape_str(leaf.v.shape()),
                            ", which does not broadcast to the expression's shape ", shape_str(p.shape));
      const auto& s = leaf.v.section();
      p.sig = hash_mix(p.sig, a.id());
      for (std::size_t d = 0; d < s.start.size(); ++d)
        p.sig = hash_mix(hash_mix(hash_mix(p.sig, static_cast<std::uint64_t>(s.start[d])),
                                  static_cast<std::uint64_t>(s.step[d])),
                         static_cast<std::uint64_t>(s.count[d]) * 2 + (s.dropped[d] ? 1 : 0));
      p.fence_once(a);
    } else if constexpr (requires { leaf.strides; }) {
      if (!broadcasts_to(leaf.shape, p.shape))
        raise<SizeMismatch>(p.what, ": local operand ", k, " has shape ", shape_str(leaf.shape),
                            ", which does not broadcast to the expression's shape ", shape_str(p.shape));
    } else if constexpr (requires { leaf.s; }) {
      // Scalars are arguments too: every rank must pass the same value.
      using S = std::remove_cvref_t<decltype(leaf.s)>;
      if constexpr (std::is_trivially_copyable_v<S>) p.sig = value_hash(hash_mix(p.sig, k), leaf.s);
    }
    // A functor (generate) is identified by its type (the expression's typeid): its bytes
    // may hold addresses (captures by reference) that differ across ranks legitimately.
  });
}

/// Steps 1-2: validation, fences, the collective handshake. Throws on every rank: a rank
/// whose arguments are invalid its error (the others CollectiveMismatch), a rank whose
/// fence failed its error (the others CollectiveFailure).
template <std::size_t M, class E>
void prepare(Plan<M>& p, const E& e, std::string_view describe) {
  std::exception_ptr err;
  LocalFault fault = LocalFault::invalid;
  try {
    validate(p, e);
    fault = LocalFault::failed;
    fault_point("numeric.prepare");
    for (auto& f : p.fences) f();
    fault = LocalFault::none;
  } catch (...) {
    err = std::current_exception();
  }
  std::uint64_t sig = hash_mix(hash_string(p.what), hash_string(typeid(E).name()));
  sig = hash_mix(hash_mix(sig, p.sig), p.salt);
  throw_if_disagreed(p.ctx->comm(), agree_with_errors(p.ctx->comm(), sig, fault), err, p.what, describe);
  for (auto& f : p.syncs) f();
}

/// Whether any leaf overlaps the output without being it element for element: decided
/// from the global sections only (same on every rank), before anything can fail.
template <std::size_t M, class E>
bool aliases_output(const Plan<M>& p, const E& e) {
  bool alias = false;
  e.for_each_leaf([&](const auto& leaf) {
    if constexpr (requires { leaf.v.section(); })
      alias = alias || p.overlap_with_out(leaf.v.array().id(), leaf.v.section()) == 2;
  });
  return alias;
}

/// Steps 3-6 and the closing agreement (failure rule): runs `work()` (planning, fetching,
/// executing: this rank's part, which may throw, e.g. in a user functor) and ends with one
/// agreement that doubles as the closing barrier. With aliasing, the snapshot barrier is an
/// agreement too, so a rank that failed before it does not leave the others waiting.
template <std::size_t M, class E, class Work>
void run_plan(Plan<M>& p, const E& e, Work&& work) {
  const MPI_Comm comm = p.ctx->comm();
  std::exception_ptr err;
  const bool alias = aliases_output(p, e);
  try {
    fault_point("numeric.plan");
    plan_leaves(p, e);
    for (auto& g : p.groups) g->fetch(p.scratch.get());
  } catch (...) {
    err = std::current_exception();
  }
  if (alias) {
    conclude(comm, err, p.what);  // every rank's snapshot is taken before anyone writes
    err = nullptr;
  }
  if (!err) {
    try {
      fault_point("numeric.execute");
      work();
    } catch (...) {
      err = std::current_exception();
    }
  }
  conclude(comm, err, p.what);
}

/// Adds leaf source `src` (reading `piece`, its part of the driver's piece) to the snapshot
/// group of array `a` (one group per array and leaf rank).
template <std::size_t M, class T, std::size_t N, std::size_t K>
void join_snapshot(Plan<M>& p, const GlobalArray<T, N>& a, const Section<N>& piece, ViewSource<T, N, K>* src) {
  using G = FetchGroup<T, N, K>;
  G* g = nullptr;
  for (auto& gb : p.groups)
    if (gb->id == a.id() && gb->dims == K) g = static_cast<G*>(gb.get());
  if (!g) {
    auto ng = std::make_unique<G>();
    ng->id = a.id();
    ng->dims = K;
    ng->a = &a;
    g = ng.get();
    p.groups.push_back(std::move(ng));
  }
  g->members.push_back({piece, src});
}

/// Step 3: a LeafSource per leaf; aliasing leaves join their array's snapshot group; leaves
/// of another shape than the expression's are broadcast (BroadcastSource).
template <std::size_t M, class E>
void plan_leaves(Plan<M>& p, const E& e) {
  e.for_each_leaf([&](const auto& leaf) {
    using L = std::remove_cvref_t<decltype(leaf)>;
    if constexpr (requires { leaf.v.section(); }) {
      using T = typename L::value_type;
      constexpr std::size_t N = std::tuple_size_v<std::remove_cvref_t<decltype(leaf.v.section().start)>>;
      constexpr std::size_t K = std::remove_cvref_t<decltype(leaf.v)>::dims;
      auto& a = leaf.v.array();
      const auto& s = leaf.v.section();
      const int ov = p.overlap_with_out(a.id(), s);
      if (ov == 2) p.alias = true;
      if (ov == 1) p.pointwise = true;
      bool same_shape = false;
      if constexpr (K == M) {
        same_shape = leaf.v.shape() == p.shape;
        if (same_shape) {
          auto src = std::make_unique<ViewSource<T, N, M>>();
          src->a = &a;
          src->sec = s;
          src->snapshot = ov == 2;
          if (ov == 2 && !p.empty) join_snapshot(p, a, piece_section(s, p.k0, p.k1), src.get());
          p.sources.push_back(std::move(src));
        }
      }
      if constexpr (K <= M) {
        if (!same_shape) {
          auto src = std::make_unique<BroadcastSource<T, N, K, M>>();
          src->in.a = &a;
          src->in.sec = s;
          src->in.snapshot = ov == 2;
          const auto sh = leaf.v.shape();
          for (std::size_t k = 0; k < K; ++k) src->stretched[k + M - K] = sh[k] == 1 && p.shape[k + M - K] != 1;
          if (ov == 2 && !p.empty) {
            Shape<K> l0{}, l1{};
            src->leaf_box(p.k0, p.k1, l0, l1);
            join_snapshot(p, a, piece_section(s, l0, l1), &src->in);
          }
          p.sources.push_back(std::move(src));
        }
      }
      p.slots.emplace_back();
    } else if constexpr (requires { leaf.strides; }) {
      constexpr std::size_t K = std::tuple_size_v<std::remove_cvref_t<decltype(leaf.shape)>>;
      auto src = std::make_unique<LocalSource<typename L::value_type, M>>();
      src->base = leaf.data;
      if constexpr (K <= M)
        for (std::size_t k = 0; k < K; ++k)
          src->str[k + M - K] = (leaf.shape[k] == 1 && p.shape[k + M - K] != 1) ? 0 : leaf.strides[k];
      p.slots.emplace_back();
      p.sources.push_back(std::move(src));
    }
  });
}

/// Step 6a: collapses the current sub-box's iteration box over every bound pointer.
template <std::size_t M>
void collapse_iteration(Plan<M>& p, bool keep_coords) {
  std::vector<Slot*> ptrs;
  if (p.has_out) ptrs.push_back(&p.out_slot);
  for (auto& s : p.slots) ptrs.push_back(&s);
  p.nd = 0;
  if (keep_coords) {
    p.nd = static_cast<int>(M);
    for (std::size_t d = 0; d < M; ++d) p.count[d] = p.b1[d] - p.b0[d];
  } else {
    for (std::size_t d = 0; d < M; ++d) {
      const Index c = p.b1[d] - p.b0[d];
      if (c == 1) continue;
      if (p.nd > 0) {
        const auto i = static_cast<std::size_t>(p.nd - 1);
        bool merge = true;
        for (Slot* s : ptrs) merge = merge && s->str[i] == s->str[d] * c;
        if (merge) {
          p.count[i] *= c;
          for (Slot* s : ptrs) s->str[i] = s->str[d];
          continue;
        }
      }
      const auto i = static_cast<std::size_t>(p.nd);
      p.count[i] = c;
      for (Slot* s : ptrs) s->str[i] = s->str[d];
      ++p.nd;
    }
  }
  // Unit runs: the output and every operand contiguous along the run, or an operand
  // constant along it (stride 0: broadcast, read from a per-row buffer: BoundPtr::fill).
  p.unit = true;
  if (p.nd > 0) {
    const auto in = static_cast<std::size_t>(p.nd - 1);
    if (p.has_out) p.unit = p.out_slot.str[in] == 1;
    for (auto& s : p.slots) p.unit = p.unit && (s.str[in] == 1 || s.str[in] == 0);
  }
}

// ---- binding the expression tree to its slots ----------------------------------------------

template <std::size_t M>
struct Binder {
  Plan<M>& p;
  std::size_t next = 0;

  template <class T>
  BoundPtr<T, M> ptr_leaf() {
    const Slot& s = p.slots[next++];
    BoundPtr<T, M> b;
    b.base = static_cast<const T*>(s.ptr);
    for (std::size_t d = 0; d < M; ++d) b.str[d] = s.str[d];
    b.inner = p.nd > 0 ? s.str[static_cast<std::size_t>(p.nd - 1)] : 1;
    if (p.nd > 0 && b.inner == 0) {  // broadcast along the run: a per-row buffer (BoundPtr::fill)
      b.fill_n = std::min(p.count[static_cast<std::size_t>(p.nd - 1)], std::max(broadcast_chunk, Index{1}));
      b.fill = p.scratch.get().template alloc_array<T>(static_cast<std::size_t>(b.fill_n));
      b.inner = 1;
      p.chunk = b.fill_n;
    }
    b.p = b.base;
    return b;
  }
  template <class T, std::size_t N, std::size_t K>
  auto operator()(const ViewLeaf<T, N, K>&) {
    return ptr_leaf<T>();
  }
  template <class T, std::size_t K>
  auto operator()(const LocalLeaf<T, K>&) {
    return ptr_leaf<T>();
  }
  template <class S>
  auto operator()(const ScalarLeaf<S>& l) {
    return BoundScalar<S>{l.s};
  }
  template <class F>
  auto operator()(const IndexLeaf<M, F>& l) {
    return BoundIndex<M, F>{l.f, {}};
  }
  template <class Op, class A>
  auto operator()(const UnaryExpr<Op, A>& e) {
    auto a = (*this)(e.a);
    return BoundUnary<Op, decltype(a)>{a};
  }
  template <class Op, class A, class B>
  auto operator()(const BinaryExpr<Op, A, B>& e) {
    auto a = (*this)(e.a);
    auto b = (*this)(e.b);
    return BoundBinary<Op, decltype(a), decltype(b)>{a, b};
  }
  template <class C, class A, class B>
  auto operator()(const WhereExpr<C, A, B>& e) {
    auto c = (*this)(e.c);
    auto a = (*this)(e.a);
    auto b = (*this)(e.b);
    return BoundWhere<decltype(c), decltype(a), decltype(b), typename WhereExpr<C, A, B>::value_type>{c, a,
                                                                                                      b};
  }
};

/// Calls row(b, pos, n) for the row of n elements that b is positioned on (seek(pos) done),
/// cut into runs of at most p.chunk elements when an operand is broadcast along the row
/// (its buffer holds p.chunk elements). `abs` is pos.abs, advanced with the runs when the
/// iteration keeps coordinates.
template <std::size_t M, class B, class Row>
void row_runs(const Plan<M>& p, B& b, RowPos& pos, Index* abs, Index n, Row& row) {
  if (p.chunk == 0 || n <= p.chunk) {
    row(b, pos, n);
    return;
  }
  if constexpr (M > 0) {
    const bool coords = pos.nd == static_cast<int>(M);
    const Index a0 = abs[M - 1];
    for (Index off = 0; off < n; off += p.chunk) {
      if (off > 0) {
        pos.off = off;
        if (coords) abs[M - 1] = a0 + off;
        b.seek(pos);
      }
      row(b, pos, std::min(p.chunk, n - off));
    }
    pos.off = 0;
    abs[M - 1] = a0;
  }
}

/// Step 6b: calls row(bound, pos, n) for every contiguous run of the current sub-box,
/// after positioning the bound tree on it.
template <std::size_t M, class B, class Row>
void run_rows(const Plan<M>& p, B& b, Row&& row) {
  std::array<Index, max_dims> k{};
  Shape<M> abs = p.b0;
  RowPos pos{p.nd, k.data(), abs.data(), static_cast<int>(M)};
  if (p.nd == 0) {
    b.seek(pos);
    row(b, pos, Index{1});
    return;
  }
  const int outer = p.nd - 1;
  const Index n = p.count[static_cast<std::size_t>(outer)];
  while (true) {
    if (p.nd == static_cast<int>(M))
      for (std::size_t d = 0; d < M; ++d) abs[d] = p.b0[d] + k[d];
    b.seek(pos);
    row_runs(p, b, pos, abs.data(), n, row);
    int d = outer - 1;
    for (; d >= 0; --d) {
      const auto du = static_cast<std::size_t>(d);
      if (++k[du] < p.count[du]) break;
      k[du] = 0;
    }
    if (d < 0) return;
  }
}

/// Steps 5-6: splits this rank's piece into sub-boxes by input owner, binds every leaf per
/// sub-box (in place or fetched) and calls row(bound, pos, n) for every run; during a call
/// p.nd, p.unit, p.count, p.out_slot, p.b0 and p.b1 describe the current sub-box.
/// `ordered`: visit elements in the piece's row-major order (reductions). `coords`: keep
/// pos.abs valid (no collapsing).
template <std::size_t M, class E, class Row>
void execute(Plan<M>& p, const E& e, bool ordered, bool coords, Row&& row) {
  if (p.empty) return;
  std::array<std::vector<Index>, M> edges;
  for (const auto& src : p.sources) src->add_cuts(p.k0, p.k1, edges);
  std::size_t nsub = 1;
  std::array<std::size_t, M> nb{};
  for (std::size_t j = 0; j < M; ++j) {
    auto& c = edges[j];
    c.push_back(p.k0[j]);
    c.push_back(p.k1[j]);
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    nb[j] = c.size() - 1;
    nsub *= nb[j];
  }
  for (std::size_t j = M; j-- > 0 && nsub > max_sub_boxes;) {
    nsub /= nb[j];
    edges[j] = {p.k0[j], p.k1[j]};
    nb[j] = 1;
  }
  // Sub-boxes split only along dimension 0 are visited in row-major order anyway.
  bool inner_split = false;
  for (std::size_t j = 1; j < M; ++j) inner_split = inner_split || nb[j] > 1;
  ordered = ordered && inner_split;
  const bool keep = coords || E::needs_coords || (ordered && nsub > 1);
  ScratchArena* sc = nsub > 0 ? &p.scratch.get() : nullptr;
  std::array<std::size_t, M> iv{};
  // Binds every leaf and the output to sub-box iv and returns the bound expression.
  const auto bind_sub = [&] {
    for (std::size_t j = 0; j < M; ++j) {
      p.b0[j] = edges[j][iv[j]];
      p.b1[j] = edges[j][iv[j] + 1];
    }
    for (std::size_t i = 0; i < p.sources.size(); ++i) p.sources[i]->bind(p.b0, p.b1, p.slots[i], *sc);
    if (p.has_out) {
      p.out_slot = p.out_piece;
      Index off = 0;
      for (std::size_t j = 0; j < M; ++j) off += (p.b0[j] - p.k0[j]) * p.out_piece.str[j];
      p.out_slot.ptr = static_cast<const std::byte*>(p.out_piece.ptr) + off * static_cast<Index>(p.out_elem);
    }
    collapse_iteration(p, keep);
    p.chunk = 0;
    Binder<M> binder{p};
    return binder(e);
  };
  const auto next_iv = [&] {
    for (std::size_t j = M; j-- > 0;) {
      if (++iv[j] < nb[j]) return true;
      iv[j] = 0;
    }
    return false;
  };
  if (!ordered || nsub == 1) {
    do {
      auto b = bind_sub();
      run_rows(p, b, row);
    } while (next_iv());
    return;
  }
  if constexpr (M > 0) {
    // Ordered and split: bind every sub-box, then walk the piece row by row in row-major
    // order, each row crossing the last dimension's sub-boxes left to right.
    using B = decltype(bind_sub());
    struct Sub {
      Shape<M> b0, b1;
      Slot out;
      bool unit;
      Index chunk;
      std::array<Index, max_dims> count;
    };
    std::vector<B> trees;
    std::vector<Sub> subs;
    trees.reserve(nsub);
    subs.reserve(nsub);
    do {
      trees.push_back(bind_sub());
      subs.push_back({p.b0, p.b1, p.out_slot, p.unit, p.chunk, p.count});
    } while (next_iv());
    std::array<Index, max_dims> k{};
    Shape<M> x = p.k0;  // the row's coordinates (outer dims)
    std::array<std::size_t, M> jv{};
    while (true) {
      std::size_t base = 0;
      for (std::size_t j = 0; j + 1 < M; ++j) base = base * nb[j] + jv[j];
      for (std::size_t q = 0; q < nb[M - 1]; ++q) {
        const std::size_t id = base * nb[M - 1] + q;
        const Sub& st = subs[id];
        p.b0 = st.b0;
        p.b1 = st.b1;
        p.out_slot = st.out;
        p.unit = st.unit;
        p.chunk = st.chunk;
        p.count = st.count;
        p.nd = static_cast<int>(M);
        Shape<M> abs = x;
        abs[M - 1] = st.b0[M - 1];
        for (std::size_t j = 0; j + 1 < M; ++j) k[j] = x[j] - st.b0[j];
        RowPos pos{p.nd, k.data(), abs.data(), static_cast<int>(M)};
        B& b = trees[id];
        b.seek(pos);
        row_runs(p, b, pos, abs.data(), st.b1[M - 1] - st.b0[M - 1], row);
      }
      std::size_t j = M - 1;
      while (j-- > 0) {
        ++x[j];
        if (x[j] == edges[j][jv[j] + 1]) ++jv[j];
        if (x[j] < p.k1[j]) break;
        x[j] = p.k0[j];
        jv[j] = 0;
        if (j == 0) return;
      }
      if constexpr (M == 1) return;
    }
  }
}

/// Offset of the current run in the slot's memory.
inline Index run_offset(const Slot& s, const RowPos& pos) noexcept {
  Index off = 0;
  for (int d = 0; d + 1 < pos.nd; ++d) off += pos.k[d] * s.str[static_cast<std::size_t>(d)];
  if (pos.nd > 0) off += pos.off * s.str[static_cast<std::size_t>(pos.nd - 1)];
  return off;
}

}  // namespace garray::detail
