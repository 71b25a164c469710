# The LRA reference settings of the built-in mixers (manifests/reference-mixers/):
# the table, resolution against the real plugins, every mixer x task inside the
# parameter budget (models built on CPU), and --set / third-party plugins.
get_property(lra_builtin_plugins GLOBAL PROPERTY LRA_BUILTIN_PLUGIN_TARGETS)
lra_unit_test(test_reference_mixers
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_reference_mixers.cpp
  LIBS lra_host_cli TORCH_PCH)
target_compile_definitions(test_reference_mixers PRIVATE LRA_FIXTURE_PLUGIN_DIR="${LRA_FIXTURE_PLUGIN_DIR}")
add_dependencies(test_reference_mixers ${lra_builtin_plugins} lra_test_fixtures)

# End to end through the lrahost binary (run, suite, leaderboard); kept with
# the rest of this feature's tests, the source beside the other CLI tests.
lra_unit_test(test_reference_cli
  SOURCES ${PROJECT_SOURCE_DIR}/tests/integration/test_reference_cli.cpp
  LIBS lra_host_common nlohmann_json::nlohmann_json LABEL integration)
target_include_directories(test_reference_cli PRIVATE ${PROJECT_SOURCE_DIR}/tests/integration)
add_dependencies(test_reference_cli lrahost lra_test_fixtures lra_mixer_performer lra_mixer_s4d lra_mixer_mamba2
                 lra_task_listops)
target_compile_definitions(test_reference_cli PRIVATE LRAHOST_BIN="$<TARGET_FILE:lrahost>"
                           LRA_FIXTURE_PLUGIN_DIR="${LRA_FIXTURE_PLUGIN_DIR}")
