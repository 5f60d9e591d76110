/* Lustre file placement shared by iostudy's benchmarks (iomodel, ioprobe): whether a directory is
 * on Lustre (statfs magic), and llapi_file_create from liblustreapi, loaded at run time with
 * dlopen so that one binary serves Lustre and non-Lustre machines (link with CMAKE_DL_LIBS).
 * Header-only: each benchmark is one C file. */
#ifndef IOSTUDY_LUSTRE_H
#define IOSTUDY_LUSTRE_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/vfs.h>

#define LUSTRE_SUPER_MAGIC 0x0BD00BD0L

/* llapi_file_create(name, stripe_size, stripe_offset, stripe_count, stripe_pattern): creates
 * name with that layout (0 or -1: the file system's default); 0, or -errno (-EEXIST when name
 * exists). */
typedef int (*llapi_file_create_fn)(const char *, unsigned long long, int, int, int);

static inline bool lustre_dir(const char *dir) {
    struct statfs sfs;
    return statfs(dir, &sfs) == 0 && (long)sfs.f_type == LUSTRE_SUPER_MAGIC;
}

/* llapi_file_create from the first liblustreapi that loads and has it, or NULL; *lib names the
 * library. The handle stays open for the life of the process. */
static inline llapi_file_create_fn lustre_load(const char **lib) {
    static const char *const names[] = {"liblustreapi.so.1", "liblustreapi.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        void *sym = h ? dlsym(h, "llapi_file_create") : NULL;
        if (h != NULL && sym == NULL)
            dlclose(h);
        if (sym != NULL) {
            *lib = names[i];
            return (llapi_file_create_fn)sym;
        }
    }
    return NULL;
}

/* llapi_file_create when dir is on Lustre and liblustreapi loads, NULL otherwise. With prog set,
 * one line on stderr says which case applies on Lustre: "PROG: DIR is on Lustre: WHAT (LIB)", or
 * a warning that the files get the default striping; nothing elsewhere. prog NULL: silent (the
 * ranks other than the one that reports). */
static inline llapi_file_create_fn lustre_api(const char *prog, const char *dir, const char *what) {
    if (!lustre_dir(dir))
        return NULL;
    const char *lib = NULL;
    llapi_file_create_fn create = lustre_load(&lib);
    if (prog != NULL && create != NULL)
        fprintf(stderr, "%s: %s is on Lustre: %s (%s)\n", prog, dir, what, lib);
    else if (prog != NULL)
        fprintf(stderr,
                "%s: warning: %s is on Lustre but liblustreapi cannot be loaded: "
                "default striping\n",
                prog, dir);
    return create;
}

#endif
