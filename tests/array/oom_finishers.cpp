// A std::bad_alloc while a nonblocking transfer hands its temporaries to the Request must
// free none that MPI still uses (semantics.md "Errors": no temporary and no user buffer is
// released while MPI may still read or write it). Its own binary (tests/CMakeLists.txt,
// test_oom_finishers): it replaces the global operator new/delete and wraps MPI's RMA calls
// through the profiling interface (PMPI).
//
// RmaTransport::finish(req) hands a nonblocking transfer's temporaries (a get's landing
// buffer and its unpack step, a put's packed copy) to the Request as finishers. If appending
// one throws std::bad_alloc, the temporary must stay owned by the transport until abandon()
// (the caller's catch) has completed the MPI operations that use it; a temporary moved into
// a by-value parameter that dies with the failed append would be freed while MPI still
// writes into it (a get) or reads from it (a put).
//
// How the test sees it, deterministically: operator new throws std::bad_alloc at the k-th
// allocation after arming (k = 0, 1, 2, ... until the call goes through: every allocation of
// get_nb/put_nb is hit once); operator delete records a freed block of the temporary's exact
// size (and quarantines it, never really freed: the process stays sane) together with
// whether an RMA operation issued on it was not yet completed at that moment (PMPI wrappers of
// MPI_Get/Rget/Put/Rput record their origin buffers; MPI_Win_flush*/MPI_Waitall/MPI_Wait clear
// them).
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <new>

#include "support/test_support.hpp"

namespace oom {
// All plain ints: touched from operator new/delete, which must not allocate.
long countdown = -1;          // >= 0: that many more allocations succeed, then one throws
bool fired = false;           // the armed allocation threw
std::size_t watch_bytes = 0;  // the temporary's size (distinctive): watched while nonzero
constexpr int max_watched = 256;
void* watched[max_watched];  // blocks of watch_bytes from operator new[] while watching
int nwatched = 0;
int in_flight = 0;            // RMA operations issued since the last completion call
constexpr int max_origins = 64;
const void* origins[max_origins];  // their origin buffers (a temporary: its start)
int norigins = 0;
bool ever_in_flight = false;  // some armed attempt got as far as issuing an operation
int freed_in_flight = 0;      // watched blocks freed while an operation on them is in flight
int quarantined = 0;

void* allocate(std::size_t n, bool array) {
  if (countdown >= 0 && countdown-- == 0) {
    fired = true;
    throw std::bad_alloc();
  }
  void* p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  if (array && watch_bytes && n == watch_bytes && nwatched < max_watched) watched[nwatched++] = p;
  return p;
}
void release(void* p) noexcept {
  if (!p) return;
  for (int i = 0; i < nwatched; ++i)
    if (watched[i] == p) {
      watched[i] = watched[--nwatched];
      for (int k = 0; k < norigins; ++k)
        if (origins[k] == p) ++freed_in_flight;
      ++quarantined;  // never freed: MPI may still write there (the defect this tests)
      return;
    }
  std::free(p);
}
void arm(long k) {
  fired = false;
  countdown = k;
}
void disarm() { countdown = -1; }
}  // namespace oom

void* operator new(std::size_t n) { return oom::allocate(n, false); }
void* operator new[](std::size_t n) { return oom::allocate(n, true); }
void operator delete(void* p) noexcept { oom::release(p); }
void operator delete[](void* p) noexcept { oom::release(p); }
void operator delete(void* p, std::size_t) noexcept { oom::release(p); }
void operator delete[](void* p, std::size_t) noexcept { oom::release(p); }

// The profiling interface: issue and completion of RMA operations (the garray libraries are
// linked statically into this binary; a shared libgarray resolves to these definitions too).
extern "C" {
int MPI_Get(void* o, int oc, MPI_Datatype ot, int r, MPI_Aint d, int tc, MPI_Datatype tt, MPI_Win w) {
  const int rc = PMPI_Get(o, oc, ot, r, d, tc, tt, w);
  if (oom::norigins < oom::max_origins) oom::origins[oom::norigins++] = o;
  ++oom::in_flight;
  if (oom::countdown >= 0) oom::ever_in_flight = true;
  return rc;
}
int MPI_Rget(void* o, int oc, MPI_Datatype ot, int r, MPI_Aint d, int tc, MPI_Datatype tt, MPI_Win w,
             MPI_Request* q) {
  const int rc = PMPI_Rget(o, oc, ot, r, d, tc, tt, w, q);
  if (oom::norigins < oom::max_origins) oom::origins[oom::norigins++] = o;
  ++oom::in_flight;
  if (oom::countdown >= 0) oom::ever_in_flight = true;
  return rc;
}
int MPI_Put(const void* o, int oc, MPI_Datatype ot, int r, MPI_Aint d, int tc, MPI_Datatype tt, MPI_Win w) {
  const int rc = PMPI_Put(o, oc, ot, r, d, tc, tt, w);
  if (oom::norigins < oom::max_origins) oom::origins[oom::norigins++] = o;
  ++oom::in_flight;
  if (oom::countdown >= 0) oom::ever_in_flight = true;
  return rc;
}
int MPI_Rput(const void* o, int oc, MPI_Datatype ot, int r, MPI_Aint d, int tc, MPI_Datatype tt, MPI_Win w,
             MPI_Request* q) {
  const int rc = PMPI_Rput(o, oc, ot, r, d, tc, tt, w, q);
  if (oom::norigins < oom::max_origins) oom::origins[oom::norigins++] = o;
  ++oom::in_flight;
  if (oom::countdown >= 0) oom::ever_in_flight = true;
  return rc;
}
int MPI_Win_flush(int r, MPI_Win w) {
  const int rc = PMPI_Win_flush(r, w);
  if (rc == MPI_SUCCESS) oom::in_flight = oom::norigins = 0;
  return rc;
}
int MPI_Win_flush_all(MPI_Win w) {
  const int rc = PMPI_Win_flush_all(w);
  if (rc == MPI_SUCCESS) oom::in_flight = oom::norigins = 0;
  return rc;
}
int MPI_Win_flush_local(int r, MPI_Win w) {
  const int rc = PMPI_Win_flush_local(r, w);
  if (rc == MPI_SUCCESS) oom::in_flight = oom::norigins = 0;  // one target per transfer below
  return rc;
}
int MPI_Win_flush_local_all(MPI_Win w) {
  const int rc = PMPI_Win_flush_local_all(w);
  if (rc == MPI_SUCCESS) oom::in_flight = oom::norigins = 0;
  return rc;
}
int MPI_Waitall(int n, MPI_Request rs[], MPI_Status* ss) {
  const int rc = PMPI_Waitall(n, rs, ss);
  if (rc == MPI_SUCCESS) oom::in_flight = oom::norigins = 0;
  return rc;
}
int MPI_Wait(MPI_Request* q, MPI_Status* s) {
  const int rc = PMPI_Wait(q, s);
  if (rc == MPI_SUCCESS) oom::in_flight = oom::norigins = 0;
  return rc;
}
}

using garray::idx;
using garray::range;

TEST_CASE(
    "a bad_alloc while a nonblocking transfer hands its temporaries to the Request frees none in flight") {
  garray::Context ctx;
  const int p = ctx.size(), me = ctx.rank();
  const garray::Index per = 1237;  // 9896-byte temporaries: a size nothing else allocates here
  garray::GlobalArray<std::int64_t, 1> a(ctx, {per * p});
  if (a.window_kind() == garray::WindowKind::shared || p < 2) {
    MESSAGE("needs MPI RMA to a remote block: GARRAY_WINDOW=rma (or mixed across nodes) and two ranks");
    return;
  }
  {
    auto blk = a.access();
    for (garray::Index i = blk.lo(0); i < blk.hi(0); ++i) blk.view()[i] = 3 * i;
  }
  a.sync();
  // The right neighbour's block, reversed: one remote piece through a temporary.
  // Rank 0 at np >= 3: ranks 1 and 2's blocks, reversed (two pieces: the failure can come
  // after the first piece's temporary was handed to the request, whose unpack must then not
  // run into the buffer). The others: the right neighbour's block.
  const bool two = me == 0 && p >= 3;
  const int nb = (me + 1) % p;
  const garray::Index len = two ? 2 * per : per;
  const garray::Section<1> sec{{nb * per + len - 1}, {-1}, {len}};
  std::vector<std::int64_t> buf(static_cast<std::size_t>(len), -1);
  const std::vector<std::int64_t> vals(static_cast<std::size_t>(len), 7);
  for (const bool is_put : {false, true}) {
    CAPTURE(is_put);
    // Warm up once unarmed: the fault hook's list of seen points and the array's block cache
    // allocate on first use; nothing on the measured path allocates for the first time below.
    if (is_put)
      a.put_section_nb(sec, std::span<const std::int64_t>(vals)).wait();
    else
      a.get_section_nb(sec, std::span<std::int64_t>(buf)).wait();
    a.fence();
    int throws = 0;
    bool finished = false;
    oom::freed_in_flight = 0;
    oom::ever_in_flight = false;
    oom::watch_bytes = static_cast<std::size_t>(per) * sizeof(std::int64_t);
    bool untouched = true;  // a get_nb that threw wrote nothing into the caller's buffer
    for (long k = 0; k < 200 && !finished; ++k) {
      oom::in_flight = oom::norigins = 0;
      if (!is_put) std::fill(buf.begin(), buf.end(), -1);
      oom::arm(k);
      try {
        // (a Request that the throw leaves behind is completed by its destructor on the way out)
        auto r = is_put ? a.put_section_nb(sec, std::span<const std::int64_t>(vals))
                        : a.get_section_nb(sec, std::span<std::int64_t>(buf));
        oom::disarm();
        r.wait();
        finished = !oom::fired;
      } catch (const std::bad_alloc&) {
        oom::disarm();
        ++throws;
        if (!is_put)
          untouched =
              untouched && std::all_of(buf.begin(), buf.end(), [](std::int64_t x) { return x == -1; });
      }
    }
    oom::disarm();
    oom::watch_bytes = 0;
    CHECK(finished);
    CHECK(throws > 0);
    CHECK(oom::ever_in_flight);        // some attempt issued its MPI operation before failing
    CHECK(oom::freed_in_flight == 0);  // no temporary freed while MPI used it
    CHECK(untouched);  // semantics.md "Errors": nothing lands in a get's buffer after the throw
    a.sync();
  }
  // The array works on (no heap damage: the freed temporaries were quarantined).
  std::vector<std::int64_t> all(static_cast<std::size_t>(per * p));
  a.get(idx[range(0, per * p)], std::span<std::int64_t>(all));
  a.sync();
}
