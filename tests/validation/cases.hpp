// Validation cases: reading tests/validation/data/*.jsonl, converting the
// CPU measurements to CUDA terms, and evaluating vramcalc (and the simple
// rules peers use) on every case. Shared by the ctest comparison
// (test_validation.cpp) and the accuracy report (accuracy_report.cpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace vramcalc::validation {

/// The lines of tests/validation/data/<file>, parsed.
[[nodiscard]] std::vector<nlohmann::json> load(const std::string& file);

/// One compared quantity.
struct Comparison {
  std::string case_id;
  std::string kind;  ///< "parameters", "activations per layer", "model states", ...
  std::uint64_t measured = 0;
  std::uint64_t predicted = 0;
  double tolerance = 0;               ///< allowed relative error
  std::uint64_t tolerance_bytes = 0;  ///< allowed absolute error (published rounding)
  // The same case under simple rules peers use; nullopt where a rule does not apply.
  std::optional<std::uint64_t> deepspeed;     ///< DeepSpeed model-state estimator
  std::optional<std::uint64_t> accelerate;    ///< accelerate estimate-memory "Training using Adam"
  std::optional<std::uint64_t> korthikanti;   ///< Korthikanti et al. Eq. 1 alone
  std::optional<std::uint64_t> weights_x1_2;  ///< weights × 1.2
  /// A known gap: what vramcalc does not model yet that makes the case miss
  /// its tolerance; the report shows it with the reason. Such a case must
  /// stay on its side of the measurement: below, unless gap_above.
  std::string gap;
  bool gap_above = false;

  [[nodiscard]] double error() const;  ///< signed relative error of vramcalc
  [[nodiscard]] bool within_tolerance() const;
};

/// A case vramcalc cannot represent yet, with the reason.
struct Skipped {
  std::string case_id;
  std::string reason;
};

struct Evaluation {
  std::vector<Comparison> comparisons;
  std::vector<Skipped> skipped;
};

/// Every case of cpu-autograd.jsonl, component by component.
[[nodiscard]] Evaluation evaluate_cpu_cases();

/// Every case of published.jsonl.
[[nodiscard]] Evaluation evaluate_published_cases();

/// Every case of the cuda-*.jsonl files (tests/validation/measure/measure_cuda.py);
/// empty until a GPU run has been committed.
[[nodiscard]] Evaluation evaluate_cuda_cases();

/// The cuda-*.jsonl files present.
[[nodiscard]] std::vector<std::string> cuda_files();

/// Relative error of `estimate` against `measured`, signed (+ = over-estimate).
[[nodiscard]] double relative_error(std::uint64_t estimate, std::uint64_t measured);

}  // namespace vramcalc::validation
