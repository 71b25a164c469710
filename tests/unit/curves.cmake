# Learning curves (host/curves): history.csv and curves.svg from a result's
# history, and `lrahost curves` / run / suite writing them. The unit part
# is Torch-free.
lra_unit_test(test_learning_curves
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_learning_curves.cpp
  LIBS lra_host_curves)

lra_unit_test(test_curves_cli
  SOURCES ${PROJECT_SOURCE_DIR}/tests/integration/test_curves_cli.cpp
  LIBS lra_host_common nlohmann_json::nlohmann_json LABEL integration)
target_include_directories(test_curves_cli PRIVATE ${PROJECT_SOURCE_DIR}/tests/integration)
add_dependencies(test_curves_cli lrahost lra_mixer_transformer lra_task_listops)
target_compile_definitions(test_curves_cli PRIVATE LRAHOST_BIN="$<TARGET_FILE:lrahost>"
                           LRA_FIXTURE_PLUGIN_DIR="${LRA_FIXTURE_PLUGIN_DIR}")
