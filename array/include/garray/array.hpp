#pragma once
// The array layer alone: contexts, distributed arrays, one-sided transfers, views, copies,
// data movement, ghosts, mutexes and printing, without the numeric layer (expressions,
// reductions, matmul) that <garray/garray.hpp> adds. Links against garray::array.
#include <garray/array/box.hpp>
#include <garray/array/copy.hpp>
#include <garray/array/distribution.hpp>
#include <garray/array/global_array.hpp>
#include <garray/array/halo.hpp>
#include <garray/array/local_block.hpp>
#include <garray/array/movement.hpp>
#include <garray/array/mutex.hpp>
#include <garray/array/print.hpp>
#include <garray/array/request.hpp>
#include <garray/array/slice.hpp>
#include <garray/array/view.hpp>
#include <garray/runtime/context.hpp>
#include <garray/runtime/datatype.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/stats.hpp>
