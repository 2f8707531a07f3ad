#pragma once
// Advanced indexing as in NumPy (issue 15): integer-array indexing and boolean masks.
//
//   auto t = garray::take(a, idx);            // np.take(a, idx): t has idx's shape
//   auto r = garray::take(a, idx, Axis{1});   // np.take(a, idx, axis=1) (idx 1-d)
//   garray::put(a, idx, values);              // np.put(a, idx, values) (values cyclic)
//   garray::put(a, idx, 0.0);                 // np.put(a, idx, 0.0)
//   auto s = garray::masked_select(a, a > 0); // a[a > 0]: a new 1-d array, row-major order
//   auto c = garray::compress(m, a);          // the same with the mask first
//   garray::place(a, a < 0, values);          // np.place(a, a < 0, values) (values cyclic)
//   garray::assign_where(a, a < 0, 0.0);      // a[a < 0] = 0 (np.copyto(a, 0, where=a < 0))
//   auto w = garray::where(a > 0, a, -a);     // (expr.hpp) np.where as a lazy expression
//
// Indices index the flattened (row-major) array or view `a`, as NumPy's take/put without an
// axis; negative indices count from the end. Index arrays are GlobalArrays (or views) of
// int32 or int64 of any shape. Masks are bool expressions (comparisons: `a > 0`, `where`, ...)
// or arrays/views of any element type (nonzero is true); a mask must have `a`'s shape.
// garray has no bool element type: a mask that must be stored is stored as int32 0/1.
//
// How the data moves (owner-computes, one-sided):
//   take           the result is distributed like idx (idx's own map when idx is a whole
//                  array, else blocked): each rank reads the indices of its result block
//                  (its own idx block: no transfer), checks them, and fetches a's elements
//                  with ONE index-list gather: one transport call per owner of a, straight
//                  into its result block.
//   put            rank r handles the r-th contiguous slice of idx's flat positions; within
//                  its slice the scatter keeps the last value of a repeated target, and a
//                  target also present in a higher rank's slice is left to that rank
//                  (resolved with one scatter_acc of 2^r per distinct target into a temporary
//                  int64 array of a's size, then one gather of those marks: 2 <= P <= 62;
//                  more ranks write one after another in rank order). So the value at the
//                  highest position of idx wins, as NumPy's sequential np.put; values are
//                  fetched with one get (or gather) per owner, written with one scatter per
//                  owner of a.
//   masks          the mask is evaluated into an int32 array distributed in slabs along axis
//                  0 (each rank's block is a contiguous run of flat positions, in rank
//                  order); one MPI_Allgather of the per-rank counts gives each rank its offset
//                  in the selection; then one gather (compress) or scatter (place) per owner
//                  of a, and one put per owner of the result.
//
// Every function is **Collective** over the arrays' context and follows the failure rule
// (docs/semantics.md): one signature handshake (arrays, sections, element and index types,
// scalars) that also completes every rank's earlier writes to the operands; an index out of
// range anywhere makes every rank throw BoundsError (the rank that found it its own, naming
// the position; the others one carrying its message) before anything is written; a mask of
// another shape throws SizeMismatch (CollectiveMismatch when ranks pass different masks or
// arrays); a failure while moving data throws on every rank (CollectiveFailure
// on the others). Inputs are read completely before any element is written, so `a` may alias
// idx, values or the mask.

#include <garray/array/global_array.hpp>
#include <garray/array/view.hpp>
#include <garray/numeric/elementwise.hpp>
#include <garray/numeric/expr.hpp>
#include <garray/numeric/reductions.hpp>  // Axis
#include <garray/runtime/context.hpp>
#include <garray/runtime/datatype.hpp>
#include <garray/runtime/error.hpp>

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace garray {

namespace detail {

/// The view of an array or view operand (arrays: the whole array). Local.
template <class X>
auto index_view(const X& x) {
  using D = std::remove_cvref_t<X>;
  if constexpr (is_view<D>::value) return x;
  else return const_cast<D&>(x).view();
}
template <class X>
using index_view_t = decltype(index_view(std::declval<const X&>()));

/// An array or view operand (not an expression).
template <class X>
concept StoredOperand = is_view<std::remove_cvref_t<X>>::value || is_global_array<std::remove_cvref_t<X>>::value;
/// A stored operand of int32 or int64 elements (an index array).
template <class X>
concept IndexOperand = StoredOperand<X> && (std::is_same_v<typename index_view_t<X>::value_type, std::int32_t> ||
                                            std::is_same_v<typename index_view_t<X>::value_type, std::int64_t>);

/// Signature contribution of a view: its array's id, element type and section.
template <class V>
std::uint64_t view_hash(std::uint64_t h, const V& v) {
  h = hash_mix(h, v.array().id());
  h = hash_mix(h, static_cast<std::uint64_t>(type_code<typename V::value_type>()));
  const auto& s = v.section();
  for (std::size_t d = 0; d < s.start.size(); ++d) {
    h = hash_mix(h, static_cast<std::uint64_t>(s.start[d]));
    h = hash_mix(h, static_cast<std::uint64_t>(s.step[d]));
    h = hash_mix(h, static_cast<std::uint64_t>(s.count[d]));
    h = hash_mix(h, s.dropped[d] ? 1U : 0U);
  }
  return h;
}

/// The base-array section of the view positions in `b` (view coordinates). Local.
template <class V, std::size_t M>
auto box_section(const V& v, const Box<M>& b) {
  auto s = v.section();
  std::size_t j = 0;
  for (std::size_t d = 0; d < s.start.size(); ++d) {
    if (s.dropped[d]) continue;
    s.start[d] += b.lo[j] * s.step[d];
    s.count[d] = b.extent(j);
    ++j;
  }
  return s;
}

/// Row-major view coordinates of flat position f in `shape`. Local.
template <std::size_t M>
Shape<M> unflatten(Index f, const Shape<M>& shape) noexcept {
  Shape<M> k{};
  for (std::size_t d = M; d-- > 0;) {
    k[d] = f % shape[d];
    f /= shape[d];
  }
  return k;
}

/// The first flat position of rank r's share when n positions are split evenly in rank
/// order. Local.
inline Index even_split(Index n, int r, int p) noexcept {
  return n / p * r + std::min<Index>(r, n % p);
}

/// Fetches the view's flat positions [lo, hi) into `out` (one-sided: a section get for 1-d
/// views, an index-list gather otherwise; one transport call per owner either way).
template <class V>
void fetch_flat(const V& v, Index lo, Index hi, std::span<typename V::value_type> out) {
  constexpr std::size_t M = V::dims;
  if (hi <= lo) return;
  if constexpr (M == 1) {
    v.array().get_section(box_section(v, Box<1>{{lo}, {hi}}), out);
  } else {
    std::vector<Shape<M>> k(static_cast<std::size_t>(hi - lo));
    const auto sh = v.shape();
    for (Index f = lo; f < hi; ++f) k[static_cast<std::size_t>(f - lo)] = unflatten<M>(f, sh);
    v.gather(k, out);
  }
}

/// The agreement after a local step that ran after the handshake (index values read from
/// the arrays and checked): if any rank's step threw, that rank rethrows its error; every
/// other rank throws E carrying the lowest such rank's message when that rank found bad
/// input (its error is an E), CollectiveFailure when its step failed otherwise (the read
/// itself: MpiError, bad_alloc). One allreduce (plus a broadcast on failure). **Collective.**
template <class E>
void agree_checked(const Context& ctx, std::exception_ptr err, std::string_view what) {
  LocalFault fault = LocalFault::none;
  if (err) {
    fault = LocalFault::failed;
    try {
      std::rethrow_exception(err);
    } catch (const E&) {
      fault = LocalFault::invalid;
    } catch (...) {
    }
  }
  const Agreement a = agree_with_errors(ctx.comm(), hash_string(what), fault);
  if (a.failed_rank < 0) return;
  if (a.fault == LocalFault::failed) throw_peer_failure(ctx.comm(), a.failed_rank, err, what);
  const std::string text = peer_message(ctx.comm(), a.failed_rank, err);
  if (err) std::rethrow_exception(err);
  raise<E>(what, ": bad input on rank ", a.failed_rank, ": ", text);
}

/// Reads index values, normalises them against `n` (negative: from the end) and checks the
/// range; throws BoundsError naming the position `position(j)` of the bad value raw[j] in
/// the index array. Local.
template <class I, class Position>
std::vector<Index> normalize_indices_at(std::span<const I> raw, Position&& position, Index n, std::string_view what) {
  std::vector<Index> out(raw.size());
  for (std::size_t j = 0; j < raw.size(); ++j) {
    Index v = static_cast<Index>(raw[j]);
    const Index orig = v;
    if (v < 0) v += n;
    if (v < 0 || v >= n)
      raise<BoundsError>(what, ": index ", orig, " at position ", position(j),
                         " of the index array is out of range for size ", n);
    out[j] = v;
  }
  return out;
}
/// raw: the index array's flat positions first_pos, first_pos + 1, ...
template <class I>
std::vector<Index> normalize_indices(std::span<const I> raw, Index first_pos, Index n, std::string_view what) {
  return normalize_indices_at<I>(raw, [&](std::size_t j) { return first_pos + static_cast<Index>(j); }, n, what);
}
/// raw: the box `b` of an index array of shape `shape`, row-major in the box; positions are
/// row-major in the whole index array.
template <class I, std::size_t K>
std::vector<Index> normalize_indices(std::span<const I> raw, const Box<K>& b, const Shape<K>& shape, Index n,
                                     std::string_view what) {
  Shape<K> ext{};
  for (std::size_t d = 0; d < K; ++d) ext[d] = b.extent(d);
  const auto position = [&](std::size_t j) {  // error path only
    const Shape<K> q = unflatten<K>(static_cast<Index>(j), ext);
    Index pos = 0;
    for (std::size_t d = 0; d < K; ++d) pos = pos * shape[d] + b.lo[d] + q[d];
    return pos;
  };
  return normalize_indices_at<I>(raw, position, n, what);
}

/// The handshake of an indexing collective over the views `vs...`: completes every rank's
/// earlier writes on their arrays, compares `sig`, runs `validate` (throws: this rank its
/// error, the others CollectiveMismatch). **Collective.**
template <class Validate, class... Vs>
void indexing_handshake(const Context& ctx, std::uint64_t sig, std::string_view what, Validate&& validate,
                        const Vs&... vs) {
  ctx.check_valid(what);
  const std::array<const Window*, sizeof...(Vs)> wins{&ArrayAccess::window(vs.array())...};
  begin_collective(std::span<const Window* const>(wins), ctx.comm(), sig, what, what,
                   [&] {
                     ((vs.array().context() == ctx
                           ? void()
                           : raise<InvalidArgument>(what, ": operands live on different contexts")),
                      ...);
                     validate();
                   });
}

/// Evaluates a mask into int32 0/1 distributed in slabs along axis 0 (each rank's block is
/// a contiguous run of flat positions, in rank order). **Collective** (garray::eval).
template <class Mask>
auto eval_mask(const Mask& mask) {
  constexpr std::size_t M = static_cast<std::size_t>(expr_t<Mask>::rank);
  return eval<std::int32_t>(where(mask, std::int32_t{1}, std::int32_t{0}), Distribution<M>::slab(0));
}

/// Each rank's number of true mask elements (its slab block) and the offsets (exclusive
/// prefix) and total, from one MPI_Allgather. **Collective** (after the handshake).
struct MaskCounts {
  Index mine = 0;    ///< selected elements in this rank's block
  Index offset = 0;  ///< selected elements in the blocks of lower ranks
  Index total = 0;   ///< selected elements in all
};
/// Local part: the positions (a's view coordinates) of the true elements of this rank's
/// block of `m`, in row-major order.
template <std::size_t M>
std::vector<Shape<M>> true_positions(GlobalArray<std::int32_t, M>& m) {
  std::vector<Shape<M>> where_true;
  auto blk = m.access();
  const Box<M> b = m.local_box();
  Shape<M> ext{};
  for (std::size_t d = 0; d < M; ++d) ext[d] = b.extent(d);
  const Index n = volume(ext);
  const std::int32_t* p = blk.data();
  for (Index f = 0; f < n; ++f)
    if (p[f] != 0) {
      Shape<M> k = unflatten<M>(f, ext);
      for (std::size_t d = 0; d < M; ++d) k[d] += b.lo[d];
      where_true.push_back(k);
    }
  return where_true;
}
/// The counts of every rank from this rank's `mine`: one MPI_Allgather. **Collective**
/// (every rank reaches it: call it outside any step that may throw on one rank only).
MaskCounts count_mask(const Context& ctx, Index mine);

/// put's resolution of a target that several ranks write (the value at the highest position
/// of idx wins): every rank marks its distinct targets with 2^rank in a temporary int64
/// array of a's size (one scatter_acc), then keeps a position only when no higher rank
/// marked its target (one gather). Active with 2 <= P <= 62 ranks and slices below 2^32
/// positions (the same decision on every rank); otherwise put writes in rank order.
/// Compiled once into libgarray_numeric (numeric/src/indexing.cpp): no user translation
/// unit instantiates its int64 array operations.
class RepeatMarks {
 public:
  /// Whether the marks are used for a put of `total` positions over `ctx`. **Collective**
  /// over ctx when active: creates the temporary array of `size` elements (zeros).
  RepeatMarks(const Context& ctx, Index size, Index total);
  ~RepeatMarks();
  RepeatMarks(const RepeatMarks&) = delete;
  RepeatMarks& operator=(const RepeatMarks&) = delete;
  /// Local. True when the marks resolve repeats (else put writes in rank order).
  bool active() const noexcept { return state_ != nullptr; }
  /// Local. This rank's targets (flat indices of a, one per position of its slice),
  /// grouped into distinct targets.
  void group(const std::vector<Index>& target);
  /// One-sided: adds 2^rank at each of this rank's distinct targets, then fence().
  void mark();
  /// One-sided: per position of this rank's slice, whether no higher rank marked its
  /// target (this rank writes it).
  std::vector<char> keep();

 private:
  struct State;
  std::unique_ptr<State> state_;
};
}  // namespace detail

/// np.take(a, idx): a new array of idx's shape with `result[k] = a.flat[idx[k]]` (a is read
/// as flattened in row-major order; negative indices count from the end; repeats allowed).
/// `a`: a GlobalArray or View; `idx`: a GlobalArray or View of int32/int64 of any shape. The
/// result is distributed as idx when idx is a whole array (so each rank reads its indices
/// from its own block), blocked otherwise. Each rank fetches its result elements with one
/// index-list gather (one transport call per owner of a).
/// **Collective** over a's context (handshaked: arrays, sections, types). On return the
/// result is complete and visible on every rank; a and idx are unchanged. Throws, on every
/// rank, before the result is written: BoundsError for an index outside [-a.size(),
/// a.size()) (the rank that found it its own error, naming the position in idx; the others a
/// BoundsError carrying that message), CollectiveMismatch when ranks pass different
/// arguments, InvalidArgument for operands on different contexts.
template <detail::StoredOperand A, detail::IndexOperand I>
auto take(const A& a, const I& idx) {
  const auto av = detail::index_view(a);
  const auto iv = detail::index_view(idx);
  using T = typename decltype(av)::value_type;
  using IT = typename decltype(iv)::value_type;
  constexpr std::size_t K = decltype(iv)::dims;
  static_assert(K >= 1, "garray::take: the index array needs at least one dimension");
  constexpr std::string_view what = "garray::take";
  detail::join_if_stale(what, av, iv);
  const Context& ctx = av.array().context();
  std::uint64_t sig = detail::hash_string(what);
  sig = detail::view_hash(detail::view_hash(sig, av), iv);
  detail::indexing_handshake(ctx, sig, what, [] {}, av, iv);

  const Distribution<K> dist = detail::derived_distribution(iv);
  GlobalArray<T, K> out(ctx, iv.shape(), dist, Shape<K>{}, uninitialized);
  const Box<K> b = out.local_box();
  Shape<K> ext{};
  for (std::size_t d = 0; d < K; ++d) ext[d] = b.extent(d);
  const Index n = volume(ext);
  constexpr std::size_t M = decltype(av)::dims;
  std::vector<Shape<M>> where_in_a;
  std::exception_ptr err;
  try {
    std::vector<IT> raw(static_cast<std::size_t>(n));
    if (n > 0) iv.array().get_section(detail::box_section(iv, b), std::span<IT>(raw));
    detail::fault_point("indexing.read");
    // positions in idx: out has idx's shape and distribution, so out's block is idx's box b
    const auto flat = detail::normalize_indices<IT>(raw, b, iv.shape(), av.size(), what);
    where_in_a.resize(flat.size());
    const auto sh = av.shape();
    for (std::size_t j = 0; j < flat.size(); ++j) where_in_a[j] = detail::unflatten<M>(flat[j], sh);
  } catch (...) {
    err = std::current_exception();
  }
  detail::agree_checked<BoundsError>(ctx, err, what);
  detail::run_concluded(ctx.comm(), what, [&] {
    detail::fault_point("indexing.write");
    auto blk = out.access();
    if (n > 0) av.gather(where_in_a, std::span<T>(blk.data(), static_cast<std::size_t>(n)));
  });
  return out;
}

/// np.take(a, idx, axis=k) for a 1-d index array: a new array of a's shape with extent k
/// replaced by idx.size(), `result[..., j, ...] = a[..., idx[j], ...]` (negative indices count
/// from the end of dimension k; repeats allowed). `a`: a GlobalArray or View; `idx`: a 1-d
/// GlobalArray or View of int32/int64. The result is blocked; each rank reads the part of idx
/// its block needs (one get) and fetches its block with one index-list gather (one transport
/// call per owner of a).
/// **Collective** over a's context (handshaked: arrays, sections, types, the axis). On return
/// the result is complete and visible everywhere; a and idx unchanged. Throws on every rank
/// before the result is written: InvalidArgument (axis >= a's dimensions), BoundsError (an
/// index outside [-extent, extent)), CollectiveMismatch.
template <detail::StoredOperand A, detail::IndexOperand I>
auto take(const A& a, const I& idx, Axis axis) {
  const auto av = detail::index_view(a);
  const auto iv = detail::index_view(idx);
  using T = typename decltype(av)::value_type;
  using IT = typename decltype(iv)::value_type;
  constexpr std::size_t M = decltype(av)::dims;
  static_assert(decltype(iv)::dims == 1, "garray::take along an axis: the index array must be 1-d");
  constexpr std::string_view what = "garray::take";
  detail::join_if_stale(what, av, iv);
  const Context& ctx = av.array().context();
  const std::size_t k = detail::axis_index<M>(axis);  // M: no such axis
  std::uint64_t sig = detail::hash_mix(detail::hash_string("garray::take(axis)"), k);
  sig = detail::view_hash(detail::view_hash(sig, av), iv);
  detail::indexing_handshake(
      ctx, sig, what,
      [&] {
        if (k >= M) detail::raise<InvalidArgument>(what, ": axis ", axis.value, " out of range for a ", M, "-d array");
      },
      av, iv);
  Shape<M> shape = av.shape();
  const Index extent = shape[k];
  shape[k] = iv.size();
  GlobalArray<T, M> out(ctx, shape, Distribution<M>::blocked(), Shape<M>{}, uninitialized);
  const Box<M> b = out.local_box();
  Shape<M> ext{};
  for (std::size_t d = 0; d < M; ++d) ext[d] = b.extent(d);
  const Index n = volume(ext);
  std::vector<Shape<M>> where_in_a;
  std::exception_ptr err;
  try {
    detail::fault_point("indexing.read");  // (on every rank, also one that owns nothing)
    if (n > 0) {
      std::vector<IT> raw(static_cast<std::size_t>(ext[k]));
      detail::fetch_flat(iv, b.lo[k], b.hi[k], std::span<IT>(raw));
      const auto sel = detail::normalize_indices<IT>(raw, b.lo[k], extent, what);
      where_in_a.resize(static_cast<std::size_t>(n));
      for (Index f = 0; f < n; ++f) {
        Shape<M> q = detail::unflatten<M>(f, ext);
        for (std::size_t d = 0; d < M; ++d) q[d] = d == k ? sel[static_cast<std::size_t>(q[d])] : q[d] + b.lo[d];
        where_in_a[static_cast<std::size_t>(f)] = q;
      }
    } else if (volume(shape) == 0 && iv.size() > 0) {
      // An empty result (another extent is 0) reads nothing of a, but its indices are still
      // checked, as NumPy does (np.take(zeros((5, 0)), [10], axis=0) raises): each rank
      // checks a share of idx.
      const Index m = iv.size(), p = ctx.size(), r = ctx.rank();
      const Index lo = m * r / p, hi = m * (r + 1) / p;
      if (hi > lo) {
        std::vector<IT> raw(static_cast<std::size_t>(hi - lo));
        detail::fetch_flat(iv, lo, hi, std::span<IT>(raw));
        (void)detail::normalize_indices<IT>(raw, lo, extent, what);
      }
    }
  } catch (...) {
    err = std::current_exception();
  }
  detail::agree_checked<BoundsError>(ctx, err, what);
  detail::run_concluded(ctx.comm(), what, [&] {
    detail::fault_point("indexing.write");
    auto blk = out.access();
    if (n > 0) av.gather(where_in_a, std::span<T>(blk.data(), static_cast<std::size_t>(n)));
  });
  return out;
}

/// np.put(a, idx, values): `a.flat[idx[j]] = values.flat[j % values.size()]` for every
/// position j of idx in row-major order (values repeated cyclically when shorter, as NumPy;
/// an empty `values` writes nothing). Repeated indices: the value of the **highest position**
/// in idx wins, as NumPy's sequential loop (deterministic for any rank count and
/// distribution). `a`: a GlobalArray or View (written); `idx`: an int32/int64 array or view
/// of any shape; `values`: an array or view of a's element type, any shape.
/// **Collective** over a's context (handshaked). On return the elements are written and
/// visible to every rank. Throws, on every rank, before anything is written: BoundsError for
/// an index out of range (as take), CollectiveMismatch, InvalidArgument (different
/// contexts). a may alias idx or values (they are read completely first).
template <detail::StoredOperand A, detail::IndexOperand I, class Values>
requires(detail::StoredOperand<Values> || ScalarOperand<Values>) void put(A&& a, const I& idx, const Values& values) {
  const auto av = detail::index_view(a);
  const auto iv = detail::index_view(idx);
  using T = typename decltype(av)::value_type;
  using IT = typename decltype(iv)::value_type;
  constexpr std::size_t M = decltype(av)::dims;
  constexpr std::string_view what = "garray::put";
  constexpr bool scalar = ScalarOperand<Values>;
  if constexpr (scalar) detail::join_if_stale(what, av, iv);
  else detail::join_if_stale(what, av, iv, detail::index_view(values));  // a stale values view joins too
  const Context& ctx = av.array().context();
  std::uint64_t sig = detail::hash_string(what);
  sig = detail::view_hash(detail::view_hash(sig, av), iv);
  Index nv = 1;
  if constexpr (scalar) {
    sig = detail::value_hash(sig, detail::store_cast<T>(values));
    detail::indexing_handshake(ctx, sig, what, [] {}, av, iv);
  } else {
    const auto vv = detail::index_view(values);
    static_assert(std::is_same_v<typename decltype(vv)::value_type, T>,
                  "garray::put: values must have the array's element type (use astype)");
    sig = detail::view_hash(sig, vv);
    nv = vv.size();
    detail::indexing_handshake(ctx, sig, what, [] {}, av, iv, vv);
  }
  const int me = ctx.rank(), p = ctx.size();
  const Index total = iv.size();
  const Index lo = detail::even_split(total, me, p), hi = detail::even_split(total, me + 1, p);
  std::vector<Index> target;
  std::exception_ptr err;
  try {
    std::vector<IT> raw(static_cast<std::size_t>(hi - lo));
    detail::fetch_flat(iv, lo, hi, std::span<IT>(raw));
    detail::fault_point("indexing.read");
    target = detail::normalize_indices<IT>(raw, lo, av.size(), what);
  } catch (...) {
    err = std::current_exception();
  }
  detail::agree_checked<BoundsError>(ctx, err, what);
  if (nv == 0 || total == 0) return;  // np.put with empty values: nothing (same on every rank)

  // Stage 1: read the values of every position (before anything is written: a may alias
  // them) and, with more than one rank, mark this rank's distinct targets with 2^rank in a
  // temporary array (scatter_acc: the marks of all ranks add up).
  const std::size_t cnt = target.size();
  std::vector<T> vals;  // sized inside the failure rule (this rank's count)
  // (the marks need P <= 62 bits and slices below 2^32 positions; else rank order; the same
  // decision on every rank)
  detail::RepeatMarks marks(ctx, av.size(), total);
  detail::run_concluded(ctx.comm(), what, [&] {
    if (marks.active()) marks.group(target);
    vals.resize(cnt);
    if constexpr (scalar) {
      std::fill(vals.begin(), vals.end(), detail::store_cast<T>(values));
    } else {
      const auto vv = detail::index_view(values);
      constexpr std::size_t MV = decltype(vv)::dims;
      if (hi <= nv) {  // no wrap-around: the flat range [lo, hi) of values
        detail::fetch_flat(vv, lo, hi, std::span<T>(vals));
      } else {
        std::vector<Shape<MV>> vk(cnt);
        const auto vs = vv.shape();
        for (std::size_t j = 0; j < cnt; ++j) vk[j] = detail::unflatten<MV>((lo + static_cast<Index>(j)) % nv, vs);
        if (!vk.empty()) vv.gather(vk, std::span<T>(vals));
      }
    }
    if (marks.active()) marks.mark();
  });
  // Stage 2: one scatter per owner of a of the positions whose target no higher rank writes.
  // Within the list, the scatter stores the last value of a repeated target (semantics.md),
  // i.e. the highest position of this rank's slice.
  const auto sh = av.shape();
  if (marks.active()) {
    detail::run_concluded(ctx.comm(), what, [&] {
      detail::fault_point("indexing.write");
      const std::vector<char> keep = marks.keep();
      std::vector<Shape<M>> k;
      std::vector<T> kv;
      k.reserve(cnt);
      kv.reserve(cnt);
      for (std::size_t j = 0; j < cnt; ++j) {
        if (keep[j]) {
          k.push_back(detail::unflatten<M>(target[j], sh));
          kv.push_back(vals[j]);
        }
      }
      if (!k.empty()) av.scatter(k, kv);
      av.array().fence();
    });
  } else {
    for (int q = 0; q < p; ++q)  // one rank, or more than 62 ranks: in rank order
      detail::run_concluded(ctx.comm(), what, [&] {
        detail::fault_point("indexing.write");
        if (q == me) {  // (the positions are built here: their count is this rank's)
          std::vector<Shape<M>> k(cnt);
          for (std::size_t j = 0; j < cnt; ++j) k[j] = detail::unflatten<M>(target[j], sh);
          if (!k.empty()) av.scatter(k, vals);
          av.array().fence();
        }
      });
  }
}

/// a[mask]: a new 1-d array (blocked) of the elements of `a` where `mask` is true (nonzero),
/// in row-major order. `a`: a GlobalArray or View; `mask`: a bool expression (`a > 0`) or an
/// array, view or expression of any element type, of a's shape. The mask is evaluated into
/// a temporary int32 array in slabs along axis 0; one MPI_Allgather of the per-rank counts;
/// each rank gathers its selected elements (one call per owner of a) and puts them at its
/// offset (one put per owner of the result).
/// **Collective** over a's context (handshaked). On return the result is complete and
/// visible everywhere; a is unchanged. Throws SizeMismatch on every rank when the mask's
/// shape differs from a's, CollectiveMismatch when ranks pass different masks or arrays,
/// before the result exists.
template <detail::StoredOperand A, ArrayOperand Mask>
auto masked_select(const A& a, const Mask& mask) {
  const auto av = detail::index_view(a);
  using T = typename decltype(av)::value_type;
  constexpr std::size_t M = decltype(av)::dims;
  static_assert(expr_t<Mask>::rank == static_cast<int>(M),
                "garray::masked_select: the mask needs the array's number of dimensions");
  constexpr std::string_view what = "garray::masked_select";
  detail::join_if_stale(what, av);
  const Context& ctx = av.array().context();
  auto m = detail::eval_mask(mask);
  const auto mv = m.view();
  std::uint64_t sig = detail::hash_string(what);
  sig = detail::view_hash(detail::view_hash(sig, av), mv);
  detail::indexing_handshake(
      ctx, sig, what,
      [&] {
        if (mv.shape() != av.shape())
          detail::raise<SizeMismatch>(what, ": mask of shape ", detail::seq(mv.shape()), " for an array of shape ",
                                      detail::seq(av.shape()));
      },
      av, mv);
  std::vector<Shape<M>> sel;
  sel = detail::run_concluded(ctx.comm(), what, [&] { return detail::true_positions(m); });
  const detail::MaskCounts c = detail::count_mask(ctx, static_cast<Index>(sel.size()));
  GlobalArray<T, 1> out(ctx, Shape<1>{c.total}, Distribution<1>::blocked(), Shape<1>{}, uninitialized);
  detail::run_concluded(ctx.comm(), what, [&] {
    detail::fault_point("indexing.write");
    if (c.mine > 0) {
      std::vector<T> v(static_cast<std::size_t>(c.mine));
      av.gather(sel, std::span<T>(v));
      Section<1> s = Section<1>::full(out.shape());
      s.start[0] = c.offset;
      s.count[0] = c.mine;
      out.put_section(s, std::span<const T>(v));
    }
    out.fence();
  });
  return out;
}

/// np.compress(mask, a) for a mask of a's shape (np.compress on the flattened array with
/// the flattened mask): the same as masked_select(a, mask). **Collective**, as masked_select.
template <ArrayOperand Mask, detail::StoredOperand A>
auto compress(const Mask& mask, const A& a) {
  return masked_select(a, mask);
}

/// np.place(a, mask, values) (a[mask] = values when values has as many elements as the mask
/// selects): the k-th selected element of `a` (row-major) becomes values.flat[k %
/// values.size()]. `values`: an array or view of a's element type, any shape. Each rank
/// gathers the values of its selected elements (one call per owner of values) and scatters
/// them into a (one call per owner of a).
/// **Collective** over a's context (handshaked). On return the elements are written and
/// visible to every rank. Throws on every rank before anything is written: SizeMismatch (mask
/// of another shape), InvalidArgument (values empty while the mask selects something, as
/// NumPy), CollectiveMismatch. a may alias the mask or values.
template <detail::StoredOperand A, ArrayOperand Mask, detail::StoredOperand Values>
void place(A&& a, const Mask& mask, const Values& values) {
  const auto av = detail::index_view(a);
  const auto vv = detail::index_view(values);
  using T = typename decltype(av)::value_type;
  static_assert(std::is_same_v<typename decltype(vv)::value_type, T>,
                "garray::place: values must have the array's element type (use astype)");
  constexpr std::size_t M = decltype(av)::dims;
  constexpr std::size_t MV = decltype(vv)::dims;
  static_assert(expr_t<Mask>::rank == static_cast<int>(M),
                "garray::place: the mask needs the array's number of dimensions");
  constexpr std::string_view what = "garray::place";
  detail::join_if_stale(what, av, vv);
  const Context& ctx = av.array().context();
  auto m = detail::eval_mask(mask);
  const auto mv = m.view();
  std::uint64_t sig = detail::hash_string(what);
  sig = detail::view_hash(detail::view_hash(detail::view_hash(sig, av), mv), vv);
  detail::indexing_handshake(
      ctx, sig, what,
      [&] {
        if (mv.shape() != av.shape())
          detail::raise<SizeMismatch>(what, ": mask of shape ", detail::seq(mv.shape()), " for an array of shape ",
                                      detail::seq(av.shape()));
      },
      av, mv, vv);
  std::vector<Shape<M>> sel;
  sel = detail::run_concluded(ctx.comm(), what, [&] { return detail::true_positions(m); });
  const detail::MaskCounts c = detail::count_mask(ctx, static_cast<Index>(sel.size()));
  const Index nv = vv.size();
  if (c.total > 0 && nv == 0)  // the same decision on every rank: no communication needed
    detail::raise<InvalidArgument>(what, ": cannot place from an empty values array into ", c.total,
                                   " selected elements");
  std::vector<T> v;
  detail::run_concluded(ctx.comm(), what, [&] {  // read everything before anyone writes
    detail::fault_point("indexing.read");
    v.resize(static_cast<std::size_t>(c.mine));  // (this rank's count: inside the failure rule)
    std::vector<Shape<MV>> vk(v.size());
    const auto vs = vv.shape();
    for (std::size_t j = 0; j < v.size(); ++j)
      vk[j] = detail::unflatten<MV>((c.offset + static_cast<Index>(j)) % nv, vs);
    if (!vk.empty()) vv.gather(vk, std::span<T>(v));
  });
  detail::run_concluded(ctx.comm(), what, [&] {
    detail::fault_point("indexing.write");
    if (!sel.empty()) av.scatter(sel, std::span<const T>(v));
    av.array().fence();
  });
}

/// a[mask] = x, or np.copyto(a, x, where=mask): every element of `out` where `mask` is true
/// becomes the matching element of `x` (a scalar, or an operand of out's shape); the others
/// are unchanged. The same as `assign(out, where(mask, x, out))`: one fused owner-computes
/// pass (NumPy aliasing semantics). **Collective**, as assign: on return the elements are
/// written and visible everywhere; a mask or x of another shape throws SizeMismatch on every
/// rank before anything is written.
template <class O, ArrayOperand Mask, Operand X>
void assign_where(O&& out, const Mask& mask, const X& x) {
  const auto ov = detail::index_view(out);
  assign(ov, where(mask, x, ov));
}

}  // namespace garray
