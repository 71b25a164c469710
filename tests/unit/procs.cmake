# Issue 31 (processes, checkpoints, sweeps, dropout): checkpoint pruning that
# never deletes what is not this run's, the task/seed lists sweep and suite
# share, and dropout masks that do not depend on how the batch is split.
lra_unit_test(test_procs
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_procs.cpp
  LIBS lra_host_runs TORCH_PCH LABELS "unit;adversarial")
