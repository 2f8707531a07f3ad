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
//                 expression's index space. Each view leaf's matching sub-section is
//                   - read in place when it lies in this rank's block (no copy), unless it
//                     overlaps the output without being the output itself (aliasing);
//                   - otherwise fetched: per array, the leaves' sub-sections are fetched as
//                     one bounding region when that is compact (each input region once per
//                     rank; get_section = one call per owner), else one get each.
//   4. alias      if some leaf overlaps the output other than element-for-element, a
//                 barrier after every rank's fetch and before any write (numpy semantics).
//                 The decision uses only the global sections, so it is the same everywhere.
//   5. run        the iteration box is collapsed across contiguous dimensions; the bound
//                 expression (raw pointers + strides) runs once per contiguous run.
//   6. finish     writes become visible: MPI_Win_sync and a barrier.

#include <garray/array/detail/transfer_plan.hpp>
#include <garray/array/global_array.hpp>
#include <garray/numeric/expr.hpp>
#include <garray/runtime/context.hpp>
#include <garray/runtime/error.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

namespace garray::detail {

inline constexpr std::size_t max_dims = 16;

/// A bound operand: element k of the iteration space is at ptr + sum_d k[d] * str[d].
struct Slot {
  const void* ptr = nullptr;
  std::array<index, max_dims> str{};
};

/// True if progressions {s1 + k t1, k < c1} and {s2 + j t2, j < c2} share an element.
inline bool progressions_meet(index s1, index t1, index c1, index s2, index t2, index c2) noexcept {
  if (c1 == 0 || c2 == 0) return false;
  if (c1 > c2) {
    std::swap(s1, s2);
    std::swap(t1, t2);
    std::swap(c1, c2);
  }
  for (index k = 0; k < c1; ++k) {
    const index x = s1 + k * t1 - s2;
    if (x % t2 != 0) continue;
    const index j = x / t2;
    if (j >= 0 && j < c2) return true;
  }
  return false;
}

/// True if two sections of the same array select a common element (exact).
template <std::size_t N>
bool sections_overlap(const Section<N>& a, const Section<N>& b) noexcept {
  for (std::size_t d = 0; d < N; ++d)
    if (!progressions_meet(a.start[d], a.step[d], a.count[d], b.start[d], b.step[d], b.count[d])) return false;
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
  index off = 0;
  std::size_t j = 0;
  for (std::size_t d = 0; d < N; ++d) {
    off += (p.start[d] - r.start[d]) / r.step[d] * rs[d];
    if (!p.dropped[d]) s.str[j++] = p.step[d] / r.step[d] * rs[d];
  }
  s.ptr = static_cast<const std::byte*>(buf) + off * static_cast<index>(elem);
}

struct FetchGroupBase {
  virtual ~FetchGroupBase() = default;
  virtual void fetch(std::vector<Slot>& slots, bool allow_region) = 0;
  std::uint64_t id = 0;
};

/// The leaves of one array that this rank cannot read in place.
template <class T, std::size_t N>
struct FetchGroup final : FetchGroupBase {
  const GlobalArray<T, N>* a = nullptr;
  struct Member {
    Section<N> piece;
    std::size_t slot;
  };
  std::vector<Member> members;
  std::vector<std::vector<T>> bufs;

  void fetch(std::vector<Slot>& slots, bool allow_region) override {
    Box<N> bb = members.front().piece.bounding_box();
    index total = 0;
    for (const auto& m : members) {
      const Box<N> b = m.piece.bounding_box();
      for (std::size_t d = 0; d < N; ++d) {
        bb.lo[d] = std::min(bb.lo[d], b.lo[d]);
        bb.hi[d] = std::max(bb.hi[d], b.hi[d]);
      }
      total += m.piece.size();
    }
    if (allow_region && members.size() > 1 && bb.volume() <= 2 * total) {
      // One region covering every leaf: each remote element crosses the network once.
      Section<N> r;
      for (std::size_t d = 0; d < N; ++d) {
        r.start[d] = bb.lo[d];
        r.step[d] = 1;
        r.count[d] = bb.extent(d);
      }
      auto& buf = bufs.emplace_back(static_cast<std::size_t>(r.size()));
      a->get_section(r, buf);
      for (const auto& m : members) map_into(r, buf.data(), sizeof(T), m.piece, slots[m.slot]);
      return;
    }
    for (const auto& m : members) {
      auto& buf = bufs.emplace_back(static_cast<std::size_t>(m.piece.size()));
      a->get_section(m.piece, buf);
      map_into(m.piece, buf.data(), sizeof(T), m.piece, slots[m.slot]);
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
  bool empty = true;
  Shape<M> k0{}, k1{};
  // the output (assignments)
  bool has_out = false;
  std::uint64_t out_id = 0;
  std::vector<index> out_start, out_step, out_count;
  std::vector<unsigned char> out_dropped;
  bool alias = false;      // a leaf overlaps the output, not element-for-element
  bool pointwise = false;  // a leaf is the output itself (x += ...)
  std::vector<Slot> slots;
  std::vector<std::unique_ptr<FetchGroupBase>> groups;
  Slot out_slot;
  // the iteration space after collapsing
  int nd = 0;
  std::array<index, max_dims> count{};
  bool unit = true;
  std::uint64_t sig = 0;
  std::vector<std::function<void()>> fences, syncs;
  std::vector<std::uint64_t> fenced;

  /// Registers an array involved in the call: its outstanding puts are completed before the
  /// handshake and its window memory synchronised after it.
  template <class T, std::size_t N>
  void fence_once(GlobalArray<T, N>& a) {
    if (std::find(fenced.begin(), fenced.end(), a.id()) != fenced.end()) return;
    fenced.push_back(a.id());
    fences.push_back([&a] { a.fence(); });
    syncs.push_back([&a] { a.window().memory_sync(); });
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
  p.ctx = v.array().context();
  p.shape = v.shape();
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
      p.sig = hash_mix(hash_mix(hash_mix(p.sig, static_cast<std::uint64_t>(s.start[d])), static_cast<std::uint64_t>(s.step[d])),
                       static_cast<std::uint64_t>(s.count[d]) * 2 + (s.dropped[d] ? 1 : 0));
  }
}

/// Finds the first view leaf of an expression (the driver of reductions and eval).
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

/// Step 1: local validation of every leaf against the driver; accumulates the signature.
template <std::size_t M, class E>
void validate(Plan<M>& p, const E& e) {
  int k = 0;
  e.for_each_leaf([&](const auto& leaf) {
    ++k;
    if constexpr (requires { leaf.v.section(); }) {
      auto& a = leaf.v.array();
      if (a.context().state() != p.ctx->state())
        raise<InvalidArgument>(p.what, ": operand ", k, " (array #", a.id(),
                               ") lives on a different context (process group) than the output/first operand");
      if (leaf.v.shape() != p.shape)
        raise<SizeMismatch>(p.what, ": operand ", k, " has shape ", shape_str(leaf.v.shape()),
                            " but the expression has shape ", shape_str(p.shape));
      const auto& s = leaf.v.section();
      p.sig = hash_mix(p.sig, a.id());
      for (std::size_t d = 0; d < s.start.size(); ++d)
        p.sig = hash_mix(hash_mix(hash_mix(p.sig, static_cast<std::uint64_t>(s.start[d])), static_cast<std::uint64_t>(s.step[d])),
                         static_cast<std::uint64_t>(s.count[d]) * 2 + (s.dropped[d] ? 1 : 0));
      p.fence_once(a);
    } else if constexpr (requires { leaf.strides; }) {
      if (leaf.shape != p.shape)
        raise<SizeMismatch>(p.what, ": local operand ", k, " has shape ", shape_str(leaf.shape),
                            " but the expression has shape ", shape_str(p.shape));
    }
  });
}

/// Steps 1-2: validation, fences, the collective handshake. Throws on every rank.
template <std::size_t M, class E>
void prepare(Plan<M>& p, const E& e, std::string_view describe) {
  std::exception_ptr err;
  try {
    validate(p, e);
  } catch (const Error&) {
    err = std::current_exception();
  }
  std::uint64_t sig = hash_mix(hash_string(p.what), hash_string(typeid(E).name()));
  sig = err ? hash_string("numeric-invalid") : hash_mix(sig, p.sig);
  if (!err)
    for (auto& f : p.fences) f();
  try {
    agree_signature(p.ctx->comm(), sig, p.what, describe);
  } catch (const CollectiveMismatch&) {
    if (err) std::rethrow_exception(err);
    throw;
  }
  if (err) std::rethrow_exception(err);
  for (auto& f : p.syncs) f();
}

/// Step 3: binds every leaf to a slot (in place or through a fetch group).
template <std::size_t M, class E>
void plan_leaves(Plan<M>& p, const E& e) {
  e.for_each_leaf([&](const auto& leaf) {
    using L = std::remove_cvref_t<decltype(leaf)>;
    if constexpr (requires { leaf.v.section(); }) {
      auto& a = leaf.v.array();
      const auto& s = leaf.v.section();
      const int ov = p.overlap_with_out(a.id(), s);
      if (ov == 2) p.alias = true;
      if (ov == 1) p.pointwise = true;
      const std::size_t slot = p.slots.size();
      p.slots.emplace_back();
      if (p.empty) return;
      const auto piece = piece_section(s, p.k0, p.k1);
      const auto bb = piece.bounding_box();
      if (ov != 2 && intersect(bb, a.local_box()) == bb) {
        // In place: this rank's own block, no copy.
        const auto lay = a.layout_of(a.context().rank());
        const auto* base = reinterpret_cast<const typename L::value_type*>(a.window().base());
        Slot& sl = p.slots[slot];
        sl.ptr = base + lay.offset(piece.start);
        std::size_t j = 0;
        for (std::size_t d = 0; d < s.start.size(); ++d)
          if (!piece.dropped[d]) sl.str[j++] = piece.step[d] * lay.strides[d];
        return;
      }
      using G = FetchGroup<typename L::value_type, std::tuple_size_v<std::remove_cvref_t<decltype(s.start)>>>;
      G* g = nullptr;
      for (auto& gb : p.groups)
        if (gb->id == a.id()) g = static_cast<G*>(gb.get());
      if (!g) {
        auto ng = std::make_unique<G>();
        ng->id = a.id();
        ng->a = &a;
        g = ng.get();
        p.groups.push_back(std::move(ng));
      }
      g->members.push_back({piece, slot});
    } else if constexpr (requires { leaf.strides; }) {
      Slot sl;
      index off = 0;
      for (std::size_t d = 0; d < M; ++d) {
        off += p.k0[d] * leaf.strides[d];
        sl.str[d] = leaf.strides[d];
      }
      sl.ptr = leaf.data + (p.empty ? 0 : off);
      p.slots.push_back(sl);
    }
  });
}

/// Steps 3b-4: fetches, then the aliasing barrier (same decision on every rank).
template <std::size_t M>
void fetch_all(Plan<M>& p) {
  for (auto& g : p.groups) g->fetch(p.slots, p.alias || !p.has_out || g->id != p.out_id);
  if (p.alias) p.ctx->barrier();
}

/// Step 5a: collapses the iteration box over every bound pointer.
template <std::size_t M>
void collapse_iteration(Plan<M>& p, bool keep_coords) {
  std::vector<Slot*> ptrs;
  if (p.has_out) ptrs.push_back(&p.out_slot);
  for (auto& s : p.slots) ptrs.push_back(&s);
  p.nd = 0;
  if (keep_coords) {
    p.nd = static_cast<int>(M);
    for (std::size_t d = 0; d < M; ++d) p.count[d] = p.k1[d] - p.k0[d];
  } else {
    for (std::size_t d = 0; d < M; ++d) {
      const index c = p.k1[d] - p.k0[d];
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
  p.unit = true;
  if (p.nd > 0)
    for (Slot* s : ptrs) p.unit = p.unit && s->str[static_cast<std::size_t>(p.nd - 1)] == 1;
}

// ---- binding the expression tree to its slots ----------------------------------------------

template <std::size_t M>
struct Binder {
  const Plan<M>& p;
  std::size_t next = 0;

  template <class T>
  BoundPtr<T, M> ptr_leaf() {
    const Slot& s = p.slots[next++];
    BoundPtr<T, M> b;
    b.base = static_cast<const T*>(s.ptr);
    for (std::size_t d = 0; d < M; ++d) b.str[d] = s.str[d];
    b.inner = p.nd > 0 ? s.str[static_cast<std::size_t>(p.nd - 1)] : 1;
    b.p = b.base;
    return b;
  }
  template <class T, std::size_t N>
  auto operator()(const ViewLeaf<T, N, M>&) {
    return ptr_leaf<T>();
  }
  template <class T>
  auto operator()(const LocalLeaf<T, M>&) {
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
    return BoundWhere<decltype(c), decltype(a), decltype(b), typename WhereExpr<C, A, B>::value_type>{c, a, b};
  }
};

/// Step 5b: calls row(bound, out_row_ptr_offset_k, n) for every contiguous run, after
/// positioning the bound tree on it. `row` receives the RowPos too.
template <std::size_t M, class B, class Row>
void run_rows(const Plan<M>& p, B& b, Row&& row) {
  if (p.empty) return;
  std::array<index, max_dims> k{};
  Shape<M> abs = p.k0;
  RowPos pos{p.nd, k.data(), abs.data(), static_cast<int>(M)};
  if (p.nd == 0) {
    b.seek(pos);
    row(b, pos, index{1});
    return;
  }
  const int outer = p.nd - 1;
  const index n = p.count[static_cast<std::size_t>(outer)];
  while (true) {
    if (p.nd == static_cast<int>(M))
      for (std::size_t d = 0; d < M; ++d) abs[d] = p.k0[d] + k[d];
    b.seek(pos);
    row(b, pos, n);
    int d = outer - 1;
    for (; d >= 0; --d) {
      const auto du = static_cast<std::size_t>(d);
      if (++k[du] < p.count[du]) break;
      k[du] = 0;
    }
    if (d < 0) return;
  }
}

/// Offset of the current run in the slot's memory.
inline index run_offset(const Slot& s, const RowPos& pos) noexcept {
  index off = 0;
  for (int d = 0; d + 1 < pos.nd; ++d) off += pos.k[d] * s.str[static_cast<std::size_t>(d)];
  return off;
}

}  // namespace garray::detail
