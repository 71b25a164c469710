// common/out_of_memory.h — the one test of "this failure was an allocation
// that failed" (exit 7, docs/cli.md), wherever it is caught: main's last
// resort, a plugin's create or forward (which would otherwise be reported as
// the plugin's fault, exit 3), bench's "oom" points. Header-only and torch-free:
// LibTorch's errors are recognised by their what(), so libraries that do not
// link LibTorch can ask too.
#pragma once

#include <exception>
#include <new>
#include <string_view>

namespace lra::host {

// What an allocation failure says: std::bad_alloc's what() (also what the
// SDK's boundary passes on as a Status message), LibTorch's CPU allocator
// ("DefaultCPUAllocator: can't allocate memory: you tried to allocate N
// bytes", "not enough memory") and CUDA's ("CUDA out of memory").
inline bool is_out_of_memory_message(std::string_view what) {
  return what == std::bad_alloc().what() || what == std::bad_array_new_length().what() ||
         what.find("can't allocate memory") != std::string_view::npos ||
         what.find("not enough memory") != std::string_view::npos ||
         what.find("out of memory") != std::string_view::npos;
}

// std::bad_alloc (and its subclasses) or one of LibTorch's allocation errors.
inline bool is_out_of_memory(const std::exception& e) {
  return dynamic_cast<const std::bad_alloc*>(&e) != nullptr || is_out_of_memory_message(e.what());
}

}  // namespace lra::host
