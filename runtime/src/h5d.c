/* H5D module: one Darshan H5D v2 record per HDF5 dataset, with darshan-runtime 3.5.0's semantics.
 * Wrapped: H5Dcreate1, H5Dcreate2, H5Dopen1, H5Dopen2, H5Dread, H5Dwrite, H5Dflush, H5Dclose, and
 * H5Oopen, H5Oopen_by_addr, H5Oopen_by_idx, H5Oopen_by_token (HDF5 1.12+) and H5Oclose when the
 * object is a dataset.
 *
 * A record is named "<file>:<loc><name>" as Darshan names it: the file's path (H5Fget_name, made
 * absolute as POSIX names it), a colon, the path of the location the dataset was opened from
 * (H5Iget_name: "/" for the file itself) and the name given, with no separator between the last
 * two ("f.h5:/d" for d in the file, "f.h5:/gd" for d in group /g); at most 255 characters, cut
 * where Darshan cuts. file_rec_id is the record id of the file's path.
 *
 * An access (H5Dread, H5Dwrite) moves the points of its file selection (the dataset's, for
 * H5S_ALL) times the dataset's datatype size; a hyperslab selection is regular when
 * H5Sis_regular_hyperslab says so, and its count x block and stride per dimension make up the
 * access beside its size (in the slots of the first five dimensions, the fifth first, as Darshan
 * fills them). The shape (dimensions, points, datatype size, chunk sizes) is the last open's.
 *
 * Built without hdf5.h, as hdf5.c: hid_t and hsize_t are 64-bit, herr_t, htri_t and HDF5's enums
 * int-sized (HDF5 1.10+). The HDF5 functions the wrappers ask are found at the first open; HDF5's
 * own work there is guarded (not the program's I/O). */
#include "wrap.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>

typedef int64_t ios_hid; /* hid_t */
#define H5P_DEFAULT_ 0
#define H5S_ALL_ 0
#define H5S_SEL_POINTS_ 1
#define H5S_SEL_HYPERSLABS_ 2
#define H5D_CHUNKED_ 2
#define H5I_DATASET_ 5
#define H5FD_MPIO_COLLECTIVE_ 1
#define H5S_MAX_RANK_ 32
#define NAME_MAX_ 256 /* Darshan's DARSHAN_HDF5_MAX_NAME_LEN: names of at most 255 characters */
#define W IOS_H5D_ACCESS
#define TRACKED 32 /* distinct accesses counted per dataset, as Darshan */

struct h5d_access {
    int64_t v[W];
    int64_t n;
};

struct h5d_dataset { /* the record first: ios_file_by_name */
    struct ios_h5d_record *rec;
    int last_io; /* 0, or 1 + the last access's is_write */
    double last_read_end, last_write_end, last_meta_end;
    int naccesses, room;
    struct h5d_access *accesses; /* grown as distinct accesses come, up to TRACKED */
};

static struct ios_map datasets_by_id;  /* record id -> dataset */
static struct ios_map datasets_by_hid; /* open dataset id -> dataset */

/* The HDF5 functions the wrappers ask (none of them wrapped). */
static struct {
    int looked_up, ok;
    ssize_t (*fget_name)(ios_hid, char *, size_t);
    ssize_t (*iget_name)(ios_hid, char *, size_t);
    int (*iget_type)(ios_hid);
    ios_hid (*dget_type)(ios_hid), (*dget_space)(ios_hid), (*dget_create_plist)(ios_hid);
    int (*tclose)(ios_hid), (*sclose)(ios_hid), (*pclose)(ios_hid);
    int (*extent_ndims)(ios_hid);
    int64_t (*extent_npoints)(ios_hid);
    int (*get_layout)(ios_hid);
    int (*get_chunk)(ios_hid, int, uint64_t *);
    size_t (*tget_size)(ios_hid);
    int64_t (*select_npoints)(ios_hid);
    int (*select_type)(ios_hid);
    int (*is_regular)(ios_hid);
    int (*get_regular)(ios_hid, uint64_t *, uint64_t *, uint64_t *, uint64_t *);
    int (*get_dxpl_mpio)(ios_hid, int *); /* parallel HDF5 only */
} h5;

#define H5_FN(field, name) (*(void **)&h5.field = dlsym(RTLD_DEFAULT, name))
static int h5_functions(void) {
    if (IOS_LIKELY(__atomic_load_n(&h5.looked_up, __ATOMIC_ACQUIRE)))
        return h5.ok;
    h5.ok = H5_FN(fget_name, "H5Fget_name") && H5_FN(iget_name, "H5Iget_name") &&
            H5_FN(iget_type, "H5Iget_type") && H5_FN(dget_type, "H5Dget_type") &&
            H5_FN(dget_space, "H5Dget_space") && H5_FN(dget_create_plist, "H5Dget_create_plist") &&
            H5_FN(tclose, "H5Tclose") && H5_FN(sclose, "H5Sclose") && H5_FN(pclose, "H5Pclose") &&
            H5_FN(extent_ndims, "H5Sget_simple_extent_ndims") &&
            H5_FN(extent_npoints, "H5Sget_simple_extent_npoints") &&
            H5_FN(get_layout, "H5Pget_layout") && H5_FN(get_chunk, "H5Pget_chunk") &&
            H5_FN(tget_size, "H5Tget_size") && H5_FN(select_npoints, "H5Sget_select_npoints") &&
            H5_FN(select_type, "H5Sget_select_type") &&
            H5_FN(is_regular, "H5Sis_regular_hyperslab") &&
            H5_FN(get_regular, "H5Sget_regular_hyperslab");
    H5_FN(get_dxpl_mpio, "H5Pget_dxpl_mpio");
    __atomic_store_n(&h5.looked_up, 1, __ATOMIC_RELEASE); /* another thread may look them up too */
    return h5.ok;
}

/* ---- opens -------------------------------------------------------------------------------- */
/* What an open learns of the dataset besides its name. */
struct h5d_shape {
    int64_t ndims, npoints, type_size;
    int nchunk; /* chunk dimensions known (0: keep the record's) */
    uint64_t chunk[H5S_MAX_RANK_];
};

/* The record name of dataset name opened from loc, and its file's record id (0 when the file's
 * name does not fit); -1: not recorded. Darshan's steps, in a buffer of 256. */
static int dataset_name(ios_hid loc, const char *name, char *out, uint64_t *file_id) {
    char raw[NAME_MAX_] = {0}, path[PATH_MAX];
    ssize_t len = h5.fget_name(loc, raw, NAME_MAX_ - 1);
    *file_id = 0;
    memset(out, 0, NAME_MAX_);
    if (len < 0)
        return -1;
    if (len >= NAME_MAX_ - 1) { /* the file's name cut short: it names the record alone */
        memcpy(out, raw, NAME_MAX_);
        return 0;
    }
    if (ios_normalize_path(ios_strip_fs_prefix(raw), AT_FDCWD, path, sizeof path) != 0)
        return -1;
    *file_id = ios_record_id(path);
    size_t used = strlen(path) < NAME_MAX_ - 1 ? strlen(path) : NAME_MAX_ - 1;
    memcpy(out, path, used); /* out is zeroed */
    if (used + 2 > NAME_MAX_ - 1)
        return 0;
    out[used++] = ':';
    size_t room = NAME_MAX_ - 1 - used;
    ssize_t loc_len = h5.iget_name(loc, out + used, room);
    if (loc_len < 0)
        return -1;
    if ((size_t)loc_len < room && name) {
        used = strlen(out);
        strncat(out + used, name, NAME_MAX_ - 1 - used);
    }
    return 0;
}

static void dataset_shape(ios_hid type, ios_hid space, ios_hid dcpl, struct h5d_shape *s) {
    s->ndims = h5.extent_ndims(space);
    s->npoints = h5.extent_npoints(space);
    s->type_size = (int64_t)h5.tget_size(type);
    s->nchunk = 0;
    if (dcpl != H5P_DEFAULT_ && h5.get_layout(dcpl) == H5D_CHUNKED_) {
        int n = h5.get_chunk(dcpl, IOS_H5D_NDIMS, s->chunk);
        s->nchunk = n < IOS_H5D_NDIMS ? n : IOS_H5D_NDIMS;
    }
}

static void opened(ios_hid loc, const char *name, ios_hid dset, const struct h5d_shape *s,
                   int deprecated, double t1, double t2) {
    char rec_name[NAME_MAX_];
    uint64_t file_id;
    ios_guard(1);
    int named = dataset_name(loc, name, rec_name, &file_id) == 0;
    ios_guard(0);
    if (!named || !ios_enter())
        return;
    struct h5d_dataset *d =
        ios_file_by_name(&datasets_by_id, IOS_MOD_H5D, rec_name, sizeof *d, sizeof *d->rec, NULL);
    if (d) {
        int64_t *c = d->rec->counters;
        double *fc = d->rec->fcounters;
        c[H5D_OPENS]++;
        c[H5D_USE_DEPRECATED] = deprecated;
        ios_first_start(&fc[H5D_F_OPEN_START_TIMESTAMP], t1);
        fc[H5D_F_OPEN_END_TIMESTAMP] = t2;
        ios_timer_add(&fc[H5D_F_META_TIME], t1, t2, &d->last_meta_end);
        c[H5D_DATASPACE_NDIMS] = s->ndims;
        c[H5D_DATASPACE_NPOINTS] = s->npoints;
        for (int i = 0; i < s->nchunk; i++) /* D1 is the last dimension */
            c[H5D_CHUNK_SIZE_D1 + i] = (int64_t)s->chunk[s->nchunk - 1 - i];
        c[H5D_DATATYPE_SIZE] = s->type_size;
        d->rec->file_rec_id = file_id;
        ios_map_put(&datasets_by_hid, (uint64_t)dset, d);
    }
    ios_leave();
}

/* A dataset created from the type, space and creation properties given. */
static void created(ios_hid loc, const char *name, ios_hid dset, ios_hid type, ios_hid space,
                    ios_hid dcpl, int deprecated, double t1, double t2) {
    struct h5d_shape s;
    if (!h5_functions())
        return;
    ios_guard(1);
    dataset_shape(type, space, dcpl, &s);
    ios_guard(0);
    opened(loc, name, dset, &s, deprecated, t1, t2);
}

/* An opened object: its shape asked of HDF5; nothing unless it is a dataset (by_id: H5Oopen's,
 * whose object may be any; no name: the dataset's own path is the name). */
static void dataset_opened(ios_hid loc, const char *name, ios_hid dset, int deprecated, int by_id,
                           double t1, double t2) {
    struct h5d_shape s;
    char own_name[NAME_MAX_] = {0};
    if (!h5_functions())
        return;
    ios_guard(1);
    ios_hid type = -1, space = -1, dcpl = -1;
    int ok = !by_id || h5.iget_type(dset) == H5I_DATASET_;
    ok = ok && (type = h5.dget_type(dset)) >= 0 && (space = h5.dget_space(dset)) >= 0 &&
         (dcpl = h5.dget_create_plist(dset)) >= 0;
    if (ok && !name) {
        ok = h5.iget_name(dset, own_name, NAME_MAX_) != 0;
        name = own_name;
    }
    if (ok)
        dataset_shape(type, space, dcpl, &s);
    if (type >= 0)
        h5.tclose(type);
    if (space >= 0)
        h5.sclose(space);
    if (dcpl >= 0)
        h5.pclose(dcpl);
    ios_guard(0);
    if (ok)
        opened(loc, name, dset, &s, deprecated, t1, t2);
}

/* ---- reads and writes --------------------------------------------------------------------- */
/* What an access's file selection is: its type (-1 for H5S_ALL), points, and for a regular
 * hyperslab the access's lengths and strides. */
struct h5d_selection {
    int type, regular, collective;
    int64_t npoints;
    int64_t access[W];
};

static void selection_of(ios_hid space, ios_hid dxpl, struct h5d_selection *sel) {
    memset(sel, 0, sizeof *sel);
    sel->type = -1;
    if (space != H5S_ALL_) {
        sel->npoints = h5.select_npoints(space);
        sel->type = h5.select_type(space);
    }
    if (sel->type == H5S_SEL_HYPERSLABS_ && h5.is_regular(space) > 0) {
        uint64_t start[H5S_MAX_RANK_] = {0}, stride[H5S_MAX_RANK_] = {0};
        uint64_t count[H5S_MAX_RANK_] = {0}, block[H5S_MAX_RANK_] = {0};
        sel->regular = 1;
        h5.get_regular(space, start, stride, count, block);
        for (int i = 0; i < IOS_H5D_NDIMS; i++) { /* Darshan's slots: the fifth dimension first */
            int dim = IOS_H5D_NDIMS - 1 - i;
            sel->access[1 + i] = (int64_t)(count[dim] * block[dim]);
            sel->access[1 + IOS_H5D_NDIMS + i] = (int64_t)stride[dim];
        }
    }
    int mode;
    if (dxpl != H5P_DEFAULT_ && h5.get_dxpl_mpio && h5.get_dxpl_mpio(dxpl, &mode) >= 0 &&
        mode == H5FD_MPIO_COLLECTIVE_)
        sel->collective = 1;
}

/* Counts an access among the dataset's TRACKED distinct ones and puts it where it ranks in the
 * record's four most common (an access of size 0 is counted, never kept). */
static void count_access(struct h5d_dataset *d, const int64_t *access) {
    struct h5d_access *a = NULL;
    for (int i = 0; i < d->naccesses && !a; i++)
        if (memcmp(d->accesses[i].v, access, sizeof d->accesses[i].v) == 0)
            a = &d->accesses[i];
    if (!a && d->naccesses == d->room && d->room < TRACKED) {
        int room = d->room ? 2 * d->room : 2;
        struct h5d_access *more = realloc(d->accesses, (size_t)room * sizeof *more);
        if (more) {
            d->accesses = more;
            d->room = room;
        }
    }
    if (!a && d->naccesses < d->room) {
        a = &d->accesses[d->naccesses++];
        memcpy(a->v, access, sizeof a->v);
        a->n = 0;
    }
    if (!a)
        return;
    a->n++;
    ios_h5d_common_insert(&d->rec->counters[H5D_ACCESS1_ACCESS],
                          &d->rec->counters[H5D_ACCESS1_COUNT], a->v, a->n);
}

static void count_io(struct h5d_dataset *d, struct h5d_selection *sel, int is_write, double t1,
                     double t2) {
    int64_t *c = d->rec->counters;
    double *fc = d->rec->fcounters;
    c[is_write ? H5D_WRITES : H5D_READS]++;
    if (d->last_io == 1 + !is_write)
        c[H5D_RW_SWITCHES]++;
    d->last_io = 1 + is_write;
    if (sel->type == H5S_SEL_POINTS_)
        c[H5D_POINT_SELECTS]++;
    else if (sel->type == H5S_SEL_HYPERSLABS_)
        c[sel->regular ? H5D_REGULAR_HYPERSLAB_SELECTS : H5D_IRREGULAR_HYPERSLAB_SELECTS]++;
    int64_t npoints = sel->type < 0 ? c[H5D_DATASPACE_NPOINTS] : sel->npoints;
    int64_t size = (int64_t)((uint64_t)npoints * (uint64_t)c[H5D_DATATYPE_SIZE]);
    c[is_write ? H5D_BYTES_WRITTEN : H5D_BYTES_READ] += size;
    c[(is_write ? H5D_SIZE_WRITE_AGG_0_100 : H5D_SIZE_READ_AGG_0_100) + ios_size_bin(size)]++;
    sel->access[0] = size;
    count_access(d, sel->access);
    if (sel->collective)
        c[H5D_USE_MPIIO_COLLECTIVE] = 1;
    int ts = is_write ? H5D_F_WRITE_START_TIMESTAMP : H5D_F_READ_START_TIMESTAMP;
    ios_first_start(&fc[ts], t1);
    fc[ts + H5D_F_OPEN_END_TIMESTAMP - H5D_F_OPEN_START_TIMESTAMP] = t2;
    int max = is_write ? H5D_F_MAX_WRITE_TIME : H5D_F_MAX_READ_TIME;
    if (fc[max] < t2 - t1) {
        fc[max] = t2 - t1;
        c[is_write ? H5D_MAX_WRITE_TIME_SIZE : H5D_MAX_READ_TIME_SIZE] = size;
    }
    ios_timer_add(&fc[is_write ? H5D_F_WRITE_TIME : H5D_F_READ_TIME], t1, t2,
                  is_write ? &d->last_write_end : &d->last_read_end);
}

/* An access of a tracked dataset: its selection asked of HDF5 outside the lock, then counted. */
static void accessed(ios_hid dset, ios_hid file_space, ios_hid dxpl, int is_write, double t1,
                     double t2) {
    if (!ios_enter())
        return;
    int tracked = ios_map_get(&datasets_by_hid, (uint64_t)dset) != NULL;
    ios_leave();
    if (!tracked || !h5_functions())
        return;
    struct h5d_selection sel;
    ios_guard(1);
    selection_of(file_space, dxpl, &sel);
    ios_guard(0);
    if (!ios_enter())
        return;
    struct h5d_dataset *d = ios_map_get(&datasets_by_hid, (uint64_t)dset);
    if (d) /* not closed meanwhile by another thread */
        count_io(d, &sel, is_write, t1, t2);
    ios_leave();
}

/* ---- flushes and closes ------------------------------------------------------------------- */
static void flushed_or_closed(ios_hid dset, int closed, double t1, double t2) {
    if (!ios_enter())
        return;
    struct h5d_dataset *d = ios_map_get(&datasets_by_hid, (uint64_t)dset);
    if (d) {
        double *fc = d->rec->fcounters;
        if (closed) {
            ios_first_start(&fc[H5D_F_CLOSE_START_TIMESTAMP], t1);
            fc[H5D_F_CLOSE_END_TIMESTAMP] = t2;
            ios_map_del(&datasets_by_hid, (uint64_t)dset);
        } else {
            d->rec->counters[H5D_FLUSHES]++;
        }
        ios_timer_add(&fc[H5D_F_META_TIME], t1, t2, &d->last_meta_end);
    }
    ios_leave();
}

/* ---- the wrappers ------------------------------------------------------------------------- */
/* A wrapper of ios_hid <name> params that makes a dataset, or opens an object, then records with
 * record (a call, with ret, t1 and t2 in scope) when it succeeded. */
#define H5D_WRAP_OPEN(name, params, args, record)                                                  \
    IOS_EXPORT ios_hid name params {                                                               \
        IOS_NEXT_REAL(ios_hid, params, #name, "HDF5");                                             \
        if (!ios_recording())                                                                      \
            return real args;                                                                      \
        IOS_TIMED_CALL(ios_hid, ret, real args);                                                   \
        if (ret >= 0)                                                                              \
            IOS_KEEP_ERRNO(record);                                                                \
        return ret;                                                                                \
    }

H5D_WRAP_OPEN(H5Dcreate1,
              (ios_hid loc, const char *name, ios_hid type, ios_hid space, ios_hid dcpl),
              (loc, name, type, space, dcpl), created(loc, name, ret, type, space, dcpl, 1, t1, t2))
H5D_WRAP_OPEN(H5Dcreate2,
              (ios_hid loc, const char *name, ios_hid type, ios_hid space, ios_hid lcpl,
               ios_hid dcpl, ios_hid dapl),
              (loc, name, type, space, lcpl, dcpl, dapl),
              created(loc, name, ret, type, space, dcpl, 0, t1, t2))
H5D_WRAP_OPEN(H5Dopen1, (ios_hid loc, const char *name), (loc, name),
              dataset_opened(loc, name, ret, 1, 0, t1, t2))
H5D_WRAP_OPEN(H5Dopen2, (ios_hid loc, const char *name, ios_hid dapl), (loc, name, dapl),
              dataset_opened(loc, name, ret, 0, 0, t1, t2))
H5D_WRAP_OPEN(H5Oopen, (ios_hid loc, const char *name, ios_hid lapl), (loc, name, lapl),
              dataset_opened(loc, name, ret, 0, 1, t1, t2))
H5D_WRAP_OPEN(H5Oopen_by_addr, (ios_hid loc, uint64_t addr), (loc, addr),
              dataset_opened(loc, NULL, ret, 0, 1, t1, t2))
H5D_WRAP_OPEN(H5Oopen_by_idx,
              (ios_hid loc, const char *group, int index, int order, uint64_t n, ios_hid lapl),
              (loc, group, index, order, n, lapl), dataset_opened(loc, NULL, ret, 0, 1, t1, t2))
struct ios_h5o_token { /* H5O_token_t (HDF5 1.12+), passed by value */
    uint8_t data[16];
};
H5D_WRAP_OPEN(H5Oopen_by_token, (ios_hid loc, struct ios_h5o_token token), (loc, token),
              dataset_opened(loc, NULL, ret, 0, 1, t1, t2))

/* A wrapper of int <name>(ios_hid dset params) (H5Dread, H5Dwrite) that records an access. */
#define H5D_WRAP_RW(name, is_write, params, args)                                                  \
    IOS_EXPORT int name(ios_hid dset, ios_hid mem_type, ios_hid mem_space, ios_hid file_space,     \
                        ios_hid dxpl, params) {                                                    \
        IOS_NEXT_REAL(int, (ios_hid, ios_hid, ios_hid, ios_hid, ios_hid, params), #name, "HDF5");  \
        if (!ios_recording())                                                                      \
            return real(dset, mem_type, mem_space, file_space, dxpl, args);                        \
        IOS_TIMED_CALL(int, ret, real(dset, mem_type, mem_space, file_space, dxpl, args));         \
        if (ret >= 0)                                                                              \
            IOS_KEEP_ERRNO(accessed(dset, file_space, dxpl, is_write, t1, t2));                    \
        return ret;                                                                                \
    }

H5D_WRAP_RW(H5Dread, 0, void *buf, buf)
H5D_WRAP_RW(H5Dwrite, 1, const void *buf, buf)

/* A wrapper of int <name>(ios_hid object) (H5Dflush, H5Dclose, H5Oclose) that records a flush or
 * a close of a tracked dataset. */
#define H5D_WRAP_META(name, closes)                                                                \
    IOS_EXPORT int name(ios_hid object) {                                                          \
        IOS_NEXT_REAL(int, (ios_hid), #name, "HDF5");                                              \
        if (!ios_recording())                                                                      \
            return real(object);                                                                   \
        IOS_TIMED_CALL(int, ret, real(object));                                                    \
        if (ret >= 0)                                                                              \
            IOS_KEEP_ERRNO(flushed_or_closed(object, closes, t1, t2));                             \
        return ret;                                                                                \
    }

H5D_WRAP_META(H5Dflush, 0)
H5D_WRAP_META(H5Dclose, 1)
H5D_WRAP_META(H5Oclose, 1)

/* ---- shutdown ------------------------------------------------------------------------------ */
void ios_h5d_collect(struct ios_record_set *set) {
    ios_collect_records(set, IOS_MOD_H5D, sizeof(struct ios_h5d_record), &datasets_by_id);
}

void ios_h5d_reset(void) {
    ios_map_free(&datasets_by_id);
    ios_map_free(&datasets_by_hid);
}
