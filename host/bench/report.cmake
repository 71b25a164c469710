# lra_bench_report — bench.json's results (writing and reading back), the
# Markdown tables after the LRA paper's Table 2 and the SVG charts, one file
# per format. No LibTorch here: reports of finished runs and their tests build
# in moments.
add_library(lra_bench_report STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/bench_point.cpp       # a point's spread and warnings
  ${CMAKE_CURRENT_SOURCE_DIR}/remaining_time.cpp    # the sweep's time left, learnt per length
  ${CMAKE_CURRENT_SOURCE_DIR}/report_grid.cpp       # the plugin x length grid, speed and memory as text
  ${CMAKE_CURRENT_SOURCE_DIR}/report_json.cpp       # bench.json's results
  ${CMAKE_CURRENT_SOURCE_DIR}/report_markdown.cpp   # the tables
  ${CMAKE_CURRENT_SOURCE_DIR}/report_svg.cpp)       # the charts
target_include_directories(lra_bench_report PUBLIC
  ${PROJECT_SOURCE_DIR}/host ${PROJECT_SOURCE_DIR}/sdk/include)
target_link_libraries(lra_bench_report PUBLIC nlohmann_json::nlohmann_json lra_svg lra_host_common)
# std::string crosses into the LibTorch-linked measurement code: compile with
# LibTorch's ABI flag (_GLIBCXX_USE_CXX11_ABI) as host/common does.
if(TORCH_CXX_FLAGS)
  separate_arguments(_lra_bench_report_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
  target_compile_options(lra_bench_report PUBLIC ${_lra_bench_report_torch_flags})
endif()
