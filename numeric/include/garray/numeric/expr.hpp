#pragma once
// Lazy elementwise expressions over views, scalars and local (replicated) arrays.
//
// ---- API summary (numeric layer; everything is in namespace garray) ---------------------
//
//   #include <garray/garray.hpp>            // or <garray/numeric/elementwise.hpp> etc.
//
// Operands of an expression: a View<T,N,M> (`u[idx[...]]`, `u.view()`), a GlobalArray<T,N>
// (taken as its whole view, by reference), an arithmetic scalar, `garray::local(m)` for a
// boost::multi_array / multi_array_ref replicated on every rank, and other expressions.
// Building an expression moves no data and is Local; it holds views (pointers to arrays),
// so it must not outlive its arrays.
//
//   a + b, a - b, a * b, a / b, -a                      arithmetic (C++ promotion rules)
//   abs sqrt exp log sin cos (a)      pow min max (a, b)    elementwise functions
//   a < b, <=, >, >=, ==, !=                              comparisons -> bool expression
//   where(cond, a, b)                                     cond ? a : b per element
//   cast<U>(a)                                            element conversion
//
// Evaluation (all Collective over the arrays' context, owner-computes, one fused pass;
// shapes must match exactly; misuse throws on every rank before any data moves):
//   view = expr;  view += expr;  -= *= /=                 write into a view (numpy semantics
//                                                         when the view overlaps an input)
//   assign(view, expr)                                    same as view = expr
//   auto t = eval(expr)            -> GlobalArray<V, M>   new array (distribution of the first
//   auto t = eval(expr, dist)                             array operand, or `dist`)
//   eval<double>(expr)                                    ... with a chosen element type
//   add(a, b, out)  subtract  multiply  divide  minimum  maximum  power
//   negative(a, out) absolute(a, out) sqrt(a, out) exp(a, out) log(a, out) sin cos
//                                                         numpy's ufuncs with an explicit output
//   add(a, b) ...                  -> GlobalArray         eager: one new array per call
//
// Reductions (Collective; the same value on every rank, deterministic for a given rank
// count and distribution: local partials combined in rank order):
//   sum prod min max (expr)  dot(a, b)  norm2(expr)  any all (expr)  count_nonzero(expr)
//   sum(expr, axis) prod min max (expr, axis)  -> GlobalArray<V, M-1>
//
// Fused assignment + reduction (one sweep: writes the view, returns a reduction of the
// change new - old, identical on every rank):
//   double d = assign_norm2_change(u[inner], expr);     // sqrt(sum((new-old)^2))
//   double m = assign_max_abs_change(u[inner], expr);   // max |new-old|
//   auto r = assign_reduce(view, expr, reducer, [](new_v, old_v) { return ...; });
//            reducer: garray::sum_reducer / max_reducer / min_reducer
//
// Collective basic ops on views (or whole arrays):
//   fill(view, value)   iota(view, start = 0, step = 1)   (value = start + step * the
//   element's row-major position in the view)   generate(view, f(Shape<M> view index))
//   copy(src, dst)      scale(view, alpha)      axpy(alpha, x, y)  (y += alpha * x)
//   fill_random(view, seed, lo = 0, hi = 1)   uniform in [lo, hi); depends only on seed and
//                                             the element's position, not the rank count
// Local kernel helper:
//   for_each_local(view, f)   f(T& x) or f(T& x, const Shape<M>& view_index) on every element
//                             this rank owns (Local; other ranks see writes after a sync()).
//
// Errors: SizeMismatch (shapes differ), InvalidArgument (arrays of different contexts, bad
// axis), CollectiveMismatch (ranks passed different arguments); thrown on every rank, nothing
// written.
// -----------------------------------------------------------------------------------------
