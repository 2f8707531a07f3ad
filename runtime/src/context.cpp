#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <garray/runtime/context.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/fault.hpp>
#include <garray/runtime/progress.hpp>
#include <garray/runtime/window.hpp>
#include <garray/runtime/window_cache.hpp>
#include <istream>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <ostream>
#include <sstream>
#include <utility>
#include <vector>

#include "env_values.hpp"
#include "progress_thread.hpp"

namespace garray {
namespace detail {

/// garray initialised MPI and finalises it later: at exit (std::atexit) when the last holder
/// went while an exception unwound.
void finalize_at_exit() noexcept {
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) MPI_Finalize();
}

/// Finalises MPI when the last holder goes away, if (and only if) garray initialised it.
/// Not while an exception unwinds (a Context whose creation failed, a rank leaving its last
/// Context's scope by an exception): MPI_Finalize is collective, so that rank would wait in
/// it for every other rank, and the program could not make another Context (a retry, or a
/// report through garray). MPI then stays initialised and is finalised at exit.
struct MpiLifetime {
  MpiLifetime() {
    // GARRAY_PROGRESS=thread needs MPI_THREAD_MULTIPLE. A bad value is not reported here
    // but by the Context's agreement below, on every rank, once MPI exists.
    int provided = 0;
    check_mpi(MPI_Init_thread(nullptr, nullptr, required_thread_level(), &provided), "MPI_Init_thread");
  }
  ~MpiLifetime() {
    int fin = 0;
    MPI_Finalized(&fin);
    if (fin) return;
    if (std::uncaught_exceptions() > uncaught_at_creation)
      std::atexit(finalize_at_exit);  // if it cannot be registered, MPI is left to the exit
    else
      MPI_Finalize();
  }
  int uncaught_at_creation = std::uncaught_exceptions();
  MpiLifetime(const MpiLifetime&) = delete;
  MpiLifetime& operator=(const MpiLifetime&) = delete;
};

// ---- the teardown agreement -------------------------------------------------------------
// A Context's destruction frees its cached windows (MPI_Win_free, collective). A rank that
// destroys it while an exception unwinds its stack must not block, so it frees nothing; the
// other ranks must then not free theirs either, or they would wait in MPI_Win_free for it
// forever. Every rank therefore starts an MPI_Iallreduce of "am I unwinding?" over the
// context. A rank with windows to free waits for the answer and frees them only if nobody
// unwinds. The others (unwinding, or holding nothing) do not wait: their request is parked
// here and completed by their later MPI calls, at the latest when MPI_Finalize starts (an
// attribute-delete callback on MPI_COMM_SELF). Its buffers and its communicator live with
// it: the communicator is freed once the request completed (Open MPI 4.1's libnbc crashes
// progressing a request whose communicator was freed, which the standard allows).
struct ParkedAgreement {
  int in = 0, out = 0;
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Comm comm = MPI_COMM_NULL;
};

std::mutex parked_mutex;
std::vector<std::unique_ptr<ParkedAgreement>>& parked() {
  static auto* v = new std::vector<std::unique_ptr<ParkedAgreement>>;  // never destroyed: used at finalize
  return *v;
}
int parked_keyval = MPI_KEYVAL_INVALID;

// Completes the parked requests: all of them (wait), or those already complete.
void complete_parked(bool wait) noexcept {
  auto& v = parked();
  std::erase_if(v, [&](std::unique_ptr<ParkedAgreement>& p) {
    int done = 0;
    if (wait)
      done = MPI_Wait(&p->req, MPI_STATUS_IGNORE) == MPI_SUCCESS;
    else
      MPI_Test(&p->req, &done, MPI_STATUS_IGNORE);
    if (done == 0 && p->req != MPI_REQUEST_NULL) return false;
    if (p->comm != MPI_COMM_NULL) MPI_Comm_free(&p->comm);
    return true;
  });
}

// At the start of MPI_Finalize: the parked agreements complete, then the windows of
// contexts torn down while some rank unwound are freed (every rank defers the same ones).
int finish_at_finalize(MPI_Comm, int, void*, void*) {
  {
    std::lock_guard lock(parked_mutex);
    complete_parked(true);
  }
  free_deferred_windows();
  return MPI_SUCCESS;
}

// Registers finish_at_finalize once. Call with parked_mutex held.
void hook_finalize() noexcept {
  if (parked_keyval == MPI_KEYVAL_INVALID &&
      MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finish_at_finalize, &parked_keyval, nullptr) == MPI_SUCCESS)
    MPI_Comm_set_attr(MPI_COMM_SELF, parked_keyval, nullptr);
}

void park(std::unique_ptr<ParkedAgreement> p) noexcept {
  std::lock_guard lock(parked_mutex);
  complete_parked(false);
  hook_finalize();
  try {
    parked().reserve(parked().size() + 1);
    parked().push_back(std::move(p));
  } catch (...) {
    (void)p.release();  // out of memory: its buffers must outlive the request
  }
}

// (context.hpp) At a context's destruction, `must_know` is "this rank holds windows".
bool agree_teardown(MPI_Comm& comm, bool unwinding, bool must_know) noexcept {
  std::unique_ptr<ParkedAgreement> p(new (std::nothrow) ParkedAgreement);
  if (!p) return false;
  p->in = unwinding ? 1 : 0;
  if (MPI_Iallreduce(&p->in, &p->out, 1, MPI_INT, MPI_MAX, comm, &p->req) != MPI_SUCCESS) return false;
  if (unwinding || !must_know) {
    p->comm = std::exchange(comm, MPI_COMM_NULL);
    park(std::move(p));
    return !unwinding;
  }
  return MPI_Wait(&p->req, MPI_STATUS_IGNORE) == MPI_SUCCESS && p->out == 0;
}

struct ContextState {
  std::shared_ptr<MpiLifetime> lifetime;  // null when the user owns MPI
  // GARRAY_PROGRESS=thread: the process's progress thread (declared after `lifetime`, so it
  // is stopped before garray finalises MPI); null otherwise.
  std::shared_ptr<ProgressThread> progress_thread;
  ProgressMode progress = ProgressMode::none;
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm node = MPI_COMM_NULL;  // this rank's node within comm
  RankOrder order = RankOrder::given;
  bool renumbered = false;
  int rank = 0;
  int size = 1;
  WindowKind kind = WindowKind::rma;
  Stats stats;
  std::uint64_t next_array_id = 1;
  std::unique_ptr<WindowCache> cache;  // holds windows, not the state: no ownership cycle
  int uncaught_at_creation = std::uncaught_exceptions();
  int serial = 0;  // identical on the context's ranks (choose_kind)

  ~ContextState() {
    int fin = 0;
    MPI_Finalized(&fin);
    // Some rank unwinding (it must not block in MPI_Win_free): nobody frees now; every rank
    // defers the same windows to MPI_Finalize.
    if (!fin && cache && !agree_teardown(comm, std::uncaught_exceptions() > uncaught_at_creation,
                                        cache->windows_held() > 0)) {
      {
        std::lock_guard lock(parked_mutex);
        hook_finalize();
      }
      cache->defer_all(static_cast<std::uint64_t>(serial));
    }
    cache.reset();  // frees cached windows (collective, like the MPI_Comm_free below)
    if (!fin && node != MPI_COMM_NULL) MPI_Comm_free(&node);
    if (!fin && comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    // `lifetime` is released after the communicator is freed (member order).
  }
};

namespace {

std::shared_ptr<MpiLifetime> acquire_mpi() {
  static std::mutex m;
  static std::weak_ptr<MpiLifetime> ours;
  std::lock_guard lock(m);
  if (auto p = ours.lock()) return p;
  int fin = 0;
  MPI_Finalized(&fin);
  if (fin)
    raise<InvalidArgument>(
        "garray::Context: MPI is already finalized (MPI cannot be initialised again). garray "
        "finalises MPI it initialised when the last Context and array are gone: keep one "
        "Context alive for the whole run, or call MPI_Init_thread and MPI_Finalize yourself");
  int init = 0;
  MPI_Initialized(&init);
  if (init) return nullptr;  // the program owns MPI, or garray's MPI waits for the exit
  auto p = std::make_shared<MpiLifetime>();
  ours = p;
  return p;
}

// GARRAY_NODE_RANKS (testing: several "nodes" on one machine): k > 0 makes every k
// consecutive ranks a node; with `k,cyclic` rank r goes to node r % ceil(size / k) (a
// round-robin launcher). k == 0: unset, the real nodes (MPI_COMM_TYPE_SHARED).
struct NodeOverride {
  int k = 0;
  bool cyclic = false;
};

// Parses one rank's GARRAY_NODE_RANKS and GARRAY_RANK_ORDER (the latter only if `order` is
// not given by the caller) and agrees on both with one allreduce, so a bad or differing
// value throws the same InvalidArgument on every rank.
NodeOverride agree_placement(MPI_Comm comm, std::optional<RankOrder>& order) {
  NodeOverride o;
  int node_code = 0;  // -1 invalid, else 2 * k + cyclic
  const char* env = std::getenv("GARRAY_NODE_RANKS");
  if (env && *env) {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    const std::string_view rest(end);
    const bool cyclic = rest == ",cyclic";
    if (end != env && (rest.empty() || cyclic) && v >= 1 && v <= 1 << 20)
      node_code = static_cast<int>(v) * 2 + (cyclic ? 1 : 0);
    else
      node_code = -1;
  }
  int order_code = 0;  // -1 invalid, 0 given, 1 node
  const char* order_env = std::getenv("GARRAY_RANK_ORDER");
  if (order) {
    order_code = *order == RankOrder::node ? 1 : 0;
  } else if (order_env && *order_env) {
    const auto parsed = parse_rank_order(order_env);
    order_code = !parsed ? -1 : *parsed == RankOrder::node ? 1 : 0;
  }
  int in[4] = {node_code, -node_code, order_code, -order_code}, out[4] = {};
  check_mpi(MPI_Allreduce(in, out, 4, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
  // (every rank takes the same branches below: the lists of values are collective)
  if (out[0] != -out[1] || -out[1] < 0)
    raise<InvalidArgument>(
        "Context: GARRAY_NODE_RANKS must be the same on every rank: a positive integer k, "
        "optionally followed by ',cyclic' (",
        values_by_rank(comm, env ? env : "(unset)"), ")");
  if (out[2] != -out[3] || -out[3] < 0) {
    if (order)
      raise<InvalidArgument>("Context: the ranks passed different rank orders (",
                             values_by_rank(comm, std::string(to_string(*order))), ")");
    raise<InvalidArgument>("Context: GARRAY_RANK_ORDER must be the same on every rank, 'given' or 'node' (",
                           values_by_rank(comm, order_env ? order_env : "(unset)"), ")");
  }
  order = order_code == 1 ? RankOrder::node : RankOrder::given;
  o.k = node_code / 2;
  o.cyclic = node_code % 2 == 1;
  return o;
}

// This rank's node as the lowest rank of comm on it (equal on the node's ranks, and nodes
// sort by it). `shm` receives the node communicator it split off.
int node_leader(MPI_Comm comm, int rank, const NodeOverride& o, MPI_Comm* shm) {
  *shm = MPI_COMM_NULL;
  if (o.k > 0) {
    // Simulated nodes are fixed by the MPI_COMM_WORLD rank, as real ones are by the host:
    // a sub-context sees the same nodes as the world (its ranks 0 and 1 may sit on two).
    int w = 0, wsize = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &w);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    const int nodes = (wsize + o.k - 1) / o.k;
    check_mpi(MPI_Comm_split(comm, o.cyclic ? w % nodes : w / o.k, rank, shm), "MPI_Comm_split");
  } else {
    check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, shm),
              "MPI_Comm_split_type");
  }
  MPI_Comm_set_errhandler(*shm, MPI_ERRORS_RETURN);
  int leader = rank;
  check_mpi(MPI_Allreduce(&rank, &leader, 1, MPI_INT, MPI_MIN, *shm), "MPI_Allreduce");
  return leader;
}

// Whether the one-sided component can make mixed windows here: an 8-byte shared allocation
// per node, exposed over comm by MPI_Win_create in the unified memory model. A probe that
// failed on some ranks leaks what the others created (a collective free could hang).
bool mixed_windows_work(MPI_Comm comm, MPI_Comm node) {
  MPI_Win shm = MPI_WIN_NULL, win = MPI_WIN_NULL;
  void* base = nullptr;
  const bool shm_ok = MPI_Win_allocate_shared(64, 1, MPI_INFO_NULL, node, &base, &shm) == MPI_SUCCESS;
  // Where every rank of my node holds the probe's shared window, the node frees it together
  // (a rank without it could not join that free; then the node's others leak their 64 bytes).
  const bool node_holds_shm = all_ok(node, shm_ok);
  const auto free_shm = [&] {
    if (node_holds_shm) MPI_Win_free(&shm);
  };
  if (!all_ok(comm, shm_ok)) {
    free_shm();
    return false;
  }
  const bool ok = MPI_Win_create(base, 64, 1, MPI_INFO_NULL, comm, &win) == MPI_SUCCESS && unified_model(win);
  const bool created = win != MPI_WIN_NULL;
  if (!all_ok(comm, created)) {  // some rank has no created window: the others leak theirs
    free_shm();
    return false;
  }
  MPI_Win_free(&win);
  MPI_Win_free(&shm);
  return all_ok(comm, ok);
}

// Context serials: one per context, identical on its ranks and different for any two
// contexts that share a rank (so arrays of two congruent contexts never share an id). Each
// process counts the contexts it joined; a new context takes the largest count among its
// ranks (agreed in choose_kind's allreduce) and every member continues after it.
std::atomic<int> next_context_serial{0};

WindowKind choose_kind(MPI_Comm comm, MPI_Comm node, int size, int* serial) {
  const char* env = std::getenv("GARRAY_WINDOW");
  const std::string_view want = env && *env ? env : "auto";
  int node_size = 0;
  MPI_Comm_size(node, &node_size);
  const bool one_node = node_size == size;
  // 2 shared, 1 mixed, 0 rma; 3 auto across nodes (mixed if some node holds 2+ ranks); -1 no kind
  int code = -1;
  if (want == "rma")
    code = 0;
  else if (want == "mixed")
    code = 1;  // also on one node (tests: atomics by MPI, node-local data by load/store)
  else if (want == "shared")
    code = 2;  // across nodes it becomes rma below; the request is what the ranks compare
  else if (want == "auto")
    code = one_node ? 2 : 3;
  // Every rank must choose the same kind: one allreduce agrees on the request (a bad or
  // differing GARRAY_WINDOW throws on every rank) and finds the biggest node.
  int in[4] = {code, -code, node_size, next_context_serial.load()}, out[4] = {};
  check_mpi(MPI_Allreduce(in, out, 4, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
  *serial = out[3];
  next_context_serial = out[3] + 1;
  if (-out[1] < 0 || out[0] != -out[1]) {
    const std::string values = values_by_rank(comm, std::string(want));  // collective: every rank is here
    if (-out[1] < 0)
      raise<InvalidArgument>("Context: GARRAY_WINDOW must be auto, shared, mixed or rma on every rank (",
                             values, ")");
    raise<InvalidArgument>("Context: GARRAY_WINDOW must ask for the same window kind on every rank (", values,
                           "; auto means shared on one node)");
  }
  // shared memory cannot span nodes: `shared` there is rma (documented); one_node is the
  // same on every rank (every rank's node is the whole communicator, or none is)
  const int agreed = code == 3 ? (out[2] > 1 ? 1 : 0) : code == 2 && !one_node ? 0 : code;
  if (agreed == 2) {
    // The one-sided component may not support shared windows (Open MPI with `--mca osc
    // pt2pt`, or osc/ucx, fails MPI_Win_allocate_shared): probe once, fall back to
    // MPI_Win_allocate windows if it fails anywhere.
    MPI_Win probe = MPI_WIN_NULL;
    void* base = nullptr;
    // Agreed before the free: a rank whose allocation failed has no window, and a collective
    // MPI_Win_free without it could hang; then the others leak their 8 bytes.
    bool ok = MPI_Win_allocate_shared(8, 1, MPI_INFO_NULL, comm, &base, &probe) == MPI_SUCCESS;
    if (ok) {
      try {
        detail::fault_point("context.shared_probe");  // as if this rank's allocation had failed
      } catch (...) {
        ok = false;  // its window is abandoned, like the others' below
      }
    }
    if (!all_ok(comm, ok)) return WindowKind::rma;
    MPI_Win_free(&probe);
    return WindowKind::shared;
  }
  if (agreed == 1) return mixed_windows_work(comm, node) ? WindowKind::mixed : WindowKind::rma;
  return WindowKind::rma;
}

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    default: return "MPI_THREAD_MULTIPLE";
  }
}

// Every rank must run with the same progress mode, and GARRAY_PROGRESS=thread needs
// MPI_THREAD_MULTIPLE: decided together (one allgather), so a rank whose environment or
// thread level differs makes every rank throw the same InvalidArgument, never a hang.
ProgressMode choose_progress(MPI_Comm comm, int rank, int size) {
  // code: 0 none, 1 thread, 2 thread without MPI_THREAD_MULTIPLE, 3 invalid value
  int code = 0, provided = MPI_THREAD_SINGLE, interval = 0;
  std::exception_ptr local_error;  // this rank's own InvalidArgument, rethrown as it is
  try {
    code = requested_progress() == ProgressMode::thread ? 1 : 0;
    if (code == 1) {
      interval = static_cast<int>(progress_interval().count());  // validates GARRAY_PROGRESS_INTERVAL
      check_mpi(MPI_Query_thread(&provided), "MPI_Query_thread");
      if (provided < MPI_THREAD_MULTIPLE) code = 2;
    }
  } catch (const Error&) {
    code = 3;
    local_error = std::current_exception();
  }
  const int mine[2] = {code, interval};
  std::vector<int> both(2 * static_cast<std::size_t>(size));
  check_mpi(MPI_Allgather(mine, 2, MPI_INT, both.data(), 2, MPI_INT, comm), "MPI_Allgather");
  std::vector<int> codes(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) codes[static_cast<std::size_t>(r)] = both[2 * static_cast<std::size_t>(r)];
  for (int r = 0; r < size; ++r) {
    const int c = codes[static_cast<std::size_t>(r)];
    if (c == 3) {
      if (r == rank) std::rethrow_exception(local_error);
      raise<InvalidArgument>("Context: an invalid GARRAY_PROGRESS or GARRAY_PROGRESS_INTERVAL on rank ", r);
    }
    if (c == 2)
      raise<InvalidArgument>("Context: GARRAY_PROGRESS=thread needs MPI_THREAD_MULTIPLE, but rank ", r,
                             " runs with ", r == rank ? thread_level_name(provided) : "a lower level",
                             ": if the program initialises MPI, call MPI_Init_thread(&argc, &argv, "
                             "garray::required_thread_level(), &provided); if garray did (it asks for "
                             "MPI_THREAD_MULTIPLE), this MPI library does not provide it");
  }
  for (int r = 0; r < size; ++r)
    if ((codes[static_cast<std::size_t>(r)] != 0) != (codes[0] != 0))
      raise<InvalidArgument>("Context: GARRAY_PROGRESS differs across ranks (rank 0: '",
                             codes[0] ? "thread" : "none", "', rank ", r, ": '",
                             codes[static_cast<std::size_t>(r)] ? "thread" : "none",
                             "'); set it alike on every rank (mpiexec -x / -genv)");
  for (int r = 0; codes[0] != 0 && r < size; ++r)
    if (both[2 * static_cast<std::size_t>(r) + 1] != both[1])
      raise<InvalidArgument>("Context: GARRAY_PROGRESS_INTERVAL differs across ranks (rank 0: ", both[1],
                             " us, rank ", r, ": ", both[2 * static_cast<std::size_t>(r) + 1],
                             " us); set it alike on every rank (mpiexec -x / -genv)");
  return codes[0] ? ProgressMode::thread : ProgressMode::none;
}

}  // namespace

bool all_ok(MPI_Comm comm, bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  check_mpi(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  return all != 0;
}

Agreement agree_with_errors(MPI_Comm comm, std::uint64_t signature, LocalFault fault) {
  // Every handshake is this three-word allreduce: two different collectives meeting (a
  // mismatch) still call MPI_Allreduce with equal counts, which MPI requires.
  int me = 0;
  MPI_Comm_rank(comm, &me);
  // max(s), max(~s) = ~min(s) and max(~f) = ~min(f) in one allreduce, f = 4 * rank + kind
  // for a faulty rank: the lowest faulty rank and what went wrong there.
  constexpr std::uint64_t none = ~std::uint64_t{0} >> 1;
  const std::uint64_t f = fault == LocalFault::none
                              ? none
                              : static_cast<std::uint64_t>(me) * 4 + static_cast<std::uint64_t>(fault);
  std::uint64_t in[3] = {signature, ~signature, ~f}, out[3] = {0, 0, 0};
  check_mpi(MPI_Allreduce(in, out, 3, MPI_UINT64_T, MPI_MAX, comm), "MPI_Allreduce");
  Agreement a;
  a.signatures_equal = out[0] == ~out[1];
  const std::uint64_t first = ~out[2];
  if (first != none) {
    a.failed_rank = static_cast<int>(first / 4);
    a.fault = static_cast<LocalFault>(first % 4);
  }
  return a;
}

namespace {
// The failing rank's message, broadcast to every rank (error paths only).
std::string broadcast_message(MPI_Comm comm, int from, const std::exception_ptr& err) {
  int me = 0;
  MPI_Comm_rank(comm, &me);
  std::string text;
  if (me == from && err) {
    try {
      std::rethrow_exception(err);
    } catch (const std::exception& e) {
      text = e.what();
    } catch (...) {
      text = "an exception not derived from std::exception";
    }
  }
  int len = static_cast<int>(text.size());
  check_mpi(MPI_Bcast(&len, 1, MPI_INT, from, comm), "MPI_Bcast");
  text.resize(static_cast<std::size_t>(len));
  check_mpi(MPI_Bcast(text.data(), len, MPI_CHAR, from, comm), "MPI_Bcast");
  return text;
}
}  // namespace

std::string peer_message(MPI_Comm comm, int failed_rank, const std::exception_ptr& err) {
  return broadcast_message(comm, failed_rank, err);
}

void throw_peer_error(MPI_Comm comm, int failed_rank, std::exception_ptr err, std::string_view what) {
  const std::string text = broadcast_message(comm, failed_rank, err);
  if (err) std::rethrow_exception(err);
  throw CollectiveMismatch(
      message(what, ": invalid call on rank ", failed_rank, " of the context (", text, ")"));
}

void throw_peer_failure(MPI_Comm comm, int failed_rank, std::exception_ptr err, std::string_view what) {
  const std::string text = broadcast_message(comm, failed_rank, err);
  if (err) std::rethrow_exception(err);
  throw CollectiveFailure(message(what, ": failed on rank ", failed_rank, " of the context (", text, ")"),
                          failed_rank);
}

void throw_if_disagreed(MPI_Comm comm, const Agreement& a, std::exception_ptr err, std::string_view what,
                        std::string_view describe_local) {
  if (a.failed_rank >= 0) {
    if (a.fault == LocalFault::failed) throw_peer_failure(comm, a.failed_rank, err, what);
    throw_peer_error(comm, a.failed_rank, err, what);
  }
  if (!a.signatures_equal) throw_signature_mismatch(what, describe_local);
}

void throw_signature_mismatch(std::string_view what, std::string_view describe_local) {
  throw CollectiveMismatch(message(
      what, ": ranks called different collectives or passed different arguments (this rank: ", describe_local,
      ")"));
}

void agree_signature(MPI_Comm comm, std::uint64_t signature, std::string_view what,
                     std::string_view describe_local) {
  // A rank that met this handshake from a call it found invalid (a stale view, a bad
  // argument) broadcasts its message: take part, and throw with it.
  throw_if_disagreed(comm, agree_with_errors(comm, signature, LocalFault::none), nullptr, what, describe_local);
}

void conclude(MPI_Comm comm, std::exception_ptr err, std::string_view what) {
  int me = 0, size = 0;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &size);
  int mine = err ? me : size, first = size;
  check_mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  if (first == size) return;
  throw_peer_failure(comm, first, err, what);  // error path only
}

std::uint64_t hash_string(std::string_view s) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

}  // namespace detail

Context::Context(MPI_Comm comm) : Context(comm, std::nullopt) {}

Context::Context(MPI_Comm comm, RankOrder order) : Context(comm, std::optional<RankOrder>(order)) {}

Context::Context(MPI_Comm comm, std::optional<RankOrder> order) {
  auto life = detail::acquire_mpi();
  auto s = std::make_shared<detail::ContextState>();
  s->lifetime = std::move(life);
  // Checked before MPI sees the handle: MPI would report a bad one through the error
  // handler of MPI_COMM_WORLD (by default: abort the job), not as an exception.
  if (comm == MPI_COMM_NULL)
    detail::raise<InvalidArgument>(
        "Context: the communicator is MPI_COMM_NULL (a rank outside the group it came from?)");
  int inter = 0;
  detail::check_mpi(MPI_Comm_test_inter(comm, &inter), "MPI_Comm_test_inter");
  if (inter)
    detail::raise<InvalidArgument>(
        "Context: an intercommunicator was passed (garray needs an intracommunicator)");
  detail::check_mpi(MPI_Comm_dup(comm, &s->comm), "MPI_Comm_dup");
  detail::check_mpi(MPI_Comm_set_errhandler(s->comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  {
    // The finalize hook (deferred windows) is registered before anything of this context can
    // register one of its own (io's deferred file closes): MPI runs MPI_COMM_SELF's delete
    // callbacks newest first, so every rank closes deferred files before it frees deferred
    // windows. Registered lazily, a rank that deferred a file first would free windows first
    // while another closed files: two collectives in different orders, a hang at finalize.
    std::lock_guard lock(detail::parked_mutex);
    detail::hook_finalize();
  }
  MPI_Comm_rank(s->comm, &s->rank);
  MPI_Comm_size(s->comm, &s->size);
  s->progress = detail::choose_progress(s->comm, s->rank, s->size);
  const detail::NodeOverride over = detail::agree_placement(s->comm, order);
  s->order = *order;
  const int leader = detail::node_leader(s->comm, s->rank, over, &s->node);
  if (s->order == RankOrder::node) {
    // The same leaders on every rank, so every rank decides alike whether to renumber.
    std::vector<int> leaders(static_cast<std::size_t>(s->size));
    detail::check_mpi(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, s->comm), "MPI_Allgather");
    if (!std::is_sorted(leaders.begin(), leaders.end())) {  // else the numbering is already node by node
      // MPI_Comm_split orders by key, then by rank: by (node leader, rank).
      MPI_Comm renumbered = MPI_COMM_NULL;
      detail::check_mpi(MPI_Comm_split(s->comm, 0, leader, &renumbered), "MPI_Comm_split");
      MPI_Comm_set_errhandler(renumbered, MPI_ERRORS_RETURN);
      MPI_Comm_free(&s->comm);
      s->comm = renumbered;
      MPI_Comm_rank(s->comm, &s->rank);
      s->renumbered = true;
      if (s->node != MPI_COMM_NULL) MPI_Comm_free(&s->node);  // re-split below, in the new order
    }
  }
  if (s->node == MPI_COMM_NULL) {
    detail::check_mpi(MPI_Comm_split(s->comm, leader, s->rank, &s->node), "MPI_Comm_split");
    MPI_Comm_set_errhandler(s->node, MPI_ERRORS_RETURN);
  }
  int serial = 0;
  s->kind = detail::choose_kind(s->comm, s->node, s->size, &serial);
  s->serial = serial;
  s->next_array_id = (static_cast<std::uint64_t>(serial) << detail::array_id_bits) + 1;
  // Shared windows (one node) need nobody's progress: every operation is a memory copy or
  // a locked add. The thread would only take CPU from the ranks (laplace np=2: 1.42x).
  if (s->progress == ProgressMode::thread && s->kind != WindowKind::shared) {
    // Starting the thread can fail on some ranks only (a process' thread limit): every rank
    // must learn it before the cache's collective below, else the others would wait there.
    std::exception_ptr err;
    try {
      detail::fault_point("context.progress");
      s->progress_thread = detail::acquire_progress_thread();
    } catch (...) {
      err = std::current_exception();
    }
    if (!detail::all_ok(s->comm, !err)) {
      if (err) std::rethrow_exception(err);
      throw MpiError(detail::message("garray::Context: the progress thread (GARRAY_PROGRESS=thread) could not "
                                     "start on another rank"),
                     MPI_ERR_OTHER);
    }
  }
  s->cache = std::make_unique<WindowCache>(s->comm, s->stats);
  *this = Context(std::move(s));
}

Context::Context(std::shared_ptr<detail::ContextState> s) : state_(std::move(s)) {
  if (!state_) return;
  stats_ = &state_->stats;
  comm_ = state_->comm;
  rank_ = state_->rank;
  size_ = state_->size;
  kind_ = state_->kind;
}

void Context::throw_invalid(std::string_view what) {
  detail::raise<InvalidArgument>(what,
                                 ": invalid Context (an empty context from split(MPI_UNDEFINED) or a "
                                 "moved-from handle)");
}

Context Context::split(int color, int key) const {
  check_valid("Context::split");
  // Checked before the handshake: MPI_Comm_split may reject a bad color on this rank without
  // joining the others (Open MPI's parameter check), who would then wait in it.
  std::exception_ptr err;
  if (color < 0 && color != MPI_UNDEFINED) {
    try {
      detail::raise<InvalidArgument>("Context::split: color ", color,
                                     " is negative (a color must be >= 0, or MPI_UNDEFINED for no group)");
    } catch (...) {
      err = std::current_exception();
    }
  }
  detail::agree_signature(state_->comm, detail::hash_string("Context::split"), "Context::split", "split",
                          err);
  MPI_Comm sub = MPI_COMM_NULL;
  detail::check_mpi(MPI_Comm_split(state_->comm, color, key, &sub), "MPI_Comm_split");
  if (sub == MPI_COMM_NULL) return Context(std::shared_ptr<detail::ContextState>{});
  // The constructor duplicates `sub` again (with the error handler): the intermediate is
  // freed also when the constructor throws (a failed collective inside it throws on every
  // rank of `sub` alike, so every rank frees it).
  struct FreeSub {
    MPI_Comm& c;
    ~FreeSub() { MPI_Comm_free(&c); }
  } free_sub{sub};
  return Context(sub, RankOrder::given);
}

ProgressMode Context::progress_mode() const {
  check_valid("Context::progress_mode");
  return state_->progress;
}

WindowCache& Context::cache() const {
  check_valid("Context::cache");
  return *state_->cache;
}

std::string detail::array_label(std::uint64_t id) {
  const std::uint64_t serial = id >> array_id_bits, n = id & ((std::uint64_t{1} << array_id_bits) - 1);
  std::string s = "array #" + std::to_string(n);
  if (serial != 0) s += " of context " + std::to_string(serial);
  return s;
}

std::uint64_t Context::next_array_id() {
  check_valid("Context::next_array_id");
  return state_->next_array_id++;
}

void Context::progress() const {
  check_valid("Context::progress");
  detail::poll_progress(comm_);
}

bool Context::agree(bool ok) const {
  check_valid("Context::agree");
  // The handshake first (a rank in another collective makes every rank throw), then the
  // vote. The vote is not a LocalFault: a "no" is an answer, not an error to broadcast.
  detail::agree_signature(comm_, detail::hash_string("Context::agree"), "Context::agree", "agree");
  return detail::all_ok(comm_, ok);
}

std::string_view to_string(WindowKind k) noexcept {
  switch (k) {
    case WindowKind::shared:
      return "shared";
    case WindowKind::rma:
      return "rma";
    case WindowKind::mixed:
      return "mixed";
  }
  return "?";
}

std::string_view to_string(RankOrder o) noexcept { return o == RankOrder::node ? "node" : "given"; }

std::optional<RankOrder> parse_rank_order(std::string_view text) noexcept {
  for (const RankOrder o : {RankOrder::given, RankOrder::node})
    if (text == to_string(o)) return o;
  return std::nullopt;
}

std::istream& operator>>(std::istream& in, RankOrder& o) {
  std::string word;
  if (!(in >> word)) return in;
  if (const auto parsed = parse_rank_order(word)) o = *parsed;
  else in.setstate(std::ios::failbit);
  return in;
}

std::ostream& operator<<(std::ostream& out, RankOrder o) { return out << to_string(o); }

std::uint64_t Context::serial() const {
  check_valid("Context::serial");
  return static_cast<std::uint64_t>(state_->serial);
}

RankOrder Context::rank_order() const {
  check_valid("Context::rank_order");
  return state_->order;
}

bool Context::renumbered() const {
  check_valid("Context::renumbered");
  return state_->renumbered;
}

MPI_Comm Context::node_comm() const {
  check_valid("Context::node_comm");
  return state_->node;
}

void Context::barrier() const {
  check_valid("Context::barrier");
  detail::agree_signature(state_->comm, detail::hash_string("Context::barrier"), "Context::barrier",
                          "barrier");
}

std::string Context::describe() const {
  check_valid("Context::describe");
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(lib, &len);
  // Some libraries count the terminating NUL in `len`: stop at the first NUL or newline.
  std::string first(lib, strnlen(lib, static_cast<std::size_t>(len)));
  if (auto nl = first.find_first_of("\r\n"); nl != std::string::npos) first.resize(nl);
  while (!first.empty() && (first.back() == ' ' || first.back() == ',')) first.pop_back();
  std::ostringstream os;
  os << "mpi_library=" << first << "\n";
  os << "ranks=" << size() << "\n";
  int node_size = 0;
  MPI_Comm_size(state_->node, &node_size);
  os << "window_kind=" << to_string(window_kind()) << "\n";
  os << "node_ranks=" << node_size << "\n";
  os << "rank_order=" << to_string(state_->order) << (state_->renumbered ? " (renumbered)" : "") << "\n";
  os << "progress=" << to_string(state_->progress) << "\n";
  if (state_->progress == ProgressMode::thread)  // not started where nothing needs it
    os << "progress_thread=" << (state_->progress_thread ? "running" : "not started (shared windows)") << "\n";
  const char* osc = std::getenv("OMPI_MCA_osc");
  os << "osc=" << (osc ? osc : "default") << "\n";
  return os.str();
}

}  // namespace garray

namespace garray::detail {

std::string values_by_rank(MPI_Comm comm, const std::string& mine) {
  // Each rank: a hash of its whole value (compared), then its first `shown` characters.
  constexpr std::size_t shown = 120, width = sizeof(std::uint64_t) + shown;
  int size = 1;
  MPI_Comm_size(comm, &size);
  std::string buf(width, '\0');
  const std::uint64_t h = hash_string(mine);
  std::memcpy(buf.data(), &h, sizeof h);
  mine.copy(buf.data() + sizeof h, std::min(mine.size(), shown));
  std::string all(width * static_cast<std::size_t>(size), '\0');
  if (MPI_Allgather(buf.data(), static_cast<int>(width), MPI_CHAR, all.data(), static_cast<int>(width),
                    MPI_CHAR, comm) != MPI_SUCCESS)
    return "";  // an error message is being built: report what is known
  auto hash_of = [&](int r) { return all.substr(static_cast<std::size_t>(r) * width, sizeof h); };
  auto value = [&](int r) {
    std::string v = all.substr(static_cast<std::size_t>(r) * width + sizeof h, shown);
    v = v.substr(0, v.find('\0'));
    return v.size() == shown ? v + "..." : v;
  };
  std::string out = "rank 0: '" + value(0) + "'";
  int listed = 0;
  for (int r = 1; r < size; ++r) {
    if (hash_of(r) == hash_of(0)) continue;
    if (++listed > 8) {
      out += ", ...";
      break;
    }
    out += ", rank " + std::to_string(r) + ": '" + value(r) + "'";
  }
  return listed == 0 ? "every rank: '" + value(0) + "'" : out;
}

}  // namespace garray::detail
