! A 1-byte ping-pong in Fortran (mpif.h): half round-trip time in simulated
! cycles from MPI_WTIME, 100 round trips after 2 warm-ups. With the default
! clock the preloaded wrappers see MPICH's Fortran binding call the C
! PMPI_ functions, so the binding's time is MPI's, not computation: the
! figure is Table 1's 2,350 cycles like the C ping-pong's.
program fpingpong
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, i, status(MPI_STATUS_SIZE)
  integer, parameter :: iters = 100
  character :: b
  double precision :: t0, t

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  b = 'x'
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  do i = -1, iters
    if (i == 1) t0 = MPI_WTIME()
    if (rank == 0) then
      call MPI_SEND(b, 1, MPI_CHARACTER, 1, 0, MPI_COMM_WORLD, ierr)
      call MPI_RECV(b, 1, MPI_CHARACTER, 1, 0, MPI_COMM_WORLD, status, ierr)
    else if (rank == 1) then
      call MPI_RECV(b, 1, MPI_CHARACTER, 0, 0, MPI_COMM_WORLD, status, ierr)
      call MPI_SEND(b, 1, MPI_CHARACTER, 0, 0, MPI_COMM_WORLD, ierr)
    end if
  end do
  t = (MPI_WTIME() - t0) / (2.0d0 * iters)
  if (rank == 0) then
    write (*, '(A,I0,A)') 'fpingpong: 1 bytes: ', nint(t * 700.0d6), ' cycles per half round trip'
  end if
  call MPI_FINALIZE(ierr)
end program fpingpong
