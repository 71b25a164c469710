// Harness: a message body from the mixer process as the verifier reads it
// (isolation/mixer_wire.h): the answers to create and forward, field by
// field. Only lra::Error(plugin) may come out of it, never a crash, an
// allocation of a claimed size, or a read past the body.
#include "fuzz_util.h"
#include "isolation/mixer_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  using lra::host::wire::Reader;
  // The answer to create: id, tensors, hints, generator state.
  LRA_FUZZ_EXPECT_ERRORS({
    Reader r(bytes, "answer to create");
    (void)r.u32();
    (void)r.tensors(16, 1 << 20);
    for (uint32_t n = r.u32(), i = 0; i < n && i < 64; ++i) {
      (void)r.str(1024);
      (void)r.u8();
      (void)r.f64();
      (void)r.f64();
    }
    (void)r.tensor(1 << 16);
    r.end();
  })
  // The answer to forward, and a request as the mixer process reads it.
  LRA_FUZZ_EXPECT_ERRORS({
    Reader r(bytes, "answer to forward");
    (void)r.tensor(1 << 20);
    r.end();
  })
  LRA_FUZZ_EXPECT_ERRORS({
    Reader r(bytes, "request");
    (void)r.spec();
    (void)r.tensor(1 << 20);
    r.end();
  })
  return 0;
}
