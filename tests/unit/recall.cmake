# Recall reports from sequence-task results (host/recall).
lra_unit_test(test_recall_report
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_recall_report.cpp
  LIBS lra_recall_report)
