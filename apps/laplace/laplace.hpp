#pragma once
// The Laplace benchmark: PerformancePython's laplace.py (as ported by GAiN), on garray.
//
// Grid nx x ny over [0,1]^2, dx = 1/(nx-1), dy = 1/(ny-1), u zero inside (or a hash of the
// global index, Init::hash, for tests). Boundary from BC(x, y) = x*x - y*y with x_i = i*dx,
// y_j = j*dy, assigned in laplace.py's order (later assignments win at the corners):
//
//   u[0,:] = BC(0, y);  u[-1,:] = BC(1, y);  u[:,0] = BC(x, 0);  u[:,-1] = BC(x, 1)
//
// One step (Jacobi: the right side is evaluated completely before it is assigned):
//
//   old_u = u.copy()
//   u[1:-1,1:-1] = ((u[0:-2,1:-1] + u[2:,1:-1])*dy2 + (u[1:-1,0:-2] + u[1:-1,2:])*dx2)*dnr_inv
//   err = sqrt(sum((u - old_u)**2))
//
// with dx2 = dx*dx, dy2 = dy*dy, dnr_inv = 0.5/(dx2 + dy2). solve(n_iter, eps) steps until
// err <= eps or n_iter steps were taken.
//
// Three variants compute exactly this, with the same floating-point operations in the same
// order, so their errors agree bitwise at a given rank count and distribution:
//
//   kernel  core API only: access() on local blocks, ghost rows/columns fetched one-sidedly
//           from the neighbours (get_section), one hand-written loop that computes the new
//           value and accumulates the squared change in the same pass, two buffers swapped
//           instead of old_u = u.copy(). The performance ceiling. (The default.)
//   fused   the numeric layer: one owner-computes fused sweep per step that writes the new
//           iterate and sums the squared change (assign_norm2_diff), two buffers swapped.
//   numpy   the numeric layer operator by operator, as numpy evaluates laplace.py: every
//           binary operation materialises a temporary distributed array (through the array
//           cache), nine per step.
//
// The error sum is defined so that every variant can reproduce it:
// each rank sums the squared changes of the elements it owns, in row-major order, with one
// sequential accumulator; the per-rank partials are then combined by the numeric layer's
// reduction rule (combine_partials()). Elements that do not change (the boundary) add +0.0,
// which changes no sum, so summing over the interior or the whole grid is the same.
//
// With Problem::reproducible the sum is instead exact (an order-independent fixed-point
// accumulation, see numeric/detail/exact_sum.hpp), rounded once: err is then the correctly
// rounded 2-norm of the change, identical for any rank count, grid and variant.

#include <garray/array/distribution.hpp>
#include <garray/array/global_array.hpp>
#include <garray/numeric/detail/exact_sum.hpp>
#include <garray/runtime/context.hpp>

#include <boost/multi_array.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

namespace garray::laplace {

/// How a step is computed (see the file comment).
enum class Variant { kernel, fused, numpy };

/// "kernel", "fused", "numpy".
std::string_view to_string(Variant v) noexcept;
/// Parses a variant name. Local. Throws InvalidArgument naming the accepted names.
Variant parse_variant(std::string_view name);
/// Every variant, in the order benchmarks and tests run them.
inline constexpr std::array<Variant, 3> all_variants{Variant::kernel, Variant::fused, Variant::numpy};

/// The initial interior: zeros (laplace.py) or a hash of the global index in [-1, 1) (for tests:
/// every block boundary matters from the first step).
enum class Init { zero, hash };

/// The grid. nx, ny >= 2.
struct Problem {
  Index nx = 1000;
  Index ny = 1000;
  Init init = Init::zero;
  /// How err's sum of squared changes is formed. false: per-rank partials in row-major order
  /// combined in rank order (the rule above; its bits depend on the rank count and grid).
  /// true: the exact sum of the squared changes rounded once (garray::reproducible), so
  /// every variant prints the same bits at every rank count and process grid.
  bool reproducible = false;
};

/// The constants of laplace.py, computed as it does.
struct Coefficients {
  double dx, dy, dx2, dy2, dnr_inv;
  static Coefficients of(const Problem& p) noexcept;
};

/// Local. The initial value of element (i, j): the boundary condition on the boundary (with
/// laplace.py's assignment order deciding the corners), else the initial interior.
double initial_value(const Problem& p, Index i, Index j) noexcept;

/// Local. One Jacobi update of the interior element (i, j) from its four neighbours, in the
/// exact operation order of laplace.py. Every variant and the reference evaluate this.
inline double jacobi(double up, double down, double left, double right, const Coefficients& c) noexcept {
  return ((up + down) * c.dy2 + (left + right) * c.dx2) * c.dnr_inv;
}

/// Local. The hand-written loop: for a rows x cols patch of interior elements, computes the
/// Jacobi update of each from `u` into `v` and returns the sum of the squared changes,
/// accumulated in row-major order with one accumulator. `u` and `v` point at the patch's first
/// element in two arrays with the same row stride `stride`; u's rows above and below the
/// patch and its columns left and right of it are read. The kernel variant, the benchmark's
/// serial loop and its hand-written MPI code all run this one function, so their ratios
/// measure communication and library overhead, not code generation.
double sweep(const double* u, double* v, Index stride, Index rows, Index cols, const Coefficients& c) noexcept;
/// Local. sweep() with the squared changes added to the exact accumulator `acc` instead
/// (Problem::reproducible); the new values written to `v` are the same.
void sweep_exact(const double* u, double* v, Index stride, Index rows, Index cols, const Coefficients& c,
                 garray::detail::ExactAcc<double>& acc) noexcept;

/// Collective over `comm` (one MPI_Allgather). Combines one partial sum per rank into the
/// global sum, identical on every rank. This is the combination rule every variant's error
/// uses. `err`: the exception this rank's part of the step ended with (null if none): if any
/// rank passes one, every rank throws (that rank its own error, the others
/// garray::CollectiveFailure with its message), so a rank that failed before the reduction
/// leaves nobody waiting.
double combine_partials(MPI_Comm comm, double partial, const std::exception_ptr& err = nullptr);

/// Outcome of solve().
struct SolveResult {
  int iterations = 0;          ///< steps taken
  double error = 0;            ///< err of the last step (0 if no step was taken)
  double seconds = 0;          ///< wall time of the steps (max over ranks)
  std::vector<double> errors;  ///< err of every step, when recording was asked for
};

namespace detail {
class Impl;
}

/// A distributed Laplace solver. Holds the field in garray arrays over the ranks of a context.
///
///   garray::Context ctx;
///   garray::laplace::Solver s(ctx, {.nx = 1000, .ny = 1000}, garray::laplace::Variant::kernel);
///   auto r = s.solve(100, 1e-16);       // collective; r.error identical on every rank
class Solver {
 public:
  /// Creates the arrays and sets the initial field. **Collective over ctx** (every rank passes
  /// the same arguments). Throws InvalidArgument (nx or ny < 2, a bad distribution) on every
  /// rank, CollectiveMismatch if ranks disagree.
  Solver(const Context& ctx, const Problem& p, Variant v, const Distribution<2>& dist = Distribution<2>::blocked());
  ~Solver();  ///< **Collective**: frees the arrays.
  Solver(Solver&&) noexcept;
  Solver& operator=(Solver&&) noexcept;

  /// **Collective.** Sets the initial field again (for repeated timings).
  void reset();
  /// **Collective.** One Jacobi step. Returns err, identical on every rank. On return every
  /// rank's part of the new field is complete and visible to everyone.
  double step();
  /// **Collective.** Steps until err <= eps or n_iter steps were taken. `after_step(k, err)`,
  /// if given, runs on every rank after step k (1-based within this call) with its error,
  /// e.g. to write a checkpoint; its time counts in the solve time.
  SolveResult solve(int n_iter, double eps, bool record_errors = false,
                    const std::function<void(int, double)>& after_step = {});

  /// **Local.** The array holding the current field (for collective I/O on it: the array
  /// must not be modified through this reference).
  GlobalArray<double, 2>& current_array() noexcept;
  /// **Collective.** Replaces the field: calls `load(a)` (a collective that fills every
  /// element of `a`, e.g. a read from a checkpoint) for every array of the solver that holds
  /// the field, so the next step continues from it exactly as if it had been computed.
  void restore(const std::function<void(GlobalArray<double, 2>&)>& load);

  /// **One-sided** (call on any ranks, between steps). The current field, whole.
  boost::multi_array<double, 2> field() const;
  /// **One-sided.** Rows [row0, row0 + nrows) of the current field into `out` (row-major).
  void field_rows(Index row0, Index nrows, std::span<double> out) const;

  const Problem& problem() const noexcept;
  Variant variant() const noexcept;
  /// The resolved distribution of the field.
  const Distribution<2>& distribution() const noexcept;

 private:
  std::unique_ptr<detail::Impl> impl_;
};

/// The serial in-process reference: the same formulas on one boost::multi_array, the errors
/// summed in the same order as the distributed variants over `dist` (resolved).
struct Reference {
  boost::multi_array<double, 2> u;
  std::vector<double> errors;
};
/// Local. Runs the reference for at most n_iter steps (stopping as solve() does); with
/// p.reproducible the errors are the exact sums of the squared changes, rounded once.
Reference reference_solve(const Problem& p, const Distribution<2>& dist, int n_iter, double eps);

/// Local. The error of one reference step, from the per-rank partials of `dist`, combined as
/// combine_partials() does.
double reference_combine(const std::vector<double>& partials);

/// Local. The array cache depth (per key) that temporaries of `ctx` use; -1 when this build
/// has no array cache.
int cache_depth(const Context& ctx);
/// Sets the array cache depth of `ctx` (0 turns the cache off). **Collective over ctx** (the
/// cache's decisions must be identical on every rank). Throws InvalidArgument for depth < 0
/// or when this build has no array cache.
void set_cache_depth(const Context& ctx, int depth);

/// A process grid "PxQ" (e.g. "2x1") as a distribution; "" or "auto" is the balanced grid.
/// Local. Throws InvalidArgument on malformed text.
Distribution<2> parse_grid(std::string_view text);

/// Writes a field as .npy (name ends in ".npy") or text (one row per line, %.17g). Local.
/// Throws InvalidArgument if the file cannot be written.
void write_field(const std::string& path, const boost::multi_array<double, 2>& u);

}  // namespace garray::laplace
