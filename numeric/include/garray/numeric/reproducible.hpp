#pragma once
// The `garray::reproducible` tag: reductions whose floating-point result does not depend on
// the rank count, the process grid, the distribution or the evaluation order.
//
//   double s = garray::sum(x, garray::reproducible);
//
// The tagged reductions live in reductions.hpp (sum, dot, norm2, mean) and elementwise.hpp
// (assign_norm2_change, assign_norm2_diff); the accumulator behind them is
// detail/exact_sum.hpp. Contract: docs/semantics.md, "Reductions".

namespace garray {

/// The tag type of reproducible reductions (see `garray::reproducible`).
struct reproducible_t {
  explicit constexpr reproducible_t() = default;
};
/// Selects the reproducible variant of a reduction: `sum(x, garray::reproducible)`,
/// `dot(a, b, garray::reproducible)`, `norm2(x, garray::reproducible)`,
/// `mean(x, garray::reproducible)`, `assign_norm2_change(out, expr, garray::reproducible)`,
/// `assign_norm2_diff(out, expr, ref, garray::reproducible)`. The floating-point result is
/// the exact sum of the terms rounded once (to nearest, ties to even): bitwise identical for
/// every rank count, process grid, distribution and view of the same values.
inline constexpr reproducible_t reproducible{};

}  // namespace garray
