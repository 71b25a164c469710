# The required attention span arithmetic (host/span).
lra_unit_test(test_span
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_span.cpp
  LIBS lra_host_span TORCH_PCH)
