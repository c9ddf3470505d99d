! The default clock from Fortran (mpif.h): CPU time inside MPI, in MPICH's
! Fortran binding and the C function it calls, is MPI's, not computation.
! cputime.c's "inside" check from Fortran: 20 calls of MPI_REDUCE_LOCAL on
! 1 Mi doubles (milliseconds of CPU inside MPI, no communication) must cost
! under 1% of what that CPU time would be charged at PCT; a hundredfold
! margin either way, so no host's noise decides it.   fcputime PCT
program fcputime
  implicit none
  include 'mpif.h'
  integer, parameter :: n = 1048576, calls = 20
  double precision, allocatable :: a(:), b(:)
  double precision :: pct, c0, c1, t0, t1, sim, would
  character(len=32) :: arg
  character(len=8) :: verdict
  integer :: ierr, rank, i, k

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call get_command_argument(1, arg)
  read (arg, *) pct
  allocate (a(n), b(n))
  do i = 1, n
    a(i) = i
    b(i) = i
  end do
  ! first touch: pages and caches
  call MPI_REDUCE_LOCAL(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, ierr)
  call cpu_time(c0)
  t0 = MPI_WTIME()
  do k = 1, calls
    call MPI_REDUCE_LOCAL(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, ierr)
  end do
  t1 = MPI_WTIME()
  call cpu_time(c1)
  sim = (t1 - t0) * 700.0d6
  would = (c1 - c0) * pct / 100.0d0 * 700.0d6
  verdict = 'ok'
  if (.not. (sim < 0.01d0 * would)) verdict = 'not ok'
  write (*, '(A,A,I0,A,I0,A,F0.1,A,I0,A,I0,A)') trim(verdict), ' ', rank, &
    ' - -clock cputime at ', nint(pct), '%, Fortran: ', (c1 - c0) * 1.0d3, &
    ' ms of CPU inside MPI_REDUCE_LOCAL cost ', nint(sim), &
    ' simulated cycles (charged as computation: ', nint(would, kind=8), ')'
  verdict = 'ok'
  if (b(n) /= dble(n) * (calls + 2)) verdict = 'not ok'
  write (*, '(A,A,I0,A)') trim(verdict), ' ', rank, ' - MPI_REDUCE_LOCAL summed'
  call MPI_FINALIZE(ierr)
end program fcputime
