// lra/plugin.h — the macros that put a plugin's descriptor into the
// ".lra_plugin" section and define the one exported entry point. Plugin
// authors use LRA_MIXER_PLUGIN (lra/mixer.h) or LRA_TASK_PLUGIN (lra/task.h).
#pragma once

#include "lra/abi.h"
#include "lra/build_facts.h"

// The ABI version a plugin's descriptor claims: always the SDK's own. Only
// lrahost's ABI tests define these (to build plugins that claim an older
// minor or another major); a plugin author never does.
#ifndef LRA_DESCRIPTOR_ABI_MAJOR
#define LRA_DESCRIPTOR_ABI_MAJOR LRA_ABI_MAJOR
#endif
#ifndef LRA_DESCRIPTOR_ABI_MINOR
#define LRA_DESCRIPTOR_ABI_MINOR LRA_ABI_MINOR
#endif

// The descriptor record: pure data (no pointers), placed in its own section
// so the host reads it from the file without loading the library.
#define LRA_DETAIL_INFO(KIND, CAPS, NAME, VERSION, DESCRIPTION)                                 \
  extern "C" __attribute__((section(LRA_PLUGIN_SECTION), used)) const lra_plugin_info            \
      lra_plugin_info_record = {sizeof(lra_plugin_info), LRA_DESCRIPTOR_ABI_MAJOR,               \
                                LRA_DESCRIPTOR_ABI_MINOR,                                        \
                                LRA_PLUGIN_MAGIC, KIND, CAPS, LRA_CXX11_ABI,                     \
                                LRA_TORCH_VERSION_STRING, LRA_STDLIB_STRING, LRA_COMPILER_STRING, \
                                NAME, VERSION, DESCRIPTION};

// The single exported symbol. The implementation object is created on first
// call (after the host accepted the descriptor), never at load time.
// IFACE is the kind's interface class; the host casts `interface` back to it.
#define LRA_DETAIL_ENTRY(IFACE, IMPL_EXPR)                                             \
  extern "C" LRA_EXPORT const lra_plugin_api* lra_plugin_entry(void) {                 \
    static const auto impl = IMPL_EXPR;                                                \
    static const IFACE* iface = &impl;                                                 \
    static const lra_plugin_api api = {sizeof(lra_plugin_api), LRA_DESCRIPTOR_ABI_MAJOR, \
                                       LRA_DESCRIPTOR_ABI_MINOR, &lra_plugin_info_record, iface}; \
    return &api;                                                                       \
  }
