# Submission bundles, the sandbox, label-free inputs files, the private test
# set's parameters and the two-proportion test (host/reevaluation).
lra_unit_test(test_reevaluation
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_reevaluation.cpp
  LIBS lra_host_reevaluation TORCH_PCH)

# Issue 31, "no flooding": bundle bombs, repeated runs and oversized data
# parameters refused before anything is written or generated.
lra_unit_test(test_flooding
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_flooding.cpp
  LIBS lra_host_bundle lra_host_data_params_check LABELS "unit;adversarial")
