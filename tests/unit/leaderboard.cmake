# Scores over seeds (mean, std, LRA average, the Path-X binomial test) and the
# leaderboard site (HTML, Markdown, JSON; escaping). No LibTorch.
lra_unit_test(test_leaderboard
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_leaderboard_scores.cpp ${CMAKE_CURRENT_LIST_DIR}/test_leaderboard_site.cpp
          ${CMAKE_CURRENT_LIST_DIR}/test_leaderboard_reference.cpp
  LIBS lra_host_leaderboard)
