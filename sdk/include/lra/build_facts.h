// lra/build_facts.h — the compile-time facts recorded in every plugin descriptor
// (and by the host about itself), so both sides are compared before loading.
#pragma once

#include <torch/version.h>

// Stringification for the facts below. Internal to the SDK (LRA_DETAIL_, like
// plugin.h's LRA_DETAIL_INFO): the fact macros expand it where they are used,
// in the plugin's own file, so it cannot be #undef'd here, but it takes no
// generic name (such as LRA_STR) that a plugin might define for itself.
#define LRA_DETAIL_STRINGIFY_IMPL(x) #x
#define LRA_DETAIL_STRINGIFY(x) LRA_DETAIL_STRINGIFY_IMPL(x)

#define LRA_TORCH_VERSION_STRING                                                  \
  LRA_DETAIL_STRINGIFY(TORCH_VERSION_MAJOR) "." LRA_DETAIL_STRINGIFY(TORCH_VERSION_MINOR) "." \
      LRA_DETAIL_STRINGIFY(TORCH_VERSION_PATCH)

#if defined(_GLIBCXX_USE_CXX11_ABI)
#define LRA_CXX11_ABI _GLIBCXX_USE_CXX11_ABI
#else
#define LRA_CXX11_ABI (-1)
#endif

#if defined(_GLIBCXX_RELEASE)
#define LRA_STDLIB_STRING "libstdc++ " LRA_DETAIL_STRINGIFY(_GLIBCXX_RELEASE)
#elif defined(_LIBCPP_VERSION)
#define LRA_STDLIB_STRING "libc++ " LRA_DETAIL_STRINGIFY(_LIBCPP_VERSION)
#else
#define LRA_STDLIB_STRING "unknown"
#endif

#if defined(__clang__)
#define LRA_COMPILER_STRING "clang " __clang_version__
#elif defined(__GNUC__)
#define LRA_COMPILER_STRING "gcc " __VERSION__
#else
#define LRA_COMPILER_STRING "unknown"
#endif
