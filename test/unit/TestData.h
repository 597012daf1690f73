//===- TestData.h - seeded data for kernel tests ----------------*- C++ -*-===//
#ifndef OCTET_TEST_UNIT_TESTDATA_H
#define OCTET_TEST_UNIT_TESTDATA_H

#include <cstddef>
#include <random>
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
} // namespace octet::test

#endif
