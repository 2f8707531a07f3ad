#pragma once
// Umbrella header: everything a garray user needs. It lives in the top layer (numeric/),
// the only one that sees every layer. <garray/array.hpp> is the array layer alone.
#include <garray/array.hpp>
#include <garray/array/box.hpp>
#include <garray/array/copy.hpp>
#include <garray/array/distribution.hpp>
#include <garray/array/global_array.hpp>
#include <garray/array/halo.hpp>
#ifdef GARRAY_HAVE_IO  // parallel HDF5 found (target garray_io)
#include <garray/array/io.hpp>
#endif
#include <garray/array/local_block.hpp>
#include <garray/array/movement.hpp>
#include <garray/array/mutex.hpp>
#include <garray/array/print.hpp>
#include <garray/array/request.hpp>
#include <garray/array/slice.hpp>
#include <garray/array/view.hpp>
#include <garray/numeric/creation.hpp>
#include <garray/numeric/elementwise.hpp>
#include <garray/numeric/expr.hpp>
#include <garray/numeric/indexing.hpp>
#include <garray/numeric/matmul.hpp>
#include <garray/numeric/reductions.hpp>
#include <garray/numeric/reproducible.hpp>
#include <garray/numeric/scan.hpp>
#include <garray/runtime/context.hpp>
#include <garray/runtime/datatype.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/stats.hpp>
