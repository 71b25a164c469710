// device/device.h — what the benchmarks and results need to know about the
// compute device, behind one interface for CPU and CUDA.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <c10/core/Device.h>

#include "common/out_of_memory.h"  // is_out_of_memory, for the callers that classify failures

namespace lra::host {

// "cpu", "cuda" (usage error when unavailable) or "auto" (CUDA when available).
// Choosing CUDA also sets which fused kernels run there (device_cuda.cpp).
c10::Device pick_device(const std::string& want);

// CPU threads to use: `requested`, or every online core when it is 0.
int effective_threads(int requested);

// The process's peak resident set since it started (getrusage; Linux), never reset.
int64_t peak_rss_bytes();

// "cuda:0 (NVIDIA H100 80GB HBM3)" or "cpu".
std::string describe_device(const c10::Device& d);

// Waits for the device's queued work (a no-op on CPU).
void synchronize_device(const c10::Device& d);

// Peak memory since the last reset: the CUDA caching allocator's peak of
// allocated bytes on CUDA; on CPU the process's peak resident set, which
// cannot be reset (measure one configuration per process there).
void reset_peak_memory(const c10::Device& d);
int64_t peak_memory_bytes(const c10::Device& d);
std::string peak_memory_kind(const c10::Device& d);  // "cuda allocator peak" | "process peak RSS"

// Returns cached CUDA blocks to the driver (after an out-of-memory), no-op on CPU.
void release_cached_memory(const c10::Device& d);


// Dense peak FLOP/s of the device for the given precision, when known
// (H100/H200 SXM from NVIDIA's data sheets); nullopt for CPUs and other GPUs.
std::optional<double> peak_flops(const c10::Device& d, bool bf16);

}  // namespace lra::host
