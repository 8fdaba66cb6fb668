# Several-process profiling (`mpirun -np N ppsim profile`, docs/profile.md) and the work split
# of `plan` and `simulate` under mpirun/srun (docs/plan.md), wired in when the
# top level found MPI (PPSIM_HAVE_MPI). MPI is linked PRIVATE so its include flags stay on the
# profiler's own sources: the rest of the tree keeps its compile lines (and its ccache hits).
# Without MPI, mpi_profile_absent.cc makes an mpirun launch fail saying how to build it.
# Built with or without MPI: the node grouping (pure) and the launch detection (a build
# without MPI must still notice mpirun).
target_sources(ppsim_profiler PRIVATE node_groups.cc mpi_launch.cc)
if(NOT PPSIM_HAVE_MPI)
  target_sources(ppsim_profiler PRIVATE mpi_profile_absent.cc mpi_work_split_absent.cc)
  return()
endif()
# mpi_work_split.cc: `plan` and `simulate` share their simulations over the ranks
# (simulator/engine/work_split.h; the core itself never links MPI).
target_sources(ppsim_profiler PRIVATE mpi_profile.cc mpi_world.cc mpi_collective_sweep.cc
                                      mpi_collective_runner.cc mpi_work_split.cc)
target_link_libraries(ppsim_profiler PRIVATE MPI::MPI_CXX)
if(PPSIM_HAVE_NCCL)
  # One rank of an NCCL communicator bootstrapped over MPI; the .cu itself has no MPI.
  target_sources(ppsim_profiler_cuda PRIVATE nccl_rank_bench.cu)
  target_compile_definitions(ppsim_profiler PRIVATE PPSIM_HAVE_NCCL_RANKS=1)
endif()
