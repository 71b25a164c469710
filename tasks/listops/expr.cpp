#include "expr.h"

#include <algorithm>

#include <stdexcept>

namespace lra::listops {

const std::vector<std::string>& vocabulary() {
  static const std::vector<std::string> v = {"<pad>", "[MIN", "[MAX", "[MED", "[SM", "0", "1", "2", "3",
                                             "4",     "5",    "6",    "7",    "8",   "9", "X", "<oov>"};
  return v;
}

void Evaluator::reset() {
  stack_.clear();
  top_count_ = 0;
  top_value_ = -1;
  failed_ = false;
  error_.clear();
  max_depth_ = min_operands_ = max_operands_ = 0;
}

bool Evaluator::fail(const char* why) {
  failed_ = true;
  error_ = why;
  return false;
}

bool Evaluator::operand(int value) {
  max_depth_ = std::max(max_depth_, 1);
  if (stack_.empty()) {
    if (++top_count_ > 1) return fail("more than one expression (tokens after the outermost closing X)");
    top_value_ = value;
    return true;
  }
  Frame& f = stack_.back();
  ++f.count;
  if (value < 0) {
    f.unknown = true;
  } else {
    f.sum += value;
    ++f.hist[value];
  }
  return true;
}

// k-th smallest (0-based) operand from the histogram.
static int kth(const int32_t* hist, int k) {
  for (int v = 0; v < 10; ++v) {
    if (k < hist[v]) return v;
    k -= hist[v];
  }
  return 9;
}

bool Evaluator::push_slow(int32_t id) {
  if (failed_) return false;
  if (id >= kMin && id <= kSm) {
    if (stack_.empty() && top_count_ > 0)
      return fail("more than one expression (tokens after the outermost closing X)");
    Frame f{id, 0, 0, false, {}};
    stack_.push_back(f);
    // Its operands sit one level deeper (an operator has at least one: checked when it closes).
    max_depth_ = std::max(max_depth_, static_cast<int>(stack_.size()) + 1);
    return true;
  }
  if (id >= kDigit0 && id < kDigit0 + 10) return operand(id - kDigit0);
  if (id == kOov) return operand(-1);
  if (id != kClose) return fail("invalid token id");
  if (stack_.empty()) return fail("closing X without an open operator");
  const Frame f = stack_.back();
  stack_.pop_back();
  if (f.count == 0) return fail("operator without operands");
  min_operands_ = min_operands_ == 0 ? f.count : std::min(min_operands_, f.count);
  max_operands_ = std::max(max_operands_, f.count);
  if (f.unknown) return operand(-1);
  int value = 0;
  switch (f.op) {
    case kMin: value = kth(f.hist, 0); break;
    case kMax: value = kth(f.hist, f.count - 1); break;
    case kMed:  // numpy median, then int(): even count -> mean of the middle two, truncated
      value = f.count % 2 ? kth(f.hist, f.count / 2)
                          : (kth(f.hist, f.count / 2 - 1) + kth(f.hist, f.count / 2)) / 2;
      break;
    default: value = f.sum % 10; break;
  }
  return operand(value);
}

bool Evaluator::finish(int* value) {
  if (failed_) return false;
  if (!stack_.empty()) {
    fail(" operator(s) not closed by X (truncated expression?)");
    error_ = std::to_string(stack_.size()) + error_;
    return false;
  }
  if (top_count_ == 0) return fail("no expression");
  *value = top_value_;
  return true;
}

int evaluate(const int32_t* ids, size_t n) {
  Evaluator e;
  int value = -1;
  for (size_t i = 0; i < n; ++i)
    if (!e.push(ids[i])) break;
  if (!e.finish(&value)) throw std::invalid_argument("ListOps expression: " + e.error());
  return value;
}

int evaluate(const std::string& codes) {
  Evaluator e;
  int value = -1;
  for (char c : codes)
    if (!e.push(static_cast<unsigned char>(c))) break;
  if (!e.finish(&value)) throw std::invalid_argument("ListOps expression: " + e.error());
  return value;
}

}  // namespace lra::listops
