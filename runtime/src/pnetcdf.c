/* PNETCDF_FILE module: wrappers of PnetCDF's file calls (ncmpi_create, _open, _enddef, _redef,
 * _sync, _wait, _wait_all, _close) and Darshan's PNETCDF_FILE v3 record, with darshan-runtime
 * 3.5.0's semantics: the bytes are PnetCDF's own count of a file's traffic (header included),
 * asked for just before the close; waits count whether or not they succeed (failures apart).
 *
 * The library is built without pnetcdf.h and mpi.h: MPI_Comm and MPI_Info are passed through as
 * uintptr_t exactly as mpiio.c passes them (see its header), MPI_Offset is long long. The real
 * functions are found in the PnetCDF library when a wrapper first runs. */
#include "wrap.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>

typedef uintptr_t ios_handle; /* MPI_Comm, MPI_Info */
#define IOS_NC_NOERR 0

struct pnetcdf_file { /* the record first: ios_file_by_name */
    struct ios_pnetcdf_file_record *rec;
    double last_meta_end, last_wait_end;
};

static struct ios_map files_by_id;   /* record id -> file */
static struct ios_map files_by_ncid; /* open ncid -> file */

static void *real_symbol(const char *name) { return ios_next_symbol(name, "PnetCDF"); }

/* ncids start at 0; the map's keys never do. */
static inline uint64_t ncid_key(int ncid) { return (uint64_t)(uint32_t)ncid + 1; }

static struct pnetcdf_file *file_by_name(const char *name) {
    return ios_file_by_name(&files_by_id, IOS_MOD_PNETCDF_FILE, name, sizeof(struct pnetcdf_file),
                            sizeof(struct ios_pnetcdf_file_record), NULL);
}

static inline void meta_time(struct pnetcdf_file *f, double t1, double t2) {
    ios_timer_add(&f->rec->fcounters[PNETCDF_FILE_F_META_TIME], t1, t2, &f->last_meta_end);
}

/* counter: PNETCDF_FILE_CREATES or _OPENS. */
static void opened(const char *path, int ncid, int counter, double t1, double t2) {
    char name[PATH_MAX];
    if (ios_normalize_path(ios_strip_fs_prefix(path), AT_FDCWD, name, sizeof name) != 0 ||
        !ios_enter())
        return;
    struct pnetcdf_file *f = file_by_name(name);
    if (f) {
        double *fc = f->rec->fcounters;
        f->rec->counters[counter]++;
        ios_first_start(&fc[PNETCDF_FILE_F_OPEN_START_TIMESTAMP], t1);
        fc[PNETCDF_FILE_F_OPEN_END_TIMESTAMP] = t2;
        meta_time(f, t1, t2);
        ios_map_put(&files_by_ncid, ncid_key(ncid), f);
    }
    ios_leave();
}

/* Runs the real call, timed; ret and [t1, t2] for the caller. */
#define PNC_TIMED(ret, call)                                                                       \
    IOS_TIMED_CALL(int, ret, call);                                                                \
    int saved_errno = errno

/* A wrapper of int ncmpi_<name> params: the real call, then record (with ret, t1, t2) when the
 * call succeeded, or always (waits). */
#define PNC_WRAP(name, params, args, always, record)                                               \
    IOS_EXPORT int ncmpi_##name params {                                                           \
        IOS_NEXT_REAL(int, params, "ncmpi_" #name, "PnetCDF");                                     \
        if (!ios_recording())                                                                      \
            return real args;                                                                      \
        PNC_TIMED(ret, real args);                                                                 \
        if (always || ret == IOS_NC_NOERR)                                                         \
            record;                                                                                \
        errno = saved_errno;                                                                       \
        return ret;                                                                                \
    }

PNC_WRAP(create, (ios_handle comm, const char *path, int cmode, ios_handle info, int *ncidp),
         (comm, path, cmode, info, ncidp), 0,
         if (path && ncidp) opened(path, *ncidp, PNETCDF_FILE_CREATES, t1, t2))
PNC_WRAP(open, (ios_handle comm, const char *path, int omode, ios_handle info, int *ncidp),
         (comm, path, omode, info, ncidp), 0,
         if (path && ncidp) opened(path, *ncidp, PNETCDF_FILE_OPENS, t1, t2))

/* enddef, redef, sync: meta time, and the counter (-1: none). */
static void meta_call(int ncid, int counter, double t1, double t2) {
    if (!ios_enter())
        return;
    struct pnetcdf_file *f = ios_map_get(&files_by_ncid, ncid_key(ncid));
    if (f) {
        if (counter >= 0)
            f->rec->counters[counter]++;
        meta_time(f, t1, t2);
    }
    ios_leave();
}
PNC_WRAP(enddef, (int ncid), (ncid), 0, meta_call(ncid, -1, t1, t2))
PNC_WRAP(redef, (int ncid), (ncid), 0, meta_call(ncid, PNETCDF_FILE_REDEFS, t1, t2))
PNC_WRAP(sync, (int ncid), (ncid), 0, meta_call(ncid, PNETCDF_FILE_SYNCS, t1, t2))

/* counter: PNETCDF_FILE_INDEP_WAITS or _COLL_WAITS, counted when the wait succeeded. */
static void waited(int ncid, int ret, int counter, double t1, double t2) {
    if (!ios_enter())
        return;
    struct pnetcdf_file *f = ios_map_get(&files_by_ncid, ncid_key(ncid));
    if (f) {
        double *fc = f->rec->fcounters;
        f->rec->counters[ret == IOS_NC_NOERR ? counter : PNETCDF_FILE_WAIT_FAILURES]++;
        ios_first_start(&fc[PNETCDF_FILE_F_WAIT_START_TIMESTAMP], t1);
        fc[PNETCDF_FILE_F_WAIT_END_TIMESTAMP] = t2;
        ios_timer_add(&fc[PNETCDF_FILE_F_WAIT_TIME], t1, t2, &f->last_wait_end);
    }
    ios_leave();
}
PNC_WRAP(wait, (int ncid, int num, int *requests, int *statuses), (ncid, num, requests, statuses),
         1, waited(ncid, ret, PNETCDF_FILE_INDEP_WAITS, t1, t2))
PNC_WRAP(wait_all, (int ncid, int num, int *requests, int *statuses),
         (ncid, num, requests, statuses), 1, waited(ncid, ret, PNETCDF_FILE_COLL_WAITS, t1, t2))

/* PnetCDF's count of the bytes a file moved (ncmpi_inq_put_size, _get_size); -1 when it
 * cannot tell. */
typedef int (*traffic_query)(int ncid, long long *bytes);
static long long traffic(traffic_query inq, int ncid) {
    long long bytes;
    return inq(ncid, &bytes) == IOS_NC_NOERR ? bytes : -1;
}

/* Darshan's rule: a count PnetCDF could not give once stays -1. */
static void add_traffic(int64_t *counter, long long bytes) {
    *counter = bytes >= 0 && *counter >= 0 ? *counter + bytes : -1;
}

static void closed(int ncid, long long put, long long get, double t1, double t2) {
    if (!ios_enter())
        return;
    struct pnetcdf_file *f = ios_map_get(&files_by_ncid, ncid_key(ncid));
    if (f) {
        int64_t *c = f->rec->counters;
        double *fc = f->rec->fcounters;
        add_traffic(&c[PNETCDF_FILE_BYTES_WRITTEN], put);
        add_traffic(&c[PNETCDF_FILE_BYTES_READ], get);
        ios_first_start(&fc[PNETCDF_FILE_F_CLOSE_START_TIMESTAMP], t1);
        fc[PNETCDF_FILE_F_CLOSE_END_TIMESTAMP] = t2;
        meta_time(f, t1, t2);
        ios_map_del(&files_by_ncid, ncid_key(ncid));
    }
    ios_leave();
}

/* The byte counts are asked for before the close, while the ncid is valid. */
IOS_EXPORT int ncmpi_close(int ncid) {
    static int (*real)(int);
    static traffic_query put_size, get_size;
    if (IOS_UNLIKELY(!real)) {
        put_size = (traffic_query)real_symbol("ncmpi_inq_put_size");
        get_size = (traffic_query)real_symbol("ncmpi_inq_get_size");
        real = real_symbol("ncmpi_close");
    }
    if (!ios_recording())
        return real(ncid);
    int tracked = 0;
    if (ios_enter()) {
        tracked = ios_map_get(&files_by_ncid, ncid_key(ncid)) != NULL;
        ios_leave();
    }
    long long put = 0, get = 0;
    if (tracked) {
        int saved = errno;
        ios_guard(1); /* PnetCDF's own work here is not the program's */
        put = traffic(put_size, ncid);
        get = traffic(get_size, ncid);
        ios_guard(0);
        errno = saved;
    }
    PNC_TIMED(ret, real(ncid));
    if (ret == IOS_NC_NOERR && tracked)
        closed(ncid, put, get, t1, t2);
    errno = saved_errno;
    return ret;
}

/* ---- shutdown ------------------------------------------------------------------------------ */
void ios_pnetcdf_file_collect(struct ios_record_set *set) {
    ios_collect_records(set, IOS_MOD_PNETCDF_FILE, sizeof(struct ios_pnetcdf_file_record),
                        &files_by_id);
}

void ios_pnetcdf_file_reset(void) {
    ios_map_free(&files_by_id);
    ios_map_free(&files_by_ncid);
}
