# The forgetting curve's measurement: lengths, layouts, scoring, batched
# measurement with failures, TorchScript models built in the test, the causal
# LM (causality, rotary positions) and its training.
lra_unit_test(test_forgetting_measure
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_forgetting_measure.cpp
  LIBS lra_forgetting_measure TORCH_PCH)

# Issue 31: the causal check on the live model (plugins/conformance.h), in the
# forgetting LM's training and measurement.
lra_unit_test(test_live_conformance
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_live_conformance.cpp
  LIBS lra_forgetting_measure lra_host_plugins TORCH_PCH LABELS unit adversarial)
