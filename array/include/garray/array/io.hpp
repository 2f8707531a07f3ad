#pragma once
// garray::io: distributed arrays in parallel HDF5 files (issue 14).
//
//   garray::io::File f(ctx, "out.h5", garray::io::Mode::create);     // collective, MPI-IO driver
//   garray::io::write(f, "u", a);                                     // one dataset, C order
//   garray::io::write(f, "fields/v", a[idx[range(_, _, -1)]]);        // a view writes its section
//   f.set_attribute("step", std::int64_t{250});                       // user metadata
//   ...
//   garray::io::File g(ctx, "out.h5");                                // read-only
//   garray::io::read(g, "u", b);                  // into any distribution, any rank count
//   auto c = garray::io::read_array<double, 2>(g, "u");  // the writer's layout (if it fits)
//
// File layout: one dataset per array holding the global array in C (row-major) order, with
// the element type as HDF5 native types (complex: the compound {r, i} h5py and NumPy use)
// and these attributes on the dataset (docs/user-guide.md, "Files"):
//
//   garray_type           string   float32 float64 int32 int64 complex64 complex128
//   garray_shape          int64[M] the dataset's shape
//   garray_distribution   string   blocked slab grid irregular replicated (arrays, not views)
//   garray_process_grid   int64[N] blocks per dimension
//   garray_block_starts   int64[]  per dimension the start of every block, concatenated
//   garray_ghost          int64[N] ghost width
//
// How data moves: every rank selects the part of the selection stored in its own block as
// a hyperslab of the dataset and of its window memory (the padded block, so ghost cells
// cost nothing) and all ranks do one collective H5Dwrite / H5Dread (MPI-IO underneath).
// Nothing is gathered; a rank holds at most its block, plus one temporary of its part of a
// view when the view has negative steps (HDF5 selections only run forwards).
//
// Every call here is collective over the file's context (the communicator it was opened
// on; arrays must live on the same context) and follows the failure rule of
// docs/semantics.md: a signature handshake of all arguments, checks, then the work inside
// detail::run_concluded, so a failure anywhere throws on every rank. Reads check that the
// dataset exists and has the right shape and type on every rank before any element is
// written: a read that throws left the array unchanged. HDF5's error printing is switched
// off; its messages go into the exceptions (FileError, SizeMismatch, TypeMismatch).
//
// Compiled (issue 17): this header declares the interface; everything that touches HDF5 is
// in garray_io (array/src/io.cpp, io_impl.hpp, one instantiation unit per element type for
// 1-4 dimensions), so a user's translation unit neither parses <hdf5.h> nor instantiates
// the I/O machinery. Group::id() is HDF5's hid_t (an int64_t); include <hdf5.h> yourself to
// call HDF5 on it.

#include <mpi.h>

#include <algorithm>
#include <array>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <exception>
#include <garray/array/distribution.hpp>
#include <garray/array/global_array.hpp>
#include <garray/array/slice.hpp>
#include <garray/array/view.hpp>
#include <garray/runtime/context.hpp>
#include <garray/runtime/datatype.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/window.hpp>  // gd::Window in Group::begin
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

/// Distributed arrays in parallel HDF5 files (target garray_io; only when parallel HDF5 is
/// found). One dataset per array in C order with layout attributes, readable by h5py/NumPy;
/// every rank writes or reads its own block in one collective HDF5 call (MPI-IO underneath).
/// Every call is **Collective** over the file's context (arrays must live on that context)
/// and follows the failure rule: a handshake of all arguments, then the work, so a failure
/// anywhere throws on every rank; a read that throws left the array unchanged.
namespace garray::io {

/// How a File is opened.
enum class Mode {
  create,      ///< create, truncating an existing file
  read_write,  ///< open an existing file for reading and writing
  read_only    ///< open an existing file for reading
};

/// MPI-IO transfer mode of the data (H5Pset_dxpl_mpio).
enum class Transfer {
  collective,  ///< H5FD_MPIO_COLLECTIVE: collective MPI-IO (the default)
  independent  ///< H5FD_MPIO_INDEPENDENT: each rank's part independently
};

/// Options of write().
struct WriteOptions {
  /// Chunk extents (one per dataset dimension); empty: contiguous storage.
  std::vector<Index> chunk;
  Transfer transfer = Transfer::collective;  ///< MPI-IO transfer mode of the data
  /// Replace an existing dataset of that name (otherwise writing over one is an error). Only
  /// a dataset: a group of that name is a FileError. The old dataset is removed before the
  /// new one is created (a write failing after that has lost it).
  bool overwrite = false;
};

/// Options of read() and read_array().
struct ReadOptions {
  Transfer transfer = Transfer::collective;  ///< MPI-IO transfer mode of the data
};

/// A file that cannot be created, opened, written or read, or a missing dataset, group or
/// attribute. The message names the file, the object and HDF5's own error text.
class FileError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

namespace gd = garray::detail;

namespace detail {

/// HDF5's handle type (hid_t, an int64_t since HDF5 1.10) and its "no object" value.
using hid_type = std::int64_t;
inline constexpr hid_type invalid_hid = -1;  // H5I_INVALID_HID

/// An HDF5 identifier closed on destruction.
class Hid {
 public:
  Hid() = default;
  Hid(hid_type id, int (*close)(hid_type)) noexcept : id_(id), close_(close) {}
  Hid(Hid&& o) noexcept : id_(std::exchange(o.id_, invalid_hid)), close_(o.close_) {}
  Hid& operator=(Hid&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, invalid_hid);
      close_ = o.close_;
    }
    return *this;
  }
  ~Hid() { reset(); }
  void reset() noexcept {
    if (id_ >= 0 && close_) close_(id_);
    id_ = invalid_hid;
  }
  hid_type get() const noexcept { return id_; }
  bool valid() const noexcept { return id_ >= 0; }

 private:
  hid_type id_ = invalid_hid;
  int (*close_)(hid_type) = nullptr;
};

/// The open file shared by a File and the Groups opened from it.
struct FileState {
  Context ctx;
  std::string path;
  Mode mode = Mode::read_only;
  hid_type fid = invalid_hid;
  MPI_Comm close_comm = MPI_COMM_NULL;  ///< the close agreement's own duplicate of ctx's communicator
  int uncaught_at_creation = std::uncaught_exceptions();
  FileState(const Context& c, std::string p, Mode m) : ctx(c), path(std::move(p)), mode(m) {}
  /// Collective (every rank destroys its handles together): agree_teardown on close_comm,
  /// then H5Fclose if no rank unwinds; otherwise every rank defers the close (io.cpp).
  ~FileState();
  FileState(const FileState&) = delete;
  FileState& operator=(const FileState&) = delete;
};

/// NumPy's name of an element type, as recorded in garray_type.
template <class T>
constexpr std::string_view numpy_name() noexcept {
  if constexpr (std::is_same_v<T, float>)
    return "float32";
  else if constexpr (std::is_same_v<T, double>)
    return "float64";
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return "int32";
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return "int64";
  else if constexpr (std::is_same_v<T, std::complex<float>>)
    return "complex64";
  else
    return "complex128";
}

/// The file-side selection: per dataset dimension start, step (signed), count, dropped.
struct FileSel {
  std::vector<Index> start, step, count;
  std::vector<bool> dropped;
  static FileSel full(const std::vector<Index>& dims) {
    FileSel f;
    for (auto d : dims) {
      f.start.push_back(0);
      f.step.push_back(1);
      f.count.push_back(d);
      f.dropped.push_back(false);
    }
    return f;
  }
  std::size_t rank() const {
    std::size_t r = 0;
    for (bool b : dropped) r += b ? 0 : 1;
    return r;
  }
};

/// Local. How many files this process holds open because their last handle was dropped
/// while some rank unwound (closed at their context's next io call, or at MPI_Finalize).
std::size_t deferred_files();

/// "garray::io::write<double,2>": the name of a call in messages.
std::string call_name(std::string_view fn, std::string_view type, std::size_t n);

}  // namespace detail

class File;

/// A group of an open file (the file itself is the group "/"). Cheap to copy; keeps the
/// file open. All operations are **collective** over the file's context.
class Group {
 public:
  /// Local. Copies share the file. A moved-from File or Group is empty: it keeps only its
  /// context, every call through it throws InvalidArgument, and a collective through it
  /// still joins the handshake (so when it is empty on some ranks only, those throw
  /// InvalidArgument and the others CollectiveMismatch, nobody waits).
  Group(const Group&) = default;
  /// Local. As the copy.
  Group& operator=(const Group&) = default;
  /// Local. Takes over o's handles; o keeps only its context (empty: see above).
  Group(Group&& o) noexcept
      : file_(std::move(o.file_)), gid_(std::move(o.gid_)), path_(std::move(o.path_)), ctx_(o.ctx_) {}
  /// Local. As the move constructor (dropping this one's handles first).
  Group& operator=(Group&& o) noexcept {
    file_ = std::move(o.file_);
    gid_ = std::move(o.gid_);
    path_ = std::move(o.path_);
    ctx_ = o.ctx_;
    return *this;
  }
  ~Group() = default;

  /// Local. The context the file was opened on.
  const Context& context() const noexcept { return *ctx_; }
  /// Local. The file's name as given to File ("" when empty).
  const std::string& file_name() const noexcept { return file_ ? file_->path : no_name(); }
  /// Local. This group's path inside the file ("/" for the file).
  const std::string& path() const noexcept { return path_; }
  /// Local. The HDF5 identifier (hid_t, for calls garray does not wrap: include <hdf5.h>);
  /// -1 when empty.
  std::int64_t id() const noexcept { return gid_ ? gid_->get() : -1; }
  /// Local. The mode the file was opened with.
  Mode mode() const noexcept { return file_ ? file_->mode : Mode::read_only; }

  /// **Collective** (handshaked). Returns the existing group `name` (a path relative to
  /// this group), open on every rank. Throws FileError on every rank if there is none.
  Group group(const std::string& name) const { return open_group(name, false); }
  /// **Collective** (handshaked). Creates group `name` (and missing intermediate groups);
  /// opens it if it exists. Returns it, open on every rank. Throws FileError on a read-only
  /// file.
  Group create_group(const std::string& name) const { return open_group(name, true); }

  /// **Collective** (handshaked). True on every rank iff an object (dataset or group)
  /// `name` exists.
  bool contains(const std::string& name) const;

  /// **Collective** (handshaked). Sets attribute `key` of the object `object` (relative to
  /// this group; "." is the group itself) to `value`: one of the element types or a string.
  /// Every rank must pass the same value (CollectiveMismatch otherwise). Replaces an existing
  /// one. On return the attribute is set (FileError on every rank if HDF5 failed).
  template <class V>
  void set_attribute(const std::string& key, const V& value, const std::string& object = ".") const {
    constexpr bool is_string = std::is_convertible_v<const V&, std::string_view>;
    static_assert(is_string || Element<V>, "garray::io: attributes are element types or strings");
    if constexpr (is_string)
      set_string_attribute(key, std::string_view(value), object);
    else if constexpr (Element<V>)
      set_value_attribute<V>(key, value, object);
  }

  /// **Collective** (handshaked). Returns, on every rank, attribute `key` of `object` as V (an element type, converted by
  /// HDF5 between numeric types of the same kind, or std::string). Throws FileError if it
  /// is missing, TypeMismatch if it does not hold a V.
  template <class V>
  V attribute(const std::string& key, const std::string& object = ".") const {
    constexpr bool is_string = std::is_same_v<V, std::string>;
    static_assert(is_string || Element<V>, "garray::io: attributes are element types or strings");
    if constexpr (is_string)
      return string_attribute(key, object);
    else if constexpr (Element<V>)
      return value_attribute<V>(key, object);
  }

  // ---- for the free functions below (not part of the user interface) -------------------
  /// Local; for garray's own calls. The communicator of the file's context.
  MPI_Comm comm() const noexcept { return ctx_->comm(); }
  /// Local; for garray's own calls. "file 'x.h5', object '/g/u'" (or the group itself for
  /// ".") for messages.
  std::string where(const std::string& name) const;
  /// Local; for garray's own calls. "file 'x.h5', dataset '/g/u'" for messages.
  std::string dataset_where(const std::string& name) const;
  /// **Collective**; for garray's own calls. The handshake every call starts with: local
  /// checks (`check`, and that the file is open), then one agreement on the signature (which
  /// includes the file and group). Returns on every rank only if every rank's checks passed
  /// and the signatures agree; otherwise throws on every rank.
  template <class Check>
  void begin(const std::string& what, std::uint64_t sig, const std::string& args, Check&& check,
             const gd::Window* win = nullptr) const {
    std::exception_ptr err;
    try {
      check_open(what);
      check();
    } catch (...) {  // a garray error, or std::bad_alloc: carried into the handshake alike
      err = std::current_exception();
    }
    agree(what, sig, args, err, win);
  }
  /// Local; for garray's own calls. Throws FileError naming `what` if the file is read-only.
  void writable(std::string_view what) const;
  /// Collective in effect (HDF5 with collective metadata: every rank must make the same
  /// calls); for garray's own calls. Opens `object` ("." is this group). Throws FileError if
  /// it does not exist.
  detail::Hid open_object(const std::string& object, std::string_view what) const;
  /// Local; for garray's own calls. The path of `name` inside the file.
  std::string child_path(const std::string& name) const;

 protected:
  /// Local. No file (File's constructor fills it in).
  Group() = default;
  /// Local. The group `path` with HDF5 handle `g` of the open file `f`.
  Group(std::shared_ptr<detail::FileState> f, std::shared_ptr<detail::Hid> g, std::string path)
      : file_(std::move(f)), gid_(std::move(g)), path_(std::move(path)), ctx_(file_->ctx) {}

  /// **Collective** (handshaked). group() (`create` false) or create_group() (`create` true).
  Group open_group(const std::string& name, bool create) const;

  std::shared_ptr<detail::FileState> file_;  ///< the open file; the last handle closes it (collective)
  std::shared_ptr<detail::Hid> gid_;         ///< this group's HDF5 handle
  std::string path_ = "/";                   ///< this group's path inside the file
  std::optional<Context> ctx_;  ///< the file's context, kept by an empty (moved-from) handle
  friend class File;
  /// Local. "": the file name of an empty (moved-from) handle.
  static const std::string& no_name() noexcept {
    static const std::string none;
    return none;
  }

 private:
  // Compiled (garray_io): begin()'s parts and the attribute accessors, the element types'
  // instantiated there.
  void check_open(const std::string& what) const;
  void agree(const std::string& what, std::uint64_t sig, const std::string& args, std::exception_ptr err,
             const gd::Window* win) const;
  void set_string_attribute(const std::string& key, std::string_view value, const std::string& object) const;
  template <Element V>
  void set_value_attribute(const std::string& key, const V& value, const std::string& object) const;
  std::string string_attribute(const std::string& key, const std::string& object) const;
  template <Element V>
  V value_attribute(const std::string& key, const std::string& object) const;
};

/// An HDF5 file opened collectively with the MPI-IO driver on a context's communicator.
/// RAII: the destructor closes it (collective). Copies are not allowed; Groups opened from
/// it keep it open until they are gone.
class File : public Group {
 public:
  /// **Collective** over ctx (handshaked). Creates (truncating) or opens `path`; on return
  /// it is open on every rank (MPI-IO driver, collective metadata). Throws FileError naming
  /// the file and HDF5's reason (missing, not an HDF5 file, no permission, ...) on every
  /// rank; CollectiveMismatch if ranks pass different names or modes.
  File(const Context& ctx, const std::string& path, Mode mode = Mode::read_only);
  File(const File&) = delete;             ///< Not copyable.
  File& operator=(const File&) = delete;  ///< Not copyable.
  /// Local. Takes over the other File's handle on its file.
  File(File&&) noexcept = default;
  /// Local. Takes over the other File's handle on its file (dropping this one's: if it was
  /// the last handle on its file, that closes it, which is collective).
  File& operator=(File&&) noexcept = default;
  /// Local, except that the last handle on the file (File or Group) closes it, which is
  /// **Collective**: every rank destroys its handles together. Never throws, and never
  /// blocks a rank whose stack an exception unwinds: when any rank drops its last handle
  /// while unwinding, every rank leaves the file open and it is closed at the next io call on
  /// the context, or when MPI_Finalize starts (docs/semantics.md, "Files").
  ~File() = default;

  /// Local. True until close().
  bool is_open() const noexcept { return file_ && file_->fid >= 0; }

  /// **Collective** (handshaked). Writes HDF5's buffers to the file system (H5Fflush,
  /// global scope); on return they are written. FileError on every rank if HDF5 fails.
  void flush() const;

  /// **Collective** (handshaked). Closes the file: on return it is complete on disk (as far as the file
  /// system goes) on every rank. Throws InvalidArgument if Groups of it are still alive,
  /// FileError if HDF5 fails.
  void close();
};

/// What a dataset holds, as recorded (the shape always; the layout when garray wrote an
/// array).
struct DatasetInfo {
  std::vector<Index> shape;         ///< the dataset's shape
  std::string type;                 ///< garray_type, or HDF5's description
  std::string distribution;         ///< "" when not recorded
  std::vector<Index> process_grid;  ///< empty when not recorded
  std::vector<Index> block_starts;  ///< concatenated per dimension
  std::vector<Index> ghost;         ///< garray_ghost; empty when not recorded
};

namespace detail {

/// The communicator io's handshakes run on: the file's context (a File can only be opened
/// on a valid one, and an empty Group keeps it). A rank whose array is stale joins there, so
/// it meets the others also when the array lives on another context (an error they report
/// there).
inline MPI_Comm handshake_comm(const Group& loc) noexcept { return loc.context().comm(); }

/// The largest number of dimensions garray_io is compiled for.
inline constexpr std::size_t max_rank = 4;

// Compiled in garray_io for the six element types at 1-4 dimensions
// (array/src/io_instantiate.cpp.in); declared only, so user code never instantiates them.
template <Element T, std::size_t N>
void write_section(const Group& loc, const std::string& name, GlobalArray<T, N>& a, const Section<N>& sec,
                   bool whole, const WriteOptions& o, const std::string& what);
template <Element T, std::size_t N>
void read_section(const Group& loc, const std::string& name, GlobalArray<T, N>& a, const Section<N>& sec,
                  const std::optional<FileSel>& fsel, const std::vector<Index>& file_shape_for_slice,
                  const ReadOptions& o, const std::string& what);
/// The shape of dataset `name` (checked to hold T and to have `k` dimensions), on every rank.
template <Element T>
std::vector<Index> dataset_shape(const Group& loc, const std::string& name, std::size_t k,
                                 const std::string& what);
template <Element T, std::size_t N>
GlobalArray<T, N> read_array_as(const Group& loc, const std::string& name, const Distribution<N>& dist,
                                const Shape<N>& ghost);
template <Element T, std::size_t N>
GlobalArray<T, N> read_array_recorded(const Group& loc, const std::string& name);

}  // namespace detail

// ---- the interface ------------------------------------------------------------------------

/// **Collective** over the file's context (which must be the array's). Writes the whole
/// array as dataset `name` (a path relative to `loc`; missing groups are created) in C
/// order, with the layout attributes. Completes every rank's outstanding operations on `a`
/// first (as sync()); on return the dataset holds a's elements (HDF5 may buffer: flush() or
/// close() writes its buffers out). Throws on every rank: FileError (read-only file, the dataset exists and
/// overwrite is off, HDF5 fails), InvalidArgument (bad options), CollectiveMismatch.
template <Element T, std::size_t N>
void write(const Group& loc, const std::string& name, GlobalArray<T, N>& a, const WriteOptions& o = {}) {
  static_assert(N <= detail::max_rank, "garray::io: arrays of 1-4 dimensions (compiled into garray_io)");
  // moved from on this rank only: joins the handshake on the file's context
  garray::detail::join_if_stale_on(detail::handshake_comm(loc), "garray::io::write", a.view());
  detail::write_section(loc, name, a, Section<N>::full(a.shape()), true, o,
                        detail::call_name("write", type_name<T>(), N));
}

/// **Collective** over the file's context (which must be the view's array's). Writes the
/// view's section as dataset `name` of the view's shape (element k of the dataset is view
/// element k). Layout attributes: type and shape only. Completes every rank's outstanding
/// operations on the array first; on return the dataset holds the view's elements. Throws
/// as the whole-array write.
template <Element T, std::size_t N, std::size_t M>
void write(const Group& loc, const std::string& name, const View<T, N, M>& v, const WriteOptions& o = {}) {
  static_assert(M >= 1, "garray::io::write: a 0-d view is a value, not a dataset");
  static_assert(N <= detail::max_rank, "garray::io: arrays of 1-4 dimensions (compiled into garray_io)");
  garray::detail::join_if_stale_on(detail::handshake_comm(loc), "garray::io::write", v);
  detail::write_section(loc, name, v.array(), v.section(), false, o, detail::call_name("write", type_name<T>(), N));
}

/// **Collective** over the file's context (which must be the array's). Reads dataset
/// `name` into `a` (any distribution, any rank count). The
/// dataset must have a's shape and element type (SizeMismatch / TypeMismatch otherwise,
/// naming file, dataset and both values, thrown on every rank before any element changes).
/// On return the array is consistent everywhere (as after sync()).
template <Element T, std::size_t N>
void read(const Group& loc, const std::string& name, GlobalArray<T, N>& a, const ReadOptions& o = {}) {
  static_assert(N <= detail::max_rank, "garray::io: arrays of 1-4 dimensions (compiled into garray_io)");
  // moved from on this rank only: joins the handshake on the file's context
  garray::detail::join_if_stale_on(detail::handshake_comm(loc), "garray::io::read", a.view());
  detail::read_section(loc, name, a, Section<N>::full(a.shape()), std::nullopt, {}, o,
                       detail::call_name("read", type_name<T>(), N));
}

/// **Collective** over the file's context. Reads dataset `name` (shape = the view's shape)
/// into the view; on return the view's elements are the dataset's, consistent everywhere
/// (as after sync()). Throws as the whole-array read.
template <Element T, std::size_t N, std::size_t M>
void read(const Group& loc, const std::string& name, const View<T, N, M>& v, const ReadOptions& o = {}) {
  static_assert(M >= 1, "garray::io::read: a 0-d view is a value, not a dataset");
  static_assert(N <= detail::max_rank, "garray::io: arrays of 1-4 dimensions (compiled into garray_io)");
  garray::detail::join_if_stale_on(detail::handshake_comm(loc), "garray::io::read", v);
  detail::read_section(loc, name, v.array(), v.section(), std::nullopt, {}, o,
                       detail::call_name("read", type_name<T>(), N));
}

/// **Collective** over the file's context. Reads the selection `file_slice` of dataset
/// `name` (numpy slicing over the dataset's dimensions: one item per dimension, negative
/// steps allowed) into the view; the selection's shape must be the view's (SizeMismatch on
/// every rank otherwise). On return as the read into a view.
template <Element T, std::size_t N, std::size_t M, std::size_t K, std::size_t MS>
void read(const Group& loc, const std::string& name, const Slice<K, MS>& file_slice, const View<T, N, M>& v,
          const ReadOptions& o = {}) {
  static_assert(MS == M,
                "garray::io::read: the file selection keeps a different number of dimensions than the view");
  static_assert(N <= detail::max_rank, "garray::io: arrays of 1-4 dimensions (compiled into garray_io)");
  const std::string what = detail::call_name("read", type_name<T>(), N);
  // before the first collective below
  garray::detail::join_if_stale_on(detail::handshake_comm(loc), what, v);
  // The dataset's shape, to normalise the slice: a small collective query of its own.
  const std::vector<Index> fshape = detail::dataset_shape<T>(loc, name, K, what);
  detail::FileSel sel;
  try {
    Shape<K> fs{};
    for (std::size_t d = 0; d < K; ++d) fs[d] = fshape[d];
    const Section<K> fsec = normalize(fs, file_slice, what);
    std::vector<Index> kept;
    for (std::size_t d = 0; d < K; ++d) {
      sel.start.push_back(fsec.start[d]);
      sel.step.push_back(fsec.step[d]);
      sel.count.push_back(fsec.count[d]);
      sel.dropped.push_back(fsec.dropped[d]);
      if (!fsec.dropped[d]) kept.push_back(fsec.count[d]);
    }
    const auto vs = v.shape();
    if (!std::equal(kept.begin(), kept.end(), vs.begin()))
      gd::raise<SizeMismatch>(what, ": the selection ", fsec, " of ", loc.dataset_where(name), " has shape ",
                              gd::seq(kept), ", the view has shape ", gd::seq(vs));
  } catch (...) {
    // A selection bad on this rank only: the others are in read_section's handshake; meet
    // them there with the error, so that every rank throws and nobody waits.
    loc.begin(what, gd::hash_string("garray::io::read: a bad selection"), "a bad selection",
              [e = std::current_exception()] { std::rethrow_exception(e); });
    throw;  // not reached: the handshake throws on every rank
  }
  detail::read_section(loc, name, v.array(), v.section(), sel, fshape, o, what);
}

/// **Collective** (handshaked). Returns, on every rank, the shape, type and recorded layout
/// of dataset `name`. Throws FileError on every rank if it does not exist.
DatasetInfo info(const Group& loc, const std::string& name);

/// **Local**. The distribution recorded in `inf` as a spec that gives the writer's blocks
/// (replicated stays replicated; blocked, slab and grid become grid(process grid); irregular
/// stays irregular); blocked() when nothing is recorded. Throws InvalidArgument if the
/// recorded attributes are inconsistent with N.
template <std::size_t N>
Distribution<N> recorded_distribution(const DatasetInfo& inf, std::string_view what = "garray::io") {
  if (inf.distribution.empty()) return Distribution<N>::blocked();
  if (inf.distribution == "replicated") return Distribution<N>::replicated();
  if (inf.process_grid.size() != N)
    gd::raise<InvalidArgument>(what, ": recorded process grid ", gd::seq(inf.process_grid), " is not ", N,
                               "-d");
  std::array<int, N> procs{};
  std::size_t total = 0;
  for (std::size_t d = 0; d < N; ++d) {
    if (inf.process_grid[d] < 1 || inf.process_grid[d] > std::numeric_limits<int>::max())
      gd::raise<InvalidArgument>(what, ": recorded process grid ", gd::seq(inf.process_grid),
                                 " has an extent outside [1, INT_MAX]");
    procs[d] = static_cast<int>(inf.process_grid[d]);
    total += static_cast<std::size_t>(procs[d]);
  }
  if (inf.distribution != "irregular") return Distribution<N>::grid(procs);
  if (inf.block_starts.size() != total)
    gd::raise<InvalidArgument>(what, ": recorded block starts ", gd::seq(inf.block_starts),
                               " do not match the grid ", gd::seq(procs));
  std::array<std::vector<Index>, N> starts;
  std::size_t k = 0;
  for (std::size_t d = 0; d < N; ++d)
    for (int b = 0; b < procs[d]; ++b) starts[d].push_back(inf.block_starts[k++]);
  return Distribution<N>::irregular(starts);
}

/// **Collective** over the file's context. Returns a new array on that context holding
/// dataset `name` (its shape; element type T), distributed as `dist` with `ghost`,
/// consistent everywhere (as after sync()). Throws SizeMismatch if the dataset has not N
/// dimensions, and as info() and read().
template <Element T, std::size_t N>
GlobalArray<T, N> read_array(const Group& loc, const std::string& name, const Distribution<N>& dist,
                             const Shape<N>& ghost = {}) {
  static_assert(N <= detail::max_rank, "garray::io: arrays of 1-4 dimensions (compiled into garray_io)");
  return detail::read_array_as<T, N>(loc, name, dist, ghost);
}

/// **Collective** over the file's context. Returns a new array holding dataset `name` in the
/// layout its writer recorded (the
/// same blocks and ghost width; InvalidArgument if that needs more ranks than the context
/// has: pass a distribution then). Datasets without a recorded layout get blocked().
template <Element T, std::size_t N>
GlobalArray<T, N> read_array(const Group& loc, const std::string& name) {
  static_assert(N <= detail::max_rank, "garray::io: arrays of 1-4 dimensions (compiled into garray_io)");
  return detail::read_array_recorded<T, N>(loc, name);
}

}  // namespace garray::io
