#pragma once
// The owner-computes engine, part 2 of 3 (detail/engine.hpp has the overview): steps 1-4.
// The Plan of one evaluation, the driver and the broadcast shape, validation and the
// collective handshake (prepare), the failure-rule wrapper (run_plan), snapshots of
// aliasing leaves and one LeafSource per leaf (plan_leaves).

#include <garray/numeric/detail/engine_sources.hpp>
#include <garray/numeric/expr.hpp>
#include <garray/runtime/context.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/fault.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <vector>

namespace garray::detail {
/// One evaluation: the driver's piece, the bound operands and the fetched buffers.
template <std::size_t M>
struct Plan {
  std::string_view what;
  std::optional<Context> ctx;
  Shape<M> shape{};
  bool have_driver = false;
  std::exception_ptr driver_error;  // the driver could not be set up on this rank (its view is stale, its
                                    // shape overflows): validate() rethrows it inside the handshake
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
    // run after the handshake's agreement: a throw there would reach one rank alone
    syncs.push_back([&a] { detail::ArrayAccess::window(a).memory_sync_noexcept(); });
  }

  /// What `shape` is, for messages: an assignment's output, or a free expression's shape.
  const char* shape_name() const noexcept {
    return has_out ? "the output's shape" : "the expression's shape";
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
    p.driver_error = std::make_exception_ptr(InvalidArgument(
        message(p.what, ": the output (or first operand) is a view of ", array_label(v.array_id()),
                ", which was destroyed, moved from or assigned to")));
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
  if (!p.ctx) return;  // no view operand: prepare() reports it
  p.have_driver = true;
  broadcast_shape(e, p.shape);
  try {  // (an overflowing shape) carried into the handshake: a throw here would leave the others waiting
    const Box<M> box =
        Distribution<M>::blocked().resolve(p.shape, p.ctx->size(), p.what).block(p.ctx->rank());
    p.empty = box.empty();
    p.k0 = box.lo;
    p.k1 = box.hi;
  } catch (...) {
    p.driver_error = std::current_exception();
  }
}

/// Step 1: local validation of every leaf against the driver; accumulates the signature.
template <std::size_t M, class E>
void validate(Plan<M>& p, const E& e) {
  if (p.driver_error) std::rethrow_exception(p.driver_error);
  int k = 0;
  e.for_each_leaf([&](const auto& leaf) {
    ++k;
    if constexpr (requires { leaf.v.section(); }) {
      auto& a = leaf.v.array(p.what);
      if (a.context() != *p.ctx)
        raise<InvalidArgument>(
            p.what, ": operand ", k, " (", array_label(a.id()),
            ") lives on a different context (process group) than the output/first operand");
      if (!broadcasts_to(leaf.v.shape(), p.shape))
        raise<SizeMismatch>(p.what, ": operand ", k, " (", array_label(a.id()), ") has shape ",
                            shape_str(leaf.v.shape()), ", which does not broadcast to ", p.shape_name(), " ",
                            shape_str(p.shape));
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
                            ", which does not broadcast to ", p.shape_name(), " ", shape_str(p.shape));
      // Its shape is an argument (local() asks for the same array on every rank; only its
      // values are not checked): ranks passing different shapes would plan differently.
      p.sig = hash_mix(p.sig, k);
      for (auto x : leaf.shape) p.sig = hash_mix(p.sig, static_cast<std::uint64_t>(x));
    } else if constexpr (requires { leaf.s; }) {
      // Scalars are arguments too: every rank must pass the same value.
      using S = std::remove_cvref_t<decltype(leaf.s)>;
      if constexpr (std::is_integral_v<S>)
        if (leaf.overflows)
          raise<InvalidArgument>(p.what, ": scalar operand ", k, " (", +leaf.s, ") is out of range for ",
                                 leaf.overflows,
                                 ", the type the operation computes in (NumPy 2 raises "
                                 "OverflowError; cast the array operand to a wider type first)");
      if constexpr (std::is_trivially_copyable_v<S>) p.sig = value_hash(hash_mix(p.sig, k), leaf.s);
    }
    // A functor (generate) is identified by its type (the expression's typeid): its bytes
    // may hold addresses (captures by reference) that differ across ranks legitimately.
  });
}

/// Steps 1-2: validation, fences, the collective handshake. Throws on every rank: a rank
/// whose arguments are invalid its error (the others CollectiveMismatch carrying its
/// message), a rank whose fence failed its error (the others CollectiveFailure). `invalid`:
/// an error the caller's own argument checks found on this rank (a bad axis), treated as
/// validate's.
template <std::size_t M, class E>
void prepare(Plan<M>& p, const E& e, std::string_view describe, std::exception_ptr invalid = nullptr) {
  // Without an array or view operand there is no context to run the collective on (the
  // same on every rank: it is the expression's type), so the throw is local.
  if (!p.ctx)
    raise<InvalidArgument>(p.what, ": the expression has no array or view operand (its context runs the "
                                   "collective; wrap local data in an array, or add one)");
  std::exception_ptr err;
  LocalFault fault = LocalFault::invalid;
  try {
    if (invalid) std::rethrow_exception(invalid);
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

}  // namespace garray::detail
