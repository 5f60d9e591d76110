! MPI-IO from Fortran (see test_mpiio.py): Open MPI's Fortran bindings call PMPI_File_*, MPICH's
! call MPI_File_*; the runtime must see both. Rank r of np, on DIR/fortran.dat opened by all
! ranks (CREATE|RDWR, no info): one write_at of 100 default integers at 400 r, a barrier, one
! read_at_all of the same block, close. Any MPI error exits with 99.
program mpiio_fortran
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, np, fh, i
  integer :: buf(100), status(MPI_STATUS_SIZE)
  integer(kind=MPI_OFFSET_KIND) :: offset
  character(len=4096) :: dir

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  call get_command_argument(1, dir)
  do i = 1, 100
    buf(i) = rank * 1000 + i
  end do
  offset = 400 * rank
  call MPI_File_open(MPI_COMM_WORLD, trim(dir) // '/fortran.dat', &
                     MPI_MODE_CREATE + MPI_MODE_RDWR, MPI_INFO_NULL, fh, ierr)
  call check(ierr)
  call MPI_File_write_at(fh, offset, buf, 100, MPI_INTEGER, status, ierr)
  call check(ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_File_read_at_all(fh, offset, buf, 100, MPI_INTEGER, status, ierr)
  call check(ierr)
  call MPI_File_close(fh, ierr)
  call check(ierr)
  call MPI_Finalize(ierr)

contains

  subroutine check(code)
    integer, intent(in) :: code
    if (code /= MPI_SUCCESS) then
      write (0, *) 'FAILED: MPI error', code
      call exit(99)
    end if
  end subroutine check

end program mpiio_fortran
