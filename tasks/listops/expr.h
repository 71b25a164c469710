// ListOps vocabulary and expression evaluation (torch-free).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lra::listops {

// Canonical token ids. The reference derives ids from Python set order (hash
// dependent); we fix one order. The generator stores trees in these ids too.
enum TokenId : int32_t {
  kPad = 0,
  kMin = 1,
  kMax = 2,
  kMed = 3,
  kSm = 4,
  kDigit0 = 5,  // digit d has id kDigit0 + d
  kClose = 15,  // "X" (the reference's "]" after preprocessing)
  kOov = 16,
};
constexpr int32_t kVocabSize = 17;
constexpr int kNumClasses = 10;

// Token text by id: "<pad>", "[MIN", "[MAX", "[MED", "[SM", "0".."9", "X", "<oov>".
const std::vector<std::string>& vocabulary();

// Streaming checker/evaluator of prefix expressions: value := digit | OP value+ X.
// O(1) per token, no recursion, so hostile input cannot overflow the stack.
class Evaluator {
 public:
  void reset();
  // Feeds one id (kMin..kOov; kOov acts as an operand of unknown value).
  // Returns false once the sequence is ill-formed; error() then says why.
  bool push(int32_t id) {
    // hot path (most tokens): a digit inside an operator
    if (id >= kDigit0 && id < kClose && !stack_.empty() && !failed_) {
      Frame& f = stack_.back();
      ++f.count;
      f.sum += id - kDigit0;
      ++f.hist[id - kDigit0];
      return true;
    }
    return push_slow(id);
  }
  // Ends the sequence. Returns false if ill-formed. *value is the result,
  // or -1 when an unknown operand made it undecidable.
  bool finish(int* value);
  const std::string& error() const { return error_; }
  // The tree's shape so far: its depth (a leaf under d open operators is at
  // depth d + 1, LRA's generator counts the root as depth 1) and the fewest
  // and most operands of a closed operator (0 before any closed).
  int depth() const { return max_depth_; }
  int fewest_operands() const { return min_operands_; }
  int most_operands() const { return max_operands_; }

 private:
  struct Frame {
    int32_t op;
    int32_t count;
    int32_t sum;
    bool unknown;
    int32_t hist[10];
  };
  bool push_slow(int32_t id);
  bool operand(int value);  // value -1: unknown
  bool fail(const char* why);
  std::vector<Frame> stack_;
  int top_count_ = 0;
  int top_value_ = -1;
  bool failed_ = false;
  std::string error_;
  int max_depth_ = 0, min_operands_ = 0, max_operands_ = 0;
};

// Value of a whole id sequence; throws std::invalid_argument if ill-formed.
int evaluate(const int32_t* ids, size_t n);
int evaluate(const std::string& codes);  // one byte per id (generator form)

}  // namespace lra::listops
