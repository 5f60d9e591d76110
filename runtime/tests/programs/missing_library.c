/* Calls of MPI, HDF5 and PnetCDF functions in a program that has none of these libraries
 * (test_failsafe.py::test_a_missing_library_fails_the_call_not_the_program): the names are found
 * with dlsym, so only the runtime's wrappers answer. Prints, per name, "absent" or
 * "<name> ret=<value> errno=<errno>", and exits 0.
 *
 *   MPI_File_open(0, DIR/f, 0, 0, &fh)   H5Fcreate(DIR/f.h5, 0, 0, 0)   ncmpi_open(0, DIR/f.nc, 0,
 * 0, &id)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"

typedef int (*mpi_file_open)(long, const char *, int, long, void *);
typedef int64_t (*h5f_create)(const char *, unsigned, int64_t, int64_t);
typedef int (*ncmpi_open)(long, const char *, int, long, int *);

static void report(const char *name, long long ret) {
    printf("%s ret=%lld errno=%d\n", name, ret, errno);
}

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    void *f;
    long fh = 0;
    int id = 0;
    if ((f = dlsym(RTLD_DEFAULT, "MPI_File_open")) != NULL) {
        errno = 0;
        report("MPI_File_open", ((mpi_file_open)f)(0, path_in(dir, "f"), 0, 0, &fh));
    } else
        puts("absent");
    if ((f = dlsym(RTLD_DEFAULT, "H5Fcreate")) != NULL) {
        errno = 0;
        report("H5Fcreate", (long long)((h5f_create)f)(path_in(dir, "f.h5"), 0, 0, 0));
    } else
        puts("absent");
    if ((f = dlsym(RTLD_DEFAULT, "ncmpi_open")) != NULL) {
        errno = 0;
        report("ncmpi_open", ((ncmpi_open)f)(0, path_in(dir, "f.nc"), 0, 0, &id));
    } else
        puts("absent");
    return 0;
}
