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

#include <hdf5.h>
#include <mpi.h>

#include <array>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <garray/array/box.hpp>
#include <garray/array/detail/transfer_plan.hpp>
#include <garray/array/distribution.hpp>
#include <garray/array/global_array.hpp>
#include <garray/array/movement.hpp>
#include <garray/array/slice.hpp>
#include <garray/array/view.hpp>
#include <garray/runtime/context.hpp>
#include <garray/runtime/datatype.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/fault.hpp>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
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
  /// Replace an existing dataset of that name (otherwise writing over one is an error).
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

/// Switches off HDF5's automatic error printing (messages go into exceptions instead).
inline void silence_hdf5() noexcept { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

/// HDF5's error stack as one line (outermost call first), then clears it.
inline std::string hdf5_message() {
  struct Acc {
    std::vector<std::string> parts;
  } acc;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned, const H5E_error2_t* e, void* data) -> herr_t {
        auto& a = *static_cast<Acc*>(data);
        if (e->desc && *e->desc) {
          std::string d(e->desc);
          bool dup = false;
          for (const auto& p : a.parts) dup = dup || p == d;
          if (!dup) a.parts.push_back(std::move(d));
        }
        return 0;
      },
      &acc);
  H5Eclear2(H5E_DEFAULT);
  if (acc.parts.empty()) return "HDF5 gave no message";
  // The outermost call and the innermost cause say the most.
  std::string s = "HDF5: " + acc.parts.front();
  if (acc.parts.size() > 1) s += " ... " + acc.parts.back();
  return s;
}

/// run_concluded for work that returns a value (returned by value).
template <class F>
std::invoke_result_t<F&> concluded(MPI_Comm comm, std::string_view what, F&& work) {
  std::optional<std::invoke_result_t<F&>> r;
  gd::run_concluded(comm, what, [&] { r.emplace(work()); });
  return std::move(*r);
}

/// The front of every io collective in ONE allreduce: the call's signature (all arguments)
/// and whether this rank's local checks passed (`err`). Every rank throws: its own error,
/// CollectiveMismatch if the signatures differ, or InvalidArgument if only another rank's
/// checks failed. `wins`: windows whose outstanding operations complete first (the
/// allreduce then doubles as sync()'s barrier).
inline void handshake(const Context& ctx, std::uint64_t sig, std::string_view what, const std::string& args,
                      std::exception_ptr err, std::span<const gd::Window* const> wins = {}) {
  for (const gd::Window* w : wins) {
    w->complete_all();
    w->memory_sync();
  }
  std::uint64_t v[3] = {sig, ~sig, err ? 1u : 0u};
  gd::check_mpi(MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_UINT64_T, MPI_MAX, ctx.comm()), "MPI_Allreduce");
  for (const gd::Window* w : wins) w->memory_sync();
  if (v[0] != sig || v[1] != ~sig) {
    if (err) std::rethrow_exception(err);
    gd::throw_signature_mismatch(what, args);
  }
  if (v[2] != 0) {
    if (err) std::rethrow_exception(err);
    gd::raise<InvalidArgument>(what, ": invalid argument on another rank (see that rank's message)");
  }
}

/// An HDF5 identifier closed on destruction.
class Hid {
 public:
  Hid() = default;
  Hid(hid_t id, herr_t (*close)(hid_t)) noexcept : id_(id), close_(close) {}
  Hid(Hid&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), close_(o.close_) {}
  Hid& operator=(Hid&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
      close_ = o.close_;
    }
    return *this;
  }
  ~Hid() { reset(); }
  void reset() noexcept {
    if (id_ >= 0 && close_) close_(id_);
    id_ = H5I_INVALID_HID;
  }
  hid_t get() const noexcept { return id_; }
  bool valid() const noexcept { return id_ >= 0; }

 private:
  hid_t id_ = H5I_INVALID_HID;
  herr_t (*close_)(hid_t) = nullptr;
};

/// The open file shared by a File and the Groups opened from it.
struct FileState {
  Context ctx;
  std::string path;
  Mode mode = Mode::read_only;
  hid_t fid = H5I_INVALID_HID;
  FileState(const Context& c, std::string p, Mode m) : ctx(c), path(std::move(p)), mode(m) {}
  ~FileState() {
    if (fid >= 0) H5Fclose(fid);  // collective: every rank destroys its handles together
  }
  FileState(const FileState&) = delete;
  FileState& operator=(const FileState&) = delete;
};

/// Signature of a call and its arguments.
struct Sig {
  std::uint64_t h;
  explicit Sig(std::string_view what) : h(gd::hash_string(what)) {}
  Sig& add(std::uint64_t v) {
    h = gd::hash_mix(h, v);
    return *this;
  }
  Sig& add(std::string_view s) {
    h = gd::hash_mix(gd::hash_mix(h, s.size()), gd::hash_string(s));
    return *this;
  }
  template <class Seq>
  Sig& seq(const Seq& s) {
    add(static_cast<std::uint64_t>(s.size()));
    for (auto v : s) add(static_cast<std::uint64_t>(v));
    return *this;
  }
};

/// The pieces streamed into one string (gd::message without the rank suffix).
template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

template <class X>
std::string str(const X& x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

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

template <class T>
struct is_complex : std::false_type {};
template <class R>
struct is_complex<std::complex<R>> : std::true_type {};

template <class R>
hid_t native_real() noexcept {
  if constexpr (std::is_same_v<R, float>)
    return H5T_NATIVE_FLOAT;
  else if constexpr (std::is_same_v<R, double>)
    return H5T_NATIVE_DOUBLE;
  else if constexpr (std::is_same_v<R, std::int32_t>)
    return H5T_NATIVE_INT32;
  else
    return H5T_NATIVE_INT64;
}

/// The HDF5 memory (and file) type of T: native numbers; complex as the compound {r, i}.
template <class T>
Hid h5_type() {
  if constexpr (is_complex<T>::value) {
    using R = typename T::value_type;
    Hid t(H5Tcreate(H5T_COMPOUND, sizeof(T)), H5Tclose);
    H5Tinsert(t.get(), "r", 0, native_real<R>());
    H5Tinsert(t.get(), "i", sizeof(R), native_real<R>());
    return t;
  } else {
    return Hid(H5Tcopy(native_real<T>()), H5Tclose);
  }
}

/// A description of an HDF5 type for messages ("float64", "int16", "compound{a,b}", ...).
inline std::string describe_type(hid_t t) {
  const std::size_t size = H5Tget_size(t);
  switch (H5Tget_class(t)) {
    case H5T_INTEGER:
      return std::string(H5Tget_sign(t) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(8 * size);
    case H5T_FLOAT:
      return "float" + std::to_string(8 * size);
    case H5T_STRING:
      return "string";
    case H5T_COMPOUND: {
      std::string s = "compound{";
      const int n = H5Tget_nmembers(t);
      for (int k = 0; k < n; ++k) {
        char* name = H5Tget_member_name(t, static_cast<unsigned>(k));
        Hid mt(H5Tget_member_type(t, static_cast<unsigned>(k)), H5Tclose);
        s += (k ? ", " : "") + std::string(name ? name : "?") + ":" + describe_type(mt.get());
        H5free_memory(name);
      }
      return s + "}";
    }
    default:
      return "HDF5 class " + std::to_string(static_cast<int>(H5Tget_class(t))) + " of " +
             std::to_string(size) + " bytes";
  }
}

template <class R>
bool real_matches(hid_t t) {
  if constexpr (std::is_floating_point_v<R>)
    return H5Tget_class(t) == H5T_FLOAT && H5Tget_size(t) == sizeof(R);
  else
    return H5Tget_class(t) == H5T_INTEGER && H5Tget_size(t) == sizeof(R) && H5Tget_sign(t) == H5T_SGN_2;
}

/// True when a dataset of file type `t` holds exactly T's values (byte order aside).
template <class T>
bool type_matches(hid_t t) {
  if constexpr (is_complex<T>::value) {
    using R = typename T::value_type;
    if (H5Tget_class(t) != H5T_COMPOUND || H5Tget_nmembers(t) != 2) return false;
    for (unsigned k = 0; k < 2; ++k) {
      char* name = H5Tget_member_name(t, k);
      const bool named = name && std::string(name) == (k == 0 ? "r" : "i");
      H5free_memory(name);
      Hid mt(H5Tget_member_type(t, k), H5Tclose);
      if (!named || !real_matches<R>(mt.get())) return false;
    }
    return true;
  } else {
    return real_matches<T>(t);
  }
}

inline bool link_exists(hid_t loc, const std::string& name) {
  // H5Lexists fails on a missing intermediate group: walk the path.
  std::string prefix;
  std::size_t pos = 0;
  while (pos <= name.size()) {
    const std::size_t slash = name.find('/', pos);
    const std::string part = name.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
    if (!part.empty()) {
      prefix += (prefix.empty() ? "" : "/") + part;
      if (H5Lexists(loc, prefix.c_str(), H5P_DEFAULT) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return false;
      }
    }
    if (slash == std::string::npos) break;
    pos = slash + 1;
  }
  return !prefix.empty();
}

inline Hid transfer_plist(Transfer t) {
  Hid p(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
#ifdef H5_HAVE_PARALLEL
  H5Pset_dxpl_mpio(p.get(), t == Transfer::collective ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT);
#else
  (void)t;  // File refuses to open without parallel HDF5; nothing gets here
#endif
  return p;
}

/// One rank's part of a transfer between a section of an array and a selection of a
/// dataset: the file hyperslab (ascending strides) and where those elements live in the
/// rank's window memory, in the same order. Pure index math.
template <std::size_t N>
struct Plan {
  bool empty = true;
  std::vector<hsize_t> fstart, fstride, fcount;  // file dims
  bool direct = true;                            // memory hyperslab over the padded block
  std::array<hsize_t, N> mdims{}, mstart{}, mstride{}, mcount{};
  Index n = 0;      // elements
  Index boff = 0;   // temp path: first element's offset in block memory ...
  Shape<N> bstr{};  // ... its signed strides, and
  Shape<N> cnt{};   // ... counts (in file order)
};

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

/// The plan for the elements of `sec` (array side) stored in `blk`, matched in order with
/// `fs` (file side, whose kept dimensions correspond to sec's kept dimensions).
template <std::size_t N>
Plan<N> make_plan(const Box<N>& blk, const Shape<N>& ghost, const Section<N>& sec, const FileSel& fs) {
  Plan<N> p;
  const std::size_t D = fs.start.size();
  p.fstart.assign(D, 0);
  p.fstride.assign(D, 1);
  p.fcount.assign(D, 0);
  if (blk.empty() || sec.size() == 0) return p;
  const gd::BlockLayout<N> lay = gd::block_layout(blk, ghost);
  std::array<Index, N> k0{}, k1{};
  for (std::size_t d = 0; d < N; ++d) {
    const auto r = gd::k_range(sec.start[d], sec.step[d], sec.count[d], blk.lo[d], blk.hi[d]);
    if (r[1] <= r[0]) return p;
    k0[d] = r[0];
    k1[d] = r[1];
  }
  // kept array dims in order <-> kept file dims in order
  std::vector<std::size_t> adims, fdims;
  for (std::size_t d = 0; d < N; ++d)
    if (!sec.dropped[d]) adims.push_back(d);
  for (std::size_t f = 0; f < D; ++f)
    if (!fs.dropped[f]) fdims.push_back(f);
  std::array<bool, N> rev{};
  for (std::size_t f = 0; f < D; ++f) {
    if (fs.dropped[f]) {
      p.fstart[f] = static_cast<hsize_t>(fs.start[f]);
      p.fcount[f] = 1;
    }
  }
  for (std::size_t j = 0; j < adims.size(); ++j) {
    const std::size_t d = adims[j], f = fdims[j];
    const Index a = k0[d], b = k1[d], st = fs.step[f];
    if (st > 0) {
      p.fstart[f] = static_cast<hsize_t>(fs.start[f] + a * st);
      p.fstride[f] = static_cast<hsize_t>(st);
    } else {
      p.fstart[f] = static_cast<hsize_t>(fs.start[f] + (b - 1) * st);
      p.fstride[f] = static_cast<hsize_t>(-st);
      rev[d] = true;
    }
    p.fcount[f] = static_cast<hsize_t>(b - a);
  }
  // Memory side, in the file's (ascending) order.
  Shape<N> first{}, mstep{};
  for (std::size_t d = 0; d < N; ++d) {
    const Index k = rev[d] ? k1[d] - 1 : k0[d];
    first[d] = sec.start[d] + k * sec.step[d];
    mstep[d] = rev[d] ? -sec.step[d] : sec.step[d];
    p.cnt[d] = k1[d] - k0[d];
    if (sec.dropped[d]) mstep[d] = 1;
    if (mstep[d] < 0) p.direct = false;
  }
  p.n = volume(p.cnt);
  p.empty = p.n == 0;
  p.boff = lay.offset(first);
  for (std::size_t d = 0; d < N; ++d) {
    p.bstr[d] = mstep[d] * lay.strides[d];
    const Index g = ghost[d];
    p.mdims[d] = static_cast<hsize_t>(blk.extent(d) + 2 * g);
    p.mstart[d] = static_cast<hsize_t>(first[d] - blk.lo[d] + g);
    p.mstride[d] = static_cast<hsize_t>(mstep[d] > 0 ? mstep[d] : 1);
    p.mcount[d] = static_cast<hsize_t>(p.cnt[d]);
  }
  return p;
}

/// Dataspaces for one rank's part: (file space with the selection, memory space).
template <std::size_t N>
std::pair<Hid, Hid> plan_spaces(hid_t dset, const Plan<N>& p) {
  Hid fsp(H5Dget_space(dset), H5Sclose);
  Hid msp;
  if (p.empty) {
    H5Sselect_none(fsp.get());
    const hsize_t one = 1;
    msp = Hid(H5Screate_simple(1, &one, nullptr), H5Sclose);
    H5Sselect_none(msp.get());
    return {std::move(fsp), std::move(msp)};
  }
  H5Sselect_hyperslab(fsp.get(), H5S_SELECT_SET, p.fstart.data(), p.fstride.data(), p.fcount.data(), nullptr);
  if (p.direct) {
    msp = Hid(H5Screate_simple(static_cast<int>(N), p.mdims.data(), nullptr), H5Sclose);
    H5Sselect_hyperslab(msp.get(), H5S_SELECT_SET, p.mstart.data(), p.mstride.data(), p.mcount.data(),
                        nullptr);
  } else {
    const hsize_t n = static_cast<hsize_t>(p.n);
    msp = Hid(H5Screate_simple(1, &n, nullptr), H5Sclose);
  }
  return {std::move(fsp), std::move(msp)};
}

/// Dense row-major strides over the plan's counts (the temporary's layout).
template <std::size_t N>
Shape<N> dense_strides(const Plan<N>& p) {
  return row_major_strides(p.cnt);
}

inline std::vector<hsize_t> to_hsize(const std::vector<Index>& v) {
  return std::vector<hsize_t>(v.begin(), v.end());
}

// ---- attributes (collective writes: every rank passes the same value) -------------------

inline void delete_attr_if(hid_t obj, const char* key) {
  if (H5Aexists(obj, key) > 0) H5Adelete(obj, key);
  H5Eclear2(H5E_DEFAULT);
}

/// Writes `n` values of native type `mt` as a 1-d (or scalar, n < 0) attribute. Returns
/// false on an HDF5 error.
inline bool put_attr(hid_t obj, const char* key, hid_t mt, const void* data, long n) {
  delete_attr_if(obj, key);
  Hid sp;
  if (n < 0) {
    sp = Hid(H5Screate(H5S_SCALAR), H5Sclose);
  } else {
    const hsize_t len = static_cast<hsize_t>(n);
    sp = Hid(H5Screate_simple(1, &len, nullptr), H5Sclose);
  }
  Hid at(H5Acreate2(obj, key, mt, sp.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!at.valid()) return false;
  return H5Awrite(at.get(), mt, data) >= 0;
}

inline bool put_string_attr(hid_t obj, const char* key, const std::string& v) {
  Hid st(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(st.get(), std::max<std::size_t>(1, v.size()));
  H5Tset_strpad(st.get(), H5T_STR_NULLPAD);
  H5Tset_cset(st.get(), H5T_CSET_UTF8);
  std::string buf = v;
  if (buf.empty()) buf.push_back('\0');
  return put_attr(obj, key, st.get(), buf.data(), -1);
}

inline bool put_index_attr(hid_t obj, const char* key, const std::vector<Index>& v) {
  const std::int64_t dummy = 0;
  return put_attr(obj, key, H5T_NATIVE_INT64, v.empty() ? &dummy : v.data(), static_cast<long>(v.size()));
}

/// Reads a string attribute (fixed or variable length). nullopt if absent or not a string.
inline std::optional<std::string> get_string_attr(hid_t obj, const char* key) {
  if (H5Aexists(obj, key) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  Hid at(H5Aopen(obj, key, H5P_DEFAULT), H5Aclose);
  Hid ft(H5Aget_type(at.get()), H5Tclose);
  Hid sp(H5Aget_space(at.get()), H5Sclose);
  if (H5Tget_class(ft.get()) != H5T_STRING || H5Sget_simple_extent_npoints(sp.get()) != 1)
    return std::nullopt;
  if (H5Tis_variable_str(ft.get()) > 0) {
    Hid mt(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mt.get(), H5T_VARIABLE);
    H5Tset_cset(mt.get(), H5Tget_cset(ft.get()));
    char* s = nullptr;
    if (H5Aread(at.get(), mt.get(), &s) < 0) return std::nullopt;
    std::string out(s ? s : "");
    H5free_memory(s);
    return out;
  }
  const std::size_t size = H5Tget_size(ft.get());
  std::string buf(size, '\0');
  Hid mt(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(mt.get(), size);
  H5Tset_strpad(mt.get(), H5T_STR_NULLPAD);
  H5Tset_cset(mt.get(), H5Tget_cset(ft.get()));
  if (H5Aread(at.get(), mt.get(), buf.data()) < 0) return std::nullopt;
  buf.resize(std::strlen(buf.c_str()));
  return buf;
}

/// Reads an integer vector attribute (any integer type, converted). nullopt if absent.
inline std::optional<std::vector<Index>> get_index_attr(hid_t obj, const char* key) {
  if (H5Aexists(obj, key) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  Hid at(H5Aopen(obj, key, H5P_DEFAULT), H5Aclose);
  Hid ft(H5Aget_type(at.get()), H5Tclose);
  Hid sp(H5Aget_space(at.get()), H5Sclose);
  if (H5Tget_class(ft.get()) != H5T_INTEGER) return std::nullopt;
  const hssize_t n = H5Sget_simple_extent_npoints(sp.get());
  std::vector<Index> v(static_cast<std::size_t>(std::max<hssize_t>(n, 0)));
  if (n > 0 && H5Aread(at.get(), H5T_NATIVE_INT64, v.data()) < 0) return std::nullopt;
  return v;
}

}  // namespace detail

class File;

/// A group of an open file (the file itself is the group "/"). Cheap to copy; keeps the
/// file open. All operations are **collective** over the file's context.
class Group {
 public:
  /// Local. The context the file was opened on.
  const Context& context() const noexcept { return file_->ctx; }
  /// Local. The file's name as given to File.
  const std::string& file_name() const noexcept { return file_->path; }
  /// Local. This group's path inside the file ("/" for the file).
  const std::string& path() const noexcept { return path_; }
  /// Local. The HDF5 identifier (for calls garray does not wrap).
  hid_t id() const noexcept { return gid_->get(); }
  /// Local. The mode the file was opened with.
  Mode mode() const noexcept { return file_->mode; }

  /// **Collective** (handshaked). Returns the existing group `name` (a path relative to
  /// this group), open on every rank. Throws FileError on every rank if there is none.
  Group group(const std::string& name) const { return open_group(name, false); }
  /// **Collective** (handshaked). Creates group `name` (and missing intermediate groups);
  /// opens it if it exists. Returns it, open on every rank. Throws FileError on a read-only
  /// file.
  Group create_group(const std::string& name) const { return open_group(name, true); }

  /// **Collective** (handshaked). True on every rank iff an object (dataset or group)
  /// `name` exists.
  bool contains(const std::string& name) const {
    const std::string what = "garray::io::contains";
    begin(what, detail::Sig(what).add(name).h, "object '" + name + "'", [] {});
    return detail::concluded(comm(), what, [&] { return detail::link_exists(id(), name); });
  }

  /// **Collective** (handshaked). Sets attribute `key` of the object `object` (relative to
  /// this group; "." is the group itself) to `value`: one of the element types or a string.
  /// Every rank must pass the same value (CollectiveMismatch otherwise). Replaces an existing
  /// one. On return the attribute is set (FileError on every rank if HDF5 failed).
  template <class V>
  void set_attribute(const std::string& key, const V& value, const std::string& object = ".") const {
    constexpr bool is_string = std::is_convertible_v<const V&, std::string_view>;
    static_assert(is_string || Element<V>, "garray::io: attributes are element types or strings");
    const std::string what = "garray::io::set_attribute";
    detail::Sig sig(what);
    sig.add(key).add(object);
    if constexpr (is_string) {
      sig.add(std::string_view(value));
    } else {
      sig.add(static_cast<std::uint64_t>(gd::type_code<V>()));
      sig.h = gd::value_hash(sig.h, value);
    }
    begin(what, sig.h, where(object) + " attribute '" + key + "'", [&] {
      if (key.empty()) gd::raise<InvalidArgument>(what, ": empty attribute name");
      writable(what);
    });
    gd::run_concluded(comm(), what, [&] {
      detail::silence_hdf5();
      detail::Hid obj = open_object(object, what);
      bool ok;
      if constexpr (is_string) {
        ok = detail::put_string_attr(obj.get(), key.c_str(), std::string(std::string_view(value)));
      } else {
        detail::Hid t = detail::h5_type<V>();
        ok = detail::put_attr(obj.get(), key.c_str(), t.get(), &value, -1);
      }
      gd::fault_point("io.attribute");  // after the HDF5 calls, which every rank must make
      if (!ok)
        gd::raise<FileError>(what, ": cannot write attribute '", key, "' of ", where(object), ": ",
                             detail::hdf5_message());
    });
  }

  /// **Collective** (handshaked). Returns, on every rank, attribute `key` of `object` as V (an element type, converted by
  /// HDF5 between numeric types of the same kind, or std::string). Throws FileError if it
  /// is missing, TypeMismatch if it does not hold a V.
  template <class V>
  V attribute(const std::string& key, const std::string& object = ".") const {
    constexpr bool is_string = std::is_same_v<V, std::string>;
    static_assert(is_string || Element<V>, "garray::io: attributes are element types or strings");
    const std::string what = "garray::io::attribute";
    begin(what,
          detail::Sig(what)
              .add(key)
              .add(object)
              .add(static_cast<std::uint64_t>(is_string ? 0 : gd::type_code<V>()))
              .h,
          where(object) + " attribute '" + key + "'", [] {});
    return detail::concluded(comm(), what, [&]() -> V {
      detail::silence_hdf5();
      detail::Hid obj = open_object(object, what);
      if (H5Aexists(obj.get(), key.c_str()) <= 0)
        gd::raise<FileError>(what, ": ", where(object), " has no attribute '", key, "'");
      detail::Hid at(H5Aopen(obj.get(), key.c_str(), H5P_DEFAULT), H5Aclose);
      detail::Hid ft(H5Aget_type(at.get()), H5Tclose);
      detail::Hid sp(H5Aget_space(at.get()), H5Sclose);
      if constexpr (is_string) {
        auto s = detail::get_string_attr(obj.get(), key.c_str());
        if (!s)
          gd::raise<TypeMismatch>(what, ": attribute '", key, "' of ", where(object), " is ",
                                  detail::describe_type(ft.get()), ", not a string");
        return *s;
      } else {
        const auto cls = H5Tget_class(ft.get());
        bool ok = H5Sget_simple_extent_npoints(sp.get()) == 1;
        if constexpr (detail::is_complex<V>::value)
          ok = ok && detail::type_matches<V>(ft.get());
        else if constexpr (std::is_floating_point_v<V>)
          ok = ok && (cls == H5T_FLOAT || cls == H5T_INTEGER);
        else
          ok = ok && cls == H5T_INTEGER;
        if (!ok)
          gd::raise<TypeMismatch>(
              what, ": attribute '", key, "' of ", where(object), " is ", detail::describe_type(ft.get()),
              " with ", H5Sget_simple_extent_npoints(sp.get()), " value(s), not one ", type_name<V>());
        V v{};
        detail::Hid mt = detail::h5_type<V>();
        if (H5Aread(at.get(), mt.get(), &v) < 0)
          gd::raise<FileError>(what, ": cannot read attribute '", key, "' of ", where(object), ": ",
                               detail::hdf5_message());
        return v;
      }
    });
  }

  // ---- for the free functions below (not part of the user interface) -------------------
  /// Local; for garray's own calls. The communicator of the file's context.
  MPI_Comm comm() const noexcept { return file_->ctx.comm(); }
  /// Local; for garray's own calls. "file 'x.h5', object '/g/u'" (or the group itself for
  /// ".") for messages.
  std::string where(const std::string& name) const {
    return name == "." ? detail::cat("file '", file_->path, "', group '", path_, "'")
                       : detail::cat("file '", file_->path, "', object '", child_path(name), "'");
  }
  /// Local; for garray's own calls. "file 'x.h5', dataset '/g/u'" for messages.
  std::string dataset_where(const std::string& name) const {
    return detail::cat("file '", file_->path, "', dataset '", child_path(name), "'");
  }
  /// **Collective**; for garray's own calls. The handshake every call starts with: local
  /// checks (`check`, and that the file is open), then one agreement on the signature (which
  /// includes the file and group). Returns on every rank only if every rank's checks passed
  /// and the signatures agree; otherwise throws on every rank.
  template <class Check>
  void begin(const std::string& what, std::uint64_t sig, const std::string& args, Check&& check,
             const gd::Window* win = nullptr) const {
    detail::Sig s(what);
    s.h = gd::hash_mix(sig, gd::hash_string(file_->path));
    s.add(path_);
    std::exception_ptr err;
    try {
      if (file_->fid < 0) gd::raise<FileError>(what, ": file '", file_->path, "' is closed");
      check();
    } catch (const Error&) {
      err = std::current_exception();
    }
    const gd::Window* wins[1] = {win};
    detail::handshake(file_->ctx, s.h, what, where(".") + ", " + args, err,
                      std::span<const gd::Window* const>(wins, win ? 1 : 0));
  }
  /// Local; for garray's own calls. Throws FileError naming `what` if the file is read-only.
  void writable(std::string_view what) const {
    if (file_->mode == Mode::read_only)
      gd::raise<FileError>(what, ": file '", file_->path, "' is open read-only");
  }
  /// Collective in effect (HDF5 with collective metadata: every rank must make the same
  /// calls); for garray's own calls. Opens `object` ("." is this group). Throws FileError if
  /// it does not exist.
  detail::Hid open_object(const std::string& object, std::string_view what) const {
    if (object == ".") return detail::Hid(H5Oopen(id(), ".", H5P_DEFAULT), H5Oclose);
    if (!detail::link_exists(id(), object))
      gd::raise<FileError>(what, ": ", where(object), " does not exist");
    detail::Hid o(H5Oopen(id(), object.c_str(), H5P_DEFAULT), H5Oclose);
    if (!o.valid()) gd::raise<FileError>(what, ": cannot open ", where(object), ": ", detail::hdf5_message());
    return o;
  }
  /// Local; for garray's own calls. The path of `name` inside the file.
  std::string child_path(const std::string& name) const {
    return detail::cat(path_ == "/" ? "" : path_, "/", name);
  }

 protected:
  /// Local. No file (File's constructor fills it in).
  Group() = default;
  /// Local. The group `path` with HDF5 handle `g` of the open file `f`.
  Group(std::shared_ptr<detail::FileState> f, std::shared_ptr<detail::Hid> g, std::string path)
      : file_(std::move(f)), gid_(std::move(g)), path_(std::move(path)) {}

  /// **Collective** (handshaked). group() (`create` false) or create_group() (`create` true).
  Group open_group(const std::string& name, bool create) const {
    const std::string what = create ? "garray::io::create_group" : "garray::io::group";
    begin(what, detail::Sig(what).add(name).h, "group '" + name + "'", [&] {
      if (name.empty()) gd::raise<InvalidArgument>(what, ": empty group name");
      if (create) writable(what);
    });
    auto g = detail::concluded(comm(), what, [&] {
      detail::silence_hdf5();
      const bool exists = detail::link_exists(id(), name);
      if (!exists && !create) gd::raise<FileError>(what, ": ", where(name), " does not exist");
      hid_t h;
      if (exists) {
        h = H5Gopen2(id(), name.c_str(), H5P_DEFAULT);
      } else {
        detail::Hid lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
        H5Pset_create_intermediate_group(lcpl.get(), 1);
        h = H5Gcreate2(id(), name.c_str(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT);
      }
      if (h < 0) gd::raise<FileError>(what, ": cannot open ", where(name), ": ", detail::hdf5_message());
      return std::make_shared<detail::Hid>(h, H5Gclose);
    });
    return Group(file_, std::move(g), child_path(name));
  }

  std::shared_ptr<detail::FileState> file_;  ///< the open file; the last handle closes it (collective)
  std::shared_ptr<detail::Hid> gid_;         ///< this group's HDF5 handle
  std::string path_ = "/";                   ///< this group's path inside the file
  friend class File;
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
  File(const Context& ctx, const std::string& path, Mode mode = Mode::read_only) {
    const std::string what = "garray::io::File";
    const char* mode_names[] = {"create", "read_write", "read_only"};
    detail::Sig sig(what);
    sig.add(path).add(static_cast<std::uint64_t>(mode));
    std::exception_ptr err;
    try {
#ifndef H5_HAVE_PARALLEL
      gd::raise<FileError>(what, ": file '", path,
                           "': this HDF5 is built without MPI (parallel HDF5 needed)");
#endif
      if (path.empty()) gd::raise<InvalidArgument>(what, ": empty file name");
    } catch (const Error&) {
      err = std::current_exception();
    }
    detail::handshake(ctx, sig.h, what, "file '" + path + "', mode " + mode_names[static_cast<int>(mode)],
                      err);
    auto st = std::make_shared<detail::FileState>(ctx, path, mode);
    std::shared_ptr<detail::Hid> root;  // declared after st: on a throw it closes first
    gd::run_concluded(ctx.comm(), what, [&] {
      detail::silence_hdf5();
      detail::Hid fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
#ifdef H5_HAVE_PARALLEL
      H5Pset_fapl_mpio(fapl.get(), ctx.comm(), MPI_INFO_NULL);
      H5Pset_all_coll_metadata_ops(fapl.get(), true);  // metadata reads: rank 0 reads, broadcasts
      H5Pset_coll_metadata_write(fapl.get(), true);    // metadata writes: one collective write
#endif
      if (mode == Mode::create)
        st->fid = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get());
      else
        st->fid = H5Fopen(path.c_str(), mode == Mode::read_only ? H5F_ACC_RDONLY : H5F_ACC_RDWR, fapl.get());
      if (st->fid < 0)
        gd::raise<FileError>(what, ": cannot ", mode == Mode::create ? "create" : "open", " file '", path,
                             "' (", mode_names[static_cast<int>(mode)], "): ", detail::hdf5_message());
      const hid_t g = H5Gopen2(st->fid, "/", H5P_DEFAULT);
      if (g < 0)
        gd::raise<FileError>(what, ": file '", path,
                             "': cannot open its root group: ", detail::hdf5_message());
      root = std::make_shared<detail::Hid>(g, H5Gclose);
      gd::fault_point("io.open");  // after the collective open: every rank closes it again
    });
    gid_ = std::move(root);
    file_ = std::move(st);
    path_ = "/";
  }
  File(const File&) = delete;             ///< Not copyable.
  File& operator=(const File&) = delete;  ///< Not copyable.
  /// Local. Takes over the other File's handle on its file.
  File(File&&) noexcept = default;
  /// Local. Takes over the other File's handle on its file (dropping this one's: if it was
  /// the last handle on its file, that closes it, which is collective).
  File& operator=(File&&) noexcept = default;
  /// Local, except that the last handle on the file (File or Group) closes it, which is
  /// **Collective**: every rank destroys its handles together. Never throws.
  ~File() = default;

  /// Local. True until close().
  bool is_open() const noexcept { return file_ && file_->fid >= 0; }

  /// **Collective** (handshaked). Writes HDF5's buffers to the file system (H5Fflush,
  /// global scope); on return they are written. FileError on every rank if HDF5 fails.
  void flush() const {
    const std::string what = "garray::io::File::flush";
    begin(what, detail::Sig(what).h, "flush", [] {});
    gd::run_concluded(comm(), what, [&] {
      const herr_t rc = H5Fflush(file_->fid, H5F_SCOPE_GLOBAL);
      gd::fault_point("io.flush");  // after the (collective) flush
      if (rc < 0)
        gd::raise<FileError>(what, ": cannot flush file '", file_->path, "': ", detail::hdf5_message());
    });
  }

  /// **Collective** (handshaked). Closes the file: on return it is complete on disk (as far as the file
  /// system goes) on every rank. Throws InvalidArgument if Groups of it are still alive,
  /// FileError if HDF5 fails.
  void close() {
    const std::string what = "garray::io::File::close";
    begin(what, detail::Sig(what).h, "close", [&] {
      if (file_.use_count() != 1 || gid_.use_count() != 1)
        gd::raise<InvalidArgument>(what, ": file '", file_->path, "' still has ", file_.use_count() - 1,
                                   " open group handle(s)");
    });
    gd::run_concluded(comm(), what, [&] {
      gid_.reset();
      const herr_t rc = H5Fclose(file_->fid);
      file_->fid = H5I_INVALID_HID;
      gd::fault_point("io.close");
      if (rc < 0)
        gd::raise<FileError>(what, ": cannot close file '", file_->path, "': ", detail::hdf5_message());
    });
  }
};

namespace detail {

/// Checks the arguments every array call shares (on this rank). Throws.
inline void check_target(const Group& loc, const Context& ctx, const std::string& name,
                         std::string_view what) {
  if (loc.comm() != ctx.comm())
    gd::raise<InvalidArgument>(what, ": the array lives on another context than ", loc.where("."),
                               " (open the file on the array's context)");
  if (name.empty()) gd::raise<InvalidArgument>(what, ": empty dataset name");
}

template <Element T, std::size_t N>
std::string call_name(std::string_view fn) {
  return cat("garray::io::", fn, "<", type_name<T>(), ",", N, ">");
}

/// Records the layout attributes of an array on dataset `dset`. Returns false on an HDF5
/// error.
template <std::size_t N>
bool put_layout(hid_t dset, const Distribution<N>& dist, const Shape<N>& ghost) {
  const char* kinds[] = {"blocked", "slab", "grid", "irregular", "replicated"};
  bool ok = put_string_attr(dset, "garray_distribution", kinds[static_cast<int>(dist.kind())]);
  std::vector<Index> procs, starts, g;
  for (std::size_t d = 0; d < N; ++d) {
    procs.push_back(dist.procs()[d]);
    const auto& b = dist.bounds(d);
    starts.insert(starts.end(), b.begin(), b.end() - 1);
    g.push_back(ghost[d]);
  }
  ok = ok && put_index_attr(dset, "garray_process_grid", procs);
  ok = ok && put_index_attr(dset, "garray_block_starts", starts);
  ok = ok && put_index_attr(dset, "garray_ghost", g);
  return ok;
}

/// The collective write of `sec` of `a` (kept dims = dataset dims) as dataset `name`.
template <Element T, std::size_t N>
void write_section(const Group& loc, const std::string& name, GlobalArray<T, N>& a, const Section<N>& sec,
                   bool whole, const WriteOptions& o, const std::string& what) {
  const Context& ctx = a.context();
  std::vector<Index> dims;
  for (std::size_t d = 0; d < N; ++d)
    if (!sec.dropped[d]) dims.push_back(sec.count[d]);
  Sig sig(what);
  sig.add(name).add(static_cast<std::uint64_t>(gd::type_code<T>())).seq(dims).add(a.id()).seq(o.chunk);
  sig.h = gd::section_hash(sig.h, sec);
  sig.add(static_cast<std::uint64_t>(o.transfer)).add(o.overwrite ? 1u : 0u);
  const std::string ds = loc.dataset_where(name);
  loc.begin(
      what, sig.h,
      cat("dataset '", name, "', type ", type_name<T>(), ", shape ", gd::seq(dims), ", section ", sec,
          ", chunk ", gd::seq(o.chunk)),
      [&] {
        check_target(loc, ctx, name, what);
        loc.writable(what);
        if (dims.empty()) gd::raise<InvalidArgument>(what, ": ", ds, ": a 0-d selection cannot be written");
        if (!o.chunk.empty()) {
          if (o.chunk.size() != dims.size())
            gd::raise<InvalidArgument>(what, ": ", ds, ": chunk ", gd::seq(o.chunk), " has ", o.chunk.size(),
                                       " extents for a ", dims.size(), "-d dataset");
          for (auto c : o.chunk)
            if (c < 1)
              gd::raise<InvalidArgument>(what, ": ", ds, ": chunk ", gd::seq(o.chunk), " has an extent < 1");
        }
      },
      &garray::detail::ArrayAccess::window(
          a));  // every rank's outstanding puts complete (as sync()) before the handshake's barrier

  // This rank's part. A replicated array is written by rank 0's copy alone.
  const bool mine = !(a.distribution().is_replicated() && ctx.rank() != 0);
  const Plan<N> plan = make_plan(mine ? a.local_box() : Box<N>{}, a.ghost(), sec, FileSel::full(dims));
  std::unique_ptr<T[]> tmp;
  Hid ftype, space, dcpl, lcpl, dxpl;
  bool exists = false;
  gd::run_concluded(loc.comm(), what, [&] {
    silence_hdf5();
    exists = link_exists(loc.id(), name);
    if (exists && !o.overwrite)
      gd::raise<FileError>(what, ": ", ds,
                           " already exists (pass WriteOptions{.overwrite = true} to replace it)");
    if (!plan.empty && !plan.direct) tmp.reset(new T[static_cast<std::size_t>(plan.n)]);
    ftype = h5_type<T>();
    const auto hd = to_hsize(dims);
    space = Hid(H5Screate_simple(static_cast<int>(hd.size()), hd.data(), nullptr), H5Sclose);
    dcpl = Hid(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    bool nonzero = true;
    for (auto e : dims) nonzero = nonzero && e > 0;
    if (!o.chunk.empty() && nonzero) {
      std::vector<hsize_t> ch;
      for (std::size_t k = 0; k < dims.size(); ++k)
        ch.push_back(static_cast<hsize_t>(std::min(o.chunk[k], dims[k])));
      H5Pset_chunk(dcpl.get(), static_cast<int>(ch.size()), ch.data());
    }
    H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER);  // every element is written
    lcpl = Hid(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
    H5Pset_create_intermediate_group(lcpl.get(), 1);
    dxpl = transfer_plist(o.transfer);
    if (!space.valid() || !dcpl.valid() || !dxpl.valid())
      gd::raise<FileError>(what, ": ", ds, ": cannot set up the write: ", hdf5_message());
    gd::fault_point("io.write.prepare");
  });

  // The HDF5 calls every rank makes (metadata operations are collective in parallel HDF5).
  std::string err;
  Index total = 1;
  for (auto e : dims) total *= e;
  if (exists && H5Ldelete(loc.id(), name.c_str(), H5P_DEFAULT) < 0)
    err = "cannot remove the old dataset: " + hdf5_message();
  Hid dset;
  if (err.empty()) {
    dset =
        Hid(H5Dcreate2(loc.id(), name.c_str(), ftype.get(), space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT),
            H5Dclose);
    if (!dset.valid()) err = "cannot create it: " + hdf5_message();
  }
  if (err.empty()) {
    bool ok = put_string_attr(dset.get(), "garray_type", std::string(numpy_name<T>()));
    ok = ok && put_index_attr(dset.get(), "garray_shape", dims);
    if (whole) ok = ok && put_layout(dset.get(), a.distribution(), a.ghost());
    if (!ok) err = "cannot write its layout attributes: " + hdf5_message();
  }
  if (err.empty()) {
    auto blk = a.access();
    const T* base = blk.data();
    const void* buf = base;
    T dummy{};
    if (plan.empty) {
      buf = &dummy;
    } else if (!plan.direct) {
      gd::strided_copy(gd::collapse(plan.cnt, dense_strides(plan), plan.bstr), tmp.get(), base + plan.boff);
      buf = tmp.get();
    }
    auto [fsp, msp] = plan_spaces(dset.get(), plan);
    // A dataset without elements has no storage to write (every rank knows the shape).
    if (total > 0 && H5Dwrite(dset.get(), ftype.get(), msp.get(), fsp.get(), dxpl.get(), buf) < 0)
      err = "H5Dwrite failed: " + hdf5_message();
  }
  dset.reset();
  gd::run_concluded(loc.comm(), what, [&] {
    gd::fault_point("io.write");
    if (!err.empty()) gd::raise<FileError>(what, ": ", ds, ": ", err);
  });
}

/// Opens dataset `name` and checks its type and shape against T and `want` (the file-side
/// shape a read needs; empty to skip the shape check). Throws on this rank.
template <Element T>
Hid open_checked(const Group& loc, const std::string& name, const std::vector<Index>* want,
                 std::string_view what, std::vector<Index>* shape_out = nullptr) {
  const std::string ds = loc.dataset_where(name);
  if (!link_exists(loc.id(), name)) gd::raise<FileError>(what, ": ", ds, " does not exist");
  {
    Hid obj(H5Oopen(loc.id(), name.c_str(), H5P_DEFAULT), H5Oclose);
    if (!obj.valid()) gd::raise<FileError>(what, ": cannot open ", ds, ": ", hdf5_message());
    if (H5Iget_type(obj.get()) != H5I_DATASET) gd::raise<FileError>(what, ": ", ds, " is not a dataset");
  }
  Hid dset(H5Dopen2(loc.id(), name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!dset.valid()) gd::raise<FileError>(what, ": cannot open ", ds, ": ", hdf5_message());
  Hid ft(H5Dget_type(dset.get()), H5Tclose);
  if (!type_matches<T>(ft.get()))
    gd::raise<TypeMismatch>(what, ": ", ds, " holds ", describe_type(ft.get()), ", the array holds ",
                            type_name<T>(), " (", numpy_name<T>(), ")");
  Hid sp(H5Dget_space(dset.get()), H5Sclose);
  const int nd = H5Sget_simple_extent_ndims(sp.get());
  std::vector<hsize_t> hd(static_cast<std::size_t>(std::max(nd, 0)));
  if (nd > 0) H5Sget_simple_extent_dims(sp.get(), hd.data(), nullptr);
  std::vector<Index> shape(hd.begin(), hd.end());
  if (want && shape != *want)
    gd::raise<SizeMismatch>(what, ": ", ds, " has shape ", gd::seq(shape), ", the ",
                            want->size() == shape.size() ? "destination" : "destination (rank differs)",
                            " has shape ", gd::seq(*want));
  if (shape_out) *shape_out = shape;
  return dset;
}

/// The collective read of dataset `name` (selection `fs` of it; the whole dataset if
/// `fs_items` is null) into section `sec` of `a`.
template <Element T, std::size_t N>
void read_section(const Group& loc, const std::string& name, GlobalArray<T, N>& a, const Section<N>& sec,
                  const std::optional<FileSel>& fsel, const std::vector<Index>& file_shape_for_slice,
                  const ReadOptions& o, const std::string& what) {
  const Context& ctx = a.context();
  std::vector<Index> dims;
  for (std::size_t d = 0; d < N; ++d)
    if (!sec.dropped[d]) dims.push_back(sec.count[d]);
  Sig sig(what);
  sig.add(name).add(static_cast<std::uint64_t>(gd::type_code<T>())).seq(dims).add(a.id());
  sig.h = gd::section_hash(sig.h, sec);
  sig.add(static_cast<std::uint64_t>(o.transfer));
  if (fsel)
    sig.seq(fsel->start).seq(fsel->step).seq(fsel->count).seq(fsel->dropped).seq(file_shape_for_slice);
  const std::string ds = loc.dataset_where(name);
  loc.begin(
      what, sig.h,
      cat("dataset '", name, "', type ", type_name<T>(), ", shape ", gd::seq(dims), ", section ", sec),
      [&] { check_target(loc, ctx, name, what); },
      &garray::detail::ArrayAccess::window(
          a));  // as sync(): nobody's puts to my block are in flight when the file data lands

  const FileSel fs = fsel ? *fsel : FileSel::full(dims);
  const Plan<N> plan = make_plan(a.local_box(), a.ghost(), sec, fs);
  const std::vector<Index> want = fsel ? file_shape_for_slice : dims;
  std::unique_ptr<T[]> tmp;
  Hid dset, mtype, dxpl;
  gd::run_concluded(loc.comm(), what, [&] {
    silence_hdf5();
    dset = open_checked<T>(loc, name, &want, what);
    mtype = h5_type<T>();
    dxpl = transfer_plist(o.transfer);
    if (!plan.empty && !plan.direct) tmp.reset(new T[static_cast<std::size_t>(plan.n)]);
    gd::fault_point("io.read.prepare");
  });
  std::string err;
  {
    auto blk = a.access();
    T* base = blk.data();
    T dummy{};
    void* buf = plan.empty ? static_cast<void*>(&dummy) : plan.direct ? static_cast<void*>(base) : tmp.get();
    auto [fsp, msp] = plan_spaces(dset.get(), plan);
    if (sec.size() > 0 && H5Dread(dset.get(), mtype.get(), msp.get(), fsp.get(), dxpl.get(), buf) < 0)
      err = "H5Dread failed: " + hdf5_message();
  }
  dset.reset();
  gd::run_concluded(loc.comm(), what, [&] {
    gd::fault_point("io.read");
    if (!err.empty()) gd::raise<FileError>(what, ": ", ds, ": ", err);
  });
  // Whether any rank goes through a temporary is a property of the selection, the same on
  // every rank: a kept dimension whose array step and file step have opposite signs.
  bool reversed = false;
  for (std::size_t d = 0, f = 0; d < N; ++d) {
    if (sec.dropped[d]) continue;
    while (fs.dropped[f]) ++f;
    reversed = reversed || (sec.step[d] < 0) != (fs.step[f] < 0);
    ++f;
  }
  if (reversed) {
    if (!plan.empty && !plan.direct) {
      auto blk = a.access();
      gd::strided_copy(gd::collapse(plan.cnt, plan.bstr, dense_strides(plan)), blk.data() + plan.boff,
                       tmp.get());
    }
    a.sync();  // everyone's new elements visible everywhere
  } else {
    garray::detail::ArrayAccess::window(a).memory_sync();  // the conclude above was the barrier after everyone's read
  }
}

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
  detail::write_section(loc, name, a, Section<N>::full(a.shape()), true, o, detail::call_name<T, N>("write"));
}

/// **Collective** over the file's context (which must be the view's array's). Writes the
/// view's section as dataset `name` of the view's shape (element k of the dataset is view
/// element k). Layout attributes: type and shape only. Completes every rank's outstanding
/// operations on the array first; on return the dataset holds the view's elements. Throws
/// as the whole-array write.
template <Element T, std::size_t N, std::size_t M>
void write(const Group& loc, const std::string& name, const View<T, N, M>& v, const WriteOptions& o = {}) {
  static_assert(M >= 1, "garray::io::write: a 0-d view is a value, not a dataset");
  garray::detail::join_if_stale("garray::io::write", v);
  detail::write_section(loc, name, v.array(), v.section(), false, o, detail::call_name<T, N>("write"));
}

/// **Collective** over the file's context (which must be the array's). Reads dataset
/// `name` into `a` (any distribution, any rank count). The
/// dataset must have a's shape and element type (SizeMismatch / TypeMismatch otherwise,
/// naming file, dataset and both values, thrown on every rank before any element changes).
/// On return the array is consistent everywhere (as after sync()).
template <Element T, std::size_t N>
void read(const Group& loc, const std::string& name, GlobalArray<T, N>& a, const ReadOptions& o = {}) {
  detail::read_section(loc, name, a, Section<N>::full(a.shape()), std::nullopt, {}, o,
                       detail::call_name<T, N>("read"));
}

/// **Collective** over the file's context. Reads dataset `name` (shape = the view's shape)
/// into the view; on return the view's elements are the dataset's, consistent everywhere
/// (as after sync()). Throws as the whole-array read.
template <Element T, std::size_t N, std::size_t M>
void read(const Group& loc, const std::string& name, const View<T, N, M>& v, const ReadOptions& o = {}) {
  static_assert(M >= 1, "garray::io::read: a 0-d view is a value, not a dataset");
  garray::detail::join_if_stale("garray::io::read", v);
  detail::read_section(loc, name, v.array(), v.section(), std::nullopt, {}, o,
                       detail::call_name<T, N>("read"));
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
  const std::string what = detail::call_name<T, N>("read");
  // The dataset's shape, to normalise the slice: a small collective query of its own.
  std::vector<Index> fshape;
  loc.begin(what + " (shape query)", detail::Sig(what).add(name).h, "dataset '" + name + "'", [] {});
  fshape = detail::concluded(loc.comm(), what, [&] {
    detail::silence_hdf5();
    std::vector<Index> s;
    detail::open_checked<T>(loc, name, nullptr, what, &s);
    if (s.size() != K)
      gd::raise<SizeMismatch>(what, ": ", loc.dataset_where(name), " has ", s.size(),
                              " dimensions; the file selection gives ", K, " items (one per dimension)");
    return s;
  });
  Shape<K> fs{};
  for (std::size_t d = 0; d < K; ++d) fs[d] = fshape[d];
  const Section<K> fsec = normalize(fs, file_slice, what);
  detail::FileSel sel;
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
  garray::detail::join_if_stale(what, v);
  detail::read_section(loc, name, v.array(), v.section(), sel, fshape, o, what);
}

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

/// **Collective** (handshaked). Returns, on every rank, the shape, type and recorded layout
/// of dataset `name`. Throws FileError on every rank if it does not exist.
inline DatasetInfo info(const Group& loc, const std::string& name) {
  const std::string what = "garray::io::info";
  loc.begin(what, detail::Sig(what).add(name).h, "dataset '" + name + "'", [] {});
  return detail::concluded(loc.comm(), what, [&] {
    detail::silence_hdf5();
    const std::string ds = loc.dataset_where(name);
    if (!detail::link_exists(loc.id(), name)) gd::raise<FileError>(what, ": ", ds, " does not exist");
    detail::Hid dset(H5Dopen2(loc.id(), name.c_str(), H5P_DEFAULT), H5Dclose);
    if (!dset.valid()) gd::raise<FileError>(what, ": cannot open ", ds, ": ", detail::hdf5_message());
    DatasetInfo r;
    detail::Hid sp(H5Dget_space(dset.get()), H5Sclose);
    const int nd = H5Sget_simple_extent_ndims(sp.get());
    std::vector<hsize_t> hd(static_cast<std::size_t>(std::max(nd, 0)));
    if (nd > 0) H5Sget_simple_extent_dims(sp.get(), hd.data(), nullptr);
    r.shape.assign(hd.begin(), hd.end());
    detail::Hid ft(H5Dget_type(dset.get()), H5Tclose);
    r.type = detail::get_string_attr(dset.get(), "garray_type").value_or(detail::describe_type(ft.get()));
    r.distribution = detail::get_string_attr(dset.get(), "garray_distribution").value_or("");
    r.process_grid = detail::get_index_attr(dset.get(), "garray_process_grid").value_or(std::vector<Index>{});
    r.block_starts = detail::get_index_attr(dset.get(), "garray_block_starts").value_or(std::vector<Index>{});
    r.ghost = detail::get_index_attr(dset.get(), "garray_ghost").value_or(std::vector<Index>{});
    return r;
  });
}

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
  const std::string what = detail::call_name<T, N>("read_array");
  const DatasetInfo inf = info(loc, name);
  if (inf.shape.size() != N)
    gd::raise<SizeMismatch>(what, ": ", loc.dataset_where(name), " has ", inf.shape.size(),
                            " dimensions, not ", N);
  Shape<N> shape{};
  for (std::size_t d = 0; d < N; ++d) shape[d] = inf.shape[d];
  auto a = gd::make_overwritten<T, N>(loc.context(), shape, dist, ghost);
  read(loc, name, a);
  return a;
}

/// **Collective** over the file's context. Returns a new array holding dataset `name` in the
/// layout its writer recorded (the
/// same blocks and ghost width; InvalidArgument if that needs more ranks than the context
/// has: pass a distribution then). Datasets without a recorded layout get blocked().
template <Element T, std::size_t N>
GlobalArray<T, N> read_array(const Group& loc, const std::string& name) {
  const std::string what = detail::call_name<T, N>("read_array");
  const DatasetInfo inf = info(loc, name);
  Shape<N> ghost{};
  if (inf.ghost.size() == N)
    for (std::size_t d = 0; d < N; ++d) ghost[d] = inf.ghost[d];
  return read_array<T, N>(loc, name, recorded_distribution<N>(inf, what), ghost);
}

}  // namespace garray::io
