/* MPI-IO module: wrappers of the MPI_File_* calls (and of their PMPI_File_* names) and the
 * per-file counters of Darshan's MPI-IO v3 record (reference §6.2), with darshan-runtime 3.5.0's
 * semantics: bytes are count x datatype size, split collectives count at _begin, non-blocking
 * calls when they are posted.
 *
 * The library is built without mpi.h (one library for every MPI), so MPI's handles are passed
 * through as what they are in the calling convention: MPI_File is a pointer in Open MPI and in
 * MPICH (ROMIO); MPI_Comm, MPI_Info and MPI_Datatype are pointers in Open MPI and ints in MPICH,
 * carried here as uintptr_t (an int argument occupies a whole register or stack slot on the
 * 64-bit ABIs, and the wrapper hands the same slot on unchanged). Only the MPI plugin, compiled
 * against the program's MPI, looks inside them (struct ios_comm's type_bytes, comm_size,
 * info_is_null). Until the plugin is loaded, at MPI_Init, the wrappers only pass through. */
#include "wrap.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

typedef uintptr_t ios_handle; /* MPI_Comm, MPI_Info, MPI_Datatype */
typedef void *ios_file;       /* MPI_File */
typedef long long ios_offset; /* MPI_Offset */

enum { IO_NONE, IO_READ, IO_WRITE };

struct mpiio_file { /* the record first: ios_file_by_name */
    struct ios_mpiio_record *rec;
    int last_io; /* IO_READ or IO_WRITE, for RW_SWITCHES */
    double last_read_end, last_write_end, last_meta_end;
    struct ios_value_counts access;
};

static struct ios_map files_by_id; /* record id -> file */
static struct ios_map files_by_fh; /* open MPI_File -> file */
static const struct ios_comm *mpi; /* the plugin's view of MPI's handles; NULL: pass through */
/* MPI-IO wrappers active on this thread: an MPI library that implements one MPI-IO call with
 * another is counted once, for the call the program made. */
static __thread int depth;

void ios_mpiio_enable(const struct ios_comm *comm) { mpi = comm->type_bytes ? comm : NULL; }

int64_t ios_mpi_type_bytes(uintptr_t datatype) { return mpi ? mpi->type_bytes(datatype, 1) : 0; }

static inline int active(void) { return mpi != NULL && depth == 0 && ios_recording(); }

static inline uint64_t fh_key(ios_file fh) { return (uint64_t)(uintptr_t)fh; }

/* Finds or creates the record of a normalized name; call inside ios_enter()/ios_leave(). */
static struct mpiio_file *file_by_name(const char *name) {
    return ios_file_by_name(&files_by_id, IOS_MOD_MPIIO, name, sizeof(struct mpiio_file),
                            sizeof(struct ios_mpiio_record), NULL);
}

static inline void meta_time(struct mpiio_file *f, double t1, double t2) {
    ios_timer_add(&f->rec->fcounters[MPIIO_F_META_TIME], t1, t2, &f->last_meta_end);
}

static void opened(ios_handle comm, const char *filename, int amode, ios_handle info, ios_file fh,
                   double t1, double t2) {
    char name[PATH_MAX];
    filename = ios_strip_fs_prefix(filename);
    int procs = mpi->comm_size(comm), no_hints = mpi->info_is_null(info);
    if (ios_normalize_path(filename, AT_FDCWD, name, sizeof name) != 0 || !ios_enter())
        return;
    struct mpiio_file *f = file_by_name(name);
    if (f) {
        int64_t *c = f->rec->counters;
        double *fc = f->rec->fcounters;
        c[MPIIO_MODE] = amode;
        c[procs == 1 ? MPIIO_INDEP_OPENS : MPIIO_COLL_OPENS]++;
        if (!no_hints)
            c[MPIIO_HINTS]++;
        ios_first_start(&fc[MPIIO_F_OPEN_START_TIMESTAMP], t1);
        fc[MPIIO_F_OPEN_END_TIMESTAMP] = t2;
        meta_time(f, t1, t2);
        ios_map_put(&files_by_fh, fh_key(fh), f);
    }
    ios_leave();
}

/* A read or write of count elements of datatype, posted or done during [t1, t2]. */
#define DXT_ON IOS_UNLIKELY(ios_dxt_flags &(1 << IOS_DXT_MPIIO))

/* DXT's offset of a call without one: the individual position before the call (etypes). */
static inline int64_t dxt_position(ios_file fh) {
    return DXT_ON && mpi->byte_offset ? mpi->position(fh) : -1;
}

/* The DXT_MPIIO segment of a read or write at offset at of fh's view (etypes). Apart, so that an
 * untraced call pays the test of DXT_ON only. */
static __attribute__((noinline)) void dxt_segment(ios_file fh, int is_write, int64_t at,
                                                  int64_t count, ios_handle datatype, double t1,
                                                  double t2) {
    int64_t bytes = mpi->type_bytes(datatype, count);
    int64_t byte_off = mpi->byte_offset ? mpi->byte_offset(fh, at) : -1;
    if (!ios_enter())
        return;
    struct mpiio_file *f = ios_map_get(&files_by_fh, fh_key(fh));
    if (f)
        ios_dxt_add(IOS_DXT_MPIIO, f->rec->base.id, is_write, byte_off, bytes, t1, t2);
    ios_leave();
}

/* A read or write of count elements of datatype, posted or done during [t1, t2]. */
static void count_rw(ios_file fh, int is_write, int counter, int64_t count, ios_handle datatype,
                     double t1, double t2) {
    int64_t bytes = mpi->type_bytes(datatype, count);
    if (!ios_enter())
        return;
    struct mpiio_file *f = ios_map_get(&files_by_fh, fh_key(fh));
    if (f) {
        int64_t *c = f->rec->counters;
        double *fc = f->rec->fcounters;
        c[counter]++;
        c[is_write ? MPIIO_BYTES_WRITTEN : MPIIO_BYTES_READ] += bytes;
        c[(is_write ? MPIIO_SIZE_WRITE_AGG_0_100 : MPIIO_SIZE_READ_AGG_0_100) +
          ios_size_bin(bytes)]++;
        ios_value_count(&f->access, bytes, &c[MPIIO_ACCESS1_ACCESS], &c[MPIIO_ACCESS1_COUNT]);
        if (f->last_io == (is_write ? IO_READ : IO_WRITE))
            c[MPIIO_RW_SWITCHES]++;
        f->last_io = is_write ? IO_WRITE : IO_READ;
        int start = is_write ? MPIIO_F_WRITE_START_TIMESTAMP : MPIIO_F_READ_START_TIMESTAMP;
        ios_first_start(&fc[start], t1);
        fc[is_write ? MPIIO_F_WRITE_END_TIMESTAMP : MPIIO_F_READ_END_TIMESTAMP] = t2;
        int max_time = is_write ? MPIIO_F_MAX_WRITE_TIME : MPIIO_F_MAX_READ_TIME;
        if (fc[max_time] < t2 - t1) {
            fc[max_time] = t2 - t1;
            c[is_write ? MPIIO_MAX_WRITE_TIME_SIZE : MPIIO_MAX_READ_TIME_SIZE] = bytes;
        }
        if (is_write)
            ios_timer_add(&fc[MPIIO_F_WRITE_TIME], t1, t2, &f->last_write_end);
        else
            ios_timer_add(&fc[MPIIO_F_READ_TIME], t1, t2, &f->last_read_end);
        ios_heatmap_add(IOS_HEATMAP_MPIIO, is_write, bytes, t1, t2);
    }
    ios_leave();
}

/* Runs the real call, timed, with this thread's depth raised; ret and [t1, t2] for the caller. */
#define MPIIO_TIMED(ret, call)                                                                     \
    IOS_TIMED_CALL(int, ret, (depth++, call));                                                     \
    depth--;                                                                                       \
    int saved_errno = errno

/* Each wrapper is exported under both names: programs and MPICH's Fortran bindings call
 * MPI_File_*, Open MPI's Fortran bindings call PMPI_File_*. The real call is always the MPI
 * library's PMPI_File_*. */
#define MPIIO_WRAP(name, params, args, record) MPIIO_WRAP_AT(name, params, args, 0, record)
/* at: evaluated before the real call (DXT's offset of a read or write). */
#define MPIIO_WRAP_AT(name, params, args, at_expr, record)                                         \
    IOS_EXPORT int MPI_File_##name params {                                                        \
        IOS_NEXT_REAL(int, params, "PMPI_File_" #name, "MPI");                                     \
        if (!active())                                                                             \
            return real args;                                                                      \
        int64_t at = at_expr;                                                                      \
        (void)at;                                                                                  \
        MPIIO_TIMED(ret, real args);                                                               \
        if (ret == 0)                                                                              \
            record;                                                                                \
        errno = saved_errno;                                                                       \
        return ret;                                                                                \
    }                                                                                              \
    IOS_EXPORT int PMPI_File_##name params __attribute__((alias("MPI_File_" #name)))

/* ---- reads and writes (mpiio_calls.def) -------------------------------------------------- */
#define MPIIO_PARAMS_BUF (ios_file fh, void *buf, int count, ios_handle dt, void *status_or_request)
#define MPIIO_ARGS_BUF (fh, buf, count, dt, status_or_request)
#define MPIIO_PARAMS_AT_BUF                                                                        \
    (ios_file fh, ios_offset off, void *buf, int count, ios_handle dt, void *status_or_request)
#define MPIIO_ARGS_AT_BUF (fh, off, buf, count, dt, status_or_request)
#define MPIIO_PARAMS_BEGIN (ios_file fh, void *buf, int count, ios_handle dt)
#define MPIIO_ARGS_BEGIN (fh, buf, count, dt)
#define MPIIO_PARAMS_AT_BEGIN (ios_file fh, ios_offset off, void *buf, int count, ios_handle dt)
#define MPIIO_ARGS_AT_BEGIN (fh, off, buf, count, dt)

/* DXT's offset of each shape: the call's own, or the position before it. */
#define MPIIO_AT_BUF dxt_position(fh)
#define MPIIO_AT_AT_BUF off
#define MPIIO_AT_BEGIN dxt_position(fh)
#define MPIIO_AT_AT_BEGIN off

#define X(name, shape, dir, kind)                                                                  \
    MPIIO_WRAP_AT(name, MPIIO_PARAMS_##shape, MPIIO_ARGS_##shape, MPIIO_AT_##shape, {              \
        count_rw(fh, IO_##dir == IO_WRITE, MPIIO_##kind##_##dir##S, count, dt, t1, t2);            \
        if (DXT_ON)                                                                                \
            dxt_segment(fh, IO_##dir == IO_WRITE, at, count, dt, t1, t2);                          \
    });
#include "mpiio_calls.def"
#undef X

/* ---- open, close, sync, views -------------------------------------------------------------- */
MPIIO_WRAP(open, (ios_handle comm, const char *filename, int amode, ios_handle info, ios_file *fh),
           (comm, filename, amode, info, fh),
           if (filename && fh) opened(comm, filename, amode, info, *fh, t1, t2));

static void closed(ios_file fh, double t1, double t2) {
    if (!ios_enter())
        return;
    struct mpiio_file *f = ios_map_get(&files_by_fh, fh_key(fh));
    if (f) {
        double *fc = f->rec->fcounters;
        ios_first_start(&fc[MPIIO_F_CLOSE_START_TIMESTAMP], t1);
        fc[MPIIO_F_CLOSE_END_TIMESTAMP] = t2;
        meta_time(f, t1, t2);
        ios_map_del(&files_by_fh, fh_key(fh));
    }
    ios_leave();
}

/* MPI_File_close sets *fh to MPI_FILE_NULL: the handle is taken before the call. */
IOS_EXPORT int MPI_File_close(ios_file *fh) {
    IOS_NEXT_REAL(int, (ios_file *), "PMPI_File_close", "MPI");
    if (!active() || !fh)
        return real(fh);
    ios_file handle = *fh;
    MPIIO_TIMED(ret, real(fh));
    if (ret == 0)
        closed(handle, t1, t2);
    errno = saved_errno;
    return ret;
}
IOS_EXPORT int PMPI_File_close(ios_file *fh) __attribute__((alias("MPI_File_close")));

/* Darshan counts a sync's time as write time: it is when the writes reach storage. */
static void synced(ios_file fh, double t1, double t2) {
    if (!ios_enter())
        return;
    struct mpiio_file *f = ios_map_get(&files_by_fh, fh_key(fh));
    if (f) {
        f->rec->counters[MPIIO_SYNCS]++;
        ios_timer_add(&f->rec->fcounters[MPIIO_F_WRITE_TIME], t1, t2, &f->last_write_end);
    }
    ios_leave();
}
MPIIO_WRAP(sync, (ios_file fh), (fh), synced(fh, t1, t2));

static void view_set(ios_file fh, ios_handle info, double t1, double t2) {
    int no_hints = mpi->info_is_null(info);
    if (!ios_enter())
        return;
    struct mpiio_file *f = ios_map_get(&files_by_fh, fh_key(fh));
    if (f) {
        f->rec->counters[MPIIO_VIEWS]++;
        if (!no_hints)
            f->rec->counters[MPIIO_HINTS]++;
        meta_time(f, t1, t2);
    }
    ios_leave();
}
MPIIO_WRAP(set_view,
           (ios_file fh, ios_offset disp, ios_handle etype, ios_handle filetype,
            const char *datarep, ios_handle info),
           (fh, disp, etype, filetype, datarep, info), view_set(fh, info, t1, t2));

/* ---- shutdown ------------------------------------------------------------------------------ */
void ios_mpiio_collect(struct ios_record_set *set) {
    set->mod = IOS_MOD_MPIIO;
    set->rec_size = sizeof(struct ios_mpiio_record);
    set->count = set->len = 0;
    set->buf = malloc(files_by_id.count * set->rec_size + 1);
    if (!set->buf)
        return;
    for (size_t i = 0; i < files_by_id.cap; i++) {
        struct mpiio_file *f = files_by_id.keys[i] ? files_by_id.vals[i] : NULL;
        if (!f)
            continue;
        struct ios_mpiio_record *r = (void *)(set->buf + set->len);
        *r = *f->rec;
        /* From the tracked values (a memory-mapped log's live slots hold the same). */
        memset(&r->counters[MPIIO_ACCESS1_ACCESS], 0,
               (MPIIO_ACCESS4_COUNT - MPIIO_ACCESS1_ACCESS + 1) * sizeof(int64_t));
        ios_common_merge(&r->counters[MPIIO_ACCESS1_ACCESS], &r->counters[MPIIO_ACCESS1_COUNT],
                         f->access.value, f->access.count, f->access.n);
        set->len += set->rec_size;
        set->count++;
    }
}

void ios_mpiio_reset(void) {
    ios_map_free(&files_by_id);
    ios_map_free(&files_by_fh);
}
