# Result files: SHA-256, atomic writes, build facts (lra_host_common) and
# result.json sealing and verification (lra_host_results).
lra_unit_test(test_results
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/test_common.cpp
    ${CMAKE_CURRENT_LIST_DIR}/test_output_safety.cpp
    ${CMAKE_CURRENT_LIST_DIR}/test_results.cpp
    ${CMAKE_CURRENT_LIST_DIR}/test_json_input.cpp
    ${CMAKE_CURRENT_LIST_DIR}/test_signature.cpp
  LIBS lra_host_results)
