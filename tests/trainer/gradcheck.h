// Finite-difference gradient checks in double precision, for the op and
// whole-model tests. The scalar checked is loss = Σ dout · f(x) for a fixed
// random dout, so the analytic gradient is exactly what a backward function
// computes from dout.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "trainer/rng.h"

namespace bm::train::testing {

inline std::vector<double> RandomVector(size_t n, uint64_t seed, double scale = 1.0) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * NormalAt(seed, 77, i);
  return v;
}

inline std::vector<float> RandomFloats(size_t n, uint64_t seed, double scale = 1.0) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(scale * NormalAt(seed, 77, i));
  return v;
}

// Compares analytic[i] with (f(x + h e_i) - f(x - h e_i)) / 2h for every i
// (or a deterministic sample of `max_checks` indices). f reads x.
inline void ExpectGradientMatches(std::vector<double>& x, const std::vector<double>& analytic,
                                  const std::function<double()>& f, const char* what,
                                  double tolerance = 1e-6, size_t max_checks = 400) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  const double h = 1e-6;
  size_t stride = x.size() > max_checks ? x.size() / max_checks : 1;
  double worst = 0;
  for (size_t i = 0; i < x.size(); i += stride) {
    const double saved = x[i];
    x[i] = saved + h;
    const double plus = f();
    x[i] = saved - h;
    const double minus = f();
    x[i] = saved;
    const double numeric = (plus - minus) / (2 * h);
    const double err = std::abs(numeric - analytic[i]) / std::max(1.0, std::abs(numeric));
    worst = std::max(worst, err);
    EXPECT_LE(err, tolerance) << what << "[" << i << "]: analytic " << analytic[i] << " numeric "
                              << numeric;
    if (err > tolerance) return;  // one message per tensor is enough
  }
  // A check that cannot fail is no check: gradients must not all be zero.
  double norm = 0;
  for (double g : analytic) norm += g * g;
  EXPECT_GT(norm, 0.0) << what << ": all-zero gradient";
}

inline double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace bm::train::testing
