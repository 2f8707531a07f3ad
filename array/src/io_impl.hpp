#pragma once
// The implementation of garray::io (array/include/garray/array/io.hpp), compiled into
// garray_io (issue 17): everything that touches HDF5. Not installed; included by
// array/src/io.cpp (the non-template parts) and the per-type instantiation units generated
// from array/src/io_instantiate.cpp.in (write/read/read_array for one element type at 1-4
// dimensions and the attribute accessors of that type).

#include <hdf5.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <garray/array/box.hpp>
#include <garray/array/detail/transfer_plan.hpp>
#include <garray/array/distribution.hpp>
#include <garray/array/global_array.hpp>
#include <garray/array/io.hpp>
#include <garray/array/movement.hpp>
#include <garray/array/slice.hpp>
#include <garray/array/view.hpp>
#include <garray/runtime/context.hpp>
#include <garray/runtime/datatype.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/fault.hpp>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

// The public header spells HDF5's handle types without <hdf5.h>.
static_assert(std::is_same_v<hid_t, std::int64_t>, "garray::io: hid_t is int64_t (HDF5 1.10 and later)");
static_assert(std::is_same_v<herr_t, int>, "garray::io: herr_t is int");
static_assert(H5I_INVALID_HID == garray::io::detail::invalid_hid, "garray::io: H5I_INVALID_HID is -1");

namespace garray::io::detail {


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

/// The files of a context whose last handle was dropped while some rank unwound, left open
/// (io.cpp): how many, and a hash of their names, for the handshake of the context's next io
/// call, which then closes them (close_deferred) on every rank.
struct DeferredSig {
  std::uint64_t h = 0;
  std::size_t count = 0;
};
DeferredSig deferred_signature(std::uint64_t context);
/// Closes the files left open on the context with this serial (collective over it).
void close_deferred(std::uint64_t context);
/// ", 1 file(s) left open while a rank unwound" for a handshake's description ("" if none).
inline std::string deferred_note(const DeferredSig& d) {
  return d.count == 0 ? std::string()
                      : ", " + std::to_string(d.count) + " file(s) left open while a rank unwound";
}

/// The front of every io collective: the handshake every garray collective uses
/// (detail::agree_with_errors: ONE allreduce of the call's signature, all arguments, and of
/// this rank's local outcome `err`), so an io call on one rank meets any other collective,
/// or a stale view's handshake (join_if_stale), on another and every rank throws. A rank
/// whose checks failed rethrows its error and the others throw CollectiveMismatch carrying
/// its message; signatures that differ: CollectiveMismatch everywhere; a rank that could
/// not complete its operations on `wins`: its error, CollectiveFailure elsewhere. `wins`:
/// windows whose outstanding operations complete first (the allreduce then doubles as
/// sync()'s barrier). The signature also covers the files left open on the context
/// (deferred_signature), which are closed on every rank once the ranks agreed.
inline void handshake(const Context& ctx, std::uint64_t sig, std::string_view what, const std::string& args,
                      std::exception_ptr err, std::span<const gd::Window* const> wins = {}) {
  const std::uint64_t serial = ctx.serial();
  const DeferredSig left = deferred_signature(serial);
  sig = gd::hash_mix(sig, left.h);
  gd::LocalFault fault = err ? gd::LocalFault::invalid : gd::LocalFault::none;
  try {
    for (const gd::Window* w : wins) {
      w->complete_all();
      w->memory_sync();
    }
  } catch (const Error&) {
    if (!err) {
      err = std::current_exception();
      fault = gd::LocalFault::failed;
    }
  }
  const gd::Agreement a = gd::agree_with_errors(ctx.comm(), sig, fault);
  gd::throw_if_disagreed(ctx.comm(), a, err, what, args + deferred_note(left));  // (first: every rank takes part in its broadcast)
  if (left.count > 0) close_deferred(serial);  // before the call opens or touches anything
  for (const gd::Window* w : wins) w->memory_sync();
}

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

/// info() under another call's name, with `salt` (that call's arguments) in its handshake
/// (io.cpp).
DatasetInfo info_as(const Group& loc, const std::string& name, const std::string& what, std::uint64_t salt);

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
  // H5Lexists fails on a missing intermediate group: walk the path. A leading '/' is the
  // file's root, as for every other HDF5 call on `name`.
  std::string prefix = name.starts_with('/') ? "/" : "";
  std::size_t pos = 0;
  while (pos <= name.size()) {
    const std::size_t slash = name.find('/', pos);
    const std::string part = name.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
    if (!part.empty()) {
      prefix += (prefix.empty() || prefix == "/" ? "" : "/") + part;
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
  // only the padding goes: a NUL inside the string is part of it (as HDF5 stores it)
  while (!buf.empty() && buf.back() == '\0') buf.pop_back();
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


/// Checks the arguments every array call shares (on this rank). Throws.
inline void check_target(const Group& loc, const Context& ctx, const std::string& name,
                         std::string_view what) {
  if (loc.comm() != ctx.comm())
    gd::raise<InvalidArgument>(what, ": the array lives on another context than ", loc.where("."),
                               " (open the file on the array's context)");
  if (name.empty()) gd::raise<InvalidArgument>(what, ": empty dataset name");
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

/// Test builds: fault point `point` standing for an HDF5 call that failed on this rank only
/// (HDF5 reports failures by return value, so the point is turned into `true`, not a throw).
inline bool hdf5_fails_here(std::string_view point) {
  try {
    gd::fault_point(point);
    return false;
  } catch (...) {
    return true;
  }
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
  sig.add(whole ? 1u : 0u);  // a whole array also writes its layout attributes (HDF5 metadata calls)
  const std::string ds = loc.dataset_where(name);
  loc.begin(
      what, sig.h,
      cat("dataset '", name, "', type ", type_name<T>(), ", shape ", gd::seq(dims), ", section ", sec,
          ", chunk ", gd::seq(o.chunk), whole ? ", whole array" : ", view"),
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
    if (exists) {  // overwrite replaces a dataset, never a group (with all below it) or a named type
      Hid obj(H5Oopen(loc.id(), name.c_str(), H5P_DEFAULT), H5Oclose);
      if (!obj.valid() || H5Iget_type(obj.get()) != H5I_DATASET)
        gd::raise<FileError>(what, ": ", ds, " exists and is not a dataset (overwrite replaces datasets only)");
    }
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
      if (H5Pset_chunk(dcpl.get(), static_cast<int>(ch.size()), ch.data()) < 0)
        gd::raise<FileError>(what, ": ", ds, ": HDF5 rejects chunk ", gd::seq(o.chunk), ": ", hdf5_message());
    }
    H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER);  // every element is written
    lcpl = Hid(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
    H5Pset_create_intermediate_group(lcpl.get(), 1);
    dxpl = transfer_plist(o.transfer);
    if (!space.valid() || !dcpl.valid() || !dxpl.valid())
      gd::raise<FileError>(what, ": ", ds, ": cannot set up the write: ", hdf5_message());
    gd::fault_point("io.write.prepare");
  });

  // The HDF5 calls every rank makes (metadata operations are collective in parallel HDF5,
  // H5Dwrite is a collective transfer): each step is made by every rank or by none. HDF5
  // reports a failure by return value, possibly on some ranks only, so the ranks agree after
  // each step before the next (one small allreduce per step; a write does file I/O).
  std::string err;
  Index total = 1;
  for (auto e : dims) total *= e;
  const auto everyone_ok = [&] { return gd::all_ok(loc.comm(), err.empty()); };
  if (exists && H5Ldelete(loc.id(), name.c_str(), H5P_DEFAULT) < 0)
    err = "cannot remove the old dataset: " + hdf5_message();
  Hid dset;
  bool go = !exists || everyone_ok();  // (`exists` is the same everywhere: nothing to agree on without a delete)
  if (go) {
    dset =
        Hid(H5Dcreate2(loc.id(), name.c_str(), ftype.get(), space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT),
            H5Dclose);
    if (!dset.valid() || hdf5_fails_here("io.write.create")) err = "cannot create it: " + hdf5_message();
    go = everyone_ok();
  }
  if (go) {
    bool ok = put_string_attr(dset.get(), "garray_type", std::string(numpy_name<T>()));
    ok = ok && put_index_attr(dset.get(), "garray_shape", dims);
    if (whole) ok = ok && put_layout(dset.get(), a.distribution(), a.ghost());
    if (!ok || hdf5_fails_here("io.write.attributes")) err = "cannot write its layout attributes: " + hdf5_message();
    go = everyone_ok();
  }
  if (go) {
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

/// The extents of a dataset's dataspace as Index values. HDF5 allows extents up to 2^64 - 2;
/// one beyond Index's range is a FileError naming it (it would wrap to a negative extent).
inline std::vector<Index> extents_of(hid_t space, const std::string& ds, std::string_view what) {
  const int nd = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> hd(static_cast<std::size_t>(std::max(nd, 0)));
  if (nd > 0) H5Sget_simple_extent_dims(space, hd.data(), nullptr);
  std::vector<Index> shape(hd.size());
  for (std::size_t d = 0; d < hd.size(); ++d) {
    if (hd[d] > static_cast<hsize_t>(std::numeric_limits<Index>::max()))
      gd::raise<FileError>(what, ": ", ds, " has extent ", hd[d], " in dim ", d,
                           ", beyond the largest garray index (2^63 - 1)");
    shape[d] = static_cast<Index>(hd[d]);
  }
  return shape;
}

/// Throws FileError on this rank when the dataset's chunks need a filter this HDF5 cannot
/// decode (h5py's LZF, a plugin not installed): found here, before any rank reads, rather
/// than inside H5Dread, which may have stored into the destination by then.
inline void check_filters(hid_t dset, const std::string& ds, std::string_view what) {
  Hid dcpl(H5Dget_create_plist(dset), H5Pclose);
  const int n = dcpl.valid() ? H5Pget_nfilters(dcpl.get()) : 0;
  for (int i = 0; i < n; ++i) {
    unsigned flags = 0, config = 0;
    std::size_t nvalues = 0;
    char fname[64] = {};
    const H5Z_filter_t id = H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &nvalues, nullptr,
                                           sizeof fname, fname, &config);
    if (id < 0) gd::raise<FileError>(what, ": ", ds, ": cannot query its filters: ", hdf5_message());
    unsigned info = 0;
    const bool usable = H5Zfilter_avail(id) > 0 && H5Zget_filter_info(id, &info) >= 0 &&
                        (info & H5Z_FILTER_CONFIG_DECODE_ENABLED);
    if (!usable)
      gd::raise<FileError>(
          what, ": ", ds, " needs HDF5 filter ", id, fname[0] ? cat(" ('", fname, "')") : "",
          ", which this HDF5 cannot decode (not built in, no plugin found); nothing was read");
  }
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
  check_filters(dset.get(), ds, what);
  Hid ft(H5Dget_type(dset.get()), H5Tclose);
  if (!type_matches<T>(ft.get()))
    gd::raise<TypeMismatch>(what, ": ", ds, " holds ", describe_type(ft.get()), ", the array holds ",
                            type_name<T>(), " (", numpy_name<T>(), ")");
  Hid sp(H5Dget_space(dset.get()), H5Sclose);
  std::vector<Index> shape = extents_of(sp.get(), ds, what);
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


/// The shape query of the read of a dataset selection (io::read with a Slice).
template <Element T>
std::vector<Index> dataset_shape(const Group& loc, const std::string& name, std::size_t k,
                                 const std::string& what) {
  loc.begin(what + " (shape query)", Sig(what).add(name).h, "dataset '" + name + "'", [] {});
  return concluded(loc.comm(), what, [&] {
    silence_hdf5();
    std::vector<Index> s;
    open_checked<T>(loc, name, nullptr, what, &s);
    if (s.size() != k)
      gd::raise<SizeMismatch>(what, ": ", loc.dataset_where(name), " has ", s.size(),
                              " dimensions; the file selection gives ", k, " items (one per dimension)");
    return s;
  });
}

/// The dataset's shape (inf.shape has N entries: read_array_info checked).
template <std::size_t N>
Shape<N> shape_of(const DatasetInfo& inf) {
  Shape<N> shape{};
  for (std::size_t d = 0; d < N; ++d) shape[d] = inf.shape[d];
  return shape;
}

/// A new array of the dataset's shape, distributed as `dist` with `ghost`, read from it.
template <Element T, std::size_t N>
GlobalArray<T, N> read_new(const Group& loc, const std::string& name, const DatasetInfo& inf,
                           const Distribution<N>& dist, const Shape<N>& ghost) {
  auto a = gd::make_overwritten<T, N>(loc.context(), shape_of<N>(inf), dist, ghost);
  read(loc, name, a);
  return a;
}

/// read_array's query of the dataset: info() under read_array's own name (which carries T
/// and N) and with the form (`recorded` layout or a given distribution) in its handshake,
/// so ranks asking for different ones, or calling info() meanwhile, disagree there. Then
/// every rank holds the same DatasetInfo and the same N, so the checks on it that follow
/// throw on every rank alike.
template <std::size_t N>
DatasetInfo read_array_info(const Group& loc, const std::string& name, const std::string& what, bool recorded) {
  DatasetInfo inf = info_as(loc, name, what, recorded ? 2 : 1);
  if (inf.shape.size() != N)
    gd::raise<SizeMismatch>(what, ": ", loc.dataset_where(name), " has ", inf.shape.size(), " dimensions, not ",
                            N);
  return inf;
}

template <Element T, std::size_t N>
GlobalArray<T, N> read_array_as(const Group& loc, const std::string& name, const Distribution<N>& dist,
                                const Shape<N>& ghost) {
  const std::string what = call_name("read_array", type_name<T>(), N);
  return read_new<T, N>(loc, name, read_array_info<N>(loc, name, what, false), dist, ghost);
}

template <Element T, std::size_t N>
GlobalArray<T, N> read_array_recorded(const Group& loc, const std::string& name) {
  const std::string what = call_name("read_array", type_name<T>(), N);
  const DatasetInfo inf = read_array_info<N>(loc, name, what, true);
  Shape<N> ghost{};
  if (inf.ghost.size() == N)
    for (std::size_t d = 0; d < N; ++d) ghost[d] = inf.ghost[d];
  // Read and resolved here under read_array's name and the dataset's, so that a bad record
  // or a layout needing more ranks than the context has says which call and which file (the
  // same on every rank: inf is).
  const std::string recorded = what + ": the layout recorded on " + loc.dataset_where(name);
  const Distribution<N> dist = recorded_distribution<N>(inf, recorded);
  (void)dist.resolve(shape_of<N>(inf), loc.context().size(), recorded);
  return read_new<T, N>(loc, name, inf, dist, ghost);
}

}  // namespace garray::io::detail

namespace garray::io {

template <Element V>
void Group::set_value_attribute(const std::string& key, const V& value, const std::string& object) const {
  const std::string what = "garray::io::set_attribute";
  detail::Sig sig(what);
  sig.add(key).add(object);
  sig.add(static_cast<std::uint64_t>(gd::type_code<V>()));
  sig.h = gd::value_hash(sig.h, value);
  begin(what, sig.h, where(object) + " attribute '" + key + "'", [&] {
    if (key.empty()) gd::raise<InvalidArgument>(what, ": empty attribute name");
    writable(what);
  });
  gd::run_concluded(comm(), what, [&] {
    detail::silence_hdf5();
    detail::Hid obj = open_object(object, what);
    detail::Hid t = detail::h5_type<V>();
    const bool ok = detail::put_attr(obj.get(), key.c_str(), t.get(), &value, -1);
    gd::fault_point("io.attribute");  // after the HDF5 calls, which every rank must make
    if (!ok)
      gd::raise<FileError>(what, ": cannot write attribute '", key, "' of ", where(object), ": ",
                           detail::hdf5_message());
  });
}

template <Element V>
V Group::value_attribute(const std::string& key, const std::string& object) const {
  const std::string what = "garray::io::attribute";
  begin(what, detail::Sig(what).add(key).add(object).add(static_cast<std::uint64_t>(gd::type_code<V>())).h,
        where(object) + " attribute '" + key + "'", [] {});
  return detail::concluded(comm(), what, [&]() -> V {
    detail::silence_hdf5();
    detail::Hid obj = open_object(object, what);
    if (H5Aexists(obj.get(), key.c_str()) <= 0)
      gd::raise<FileError>(what, ": ", where(object), " has no attribute '", key, "'");
    detail::Hid at(H5Aopen(obj.get(), key.c_str(), H5P_DEFAULT), H5Aclose);
    detail::Hid ft(H5Aget_type(at.get()), H5Tclose);
    detail::Hid sp(H5Aget_space(at.get()), H5Sclose);
    const auto cls = H5Tget_class(ft.get());
    bool ok = H5Sget_simple_extent_npoints(sp.get()) == 1;
    if constexpr (detail::is_complex<V>::value)
      ok = ok && detail::type_matches<V>(ft.get());
    else if constexpr (std::is_floating_point_v<V>)
      ok = ok && (cls == H5T_FLOAT || cls == H5T_INTEGER);
    else
      ok = ok && cls == H5T_INTEGER;
    if (!ok)
      gd::raise<TypeMismatch>(what, ": attribute '", key, "' of ", where(object), " is ",
                              detail::describe_type(ft.get()), " with ", H5Sget_simple_extent_npoints(sp.get()),
                              " value(s), not one ", type_name<V>());
    V v{};
    const auto cannot_read = [&] {
      gd::raise<FileError>(what, ": cannot read attribute '", key, "' of ", where(object), ": ",
                           detail::hdf5_message());
    };
    const auto cannot_hold = [&](const auto& x) {
      gd::raise<TypeMismatch>(what, ": attribute '", key, "' of ", where(object), " holds ", x, ", which a ",
                              type_name<V>(), " cannot hold");
    };
    if constexpr (detail::is_complex<V>::value) {
      detail::Hid mt = detail::h5_type<V>();
      if (H5Aread(at.get(), mt.get(), &v) < 0) cannot_read();
    } else if (cls == H5T_INTEGER) {
      // Read at full width and check the range: HDF5's conversion saturates without an error.
      const auto read_as = [&](auto x, hid_t mem_type) {
        if (H5Aread(at.get(), mem_type, &x) < 0) cannot_read();
        if constexpr (std::is_integral_v<V>)
          if (!std::in_range<V>(x)) cannot_hold(x);
        v = static_cast<V>(x);
      };
      if (H5Tget_sign(ft.get()) == H5T_SGN_NONE && H5Tget_size(ft.get()) >= sizeof(std::uint64_t))
        read_as(std::uint64_t{0}, H5T_NATIVE_UINT64);
      else
        read_as(std::int64_t{0}, H5T_NATIVE_INT64);
    } else if constexpr (std::is_floating_point_v<V>) {
      // A float attribute (cls == H5T_FLOAT), read at a width that holds it (double, or long
      // double for a wider one: numpy's longdouble), then range-checked: HDF5's conversion to a
      // narrower type saturates or gives inf without an error.
      const auto read_as = [&](auto x, hid_t mem_type) {
        if (H5Aread(at.get(), mem_type, &x) < 0) cannot_read();
        if (std::isfinite(x) && !std::isfinite(static_cast<V>(x))) cannot_hold(x);
        v = static_cast<V>(x);
      };
      if (H5Tget_size(ft.get()) > sizeof(double))
        read_as(0.0L, H5T_NATIVE_LDOUBLE);
      else
        read_as(0.0, H5T_NATIVE_DOUBLE);
    }
    return v;
  });
}

}  // namespace garray::io
