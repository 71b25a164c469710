# Data parallelism: where a process sits, read from the launcher's variables.
lra_unit_test(test_distributed
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_distributed.cpp
  LIBS lra_host_distributed)
