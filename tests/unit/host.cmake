lra_unit_test(test_host
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_descriptor.cpp ${CMAKE_CURRENT_SOURCE_DIR}/test_backbone.cpp
          ${CMAKE_CURRENT_SOURCE_DIR}/test_pixel_mask.cpp ${CMAKE_CURRENT_SOURCE_DIR}/test_official_registry.cpp
          ${CMAKE_CURRENT_SOURCE_DIR}/test_rules.cpp ${CMAKE_CURRENT_SOURCE_DIR}/test_batches.cpp
          ${CMAKE_CURRENT_SOURCE_DIR}/test_task_data.cpp ${CMAKE_CURRENT_SOURCE_DIR}/test_dropout.cpp
          ${CMAKE_CURRENT_SOURCE_DIR}/test_optimizer_groups.cpp ${CMAKE_CURRENT_SOURCE_DIR}/test_not_learning.cpp
          ${CMAKE_CURRENT_SOURCE_DIR}/test_summary_position.cpp ${CMAKE_CURRENT_SOURCE_DIR}/test_short_conv.cpp
          ${CMAKE_CURRENT_SOURCE_DIR}/test_last_state_decoder.cpp
          ${CMAKE_CURRENT_SOURCE_DIR}/test_suite_grid.cpp ${CMAKE_CURRENT_SOURCE_DIR}/test_blas_kernels.cpp
          ${CMAKE_CURRENT_SOURCE_DIR}/test_step_graph.cpp
  LIBS lra_host_cli TORCH_PCH)
target_compile_definitions(test_host PRIVATE LRA_PLUGIN_DIR="${LRA_PLUGIN_OUTPUT_DIR}"
                                            LRA_FIXTURE_PLUGIN_DIR="${LRA_FIXTURE_PLUGIN_DIR}")
add_dependencies(test_host lra_mixer_transformer lra_test_fixtures)

# Issue 31 (point 7): hostile values in files, options and the environment.
lra_unit_test(test_hostile_inputs SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_hostile_inputs.cpp
  LIBS lra_host_cli TORCH_PCH LABELS unit adversarial)
