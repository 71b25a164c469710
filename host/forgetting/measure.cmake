# lra_forgetting_measure — test lengths and sample layouts (torch-free
# samples.cpp), the batched measurement, the causal LM's training, and
# TorchScript models (the only file that includes LibTorch's JIT).
add_library(lra_forgetting_measure STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/samples.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/measure.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/lm_training.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/torchscript_lm.cpp)
target_include_directories(lra_forgetting_measure PUBLIC ${PROJECT_SOURCE_DIR}/host)
target_link_libraries(lra_forgetting_measure PUBLIC lra_forgetting_report lra_host_plugins lra_host_model lra_host_train
                      lra_host_manifest spdlog::spdlog nlohmann_json::nlohmann_json)
target_precompile_headers(lra_forgetting_measure REUSE_FROM lra_pch)
