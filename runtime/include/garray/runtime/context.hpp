#pragma once
// Context: garray's handle on an MPI program and a group of its ranks.
//
// A Context works on its own duplicate of the communicator it is given (default
// MPI_COMM_WORLD) with MPI_ERRORS_RETURN installed, so library traffic never mixes with the
// user's and every MPI error code reaches garray's checks. Arrays live on the ranks of one
// Context; `split()` makes process groups so arrays can live on a subset of ranks.
//
// MPI lifetime: if MPI is not initialised when the first Context is made, garray calls
// MPI_Init_thread (MPI_THREAD_FUNNELED, or MPI_THREAD_MULTIPLE with GARRAY_PROGRESS=thread:
// progress.hpp) and calls MPI_Finalize when the last Context (and the last array) is gone,
// unless that happens while an exception unwinds (a failed Context creation, a rank leaving
// its last Context's scope by an exception): MPI is then finalised at exit (std::atexit).
// A Context made after MPI_Finalize throws InvalidArgument. If the program initialised MPI
// itself, garray never finalises it.
//
// Windows: on a communicator whose ranks all share one node, arrays use shared-memory
// windows (MPI_Win_allocate_shared) and move data with plain memory copies; otherwise
// MPI_Win_allocate and MPI RMA calls. GARRAY_WINDOW=rma|shared|auto overrides (see
// docs/semantics.md).

#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <garray/runtime/progress.hpp>
#include <garray/runtime/stats.hpp>
#include <iosfwd>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

/// libgarray: Global-Arrays-style distributed N-d arrays on MPI-3 one-sided communication.
///
/// Every public call's comment says how ranks take part (docs/semantics.md, "Participation"):
/// - **Collective**: every rank of the array's (or context's) Context calls it, in the same
///   order relative to the other collectives, with the same arguments; it starts with a
///   signature handshake, so ranks that disagree all throw CollectiveMismatch, and a rank that
///   fails after the handshake makes the others throw CollectiveFailure.
/// - **One-sided**: any rank calls it alone; the owners of the data do not take part.
/// - **Local**: touches only the calling rank's state.
///
/// and what is true when it returns (the README table, docs/semantics.md "Operations and
/// completion"). Errors are Error subclasses thrown before any data moves.
namespace garray {

/// How arrays of a context expose their blocks.
enum class WindowKind {
  shared,  ///< MPI_Win_allocate_shared: every rank can load/store every block directly
  rma,     ///< MPI_Win_allocate: remote blocks only through MPI_Get/Put/Accumulate
  /// Several nodes: MPI_Win_allocate_shared within each node, exposed to every rank by
  /// MPI_Win_create. Blocks on this rank's node by load/store (get/put), the others by MPI
  /// RMA; every atomic operation by MPI accumulate-class calls (one atomicity domain).
  mixed
};
/// Local. "shared", "rma" or "mixed".
std::string_view to_string(WindowKind k) noexcept;

/// How a context numbers its ranks (docs/semantics.md, "Rank order").
enum class RankOrder {
  given,  ///< as in the communicator passed: rank() is the rank there (the default)
  /// Node by node: the ranks sharing a node (MPI_COMM_TYPE_SHARED) get consecutive numbers,
  /// nodes ordered by their lowest rank, the order within a node kept. Distributions map
  /// grid positions to ranks in this order, so consecutive blocks land on one node whatever
  /// the launcher's placement (round robin included). The identity where every node already
  /// holds consecutive ranks (one node, block placement); rank 0 stays rank 0.
  node
};
/// Local. "given" or "node".
std::string_view to_string(RankOrder o) noexcept;
/// Local. The RankOrder that to_string() names `text`; nullopt for any other text.
std::optional<RankOrder> parse_rank_order(std::string_view text) noexcept;
/// Local. Reads a rank order by name (what command-line parsers such as
/// boost::program_options use: `po::value<garray::RankOrder>`); another word sets failbit.
std::istream& operator>>(std::istream& in, RankOrder& o);
/// Local. Writes to_string(o).
std::ostream& operator<<(std::ostream& out, RankOrder o);

class WindowCache;
namespace detail {
struct ContextState;
}

/// A group of ranks garray works on. Cheap to copy (a shared handle); all copies refer to
/// the same duplicated communicator and statistics.
class Context {
 public:
  /// Attaches to `comm` (initialising MPI if nobody did). **Collective over comm.**
  /// On return the context holds its own duplicate of `comm` (MPI_ERRORS_RETURN installed)
  /// and has chosen its window kind, identical on every rank. Throws InvalidArgument (on
  /// the ranks that pass it) for MPI_COMM_NULL or an intercommunicator; an MPI failure while
  /// duplicating `comm` goes to `comm`'s error handler (MpiError only if it returns errors).
  explicit Context(MPI_Comm comm = MPI_COMM_WORLD);
  /// As above, numbering the ranks in `order` (RankOrder::node: node by node, so default
  /// distributions keep neighbouring blocks on one node; rank() may then differ from the
  /// rank in `comm`, and MPI calls that mix the two numberings must translate: use
  /// comm() for the context's numbering). The one-argument constructor takes the order from
  /// GARRAY_RANK_ORDER (`given` if unset). **Collective over comm**: every rank must pass the
  /// same order, else every rank throws InvalidArgument.
  Context(MPI_Comm comm, RankOrder order);

  /// Local. Another handle to the same context.
  Context(const Context&) = default;
  /// Local. Makes this a handle to `o`'s context.
  Context& operator=(const Context&) = default;
  /// Local. A Context is a shared handle, so moving one copies it: the source stays valid
  /// and refers to the same context. (A moved-from handle that went empty on one rank would
  /// throw locally in the next collective and leave the other ranks waiting in it.)
  Context(Context&& o) noexcept : Context(static_cast<const Context&>(o)) {}
  /// Local. As the copy assignment: `o` stays valid (see the move constructor).
  Context& operator=(Context&& o) noexcept { return *this = static_cast<const Context&>(o); }

  /// Splits into process groups like MPI_Comm_split. **Collective over this context**
  /// (handshaked: a rank calling another collective meanwhile makes every rank throw
  /// CollectiveMismatch). Returns this rank's new context: the ranks that passed the same
  /// `color`, ordered by `key`, then by rank here; ranks passing `MPI_UNDEFINED` get an
  /// empty context (`valid() == false`). A negative color other than MPI_UNDEFINED throws
  /// InvalidArgument on its rank, CollectiveMismatch on the others, before anything splits.
  Context split(int color, int key = 0) const;

  /// Local. False for the empty context split() gives ranks that passed MPI_UNDEFINED (a
  /// moved-from handle stays valid: moving copies). Every operation on an invalid context
  /// throws InvalidArgument, except these local accessors, which answer that it has no
  /// group: rank() -1, size() 0, comm() MPI_COMM_NULL.
  bool valid() const noexcept { return state_ != nullptr; }
  /// Local. Throws InvalidArgument naming `what` unless valid().
  void check_valid(std::string_view what) const {
    if (!state_) [[unlikely]]
      throw_invalid(what);
  }
  int rank() const noexcept { return rank_; }                ///< Local. This rank within the context.
  int size() const noexcept { return size_; }                ///< Local. Number of ranks in the context.
  MPI_Comm comm() const noexcept { return comm_; }           ///< Local. garray's duplicated communicator.
  WindowKind window_kind() const noexcept { return kind_; }  ///< Local. Identical on every rank.
  /// Local. The ranks of this context that share this rank's node (MPI_COMM_TYPE_SHARED,
  /// ordered as here; or, a testing override, GARRAY_NODE_RANKS=k: every k consecutive ranks
  /// of MPI_COMM_WORLD, or with `k,cyclic` world ranks dealt round robin to ceil(size / k)
  /// nodes; fixed by the world rank, so a sub-context sees the same nodes), as a
  /// communicator owned by the context: what mixed windows share memory within.
  MPI_Comm node_comm() const;
  /// Local. Identical on every rank: how the ranks are numbered.
  RankOrder rank_order() const;
  /// Local. Identical on every rank: true if RankOrder::node changed some rank's number (the
  /// launcher did not place consecutive ranks on one node).
  bool renumbered() const;
  /// Local. Identical on every rank: GARRAY_PROGRESS, agreed when the context was made
  /// (progress.hpp; with `thread` and windows that are not shared, the process's progress
  /// thread runs while the context lives: describe() says whether it does).
  ProgressMode progress_mode() const;
  /// Local. Identical on every rank: the context's serial, different for any two contexts
  /// this process ever made (arrays' ids and messages carry it: "array #5 of context 2").
  std::uint64_t serial() const;

  /// Local. This rank's counters (writable, e.g. to reset; a Context is a handle, so the
  /// counters are shared by all copies and are not part of its constness).
  Stats& stats() const {
    if (!stats_) [[unlikely]]
      throw_invalid("Context::stats");
    return *stats_;
  }

  /// Local. The pool of windows that destroyed arrays of this context leave for new ones
  /// (depth, byte cap, clear(): see window_cache.hpp). Shared by all copies of the handle.
  WindowCache& cache() const;

  /// Local. Returns a number identifying the next array created on this context and advances
  /// it; identical on every rank because array creation is collective, and never the id of
  /// an array of another context that shares a rank with this one (the context's serial is
  /// in its upper bits: detail::array_id_bits). Used in collective signatures.
  std::uint64_t next_array_id();

  /// Local. Lets the MPI library make progress on one-sided requests that target this
  /// rank: one pass of its whole progress engine (an MPI_Iprobe, then an MPI_Test of a
  /// receive of garray's own that nothing matches, which Open MPI's pml/ucx needs). Call it
  /// in long local loops when running where MPI RMA needs the target's help (Open MPI
  /// osc/pt2pt or UCX, MPICH, over TCP across hosts); a no-op cost elsewhere.
  void progress() const;

  /// **Collective** barrier over the context, handshaked like every collective (a rank
  /// calling another collective meanwhile makes every rank throw CollectiveMismatch). On
  /// return every rank of the context has entered the barrier.
  void barrier() const;

  /// Local. Returns one line per setting: MPI library version, ranks, window kind, Open MPI's
  /// osc selection if set. Printed by verbose apps and benchmarks.
  std::string describe() const;

  /// **Collective** (handshaked). True on every rank iff `ok` is true on every rank: the "did it work
  /// everywhere?" question of an SPMD program (two small allreduces). Handshaked like every
  /// collective: a rank calling another collective meanwhile makes every rank throw
  /// CollectiveMismatch.
  bool agree(bool ok) const;
  /// **Collective** (handshaked: `what` is part of the signature, so ranks running different
  /// steps, or another collective, throw CollectiveMismatch on every rank before f runs).
  /// Runs `f()` on every rank, then agrees on the outcome (the failure rule of
  /// docs/semantics.md, one allreduce): if f threw on some rank, that rank rethrows its
  /// exception and every other rank throws CollectiveFailure carrying its message (`what`
  /// names the step); otherwise f's result is returned on every rank. For a step that may
  /// fail on some ranks only (reading a file, checking local input) and must not leave the
  /// others waiting in the next collective. Two allreduces.
  template <class F>
  auto agree(std::string_view what, F&& f) const;

  /// Local. True if both handles refer to the same context (copies of one Context).
  friend bool operator==(const Context& a, const Context& b) noexcept { return a.state_ == b.state_; }

 private:
  explicit Context(std::shared_ptr<detail::ContextState> s);
  Context(MPI_Comm comm, std::optional<RankOrder> order);  // nullopt: GARRAY_RANK_ORDER
  [[noreturn]] static void throw_invalid(std::string_view what);
  std::shared_ptr<detail::ContextState> state_;
  // Copies of the state's hot fields, so the accessors inline on transfer paths.
  Stats* stats_ = nullptr;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = -1;  // an invalid context has no group: rank() -1, size() 0
  int size_ = 0;
  WindowKind kind_ = WindowKind::rma;
};

namespace detail {

/// Array ids: the context's serial (agreed at its creation, unique among the contexts that
/// share a rank) above this many bits, a counter within the context below.
inline constexpr int array_id_bits = 40;
/// How messages name an array: "array #5", or "array #5 of context 2" after the first
/// context.
std::string array_label(std::uint64_t id);

/// The agreement a teardown that would block runs first (a context's MPI_Win_free, an
/// io::File's H5Fclose): every rank starts an MPI_Iallreduce of "am I unwinding?" over
/// `comm`, a communicator used for nothing else. Returns true iff nobody unwinds, so the
/// caller may go on with the blocking collective. A rank that unwinds, or that does not
/// need the answer (`must_know` false), does not wait and gets `!unwinding`: its request is
/// parked and completed by later MPI calls, at the latest when MPI_Finalize starts, and it
/// takes `comm` along (set to MPI_COMM_NULL here) and frees it then. A rank that waited
/// keeps `comm`. **Collective**, but blocks only a rank that is not unwinding and must know.
bool agree_teardown(MPI_Comm& comm, bool unwinding, bool must_know) noexcept;

/// True on every rank iff `ok` is true on every rank of `comm`. **Collective.**
bool all_ok(MPI_Comm comm, bool ok);

/// The collective handshake every garray collective starts with: one allreduce comparing a
/// signature of the call and its arguments. If any rank passed a different signature, every
/// rank throws CollectiveMismatch naming `what` and `describe_local` (this rank's view of the
/// arguments). A rank that reached it from a call it found invalid (agree_with_errors with
/// its fault: a stale view joining, a bad argument) makes every other rank throw with its
/// message (throw_if_disagreed), so the broadcast of that message always has every rank.
/// Doubles as a barrier. **Collective.**
void agree_signature(MPI_Comm comm, std::uint64_t signature, std::string_view what,
                     std::string_view describe_local);
/// What went wrong on a rank before a handshake: its arguments were invalid (the others
/// throw CollectiveMismatch), completing its earlier work failed (CollectiveFailure), or
/// the data only it holds does not fit (`data`: scatter_from's root; the others in the same
/// call throw its error, ranks in another collective CollectiveMismatch, as for `invalid`).
/// Whatever the kind, every rank takes part in the broadcast of the faulty rank's message:
/// a rank cannot know which collective the others are in.
enum class LocalFault { none = 0, invalid = 1, failed = 2, data = 3 };
/// The outcome of a handshake that also carries local errors.
struct Agreement {
  bool signatures_equal = true;
  int failed_rank = -1;                 ///< lowest rank whose local step failed, -1 if none
  LocalFault fault = LocalFault::none;  ///< what failed on that rank
};
/// One allreduce: compares `signature` across ranks and finds the lowest rank with a
/// fault. **Collective.**
Agreement agree_with_errors(MPI_Comm comm, std::uint64_t signature, LocalFault fault);
inline Agreement agree_with_errors(MPI_Comm comm, std::uint64_t signature, bool invalid) {
  return agree_with_errors(comm, signature, invalid ? LocalFault::invalid : LocalFault::none);
}
/// The message of `failed_rank`'s exception `err`, broadcast to every rank (error paths
/// only). **Collective.**
std::string peer_message(MPI_Comm comm, int failed_rank, const std::exception_ptr& err);
/// Throws what `a` calls for, on every rank (no-op when everything agreed): a failing rank
/// rethrows `err`; the others throw CollectiveMismatch (invalid arguments, or signatures
/// that differ: `describe_local` names this rank's view) or CollectiveFailure (a failure).
/// **Collective** when a rank failed (its message is broadcast).
void throw_if_disagreed(MPI_Comm comm, const Agreement& a, std::exception_ptr err, std::string_view what,
                        std::string_view describe_local);
/// After agree_with_errors found a failing rank: broadcasts its message; the failing rank
/// rethrows `err`, every other rank throws CollectiveMismatch naming that rank and its
/// message. **Collective.**
[[noreturn]] void throw_peer_error(MPI_Comm comm, int failed_rank, std::exception_ptr err,
                                   std::string_view what);
/// As throw_peer_error, for a failure while doing the work (not an invalid argument): the
/// other ranks throw CollectiveFailure. **Collective.**
[[noreturn]] void throw_peer_failure(MPI_Comm comm, int failed_rank, std::exception_ptr err,
                                     std::string_view what);
/// Throws the CollectiveMismatch of agree_signature.
[[noreturn]] void throw_signature_mismatch(std::string_view what, std::string_view describe_local);
/// As agree_signature above, but `describe_local` is a callable returning the description,
/// called only on a mismatch: keeps string formatting off hot collectives (array creation
/// from the cache).
template <class Describe>
requires std::is_invocable_r_v<std::string, Describe&>
void agree_signature(MPI_Comm comm, std::uint64_t signature, std::string_view what,
                     Describe&& describe_local) {
  const Agreement a = agree_with_errors(comm, signature, LocalFault::none);
  if (a.failed_rank >= 0) throw_if_disagreed(comm, a, nullptr, what, {});  // the failing rank's message
  if (!a.signatures_equal) throw_signature_mismatch(what, describe_local());
}
/// The handshake of a collective whose local validation may have failed (`err`, caught
/// before any data moved): one allreduce. If any rank's check failed, that rank rethrows its
/// own error and every other rank throws CollectiveMismatch carrying its message; else, if
/// the signatures differ, every rank throws CollectiveMismatch (agree_signature).
/// **Collective.**
template <class Describe>
void agree_signature(MPI_Comm comm, std::uint64_t signature, std::string_view what, Describe&& describe_local,
                     std::exception_ptr err) {
  const Agreement a = agree_with_errors(comm, signature, err != nullptr);
  if (a.failed_rank >= 0) throw_peer_error(comm, a.failed_rank, err, what);
  if (!a.signatures_equal) {
    if constexpr (std::is_invocable_v<Describe&>)
      throw_signature_mismatch(what, describe_local());
    else
      throw_signature_mismatch(what, describe_local);
  }
}

/// The failure rule's closing step (docs/semantics.md, "Failure rule"): every rank passes
/// the exception its part of a collective ended with (null on success). If any rank failed,
/// every rank throws: a failing rank rethrows its own exception, the others throw
/// CollectiveFailure carrying the lowest failing rank's message. One MPI_Allreduce (plus a
/// broadcast of the message only on failure); doubles as a barrier. **Collective.**
void conclude(MPI_Comm comm, std::exception_ptr err, std::string_view what);

/// Runs `work()` (this rank's part of a collective, after its handshake) and then
/// conclude(): no rank is left waiting for one that threw. Returns work()'s result.
template <class F>
auto run_concluded(MPI_Comm comm, std::string_view what, F&& work) {
  std::exception_ptr err;
  if constexpr (std::is_void_v<std::invoke_result_t<F&>>) {
    try {
      work();
    } catch (...) {
      err = std::current_exception();
    }
    conclude(comm, err, what);
  } else {
    std::optional<std::invoke_result_t<F&>> r;
    try {
      r.emplace(work());
    } catch (...) {
      err = std::current_exception();
    }
    conclude(comm, err, what);
    return std::move(*r);
  }
}

/// FNV-1a style hashing for signatures.
inline std::uint64_t hash_mix(std::uint64_t h, std::uint64_t v) noexcept {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0x100000001b3ULL;
}
std::uint64_t hash_string(std::string_view s) noexcept;
/// Bytes of T that hold its value: all of them, but for x87's 80-bit long double, which
/// fills 10 of its 12 or 16 bytes (the rest is padding, whose contents are indeterminate:
/// equal values on two ranks may differ there).
template <class T>
inline constexpr std::size_t value_bytes = (std::is_same_v<T, long double> &&
                                            std::numeric_limits<long double>::digits == 64)
                                               ? 10
                                               : sizeof(T);
/// Signature contribution of a value's bytes (fill values, scalars of expressions): its value
/// representation, so equal bits hash equal (complex: each part).
template <class T>
requires std::is_trivially_copyable_v<T> std::uint64_t value_hash(std::uint64_t h, const T& v)
noexcept {
  if constexpr (requires {
                  v.real();
                  v.imag();
                }) {
    return value_hash(value_hash(h, v.real()), v.imag());  // std::complex<long double>
  } else {
    unsigned char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    for (std::size_t i = 0; i < value_bytes<T>; ++i) h = hash_mix(h, b[i]);
    return h;
  }
}

}  // namespace detail
template <class F>
auto Context::agree(std::string_view what, F&& f) const {
  check_valid(what);
  const std::uint64_t sig = detail::hash_mix(detail::hash_string("Context::agree(what, f)"), detail::hash_string(what));
  detail::agree_signature(comm_, sig, what, [&] { return "agree(\"" + std::string(what) + "\", f)"; });
  return detail::run_concluded(comm_, what, std::forward<F>(f));
}

}  // namespace garray
