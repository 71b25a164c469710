// lra/capabilities.h — every mixer capability bit of lra/abi.h with its name:
// the one list the host's descriptor check, `lrahost plugins`, result files
// and the Python plugin's `lra_capabilities` all read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lra/abi.h"

namespace lra {
inline namespace v1 {

struct Capability {
  uint32_t bit;
  const char* name;  // as `lrahost plugins`, result.json and a Python mixer's lra_capabilities spell it
};

inline constexpr Capability kCapabilities[] = {
    {LRA_CAP_CAUSAL, "causal"},
    {LRA_CAP_ATTENTION_PROBS, "attention_probs"},
    {LRA_CAP_PADDING_MASK, "padding_mask"},
    {LRA_CAP_ROTARY, "rotary"},
    {LRA_CAP_GRAPH_SAFE, "graph_safe"},
};

// Every bit this SDK defines.
constexpr uint32_t known_capability_bits() {
  uint32_t all = 0;
  for (const auto& c : kCapabilities) all |= c.bit;
  return all;
}

// The names of the bits set in `caps`, in the table's order.
inline std::vector<std::string> capability_names(uint32_t caps) {
  std::vector<std::string> out;
  for (const auto& c : kCapabilities)
    if (caps & c.bit) out.emplace_back(c.name);
  return out;
}

// The bit called `name`; 0 when no capability has that name.
inline uint32_t capability_bit(const std::string& name) {
  for (const auto& c : kCapabilities)
    if (name == c.name) return c.bit;
  return 0;
}

}  // namespace v1
}  // namespace lra
