# Issue 28: Python mixers (plugins/python/, --plugin FILE.py:CLASS) loaded as
# the host loads them: parity with the built-in transformer, buffers, dtype and
# mode reaching Python, files kept apart, the contract's refusals. Only where
# the Python plugin is built (it needs python3-dev, pybind11-dev, python3-torch).
if(TARGET lra_mixer_python)
  lra_unit_test(test_python_mixer SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_python_mixer.cpp
                LIBS lra_mixer_harness TORCH_PCH LABELS "unit;adversarial")
  target_compile_definitions(test_python_mixer PRIVATE LRA_PLUGIN_DIR="${LRA_PLUGIN_OUTPUT_DIR}")
  add_dependencies(test_python_mixer lra_mixer_python lra_mixer_transformer)
else()
  message(STATUS "test_python_mixer: skipped (no Python plugin in this build)")
endif()
