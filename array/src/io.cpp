// garray::io, the parts that do not depend on the element type or the number of dimensions
// (issue 17: compiled once into garray_io). The templates are instantiated for the six
// element types at 1-4 dimensions by the units generated from io_instantiate.cpp.in.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <optional>
#include <random>

#include "io_impl.hpp"

namespace garray::io {

namespace detail {

// ---- closing a file when some rank unwinds ----------------------------------------------
// H5Fclose is collective (MPI_File_close and the metadata flush). A rank that drops its last
// handle while an exception unwinds its stack must not block in it: the others may be on
// their way to another collective, which would then wait for that rank forever. So the last
// handle first runs the teardown agreement (detail::agree_teardown) on the file's own
// communicator: the unwinding rank does not wait, the others do and close only if nobody
// unwinds. Otherwise every rank hands the open file to this list, in the same order (every
// rank drops the file at the same point of the program). The files of a context are closed
// at its next io call, after that call's handshake (whose signature covers the list, so the
// ranks agree first), or, for files left over, when MPI_Finalize starts. Leaving the file
// open until MPI_Finalize would not do: the MPI-IO driver does not recognise a file it
// already has open, so reopening the path would give a second, independent metadata cache,
// and the later close of the first one could overwrite what the second wrote. io::File
// therefore closes a file left on its own context before it opens anything, and refuses a
// path left open on another context.
namespace {

/// Which file a path names (a second path to the same file, a link, compares equal).
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const FileId&) const = default;
};

/// Local: the file at `path`, or nothing when the path cannot be stat'ed (nothing to compare).
std::optional<FileId> file_id(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

struct DeferredFile {
  hid_type fid = invalid_hid;
  std::uint64_t context = 0;  // the context's serial
  std::string path;
  std::optional<FileId> id;
};

std::mutex deferred_mutex;
std::vector<DeferredFile>& deferred() {
  static auto* v = new std::vector<DeferredFile>;  // never destroyed: used at finalize
  return *v;
}
int deferred_keyval = MPI_KEYVAL_INVALID;

// At the start of MPI_Finalize (an attribute of MPI_COMM_SELF, set after HDF5 registered its
// own: MPI calls them in reverse order, so HDF5 is still there). Every rank closes the files
// left over, in the order they were left.
int close_deferred_at_finalize(MPI_Comm, int, void*, void*) {
  std::vector<DeferredFile> v;
  {
    std::lock_guard lock(deferred_mutex);
    v.swap(deferred());
  }
  for (auto& d : v) H5Fclose(d.fid);
  return MPI_SUCCESS;
}

void defer_close(hid_type fid, std::uint64_t context, const std::string& path) noexcept {
  try {
    DeferredFile d;
    d.fid = fid;
    d.context = context;
    d.path = path;
    d.id = file_id(path);
    std::lock_guard lock(deferred_mutex);
    if (deferred_keyval == MPI_KEYVAL_INVALID &&
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, close_deferred_at_finalize, &deferred_keyval,
                               nullptr) == MPI_SUCCESS)
      MPI_Comm_set_attr(MPI_COMM_SELF, deferred_keyval, nullptr);
    deferred().push_back(std::move(d));
  } catch (...) {
    // out of memory: the file stays open until HDF5 closes it at MPI_Finalize
  }
}

// ---- files open in this process ---------------------------------------------------------
// For the same reason a path a live io::File holds is not opened a second time (unless both
// handles only read): the second open would keep its own metadata cache.
struct LiveFile {
  const FileState* owner = nullptr;
  FileId id;
  bool writable = false;
};
std::mutex live_mutex;
std::vector<LiveFile>& live_files() {
  static auto* v = new std::vector<LiveFile>;
  return *v;
}

void forget_live(const FileState* st) noexcept {
  std::lock_guard lock(live_mutex);
  std::erase_if(live_files(), [st](const LiveFile& f) { return f.owner == st; });
}

void note_live(const FileState* st) {
  const auto id = file_id(st->path);
  if (!id) return;  // not found by path: nothing to compare with
  std::lock_guard lock(live_mutex);
  live_files().push_back(LiveFile{st, *id, st->mode != Mode::read_only});
}

}  // namespace

FileState::~FileState() {
  forget_live(this);
  int fin = 0;
  MPI_Finalized(&fin);
  if (fin) return;
  if (fid >= 0) {
    const bool unwinding = std::uncaught_exceptions() > uncaught_at_creation;
    if (close_comm == MPI_COMM_NULL || gd::agree_teardown(close_comm, unwinding, true))
      H5Fclose(fid);
    else
      defer_close(fid, ctx.serial(), path);
    fid = invalid_hid;
  }
  if (close_comm != MPI_COMM_NULL) MPI_Comm_free(&close_comm);
}

DeferredSig deferred_signature(std::uint64_t context) {
  DeferredSig r;
  r.h = gd::hash_string("garray::io deferred closes");
  std::lock_guard lock(deferred_mutex);
  for (const auto& d : deferred())
    if (d.context == context) {
      ++r.count;
      r.h = gd::hash_mix(r.h, gd::hash_string(d.path));
    }
  return r;
}

void close_deferred(std::uint64_t context) {
  std::vector<DeferredFile> mine;
  {
    std::lock_guard lock(deferred_mutex);
    auto& v = deferred();
    for (auto& d : v)
      if (d.context == context) mine.push_back(std::move(d));
    std::erase_if(v, [&](const DeferredFile& d) { return d.context == context; });
  }
  for (auto& d : mine) H5Fclose(d.fid);  // errors are not reported, as at ~File
}

std::size_t deferred_files() {
  std::lock_guard lock(deferred_mutex);
  return deferred().size();
}

namespace {

/// Local, part of File's validation: a file left open on another context (see above).
void check_not_deferred_elsewhere(std::string_view what, const std::string& path, std::uint64_t context) {
  const auto id = file_id(path);
  if (!id) return;
  std::lock_guard lock(deferred_mutex);
  for (const auto& d : deferred())
    if (d.context != context && d.id == id)
      gd::raise<FileError>(what, ": file '", path, "' is still open on context ", d.context,
                           " (its last handle was dropped while a rank unwound; it closes at that context's "
                           "next io call, or when MPI_Finalize starts)");
}

/// Local, part of File's validation: the path is open in this process through another live
/// io::File, and one of the two handles may write (see "files open in this process").
void check_not_open_here(std::string_view what, const std::string& path, Mode mode) {
  const auto id = file_id(path);
  if (!id) return;
  std::lock_guard lock(live_mutex);
  for (const auto& f : live_files())
    if (f.id == *id && (f.writable || mode != Mode::read_only))
      gd::raise<FileError>(what, ": file '", path, "' is already open in this process through another io::File",
                           f.writable ? " that may write" : "",
                           " (a second handle would keep its own metadata cache, and closing one could "
                           "overwrite what the other wrote): use that File, or close it first");
}

}  // namespace

std::string call_name(std::string_view fn, std::string_view type, std::size_t n) {
  return cat("garray::io::", fn, "<", type, ",", n, ">");
}

namespace {

std::string this_host() {
  char h[256] = {};
  if (::gethostname(h, sizeof h - 1) != 0) return "?";
  return h;
}

/// Local, part of File's validation (before the handshake). On a cluster a path can exist on
/// some nodes only (a node-local /tmp, /dev/shm or scratch disk). HDF5's collective open would
/// then succeed on some ranks only, and that cannot be unwound: closing the file again is
/// collective too (H5Fclose, MPI_File_close), and the ranks that failed never opened it. So
/// every rank checks first what it sees: the file (read modes), or its directory (create).
void check_path(std::string_view what, const std::string& path, Mode mode, const char* mode_name) {
  if (mode != Mode::create) {
    if (::access(path.c_str(), mode == Mode::read_only ? R_OK : R_OK | W_OK) != 0) {
      const int e = errno;
      gd::raise<FileError>(what, ": cannot open file '", path, "' (", mode_name, "): ",
                           e == ENOENT ? "not found" : std::strerror(e), " on host ", this_host(),
                           " (every rank must see the file: on a cluster, a file system all nodes share)");
    }
    return;
  }
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  struct stat st {};
  const char* why = nullptr;
  if (::stat(dir.c_str(), &st) != 0)
    why = errno == ENOENT ? "not found" : std::strerror(errno);
  else if (!S_ISDIR(st.st_mode))
    why = "not a directory";
  else if (::access(dir.c_str(), W_OK | X_OK) != 0)
    why = std::strerror(errno);
  if (why)
    gd::raise<FileError>(what, ": cannot create file '", path, "' (create): directory '", dir, "': ", why,
                         " on host ", this_host());
}

/// Collective over ctx, after the handshake, Mode::create: is the file's directory one that
/// every rank shares? Each node can have its own directory of that name (a node-local /tmp):
/// the checks of check_path pass everywhere, but the file HDF5 creates on rank 0 is not the one
/// the other nodes' ranks would then open. Rank 0 creates an empty probe file next to it (a
/// name new to every rank: a cached "no such file" cannot answer for it), every rank looks for
/// it, rank 0 removes it. Nothing else is touched: an existing file of that name keeps its
/// contents when this throws. Two agreements and a broadcast, once per created file.
void check_shared_directory(const Context& ctx, std::string_view what, const std::string& path) {
  std::uint64_t nonce = 0;
  if (ctx.rank() == 0) nonce = std::random_device{}() * 0x100000000ULL + std::random_device{}();
  gd::check_mpi(MPI_Bcast(&nonce, 1, MPI_UINT64_T, 0, ctx.comm()), "MPI_Bcast");
  std::ostringstream name;
  name << path << ".garray-probe-" << std::hex << nonce;
  const std::string probe = name.str();
  const bool root = ctx.rank() == 0;
  gd::run_concluded(ctx.comm(), what, [&] {
    if (!root) return;
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
      gd::raise<FileError>(what, ": cannot create file '", path, "' (create): cannot create a file next to it ('",
                           probe, "'): ", std::strerror(errno));
    ::close(fd);
  });
  // rank 0 removes the probe once every rank has looked (after the agreement), whatever it says
  struct Remove {
    const std::string& p;
    bool on;
    ~Remove() {
      if (on) ::unlink(p.c_str());
    }
  } remove{probe, root};
  gd::run_concluded(ctx.comm(), what, [&] {
    if (::access(probe.c_str(), F_OK) != 0)
      gd::raise<FileError>(what, ": cannot create file '", path, "' (create): this rank (host ", this_host(),
                           ") does not see the file rank 0 created next to it ('", probe,
                           "'): the directory is not shared by every rank's node (a node-local /tmp or "
                           "/dev/shm?); use a directory on a file system all nodes share");
  });
}

}  // namespace

}  // namespace detail

bool Group::contains(const std::string& name) const {
  const std::string what = "garray::io::contains";
  begin(what, detail::Sig(what).add(name).h, "object '" + name + "'", [] {});
  return detail::concluded(comm(), what, [&] { return detail::link_exists(id(), name); });
}

void Group::set_string_attribute(const std::string& key, std::string_view value,
                                 const std::string& object) const {
  const std::string what = "garray::io::set_attribute";
  detail::Sig sig(what);
  sig.add(key).add(object);
  sig.add(value);
  begin(what, sig.h, where(object) + " attribute '" + key + "'", [&] {
    if (key.empty()) gd::raise<InvalidArgument>(what, ": empty attribute name");
    // HDF5 pads a fixed-length string with NULs (NULLPAD), so a reader cannot tell a trailing
    // NUL of the value from the padding: refused, rather than read back shorter
    if (!value.empty() && value.back() == '\0')
      gd::raise<InvalidArgument>(what, ": the value of attribute '", key, "' ends with a NUL byte (",
                                 value.size(), " bytes), which an HDF5 string attribute cannot keep");
    writable(what);
  });
  gd::run_concluded(comm(), what, [&] {
    detail::silence_hdf5();
    detail::Hid obj = open_object(object, what);
    const bool ok = detail::put_string_attr(obj.get(), key.c_str(), std::string(value));
    gd::fault_point("io.attribute");  // after the HDF5 calls, which every rank must make
    if (!ok)
      gd::raise<FileError>(what, ": cannot write attribute '", key, "' of ", where(object), ": ",
                           detail::hdf5_message());
  });
}

std::string Group::string_attribute(const std::string& key, const std::string& object) const {
  const std::string what = "garray::io::attribute";
  begin(what, detail::Sig(what).add(key).add(object).add(std::uint64_t{0}).h,
        where(object) + " attribute '" + key + "'", [] {});
  return detail::concluded(comm(), what, [&]() -> std::string {
    detail::silence_hdf5();
    detail::Hid obj = open_object(object, what);
    if (H5Aexists(obj.get(), key.c_str()) <= 0)
      gd::raise<FileError>(what, ": ", where(object), " has no attribute '", key, "'");
    detail::Hid at(H5Aopen(obj.get(), key.c_str(), H5P_DEFAULT), H5Aclose);
    detail::Hid ft(H5Aget_type(at.get()), H5Tclose);
    detail::Hid sp(H5Aget_space(at.get()), H5Sclose);
    auto s = detail::get_string_attr(obj.get(), key.c_str());
    if (!s)
      gd::raise<TypeMismatch>(what, ": attribute '", key, "' of ", where(object), " is ",
                              detail::describe_type(ft.get()), ", not a string");
    return *s;
  });
}

std::string Group::where(const std::string& name) const {
  return name == "." ? detail::cat("file '", file_name(), "', group '", path_, "'")
                     : detail::cat("file '", file_name(), "', object '", child_path(name), "'");
}

std::string Group::dataset_where(const std::string& name) const {
  return detail::cat("file '", file_name(), "', dataset '", child_path(name), "'");
}

void Group::check_open(const std::string& what) const {
  if (!file_) gd::raise<InvalidArgument>(what, ": the File or Group object is empty (moved from)");
  if (file_->fid < 0) gd::raise<FileError>(what, ": file '", file_->path, "' is closed");
}

void Group::agree(const std::string& what, std::uint64_t sig, const std::string& args, std::exception_ptr err,
                  const gd::Window* win) const {
  detail::Sig s(what);
  s.h = gd::hash_mix(sig, gd::hash_string(file_name()));
  s.add(path_);
  const gd::Window* wins[1] = {win};
  detail::handshake(*ctx_, s.h, what, where(".") + ", " + args, err,
                    std::span<const gd::Window* const>(wins, win ? 1 : 0));
}

void Group::writable(std::string_view what) const {
  if (file_->mode == Mode::read_only) gd::raise<FileError>(what, ": file '", file_->path, "' is open read-only");
}

detail::Hid Group::open_object(const std::string& object, std::string_view what) const {
  if (object == ".") return detail::Hid(H5Oopen(id(), ".", H5P_DEFAULT), H5Oclose);
  if (!detail::link_exists(id(), object)) gd::raise<FileError>(what, ": ", where(object), " does not exist");
  detail::Hid o(H5Oopen(id(), object.c_str(), H5P_DEFAULT), H5Oclose);
  if (!o.valid()) gd::raise<FileError>(what, ": cannot open ", where(object), ": ", detail::hdf5_message());
  return o;
}

std::string Group::child_path(const std::string& name) const {
  return detail::cat(path_ == "/" ? "" : path_, "/", name);
}

Group Group::open_group(const std::string& name, bool create) const {
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

File::File(const Context& ctx, const std::string& path, Mode mode) {
  const std::string what = "garray::io::File";
  ctx.check_valid(what);
  ctx_ = ctx;
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
    detail::check_path(what, path, mode, mode_names[static_cast<int>(mode)]);
    detail::check_not_deferred_elsewhere(what, path, ctx.serial());
    detail::check_not_open_here(what, path, mode);
  } catch (const Error&) {
    err = std::current_exception();
  }
  detail::handshake(ctx, sig.h, what, "file '" + path + "', mode " + mode_names[static_cast<int>(mode)],
                    err);  // (closes the files left open on ctx, before anything is opened)
  if (mode == Mode::create) detail::check_shared_directory(ctx, what, path);
  auto st = std::make_shared<detail::FileState>(ctx, path, mode);
  std::shared_ptr<detail::Hid> root;
  // A failure below reaches every rank (run_concluded), so every rank closes what it opened
  // here (not deferred: no rank unwinds past this point alone).
  struct CloseOnThrow {
    detail::FileState& st;
    std::shared_ptr<detail::Hid>& root;
    bool armed = true;
    ~CloseOnThrow() {
      if (!armed) return;
      root.reset();
      if (st.fid >= 0) H5Fclose(st.fid);
      st.fid = H5I_INVALID_HID;
    }
  } close_on_throw{*st, root};
  gd::run_concluded(ctx.comm(), what, [&] {
    gd::check_mpi(MPI_Comm_dup(ctx.comm(), &st->close_comm), "MPI_Comm_dup");
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
  close_on_throw.armed = false;
  detail::note_live(st.get());
  gid_ = std::move(root);
  file_ = std::move(st);
  path_ = "/";
}

void File::flush() const {
  const std::string what = "garray::io::File::flush";
  begin(what, detail::Sig(what).h, "flush", [] {});
  gd::run_concluded(comm(), what, [&] {
    const herr_t rc = H5Fflush(file_->fid, H5F_SCOPE_GLOBAL);
    gd::fault_point("io.flush");  // after the (collective) flush
    if (rc < 0)
      gd::raise<FileError>(what, ": cannot flush file '", file_->path, "': ", detail::hdf5_message());
  });
}

void File::close() {
  const std::string what = "garray::io::File::close";
  begin(what, detail::Sig(what).h, "close", [&] {
    if (file_.use_count() != 1 || gid_.use_count() != 1)
      gd::raise<InvalidArgument>(what, ": file '", file_->path, "' still has ", file_.use_count() - 1,
                                 " open group handle(s)");
  });
  gd::run_concluded(comm(), what, [&] {
    gid_.reset();
    detail::forget_live(file_.get());
    const herr_t rc = H5Fclose(file_->fid);
    file_->fid = H5I_INVALID_HID;
    if (file_->close_comm != MPI_COMM_NULL) MPI_Comm_free(&file_->close_comm);
    gd::fault_point("io.close");
    if (rc < 0)
      gd::raise<FileError>(what, ": cannot close file '", file_->path, "': ", detail::hdf5_message());
  });
}

DatasetInfo info(const Group& loc, const std::string& name) {
  return detail::info_as(loc, name, "garray::io::info", 0);
}

DatasetInfo detail::info_as(const Group& loc, const std::string& name, const std::string& what,
                            std::uint64_t salt) {
  loc.begin(what, detail::Sig(what).add(name).add(salt).h, "dataset '" + name + "'", [] {});
  return detail::concluded(loc.comm(), what, [&] {
    detail::silence_hdf5();
    const std::string ds = loc.dataset_where(name);
    if (!detail::link_exists(loc.id(), name)) gd::raise<FileError>(what, ": ", ds, " does not exist");
    detail::Hid dset(H5Dopen2(loc.id(), name.c_str(), H5P_DEFAULT), H5Dclose);
    if (!dset.valid()) gd::raise<FileError>(what, ": cannot open ", ds, ": ", detail::hdf5_message());
    DatasetInfo r;
    detail::Hid sp(H5Dget_space(dset.get()), H5Sclose);
    r.shape = detail::extents_of(sp.get(), ds, what);
    detail::Hid ft(H5Dget_type(dset.get()), H5Tclose);
    r.type = detail::get_string_attr(dset.get(), "garray_type").value_or(detail::describe_type(ft.get()));
    r.distribution = detail::get_string_attr(dset.get(), "garray_distribution").value_or("");
    r.process_grid = detail::get_index_attr(dset.get(), "garray_process_grid").value_or(std::vector<Index>{});
    r.block_starts = detail::get_index_attr(dset.get(), "garray_block_starts").value_or(std::vector<Index>{});
    r.ghost = detail::get_index_attr(dset.get(), "garray_ghost").value_or(std::vector<Index>{});
    return r;
  });
}

}  // namespace garray::io
