# Submission bundles, the sandbox, label-free inputs files, the private test
# set's parameters and the two-proportion test (host/reevaluation).
lra_unit_test(test_reevaluation
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_reevaluation.cpp ${CMAKE_CURRENT_LIST_DIR}/test_verifier_setting.cpp
  LIBS lra_host_reevaluation TORCH_PCH)

# Issue 31, "no flooding": bundle bombs, repeated runs and oversized data
# parameters refused before anything is written or generated.
lra_unit_test(test_flooding
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_flooding.cpp
  LIBS lra_host_bundle lra_host_data_params_check LABELS "unit;adversarial")
# The sandbox and reading what untrusted code wrote, attacked (issue 31): each
# test runs a hostile command or plants a file and checks it is stopped, with
# an honest case beside it. Runs the real lrahost inside, so it needs it built.
lra_unit_test(test_sandbox
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sandbox.cpp ${CMAKE_CURRENT_LIST_DIR}/test_untrusted_file.cpp
  LIBS lra_host_sandbox lra_host_common
  LABELS unit adversarial)
add_dependencies(test_sandbox lrahost fixture_honest)
target_compile_definitions(test_sandbox PRIVATE LRAHOST_BIN="$<TARGET_FILE:lrahost>"
                           LRA_FIXTURE_PLUGIN_DIR="${LRA_FIXTURE_PLUGIN_DIR}")

# Issue 28: a Python mixer's sources in a bundle — honest folders extracted,
# edited sources, unrecorded files and escaping names refused; submit's packing.
lra_unit_test(test_bundle_python
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_bundle_python.cpp
  LIBS lra_host_bundle LABELS "unit;adversarial")

# Issue 43: a compiled mixer's source in a bundle (the verifier builds it and
# runs what it built) and the rule for which code a re-evaluation runs.
lra_unit_test(test_bundle_source
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_bundle_source.cpp
  LIBS lra_host_bundle LABELS "unit;adversarial")
