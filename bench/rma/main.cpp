// bench_rma - one-sided latency and bandwidth, rank 0 -> rank 1.
//
// Rank 1 owns a 4096 x 4096 row-major block of doubles (128 MiB) in each window; rank 0
// issues every operation, rank 1 only waits. Measured operations:
//   get / put / acc           contiguous, sizes from --sizes (default 8 B .. 8 MiB)
//   get_strided / ...         a 512 x 512 patch at (1024, 1024) of rank 1's block
// Each variant is a named `void(std::size_t bytes)` that performs ONE complete operation:
//   mpi_win     MPI_Win_allocate window, lock_all(NOCHECK) once; Get+flush,
//               Put+flush_local, Accumulate(SUM)+flush_local; strided target = subarray type
//   mpi_shm     same MPI calls on an MPI_Win_allocate_shared window
//   shm_direct  load/store through MPI_Win_shared_query pointers: memcpy for get/put
//               (row by row when strided), a `+=` loop for acc (not atomic w.r.t. other
//               accumulates - single-writer lower bound only)
//   garray      GlobalArray get/put/accumulate on the same data (when built with garray)
//   ga          Global Arrays 5.8 (Debian libglobalarrays-dev over ARMCI-MPI, i.e. GA on
//               MPI-3 RMA) NGA_Get/NGA_Put/NGA_Acc on the same layout (when found at build)
// Per (op, size, variant): calibrate an inner loop so one rep lasts >= --min-rep-ms, run
// --warmup + --reps reps, report median time per op. "x" = time / best raw time of the row.
// Before any timing every variant is validated (validate_gets, validate_writes): its gets at
// the largest size and the strided patch against the target's values, its puts and
// accumulates read back through its own get, its read_inc by two consecutive values; exact
// comparisons (the data are copies, and +1 to values below 2^24 is exact). Exit code 1 on
// every rank when one fails.
#include "bench_util.hpp"

#include <mpi.h>

#include <boost/program_options.hpp>

#if defined(GARRAY_BENCH_HAVE_GARRAY)
#include <garray/garray.hpp>
#endif
#if defined(GARRAY_BENCH_HAVE_GA)
#include <ga.h>
#include <macdecls.h>
#endif

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace gb = garray::bench;
namespace po = boost::program_options;

namespace {

constexpr int kTarget = 1;
constexpr std::size_t kBlockDim = 4096;  // rank 1's block: kBlockDim x kBlockDim doubles
constexpr std::size_t kBlockElems = kBlockDim * kBlockDim;
constexpr std::size_t kPatchDim = 512;  // strided patch: kPatchDim x kPatchDim doubles
constexpr std::size_t kPatchRow0 = 1024;
constexpr std::size_t kPatchCol0 = 1024;
constexpr std::size_t kPatchElems = kPatchDim * kPatchDim;
constexpr std::size_t kPatchBytes = kPatchElems * sizeof(double);

// Value of element i (row-major) of rank 1's block before any put/acc ran.
constexpr double block_value(std::size_t i) { return static_cast<double>(i); }

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw std::runtime_error(std::string(what) + ": " + std::string(msg, static_cast<std::size_t>(len)));
}

// ---- options -----------------------------------------------------------------------------

struct Options {
  int reps = 21;
  int warmup = 2;
  double min_rep_ms = 1.0;
  std::string csv;
  std::vector<std::size_t> sizes;
  bool strided = true;
};

const std::vector<std::size_t> kDefaultSizes = {8, 64, 1 << 10, 64 << 10, 1 << 20, 8 << 20};
const std::vector<std::size_t> kQuickSizes = {8, 1 << 10, 64 << 10, 1 << 20};

// Returns false if the program should exit successfully right away (--help).
bool parse_options(int argc, char** argv, int rank, Options& opt) {
  std::vector<std::string> size_args;
  po::options_description desc(
      "bench_rma: one-sided latency/bandwidth, rank 0 -> rank 1 (run with 2 ranks)\nOptions");
  desc.add_options()                                                                          //
      ("help,h", "print this help")                                                           //
      ("reps,r", po::value<int>(&opt.reps)->default_value(opt.reps), "timed repetitions")     //
      ("warmup,w", po::value<int>(&opt.warmup)->default_value(opt.warmup), "untimed warmups") //
      ("min-rep-ms", po::value<double>(&opt.min_rep_ms)->default_value(opt.min_rep_ms),
       "minimum duration of one rep; small ops are looped to reach it")  //
      ("csv", po::value<std::string>(&opt.csv), "append rows op,size_bytes,variant,median_us,gbps to FILE")  //
      ("sizes,s", po::value<std::vector<std::string>>(&size_args)->multitoken(),
       "contiguous sizes in bytes, e.g. 8 64 1K 64K 1M 8M or 8,1K,1M (multiples of 8)")  //
      ("no-strided", "skip the 512x512 strided patch")                                    //
      ("quick", "short run: sizes 8,1K,64K,1M, 5 reps, 1 warmup, 0.5 ms reps");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, desc), vm);
  po::notify(vm);
  if (vm.count("help") != 0) {
    if (rank == 0) std::cout << desc << '\n';
    return false;
  }
  opt.strided = vm.count("no-strided") == 0;
  if (vm.count("quick") != 0) {
    if (vm["reps"].defaulted()) opt.reps = 5;
    if (vm["warmup"].defaulted()) opt.warmup = 1;
    if (vm["min-rep-ms"].defaulted()) opt.min_rep_ms = 0.5;
    opt.sizes = kQuickSizes;
  } else {
    opt.sizes = kDefaultSizes;
  }
  if (!size_args.empty()) {
    opt.sizes.clear();
    for (const auto& arg : size_args) {
      std::stringstream ss(arg);
      for (std::string tok; std::getline(ss, tok, ',');)
        if (!tok.empty()) {
          try {
            opt.sizes.push_back(gb::parse_bytes(tok));
          } catch (const std::exception& e) {
            throw std::invalid_argument(std::string("--sizes: ") + e.what());
          }
        }
    }
  }
  if (opt.reps < 1 || opt.warmup < 0 || opt.min_rep_ms < 0) throw std::invalid_argument("bad --reps/--warmup/--min-rep-ms");
  if (opt.sizes.empty()) throw std::invalid_argument("--sizes: no sizes given");
  for (std::size_t s : opt.sizes)
    if (s == 0 || s % sizeof(double) != 0 || s > kBlockElems * sizeof(double))
      throw std::invalid_argument("size " + std::to_string(s) + " must be a positive multiple of 8 and <= 128 MiB");
  return true;
}

// ---- variant registry --------------------------------------------------------------------

enum class Kind { raw, garray, peer };

// One complete operation of `bytes` bytes (the origin buffer is owned by the variant's setup).
using OpFn = std::function<void(std::size_t bytes)>;

struct Variant {
  std::string name;
  Kind kind;
  OpFn op;
  std::function<void()> settle;  // untimed, after each rep: complete anything still in flight
};

struct Op {
  std::string name;
  std::vector<std::size_t> sizes;
  bool is_get;  // read-only op; validated before anything writes to the target
  std::vector<Variant> variants;
};

class Registry {
 public:
  Registry(const std::vector<std::size_t>& sizes, bool strided) {
    ops_.push_back({"get", sizes, true, {}});
    ops_.push_back({"put", sizes, false, {}});
    ops_.push_back({"acc", sizes, false, {}});
    if (strided) {
      ops_.push_back({"get_strided", {kPatchBytes}, true, {}});
      ops_.push_back({"put_strided", {kPatchBytes}, false, {}});
      ops_.push_back({"acc_strided", {kPatchBytes}, false, {}});
    }
    ops_.push_back({"read_inc", {8}, false, {}});  // atomic fetch-and-add of one int64
  }

  void add(std::string_view op, std::string variant, Kind kind, OpFn fn, std::function<void()> settle = [] {}) {
    for (auto& o : ops_)
      if (o.name == op) {
        o.variants.push_back({std::move(variant), kind, std::move(fn), std::move(settle)});
        return;
      }
    // ops not measured in this run (e.g. --no-strided) are silently dropped
  }

  // Objects that must live as long as the variants (windows, arrays, contexts).
  void keep_alive(std::shared_ptr<void> p) { keep_.push_back(std::move(p)); }

  [[nodiscard]] std::vector<Op>& ops() { return ops_; }

  [[nodiscard]] std::vector<std::string> variant_names() const {
    std::vector<std::string> names;
    for (const auto& o : ops_)
      for (const auto& v : o.variants)
        if (std::find(names.begin(), names.end(), v.name) == names.end()) names.push_back(v.name);
    return names;
  }

 private:
  std::vector<Op> ops_;
  std::vector<std::shared_ptr<void>> keep_;
};

// Origin-side buffers shared by all variants (rank 0): contiguous ops use contig[0, n),
// strided ops use patch (kPatchDim x kPatchDim, contiguous).
struct Buffers {
  std::vector<double> contig;
  std::vector<double> patch;
  std::int64_t fetched = 0;  // the value the last read_inc returned
};

// ---- raw MPI windows ---------------------------------------------------------------------

class RawWindow {
 public:
  // Collective over comm. Rank kTarget contributes kBlockElems doubles, all others none.
  // Returns nullptr (on all ranks) if the window flavour is unavailable (e.g. osc=pt2pt
  // cannot create shared windows).
  static std::shared_ptr<RawWindow> create(MPI_Comm comm, bool shared) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    const MPI_Aint bytes = rank == kTarget ? static_cast<MPI_Aint>(kBlockElems * sizeof(double)) : 0;
    auto w = std::shared_ptr<RawWindow>(new RawWindow);
    double* base = nullptr;
    const int rc = shared ? MPI_Win_allocate_shared(bytes, sizeof(double), MPI_INFO_NULL, comm, &base, &w->win_)
                          : MPI_Win_allocate(bytes, sizeof(double), MPI_INFO_NULL, comm, &base, &w->win_);
    if (rc != MPI_SUCCESS) {
      w->win_ = MPI_WIN_NULL;
      return nullptr;
    }
    if (rank == kTarget)
      for (std::size_t i = 0; i < kBlockElems; ++i) base[i] = block_value(i);
    if (shared) {
      MPI_Aint size = 0;
      int disp_unit = 0;
      check_mpi(MPI_Win_shared_query(w->win_, kTarget, &size, &disp_unit, &w->target_),
                "MPI_Win_shared_query");
    }
    return w;
  }
  RawWindow(const RawWindow&) = delete;
  RawWindow& operator=(const RawWindow&) = delete;
  ~RawWindow() {
    if (win_ != MPI_WIN_NULL) MPI_Win_free(&win_);
  }

  [[nodiscard]] MPI_Win win() const { return win_; }
  // Rank kTarget's block mapped into this process (shared windows only).
  [[nodiscard]] double* target() const { return target_; }

 private:
  RawWindow() = default;
  MPI_Win win_ = MPI_WIN_NULL;
  double* target_ = nullptr;
};

// Target datatype selecting the strided patch out of rank 1's block (displacement 0).
class PatchType {
 public:
  PatchType() {
    const int sizes[2] = {static_cast<int>(kBlockDim), static_cast<int>(kBlockDim)};
    const int sub[2] = {static_cast<int>(kPatchDim), static_cast<int>(kPatchDim)};
    const int start[2] = {static_cast<int>(kPatchRow0), static_cast<int>(kPatchCol0)};
    check_mpi(MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE, &type_), "subarray");
    check_mpi(MPI_Type_commit(&type_), "MPI_Type_commit");
  }
  PatchType(const PatchType&) = delete;
  PatchType& operator=(const PatchType&) = delete;
  ~PatchType() { MPI_Type_free(&type_); }
  [[nodiscard]] MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

int count_of(std::size_t bytes) { return static_cast<int>(bytes / sizeof(double)); }

// dst[i] += src[i]. Open MPI's MPI_SUM dispatches to AVX/AVX-512 at run time (op/avx), so
// the hand-written baseline is cloned for those ISAs too, or it would lose on SSE2 alone.
#if defined(__GNUC__) && defined(__x86_64__)
[[gnu::target_clones("avx512f", "avx2", "default")]]
#endif
void add_into(double* __restrict dst, const double* __restrict src, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] += src[i];
}

// Registers get/put/acc (+ strided) through MPI calls on `w`. Locks the window (rank 0).
void register_mpi_variants(Registry& reg, const std::string& name, std::shared_ptr<RawWindow> w,
                           std::shared_ptr<PatchType> patch_type, Buffers& buf) {
  const MPI_Win win = w->win();
  reg.keep_alive(w);
  auto settle = [win] { MPI_Win_flush(kTarget, win); };
  double* c = buf.contig.data();
  double* p = buf.patch.data();
  std::int64_t* fetched = &buf.fetched;
  const MPI_Datatype pt = patch_type->get();

  reg.add("get", name, Kind::raw, [=](std::size_t bytes) {
    MPI_Get(c, count_of(bytes), MPI_DOUBLE, kTarget, 0, count_of(bytes), MPI_DOUBLE, win);
    MPI_Win_flush(kTarget, win);
  }, settle);
  reg.add("put", name, Kind::raw, [=](std::size_t bytes) {
    MPI_Put(c, count_of(bytes), MPI_DOUBLE, kTarget, 0, count_of(bytes), MPI_DOUBLE, win);
    MPI_Win_flush_local(kTarget, win);
  }, settle);
  reg.add("acc", name, Kind::raw, [=](std::size_t bytes) {
    MPI_Accumulate(c, count_of(bytes), MPI_DOUBLE, kTarget, 0, count_of(bytes), MPI_DOUBLE, MPI_SUM, win);
    MPI_Win_flush_local(kTarget, win);
  }, settle);
  reg.add("read_inc", name, Kind::raw, [=](std::size_t) {
    const std::int64_t one = 1;
    std::int64_t old = 0;
    MPI_Fetch_and_op(&one, &old, MPI_INT64_T, kTarget, 0, MPI_SUM, win);
    MPI_Win_flush(kTarget, win);
    *fetched = old;
  }, settle);
  reg.add("get_strided", name, Kind::raw, [=](std::size_t) {
    MPI_Get(p, static_cast<int>(kPatchElems), MPI_DOUBLE, kTarget, 0, 1, pt, win);
    MPI_Win_flush(kTarget, win);
  }, settle);
  reg.add("put_strided", name, Kind::raw, [=](std::size_t) {
    MPI_Put(p, static_cast<int>(kPatchElems), MPI_DOUBLE, kTarget, 0, 1, pt, win);
    MPI_Win_flush_local(kTarget, win);
  }, settle);
  reg.add("acc_strided", name, Kind::raw, [=](std::size_t) {
    MPI_Accumulate(p, static_cast<int>(kPatchElems), MPI_DOUBLE, kTarget, 0, 1, pt, MPI_SUM, win);
    MPI_Win_flush_local(kTarget, win);
  }, settle);
  reg.keep_alive(std::move(patch_type));
}

// Registers load/store variants through the shared_query pointer of a shared window.
void register_shm_direct_variants(Registry& reg, const std::string& name, const std::shared_ptr<RawWindow>& w,
                                  Buffers& buf) {
  const MPI_Win win = w->win();
  double* const t = w->target();
  double* c = buf.contig.data();
  double* p = buf.patch.data();
  auto settle = [win] { MPI_Win_sync(win); };
  double* const t_patch = t + kPatchRow0 * kBlockDim + kPatchCol0;

  reg.add("get", name, Kind::raw, [=](std::size_t bytes) {
    std::memcpy(c, t, bytes);
    gb::do_not_optimize(c);
  }, settle);
  reg.add("put", name, Kind::raw, [=](std::size_t bytes) {
    std::memcpy(t, c, bytes);
    gb::clobber_memory();
  }, settle);
  reg.add("acc", name, Kind::raw, [=](std::size_t bytes) {
    add_into(t, c, bytes / sizeof(double));
    gb::clobber_memory();
  }, settle);
  reg.add("get_strided", name, Kind::raw, [=](std::size_t) {
    for (std::size_t r = 0; r < kPatchDim; ++r)
      std::memcpy(p + r * kPatchDim, t_patch + r * kBlockDim, kPatchDim * sizeof(double));
    gb::do_not_optimize(p);
  }, settle);
  reg.add("put_strided", name, Kind::raw, [=](std::size_t) {
    for (std::size_t r = 0; r < kPatchDim; ++r)
      std::memcpy(t_patch + r * kBlockDim, p + r * kPatchDim, kPatchDim * sizeof(double));
    gb::clobber_memory();
  }, settle);
  reg.add("acc_strided", name, Kind::raw, [=](std::size_t) {
    for (std::size_t r = 0; r < kPatchDim; ++r) add_into(t_patch + r * kBlockDim, p + r * kPatchDim, kPatchDim);
    gb::clobber_memory();
  }, settle);
}

// ---- garray variants ---------------------------------------------------------------------
// Compiled when the build links garray::garray (bench/CMakeLists.txt defines
// GARRAY_BENCH_HAVE_GARRAY). Same target data as the raw windows: rank 1's block of a 1-d
// blocked array (contiguous ops) and of a 2-d array on a 1 x P grid (strided patch), filled
// with block_value() so the get variants pass the same validation. The window kind is
// garray's own choice (shared on one node; GARRAY_WINDOW=rma|shared|auto overrides).
// Collective: called on every rank; rank 1 never issues operations.
#if defined(GARRAY_BENCH_HAVE_GARRAY)
struct GarrayArrays {
  explicit GarrayArrays(const garray::Context& c)
      : ctx(c),
        a(ctx, {static_cast<garray::Index>(kBlockElems) * ctx.size()}, garray::Distribution<1>::blocked()),
        b(ctx, {static_cast<garray::Index>(kBlockDim), static_cast<garray::Index>(kBlockDim) * ctx.size()},
          garray::Distribution<2>::grid({1, ctx.size()})),
        n(ctx, {static_cast<garray::Index>(8) * ctx.size()}) {}
  garray::Context ctx;
  garray::GlobalArray<double, 1> a;
  garray::GlobalArray<double, 2> b;
  garray::GlobalArray<std::int64_t, 1> n;  // read_inc counters: 8 per rank
};

void register_garray_variants(Registry& reg, Buffers& buf, std::vector<std::string>& notes) {
  using garray::idx;
  using garray::range;
  std::shared_ptr<GarrayArrays> g;
  try {
    g = std::make_shared<GarrayArrays>(garray::Context(MPI_COMM_WORLD));
  } catch (const std::exception& e) {  // collective failure: thrown on every rank
    notes.push_back(std::string("garray arrays could not be created, garray skipped: ") + e.what());
    return;
  }
  const garray::Box<1> ba = g->a.box_of(kTarget);
  const garray::Box<2> bb = g->b.box_of(kTarget);
  if (ba.volume() != static_cast<garray::Index>(kBlockElems) ||
      bb.extents() != garray::Shape<2>{static_cast<garray::Index>(kBlockDim), static_cast<garray::Index>(kBlockDim)}) {
    notes.emplace_back("garray: rank 1's blocks do not have the expected shape, garray skipped");
    return;
  }
  if (g->ctx.rank() == kTarget) {
    auto la = g->a.access();
    auto lb = g->b.access();
    for (std::size_t i = 0; i < kBlockElems; ++i) la.data()[i] = lb.data()[i] = block_value(i);
  }
  g->a.sync();
  g->b.sync();
  notes.push_back(std::string("garray window kind: ") +
                  std::string(garray::to_string(g->ctx.window_kind())) +
                  " (GARRAY_WINDOW=rma|shared|mixed|auto)");

  garray::GlobalArray<double, 1>* const a = &g->a;
  garray::GlobalArray<double, 2>* const b = &g->b;
  const garray::Index lo = ba.lo[0];
  const garray::Index r0 = bb.lo[0] + static_cast<garray::Index>(kPatchRow0);
  const garray::Index c0 = bb.lo[1] + static_cast<garray::Index>(kPatchCol0);
  const auto pd = static_cast<garray::Index>(kPatchDim);
  double* c = buf.contig.data();
  double* p = buf.patch.data();
  const auto n_of = [](std::size_t bytes) { return static_cast<garray::Index>(bytes / sizeof(double)); };
  auto settle_a = [a] { a->fence(); };
  auto settle_b = [b] { b->fence(); };

  reg.add("get", "garray", Kind::garray, [=](std::size_t bytes) {
    a->get(idx[range(lo, lo + n_of(bytes))], std::span<double>(c, bytes / sizeof(double)));
  }, settle_a);
  reg.add("put", "garray", Kind::garray, [=](std::size_t bytes) {
    a->put(idx[range(lo, lo + n_of(bytes))], std::span<const double>(c, bytes / sizeof(double)));
  }, settle_a);
  reg.add("acc", "garray", Kind::garray, [=](std::size_t bytes) {
    a->accumulate(idx[range(lo, lo + n_of(bytes))], std::span<const double>(c, bytes / sizeof(double)), 1.0);
  }, settle_a);
  garray::GlobalArray<std::int64_t, 1>* const n = &g->n;
  const garray::Index nlo = n->box_of(kTarget).lo[0];
  std::int64_t* fetched = &buf.fetched;
  reg.add(
      "read_inc", "garray", Kind::garray, [=](std::size_t) { *fetched = n->read_inc({nlo}); }, [] {});
  reg.add("get_strided", "garray", Kind::garray, [=](std::size_t) {
    b->get(idx[range(r0, r0 + pd)][range(c0, c0 + pd)], std::span<double>(p, kPatchElems));
  }, settle_b);
  reg.add("put_strided", "garray", Kind::garray, [=](std::size_t) {
    b->put(idx[range(r0, r0 + pd)][range(c0, c0 + pd)], std::span<const double>(p, kPatchElems));
  }, settle_b);
  reg.add("acc_strided", "garray", Kind::garray, [=](std::size_t) {
    b->accumulate(idx[range(r0, r0 + pd)][range(c0, c0 + pd)], std::span<const double>(p, kPatchElems), 1.0);
  }, settle_b);
  reg.keep_alive(std::move(g));
}
#else
// Built without garray::garray (e.g. plain mpicxx): raw MPI columns only.
void register_garray_variants(Registry& /*reg*/, Buffers& /*buf*/, std::vector<std::string>& notes) {
  notes.emplace_back("built without garray: raw MPI variants only");
}
#endif

// ---- Global Arrays -------------------------------------------------------------------------

#if defined(GARRAY_BENCH_HAVE_GA)
// GA arrays with the same layout as garray's: rank 1 owns a kBlockDim^2 block of each.
struct GaArrays {
  int a = 0, b = 0;
  GaArrays() {
    const int p = GA_Nnodes();
    int dims1[1] = {static_cast<int>(kBlockElems) * p};
    int nblock1[1] = {p};
    std::vector<int> map1(static_cast<std::size_t>(p));
    for (int r = 0; r < p; ++r) map1[static_cast<std::size_t>(r)] = r * static_cast<int>(kBlockElems);
    a = NGA_Create_irreg(C_DBL, 1, dims1, const_cast<char*>("bench_a"), nblock1, map1.data());
    int dims2[2] = {static_cast<int>(kBlockDim), static_cast<int>(kBlockDim) * p};
    int nblock2[2] = {1, p};
    std::vector<int> map2(static_cast<std::size_t>(p) + 1, 0);
    for (int r = 0; r < p; ++r) map2[static_cast<std::size_t>(r) + 1] = r * static_cast<int>(kBlockDim);
    b = NGA_Create_irreg(C_DBL, 2, dims2, const_cast<char*>("bench_b"), nblock2, map2.data());
    if (!a || !b) throw std::runtime_error("NGA_Create_irreg failed");
    if (GA_Nodeid() == kTarget) {  // same contents as the other windows
      for (int g : {a, b}) {
        int lo[2], hi[2], ld[1];
        double* ptr = nullptr;
        NGA_Distribution(g, kTarget, lo, hi);
        NGA_Access(g, lo, hi, &ptr, ld);
        for (std::size_t i = 0; i < kBlockElems; ++i) ptr[i] = block_value(i);
        NGA_Release_update(g, lo, hi);
      }
    }
    GA_Sync();
  }
  ~GaArrays() {
    GA_Destroy(b);
    GA_Destroy(a);
  }
};

void register_ga_variants(Registry& reg, Buffers& buf, std::vector<std::string>& notes) {
  // GA's extents are ints: the 1-d array holds kBlockElems per rank (every rank decides alike)
  if (kBlockElems * static_cast<std::size_t>(GA_Nnodes()) >
      static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    notes.emplace_back("ga: " + std::to_string(GA_Nnodes()) + " ranks x " + std::to_string(kBlockElems) +
                       " elements exceed GA's int extents, ga skipped");
    return;
  }
  auto g = std::make_shared<GaArrays>();
  notes.emplace_back("ga: Global Arrays over ARMCI-MPI (MPI-3 RMA); get/put/acc blocking, settle = GA_Fence");
  const int a = g->a, b = g->b;
  double* c = buf.contig.data();
  double* p = buf.patch.data();
  const int lo1 = kTarget * static_cast<int>(kBlockElems);
  auto hi1 = [lo1](std::size_t bytes) { return lo1 + static_cast<int>(bytes / sizeof(double)) - 1; };
  auto settle = [] {
    GA_Fence();
    GA_Init_fence();
  };
  GA_Init_fence();
  reg.add("get", "ga", Kind::peer, [=](std::size_t bytes) {
    int lo[1] = {lo1}, hi[1] = {hi1(bytes)}, ld[1] = {1};
    NGA_Get(a, lo, hi, c, ld);
  }, settle);
  reg.add("put", "ga", Kind::peer, [=](std::size_t bytes) {
    int lo[1] = {lo1}, hi[1] = {hi1(bytes)}, ld[1] = {1};
    NGA_Put(a, lo, hi, c, ld);
  }, settle);
  reg.add("acc", "ga", Kind::peer, [=](std::size_t bytes) {
    int lo[1] = {lo1}, hi[1] = {hi1(bytes)}, ld[1] = {1};
    double one = 1.0;
    NGA_Acc(a, lo, hi, c, ld, &one);
  }, settle);
  const int r0 = static_cast<int>(kPatchRow0), c0 = kTarget * static_cast<int>(kBlockDim) + static_cast<int>(kPatchCol0);
  const int pd = static_cast<int>(kPatchDim);
  reg.add("get_strided", "ga", Kind::peer, [=](std::size_t) {
    int lo[2] = {r0, c0}, hi[2] = {r0 + pd - 1, c0 + pd - 1}, ld[1] = {pd};
    NGA_Get(b, lo, hi, p, ld);
  }, settle);
  reg.add("put_strided", "ga", Kind::peer, [=](std::size_t) {
    int lo[2] = {r0, c0}, hi[2] = {r0 + pd - 1, c0 + pd - 1}, ld[1] = {pd};
    NGA_Put(b, lo, hi, p, ld);
  }, settle);
  reg.add("acc_strided", "ga", Kind::peer, [=](std::size_t) {
    int lo[2] = {r0, c0}, hi[2] = {r0 + pd - 1, c0 + pd - 1}, ld[1] = {pd};
    double one = 1.0;
    NGA_Acc(b, lo, hi, p, ld, &one);
  }, settle);
  reg.keep_alive(std::move(g));
}
#endif

// ---- validation & measurement (rank 0) ---------------------------------------------------

// Runs every get variant once, at the largest size (where chunking would show), and checks
// the data against block_value(). Must run before any put/acc. Throws on mismatch.
void validate_gets(Registry& reg, Buffers& buf) {
  for (auto& op : reg.ops()) {
    if (!op.is_get) continue;
    const bool strided = op.name.find("strided") != std::string::npos;
    for (auto& v : op.variants) {
      const std::size_t bytes = strided ? kPatchBytes : *std::max_element(op.sizes.begin(), op.sizes.end());
      auto& dst = strided ? buf.patch : buf.contig;
      std::fill(dst.begin(), dst.end(), -1.0);
      v.op(bytes);
      v.settle();
      for (std::size_t k = 0; k < bytes / sizeof(double); ++k) {
        const std::size_t src = strided ? (kPatchRow0 + k / kPatchDim) * kBlockDim + kPatchCol0 + k % kPatchDim : k;
        if (dst[k] != block_value(src))
          throw std::runtime_error("validation failed: " + op.name + "/" + v.name + " element " + std::to_string(k));
      }
    }
  }
}

// Variant `name` of op `op_name`, or nullptr.
Variant* find_variant(Registry& reg, std::string_view op_name, const std::string& name) {
  for (auto& o : reg.ops())
    if (o.name == op_name)
      for (auto& v : o.variants)
        if (v.name == name) return &v;
  return nullptr;
}

// Runs every put/acc variant once at its largest size (contiguous) or on the patch (strided)
// and reads the target back through the same variant's get: a put must leave a distinct
// pattern, an accumulate of 1.0 must add exactly 1 to what was there; two read_inc calls
// must return consecutive values. Then every target holds block_value() again and the origin
// buffers their 1.0, as measure() expects. Run after validate_gets(). Throws on mismatch.
void validate_writes(Registry& reg, Buffers& buf) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (auto& op : reg.ops()) {
    if (op.is_get) continue;
    for (auto& v : op.variants) {
      const auto fail = [&](const std::string& what) {
        throw std::runtime_error("validation failed: " + op.name + "/" + v.name + ": " + what);
      };
      if (op.name == "read_inc") {
        v.op(8);
        v.settle();
        const std::int64_t first = buf.fetched;
        v.op(8);
        v.settle();
        if (buf.fetched != first + 1)
          fail("returned " + std::to_string(first) + ", then " + std::to_string(buf.fetched) + " (want " +
               std::to_string(first + 1) + ")");
        continue;
      }
      const bool strided = op.name.find("strided") != std::string::npos;
      Variant* get = find_variant(reg, strided ? "get_strided" : "get", v.name);
      if (get == nullptr) fail("no get of its own to read the target back");
      const std::size_t bytes = strided ? kPatchBytes : *std::max_element(op.sizes.begin(), op.sizes.end());
      const std::size_t count = bytes / sizeof(double);
      auto& src = strided ? buf.patch : buf.contig;
      const auto read_back = [&] {
        std::fill(src.begin(), src.end(), nan);
        get->op(bytes);
        get->settle();
        return std::vector<double>(src.begin(), src.begin() + static_cast<std::ptrdiff_t>(count));
      };
      const auto put_pattern = [](std::size_t k) { return -1.0 - 0.5 * static_cast<double>(k); };
      std::vector<double> want(count);
      if (op.name.rfind("put", 0) == 0) {
        for (std::size_t k = 0; k < count; ++k) src[k] = want[k] = put_pattern(k);
      } else {  // acc
        want = read_back();
        for (auto& x : want) x += 1.0;
        std::fill(src.begin(), src.end(), 1.0);
      }
      v.op(bytes);
      v.settle();
      const auto got = read_back();
      for (std::size_t k = 0; k < count; ++k)
        if (!(got[k] == want[k]))
          fail("element " + std::to_string(k) + " reads back as " + std::to_string(got[k]) + ", want " +
               std::to_string(want[k]) + (op.name.rfind("acc", 0) == 0 ? " (the old value + 1)" : ""));
      // the target's values as before, through the same variant's put
      Variant* put = find_variant(reg, strided ? "put_strided" : "put", v.name);
      if (put == nullptr) fail("no put of its own to restore the target");
      for (std::size_t k = 0; k < count; ++k)
        src[k] =
            block_value(strided ? (kPatchRow0 + k / kPatchDim) * kBlockDim + kPatchCol0 + k % kPatchDim : k);
      put->op(bytes);
      put->settle();
    }
  }
  std::fill(buf.contig.begin(), buf.contig.end(), 1.0);
  std::fill(buf.patch.begin(), buf.patch.end(), 1.0);
}

struct Cell {
  double seconds = 0;  // median per op
  bool present = false;
};

void print_header(const std::vector<std::string>& names) {
  std::printf("%-12s %9s", "op", "size");
  for (const auto& n : names) std::printf(" | %-26s", n.c_str());
  std::printf("\n%-12s %9s", "", "");
  for (std::size_t i = 0; i < names.size(); ++i) std::printf(" | %10s %8s %6s", "us", "GB/s", "x");
  std::printf("\n");
}

void print_row(const std::string& op, std::size_t bytes, const std::vector<Cell>& cells, double best_raw) {
  std::printf("%-12s %9s", op.c_str(), gb::format_bytes(bytes).c_str());
  for (const auto& c : cells) {
    if (!c.present) {
      std::printf(" | %10s %8s %6s", "-", "-", "-");
      continue;
    }
    std::printf(" | %10.3f %8.3f %6.2f", c.seconds * 1e6, static_cast<double>(bytes) / c.seconds / 1e9,
                c.seconds / best_raw);
  }
  std::printf("\n");
  std::fflush(stdout);
}

void measure(Registry& reg, const Options& opt, gb::CsvWriter& csv) {
  const auto names = reg.variant_names();
  print_header(names);
  for (auto& op : reg.ops()) {
    for (std::size_t bytes : op.sizes) {
      std::vector<Cell> cells(names.size());
      double best_raw = std::numeric_limits<double>::infinity();
      for (auto& v : op.variants) {
        const std::size_t iters = gb::calibrate_iters([&] { v.op(bytes); }, opt.min_rep_ms * 1e-3);
        v.settle();
        const auto times = gb::time_reps(opt.reps, opt.warmup, [&] {
          for (std::size_t i = 0; i < iters; ++i) v.op(bytes);
        }, v.settle);
        const double per_op = gb::median(times) / static_cast<double>(iters);
        const auto col = static_cast<std::size_t>(std::find(names.begin(), names.end(), v.name) - names.begin());
        cells[col] = {per_op, true};
        if (v.kind == Kind::raw) best_raw = std::min(best_raw, per_op);
        csv.row(op.name, bytes, v.name, per_op * 1e6, static_cast<double>(bytes) / per_op / 1e9);
      }
      print_row(op.name, bytes, cells, best_raw);
    }
    std::printf("\n");
  }
}

int run(int argc, char** argv) {
  int rank = 0;
  int nranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  Options opt;
  try {
    if (!parse_options(argc, argv, rank, opt)) return 0;
  } catch (const std::exception& e) {
    if (rank == 0) std::cerr << "bench_rma: " << e.what() << " (see --help)\n";
    return 2;
  }
  if (nranks < 2) {
    if (rank == 0) std::cerr << "bench_rma: needs at least 2 ranks (rank 0 targets rank 1)\n";
    return 2;
  }

  // Window creation reports errors instead of aborting, so that a missing window flavour
  // only drops its variants.
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);

  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_size = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  const bool one_node = node_size == nranks;

  Buffers buf;
  if (rank == 0) {
    const std::size_t max_bytes = *std::max_element(opt.sizes.begin(), opt.sizes.end());
    buf.contig.assign(max_bytes / sizeof(double), 1.0);
    buf.patch.assign(kPatchElems, 1.0);
  }

  std::vector<std::string> notes;
  int status = 0;
  {
    Registry reg(opt.sizes, opt.strided);
    auto patch_type = std::make_shared<PatchType>();

    auto win = RawWindow::create(comm, /*shared=*/false);
    if (!win) throw std::runtime_error("MPI_Win_allocate failed");
    std::vector<MPI_Win> locked{win->win()};
    register_mpi_variants(reg, "mpi_win", win, patch_type, buf);

    std::shared_ptr<RawWindow> shm;
    if (one_node) shm = RawWindow::create(comm, /*shared=*/true);
    if (shm) {
      locked.push_back(shm->win());
      register_mpi_variants(reg, "mpi_shm", shm, patch_type, buf);
      register_shm_direct_variants(reg, "shm_direct", shm, buf);
    } else {
      notes.emplace_back(one_node ? "MPI_Win_allocate_shared failed (osc component without shared windows?): "
                                    "mpi_shm/shm_direct skipped"
                                  : "ranks span several nodes: mpi_shm/shm_direct skipped");
    }

    register_garray_variants(reg, buf, notes);
#if defined(GARRAY_BENCH_HAVE_GA)
    register_ga_variants(reg, buf, notes);
#endif

    MPI_Barrier(comm);  // all windows exist and rank 1's block is initialised
    if (rank == 0) {
      gb::print_run_info(std::cout, "bench_rma: rank 0 -> rank 1", nranks);
      std::cout << "# reps " << opt.reps << ", warmup " << opt.warmup << ", min rep " << opt.min_rep_ms
                << " ms; us = median per op, GB/s = 1e9 B/s, x = time / best raw variant of the row\n";
      for (const auto& n : notes) std::cout << "# note: " << n << '\n';
      std::cout << std::endl;
      try {
        gb::CsvWriter csv(opt.csv, "op,size_bytes,variant,median_us,gbps");
        for (MPI_Win w : locked) MPI_Win_lock_all(MPI_MODE_NOCHECK, w);
        validate_gets(reg, buf);
        validate_writes(reg, buf);
        measure(reg, opt, csv);
        for (MPI_Win w : locked) MPI_Win_unlock_all(w);
      } catch (const std::exception& e) {
        std::cerr << "bench_rma: FAIL " << e.what() << " [rank 0]\n";
        status = 1;
        for (MPI_Win w : locked) MPI_Win_unlock_all(w);
      }
    }
    MPI_Barrier(comm);  // rank 1 waits here (and drives MPI progress) while rank 0 measures
    MPI_Bcast(&status, 1, MPI_INT, 0, comm);  // rank 0's outcome is every rank's exit code
  }  // windows freed collectively
  MPI_Comm_free(&comm);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
#if defined(GARRAY_BENCH_HAVE_GA)
  GA_Initialize();
#endif
  int status = 0;
  try {
    status = run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "bench_rma: fatal: " << e.what() << '\n';
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
#if defined(GARRAY_BENCH_HAVE_GA)
  GA_Terminate();
#endif
  MPI_Finalize();
  return status;
}
