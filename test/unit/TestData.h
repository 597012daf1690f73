//===- TestData.h - seeded data for kernel tests ----------------*- C++ -*-===//
#ifndef OCTET_TEST_UNIT_TESTDATA_H
#define OCTET_TEST_UNIT_TESTDATA_H

#include <cstddef>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace octet::test {
/// `count` floats uniform in [-1, 1), reproducible from `seed`.
inline std::vector<float> randomFloats(size_t count, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float &x : v)
    x = dist(gen);
  return v;
}

/// Names an (M, N, K) test parameter "M7_N100_K770", for INSTANTIATE_TEST_SUITE_P.
struct MnkName {
  template <typename ParamInfo> std::string operator()(const ParamInfo &info) const {
    return "M" + std::to_string(std::get<0>(info.param)) + "_N" +
           std::to_string(std::get<1>(info.param)) + "_K" + std::to_string(std::get<2>(info.param));
  }
};
} // namespace octet::test

#endif
