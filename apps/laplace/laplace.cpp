// The Laplace solver: the three variants, the serial reference and small helpers.
#include "laplace.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <garray/garray.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/window_cache.hpp>
#include <limits>
#include <optional>
#include <span>
#include <utility>

namespace garray::laplace {

// ---- small helpers --------------------------------------------------------------------

std::string_view to_string(Variant v) noexcept {
  switch (v) {
    case Variant::kernel:
      return "kernel";
    case Variant::fused:
      return "fused";
    case Variant::numpy:
      return "numpy";
  }
  return "?";
}

Variant parse_variant(std::string_view name) {
  for (Variant v : all_variants)
    if (name == to_string(v)) return v;
  garray::throw_error<garray::InvalidArgument>("laplace: unknown variant '", name,
                                               "' (kernel, fused or numpy)");
}

Coefficients Coefficients::of(const Problem& p) noexcept {
  Coefficients c{};
  c.dx = 1.0 / static_cast<double>(p.nx - 1);
  c.dy = 1.0 / static_cast<double>(p.ny - 1);
  c.dx2 = c.dx * c.dx;
  c.dy2 = c.dy * c.dy;
  c.dnr_inv = 0.5 / (c.dx2 + c.dy2);
  return c;
}

namespace {

double bc(double x, double y) noexcept { return x * x - y * y; }

// splitmix64: a hash of the global index that does not depend on the rank count.
std::uint64_t mix(std::uint64_t z) noexcept {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

double initial_value(const Problem& p, Index i, Index j) noexcept {
  const Coefficients c = Coefficients::of(p);
  // laplace.py assigns rows 0 and -1 first, then columns 0 and -1: columns win at corners.
  // x and y are numpy.arange(0, 1 + d/2, d), i.e. i*dx, except the explicit xmin/xmax args.
  if (j == 0) return bc(static_cast<double>(i) * c.dx, 0.0);
  if (j == p.ny - 1) return bc(static_cast<double>(i) * c.dx, 1.0);
  if (i == 0) return bc(0.0, static_cast<double>(j) * c.dy);
  if (i == p.nx - 1) return bc(1.0, static_cast<double>(j) * c.dy);
  if (p.init == Init::zero) return 0.0;
  const auto h =
      mix(static_cast<std::uint64_t>(i) * static_cast<std::uint64_t>(p.ny) + static_cast<std::uint64_t>(j));
  return static_cast<double>(h >> 11) * 0x1.0p-52 - 1.0;  // [-1, 1)
}

double sweep(const double* u, double* v, Index stride, Index rows, Index cols,
             const Coefficients& c) noexcept {
  double s = 0.0;  // never address-taken: stays in a register (stores to v cannot alias it)
  for (Index i = 0; i < rows; ++i) {
    const double* __restrict mid = u + i * stride;
    const double* __restrict up = mid - stride;
    const double* __restrict dn = mid + stride;
    double* __restrict out = v + i * stride;
    for (Index k = 0; k < cols; ++k) {
      const double nv = jacobi(up[k], dn[k], mid[k - 1], mid[k + 1], c);
      const double d = nv - mid[k];
      s += d * d;
      out[k] = nv;
    }
  }
  return s;
}

void sweep_exact(const double* u, double* v, Index stride, Index rows, Index cols, const Coefficients& c,
                 garray::detail::ExactAcc<double>& acc) noexcept {
  for (Index i = 0; i < rows; ++i) {
    const double* __restrict mid = u + i * stride;
    const double* __restrict up = mid - stride;
    const double* __restrict dn = mid + stride;
    double* __restrict out = v + i * stride;
    acc.add_n(cols, [&](Index k) {
      const double nv = jacobi(up[k], dn[k], mid[k - 1], mid[k + 1], c);
      const double d = nv - mid[k];
      out[k] = nv;
      return d * d;
    });
  }
}

double combine_partials(MPI_Comm comm, double partial, const std::exception_ptr& err) {
  // Every (partial, failed) pair on every rank, then one sum in rank order: the same bits
  // on every rank for any MPI library, and reproducible by the serial reference.
  int p = 0;
  garray::check_mpi(MPI_Comm_size(comm, &p), "MPI_Comm_size");
  const double mine[2] = {partial, err ? 1.0 : 0.0};
  std::vector<double> all(2 * static_cast<std::size_t>(p));
  garray::check_mpi(MPI_Allgather(mine, 2, MPI_DOUBLE, all.data(), 2, MPI_DOUBLE, comm), "MPI_Allgather");
  std::vector<double> partials(static_cast<std::size_t>(p));
  int failed = -1;
  for (std::size_t r = 0; r < partials.size(); ++r) {
    partials[r] = all[2 * r];
    if (failed < 0 && all[2 * r + 1] != 0.0) failed = static_cast<int>(r);
  }
  // The failed rank rethrows its error; the others throw CollectiveFailure with its message.
  if (failed >= 0) garray::detail::throw_peer_failure(comm, failed, err, "laplace: combining the step's error");
  return reference_combine(partials);
}

double reference_combine(const std::vector<double>& partials) {
  double s = 0.0;
  for (double x : partials) s += x;
  return s;
}

Distribution<2> parse_grid(std::string_view text) {
  if (text.empty() || text == "auto") return Distribution<2>::blocked();
  const auto x = text.find('x');
  auto num = [&](std::string_view t) {
    int v = 0;
    const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc{} || ptr != t.data() + t.size() || v < 1)
      garray::throw_error<garray::InvalidArgument>("laplace: bad process grid '", text,
                                                   "' (expected PxQ with P, Q >= 1, e.g. 2x1, or auto)");
    return v;
  };
  if (x == std::string_view::npos) num("");  // throws
  return Distribution<2>::grid({num(text.substr(0, x)), num(text.substr(x + 1))});
}

void write_field(const std::string& path, const boost::multi_array<double, 2>& u) {
  const auto nx = static_cast<std::size_t>(u.shape()[0]), ny = static_cast<std::size_t>(u.shape()[1]);
  const bool npy = path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0;
  std::ofstream out(path, std::ios::binary);
  if (!out) garray::throw_error<garray::InvalidArgument>("laplace: cannot write '", path, "'");
  if (npy) {
    // NPY format 1.0: magic, version, little-endian header length, a dict padded with
    // spaces and a newline so that the data starts at a multiple of 64 bytes.
    std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + std::to_string(nx) + ", " +
                         std::to_string(ny) + "), }";
    const std::size_t unpadded = 10 + header.size() + 1;
    header.append((64 - unpadded % 64) % 64, ' ');
    header += '\n';
    const auto hl = static_cast<std::uint16_t>(header.size());
    out.write("\x93NUMPY\x01\x00", 8);
    const char len[2] = {static_cast<char>(hl & 0xff), static_cast<char>(hl >> 8)};
    out.write(len, 2);
    out << header;
    out.write(reinterpret_cast<const char*>(u.data()),
              static_cast<std::streamsize>(nx * ny * sizeof(double)));
  } else {
    char buf[32];
    for (std::size_t i = 0; i < nx; ++i) {
      for (std::size_t j = 0; j < ny; ++j) {
        std::snprintf(buf, sizeof buf, "%.17g", u[static_cast<Index>(i)][static_cast<Index>(j)]);
        out << (j ? " " : "") << buf;
      }
      out << '\n';
    }
  }
  if (!out) garray::throw_error<garray::InvalidArgument>("laplace: error writing '", path, "'");
}

int cache_depth(const Context& ctx) { return ctx.cache().depth(); }

void set_cache_depth(const Context& ctx, int depth) {
  // Identical on every rank by contract; a rank that diverges is caught at the next create.
  ctx.cache().set_depth(depth);
}

// ---- the serial reference -------------------------------------------------------------

Reference reference_solve(const Problem& p, const Distribution<2>& dist, int n_iter, double eps) {
  const Coefficients c = Coefficients::of(p);
  Reference ref;
  ref.u.resize(boost::extents[p.nx][p.ny]);
  for (Index i = 0; i < p.nx; ++i)
    for (Index j = 0; j < p.ny; ++j) ref.u[i][j] = initial_value(p, i, j);
  auto old = ref.u;
  std::vector<double> partials(static_cast<std::size_t>(dist.nranks()));
  for (int it = 0; it < n_iter; ++it) {
    old = ref.u;  // old_u = u.copy()
    for (Index i = 1; i < p.nx - 1; ++i)
      for (Index j = 1; j < p.ny - 1; ++j)
        ref.u[i][j] = jacobi(old[i - 1][j], old[i + 1][j], old[i][j - 1], old[i][j + 1], c);
    if (p.reproducible) {  // the exact sum over the whole grid, rounded once
      garray::detail::ExactSum acc;
      for (Index i = 0; i < p.nx; ++i)
        for (Index j = 0; j < p.ny; ++j) {
          const double d = ref.u[i][j] - old[i][j];
          acc.add(d * d);
        }
      const double err = std::sqrt(acc.round<double>());
      ref.errors.push_back(err);
      if (err <= eps) break;
      continue;
    }
    // Per-rank partials over each rank's block, row-major, then combined in rank order.
    for (int r = 0; r < dist.nranks(); ++r) {
      const Box<2> b = dist.block(r);
      double s = 0.0;
      for (Index i = b.lo[0]; i < b.hi[0]; ++i)
        for (Index j = b.lo[1]; j < b.hi[1]; ++j) {
          const double d = ref.u[i][j] - old[i][j];
          s += d * d;
        }
      partials[static_cast<std::size_t>(r)] = s;
    }
    const double err = std::sqrt(reference_combine(partials));
    ref.errors.push_back(err);
    if (err <= eps) break;
  }
  return ref;
}

// ---- the variants ---------------------------------------------------------------------

namespace detail {

using Array = GlobalArray<double, 2>;
using garray::_;
using garray::idx;
using garray::range;

/// What every variant implements.
class Impl {
 public:
  Impl(const Context& ctx, const Problem& p, Variant v) : ctx_(ctx), p_(p), c_(Coefficients::of(p)), v_(v) {}
  virtual ~Impl() = default;
  virtual void reset() = 0;
  virtual double step() = 0;
  virtual const Array& current() const = 0;
  virtual Array& current_mut() = 0;
  /// Every array holding the field (both buffers of the swapping variants: the boundary
  /// lives in both), current one first.
  virtual void restore(const std::function<void(Array&)>& load) = 0;

  Context ctx_;
  Problem p_;
  Coefficients c_;
  Variant v_;

 protected:
  /// Sets the initial field in `a` (owned elements; ghosts are refreshed by each step).
  void init(Array& a) const {
    {
      auto blk = a.access();
      auto& v = blk.view();
      for (Index i = blk.lo(0); i < blk.hi(0); ++i)
        for (Index j = blk.lo(1); j < blk.hi(1); ++j) v[i][j] = initial_value(p_, i, j);
    }
    a.sync();
  }
};

/// kernel: two ghosted arrays, swapped every step; one loop computes the new values and the
/// squared change together.
class KernelImpl final : public Impl {
 public:
  KernelImpl(const Context& ctx, const Problem& p, const Distribution<2>& dist)
      : Impl(ctx, p, Variant::kernel),
        a_(ctx, {p.nx, p.ny}, dist, {1, 1}),
        b_(ctx, {p.nx, p.ny}, dist, {1, 1}) {
    reset();
  }
  void reset() override {
    init(a_);
    init(b_);  // the boundary lives in both buffers
    cur_ = &a_;
    nxt_ = &b_;
  }
  const Array& current() const override { return *cur_; }
  Array& current_mut() override { return *cur_; }
  void restore(const std::function<void(Array&)>& load) override {
    load(a_);
    load(b_);
    cur_ = &a_;
    nxt_ = &b_;
  }

  double step() override {
    Array& u = *cur_;
    Array& v = *nxt_;
    double s = 0.0;
    garray::detail::ExactAcc<double> exact;
    std::exception_ptr err;
    try {
      fetch_ghosts(u);
      const Box<2> box = u.local_box();
      const Index i0 = std::max<Index>(box.lo[0], 1), i1 = std::min<Index>(box.hi[0], p_.nx - 1);
      const Index j0 = std::max<Index>(box.lo[1], 1), j1 = std::min<Index>(box.hi[1], p_.ny - 1);
      if (!box.empty() && i0 < i1 && j0 < j1) {
        auto bu = u.access();
        auto bv = v.access();
        const auto lay = u.layout_of(ctx_.rank());  // the same for v: same distribution and ghosts
        const double* pu = bu.data() + lay.offset({i0, j0});
        double* pv = bv.data() + lay.offset({i0, j0});
        if (p_.reproducible)
          sweep_exact(pu, pv, lay.strides[0], i1 - i0, j1 - j0, c_, exact);
        else
          s = sweep(pu, pv, lay.strides[0], i1 - i0, j1 - j0, c_);
      }
      v.fence();  // my part of v complete: my stores ordered before the synchronisation below
    } catch (...) {
      err = std::current_exception();
    }
    // One collective per step, as in the hand-written MPI version: the gather of the partial
    // sums orders every rank's fence() before any rank's next ghost get (semantics.md,
    // visibility rule 2), and every rank's gets of u (complete on return) before anyone
    // overwrites u. A v.sync() here would be a second collective per step (across hosts, a
    // network latency each). The gather also carries a failure of the local part (failure
    // rule: every rank throws, none waits). --reproducible gathers only that, then sums
    // exactly.
    const double total = combine_partials(ctx_.comm(), p_.reproducible ? 0.0 : s, err);
    std::swap(cur_, nxt_);
    if (p_.reproducible) {
      exact.allreduce(ctx_.comm());
      return std::sqrt(exact.value());
    }
    return std::sqrt(total);
  }

 private:
  /// Fills the ghost cells next to the interior of my block from the neighbours' blocks of
  /// `u`, one-sidedly: the rows above and below straight into the (contiguous) ghost rows,
  /// the columns left and right through small buffers. Corners are not needed. The (up to
  /// four) gets are started together and waited for together: across hosts, where each is a
  /// round trip, that is one latency per step instead of one per neighbour.
  void fetch_ghosts(Array& u) {
    const Box<2> b = u.local_box();
    if (b.empty()) return;
    const auto lay = u.layout_of(ctx_.rank());
    auto blk = u.access();  // ghost cells are my window memory: written between access syncs
    double* mem = blk.data();
    std::array<garray::Request, 4> pending;
    std::size_t n = 0;
    auto rows = [&](Index row) {
      Section<2> s;
      s.start = {row, b.lo[1]};
      s.step = {1, 1};
      s.count = {1, b.extent(1)};
      pending[n++] = u.get_section_nb(
          s, std::span<double>(mem + lay.offset({row, b.lo[1]}), static_cast<std::size_t>(b.extent(1))));
    };
    auto cols = [&](Index col, std::vector<double>& buf) {
      Section<2> s;
      s.start = {b.lo[0], col};
      s.step = {1, 1};
      s.count = {b.extent(0), 1};
      buf.resize(static_cast<std::size_t>(b.extent(0)));
      pending[n++] = u.get_section_nb(s, std::span<double>(buf));
    };
    auto scatter = [&](Index col, const std::vector<double>& buf) {
      const Index st = lay.strides[0];
      double* dst = mem + lay.offset({b.lo[0], col});
      for (std::size_t k = 0; k < buf.size(); ++k) dst[static_cast<Index>(k) * st] = buf[k];
    };
    const bool left = b.lo[1] > 0, right = b.hi[1] < p_.ny;
    if (b.lo[0] > 0) rows(b.lo[0] - 1);
    if (b.hi[0] < p_.nx) rows(b.hi[0]);
    if (left) cols(b.lo[1] - 1, colbuf_[0]);
    if (right) cols(b.hi[1], colbuf_[1]);
    for (std::size_t k = 0; k < n; ++k) pending[k].wait();
    if (left) scatter(b.lo[1] - 1, colbuf_[0]);
    if (right) scatter(b.hi[1], colbuf_[1]);
  }

  Array a_, b_;
  Array* cur_ = nullptr;
  Array* nxt_ = nullptr;
  std::array<std::vector<double>, 2> colbuf_;  // left, right ghost columns
};

/// The five views of laplace.py's step over one array.
struct Stencil {
  garray::View<double, 2, 2> inner, up, down, left, right;
  explicit Stencil(Array& u)
      : inner(u[idx[range(1, -1)][range(1, -1)]]),
        up(u[idx[range(0, -2)][range(1, -1)]]),
        down(u[idx[range(2, _)][range(1, -1)]]),
        left(u[idx[range(1, -1)][range(0, -2)]]),
        right(u[idx[range(1, -1)][range(2, _)]]) {}
};

/// fused: the numeric layer, one owner-computes fused sweep per step with swapped buffers
/// instead of old_u = u.copy():
///
///   err = assign_norm2_diff(v[1:-1,1:-1], J(u), u[1:-1,1:-1]); swap(u, v)
///
/// where J(u) = ((u[0:-2,1:-1] + u[2:,1:-1])*dy2 + (u[1:-1,0:-2] + u[1:-1,2:])*dx2)*dnr_inv:
/// one pass writes v = J(u) and sums (new - old)^2 against u, like the kernel's loop. The
/// reduction runs over the elements each rank owns of v[inner], row-major, then in rank
/// order: the same error bits as kernel. (The in-place alternative,
/// assign_norm2_change(u[inner], J(u)), is numpy-correct but its output aliases its inputs,
/// so the numeric layer snapshots the block every step; see docs/performance.md.)
class FusedImpl final : public Impl {
 public:
  FusedImpl(const Context& ctx, const Problem& p, const Distribution<2>& dist)
      : Impl(ctx, p, Variant::fused), a_(ctx, {p.nx, p.ny}, dist), b_(ctx, {p.nx, p.ny}, dist) {
    reset();
  }
  void reset() override {
    init(a_);
    init(b_);  // the boundary lives in both buffers
    cur_ = &a_;
    nxt_ = &b_;
  }
  const Array& current() const override { return *cur_; }
  Array& current_mut() override { return *cur_; }
  void restore(const std::function<void(Array&)>& load) override {
    load(a_);
    load(b_);
    cur_ = &a_;
    nxt_ = &b_;
  }
  double step() override {
    const Stencil s(*cur_), t(*nxt_);
    const Coefficients& c = c_;
    // The same operations in the same order as jacobi().
    const auto jac = ((s.up + s.down) * c.dy2 + (s.left + s.right) * c.dx2) * c.dnr_inv;
    const double err = p_.reproducible ? garray::assign_norm2_diff(t.inner, jac, s.inner, garray::reproducible)
                                       : garray::assign_norm2_diff(t.inner, jac, s.inner);
    std::swap(cur_, nxt_);
    return err;
  }

 private:
  Array a_, b_;
  Array* cur_ = nullptr;
  Array* nxt_ = nullptr;
};

/// numpy: operator by operator, as numpy evaluates laplace.py. Every binary operation
/// materialises a new distributed array (eager garray::add / multiply / subtract / eval),
/// which comes from the array cache; temporaries die when numpy would drop them:
///
///   old_u = u.copy()                                   1 full-size array (kept to the next step)
///   t2 = (u[0:-2,1:-1] + u[2:,1:-1]) * dy2             t1, t2 (t1 dies)
///   t4 = (u[1:-1,0:-2] + u[1:-1,2:]) * dx2             t3, t4 (t3 dies)
///   t6 = (t2 + t4) * dnr_inv                           t5, t6 (t2, t4, t5 die)
///   u[1:-1,1:-1] = t6                                  assignment across distributions
///   err = sqrt(sum((u - old_u)**2))                    d, d2 = d*d (numpy's square), sum
///
/// Nine arrays per step; at cache depth >= 3 none of them allocates a window after the
/// first steps (at most three of one shape are alive at once).
class NumpyImpl final : public Impl {
 public:
  NumpyImpl(const Context& ctx, const Problem& p, const Distribution<2>& dist)
      : Impl(ctx, p, Variant::numpy), u_(ctx, {p.nx, p.ny}, dist) {
    reset();
  }
  void reset() override {
    old_.reset();
    init(u_);
  }
  const Array& current() const override { return u_; }
  Array& current_mut() override { return u_; }
  void restore(const std::function<void(Array&)>& load) override {
    old_.reset();
    load(u_);
  }
  double step() override {
    const Stencil s(u_);
    const Coefficients& c = c_;
    old_ = garray::eval(u_);  // old_u = u.copy(): the new copy exists before the old one dies
    {
      auto t6 = [&] {
        auto t5 = [&] {
          auto t2 = [&] {
            auto t1 = garray::add(s.up, s.down);
            return garray::multiply(t1, c.dy2);
          }();
          auto t4 = [&] {
            auto t3 = garray::add(s.left, s.right);
            return garray::multiply(t3, c.dx2);
          }();
          return garray::add(t2, t4);
        }();
        return garray::multiply(t5, c.dnr_inv);
      }();
      garray::assign(s.inner, t6);
    }
    auto d2 = [&] {
      auto d = garray::subtract(u_, *old_);
      return garray::multiply(d, d);  // numpy computes d**2 as d*d
    }();
    return std::sqrt(p_.reproducible ? garray::sum(d2, garray::reproducible) : garray::sum(d2));
  }

 private:
  Array u_;
  std::optional<Array> old_;
};

std::unique_ptr<Impl> make_impl(const Context& ctx, const Problem& p, Variant v,
                                const Distribution<2>& dist) {
  switch (v) {
    case Variant::kernel:
      return std::make_unique<KernelImpl>(ctx, p, dist);
    case Variant::fused:
      return std::make_unique<FusedImpl>(ctx, p, dist);
    case Variant::numpy:
      return std::make_unique<NumpyImpl>(ctx, p, dist);
  }
  garray::throw_error<garray::InvalidArgument>("laplace: unknown variant ", static_cast<int>(v));
}

}  // namespace detail

// ---- Solver ---------------------------------------------------------------------------

Solver::Solver(const Context& ctx, const Problem& p, Variant v, const Distribution<2>& dist) {
  const bool ok = p.nx >= 2 && p.ny >= 2;
  if (!ctx.agree(ok)) {
    if (!ok)
      garray::throw_error<garray::InvalidArgument>("laplace::Solver: grid ", p.nx, "x", p.ny,
                                                   " too small (nx and ny must be >= 2)");
    garray::throw_error<garray::InvalidArgument>(
        "laplace::Solver: another rank was given a grid smaller than 2x2");
  }
  const bool all_repro = ctx.agree(p.reproducible), any_repro = !ctx.agree(!p.reproducible);
  if (all_repro != any_repro)
    garray::throw_error<garray::CollectiveMismatch>("laplace::Solver: ranks disagree on Problem::reproducible");
  // Every rank would sweep (and count in the error) the whole grid: rejected on every rank
  ctx.agree("laplace::Solver", [&] {
    if (dist.is_replicated())
      garray::throw_error<garray::InvalidArgument>(
          "laplace::Solver: a replicated distribution (every rank would sweep the whole grid); use blocked, "
          "slab or grid");
  });
  impl_ = detail::make_impl(ctx, p, v, dist);
}
Solver::~Solver() = default;
Solver::Solver(Solver&&) noexcept = default;
Solver& Solver::operator=(Solver&&) noexcept = default;

void Solver::reset() { impl_->reset(); }
double Solver::step() { return impl_->step(); }

GlobalArray<double, 2>& Solver::current_array() noexcept { return impl_->current_mut(); }
void Solver::restore(const std::function<void(GlobalArray<double, 2>&)>& load) { impl_->restore(load); }

SolveResult Solver::solve(int n_iter, double eps, bool record_errors,
                          const std::function<void(int, double)>& after_step) {
  SolveResult r;
  impl_->ctx_.barrier();
  const double t0 = MPI_Wtime();
  for (int it = 0; it < n_iter; ++it) {
    const double err = impl_->step();
    ++r.iterations;
    r.error = err;
    if (record_errors) r.errors.push_back(err);
    if (after_step) after_step(r.iterations, err);
    if (err <= eps) break;  // err is identical on every rank: all stop together
  }
  double dt = MPI_Wtime() - t0;
  garray::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, impl_->ctx_.comm()),
                    "MPI_Allreduce");
  r.seconds = dt;
  return r;
}

boost::multi_array<double, 2> Solver::field() const {
  boost::multi_array<double, 2> u(boost::extents[impl_->p_.nx][impl_->p_.ny]);
  field_rows(0, impl_->p_.nx, std::span<double>(u.data(), u.num_elements()));
  return u;
}

void Solver::field_rows(Index row0, Index nrows, std::span<double> out) const {
  Section<2> s;
  s.start = {row0, 0};
  s.step = {1, 1};
  s.count = {nrows, impl_->p_.ny};
  if (row0 < 0 || nrows < 0 || row0 + nrows > impl_->p_.nx)
    garray::throw_error<garray::BoundsError>("laplace::Solver::field_rows: rows [", row0, ", ", row0 + nrows,
                                             ") outside [0, ", impl_->p_.nx, ")");
  impl_->current().get_section(s, out);
}

const Problem& Solver::problem() const noexcept { return impl_->p_; }
Variant Solver::variant() const noexcept { return impl_->v_; }
const Distribution<2>& Solver::distribution() const noexcept { return impl_->current().distribution(); }

}  // namespace garray::laplace
