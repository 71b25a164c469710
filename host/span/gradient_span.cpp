#include "span/gradient_span.h"

#include <string>

#include "lra/status.h"

namespace lra::host::span {

GradientSums gradient_sums(const at::Tensor& weights, const at::Tensor& query, const at::Tensor& counted,
                           double coverage) {
  if (weights.dim() != 2 || counted.sizes() != weights.sizes() || query.dim() != 1 || query.size(0) != weights.size(0))
    throw Error(ErrorKind::internal, "gradient span: weights [B, L], counted [B, L] and query [B] do not agree");
  if (!(coverage > 0.0 && coverage <= 1.0))
    throw Error(ErrorKind::internal, "gradient span: coverage must be in (0, 1]");
  const int64_t L = weights.size(1);
  const auto f64 = weights.options().dtype(at::kDouble);
  const auto w = weights.to(at::kDouble) * counted.to(weights.device(), at::kDouble);
  const auto total = w.sum(1);                                                              // [B]
  const auto q = query.to(weights.device(), at::kLong);
  const auto distance = (at::arange(L, q.options()).unsqueeze(0) - q.unsqueeze(1)).abs();  // [B, L], |q - j|
  // The radius: the weight binned by distance, accumulated outwards.
  const auto by_distance = at::zeros({w.size(0), L}, f64).scatter_add_(1, distance, w);
  const auto within = by_distance.cumsum(1);
  const auto has_mass = total.gt(0);
  // A row counts when its query is a counted position and some weight lies on counted keys.
  const auto query_counted = counted.to(weights.device(), at::kBool).gather(1, q.unsqueeze(1)).squeeze(1);
  const auto row = query_counted & has_mass;
  const auto safe_total = at::where(has_mass, total, at::ones_like(total));
  // Rounding can leave the last cumulative sum a hair below coverage x total.
  const auto target = (coverage * safe_total * (1.0 - 1e-12)).unsqueeze(1);
  const auto radius = within.lt(target).sum(1).to(at::kDouble);
  const auto row_distance = (w * distance.to(at::kDouble)).sum(1) / safe_total;
  const auto zero = at::zeros_like(total);
  GradientSums s;
  s.distance = at::where(row, row_distance, zero);
  s.radius = at::where(row, radius, zero);
  s.rows = row.to(at::kLong);
  s.massless = (query_counted & has_mass.logical_not()).to(at::kLong);
  return s;
}

GradientSums operator+(const GradientSums& a, const GradientSums& b) {
  if (!a.distance.defined()) return b;
  return {a.distance + b.distance, a.radius + b.radius, a.rows + b.rows, a.massless + b.massless};
}

void GradientAccumulator::add(const std::vector<GradientSums>& layers) {
  if (layers.empty()) throw Error(ErrorKind::internal, "gradient span: a batch with no layers");
  if (layer_distance_.empty()) {
    layer_distance_.resize(layers.size());
    layer_radius_.resize(layers.size());
  }
  if (layers.size() != layer_distance_.size())
    throw Error(ErrorKind::internal, "gradient span: " + std::to_string(layers.size()) + " layers in this batch, " +
                                         std::to_string(layer_distance_.size()) + " before");
  std::vector<at::Tensor> dist, rad, rows, massless;
  for (const auto& l : layers) {
    dist.push_back(l.distance.to(at::kCPU, at::kDouble).contiguous());
    rad.push_back(l.radius.to(at::kCPU, at::kDouble).contiguous());
    rows.push_back(l.rows.to(at::kCPU, at::kLong).contiguous());
    massless.push_back(l.massless.to(at::kCPU, at::kLong).contiguous());
  }
  const int64_t B = dist[0].size(0);
  for (int64_t b = 0; b < B; ++b) {
    double seq_distance = 0, seq_radius = 0;
    int64_t seq_rows = 0;
    for (size_t l = 0; l < layers.size(); ++l) {
      const double d = dist[l].data_ptr<double>()[b], r = rad[l].data_ptr<double>()[b];
      const int64_t n = rows[l].data_ptr<int64_t>()[b];
      if (n > 0) {
        layer_distance_[l].add(d / static_cast<double>(n));
        layer_radius_[l].add(r / static_cast<double>(n));
      }
      seq_distance += d;
      seq_radius += r;
      seq_rows += n;
      massless_ += massless[l].data_ptr<int64_t>()[b];
    }
    rows_ += seq_rows;
    if (seq_rows > 0) {
      distance_.add(seq_distance / static_cast<double>(seq_rows));
      radius_.add(seq_radius / static_cast<double>(seq_rows));
    } else {
      ++empty_;
    }
  }
}

GradientSummary GradientAccumulator::summary() const {
  GradientSummary s;
  s.distance = distance_.value();
  s.radius = radius_.value();
  for (const auto& m : layer_distance_) s.per_layer_distance.push_back(m.value());
  for (const auto& m : layer_radius_) s.per_layer_radius.push_back(m.value());
  s.sequences = distance_.n;
  s.sequences_without_rows = empty_;
  s.rows = rows_;
  s.massless_rows = massless_;
  return s;
}

}  // namespace lra::host::span
