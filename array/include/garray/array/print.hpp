#pragma once
// Printing (issue 15): NumPy's str() of a distributed array or view, and describe() of a
// distribution (GA_Print / GA_Print_distribution).
//
//   std::cout << a;                      // collective; rank 0 prints str(a) as NumPy would
//   std::cout << a[idx[range(_, _, -1)]] << '\n';
//   garray::print(a);                    // GA_Print: rank 0 writes str(a) and a newline to std::cout
//   std::string s = garray::array_str(a, {.threshold = 10});   // np.array_str; "" off rank 0
//   if (ctx.rank() == 0) std::cout << garray::describe(a);     // GA_Print_distribution (local)
//
// Layout as NumPy's default str(): nested brackets, one format per array (every element
// padded to a common width), lines wrapped at 75 columns, and, when the array has more than
// `threshold` (1000) elements, only `edgeitems` (3) items at each end of every dimension
// longer than 2 * edgeitems, with "..." in between. Numbers as NumPy's defaults:
// integers right-aligned; floating point in 'maxprec' mode with precision 8 (the shortest
// representation that round-trips in the element's own type, cut to 8 fractional digits
// with correct rounding), positional unless a nonzero |x| >= 1e8, a nonzero |x| < 1e-4 or
// max/min > 1000 (then scientific with a common number of digits and exponent width);
// nan and inf as NumPy; complex as NumPy (real part, signed imaginary part, 'j').
//
// Participation: **collective over the array's context** (every rank calls it; rank 0 of
// the context formats and writes, the other ranks write nothing). One handshake compares
// the call, the array, the section and the options (a rank printing another array, view or
// options: CollectiveMismatch everywhere) and completes every rank's earlier writes on the
// array; then rank 0 fetches, one-sidedly, only the elements it prints (the 2^k edge
// sub-boxes of a summarised array, each one get straight into place), and a closing
// agreement (failure rule) makes every rank leave together: a failed fetch throws on every
// rank, and the stream is written only after that agreement. Nothing else changes.

#include <cstddef>
#include <cstdint>
#include <garray/array/box.hpp>
#include <garray/array/copy.hpp>
#include <garray/array/distribution.hpp>
#include <garray/array/global_array.hpp>
#include <garray/array/slice.hpp>
#include <garray/array/view.hpp>
#include <garray/runtime/context.hpp>
#include <garray/runtime/datatype.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/fault.hpp>
#include <iostream>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace garray {

/// NumPy's print options (np.set_printoptions), with NumPy's defaults. Part of the
/// collective's signature: every rank must pass the same options.
struct PrintOptions {
  Index threshold = 1000;  ///< more elements than this: the output is summarised
  Index edgeitems = 3;     ///< items kept at each end of a summarised dimension (>= 1)
  Index linewidth = 75;    ///< characters per line before wrapping (>= 1)
  int precision = 8;       ///< at most this many fractional digits of floating point (0-100)
};

namespace detail {
namespace npprint {
// NumPy's number formats and _formatArray, compiled once into libgarray_array for the six
// element types (array/src/print.cpp): pure text, no template a user's code instantiates.

/// NumPy's str() of the dense row-major array `data` of shape `shape` that was summarised to
/// `sshape` (every dimension whose extent exceeds 2 * edgeitems reduced to its first and
/// last edgeitems items when `summarise`). Pure text.
template <class T>
std::string format_summary(const std::vector<T>& data, const std::vector<Index>& shape,
                           const std::vector<Index>& sshape, bool summarise, const PrintOptions& o);
/// InvalidArgument naming `what` unless the options are valid.
void check_options(const PrintOptions& o, std::string_view what);

}  // namespace npprint

/// The collective behind array_str / operator<< / print: section `sec` of `a`, keeping M
/// dimensions. Returns the text on rank 0 of a's context, "" elsewhere.
template <std::size_t M, Element T, std::size_t N>
std::string array_str_section(const GlobalArray<T, N>& a, const Section<N>& sec, const PrintOptions& o) {
  static_assert(M >= 1, "garray: printing needs at least one dimension (read a 0-d view's value with get())");
  const std::string what = "garray::array_str<" + std::string(type_name<T>()) + "," + std::to_string(N) + ">";
  std::uint64_t sig = hash_mix(hash_string("garray::array_str"), a.id());
  sig = section_hash(sig, sec);
  for (Index v : {o.threshold, o.edgeitems, o.linewidth, static_cast<Index>(o.precision)})
    sig = hash_mix(sig, static_cast<std::uint64_t>(v));
  detail::ArrayAccess::begin_collective(a, sig, what, [&] { npprint::check_options(o, what); });
  const Context& ctx = a.context();
  std::string out;
  run_concluded(ctx.comm(), what, [&] {  // nobody changes its block before rank 0 has read it
    fault_point("print.fetch");
    if (ctx.rank() != 0) return;
    const Shape<M> shape = sec.template kept_shape<M>();
    if (volume(shape) == 0) {
      out = "[]";
      return;
    }
    const bool summ = volume(shape) > o.threshold;
    std::vector<Index> full(M), sshape(M);
    for (std::size_t j = 0; j < M; ++j) {
      full[j] = shape[j];
      // shape > 2 * edgeitems, written without doubling (edgeitems may be near Index's maximum)
      sshape[j] = summ && o.edgeitems < shape[j] - o.edgeitems ? 2 * o.edgeitems : shape[j];
    }
    Index total = 1;
    for (Index e : sshape) total *= e;
    std::vector<T> data(static_cast<std::size_t>(total));
    // Row-major strides of the summary, as strides over the base array's dimensions.
    Shape<M> sstr{};
    sstr[M - 1] = 1;
    for (std::size_t j = M - 1; j > 0; --j) sstr[j - 1] = sstr[j] * sshape[j];
    Shape<N> ostr{};
    for (std::size_t d = 0, j = 0; d < N; ++d)
      if (!sec.dropped[d]) ostr[d] = sstr[j++];
    // One get per edge sub-box: bit j of `c` picks the trailing part of split dimension j.
    std::vector<std::size_t> split;
    for (std::size_t j = 0; j < M; ++j)
      if (sshape[j] != shape[j]) split.push_back(j);
    for (std::uint64_t c = 0; c < (std::uint64_t{1} << split.size()); ++c) {
      Box<M> box;
      Index off = 0;
      for (std::size_t j = 0; j < M; ++j) {
        box.lo[j] = 0;
        box.hi[j] = shape[j];
      }
      for (std::size_t q = 0; q < split.size(); ++q) {
        const std::size_t j = split[q];
        if ((c >> q) & 1) {
          box.lo[j] = shape[j] - o.edgeitems;
          off += o.edgeitems * sstr[j];
        } else {
          box.hi[j] = o.edgeitems;
        }
      }
      detail::ArrayAccess::get_section_strided(a, sub_section(sec, box), data.data() + off, ostr);
    }
    out = npprint::format_summary(data, full, sshape, summ, o);
  });
  return out;
}

}  // namespace detail

/// NumPy's np.array_str(v) (= str(v)) of a view with at least one dimension, with `o`
/// (NumPy's defaults unless given). **Collective over the view's array context**: returns
/// the text on rank 0 of the context and "" on every other rank; only rank 0 reads, and
/// only the elements it prints. Throws on every rank: CollectiveMismatch (ranks passed
/// different arrays, views or options), InvalidArgument (bad options: that rank; the
/// others CollectiveMismatch naming it), CollectiveFailure (a fetch failed on rank 0).
template <Element T, std::size_t N, std::size_t M>
std::string array_str(const View<T, N, M>& v, const PrintOptions& o = {}) {
  detail::join_if_stale("garray::array_str", v);
  return detail::array_str_section<M>(v.array(), v.section(), o);
}
/// np.array_str(a) of a whole array. **Collective**, as above.
template <Element T, std::size_t N>
std::string array_str(const GlobalArray<T, N>& a, const PrintOptions& o = {}) {
  return detail::array_str_section<N>(a, Section<N>::full(a.shape()), o);
}

/// `os << a`: rank 0 writes str(a) (NumPy's layout and number formats, no trailing
/// newline); the other ranks write nothing. **Collective** (see array_str).
template <Element T, std::size_t N>
std::ostream& operator<<(std::ostream& os, const GlobalArray<T, N>& a) {
  const std::string s = array_str(a);
  if (a.context().rank() == 0) os << s;
  return os;
}
/// `os << v` for a view with at least one dimension. **Collective**, as above.
template <Element T, std::size_t N, std::size_t M>
std::ostream& operator<<(std::ostream& os, const View<T, N, M>& v) {
  const std::string s = array_str(v);
  if (v.array().context().rank() == 0) os << s;
  return os;
}

/// GA_Print / Python's print(a): rank 0 writes str(x) and a newline to `os` (std::cout by
/// default). **Collective** (see array_str).
template <class X>
requires requires(const X& x) { array_str(x); }
void print(const X& x, std::ostream& os = std::cout, const PrintOptions& o = {}) {
  const std::string s = array_str(x, o);
  int rank = 0;
  if constexpr (requires { x.context(); })
    rank = x.context().rank();
  else
    rank = x.array().context().rank();
  if (rank == 0) os << s << '\n';
}

/// GA_Print_distribution: the array's layout as text. **Local** (every rank knows the whole
/// distribution; the text is the same on every rank). One header line (element type,
/// shape, distribution kind and process grid, ghost width, window kind, rank count), then
/// one line per rank: its block as a half-open box `[lo0:hi0, lo1:hi1)` and its element
/// count, or "empty".
template <Element T, std::size_t N>
std::string describe(const GlobalArray<T, N>& a) {
  const Distribution<N>& d = a.distribution();
  const int p = a.context().size();
  std::ostringstream os;
  os << "GlobalArray<" << type_name<T>() << "," << N << "> #" << a.id() << ": shape "
     << detail::seq(a.shape()) << ", " << d.describe() << ", ghost " << detail::seq(a.ghost()) << ", "
     << to_string(a.window_kind()) << " window, " << p
     << (p == 1 ? " rank" : " ranks") << (d.is_replicated() ? " (every rank holds a copy)" : "") << "\n";
  for (int r = 0; r < p; ++r) {
    const Box<N> b = a.box_of(r);
    os << "  rank " << r << ": ";
    if (b.empty())
      os << "empty\n";
    else
      os << b << " (" << b.volume() << (b.volume() == 1 ? " element)\n" : " elements)\n");
  }
  return os.str();
}

}  // namespace garray
