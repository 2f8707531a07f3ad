#!/bin/bash
# garray::io against h5py/NumPy and h5dump (issue 14), driven by ctest:
#   interop.sh MPIEXEC TEST_IO PYTHON H5DUMP DIR
# The np 3 writer also sets up the fixture the cross-rank-count readers need (cross.h5).
set -u
MPIEXEC=$1; TEST_IO=$2; PY=$3; H5DUMP=$4; DIR=$5
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$DIR" && rm -f "$DIR/cross.h5" "$DIR/py.h5"
GARRAY_IO_STAGE=write GARRAY_IO_DIR=$DIR timeout 120 "$MPIEXEC" -n 3 "$TEST_IO" -tc="io fixture: write*" \
  || fail "garray writer (np 3)"
# after mpiexec returned: h5py reads what garray wrote
"$PY" "$(dirname "$0")/interop.py" check "$DIR/cross.h5" || fail "h5py check"
# the documented layout, as h5dump shows it
hdr=$("$H5DUMP" -H -d /float64/d2_blocked "$DIR/cross.h5") || fail "h5dump"
for want in 'DATATYPE  H5T_IEEE_F64LE' 'SIMPLE { ( 7, 6 ) / ( 7, 6 ) }' garray_type garray_shape \
            garray_distribution garray_process_grid garray_block_starts garray_ghost '"dt"'; do
  echo "$hdr" | grep -qF "$want" || fail "h5dump -H lacks $want"
done
hdr=$("$H5DUMP" -H -d /complex128/d1_blocked "$DIR/cross.h5") || fail "h5dump complex"
echo "$hdr" | grep -q 'H5T_COMPOUND' && echo "$hdr" | grep -q '"r"' && echo "$hdr" | grep -q '"i"' \
  || fail "complex is not the compound {r, i}: $hdr"
# h5py writes, garray reads
"$PY" "$(dirname "$0")/interop.py" write "$DIR/py.h5" || fail "h5py writer"
GARRAY_IO_STAGE=h5py GARRAY_IO_DIR=$DIR timeout 120 "$MPIEXEC" -n 2 "$TEST_IO" -tc="io interop*" \
  || fail "garray reading h5py's file (np 2)"
# a file every rank unwound past, closed only when MPI_Finalize starts
rm -f "$DIR/left.h5"
GARRAY_IO_STAGE=left GARRAY_IO_DIR=$DIR timeout 120 "$MPIEXEC" -n 2 "$TEST_IO" -tc="io fixture: a file left*" \
  || fail "garray leaving a file open to MPI_Finalize (np 2)"
"$PY" "$(dirname "$0")/interop.py" left "$DIR/left.h5" || fail "h5py reading the file closed at MPI_Finalize"
echo "interop: pass"
