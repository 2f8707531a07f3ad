#pragma once
// The owner-computes engine, part 3 of 3 (detail/engine.hpp has the overview): steps 5-6.
// Cutting the piece into sub-boxes by input owner, binding the expression tree to each
// sub-box's slots (Binder), collapsing the iteration, and calling the caller's row
// function for every contiguous run (run_rows, row_runs; execute visits sub-boxes in
// row-major order for ordered callers).

#include <garray/numeric/detail/engine_plan.hpp>
#include <garray/numeric/expr.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

namespace garray::detail {
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
