! A Fortran program over the bgl netmod (mpif.h bindings): ring exchange,
! allreduce, and MPI_WTIME in simulated time. Prints "ok"/"not ok" lines.
program fortran_ring
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, nranks, left, right, sum, expect
  integer :: status(MPI_STATUS_SIZE)
  double precision :: sendv(100), recvv(100), t0, t1
  character(len=MPI_MAX_PROCESSOR_NAME) :: pname
  integer :: plen, i
  logical :: good

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
  right = mod(rank + 1, nranks)
  left = mod(rank + nranks - 1, nranks)
  do i = 1, 100
    sendv(i) = rank * 1000 + i
  end do
  t0 = MPI_WTIME()
  call MPI_SENDRECV(sendv, 100, MPI_DOUBLE_PRECISION, right, 3, &
                    recvv, 100, MPI_DOUBLE_PRECISION, left, 3, MPI_COMM_WORLD, status, ierr)
  t1 = MPI_WTIME()
  good = .true.
  do i = 1, 100
    if (recvv(i) /= left * 1000 + i) good = .false.
  end do
  if (good .and. status(MPI_SOURCE) == left) then
    write (*, '(A,I0,A)') 'ok ', rank, ' - Fortran MPI_SENDRECV around the ring: 100 doubles from the left'
  else
    write (*, '(A,I0,A)') 'not ok ', rank, ' - Fortran MPI_SENDRECV around the ring'
  end if
  ! simulated time: a few thousand cycles at 700 MHz, far below a host's microseconds-per-call
  if (t1 > t0 .and. (t1 - t0) * 700.0d6 > 1000.0d0 .and. (t1 - t0) < 1.0d-3) then
    write (*, '(A,I0,A,F10.0,A)') 'ok ', rank, ' - MPI_WTIME is simulated time (', (t1 - t0) * 700.0d6, ' cycles)'
  else
    write (*, '(A,I0,A,ES12.4)') 'not ok ', rank, ' - MPI_WTIME is simulated time: ', t1 - t0
  end if
  call MPI_ALLREDUCE(rank, sum, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  expect = nranks * (nranks - 1) / 2
  if (sum == expect) then
    write (*, '(A,I0,A,I0)') 'ok ', rank, ' - Fortran MPI_ALLREDUCE sum of ranks = ', sum
  else
    write (*, '(A,I0,A,I0)') 'not ok ', rank, ' - Fortran MPI_ALLREDUCE sum of ranks = ', sum
  end if
  call MPI_GET_PROCESSOR_NAME(pname, plen, ierr)
  if (index(pname(1:plen), 'torus') > 0) then
    write (*, '(A,I0,A,A)') 'ok ', rank, ' - processor name ', pname(1:plen)
  else
    write (*, '(A,I0,A,A)') 'not ok ', rank, ' - processor name ', pname(1:plen)
  end if
  call MPI_FINALIZE(ierr)
end program fortran_ring
