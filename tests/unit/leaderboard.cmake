# Scores over seeds (mean, std, LRA average, the Path-X binomial test) and the
# leaderboard site (HTML, Markdown, JSON; escaping), the recall suites' sections. No LibTorch.
lra_unit_test(test_leaderboard
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_leaderboard_scores.cpp ${CMAKE_CURRENT_LIST_DIR}/test_leaderboard_site.cpp
          ${CMAKE_CURRENT_LIST_DIR}/test_leaderboard_reference.cpp ${CMAKE_CURRENT_LIST_DIR}/test_leaderboard_suites.cpp
  LIBS lra_host_leaderboard)

# Issue 48: the committed smoke baselines, compiled in, and the README's quotes of them.
lra_unit_test(test_smoke_baselines SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_smoke_baselines.cpp LIBS lra_host_leaderboard)
target_compile_definitions(test_smoke_baselines PRIVATE LRA_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
