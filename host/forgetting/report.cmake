# lra_forgetting_report — per-length statistics, the memory-length rule, the
# forgetting.json points and the SVG plots. No LibTorch here: the report
# commands and their tests build and start in moments.
add_library(lra_forgetting_report STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/stats.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/memory_length.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/report_json.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/plot_svg.cpp)
target_include_directories(lra_forgetting_report PUBLIC
  ${PROJECT_SOURCE_DIR}/host ${PROJECT_SOURCE_DIR}/sdk/include)
target_link_libraries(lra_forgetting_report PUBLIC nlohmann_json::nlohmann_json Boost::headers lra_svg lra_host_common)
# std::string crosses into the LibTorch-linked measurement code: compile with
# LibTorch's ABI flag (_GLIBCXX_USE_CXX11_ABI) as host/common does.
if(TORCH_CXX_FLAGS)
  separate_arguments(_lra_report_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
  target_compile_options(lra_forgetting_report PUBLIC ${_lra_report_torch_flags})
endif()
