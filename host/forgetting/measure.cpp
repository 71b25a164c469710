#include "forgetting/measure.h"

#include <algorithm>
#include <string>

#include "forgetting/memory_length.h"
#include "forgetting/stats.h"
#include "lra/status.h"
#include "plugins/conformance.h"

namespace lra::host::forgetting {

namespace {

// Scores a list of equal-length samples in passes of at most `per_pass`.
std::vector<double> score_all(const ArgmaxFn& model, const std::vector<std::vector<int64_t>>& samples, int64_t L,
                              int64_t per_pass) {
  std::vector<double> acc;
  const auto T = static_cast<int64_t>(samples.front().size());
  for (size_t start = 0; start < samples.size(); start += static_cast<size_t>(per_pass)) {
    const size_t end = std::min(samples.size(), start + static_cast<size_t>(per_pass));
    auto ids = at::empty({static_cast<int64_t>(end - start), T}, at::kLong);
    for (size_t i = start; i < end; ++i)
      std::copy(samples[i].begin(), samples[i].end(), ids[static_cast<int64_t>(i - start)].data_ptr<int64_t>());
    auto pred = model(ids).to(at::kCPU, at::kLong).contiguous();
    if (pred.dim() != 2 || pred.size(0) != ids.size(0) || pred.size(1) != T)
      throw Error(ErrorKind::plugin, "the model returned predictions of shape " + c10::str(pred.sizes()) + " for input " + c10::str(ids.sizes()));
    for (size_t i = start; i < end; ++i)
      acc.push_back(score_sample(pred[static_cast<int64_t>(i - start)].data_ptr<int64_t>(), samples[i], L));
  }
  return acc;
}

}  // namespace

Curve measure_curve(const ArgmaxFn& model, const std::vector<int32_t>& stream, const MeasureConfig& c,
                    const PointCallback& on_point) {
  if (c.repeats < 1) throw Error(ErrorKind::usage, "--repeats " + std::to_string(c.repeats) + ": expected at least 1");
  const auto lengths = test_lengths(c.max_length, c.granularity, c.granularity_type);
  // Checked up front: a corpus too small for the longest length is the user's
  // input problem, not a per-length failure.
  make_samples(stream, lengths.back(), 0, c.samples);

  Curve curve;
  for (size_t li = 0; li < lengths.size(); ++li) {
    const int64_t L = lengths[li];
    CurvePoint pt;
    pt.length = L;
    try {
      // Copy samples first, then LM samples: one list, one set of passes.
      std::vector<std::vector<int64_t>> samples;
      for (int64_t r = 0; r < c.repeats; ++r) samples.push_back(make_samples(stream, L, r, c.samples).copy);
      for (int64_t r = 0; r < c.repeats; ++r) samples.push_back(make_samples(stream, L, r, c.samples).lm);
      int64_t per_pass = std::max<int64_t>(1, c.batch_tokens / (2 * L + 3));
      if (c.max_batch > 0) per_pass = std::min(per_pass, c.max_batch);
      // Out of memory with several samples per pass: halve and retry, so only
      // a length that fails even one sample at a time is reported as failed.
      std::vector<double> acc;
      while (true) {
        try {
          acc = score_all(model, samples, L, per_pass);
          break;
        } catch (const ConformanceFailure&) {
          throw;
        } catch (const std::exception& e) {
          if (per_pass == 1 || std::string(e.what()).find("out of memory") == std::string::npos) throw;
          per_pass /= 2;
        }
      }
      pt.copy_accs.assign(acc.begin(), acc.begin() + c.repeats);
      pt.lm_accs.assign(acc.begin() + c.repeats, acc.end());
      summarize(pt);
    } catch (const ConformanceFailure&) {
      throw;  // a broken promise is the plugin's verdict, not a gap in the curve
    } catch (const std::exception& e) {
      std::string msg = e.what();
      if (auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);  // LibTorch appends a backtrace
      pt = CurvePoint{};
      pt.length = L;
      pt.error = msg.empty() ? "unknown failure" : msg;
    }
    curve.points.push_back(pt);
    if (on_point) on_point(curve.points.back(), li, lengths.size());
  }
  finalize(curve);
  return curve;
}

}  // namespace lra::host::forgetting
