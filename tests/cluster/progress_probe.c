/* progress_probe.c -- does passive-target RMA complete while the target does
 * not call MPI?  (np=2)
 *
 * Both ranks MPI_Win_allocate 1 MiB.  After a barrier, rank 1 computes for
 * BUSY seconds without any MPI call (a busy loop; argv[1], default 1.0 s).
 * Meanwhile rank 0 times lock_all + MPI_Get(8 B) + flush, MPI_Put(8 B) + flush,
 * MPI_Accumulate(8 B) + flush, and MPI_Fetch_and_op + flush, each started
 * while rank 1 is still busy.  If an op needs the target to enter MPI
 * (software/active-message RMA), it takes about BUSY seconds; with hardware or
 * shared-memory RMA, or an asynchronous progress thread, microseconds.
 * argv[2] = "multiple" requests MPI_THREAD_MULTIPLE (default: plain MPI_Init);
 * note Open MPI 4.1's osc/pt2pt refuses windows under MPI_THREAD_MULTIPLE.
 * argv[2] = "thread" also requests MPI_THREAD_MULTIPLE and starts, on every rank, a
 * progress thread that calls MPI_Iprobe on a private communicator every argv[3] us
 * (default 100): what a library-level progress thread (GARRAY_PROGRESS=thread) would do.
 * Output (rank 0): one line with the time of each op in us, and
 * needs_target_progress=yes|no (yes = the first op took more than BUSY/2).
 * Build: mpicc.openmpi -O2 -o progress_probe.openmpi progress_probe.c
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

static volatile int stop_progress = 0;
static MPI_Comm progress_comm;
static long progress_us = 100;
static void *progress_main(void *arg) {
  (void)arg;
  struct timespec ts = {0, progress_us * 1000};
  while (!stop_progress) {
    int flag; MPI_Iprobe(MPI_ANY_SOURCE, 0, progress_comm, &flag, MPI_STATUS_IGNORE);
    if (progress_us > 0) nanosleep(&ts, NULL);
  }
  return NULL;
}

static double busy(double sec) {
  double t0 = MPI_Wtime(), x = 0;  /* MPI_Wtime is not a progress call */
  while (MPI_Wtime() - t0 < sec) for (int i = 0; i < 1000; i++) x += i * 1e-9;
  return x;
}

int main(int argc, char **argv) {
  int provided = MPI_THREAD_SINGLE;
  int thread = argc > 2 && !strcmp(argv[2], "thread");
  if (argc > 3) progress_us = atol(argv[3]);
  if (argc > 2 && (!strcmp(argv[2], "multiple") || thread))
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  else
    MPI_Init(&argc, &argv);
  int me, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (np != 2) { if (!me) fprintf(stderr, "run with np=2\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
  double B = argc > 1 ? atof(argv[1]) : 1.0;
  pthread_t progress;
  if (thread) {
    if (provided < MPI_THREAD_MULTIPLE) { if (!me) fprintf(stderr, "no MPI_THREAD_MULTIPLE\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    MPI_Comm_dup(MPI_COMM_WORLD, &progress_comm);
    pthread_create(&progress, NULL, progress_main, NULL);
  }
  long *base; MPI_Win win;
  MPI_Win_allocate(1 << 20, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  for (int i = 0; i < (1 << 17); i++) base[i] = 1000 + i;
  char name[MPI_MAX_PROCESSOR_NAME], tname[MPI_MAX_PROCESSOR_NAME]; int len;
  MPI_Get_processor_name(name, &len);  /* tname = the other rank's (target's) name */
  MPI_Sendrecv(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 1 - me, 9, tname, MPI_MAX_PROCESSOR_NAME,
               MPI_CHAR, 1 - me, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  /* warm up connections/lanes in both directions */
  MPI_Win_lock_all(0, win);
  long v = 0, one = 1, old;
  MPI_Get(&v, 1, MPI_LONG, 1 - me, 0, 1, MPI_LONG, win); MPI_Win_flush(1 - me, win);
  MPI_Win_unlock_all(win);
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 1) {
    double x = busy(B);
    if (x < 0) printf("%g\n", x);
  } else {
    double t[5], t0 = MPI_Wtime();
    MPI_Win_lock_all(0, win);
    MPI_Get(&v, 1, MPI_LONG, 1, 5, 1, MPI_LONG, win); MPI_Win_flush(1, win);
    t[0] = MPI_Wtime();
    MPI_Put(&one, 1, MPI_LONG, 1, 6, 1, MPI_LONG, win); MPI_Win_flush(1, win);
    t[1] = MPI_Wtime();
    MPI_Accumulate(&one, 1, MPI_LONG, 1, 7, 1, MPI_LONG, MPI_SUM, win); MPI_Win_flush(1, win);
    t[2] = MPI_Wtime();
    MPI_Fetch_and_op(&one, &old, MPI_LONG, 1, 8, MPI_SUM, win); MPI_Win_flush(1, win);
    t[3] = MPI_Wtime();
    MPI_Win_unlock_all(win);
    printf("progress_probe origin=%s target=%s busy=%.2fs thread_level=%d get=%.1fus put=%.1fus acc=%.1fus "
           "fop=%.1fus get_value_ok=%d needs_target_progress=%s\n",
           name, tname, B, provided, (t[0] - t0) * 1e6, (t[1] - t[0]) * 1e6, (t[2] - t[1]) * 1e6,
           (t[3] - t[2]) * 1e6, v == 1005, (t[0] - t0) > B / 2 ? "yes" : "no");
    fflush(stdout);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (thread) { stop_progress = 1; pthread_join(progress, NULL); MPI_Comm_free(&progress_comm); }
  MPI_Win_free(&win);
  MPI_Finalize();
  return 0;
}
