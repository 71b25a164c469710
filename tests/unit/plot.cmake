# The shared text helpers (common/text) and the chart machinery of the SVG
# reports (plot/chart, plot/svg_text). Only lra_svg and lra_text: no LibTorch.
lra_unit_test(test_plot
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_plot_chart.cpp ${CMAKE_CURRENT_LIST_DIR}/test_common_text.cpp
  LIBS lra_svg)
