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
  LIBS lra_host_common lra_host_results nlohmann_json::nlohmann_json LABEL integration)
target_include_directories(test_reference_cli PRIVATE ${PROJECT_SOURCE_DIR}/tests/integration)
add_dependencies(test_reference_cli lrahost lra_test_fixtures lra_mixer_performer lra_mixer_s4d lra_mixer_mamba2
                 lra_mixer_local lra_task_listops)
target_compile_definitions(test_reference_cli PRIVATE LRAHOST_BIN="$<TARGET_FILE:lrahost>"
                           LRA_FIXTURE_PLUGIN_DIR="${LRA_FIXTURE_PLUGIN_DIR}")

# The reference configurations (manifests/reference-configurations/, run
# --reference): complete, cited, accepted by every manifest and plugin, inside
# their budget, and malformed ones refused.
lra_unit_test(test_reference_configuration
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_reference_configuration.cpp
  LIBS lra_host_cli TORCH_PCH)
target_compile_definitions(test_reference_configuration PRIVATE LRA_FIXTURE_PLUGIN_DIR="${LRA_FIXTURE_PLUGIN_DIR}")
add_dependencies(test_reference_configuration ${lra_builtin_plugins} lra_test_fixtures)

lra_unit_test(test_reference_configuration_cli
  SOURCES ${PROJECT_SOURCE_DIR}/tests/integration/test_reference_configuration_cli.cpp
  LIBS lra_host_results nlohmann_json::nlohmann_json LABEL integration)
target_include_directories(test_reference_configuration_cli PRIVATE ${PROJECT_SOURCE_DIR}/tests/integration)
add_dependencies(test_reference_configuration_cli lrahost lra_test_fixtures lra_mixer_sinkhorn lra_mixer_linformer
                 lra_mixer_s4d lra_task_listops)
target_compile_definitions(test_reference_configuration_cli PRIVATE LRAHOST_BIN="$<TARGET_FILE:lrahost>"
                           LRA_FIXTURE_PLUGIN_DIR="${LRA_FIXTURE_PLUGIN_DIR}")
