# Finds LibTorch: a system install (Debian's libtorch-dev) or, failing that,
# the CMake prefix of a pip-installed torch (torch.utils.cmake_prefix_path).
find_package(Torch QUIET)
if(NOT Torch_FOUND)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    execute_process(
      COMMAND ${Python3_EXECUTABLE} -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
      OUTPUT_VARIABLE LRA_PIP_TORCH_PREFIX OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(LRA_PIP_TORCH_PREFIX)
      message(STATUS "lrahost: using pip torch at ${LRA_PIP_TORCH_PREFIX}")
      list(APPEND CMAKE_PREFIX_PATH "${LRA_PIP_TORCH_PREFIX}")
    endif()
  endif()
  find_package(Torch REQUIRED)
endif()
message(STATUS "lrahost: LibTorch ${Torch_VERSION} (${TORCH_CXX_FLAGS})")
