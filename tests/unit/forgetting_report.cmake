# Forgetting-curve report: statistics, memory lengths, JSON, SVG (no LibTorch).
lra_unit_test(test_forgetting_report
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_forgetting_report.cpp
  LIBS lra_forgetting_report)
