# Manifests: parsing, validation, overrides, presets, embedded files, schedule.
lra_unit_test(test_manifest
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/test_manifest.cpp
    ${CMAKE_CURRENT_LIST_DIR}/test_lr_schedule.cpp
    ${CMAKE_CURRENT_LIST_DIR}/test_releases.cpp
    ${CMAKE_CURRENT_LIST_DIR}/test_manifest_grid.cpp
    ${CMAKE_CURRENT_LIST_DIR}/test_manifest_settings.cpp
  LIBS lra_host_manifest lra_host_lr_schedule)
