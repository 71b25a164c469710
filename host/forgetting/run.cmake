# lra_forgetting_run — `lrahost forget`'s work: the manifest's [data] settings,
# the plugin LM trained and measured, a TorchScript LM measured, curves
# compared; forgetting.json and forgetting.svg assembled and written.
add_library(lra_forgetting_run STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/forget_documents.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/forget_run.cpp)
target_include_directories(lra_forgetting_run PUBLIC ${PROJECT_SOURCE_DIR}/host)
target_link_libraries(lra_forgetting_run PUBLIC lra_forgetting_measure lra_forgetting_corpus lra_forgetting_report
                      lra_host_plugins lra_host_model lra_host_train lra_host_manifest lra_host_rules
                      lra_host_results lra_host_device lra_host_common spdlog::spdlog nlohmann_json::nlohmann_json)
target_precompile_headers(lra_forgetting_run REUSE_FROM lra_pch)
