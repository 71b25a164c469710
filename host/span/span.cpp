#include "span/span.h"

#include <string>

#include "lra/status.h"

namespace lra::host::span {
namespace {

std::string shape_of(const at::Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

}  // namespace

ModuleSums module_sums(const at::Tensor& probs, const at::Tensor& valid, bool first_is_cls) {
  if (probs.dim() != 4 || probs.size(2) != probs.size(3))
    throw Error(ErrorKind::internal, "attention span: probabilities must be [B, H, L, L], got " + shape_of(probs));
  const int64_t B = probs.size(0), H = probs.size(1), L = probs.size(2);
  if (valid.dim() != 2 || valid.size(0) != B || valid.size(1) != L)
    throw Error(ErrorKind::internal, "attention span: mask " + shape_of(valid) + " does not match probabilities " +
                                         shape_of(probs) + " (expected [B, L])");

  auto counted = valid.to(probs.device(), at::kBool).clone();
  if (first_is_cls && L > 0) counted.select(1, 0).fill_(false);
  // Half-precision probabilities are widened; products in float32 (exact
  // for the distances, which stay below 2^24) and sums in float64.
  const auto dtype = probs.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const auto pos = at::arange(L, at::TensorOptions().dtype(dtype).device(probs.device()));
  const auto distance = (pos.unsqueeze(1) - pos.unsqueeze(0)).abs();  // [L, L], |i - j|
  const auto key_weight = counted.to(dtype);

  ModuleSums out;
  const auto f64 = at::TensorOptions().dtype(at::kDouble).device(probs.device());
  const auto i64 = at::TensorOptions().dtype(at::kLong).device(probs.device());
  out.distance = at::zeros({B, H}, f64);
  out.excluded = at::zeros({B, H}, f64);
  out.queries = at::zeros({B, H}, i64);
  out.massless = at::zeros({B, H}, i64);
  // One sequence at a time: a temporary of H x L x L, not B x H x L x L
  // (at L = 4K that is the difference between 0.3 GB and 2 GB).
  for (int64_t b = 0; b < B; ++b) {
    const auto a = probs.select(0, b).to(dtype);                     // [H, L, L]
    const auto total = a.sum(-1, false, at::kDouble);                // [H, L]
    auto on_counted = a * key_weight.select(0, b).view({1, 1, L});  // counted keys only
    const auto kept = on_counted.sum(-1, false, at::kDouble);        // [H, L]
    const auto weighted = on_counted.mul_(distance).sum(-1, false, at::kDouble);
    const auto query = counted.select(0, b).view({1, L}).expand({H, L});
    const auto has_mass = kept > 0;
    const auto use = query.logical_and(has_mass);
    const auto zero = at::zeros({}, f64);
    // Renormalising the row divides its weighted distance by the kept mass.
    out.distance.select(0, b).copy_(at::where(use, weighted / kept, zero).sum(-1));
    out.excluded.select(0, b).copy_(at::where(use, total - kept, zero).sum(-1));
    out.queries.select(0, b).copy_(use.sum(-1));
    out.massless.select(0, b).copy_(query.logical_and(has_mass.logical_not()).sum(-1));
  }
  return out;
}

at::Tensor encoder_mask(const at::Tensor& mask, const at::Tensor& mask2, bool cls) {
  auto m = mask2.defined() ? at::cat({mask, mask2}, 0) : mask;
  if (cls) m = at::cat({at::ones({m.size(0), 1}, m.options()), m}, 1);
  return m;
}

void Accumulator::add(const std::vector<ModuleSums>& layers) {
  if (layers.empty()) throw Error(ErrorKind::internal, "attention span: a forward pass with no attention modules");
  if (layer_.empty()) {
    layer_.resize(layers.size());
    head_.resize(layers.size());
  }
  if (layers.size() != layer_.size())
    throw Error(ErrorKind::internal, "attention span: " + std::to_string(layers.size()) + " modules in this batch, " +
                                         std::to_string(layer_.size()) + " before");
  std::vector<at::Tensor> dist, queries, massless, excluded;
  const int64_t B = layers[0].distance.size(0);
  for (size_t l = 0; l < layers.size(); ++l) {
    const auto& m = layers[l];
    const int64_t H = m.distance.size(1);
    if (m.distance.size(0) != B)
      throw Error(ErrorKind::internal, "attention span: module " + std::to_string(l) + " covers " +
                                           std::to_string(m.distance.size(0)) + " sequences, module 0 " +
                                           std::to_string(B));
    if (head_[l].empty()) head_[l].resize(static_cast<size_t>(H));
    if (static_cast<int64_t>(head_[l].size()) != H)
      throw Error(ErrorKind::internal, "attention span: module " + std::to_string(l) + " has " + std::to_string(H) +
                                           " heads in this batch, " + std::to_string(head_[l].size()) + " before");
    dist.push_back(m.distance.to(at::kCPU, at::kDouble).contiguous());
    queries.push_back(m.queries.to(at::kCPU, at::kLong).contiguous());
    massless.push_back(m.massless.to(at::kCPU, at::kLong).contiguous());
    excluded.push_back(m.excluded.to(at::kCPU, at::kDouble).contiguous());
  }
  for (int64_t b = 0; b < B; ++b) {
    double seq_distance = 0;
    int64_t seq_queries = 0;
    for (size_t l = 0; l < layers.size(); ++l) {
      const int64_t H = static_cast<int64_t>(head_[l].size());
      const double* d = dist[l].data_ptr<double>() + b * H;
      const int64_t* n = queries[l].data_ptr<int64_t>() + b * H;
      double layer_distance = 0;
      int64_t layer_queries = 0;
      for (int64_t h = 0; h < H; ++h) {
        if (n[h] > 0) head_[l][h].add(d[h] / static_cast<double>(n[h]));
        layer_distance += d[h];
        layer_queries += n[h];
        massless_ += massless[l].data_ptr<int64_t>()[b * H + h];
        excluded_ += excluded[l].data_ptr<double>()[b * H + h];
      }
      if (layer_queries > 0) layer_[l].add(layer_distance / static_cast<double>(layer_queries));
      seq_distance += layer_distance;
      seq_queries += layer_queries;
    }
    queries_ += seq_queries;
    if (seq_queries > 0) {
      overall_.add(seq_distance / static_cast<double>(seq_queries));
    } else {
      ++empty_;
    }
  }
}

Summary Accumulator::summary() const {
  Summary s;
  s.span = overall_.value();
  for (const auto& m : layer_) s.per_layer.push_back(m.value());
  for (const auto& heads : head_) {
    s.per_head.emplace_back();
    for (const auto& m : heads) s.per_head.back().push_back(m.value());
  }
  s.sequences = overall_.n;
  s.sequences_without_queries = empty_;
  s.queries = queries_;
  s.massless_queries = massless_;
  s.excluded_mass = queries_ ? excluded_ / static_cast<double>(queries_) : 0.0;
  return s;
}

}  // namespace lra::host::span
