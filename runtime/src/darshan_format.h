/* On-disk layout of a Darshan log, format "3.41", as darshan-util 3.5.0 reads it.
 * See ../shared/reference/darshan-log-format.md; every size below is checked at compile time. */
#ifndef IOS_DARSHAN_FORMAT_H
#define IOS_DARSHAN_FORMAT_H

#include <assert.h>
#include <stdint.h>

#define IOS_LOG_VERSION "3.41"
#define IOS_LOG_MAGIC 6567223
#define IOS_COMP_ZLIB 0
#define IOS_COMP_NONE 2
#define IOS_MAX_MODS 64
#define IOS_JOB_METADATA_LEN 1024
#define IOS_EXE_LEN 3016 /* command line + mount table, NUL included */

/* Module ids are indices into the header's maps; only the ones this runtime writes. */
enum ios_module_id {
    IOS_MOD_POSIX = 1,
    IOS_MOD_MPIIO = 2,
    IOS_MOD_H5F = 3,
    IOS_MOD_H5D = 4,
    IOS_MOD_PNETCDF_FILE = 5,
    IOS_MOD_PNETCDF_VAR = 6,
    IOS_MOD_LUSTRE = 8,
    IOS_MOD_STDIO = 9,
    IOS_MOD_DXT_POSIX = 10,
    IOS_MOD_DXT_MPIIO = 11,
    IOS_MOD_HEATMAP = 15,
};
#define IOS_POSIX_VER 4
#define IOS_MPIIO_VER 3
#define IOS_H5F_VER 3
#define IOS_H5D_VER 2
#define IOS_PNETCDF_FILE_VER 3
#define IOS_PNETCDF_VAR_VER 1
#define IOS_LUSTRE_VER 2
#define IOS_STDIO_VER 2
#define IOS_HEATMAP_VER 1
/* DXT as Darshan 3.5.0 writes it (later versions add a thread id that 3.5.0 cannot read). */
#define IOS_DXT_POSIX_VER 1
#define IOS_DXT_MPIIO_VER 2

struct ios_log_map {
    uint64_t off;
    uint64_t len;
};

struct ios_log_header {
    char version_string[8];
    int64_t magic_nr;
    uint8_t comp_type;
    uint8_t pad[7];
    uint64_t partial_flag;
    struct ios_log_map name_map;
    struct ios_log_map mod_map[IOS_MAX_MODS];
    uint32_t mod_ver[IOS_MAX_MODS];
};
static_assert(sizeof(struct ios_log_header) == 1328, "Darshan 3.41 header is 1328 bytes");

struct ios_log_job {
    int64_t uid;
    int64_t start_time_sec;
    int64_t start_time_nsec;
    int64_t end_time_sec;
    int64_t end_time_nsec;
    int64_t nprocs;
    int64_t jobid;
    char metadata[IOS_JOB_METADATA_LEN];
};
static_assert(sizeof(struct ios_log_job) == 1080, "Darshan 3.41 job record is 1080 bytes");

struct ios_base_record {
    uint64_t id;
    int64_t rank; /* -1 for a record reduced over all ranks */
};

#define X(name) name,
enum ios_posix_counter {
#include "posix_counters.def"
    POSIX_NUM_INDICES
};
enum ios_posix_fcounter {
#include "posix_fcounters.def"
    POSIX_F_NUM_INDICES
};
enum ios_mpiio_counter {
#include "mpiio_counters.def"
    MPIIO_NUM_INDICES
};
enum ios_mpiio_fcounter {
#include "mpiio_fcounters.def"
    MPIIO_F_NUM_INDICES
};
enum ios_h5f_counter {
#include "h5f_counters.def"
    H5F_NUM_INDICES
};
enum ios_h5f_fcounter {
#include "h5f_fcounters.def"
    H5F_F_NUM_INDICES
};
enum ios_h5d_counter {
#include "h5d_counters.def"
    H5D_NUM_INDICES
};
enum ios_h5d_fcounter {
#include "h5d_fcounters.def"
    H5D_F_NUM_INDICES
};
enum ios_pnetcdf_file_counter {
#include "pnetcdf_file_counters.def"
    PNETCDF_FILE_NUM_INDICES
};
enum ios_pnetcdf_file_fcounter {
#include "pnetcdf_file_fcounters.def"
    PNETCDF_FILE_F_NUM_INDICES
};
enum ios_pnetcdf_var_counter {
#include "pnetcdf_var_counters.def"
    PNETCDF_VAR_NUM_INDICES
};
enum ios_pnetcdf_var_fcounter {
#include "pnetcdf_var_fcounters.def"
    PNETCDF_VAR_F_NUM_INDICES
};
enum ios_stdio_counter {
#include "stdio_counters.def"
    STDIO_NUM_INDICES
};
enum ios_stdio_fcounter {
#include "stdio_fcounters.def"
    STDIO_F_NUM_INDICES
};
#undef X

struct ios_posix_record {
    struct ios_base_record base;
    int64_t counters[POSIX_NUM_INDICES];
    double fcounters[POSIX_F_NUM_INDICES];
};
static_assert(sizeof(struct ios_posix_record) == 704, "POSIX v4 record is 704 bytes");

struct ios_mpiio_record {
    struct ios_base_record base;
    int64_t counters[MPIIO_NUM_INDICES];
    double fcounters[MPIIO_F_NUM_INDICES];
};
static_assert(sizeof(struct ios_mpiio_record) == 560, "MPI-IO v3 record is 560 bytes");

struct ios_h5f_record {
    struct ios_base_record base;
    int64_t counters[H5F_NUM_INDICES];
    double fcounters[H5F_F_NUM_INDICES];
};
static_assert(sizeof(struct ios_h5f_record) == 80, "H5F v3 record is 80 bytes");

/* H5D v2: the record id of the dataset's file (its H5F and POSIX records) follows the base. */
#define IOS_H5D_NDIMS 5                        /* dimensions of chunks and accesses kept */
#define IOS_H5D_ACCESS (1 + 2 * IOS_H5D_NDIMS) /* an access: size, lengths, strides */
struct ios_h5d_record {
    struct ios_base_record base;
    uint64_t file_rec_id;
    int64_t counters[H5D_NUM_INDICES];
    double fcounters[H5D_F_NUM_INDICES];
};
static_assert(sizeof(struct ios_h5d_record) == 912, "H5D v2 record is 912 bytes");

struct ios_pnetcdf_file_record {
    struct ios_base_record base;
    int64_t counters[PNETCDF_FILE_NUM_INDICES];
    double fcounters[PNETCDF_FILE_F_NUM_INDICES];
};
static_assert(sizeof(struct ios_pnetcdf_file_record) == 152, "PNETCDF_FILE v3 record is 152 bytes");

/* PNETCDF_VAR v1: one per variable, named "<file>:<variable>"; file_rec_id is its file's
 * PNETCDF_FILE record id. */
#define IOS_PNETCDF_VAR_MAX_NDIMS 5
struct ios_pnetcdf_var_record {
    struct ios_base_record base;
    uint64_t file_rec_id;
    int64_t counters[PNETCDF_VAR_NUM_INDICES];
    double fcounters[PNETCDF_VAR_F_NUM_INDICES];
};
static_assert(sizeof(struct ios_pnetcdf_var_record) == 1120, "PNETCDF_VAR v1 record is 1120 bytes");

struct ios_stdio_record {
    struct ios_base_record base;
    int64_t counters[STDIO_NUM_INDICES];
    double fcounters[STDIO_F_NUM_INDICES];
};
static_assert(sizeof(struct ios_stdio_record) == 248, "STDIO v2 record is 248 bytes");

/* LUSTRE v2: this fixed part, then num_comps components and num_stripes OST indices (reference
 * §6.4); the id is the file's POSIX record id, which carries the name. */
struct ios_lustre_record_head {
    struct ios_base_record base;
    int64_t num_comps;
    int64_t num_stripes; /* the sum of the components' stripe counts */
};
static_assert(sizeof(struct ios_lustre_record_head) == 32, "LUSTRE v2 fixed part is 32 bytes");
enum ios_lustre_comp_counter {
    LUSTRE_COMP_STRIPE_SIZE,
    LUSTRE_COMP_STRIPE_COUNT,
    LUSTRE_COMP_STRIPE_PATTERN,
    LUSTRE_COMP_FLAGS,
    LUSTRE_COMP_EXT_START,
    LUSTRE_COMP_EXT_END,
    LUSTRE_COMP_MIRROR_ID,
    LUSTRE_COMP_NUM_INDICES
};
struct ios_lustre_component {
    int64_t counters[LUSTRE_COMP_NUM_INDICES];
    char pool_name[16];
};
static_assert(sizeof(struct ios_lustre_component) == 72, "LUSTRE v2 component is 72 bytes");

/* HEATMAP v1 fixed part; write_bins[nbins] then read_bins[nbins] (int64) follow it. */
struct ios_heatmap_record_head {
    struct ios_base_record base;
    double bin_width_seconds;
    int64_t nbins;
    uint64_t unused_pointer_slots[2]; /* the reader skips them; Darshan writes two dead pointers */
};
static_assert(sizeof(struct ios_heatmap_record_head) == 48, "HEATMAP v1 fixed part is 48 bytes");

/* DXT_POSIX v1 / DXT_MPIIO v2 record: this head, then write_count then read_count segments. */
#define IOS_DXT_HOSTNAME_LEN 64
struct ios_dxt_record_head {
    struct ios_base_record base;
    int64_t shared_record; /* 0: this rank's trace (Darshan never writes shared ones) */
    char hostname[IOS_DXT_HOSTNAME_LEN];
    int64_t write_count, read_count;
};
static_assert(sizeof(struct ios_dxt_record_head) == 104, "DXT record head is 104 bytes");
struct ios_dxt_segment {
    int64_t offset, length; /* offset -1: not known (Darshan's MPI-IO under Open MPI) */
    double start_time, end_time;
};
static_assert(sizeof(struct ios_dxt_segment) == 32, "DXT segment is 32 bytes");

#endif
