# The MQAR generator against Zoology's distribution (committed statistics), and its rules.
lra_unit_test(test_mqar_generator
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_mqar_generator.cpp
  LIBS lra_mqar_core nlohmann_json::nlohmann_json)
