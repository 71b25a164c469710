# Self-pretraining (host/pretrain): the two objectives, the phase on the
# training loop (labels never read, held-out splits never read, determinism,
# resume), and the manifest's [pretrain] section; the CLI part (both phases
# through `run`, kill and resume across the boundary, verify's chain checks,
# the leaderboard's division, a Python mixer, re-evaluation of a bundle) is
# test_pretraining_cli.
lra_unit_test(test_pretraining
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_pretraining.cpp
  LIBS lra_host_pretrain lra_host_manifest lra_host_results TORCH_PCH)

lra_unit_test(test_pretraining_cli
  SOURCES ${PROJECT_SOURCE_DIR}/tests/integration/test_pretraining_cli.cpp
  LIBS lra_host_results nlohmann_json::nlohmann_json LABEL integration)
target_include_directories(test_pretraining_cli PRIVATE ${PROJECT_SOURCE_DIR}/tests/integration)
add_dependencies(test_pretraining_cli lrahost ${lra_builtin_plugins})
target_compile_definitions(test_pretraining_cli PRIVATE LRAHOST_BIN="$<TARGET_FILE:lrahost>"
                           LRA_PLUGIN_DIR="${LRA_PLUGIN_OUTPUT_DIR}"
                           LRA_FIXTURE_PLUGIN_DIR="${LRA_FIXTURE_PLUGIN_DIR}"
                           LRA_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                           LRA_SDK_PYTHON_EXAMPLES="${PROJECT_SOURCE_DIR}/sdk/examples/python")
