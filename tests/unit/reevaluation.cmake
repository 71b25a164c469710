# Submission bundles, the sandbox, label-free inputs files, the private test
# set's parameters and the two-proportion test (host/reevaluation).
lra_unit_test(test_reevaluation
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_reevaluation.cpp
  LIBS lra_host_reevaluation TORCH_PCH)
