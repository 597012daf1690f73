//===- CApiCountsTest.cpp - octet_run's counts and codes are claims ---------===//
//
// octet_run takes the caller's array lengths and dtype codes on trust from C:
// each must be checked before an element is read or memory is allocated for
// it (issue 18, item 7). The arrays here end at an unreadable page, so a read
// past the given elements faults instead of passing.
//
//===----------------------------------------------------------------------===//
#include "../GuardedBuffer.h"
#include "TestPlans.h"

#include "octet/octet.h"
#include "runtime/CApiInternal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <vector>

using namespace octet::rt;
using namespace octet::rt::test;
using ::testing::HasSubstr;

namespace {

struct Fixture {
  octet_model *model = nullptr;
  std::vector<float> x = std::vector<float>(6, 1.0f);
  std::vector<int64_t> ids = std::vector<int64_t>(6, 1);
  octet::test::Guarded<octet_tensor> inputs{2};
  octet::test::Guarded<octet_tensor> outputs{1};

  static octet_tensor tensor(void *data, octet_dtype dtype) {
    octet_tensor t;
    std::memset(&t, 0, sizeof(t));
    t.data = data;
    t.dtype = dtype;
    t.rank = 2;
    t.dims[0] = 3;
    t.dims[1] = 2;
    return t;
  }
  Fixture() {
    EXPECT_EQ(octet::wrapPlanAsModel(makeAddModel(), &model), OCTET_OK) << octet_last_error();
    inputs[0] = tensor(x.data(), OCTET_F32);
    inputs[1] = tensor(ids.data(), OCTET_I64);
    std::memset(outputs.data(), 0, sizeof(octet_tensor));
  }
  ~Fixture() { octet_model_destroy(model); }
};

TEST(CApiCounts, MoreInputsThanTheArrayHoldsAreRejectedUnread) {
  Fixture f;
  ASSERT_EQ(octet_run(f.model, f.inputs.data(), 2, f.outputs.data(), 1), OCTET_OK)
      << octet_last_error();
  octet_tensor_free(f.outputs[0].data);
  std::memset(f.outputs.data(), 0, sizeof(octet_tensor));
  // A third element would lie in the guard page.
  EXPECT_EQ(octet_run(f.model, f.inputs.data(), 3, f.outputs.data(), 1),
            OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error(), HasSubstr("octet_run: expected 2 inputs, got 3"));
  EXPECT_EQ(octet_run(f.model, f.inputs.data(), 2, f.outputs.data(), 2),
            OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error(), HasSubstr("octet_run: expected 1 outputs, got 2"));
}

TEST(CApiCounts, HugeCountsAllocateNothing) {
  Fixture f;
  EXPECT_EQ(octet_run(f.model, f.inputs.data(), INT_MAX, f.outputs.data(), 1),
            OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error(), HasSubstr("expected 2 inputs, got 2147483647"));
  EXPECT_EQ(octet_run(f.model, f.inputs.data(), 2, f.outputs.data(), INT_MAX),
            OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error(), HasSubstr("expected 1 outputs, got 2147483647"));
}

TEST(CApiCounts, AnyDtypeCodeIsAClearError) {
  Fixture f;
  // Codes a C caller can put in the enum's storage; none is a valid dtype.
  for (int32_t code : {0, -1, 13, 99, INT_MIN, INT_MAX}) { // 13: one past OCTET_F16
    std::memcpy(&f.inputs[0].dtype, &code, sizeof(code));
    EXPECT_EQ(octet_run(f.model, f.inputs.data(), 2, f.outputs.data(), 1),
              OCTET_ERROR_INVALID_INPUT);
    EXPECT_THAT(octet_last_error(),
                HasSubstr("input 0 'x' has an unknown dtype " + std::to_string(code)));
  }
}

} // namespace
