/* H5F module: wrappers of HDF5's H5Fcreate, H5Fopen, H5Fflush and H5Fclose and Darshan's H5F v3
 * record, with darshan-runtime 3.5.0's semantics: opens count creates too, the meta time is that
 * of all four calls, a record is named by the file's path as POSIX names it.
 *
 * The library is built without hdf5.h (it loads into programs with any HDF5, or none): hid_t is
 * a 64-bit integer since HDF5 1.10, herr_t an int, H5F_scope_t an enum (int-sized). The real
 * functions are found in the HDF5 library when a wrapper first runs. */
#include "wrap.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>

typedef int64_t ios_hid; /* hid_t */
#define IOS_H5P_DEFAULT 0

struct h5f_file { /* the record first: ios_file_by_name */
    struct ios_h5f_record *rec;
    double last_meta_end;
};

static struct ios_map files_by_id;  /* record id -> file */
static struct ios_map files_by_hid; /* open file id -> file (file ids are never 0) */

static void *real_symbol(const char *name) { return ios_next_symbol(name, "HDF5"); }

static struct h5f_file *file_by_name(const char *name) {
    return ios_file_by_name(&files_by_id, IOS_MOD_H5F, name, sizeof(struct h5f_file),
                            sizeof(struct ios_h5f_record), NULL);
}

/* 1 when the file access property list selects the MPI-IO driver. HDF5 without parallel support
 * has no H5FD_mpio_init: never. Called outside the lock (it calls into HDF5). */
static int uses_mpiio(ios_hid fapl) {
    static ios_hid (*get_driver)(ios_hid);
    static ios_hid (*mpio_driver)(void);
    static int looked_up; /* once: a serial HDF5 stays without them */
    if (fapl == IOS_H5P_DEFAULT)
        return 0;
    if (!looked_up) {
        get_driver = (ios_hid(*)(ios_hid))dlsym(RTLD_DEFAULT, "H5Pget_driver");
        mpio_driver = (ios_hid(*)(void))dlsym(RTLD_DEFAULT, "H5FD_mpio_init");
        looked_up = 1;
    }
    if (!get_driver || !mpio_driver)
        return 0;
    ios_hid driver = get_driver(fapl);
    return driver >= 0 && driver == mpio_driver();
}

static void opened(const char *filename, ios_hid fapl, ios_hid file, double t1, double t2) {
    char name[PATH_MAX];
    ios_guard(1); /* HDF5's own work here is not the program's */
    int use_mpiio = uses_mpiio(fapl);
    ios_guard(0);
    if (ios_normalize_path(ios_strip_fs_prefix(filename), AT_FDCWD, name, sizeof name) != 0 ||
        !ios_enter())
        return;
    struct h5f_file *f = file_by_name(name);
    if (f) {
        f->rec->counters[H5F_OPENS]++;
        f->rec->counters[H5F_USE_MPIIO] = use_mpiio;
        double *fc = f->rec->fcounters;
        ios_first_start(&fc[H5F_F_OPEN_START_TIMESTAMP], t1);
        fc[H5F_F_OPEN_END_TIMESTAMP] = t2;
        ios_timer_add(&fc[H5F_F_META_TIME], t1, t2, &f->last_meta_end);
        ios_map_put(&files_by_hid, (uint64_t)file, f);
    }
    ios_leave();
}

/* A wrapper of ios_hid H5F<name> params, which opens or creates the file named filename with
 * the access property list fapl. */
#define H5F_WRAP_OPEN(name, params, args)                                                          \
    IOS_EXPORT ios_hid H5F##name params {                                                          \
        IOS_NEXT_REAL(ios_hid, params, "H5F" #name, "HDF5");                                       \
        if (!ios_recording() || !filename)                                                         \
            return real args;                                                                      \
        IOS_TIMED_CALL(ios_hid, ret, real args);                                                   \
        if (ret >= 0)                                                                              \
            IOS_KEEP_ERRNO(opened(filename, fapl, ret, t1, t2));                                   \
        return ret;                                                                                \
    }

H5F_WRAP_OPEN(create, (const char *filename, unsigned flags, ios_hid fcpl, ios_hid fapl),
              (filename, flags, fcpl, fapl))
H5F_WRAP_OPEN(open, (const char *filename, unsigned flags, ios_hid fapl), (filename, flags, fapl))

static int (*real_close)(ios_hid);

static void flushed(ios_hid file, double t1, double t2) {
    if (!ios_enter())
        return;
    struct h5f_file *f = ios_map_get(&files_by_hid, (uint64_t)file);
    if (f) {
        f->rec->counters[H5F_FLUSHES]++;
        ios_timer_add(&f->rec->fcounters[H5F_F_META_TIME], t1, t2, &f->last_meta_end);
    }
    ios_leave();
}

/* H5Fflush takes any object of a file (a dataset, a group): as Darshan does, the file's id comes
 * from H5Iget_file_id, whose new reference to the file is closed again. */
IOS_EXPORT int H5Fflush(ios_hid object, int scope) {
    static int (*real)(ios_hid, int);
    static ios_hid (*file_of)(ios_hid);
    if (IOS_UNLIKELY(!real)) {
        real = real_symbol("H5Fflush");
        real_close = real_symbol("H5Fclose");
        file_of = (ios_hid(*)(ios_hid))real_symbol("H5Iget_file_id");
    }
    if (!ios_recording())
        return real(object, scope);
    IOS_TIMED_CALL(int, ret, real(object, scope));
    int saved_errno = errno;
    if (ret >= 0) {
        ios_guard(1); /* HDF5's own work here is not the program's */
        ios_hid file = file_of(object);
        ios_guard(0);
        if (file > 0) {
            flushed(file, t1, t2);
            ios_guard(1);
            real_close(file);
            ios_guard(0);
        }
    }
    errno = saved_errno;
    return ret;
}

IOS_EXPORT int H5Fclose(ios_hid file) {
    if (IOS_UNLIKELY(!real_close))
        real_close = real_symbol("H5Fclose");
    if (!ios_recording())
        return real_close(file);
    IOS_TIMED_CALL(int, ret, real_close(file));
    int saved_errno = errno;
    if (ret >= 0 && ios_enter()) {
        struct h5f_file *f = ios_map_get(&files_by_hid, (uint64_t)file);
        if (f) {
            double *fc = f->rec->fcounters;
            ios_first_start(&fc[H5F_F_CLOSE_START_TIMESTAMP], t1);
            fc[H5F_F_CLOSE_END_TIMESTAMP] = t2;
            ios_timer_add(&fc[H5F_F_META_TIME], t1, t2, &f->last_meta_end);
            ios_map_del(&files_by_hid, (uint64_t)file);
        }
        ios_leave();
    }
    errno = saved_errno;
    return ret;
}

/* ---- shutdown ------------------------------------------------------------------------------ */
void ios_h5f_collect(struct ios_record_set *set) {
    ios_collect_records(set, IOS_MOD_H5F, sizeof(struct ios_h5f_record), &files_by_id);
}

void ios_h5f_reset(void) {
    ios_map_free(&files_by_id);
    ios_map_free(&files_by_hid);
}
