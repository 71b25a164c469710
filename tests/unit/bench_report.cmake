# `lrahost bench` reports: bench.json results, Markdown tables, SVG charts (no LibTorch).
lra_unit_test(test_bench_report
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_bench_report.cpp
  LIBS lra_bench_report)

# `lrahost bench --task`: split sizes, the training loop's schedule, predicted
# wall time, suite totals and their reports; the static task shapes against
# the task plugins' constants.
lra_unit_test(test_bench_runs
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_bench_runs.cpp
  LIBS lra_host_bench TORCH_PCH)
target_include_directories(test_bench_runs PRIVATE ${PROJECT_SOURCE_DIR}/tasks)
