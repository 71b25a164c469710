# The plugin source is compiled in too, so its folder logic is tested without dlopen.
lra_unit_test(test_listops
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_listops_generator.cpp
          ${CMAKE_CURRENT_SOURCE_DIR}/test_listops_tsv.cpp
          ${PROJECT_SOURCE_DIR}/tasks/listops/listops_task.cpp
  LIBS lra_listops_core)
