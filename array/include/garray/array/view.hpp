#pragma once
// View<T, N, M>: an M-dimensional, non-owning selection of a GlobalArray<T, N>.
//
//   auto inner = u[idx[range(1, -1)][range(1, -1)]];   // a view, no copy
//   auto col   = u[idx[all][3]];                       // an integer drops a dimension -> 1-d
//   auto rev   = inner[idx[range(_, _, -2)]];           // view of a view: slices compose
//
// A view is the base array plus a canonical Section (per base dimension start, step,
// count, dropped). Slicing a view composes sections (slice arithmetic) and never moves
// data. One-sided operations on a view behave exactly as on the array with the composed
// section. A view does not keep its array alive: it must not outlive it.

#include <garray/array/global_array.hpp>

#include <type_traits>

namespace garray {

template <Element T, std::size_t N, std::size_t M>
class View {
 public:
  using value_type = T;
  using array_type = GlobalArray<T, N>;
  static constexpr std::size_t dims = M;

  View(array_type& a, const Section<N>& s) noexcept : a_(&a), sec_(s) {}
  View(const View&) = default;
  /// **Collective** (numeric layer, <garray/garray.hpp>): `view = expr` evaluates an
  /// expression, view, array or scalar into the view, owner-computes (garray::assign).
  /// Assigning a view copies elements (numpy `a[...] = b[...]`); it never rebinds.
  template <class E>
    requires(!std::is_same_v<std::remove_cvref_t<E>, View>)
  View& operator=(const E& e) {
    assign(*this, e);  // found by ADL in numeric/elementwise.hpp
    return *this;
  }
  View& operator=(const View& v) {
    assign(*this, v);
    return *this;
  }

  array_type& array() const noexcept { return *a_; }
  const Section<N>& section() const noexcept { return sec_; }
  /// Extents of the view's M dimensions.
  Shape<M> shape() const noexcept { return sec_.template kept_shape<M>(); }
  index size() const noexcept { return sec_.size(); }

  /// A view of this view (slice arithmetic). Throws as the array's slicing does.
  template <std::size_t K, std::size_t M2>
  View<T, N, M2 + (M - K)> operator[](const Slice<K, M2>& s) const {
    static_assert(K <= M, "garray: too many indices for the view's number of dimensions");
    return {*a_, compose(sec_, s, array_type::name(detail::Call::get))};
  }

  /// One-sided. As GlobalArray::get on the view's selection.
  void get(std::span<T> out) const { a_->get_section(sec_, out); }
  /// One-sided. The view as a new boost::multi_array (a value for a 0-d view).
  auto get() const {
    if constexpr (M == 0) {
      T v{};
      a_->get_section(sec_, std::span<T>(&v, 1));
      return v;
    } else {
      boost::multi_array<T, M> out(shape());
      a_->get_section(sec_, std::span<T>(out.data(), out.num_elements()));
      return out;
    }
  }
  /// One-sided. As GlobalArray::put.
  void put(std::span<const T> in) const { a_->put_section(sec_, in); }
  /// One-sided. As GlobalArray::accumulate.
  void accumulate(std::span<const T> in, T alpha = T{1}) const { a_->acc_section(sec_, in, alpha); }
  Request get_nb(std::span<T> out) const { return a_->get_section_nb(sec_, out); }
  Request put_nb(std::span<const T> in) const { return a_->put_section_nb(sec_, in); }
  Request acc_nb(std::span<const T> in, T alpha = T{1}) const { return a_->acc_section_nb(sec_, in, alpha); }

 private:
  array_type* a_;
  Section<N> sec_;
};

template <Element T, std::size_t N>
template <std::size_t K, std::size_t M>
View<T, N, selection_rank<N, K, M>> GlobalArray<T, N>::operator[](const Slice<K, M>& s) {
  return {*this, select(s, detail::Call::get)};
}

template <Element T, std::size_t N>
View<T, N, N> GlobalArray<T, N>::view() {
  return {*this, Section<N>::full(shape())};
}

}  // namespace garray
