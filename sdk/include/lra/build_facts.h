// lra/build_facts.h — the compile-time facts recorded in every plugin descriptor
// (and by the host about itself), so both sides are compared before loading.
#pragma once

#include <torch/version.h>

#define LRA_STR_IMPL(x) #x
#define LRA_STR(x) LRA_STR_IMPL(x)

#define LRA_TORCH_VERSION_STRING \
  LRA_STR(TORCH_VERSION_MAJOR) "." LRA_STR(TORCH_VERSION_MINOR) "." LRA_STR(TORCH_VERSION_PATCH)

#if defined(_GLIBCXX_USE_CXX11_ABI)
#define LRA_CXX11_ABI _GLIBCXX_USE_CXX11_ABI
#else
#define LRA_CXX11_ABI (-1)
#endif

#if defined(_GLIBCXX_RELEASE)
#define LRA_STDLIB_STRING "libstdc++ " LRA_STR(_GLIBCXX_RELEASE)
#elif defined(_LIBCPP_VERSION)
#define LRA_STDLIB_STRING "libc++ " LRA_STR(_LIBCPP_VERSION)
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
