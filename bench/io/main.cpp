// bench_io - writing and reading an n x n double array to/from one file (issue 14).
//
// Variants, in one run on the same blocks and the same global C-order file layout:
//   garray   io::File + io::write / io::read: one dataset, each rank its block as a
//            hyperslab, one collective H5Dwrite / H5Dread (HDF5 over MPI-IO)
//   mpiio    raw MPI-IO: MPI_File_write_at_all / read_at_all of each rank's block; row slabs
//            at their byte offset, 2-d blocks through an MPI subarray file view
//   hdf5     HDF5 called directly: H5Fcreate, H5Dcreate, hyperslab, collective H5Dwrite
//            (what garray does, without garray)
// Layouts: slab (row slabs, contiguous in the file) and grid (2-d blocks: the balanced grid,
// or 1 x p column blocks when that is row slabs, so every rank's rows are strided).
// Each rep opens (writes: creates a new file, after an untimed removal of the old one and a
// sync(2)), transfers and closes the file (so the data is in the file system when the time
// is taken); its time is the slowest rank's. The
// variants run side by side (each rep runs garray, mpiio, hdf5 in turn, in an order that
// rotates from rep to rep); medians over
// --reps after --warmup, and the median of the per-rep ratios to mpiio ("paired": the
// variants of one rep ran seconds apart, so a slow spell that lasts a rep hits them alike).
// Files go to --dir (the OS page cache makes this a measure of the software path, not of
// the disk). Every read goes into a buffer (or array) filled with NaN first and is checked
// against the written values after its timing (exactly: a read copies bits), and the two
// HDF5 writers' files are read crosswise (hdf5 reads garray's, garray reads hdf5's), so both
// hold the same layout. Exit code 1 when a check fails, 2 for a bad option.
#include <hdf5.h>
#include <mpi.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <functional>
#include <garray/array/io.hpp>
#include <garray/garray.hpp>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.hpp"

namespace gb = garray::bench;
namespace po = boost::program_options;
namespace io = garray::io;

using garray::Index;

namespace {

double value(Index i, Index j, Index n) { return static_cast<double>(i * n + j) * 0.5; }

template <class Body>
std::vector<double> timed(MPI_Comm comm, int reps, int warmup, Body&& body) {
  std::vector<double> out;
  for (int r = 0; r < warmup + reps; ++r) {
    MPI_Barrier(comm);
    const gb::Timer t;
    body();
    double s = t.seconds(), m = 0;
    MPI_Allreduce(&s, &m, 1, MPI_DOUBLE, MPI_MAX, comm);
    if (r >= warmup) out.push_back(m);
  }
  return out;
}

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    std::fprintf(stderr, "bench_io: %s failed (%d)\n", what, rc);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}
void h5check(long long rc, const char* what) {
  if (rc < 0) {
    std::fprintf(stderr, "bench_io: %s failed\n", what);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

// slab: row slabs; grid: 2-d blocks, the balanced grid or 1 x p column blocks when that is
// row slabs
garray::Distribution<2> layout_of(const std::string& layout, Index n, int p) {
  using D = garray::Distribution<2>;
  if (layout == "slab") return D::slab(0);
  auto g = D::balanced_grid({n, n}, p);
  if (g[1] == 1 && p > 1) g = {1, p};
  return D::grid(g);
}

struct Row {
  std::string layout, variant, op;
  double seconds;
  double paired;  // median over reps of this variant's time / mpiio's time in the same rep
};

}  // namespace

static int bench_main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  {
    Index n = 4000;
    int reps = 7, warmup = 1;
    std::string dir = ".", layouts = "slab,grid", csv;
    po::options_description opts("bench_io options");
    opts.add_options()("help", "show this help")("n", po::value(&n)->default_value(n), "array extent (n x n doubles)")(
        "reps", po::value(&reps)->default_value(reps), "timed repetitions (medians)")(
        "warmup", po::value(&warmup)->default_value(warmup), "untimed repetitions first")(
        "dir", po::value(&dir)->default_value(dir), "directory for the files")(
        "layouts", po::value(&layouts)->default_value(layouts), "slab, grid or slab,grid")(
        "csv", po::value(&csv)->default_value(""), "append results to this CSV file");
    po::variables_map vm;
    int nranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const auto check_values = [&] {
      gb::require(n >= 1, "--n must be at least 1");
      gb::require(reps >= 1 && warmup >= 0, "--reps must be at least 1 and --warmup at least 0");
      std::stringstream ss(layouts);
      int count = 0;
      for (std::string l; std::getline(ss, l, ',');) {
        gb::require(l == "slab" || l == "grid",
                    "--layouts: unknown layout '" + l + "' (slab, grid or slab,grid)");
        ++count;
      }
      gb::require(count > 0, "--layouts: no layout given (slab, grid or slab,grid)");
      // MPI-IO counts and subarray extents are ints: every block of either layout must fit
      constexpr Index int_max = std::numeric_limits<int>::max();
      gb::require(n <= int_max, "--n " + std::to_string(n) + " exceeds INT_MAX (MPI-IO extents are int)");
      for (const auto& d : {layout_of("slab", n, nranks), layout_of("grid", n, nranks)}) {
        const auto r = d.resolve({n, n}, nranks, "bench_io");
        for (int q = 0; q < r.nblocks(); ++q)
          gb::require(r.block(q).volume() <= int_max,
                      "--n " + std::to_string(n) + ": a rank's block would exceed INT_MAX elements at " +
                          std::to_string(nranks) + " ranks (MPI-IO counts are int)");
      }
    };
    if (!gb::parse_command_line(argc, argv, opts, vm, "bench_io", check_values)) {
      MPI_Finalize();
      return 2;
    }
    garray::Context ctx;
    const int p = ctx.size(), me = ctx.rank();
    if (vm.count("help")) {
      if (me == 0) std::cout << opts << '\n';
      MPI_Finalize();
      return 0;
    }
    using D = garray::Distribution<2>;
    if (me == 0) {
      gb::print_run_info(std::cout, "bench_io", p);
      std::cout << "# " << ctx.describe();
      std::cout << "# " << n << " x " << n << " doubles (" << gb::format_bytes(static_cast<std::size_t>(n * n * 8))
                << "), files in " << dir << ", medians of " << reps << " reps\n";
    }
    const double bytes = static_cast<double>(n) * static_cast<double>(n) * 8.0;
    std::vector<Row> rows;
    bool ok = true;
    for (const std::string& layout : {std::string("slab"), std::string("grid")}) {
      if (("," + layouts + ",").find("," + layout + ",") == std::string::npos) continue;
      const D dist = layout_of(layout, n, p);
      garray::GlobalArray<double, 2> a(ctx, {n, n}, dist);
      garray::for_each_owned(a, [&](const garray::Shape<2>&, const garray::Shape<2>& g, double& v) {
        v = value(g[0], g[1], n);
      });
      a.sync();
      const garray::Box<2> box = a.local_box();
      const Index r0 = box.lo[0], c0 = box.lo[1], nr = box.extent(0), nc = box.extent(1);
      std::vector<double> block(static_cast<std::size_t>(nr * nc));
      for (Index i = 0; i < nr; ++i)
        for (Index j = 0; j < nc; ++j) block[static_cast<std::size_t>(i * nc + j)] = value(r0 + i, c0 + j, n);
      std::vector<double> in(block.size());
      const double nan = std::numeric_limits<double>::quiet_NaN();
      // Collective. `got` (this rank's block, row-major) against the written values.
      auto verify = [&](const std::vector<double>& got, const std::string& variant, const std::string& what) {
        bool good = true;
        for (std::size_t k = 0; k < block.size() && good; ++k)
          if (got[k] != block[k]) {  // (NaN: the read did not fill this element)
            gb::report_failure("bench_io", variant,
                               layout + " " + what + ": element " + std::to_string(k) +
                                   " of this rank's block is " + std::to_string(got[k]) + ", want " +
                                   std::to_string(block[k]));
            good = false;
          }
        ok = gb::all_ranks_ok(ctx.comm(), good) && ok;
      };
      const std::string base = dir + "/bench_io_np" + std::to_string(p) + "_" + layout;

      // ---- garray ----
      const std::string gname = base + "_garray.h5";
      auto garray_write = [&] {
        io::File f(ctx, gname, io::Mode::create);
        io::write(f, "u", a);
        f.close();
      };
      garray::GlobalArray<double, 2> b(ctx, {n, n}, dist);
      auto garray_read_from = [&](const std::string& name) {
        io::File f(ctx, name);
        io::read(f, "u", b);
        f.close();
      };
      auto garray_read = [&] { garray_read_from(gname); };
      auto b_block = [&] {  // b's local block, row-major
        auto blk = b.access();
        std::vector<double> got(block.size());
        for (Index i = 0; i < nr; ++i)
          for (Index j = 0; j < nc; ++j)
            got[static_cast<std::size_t>(i * nc + j)] = blk.view()[r0 + i][c0 + j];
        return got;
      };

      // ---- raw MPI-IO ----
      const std::string mname = base + "_mpiio.bin";
      MPI_Datatype ftype = MPI_DATATYPE_NULL;
      const bool contiguous = nc == n || nr == 0;
      if (!contiguous) {
        int sizes[2] = {static_cast<int>(n), static_cast<int>(n)}, sub[2] = {static_cast<int>(nr), static_cast<int>(nc)},
            st[2] = {static_cast<int>(r0), static_cast<int>(c0)};
        check(MPI_Type_create_subarray(2, sizes, sub, st, MPI_ORDER_C, MPI_DOUBLE, &ftype), "MPI_Type_create_subarray");
        check(MPI_Type_commit(&ftype), "MPI_Type_commit");
      }
      auto mpiio = [&](bool write, std::vector<double>& buf) {
        MPI_File fh;
        check(MPI_File_open(ctx.comm(), mname.c_str(), write ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY,
                            MPI_INFO_NULL, &fh),
              "MPI_File_open");
        MPI_Offset off = 0;
        if (contiguous) {
          off = static_cast<MPI_Offset>(r0 * n * 8);
        } else {
          check(MPI_File_set_view(fh, 0, MPI_DOUBLE, ftype, "native", MPI_INFO_NULL), "MPI_File_set_view");
        }
        const int cnt = static_cast<int>(buf.size());
        if (write)
          check(MPI_File_write_at_all(fh, off, buf.data(), cnt, MPI_DOUBLE, MPI_STATUS_IGNORE), "MPI_File_write_at_all");
        else
          check(MPI_File_read_at_all(fh, off, buf.data(), cnt, MPI_DOUBLE, MPI_STATUS_IGNORE), "MPI_File_read_at_all");
        check(MPI_File_close(&fh), "MPI_File_close");
      };

      // ---- HDF5 directly ----
      const std::string hname = base + "_hdf5.h5";
      auto hdf5 = [&](bool write, std::vector<double>& buf, const std::string& name) {
        const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
        H5Pset_fapl_mpio(fapl, ctx.comm(), MPI_INFO_NULL);
        const hid_t f = write ? H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl)
                              : H5Fopen(name.c_str(), H5F_ACC_RDONLY, fapl);
        h5check(f, "H5Fcreate/H5Fopen");
        const hsize_t dims[2] = {static_cast<hsize_t>(n), static_cast<hsize_t>(n)};
        hid_t d;
        if (write) {
          const hid_t sp = H5Screate_simple(2, dims, nullptr);
          d = H5Dcreate2(f, "u", H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
          H5Sclose(sp);
        } else {
          d = H5Dopen2(f, "u", H5P_DEFAULT);
        }
        h5check(d, "H5Dcreate/H5Dopen");
        const hid_t fs = H5Dget_space(d);
        const hsize_t start[2] = {static_cast<hsize_t>(r0), static_cast<hsize_t>(c0)},
                      count[2] = {static_cast<hsize_t>(nr), static_cast<hsize_t>(nc)};
        const hsize_t one = std::max<hsize_t>(1, static_cast<hsize_t>(buf.size()));
        const hid_t ms = H5Screate_simple(1, &one, nullptr);
        if (buf.empty()) {
          H5Sselect_none(fs);
          H5Sselect_none(ms);
        } else {
          H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, nullptr, count, nullptr);
        }
        const hid_t x = H5Pcreate(H5P_DATASET_XFER);
        H5Pset_dxpl_mpio(x, H5FD_MPIO_COLLECTIVE);
        double dummy = 0;
        void* ptr = buf.empty() ? &dummy : buf.data();
        h5check(write ? H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, fs, x, ptr) : H5Dread(d, H5T_NATIVE_DOUBLE, ms, fs, x, ptr),
                "H5Dwrite/H5Dread");
        H5Pclose(x);
        H5Sclose(ms);
        H5Sclose(fs);
        H5Dclose(d);
        H5Pclose(fapl);
        h5check(H5Fclose(f), "H5Fclose");
      };
      // Side by side: every rep runs each variant once, in turn, so load changes on a shared
      // machine hit all of them alike. Writes first (the reads need the files).
      // The order rotates from rep to rep, so no variant always follows the same one.
      std::vector<double> tw[3], tr[3];
      // Before every write (untimed): the variant's old file is removed and dirty pages are
      // flushed, so every write creates a new file on a clean page cache; otherwise the
      // time would depend on which variant's file the kernel was still writing back.
      const std::string* files[3] = {&gname, &mname, &hname};
      auto fresh = [&](int k) {
        MPI_Barrier(ctx.comm());
        if (me == 0) {
          std::remove(files[k]->c_str());
          ::sync();
        }
        MPI_Barrier(ctx.comm());
      };
      // Before every read (untimed): its destination is filled with NaN, so a read that
      // transfers nothing, or not everything, cannot pass on an earlier read's data.
      auto one = [&](bool write, int k) {
        if (write) fresh(k);
        if (!write) {
          if (k == 0)
            b.fill(nan);
          else
            std::fill(in.begin(), in.end(), nan);
        }
        if (k == 0) return timed(ctx.comm(), 1, 0, write ? std::function<void()>(garray_write) : garray_read)[0];
        if (k == 1) return timed(ctx.comm(), 1, 0, [&] { mpiio(write, write ? block : in); })[0];
        return timed(ctx.comm(), 1, 0, [&] { hdf5(write, write ? block : in, hname); })[0];
      };
      const char* names[3] = {"garray", "mpiio", "hdf5"};
      for (bool write : {true, false})
        for (int r = 0; r < warmup + reps; ++r)
          for (int j = 0; j < 3; ++j) {
            const int k = (r + j) % 3;
            const double t = one(write, k);
            if (r >= warmup) (write ? tw : tr)[k].push_back(t);
            if (!write) verify(k == 0 ? b_block() : in, names[k], "read of rep " + std::to_string(r));
          }
      for (int k = 0; k < 3; ++k) {
        rows.push_back({layout, names[k], "write", gb::median(tw[k]), gb::paired_ratio(tw[k], tw[1])});
        rows.push_back({layout, names[k], "read", gb::median(tr[k]), gb::paired_ratio(tr[k], tr[1])});
      }
      // Crosswise (untimed): each HDF5 writer's file read by the other one
      std::fill(in.begin(), in.end(), nan);
      hdf5(false, in, gname);
      verify(in, "garray", "file written by garray, read by hdf5");
      b.fill(nan);
      garray_read_from(hname);
      verify(b_block(), "hdf5", "file written by hdf5, read by garray");
      if (ftype != MPI_DATATYPE_NULL) MPI_Type_free(&ftype);
      ctx.barrier();
      if (me == 0)
        for (const auto& s : {gname, mname, hname}) std::remove(s.c_str());
      if (me == 0)
        std::cout << "# " << layout << ": process grid "
                  << a.distribution().procs()[0] << "x" << a.distribution().procs()[1] << '\n';
    }
    if (me == 0) {
      std::cout << "| np | layout | op | garray | mpiio | hdf5 | garray/mpiio | hdf5/mpiio | garray/mpiio paired |"
                   " hdf5/mpiio paired |\n"
                << "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
      auto row = [&](const std::string& l, const std::string& v, const std::string& o) {
        for (const auto& r : rows)
          if (r.layout == l && r.variant == v && r.op == o) return r;
        return Row{l, v, o, 0.0, 0.0};
      };
      auto find = [&](const std::string& l, const std::string& v, const std::string& o) {
        return row(l, v, o).seconds;
      };
      auto bw = [&](double s) {
        std::ostringstream os;
        os << std::fixed << std::setprecision(0) << bytes / s / 1e6 << " MB/s (" << std::setprecision(1) << s * 1e3
           << " ms)";
        return os.str();
      };
      for (const std::string& l : {std::string("slab"), std::string("grid")})
        for (const std::string& o : {std::string("write"), std::string("read")}) {
          const double g = find(l, "garray", o), m = find(l, "mpiio", o), h = find(l, "hdf5", o);
          if (g == 0) continue;
          std::cout << "| " << p << " | " << l << " | " << o << " | " << bw(g) << " | " << bw(m) << " | " << bw(h)
                    << " | " << std::setprecision(2) << std::fixed << g / m << " | " << h / m << " | "
                    << row(l, "garray", o).paired << " | " << row(l, "hdf5", o).paired << " |\n";
        }
      std::cout << "check=" << (ok ? "pass" : "FAIL") << '\n';
      if (!csv.empty()) {
        gb::CsvWriter w(csv, "bench,np,n,layout,variant,op,seconds,bytes_per_s,paired_ratio_to_mpiio");
        for (const auto& r : rows)
          w.row("io", p, n, r.layout, r.variant, r.op, r.seconds, bytes / r.seconds, r.paired);
      }
    }
    status = ok ? 0 : 1;
  }
  MPI_Finalize();
  return status;
}

int main(int argc, char** argv) { return garray::bench::guarded_main("bench_io", argc, argv, bench_main); }
