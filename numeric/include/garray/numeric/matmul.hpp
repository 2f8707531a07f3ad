#pragma once
// Distributed matrix products: gemm (C = alpha op(A) op(B) + beta C) and matmul (A B as a
// new array), for 2-d arrays and 2-d views of float, double, complex<float>, complex<double>.
//
//   garray::GlobalArray<double, 2> a(ctx, {m, k}), b(ctx, {k, n}, garray::Distribution<2>::slab(1));
//   auto c = garray::matmul(a, b);                                  // new m x n array (blocked)
//   garray::gemm(2.0, a, b, 0.5, c);                                // c = 2 a b + 0.5 c
//   garray::gemm(garray::MatOp::transpose, garray::MatOp::none,     // c = a[0:k, :]^T b
//                1.0, a[idx[range(0, k)]], b, 0.0, c);
//
// **Collective over the operands' context** (one group for all three). Owner computes,
// SUMMA style: every rank computes the part of C stored in its own block,
//
//   C_mine (rows I, cols J) = beta C_mine + alpha sum over k-panels op(A)[I, kp] op(B)[kp, J]
//
//   1. agree   every rank completes its outstanding operations on A, B, C; one allreduce
//              compares the signature (ops, alpha, beta, element type, arrays, sections).
//              Shapes and groups are checked first: a call that throws changed nothing.
//   2. compute (inside detail::run_concluded: if any rank fails, every rank throws)
//              The rows I of op(A) and columns J of op(B) are read where they lie:
//              - blocks this rank can address (its own block; every block of a shared-memory
//                window) with unit stride along the row are passed to the BLAS in place:
//                one dgemm per (A owner piece, B owner piece) pair, over the whole k range;
//              - everything else is fetched one-sidedly in k-panels of `panel` columns into
//                dense buffers, double-buffered: the nonblocking gets of panel p+1 are in
//                flight while the BLAS multiplies panel p.
//              The products go straight into my block of C, unless C's array is also A's
//              or B's (or my part of C is not row-major with unit column stride): then
//              into a private buffer.
//   3. write   after every rank finished reading (the concluding allreduce of step 2 is a
//              barrier), a buffered block is stored into C; then C.sync().
// Aliasing is therefore allowed (C may be a view of A or B, as in numpy's a[...] = a @ b).
// After a failure in step 2 (CollectiveFailure / the failing rank's own exception) A and B
// are unchanged and C's elements are unspecified (partly updated blocks).
//
// BLAS: the Debian OpenBLAS (cblas). With several ranks per node set
// OPENBLAS_NUM_THREADS=1 (the BLAS' own threads would compete with the ranks).
// Accuracy: each element is a dot product summed by the BLAS in panel and owner order;
// compared with one serial dgemm the result differs by rounding only
// (|err| <= k eps sum |a_ik b_kj| up to a small constant).
// Errors (every rank throws, nothing written): SizeMismatch (inner dimensions or C's
// shape), InvalidArgument (operands on different groups), CollectiveMismatch (ranks passed
// different arguments), CollectiveFailure (another rank failed while computing).

#include <cblas.h>

#include <algorithm>
#include <array>
#include <climits>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <garray/array/copy.hpp>
#include <garray/array/detail/transfer_plan.hpp>
#include <garray/array/global_array.hpp>
#include <garray/array/view.hpp>
#include <garray/runtime/context.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/fault.hpp>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace garray {

/// op() of a gemm operand.
enum class MatOp {
  none,           ///< op(X) = X
  transpose,      ///< op(X) = X^T
  conj_transpose  ///< op(X) = X^H (X^T for real types)
};

/// Element types of the matrix products (the BLAS' four).
template <class T>
concept BlasElement = std::is_same_v<T, float> || std::is_same_v<T, double> ||
    std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

/// Tuning of gemm/matmul. Results do not depend on it beyond rounding.
struct GemmOptions {
  /// Width (k columns) of the panels fetched from ranks whose memory cannot be read in
  /// place; 0 picks a width from the panel's size (256..1024). Must agree on every rank.
  Index panel = 0;
};

namespace detail {
/// InvalidArgument (naming `what` and `ids...`) unless every context in `others` holds the
/// ranks of `base` in the same order: one group for all operands of a product. Local.
template <class... Ids>
void require_one_group(std::string_view what, const Context& base,
                       std::initializer_list<const Context*> others, const Ids&... ids) {
  for (const Context* other : others) {
    int cmp = MPI_UNEQUAL;
    check_mpi(MPI_Comm_compare(base.comm(), other->comm(), &cmp), "MPI_Comm_compare");
    if (cmp != MPI_IDENT && cmp != MPI_CONGRUENT)
      raise<InvalidArgument>(what, ": operands live on ",
                             cmp == MPI_SIMILAR
                                 ? "contexts that number the same ranks differently (a split with "
                                   "another key, or RankOrder::node)"
                                 : "different process groups",
                             ids...);
  }
}
}  // namespace detail

namespace detail {

/// A 2-d operand as a view: arrays become their whole view.
template <Element T>
View<T, 2, 2> as_mat_view(GlobalArray<T, 2>& a) {
  return a.view();
}
template <Element T, std::size_t N>
View<T, N, 2> as_mat_view(const View<T, N, 2>& v) {
  return v;
}
template <class X>
concept MatrixOperand = requires(X& x) {
  as_mat_view(x);
};
template <class X>
using mat_view_t = decltype(as_mat_view(std::declval<X&>()));
template <class X>
using mat_value_t = typename mat_view_t<X>::value_type;

inline CBLAS_TRANSPOSE cblas_op(MatOp o) noexcept {
  return o == MatOp::none ? CblasNoTrans : o == MatOp::transpose ? CblasTrans : CblasConjTrans;
}

/// One BLAS call, row-major: C = alpha op(A) op(B) + beta C.
template <BlasElement T>
void blas_gemm(MatOp oa, MatOp ob, Index m, Index n, Index k, T alpha, const T* a, Index lda, const T* b,
               Index ldb, T beta, T* c, Index ldc) {
  const auto ta = cblas_op(oa), tb = cblas_op(ob);
  const auto M = static_cast<blasint>(m), Nn = static_cast<blasint>(n), K = static_cast<blasint>(k);
  const auto la = static_cast<blasint>(lda), lb = static_cast<blasint>(ldb), lc = static_cast<blasint>(ldc);
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, M, Nn, K, alpha, a, la, b, lb, beta, c, lc);
  else if constexpr (std::is_same_v<T, double>)
    cblas_dgemm(CblasRowMajor, ta, tb, M, Nn, K, alpha, a, la, b, lb, beta, c, lc);
  else if constexpr (std::is_same_v<T, std::complex<float>>)
    cblas_cgemm(CblasRowMajor, ta, tb, M, Nn, K, &alpha, a, la, b, lb, &beta, c, lc);
  else
    cblas_zgemm(CblasRowMajor, ta, tb, M, Nn, K, &alpha, a, la, b, lb, &beta, c, lc);
}

/// A rectangle of a stored operand region that the BLAS can read: rows [r0, r0+nr) and
/// columns [c0, c0+nc) of the region (stored coordinates), at `ptr` with row stride `ld`.
template <class T>
struct Tile {
  const T* ptr = nullptr;
  Index ld = 1;
  Index r0 = 0, c0 = 0, nr = 0, nc = 0;
};

/// The base dimensions a 2-d section keeps (rows, columns).
template <std::size_t N>
std::array<std::size_t, 2> kept_dims(const Section<N>& s) noexcept {
  std::array<std::size_t, 2> k{};
  for (std::size_t d = 0, j = 0; d < N; ++d)
    if (!s.dropped[d] && j < 2) k[j++] = d;
  return k;
}

/// The owner pieces of `region` (view coordinates) of `v` as in-place tiles, if every piece
/// is addressable by this rank with unit column stride. Empty optional otherwise.
template <class T, std::size_t N>
bool direct_tiles(const View<T, N, 2>& v, const Box<2>& region, std::vector<Tile<T>>& out) {
  out.clear();
  if (region.empty()) return true;
  const auto& arr = v.array();
  const auto& dist = arr.distribution();
  const Window& w = detail::ArrayAccess::window(arr);
  const int me = arr.context().rank();
  const Section<N> sub = sub_section(v.section(), region);
  const auto [dr, dc] = kept_dims(sub);
  const Index ncols = region.extent(1);
  bool ok = true;
  auto visit = [&](int r) {
    if (!ok) return;
    const auto p = piece_of(dist, sub, arr.ghost(), r);
    if (!p) return;
    if (r != me && !w.peer(r)) {  // not in this address space (rma, or another node's block)
      ok = false;
      return;
    }
    const Index nr = p->count[dr], nc = p->count[dc], sr = p->block_str[dr], sc = p->block_str[dc];
    if (!(sc == 1 || nc == 1) || !(nr == 1 || (sr >= nc && sr > 0)) || (nc == 1 && nr > 1 && sr < 1) ||
        sr > INT_MAX) {
      ok = false;
      return;
    }
    std::byte* base = r == me ? w.base() : w.peer(r);
    Tile<T> t;
    t.ptr = reinterpret_cast<const T*>(base) + p->block_off;
    t.ld = nr == 1 ? std::max<Index>(nc, 1) : sr;
    t.r0 = p->buf_off / ncols;
    t.c0 = p->buf_off % ncols;
    t.nr = nr;
    t.nc = nc;
    out.push_back(t);
  };
  if (dist.is_replicated())
    visit(me);
  else
    for (int r = 0; r < dist.nblocks(); ++r) visit(r);
  if (!ok) out.clear();
  return ok;
}

/// gemm on views: the implementation behind every public overload.
template <BlasElement T, std::size_t NA, std::size_t NB, std::size_t NC>
void gemm_views(MatOp oa, MatOp ob, T alpha, const View<T, NA, 2>& a, const View<T, NB, 2>& b, T beta,
                const View<T, NC, 2>& c, const GemmOptions& opt) {
  join_if_stale("garray::gemm", c, a, b);
  auto& ca = c.array();
  const std::string what = "garray::gemm<" + std::string(type_name<T>()) + ">";
  const char* opname[] = {"N", "T", "C"};
  const auto sa = a.shape(), sb = b.shape(), sc = c.shape();
  const Index m = oa == MatOp::none ? sa[0] : sa[1];
  const Index ka = oa == MatOp::none ? sa[1] : sa[0];
  const Index kb = ob == MatOp::none ? sb[0] : sb[1];
  const Index n = ob == MatOp::none ? sb[1] : sb[0];
  // 1. validate locally, then agree (the rank that fails reports its own reason)
  std::exception_ptr err;
  try {
    if (ka != kb)
      raise<SizeMismatch>(what, ": op", opname[static_cast<int>(oa)], "(A) of shape [", m, ", ", ka,
                          "] times op", opname[static_cast<int>(ob)], "(B) of shape [", kb, ", ", n,
                          "]: inner dimensions differ (A ", seq(sa), ", B ", seq(sb), ")");
    if (sc[0] != m || sc[1] != n)
      raise<SizeMismatch>(what, ": C has shape ", seq(sc), " but op(A) op(B) has shape [", m, ", ", n, "]");
    require_one_group(what, ca.context(), {&a.array().context(), &b.array().context()}, " (arrays #",
                      a.array().id(), ", #", b.array().id(), ", #", ca.id(), ")");
    if (std::max({m, n, ka}) > INT_MAX)
      raise<InvalidArgument>(what, ": extents [", m, ", ", n, ", ", ka, "] exceed the BLAS' 32-bit integers");
    if (opt.panel < 0) raise<InvalidArgument>(what, ": negative panel width ", opt.panel);
  } catch (...) {  // a garray error, or std::bad_alloc: carried into the handshake alike
    err = std::current_exception();
  }
  std::uint64_t sig = hash_string("gemm-invalid");
  if (!err) {
    sig = hash_mix(hash_string("gemm"), static_cast<std::uint64_t>(type_code<T>()));
    sig = hash_mix(hash_mix(sig, static_cast<std::uint64_t>(oa)), static_cast<std::uint64_t>(ob));
    sig = value_hash(value_hash(sig, alpha), beta);
    sig = section_hash(hash_mix(sig, a.array().id()), a.section());
    sig = section_hash(hash_mix(sig, b.array().id()), b.section());
    sig = section_hash(hash_mix(sig, ca.id()), c.section());
    sig = hash_mix(sig, static_cast<std::uint64_t>(opt.panel));
  }
  std::vector<const Window*> wins;
  for (const Window* w : {&detail::ArrayAccess::window(a.array()), &detail::ArrayAccess::window(b.array()),
                          &detail::ArrayAccess::window(ca)})
    if (std::find(wins.begin(), wins.end(), w) == wins.end()) wins.push_back(w);
  // A rank whose check failed throws its error, the others CollectiveMismatch with its message.
  begin_collective(wins, ca.context().comm(), sig, what,
                   "op" + std::string(opname[static_cast<int>(oa)]) + "(" + a.describe() + ") op" +
                       opname[static_cast<int>(ob)] + "(" + b.describe() + ") -> " + c.describe(),
                   [&] {
                     if (err) std::rethrow_exception(err);
                   });

  // 2. compute my block of C: in place when C's array is neither A's nor B's and my part of
  //    it is row-major with unit column stride, else into a private buffer stored in step 3
  const int me = ca.context().rank();
  const Box<2> mine = c.box_of(me);
  const Index mi = mine.extent(0), nj = mine.extent(1);
  const bool aliased = static_cast<const void*>(&ca) == static_cast<const void*>(&a.array()) ||
                       static_cast<const void*>(&ca) == static_cast<const void*>(&b.array());
  std::unique_ptr<T[]> cbuf;
  T* cptr = nullptr;
  Index ldc = nj;
  run_concluded(ca.context().comm(), what, [&] {
    fault_point("gemm.compute");
    if (mine.empty()) return;
    // In-place stores are bracketed by the MPI_Win_sync of begin_collective and of ca.sync().
    if (!aliased) {
      std::vector<Tile<T>> ct;
      if (direct_tiles(c, mine, ct) && ct.size() == 1) {
        cptr = const_cast<T*>(ct[0].ptr);
        ldc = ct[0].ld;
      }
    }
    if (!cptr) {
      cbuf.reset(new T[static_cast<std::size_t>(mi * nj)]);  // no zero fill: see `fresh`
      cptr = cbuf.get();
      if (beta != T{0})
        ca.get_section(sub_section(c.section(), mine), std::span<T>(cptr, static_cast<std::size_t>(mi * nj)));
    }
    if (ka == 0 || alpha == T{0}) {  // C = beta C
      for (Index i = 0; i < mi; ++i)
        for (Index j = 0; j < nj; ++j) cptr[i * ldc + j] = beta == T{0} ? T{0} : beta * cptr[i * ldc + j];
      return;
    }
    // Stored regions of A and B for k-range [k0, k1).
    auto region_a = [&](Index k0, Index k1) {
      return oa == MatOp::none ? Box<2>{{mine.lo[0], k0}, {mine.hi[0], k1}}
                               : Box<2>{{k0, mine.lo[0]}, {k1, mine.hi[0]}};
    };
    auto region_b = [&](Index k0, Index k1) {
      return ob == MatOp::none ? Box<2>{{k0, mine.lo[1]}, {k1, mine.hi[1]}}
                               : Box<2>{{mine.lo[1], k0}, {mine.hi[1], k1}};
    };
    std::vector<Tile<T>> ta, tb;
    const bool da = direct_tiles(a, region_a(0, ka), ta);
    const bool db = direct_tiles(b, region_b(0, ka), tb);
    // The tiles of A split C's rows, those of B its columns, the same way for every k
    // (owner grids), so C's block is a grid of cells. The first product into a cell applies
    // beta (beta == 0: the BLAS does not read it), the others add.
    std::vector<std::array<Index, 4>> fresh_done;
    auto beta_for = [&](Index i, Index j, Index m_, Index n_) {
      const std::array<Index, 4> key{i, j, m_, n_};
      if (std::find(fresh_done.begin(), fresh_done.end(), key) != fresh_done.end()) return T{1};
      fresh_done.push_back(key);
      return beta;
    };
    // Multiplies every (A tile, B tile) pair with a common k range into C.
    auto multiply = [&](const std::vector<Tile<T>>& xa, const std::vector<Tile<T>>& xb) {
      for (const auto& s : xa) {
        const Index ai = oa == MatOp::none ? s.r0 : s.c0, ak = oa == MatOp::none ? s.c0 : s.r0;
        const Index am = oa == MatOp::none ? s.nr : s.nc, akn = oa == MatOp::none ? s.nc : s.nr;
        for (const auto& t : xb) {
          const Index bk = ob == MatOp::none ? t.r0 : t.c0, bj = ob == MatOp::none ? t.c0 : t.r0;
          const Index bkn = ob == MatOp::none ? t.nr : t.nc, bn = ob == MatOp::none ? t.nc : t.nr;
          const Index k0 = std::max(ak, bk), k1 = std::min(ak + akn, bk + bkn);
          if (k1 <= k0 || am == 0 || bn == 0) continue;
          const T* pa = s.ptr + (oa == MatOp::none ? (k0 - ak) : (k0 - ak) * s.ld);
          const T* pb = t.ptr + (ob == MatOp::none ? (k0 - bk) * t.ld : (k0 - bk));
          blas_gemm<T>(oa, ob, am, bn, k1 - k0, alpha, pa, s.ld, pb, t.ld, beta_for(ai, bj, am, bn),
                       cptr + ai * ldc + bj, ldc);
        }
      }
    };
    if (da && db) {  // everything in place: one BLAS call per pair of owner pieces
      fault_point("gemm.panel");
      multiply(ta, tb);
      return;
    }
    // Panels: fetched operands double-buffered, in-place ones as tiles of the panel.
    Index kp = opt.panel;
    if (kp == 0)
      kp = std::clamp<Index>((Index{64} << 20) / static_cast<Index>(sizeof(T)) / std::max<Index>(mi + nj, 1),
                             256, 1024);
    kp = std::min(kp, ka);
    const Index npanels = (ka + kp - 1) / kp;
    struct Slot {
      std::vector<T> a, b;
      Request ra, rb;
    };
    Slot slot[2];
    auto issue = [&](Index p) {
      Slot& s = slot[p % 2];
      const Index k0 = p * kp, k1 = std::min(ka, k0 + kp);
      if (!da) {
        const Box<2> r = region_a(k0, k1);
        s.a.resize(static_cast<std::size_t>(r.volume()));
        s.ra = a.array().get_section_nb(sub_section(a.section(), r), std::span<T>(s.a));
      }
      if (!db) {
        const Box<2> r = region_b(k0, k1);
        s.b.resize(static_cast<std::size_t>(r.volume()));
        s.rb = b.array().get_section_nb(sub_section(b.section(), r), std::span<T>(s.b));
      }
    };
    issue(0);
    std::vector<Tile<T>> pa(1), pb(1);
    for (Index p = 0; p < npanels; ++p) {
      if (p + 1 < npanels) issue(p + 1);  // in flight while panel p is multiplied
      fault_point("gemm.panel");
      Slot& s = slot[p % 2];
      const Index k0 = p * kp, k1 = std::min(ka, k0 + kp);
      const Box<2> ra = region_a(k0, k1), rb = region_b(k0, k1);
      if (da)
        direct_tiles(a, ra, pa);
      else {
        s.ra.wait();
        pa.assign(1, Tile<T>{s.a.data(), std::max<Index>(ra.extent(1), 1), 0, 0, ra.extent(0), ra.extent(1)});
      }
      if (db)
        direct_tiles(b, rb, pb);
      else {
        s.rb.wait();
        pb.assign(1, Tile<T>{s.b.data(), std::max<Index>(rb.extent(1), 1), 0, 0, rb.extent(0), rb.extent(1)});
      }
      multiply(pa, pb);
    }
  });

  // 3. everybody has read A and B: store a buffered block of C, then make C visible
  if (cbuf) {
    const Section<NC> csub = sub_section(c.section(), mine);
    if (const auto p = piece_of(ca.distribution(), csub, ca.ghost(), me)) {
      auto blk = ca.access();
      strided_copy(collapse(p->count, p->block_str, p->buf_str), blk.data() + p->block_off,
                   cbuf.get() + p->buf_off);
    }
  }
  ca.sync();
}

}  // namespace detail

/// C = alpha op(A) op(B) + beta C. **Collective** (see the file comment). A, B, C are 2-d
/// arrays or 2-d views (any distributions, strides, overlapping allowed). With beta == 0, C
/// is not read (NaNs in C do not propagate), as in the BLAS. On return every rank sees the
/// new C. Throws SizeMismatch / InvalidArgument / CollectiveMismatch on every rank before
/// anything is written.
template <detail::MatrixOperand XA, detail::MatrixOperand XB, detail::MatrixOperand XC>
requires BlasElement<detail::mat_value_t<XC>>
void gemm(MatOp op_a, MatOp op_b, detail::mat_value_t<XC> alpha, XA&& a, XB&& b, detail::mat_value_t<XC> beta,
          XC&& c, const GemmOptions& opt = {}) {
  using T = detail::mat_value_t<XC>;
  static_assert(std::is_same_v<detail::mat_value_t<XA>, T> && std::is_same_v<detail::mat_value_t<XB>, T>,
                "garray::gemm: A, B and C must have the same element type");
  detail::gemm_views<T>(op_a, op_b, alpha, detail::as_mat_view(a), detail::as_mat_view(b), beta,
                        detail::as_mat_view(c), opt);
}

/// C = alpha A B + beta C. **Collective**; on return every rank sees the new C; see the
/// overload with ops.
template <detail::MatrixOperand XA, detail::MatrixOperand XB, detail::MatrixOperand XC>
requires BlasElement<detail::mat_value_t<XC>>
void gemm(detail::mat_value_t<XC> alpha, XA&& a, XB&& b, detail::mat_value_t<XC> beta, XC&& c,
          const GemmOptions& opt = {}) {
  gemm(MatOp::none, MatOp::none, alpha, std::forward<XA>(a), std::forward<XB>(b), beta, std::forward<XC>(c),
       opt);
}

/// A B as a new m x n array with distribution `dist` (default: blocked). **Collective**; on
/// return the new array is complete and visible to every rank; A and B are unchanged.
/// Throws SizeMismatch (inner dimensions differ) on every rank before creating anything.
template <detail::MatrixOperand XA, detail::MatrixOperand XB>
requires BlasElement<detail::mat_value_t<XA>> GlobalArray < detail::mat_value_t<XA>,
2 > matmul(XA&& a, XB&& b, const Distribution<2>& dist = Distribution<2>::blocked(),
           const GemmOptions& opt = {}) {
  using T = detail::mat_value_t<XA>;
  static_assert(std::is_same_v<detail::mat_value_t<XB>, T>,
                "garray::matmul: A and B must have the same element type");
  const auto va = detail::as_mat_view(a);
  const auto vb = detail::as_mat_view(b);
  const std::string what = "garray::matmul<" + std::string(type_name<T>()) + ">";
  detail::join_if_stale(what, va, vb);
  const auto sa = va.shape(), sb = vb.shape();
  std::exception_ptr err;
  try {
    if (sa[1] != sb[0])
      detail::raise<SizeMismatch>(what, ": A of shape ", detail::seq(sa), " times B of shape ",
                                  detail::seq(sb), ": inner dimensions differ");
    // before C is created (a call that throws changed nothing, the window cache included)
    detail::require_one_group(what, va.array().context(), {&vb.array().context()}, " (arrays #",
                              va.array().id(), ", #", vb.array().id(), ")");
  } catch (...) {  // a garray error, or std::bad_alloc: carried into the handshake alike
    err = std::current_exception();
  }
  std::uint64_t sig = detail::hash_string("matmul");
  if (!err) {
    sig = detail::section_hash(detail::hash_mix(sig, va.array().id()), va.section());
    sig = detail::section_hash(detail::hash_mix(sig, vb.array().id()), vb.section());
  }
  // A rank whose check failed throws its error, the others CollectiveMismatch with its message.
  detail::agree_signature(
      va.array().context().comm(), sig, what, [&] { return va.describe() + " @ " + vb.describe(); }, err);
  GlobalArray<T, 2> c(va.array().context(), Shape<2>{sa[0], sb[1]}, dist, Shape<2>{}, uninitialized);
  detail::gemm_views<T>(MatOp::none, MatOp::none, T{1}, va, vb, T{0}, c.view(), opt);
  return c;
}

/// Batched product over the leading dimension: c[i] = a[i] @ b[i] for 3-d arrays of shapes
/// [nb, m, k] and [nb, k, n]; a new [nb, m, n] array with distribution `dist` (default:
/// blocked). **Collective**; on return the new array is complete and visible to every rank.
/// One gemm per batch (each owner computes its part of c[i]).
/// Throws SizeMismatch on every rank (batch counts or inner dimensions differ) before
/// creating anything.
template <BlasElement T>
GlobalArray<T, 3> matmul(GlobalArray<T, 3>& a, GlobalArray<T, 3>& b,
                         const Distribution<3>& dist = Distribution<3>::blocked(),
                         const GemmOptions& opt = {}) {
  const std::string what = "garray::matmul<" + std::string(type_name<T>()) + ",3>";
  const auto sa = a.shape(), sb = b.shape();
  std::exception_ptr err;
  try {
    // A moved-from operand keeps its id and shape: checked here, before the handshake
    // (with no batches nothing after it would notice)
    if (!a.valid() || !b.valid())
      detail::moved_from_array(what, a.valid() ? "B" : "A", a.valid() ? b.id() : a.id());
    if (sa[0] != sb[0] || sa[2] != sb[1])
      detail::raise<SizeMismatch>(what, ": batches of A ", detail::seq(sa), " and B ", detail::seq(sb),
                                  " differ in count or inner dimension");
    // checked here also for zero batches (no gemm below would)
    detail::require_one_group(what, a.context(), {&b.context()}, " (arrays #", a.id(), ", #", b.id(), ")");
  } catch (...) {  // a garray error, or std::bad_alloc: carried into the handshake alike
    err = std::current_exception();
  }
  std::uint64_t sig = detail::hash_string("matmul3");
  if (!err) sig = detail::hash_mix(detail::hash_mix(sig, a.id()), b.id());
  detail::agree_signature(
      a.context().comm(), sig, what,
      [&] { return "arrays #" + std::to_string(a.id()) + " @ #" + std::to_string(b.id()); }, err);
  GlobalArray<T, 3> c(a.context(), Shape<3>{sa[0], sa[1], sb[2]}, dist, Shape<3>{}, uninitialized);
  for (Index i = 0; i < sa[0]; ++i)
    detail::gemm_views<T>(MatOp::none, MatOp::none, T{1}, a[idx[i]], b[idx[i]], T{0}, c[idx[i]], opt);
  return c;
}

}  // namespace garray
