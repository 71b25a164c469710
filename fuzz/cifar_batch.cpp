// Harness: CIFAR-10 binary batches as the image task reads them (load_cifar):
// the input is every one of the six batch files (data_batch_1..5.bin and
// test_batch.bin are links to it), 3073-byte records of label + R, G, B planes.
#include "cifar_reader.h"
#include "fuzz_util.h"

namespace {

const lra_fuzz::fs::path& root() {
  static const lra_fuzz::fs::path r = [] {
    const auto dir = lra_fuzz::scratch() / "cifar" / "cifar-10-batches-bin";
    lra_fuzz::fs::create_directories(dir);
    lra_fuzz::write_file(dir / "input.bin", "");
    for (const auto& n : lra::image::file_names()) lra_fuzz::fs::create_symlink("input.bin", dir / n);
    return dir.parent_path();
  }();
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& r = root();
  lra_fuzz::write_file(r / "cifar-10-batches-bin" / "input.bin", data, size);
  LRA_FUZZ_EXPECT_ERRORS({
    lra::image::LoadOptions o;
    (void)lra::image::load_cifar(r, o);
    o.train_examples = 1;
    o.eval_examples = 1;
    o.seed = 5;
    (void)lra::image::load_cifar(r, o);
  })
  return 0;
}
