# lra_forgetting_corpus: Brown tag stripping, the split rule, fingerprints, id files.
lra_unit_test(test_forgetting_corpus
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_forgetting_corpus.cpp
  LIBS lra_forgetting_corpus)
