# The MAD generators against MAD's own distributions (committed statistics), and their rules.
lra_unit_test(test_mad_generators
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_mad_generators.cpp ${CMAKE_CURRENT_SOURCE_DIR}/test_mad_rules.cpp
  LIBS lra_mad_core lra_mad_task nlohmann_json::nlohmann_json)
