#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <garray/runtime/context.hpp>
#include <garray/runtime/window.hpp>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define GARRAY_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GARRAY_ASAN 1
#endif
#endif
#if defined(GARRAY_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace garray::detail {

// add_into: one clone per ISA, chosen at load time (ifunc), like MPI's own MPI_SUM kernels.
#if defined(__GNUC__) && defined(__x86_64__)
#define GARRAY_ISA_CLONES [[gnu::target_clones("avx512f", "avx2", "default")]]
#else
#define GARRAY_ISA_CLONES
#endif
#define GARRAY_DEFINE_ADD_INTO(T)                                                            \
  GARRAY_ISA_CLONES void add_into(T* __restrict dst, const T* __restrict src, std::size_t n) noexcept { \
    for (std::size_t i = 0; i < n; ++i) dst[i] += src[i];                                    \
  }
GARRAY_DEFINE_ADD_INTO(float)
GARRAY_DEFINE_ADD_INTO(double)
GARRAY_DEFINE_ADD_INTO(std::int32_t)
GARRAY_DEFINE_ADD_INTO(std::int64_t)
#undef GARRAY_DEFINE_ADD_INTO
#undef GARRAY_ISA_CLONES

bool unified_model(MPI_Win w) noexcept {
  int* model = nullptr;
  int flag = 0;
  return MPI_Win_get_attr(w, MPI_WIN_MODEL, &model, &flag) == MPI_SUCCESS && flag && model &&
         *model == MPI_WIN_UNIFIED;
}

namespace {
MPI_Info make_info(WindowKind kind) {
  MPI_Info info = MPI_INFO_NULL;
  check_mpi(MPI_Info_create(&info), "MPI_Info_create");
  // Accumulates use MPI_SUM (Fetch_and_op: MPI_SUM), and puts that must be ordered after
  // this rank's earlier ones MPI_REPLACE (Window::order_put); a rank never has a replace and
  // a sum in flight to the same elements (order_acc / order_put flush between them), and
  // other ranks' puts meeting accumulates there are undefined by the contract anyway
  // (semantics.md, Visibility rules 4). Says so to the implementation (MPI's default too):
  // hardware atomics where it has them.
  MPI_Info_set(info, "accumulate_ops", "same_op_no_op");
  if (kind != WindowKind::rma) {
    // Each rank's segment separately page-aligned, first-touched by its owner.
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
  }
  return info;
}

/// True if the window's accumulate_ordering orders write after write (MPI's default,
/// "rar,raw,war,waw"; assumed when the key cannot be read).
bool write_after_write_ordered(MPI_Win w) {
  MPI_Info info = MPI_INFO_NULL;
  if (MPI_Win_get_info(w, &info) != MPI_SUCCESS || info == MPI_INFO_NULL) return true;
  char value[MPI_MAX_INFO_VAL + 1] = {};
  int flag = 0;
#if MPI_VERSION >= 4  // (MPI_Info_get is deprecated there)
  int len = MPI_MAX_INFO_VAL + 1;
  const int rc = MPI_Info_get_string(info, "accumulate_ordering", &len, value, &flag);
#else
  const int rc = MPI_Info_get(info, "accumulate_ordering", MPI_MAX_INFO_VAL, value, &flag);
#endif
  MPI_Info_free(&info);
  if (rc != MPI_SUCCESS || !flag) return true;
  const std::string v(value);
  return v.find("waw") != std::string::npos;
}

/// GARRAY_ORDERED_PUTS: how a put to another node is ordered after this rank's earlier
/// write still in flight there (Window::order_put): "replace" (unset: the default) or
/// "flush" (cheaper where the one-sided component makes a replace a locked
/// read-modify-write, Open MPI's osc/ucx: docs/performance.md). Throws InvalidArgument.
bool replace_puts_wanted() {
  const char* v = std::getenv("GARRAY_ORDERED_PUTS");
  if (!v || !*v || std::string_view(v) == "replace") return true;
  if (std::string_view(v) == "flush") return false;
  throw InvalidArgument(message("GARRAY_ORDERED_PUTS='", v, "': expected 'replace' or 'flush'"));
}

/// Each rank of ctx by its number in ctx.node_comm(), MPI_UNDEFINED for ranks on other nodes.
std::vector<int> node_ranks(const Context& ctx) {
  MPI_Group all = MPI_GROUP_NULL, node = MPI_GROUP_NULL;
  check_mpi(MPI_Comm_group(ctx.comm(), &all), "MPI_Comm_group");
  if (const int rc = MPI_Comm_group(ctx.node_comm(), &node); rc != MPI_SUCCESS) {
    MPI_Group_free(&all);
    throw_mpi_error(rc, "MPI_Comm_group");
  }
  std::vector<int> ranks(static_cast<std::size_t>(ctx.size())), there(ranks.size());
  for (int r = 0; r < ctx.size(); ++r) ranks[static_cast<std::size_t>(r)] = r;
  const int rc = MPI_Group_translate_ranks(all, ctx.size(), ranks.data(), node, there.data());
  MPI_Group_free(&all);
  MPI_Group_free(&node);
  check_mpi(rc, "MPI_Group_translate_ranks");
  return there;
}

/// Under AddressSanitizer: the memory of a window comes from MPI (a shared mapping or MPI's
/// own allocation), which ASan knows nothing about, so an access past a block would go
/// unnoticed. Poison what no garray access may touch: this rank's padding after its block
/// and, on shared windows, every segment's lock line after its lock word (in this process's
/// mapping). Unpoisoned before MPI_Win_free (the addresses are reused). No-op without ASan.
void guard(bool poison, std::byte* base, std::size_t bytes, std::size_t padded,
           const std::vector<std::uint32_t*>& locks) noexcept {
#if defined(GARRAY_ASAN)
  auto mark = [poison](std::byte* from, std::byte* to) {
    if (to <= from) return;
    if (poison) ASAN_POISON_MEMORY_REGION(from, static_cast<std::size_t>(to - from));
    else ASAN_UNPOISON_MEMORY_REGION(from, static_cast<std::size_t>(to - from));
  };
  if (base) mark(base + (bytes + 7) / 8 * 8, base + padded);  // shadow granularity: 8 bytes
  for (auto* l : locks) {
    auto* line = reinterpret_cast<std::byte*>(l);
    mark(line + 8, line + 64);
  }
#else
  (void)poison, (void)base, (void)bytes, (void)padded, (void)locks;
#endif
}
}  // namespace

Window::Window(const Context& ctx, std::size_t bytes)
    : stats_(&ctx.stats()), bytes_(bytes), kind_(ctx.window_kind()) {
  MPI_Info info = make_info(kind_);
  void* base = nullptr;
  // Segments are padded to whole cache lines: no false sharing between neighbouring ranks'
  // segments of one shared allocation, and a workaround for MPICH 4.0 (ch4): its
  // MPI_Win_allocate places ranks' segments in one shared-memory heap and, when a size is
  // not a multiple of 16 bytes, a rank's base pointer and the memory its peers' RMA
  // addresses no longer match (operations land on another rank's segment). Observed with
  // Debian's MPICH 4.0.2 at 4, 8, 12, 24 and 56 bytes; test_array.rma caught it.
  constexpr std::size_t line = 64;
  // One more line per rank, after the block: its accumulate lock and replica word (shared
  // windows), its replica word (rma and mixed windows; see lock_replicas).
  const auto padded = (bytes + line - 1) / line * line;
  const auto size = static_cast<MPI_Aint>(padded + line);
  const char* call = kind_ == WindowKind::shared ? "MPI_Win_allocate_shared" : "MPI_Win_allocate";
  int rc = MPI_SUCCESS;
  bool skipped = false;  // mixed: another rank's shared allocation failed, no MPI_Win_create
  std::exception_ptr shm_error;  // this rank has no window: its error (mixed: the shared allocation's)
  if (kind_ == WindowKind::mixed) {
    // The node's shared memory first; every rank must have it before the collective
    // MPI_Win_create exposes it to the whole context.
    call = "MPI_Win_allocate_shared";
    rc = MPI_Win_allocate_shared(size, 1, info, ctx.node_comm(), &base, &shm_win_);
    if (rc == MPI_SUCCESS) {
      try {
        fault_point("window.shared");  // as if this rank's shared allocation had failed
      } catch (...) {
        shm_error = std::current_exception();
      }
    }
    const bool ok = rc == MPI_SUCCESS && !shm_error;
    if (all_ok(ctx.comm(), ok)) {
      call = "MPI_Win_create";
      rc = MPI_Win_create(base, size, 1, info, ctx.comm(), &win_);
    } else {
      skipped = ok;
    }
  } else if (kind_ == WindowKind::shared) {
    rc = MPI_Win_allocate_shared(size, 1, info, ctx.comm(), &base, &win_);
  } else {
    rc = MPI_Win_allocate(size, 1, info, ctx.comm(), &base, &win_);
  }
  MPI_Info_free(&info);
  me_ = ctx.rank();
  if (rc == MPI_SUCCESS && !skipped && !shm_error) {
    try {
      // As if this rank's window creation had failed after the others' succeeded (memory, a
      // component that cannot reach some host): this rank has no window (the one MPI made
      // is abandoned), the others must not free theirs alone.
      fault_point("window.allocate");
    } catch (...) {
      shm_error = std::current_exception();  // below: "no window here", with this error
    }
  }
  // Window creation is collective but can fail on some ranks only (memory, a one-sided
  // component that cannot span the hosts), and so can the setup after it: agree on success
  // before anything else (failure rule). Status: 0 fine, 1 this rank has a window but its
  // setup failed, 2 no window here (the MPI call failed here, or a mixed window's shared
  // allocation failed elsewhere).
  std::exception_ptr err;
  int status = 0;
  bool locked = false, shm_locked = false;
  if (skipped) {
    status = 2;  // not this rank's failure: the failing rank's message comes in conclude()
  } else if (shm_error) {
    status = 2;
    err = shm_error;
  } else if (rc != MPI_SUCCESS) {
    status = 2;
    try {
      throw_mpi_error(rc, call);
    } catch (...) {
      err = std::current_exception();
    }
  } else {
    try {
      fault_point("window.create");
      base_ = static_cast<std::byte*>(base);
      check_mpi(MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN), "MPI_Win_set_errhandler");
      unified_ = unified_model(win_);
      if (kind_ == WindowKind::mixed) {
        check_mpi(MPI_Win_set_errhandler(shm_win_, MPI_ERRORS_RETURN), "MPI_Win_set_errhandler");
        unified_ = unified_ && unified_model(shm_win_);
      }
      if (kind_ != WindowKind::rma && !unified_)
        throw MpiError(message(call, ": the window is not in the unified memory model (MPI_WIN_MODEL); "
                                     "run with GARRAY_WINDOW=rma"), MPI_ERR_WIN);
      if (kind_ == WindowKind::shared) {
        peers_.resize(static_cast<std::size_t>(ctx.size()));
        locks_.resize(static_cast<std::size_t>(ctx.size()));
        for (int r = 0; r < ctx.size(); ++r) {
          MPI_Aint sz = 0;
          int unit = 0;
          void* p = nullptr;
          check_mpi(MPI_Win_shared_query(win_, r, &sz, &unit, &p), "MPI_Win_shared_query");
          peers_[static_cast<std::size_t>(r)] = static_cast<std::byte*>(p);
          locks_[static_cast<std::size_t>(r)] = reinterpret_cast<std::uint32_t*>(static_cast<std::byte*>(p) + sz - line);
        }
      }
      if (kind_ != WindowKind::shared) {
        const std::vector<int> there = node_ranks(ctx);
        // Replaces (order_put) rely on MPI ordering one origin's accumulates to the same
        // elements (accumulate_ordering's default contains waw): without that, or with
        // GARRAY_ORDERED_PUTS=flush, none
        const bool ordered = replace_puts_wanted() && write_after_write_ordered(win_);
        remote_.resize(there.size());
        for (std::size_t r = 0; r < there.size(); ++r) remote_[r] = ordered && there[r] == MPI_UNDEFINED;
        if (kind_ == WindowKind::mixed) {  // the blocks of this node's ranks
          peers_.assign(there.size(), nullptr);
          for (std::size_t r = 0; r < there.size(); ++r) {
            if (there[r] == MPI_UNDEFINED) continue;
            MPI_Aint sz = 0;
            int unit = 0;
            void* p = nullptr;
            check_mpi(MPI_Win_shared_query(shm_win_, there[r], &sz, &unit, &p), "MPI_Win_shared_query");
            if (sz > 0) peers_[r] = static_cast<std::byte*>(p);  // an empty block: nothing to load
          }
        }
      }
      dirty_.assign(static_cast<std::size_t>(ctx.size()), 0);
      rec_.assign(static_cast<std::size_t>(ctx.size()), -1);
      if (kind_ == WindowKind::mixed) {
        check_mpi(MPI_Win_lock_all(MPI_MODE_NOCHECK, shm_win_), "MPI_Win_lock_all");
        shm_locked = true;
      }
      check_mpi(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_), "MPI_Win_lock_all");
      locked = true;
      // Each rank clears its own lock words; the agreement below orders every clear before
      // anybody's first lock.
      if (kind_ == WindowKind::shared) {
        std::uint32_t* l = locks_[static_cast<std::size_t>(ctx.rank())];
        std::atomic_ref<std::uint32_t>(l[1]).store(0, std::memory_order_release);
        std::atomic_ref<std::uint32_t>(l[0]).store(0, std::memory_order_release);
      } else {
        replica_disp_ = static_cast<MPI_Aint>(padded);
        std::int64_t* words = reinterpret_cast<std::int64_t*>(base_ + padded);
        std::atomic_ref<std::int64_t>(words[0]).store(0, std::memory_order_release);
        std::atomic_ref<std::int64_t>(words[1]).store(0, std::memory_order_release);
        if (shm_win_ != MPI_WIN_NULL) check_mpi(MPI_Win_sync(shm_win_), "MPI_Win_sync");
      }
      check_mpi(MPI_Win_sync(win_), "MPI_Win_sync");
      fault_point("window.setup");
    } catch (...) {
      err = std::current_exception();
      status = 1;
    }
  }
  int worst = 0;
  check_mpi(MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, ctx.comm()), "MPI_Allreduce");
  if (worst != 0) {
    if (status != 2) {
      if (worst == 1) {  // every rank has a window: free it together
        if (locked) MPI_Win_unlock_all(win_);
        MPI_Win_free(&win_);
        if (shm_win_ != MPI_WIN_NULL) {
          if (shm_locked) MPI_Win_unlock_all(shm_win_);
          MPI_Win_free(&shm_win_);
        }
      } else {
        ++stats_->leaked_windows;  // some rank has none: a collective free could hang
      }
    } else if (shm_win_ != MPI_WIN_NULL) {
      ++stats_->leaked_windows;  // mixed: this node's shared allocation, but no window over all
    }
    conclude(ctx.comm(), err, call);  // throws on every rank: some rank failed
    throw MpiError(message(call, ": failed on another rank"), MPI_ERR_WIN);
  }
  guard(true, base_, bytes_, (bytes_ + line - 1) / line * line, locks_);
  auto& st = *stats_;
  ++st.windows_allocated;
  st.window_bytes += static_cast<std::int64_t>(bytes_);
}

namespace {
struct Deferred {
  std::pair<std::uint64_t, std::uint64_t> order;
  MPI_Win win, shm;
};
std::mutex deferred_mutex;
std::vector<Deferred>& deferred() {
  static auto* v = new std::vector<Deferred>;  // never destroyed: used at MPI_Finalize
  return *v;
}
}  // namespace

namespace {
std::ptrdiff_t mod(std::ptrdiff_t x, std::ptrdiff_t p) noexcept { return (x % p + p) % p; }
}  // namespace

bool Window::overlap(const Footprint& a, const Footprint& b) noexcept {
  if (!(a.lo < b.hi && b.lo < a.hi)) return false;  // disjoint hulls
  if (a.pitch == 0 || a.pitch != b.pitch) return true;
  // two combs of one pitch: their runs meet iff the runs' offsets within a pitch do
  const std::ptrdiff_t p = a.pitch, ca = mod(a.lo, p), cb = mod(b.lo, p);
  return mod(cb - ca, p) < a.run || mod(ca - cb, p) < b.run;
}

namespace {
/// Makes g cover f too when their union is again one footprint: hulls that touch or
/// overlap, or runs of one pitch that touch or overlap within the pitch (rows, columns or
/// tiles written one after another). False, g unchanged, otherwise.
bool merge_into(Window::Footprint& g, const Window::Footprint& f) noexcept {
  if (g.pitch == 0 && f.pitch == 0) {
    if (f.lo > g.hi || g.lo > f.hi) return false;  // a gap between the hulls
    g.lo = std::min(g.lo, f.lo);
    g.hi = std::max(g.hi, f.hi);
    return true;
  }
  if (g.pitch != f.pitch) return false;
  const std::ptrdiff_t p = g.pitch, cg = mod(g.lo, p), cf = mod(f.lo, p);
  std::ptrdiff_t lo = 0, run = 0;
  if (const std::ptrdiff_t d = mod(cf - cg, p); d <= g.run) {  // f's runs start in or right after g's
    lo = std::min(g.lo, f.lo - d);
    run = std::max(g.run, d + f.run);
  } else if (const std::ptrdiff_t e = mod(cg - cf, p); e <= f.run) {  // g's in or right after f's
    lo = std::min(f.lo, g.lo - e);
    run = std::max(f.run, e + g.run);
  } else {
    return false;
  }
  g.lo = lo;
  g.hi = std::max(g.hi, f.hi);
  if (run >= p) {  // the runs fill the pitch: every byte of the hull
    g.pitch = 0;
    g.run = 0;
  } else {
    g.run = run;
  }
  return true;
}
}  // namespace

unsigned Window::clashes(int r, const Footprint& f, unsigned which) const noexcept {
  const auto i = rec_[static_cast<std::size_t>(r)];
  if (!dirty_[static_cast<std::size_t>(r)] || i < 0) return 0;
  const Written& w = records_[static_cast<std::size_t>(i)];
  unsigned bits = 0;
  for (std::size_t k = 0; k < kinds; ++k) {
    if (!(which >> k & 1u)) continue;
    for (std::size_t j = 0; j < w.n[k]; ++j) {
      if (overlap(w.fs[k][j], f)) {
        bits |= 1u << k;
        break;
      }
    }
  }
  return bits;
}

void Window::flush_to_order(int r) const {
  fault_point("order.flush");  // tests: as if the flush had failed (nothing of the write issued)
  complete_writes_to(r);
  ++stats_->ordering_flushes;
}

void Window::record(int r, Kind k, const Footprint& f, bool flush) const {
  const auto t = static_cast<std::size_t>(r);
  if (rec_[t] < 0) {  // the first write to r: its record (may throw; nothing issued yet)
    records_.emplace_back();
    rec_[t] = static_cast<std::int32_t>(records_.size() - 1);
  }
  if (flush) flush_to_order(r);
  if (stored_ && (r == me_ || peer(r))) {  // direct stores before this MPI call
    memory_sync();
    stored_ = false;
  }
  if (!dirty_[t]) {
    dirty_[t] = 1;
    ++ndirty_;
  }
  Written& w = records_[static_cast<std::size_t>(rec_[t])];
  auto& fs = w.fs[k];
  auto& n = w.n[k];
  for (int j = 0; j < n; ++j)
    if (merge_into(fs[static_cast<std::size_t>(j)], f)) return;
  if (n < fs.size()) {
    fs[n++] = f;
  } else {  // full: one hull of everything
    Footprint h{f.lo, f.hi, 0, 0};
    for (const Footprint& g : fs) {
      h.lo = std::min(h.lo, g.lo);
      h.hi = std::max(h.hi, g.hi);
    }
    fs[0] = h;
    n = 1;
  }
}

void Window::order_acc(int r, const Footprint& f) const {
  // MPI orders it after accumulates (same op); after puts not, and after replaces the
  // window's accumulate_ops=same_op_no_op says no other op may meet it in flight
  record(r, acc_kind, f, clashes(r, f, 1u << put_kind | 1u << replace_kind) != 0);
}

bool Window::order_put(int r, const Footprint& f) const {
  const bool remote = !remote_.empty() && remote_[static_cast<std::size_t>(r)];
  const unsigned c = clashes(r, f, all_kinds);
  const bool replace = remote && c != 0;  // (after a put or sum: once flushed, the next is free)
  // a replace is ordered after replaces; anything else after nothing in flight
  record(r, replace ? replace_kind : put_kind, f, (replace ? c & ~(1u << replace_kind) : c) != 0);
  if (replace) ++stats_->replace_puts;
  return replace;
}

void Window::order_store(int r, const Footprint& f) const {
  if (clashes(r, f, all_kinds) != 0) flush_to_order(r);
  stored_ = true;
}

void Window::completed(int r) const noexcept {
  const auto t = static_cast<std::size_t>(r);
  if (dirty_[t]) {
    dirty_[t] = 0;
    --ndirty_;
  }
  if (rec_[t] >= 0) records_[static_cast<std::size_t>(rec_[t])].n = {};  // (footprints past n unused)
}

void Window::defer_free(std::pair<std::uint64_t, std::uint64_t> order) noexcept {
  abandoned_ = true;  // whatever happens below, the destructor makes no MPI call
  try {
    std::lock_guard lock(deferred_mutex);
    deferred().push_back({order, win_, shm_win_});
  } catch (...) {
    // out of memory: the window stays leaked (counted by the destructor)
  }
}

void free_deferred_windows() noexcept {
  std::lock_guard lock(deferred_mutex);
  auto& v = deferred();
  // One total order on every rank: no two ranks wait for each other in opposite orders.
  std::sort(v.begin(), v.end(), [](const Deferred& a, const Deferred& b) { return a.order < b.order; });
  for (Deferred& d : v) {
    MPI_Win_unlock_all(d.win);
    MPI_Win_free(&d.win);
    if (d.shm != MPI_WIN_NULL) {
      MPI_Win_unlock_all(d.shm);
      MPI_Win_free(&d.shm);
    }
  }
  v.clear();
}

Window::~Window() {
  auto& st = *stats_;
  // Not "skip while this rank unwinds": a window is destroyed only at a point every rank
  // agreed on (a create's or clear()'s agreement, a context teardown that agreed nobody
  // unwinds), where the others free it too. A rank running such a create inside a
  // destructor while an exception unwound its stack skipped the free the others made, and
  // the job hung (test: "a create inside a destructor ... frees pending windows").
  if (abandoned_) {
    ++st.leaked_windows;  // handed to the deferred list (defer_free): freed at MPI_Finalize
    return;
  }
  int fin = 0;
  MPI_Finalized(&fin);
  if (fin) return;
  guard(false, base_, bytes_, (bytes_ + 63) / 64 * 64, locks_);
  MPI_Win_unlock_all(win_);
  MPI_Win_free(&win_);
  if (shm_win_ != MPI_WIN_NULL) {  // mixed: after the window that exposes its memory
    MPI_Win_unlock_all(shm_win_);
    MPI_Win_free(&shm_win_);
  }
  ++st.windows_freed;
  st.window_bytes -= static_cast<std::int64_t>(bytes_);
}

void Window::lock_replicas() const {
  if (kind_ == WindowKind::shared) {
    spin_lock(locks_[0] + 1);
    return;
  }
  // A ticket lock on rank 0's two replica words (next ticket, now serving), with
  // MPI_Fetch_and_op(MPI_SUM) only, the operation of every other atomic on this window
  // (accumulate_ops=same_op_no_op; a "+0" is the atomic read). Not MPI_Compare_and_swap:
  // Open MPI 4.1's osc/rdma crashes in btl/vader's emulated 64-bit compare-and-swap
  // (open-mpi/ompi#7967).
  const std::int64_t one = 1, nothing = 0;
  std::int64_t ticket = 0, serving = -1;
  check_mpi(MPI_Fetch_and_op(&one, &ticket, MPI_INT64_T, 0, replica_disp_, MPI_SUM, win_),
            "MPI_Fetch_and_op");
  check_mpi(MPI_Win_flush(0, win_), "MPI_Win_flush");
  for (unsigned spins = 0;; ++spins) {
    // (an error here leaves our ticket drawn: the lock is lost for everyone, as a holder
    // that fails is; MPI errors on a window are not recoverable)
    check_mpi(MPI_Fetch_and_op(&nothing, &serving, MPI_INT64_T, 0, replica_disp_ + 8, MPI_SUM, win_),
              "MPI_Fetch_and_op");
    check_mpi(MPI_Win_flush(0, win_), "MPI_Win_flush");
    if (serving == ticket) break;
    backoff(spins);
  }
  // The previous holder's writes are complete at their targets (its unlock flushed them):
  // order them before our loads and stores of node-local copies.
  try {
    memory_sync();
  } catch (...) {
    (void)unlock_replicas();  // the memory_sync error is the one reported
    throw;
  }
}

std::exception_ptr Window::unlock_replicas() const noexcept {
  std::exception_ptr err;
  try {
    complete_all();  // every copy's update complete at its target before the next holder
    fault_point("replica.unlock");  // tests: as if the completion had failed
  } catch (...) {
    err = std::current_exception();  // reported to the writer (ReplicaLock::release)
  }
  if (kind_ == WindowKind::shared) {
    spin_unlock(locks_[0] + 1);
    return err;
  }
  const std::int64_t one = 1;
  std::int64_t old = 0;
  int rc = MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, replica_disp_ + 8, MPI_SUM, win_);
  if (rc == MPI_SUCCESS) rc = MPI_Win_flush(0, win_);
  if (rc != MPI_SUCCESS && !err) {
    try {
      throw_mpi_error(rc, "MPI_Fetch_and_op (replica lock release)");
    } catch (...) {
      err = std::current_exception();
    }
  }
  return err;
}

void yield_cpu() noexcept { std::this_thread::yield(); }

void backoff(unsigned spin) noexcept {
  // A sleep costs ~50 us of timer slack: only a long wait (thousands of polls) sleeps.
  if (spin < 4096) std::this_thread::yield();
  else std::this_thread::sleep_for(std::chrono::microseconds(20));
}

}  // namespace garray::detail
