# `lrahost bench` reports: bench.json results, Markdown tables, SVG charts (no LibTorch).
lra_unit_test(test_bench_report
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_bench_report.cpp
  LIBS lra_bench_report)
