/* The collective operations of the shutdown, for one MPI flavour: compiled once against Open
 * MPI and once against MPICH, since their handles differ in type and value. Only PMPI_ entry
 * points are used, so that tools wrapping MPI do not see iostudy's own communication. */
#include "iostudy.h" /* first: it sets _GNU_SOURCE for the system headers */

#include <mpi.h>
#include <string.h>

static void (*current_combine)(const void *in, void *inout);
static size_t current_size;

static void apply_combine(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    for (int i = 0; i < *len; i++)
        current_combine((char *)in + (size_t)i * current_size,
                        (char *)inout + (size_t)i * current_size);
}

static MPI_Op mpi_op(int op) {
    switch (op) {
    case IOS_OP_MIN:
        return MPI_MIN;
    case IOS_OP_MAX:
        return MPI_MAX;
    case IOS_OP_BAND:
        return MPI_BAND;
    case IOS_OP_BOR:
        return MPI_BOR;
    default:
        return MPI_SUM;
    }
}

static void bcast(void *buf, size_t len) { PMPI_Bcast(buf, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD); }

static void allreduce_i64(int64_t *buf, int n, int op) {
    PMPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_INT64_T, mpi_op(op), MPI_COMM_WORLD);
}

static void allreduce_f64(double *buf, int n, int op) {
    PMPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, mpi_op(op), MPI_COMM_WORLD);
}

static void exscan_sum_i64(const int64_t *in, int64_t *out, int n) {
    int rank;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Exscan((void *)in, out, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) /* MPI leaves rank 0's result undefined */
        memset(out, 0, sizeof(int64_t) * (size_t)n);
}

/* Non-commutative, so MPI combines in rank order and ties resolve the same way every run. */
static void reduce_elems(void *buf, size_t n, size_t elem_size,
                         void (*combine)(const void *, void *)) {
    int rank;
    MPI_Datatype type;
    MPI_Op op;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    current_combine = combine;
    current_size = elem_size;
    PMPI_Type_contiguous((int)elem_size, MPI_BYTE, &type);
    PMPI_Type_commit(&type);
    PMPI_Op_create(apply_combine, 0, &op);
    PMPI_Reduce(rank == 0 ? MPI_IN_PLACE : buf, rank == 0 ? buf : NULL, (int)n, type, op, 0,
                MPI_COMM_WORLD);
    PMPI_Op_free(&op);
    PMPI_Type_free(&type);
}

/* MPI's handles arrive as uintptr_t; the casts give them back their type (an int in MPICH, a
 * pointer in Open MPI): converting the integer is exact for both. */
static int64_t type_bytes(uintptr_t datatype, int64_t count) {
    MPI_Count size = 0;
    if (count <= 0 || (MPI_Datatype)datatype == MPI_DATATYPE_NULL ||
        PMPI_Type_size_x((MPI_Datatype)datatype, &size) != MPI_SUCCESS)
        return 0;
    return (int64_t)size * count;
}

static int comm_size(uintptr_t comm) {
    int size = 0;
    return PMPI_Comm_size((MPI_Comm)comm, &size) == MPI_SUCCESS ? size : 0;
}

static int info_is_null(uintptr_t info) { return (MPI_Info)info == MPI_INFO_NULL; }

static int64_t position(void *fh) {
    MPI_Offset at = 0;
    return PMPI_File_get_position((MPI_File)fh, &at) == MPI_SUCCESS ? (int64_t)at : -1;
}

#ifndef OPEN_MPI
static int64_t get_byte_offset(void *fh, int64_t offset) {
    MPI_Offset bytes = -1;
    if (offset < 0 || PMPI_File_get_byte_offset((MPI_File)fh, offset, &bytes) != MPI_SUCCESS)
        return -1;
    return (int64_t)bytes;
}
#else
#define get_byte_offset                                                                            \
    NULL /* Darshan 3.5.0 does not ask Open MPI (an ompio bug), and writes -1                      \
          */
#endif

IOS_EXPORT int ios_mpi_plugin_init(struct ios_comm *comm) {
    if (PMPI_Comm_rank(MPI_COMM_WORLD, &comm->rank) != MPI_SUCCESS ||
        PMPI_Comm_size(MPI_COMM_WORLD, &comm->size) != MPI_SUCCESS)
        return -1;
    comm->mpi = 1;
    comm->bcast = bcast;
    comm->allreduce_i64 = allreduce_i64;
    comm->allreduce_f64 = allreduce_f64;
    comm->exscan_sum_i64 = exscan_sum_i64;
    comm->reduce_elems = reduce_elems;
    comm->type_bytes = type_bytes;
    comm->comm_size = comm_size;
    comm->info_is_null = info_is_null;
    comm->position = position;
    comm->byte_offset = get_byte_offset;
    return 0;
}
