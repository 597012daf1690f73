//===- CApiTest.cpp - the C API over a hand-built Plan ---------------------===//
#include "CompileStub.h"
#include "TestPlans.h"

#include "octet/octet.h"
#include "runtime/CApiInternal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace octet::rt;
using namespace octet::rt::test;
using ::testing::HasSubstr;

namespace {

struct ModelDeleter {
  void operator()(octet_model *m) const { octet_model_destroy(m); }
};
using ModelPtr = std::unique_ptr<octet_model, ModelDeleter>;

ModelPtr addModel() {
  octet_model *model = nullptr;
  EXPECT_EQ(octet::wrapPlanAsModel(makeAddModel(), &model), OCTET_OK) << octet_last_error();
  return ModelPtr(model);
}

octet_tensor cTensor(void *data, size_t bytes, octet_dtype dtype, std::vector<int64_t> dims) {
  octet_tensor t;
  std::memset(&t, 0, sizeof(t));
  t.data = data;
  t.bytes = bytes;
  t.dtype = dtype;
  t.rank = int32_t(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    t.dims[i] = dims[i];
  return t;
}

TEST(CApi, DTypes) {
  EXPECT_EQ(octet_dtype_size(OCTET_F32), 4u);
  EXPECT_EQ(octet_dtype_size(OCTET_I64), 8u);
  EXPECT_EQ(octet_dtype_size(OCTET_BOOL), 1u);
  EXPECT_EQ(octet_dtype_size(octet_dtype(0)), 0u);
  EXPECT_EQ(octet_dtype_size(octet_dtype(99)), 0u);
  EXPECT_STREQ(octet_dtype_name(OCTET_I32), "i32");
  EXPECT_STREQ(octet_dtype_name(OCTET_U8), "u8");
  EXPECT_STREQ(octet_dtype_name(octet_dtype(42)), "unknown");
  // The codes appended after bool (the plan image stores DType = code - 1).
  const std::pair<octet_dtype, const char *> appended[] = {{OCTET_I16, "i16"},
                                                           {OCTET_U16, "u16"},
                                                           {OCTET_U32, "u32"},
                                                           {OCTET_U64, "u64"},
                                                           {OCTET_F16, "f16"}};
  const size_t sizes[] = {2, 2, 4, 8, 2};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(int(appended[i].first), 8 + int(i));
    EXPECT_EQ(octet_dtype_size(appended[i].first), sizes[i]);
    EXPECT_STREQ(octet_dtype_name(appended[i].first), appended[i].second);
  }
  EXPECT_EQ(octet_dtype_size(octet_dtype(13)), 0u);
}

TEST(CApi, InfoListsSymbolicDims) {
  ModelPtr model = addModel();
  ASSERT_TRUE(model);
  EXPECT_EQ(octet_model_num_inputs(model.get()), 2);
  EXPECT_EQ(octet_model_num_outputs(model.get()), 1);
  octet_tensor_info info;
  ASSERT_EQ(octet_model_input_info(model.get(), 1, &info), OCTET_OK);
  EXPECT_STREQ(info.name, "ids");
  EXPECT_EQ(info.dtype, OCTET_I64);
  ASSERT_EQ(info.rank, 2);
  EXPECT_EQ(info.dims[0], -1);
  EXPECT_EQ(info.dims[1], -1);
  EXPECT_STREQ(info.dim_names[0], "batch");
  EXPECT_STREQ(info.dim_names[1], "sequence");
  ASSERT_EQ(octet_model_output_info(model.get(), 0, &info), OCTET_OK);
  EXPECT_STREQ(info.name, "y");
  EXPECT_EQ(info.dtype, OCTET_F32);
  EXPECT_STREQ(info.dim_names[1], "sequence");

  EXPECT_EQ(octet_model_input_info(model.get(), 2, &info), OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error(), HasSubstr("input index 2 is out of range [0, 2)"));
  EXPECT_EQ(octet_model_output_info(model.get(), -1, &info), OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(octet_model_input_info(model.get(), 0, nullptr), OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(octet_model_input_info(nullptr, 0, &info), OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(octet_model_num_inputs(nullptr), -1);
}

TEST(CApi, StaticAndUnnamedDims) {
  PlanBuilder b;
  b.input("x", DType::F32, {-1, 4}); // symbolic without a name, then static
  octet_model *raw = nullptr;
  ASSERT_EQ(octet::wrapPlanAsModel(std::move(b.plan), &raw), OCTET_OK);
  ModelPtr model(raw);
  octet_tensor_info info;
  ASSERT_EQ(octet_model_input_info(model.get(), 0, &info), OCTET_OK);
  EXPECT_EQ(info.dims[0], -1);
  EXPECT_EQ(info.dims[1], 4);
  EXPECT_STREQ(info.dim_names[0], "");
  EXPECT_STREQ(info.dim_names[1], "");
}

TEST(CApi, RunRuntimeAndCallerOwned) {
  ModelPtr model = addModel();
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  std::vector<int64_t> ids = {1, 2, 3, 4, 5, 6};
  octet_tensor inputs[2] = {cTensor(x.data(), 0, OCTET_F32, {3, 2}),
                            cTensor(ids.data(), 0, OCTET_I64, {3, 2})};
  octet_tensor output = cTensor(nullptr, 0, OCTET_F32, {});
  ASSERT_EQ(octet_run(model.get(), inputs, 2, &output, 1), OCTET_OK) << octet_last_error();
  ASSERT_NE(output.data, nullptr);
  EXPECT_EQ(output.bytes, 24u);
  EXPECT_EQ(output.dtype, OCTET_F32);
  EXPECT_EQ(output.rank, 2);
  EXPECT_EQ(output.dims[0], 3);
  EXPECT_EQ(output.dims[1], 2);
  const float *y = static_cast<const float *>(output.data);
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(y[i], x[i] + 2 + float(ids[i]));
  octet_tensor_free(output.data);
  octet_tensor_free(nullptr);

  std::vector<float> buffer(6, -1);
  octet_tensor callerOwned = cTensor(buffer.data(), 24, OCTET_F32, {});
  ASSERT_EQ(octet_run(model.get(), inputs, 2, &callerOwned, 1), OCTET_OK) << octet_last_error();
  EXPECT_EQ(callerOwned.data, buffer.data());
  EXPECT_EQ(buffer[5], 6 + 2 + 6);

  callerOwned.bytes = 20;
  EXPECT_EQ(octet_run(model.get(), inputs, 2, &callerOwned, 1), OCTET_ERROR_OUTPUT_TOO_SMALL);
  EXPECT_THAT(octet_last_error(), HasSubstr("needs 24 bytes (f32 [3, 2]) but its buffer holds 20"));
  EXPECT_EQ(callerOwned.rank, 2);
  EXPECT_EQ(callerOwned.dims[0], 3);
  EXPECT_EQ(callerOwned.dims[1], 2);
}

TEST(CApi, RunErrors) {
  ModelPtr model = addModel();
  std::vector<float> x(6);
  std::vector<int64_t> ids(6, 1);
  octet_tensor inputs[2] = {cTensor(x.data(), 0, OCTET_F32, {3, 2}),
                            cTensor(ids.data(), 0, OCTET_I64, {3, 2})};
  octet_tensor output = cTensor(nullptr, 0, OCTET_F32, {});

  EXPECT_EQ(octet_run(nullptr, inputs, 2, &output, 1), OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error(), HasSubstr("model is null"));
  EXPECT_EQ(octet_run(model.get(), nullptr, 2, &output, 1), OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(octet_run(model.get(), inputs, 2, nullptr, 1), OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(octet_run(model.get(), inputs, 1, &output, 1), OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error(), HasSubstr("expected 2 inputs, got 1"));
  EXPECT_EQ(octet_run(model.get(), inputs, -1, &output, 1), OCTET_ERROR_INVALID_ARGUMENT);

  ids[4] = 100;
  EXPECT_EQ(octet_run(model.get(), inputs, 2, &output, 1), OCTET_ERROR_INVALID_INPUT);
  EXPECT_THAT(octet_last_error(),
              HasSubstr("input 1 'ids' element [2, 0] is 100, outside the valid range [0, 10)"));
  EXPECT_EQ(output.data, nullptr);
  ids[4] = 1;

  inputs[0].dtype = octet_dtype(77);
  EXPECT_EQ(octet_run(model.get(), inputs, 2, &output, 1), OCTET_ERROR_INVALID_INPUT);
  EXPECT_THAT(octet_last_error(), HasSubstr("input 0 'x' has an unknown dtype 77"));
  inputs[0].dtype = OCTET_F64;
  EXPECT_EQ(octet_run(model.get(), inputs, 2, &output, 1), OCTET_ERROR_INVALID_INPUT);
  EXPECT_THAT(octet_last_error(), HasSubstr("has dtype f64, expected f32"));
  inputs[0].dtype = OCTET_F32;
  inputs[0].rank = 9;
  EXPECT_EQ(octet_run(model.get(), inputs, 2, &output, 1), OCTET_ERROR_INVALID_INPUT);
  EXPECT_THAT(octet_last_error(), HasSubstr("has rank 9"));
  inputs[0].rank = 2;
  inputs[0].data = nullptr;
  EXPECT_EQ(octet_run(model.get(), inputs, 2, &output, 1), OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error(), HasSubstr("data pointer is null"));
}

TEST(CApi, StepFailureIsRuntimeError) {
  PlanBuilder b;
  TensorId x = b.input("x", DType::F32, {2});
  b.step(std::make_unique<ThrowStep>(), {x}, {}, "Weird_1");
  octet_model *raw = nullptr;
  ASSERT_EQ(octet::wrapPlanAsModel(std::move(b.plan), &raw), OCTET_OK);
  ModelPtr model(raw);
  float data[2] = {0, 0};
  octet_tensor input = cTensor(data, 0, OCTET_F32, {2});
  EXPECT_EQ(octet_run(model.get(), &input, 1, nullptr, 0), OCTET_ERROR_RUNTIME);
  EXPECT_THAT(octet_last_error(),
              HasSubstr("octet_run: step 0 (test.throw) for Weird_1: thrown inside"));
}

TEST(CApi, WrapRejectsMalformedPlans) {
  octet_model *model = reinterpret_cast<octet_model *>(0x1);
  auto plan = std::make_unique<Plan>();
  plan->arenaSlots.push_back(3); // no such scalar
  EXPECT_EQ(octet::wrapPlanAsModel(std::move(plan), &model), OCTET_ERROR_RUNTIME);
  EXPECT_EQ(model, nullptr);
  EXPECT_THAT(octet_last_error(), HasSubstr("malformed plan: arena slot 0"));
  EXPECT_EQ(octet::wrapPlanAsModel(nullptr, &model), OCTET_ERROR_INVALID_ARGUMENT);
}

TEST(CApi, LastErrorIsPerThread) {
  EXPECT_EQ(octet_run(nullptr, nullptr, 0, nullptr, 0), OCTET_ERROR_INVALID_ARGUMENT);
  std::string otherThread = "unset";
  std::thread([&] { otherThread = octet_last_error(); }).join();
  EXPECT_EQ(otherThread, "");
  EXPECT_THAT(octet_last_error(), HasSubstr("model is null"));
}

TEST(CApi, Options) {
  octet_options *options = octet_options_create();
  ASSERT_NE(options, nullptr);
  EXPECT_EQ(octet_options_set(options, "gemm", "onednn"), OCTET_OK);
  EXPECT_EQ(octet_options_set(options, "isa", "avx2"), OCTET_OK);
  EXPECT_EQ(octet_options_set(options, "print_ir_after_all", "1"), OCTET_OK);
  EXPECT_EQ(octet_options_set(options, "attention", "bf16"), OCTET_OK);
  EXPECT_EQ(octet_options_set(options, "attention", "int8"), OCTET_OK);
  EXPECT_EQ(octet_options_set(options, "attention", "auto"), OCTET_OK);
  EXPECT_EQ(octet_options_set(options, "attention", "f32"), OCTET_OK);
  EXPECT_EQ(octet_options_set(options, "attention", "fp16"), OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(
      octet_last_error(),
      HasSubstr("option 'attention': invalid value 'fp16' (expected auto, f32, bf16 or int8)"));
  EXPECT_EQ(octet_options_set(options, "gemm", "fast"), OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error(),
              HasSubstr("option 'gemm': invalid value 'fast' (expected auto, jit or onednn)"));
  EXPECT_EQ(octet_options_set(options, "threads", "4"), OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error(), HasSubstr("unknown option 'threads'"));
  EXPECT_EQ(octet_options_set(options, nullptr, "1"), OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(octet_options_set(nullptr, "gemm", "jit"), OCTET_ERROR_INVALID_ARGUMENT);

  octet_model *model = reinterpret_cast<octet_model *>(0x1);
  EXPECT_EQ(octet_model_create_from_file("bad.onnx", options, &model), OCTET_ERROR_INVALID_MODEL);
  EXPECT_EQ(model, nullptr);
  EXPECT_THAT(octet_last_error(), HasSubstr("bad.onnx: not a valid ONNX model"));
  EXPECT_EQ(octet::lastCompileOptions.kernels.gemm, KernelOptions::Gemm::OneDnn);
  EXPECT_FALSE(octet::lastCompileOptions.kernels.allowAvx512);
  EXPECT_TRUE(bool(octet::lastCompileOptions.irAfterPass));

  EXPECT_EQ(octet_model_create_from_file("unsupported.onnx", nullptr, &model),
            OCTET_ERROR_UNSUPPORTED);
  EXPECT_THAT(octet_last_error(), HasSubstr("unsupported op Loop"));
  EXPECT_EQ(octet::lastCompileOptions.kernels.gemm, KernelOptions::Gemm::Auto);
  EXPECT_TRUE(octet::lastCompileOptions.kernels.allowAvx512);
  EXPECT_FALSE(bool(octet::lastCompileOptions.irAfterPass));

  const char bytes[] = "unsupported bytes";
  EXPECT_EQ(octet_model_create_from_bytes(bytes, sizeof(bytes) - 1, options, &model),
            OCTET_ERROR_UNSUPPORTED);
  EXPECT_EQ(octet::lastCompileOptions.kernels.gemm, KernelOptions::Gemm::OneDnn);

  int calls = octet::compileCalls;
  EXPECT_EQ(octet_model_create_from_file(nullptr, options, &model), OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(octet_model_create_from_file("m.onnx", options, nullptr), OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(octet_model_create_from_bytes(nullptr, 4, options, &model),
            OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(octet_model_create_from_bytes(bytes, 0, options, &model), OCTET_ERROR_INVALID_MODEL);
  EXPECT_EQ(octet::compileCalls, calls);
  octet_options_destroy(options);
  octet_options_destroy(nullptr);
  octet_model_destroy(nullptr);
}

// octet_model_open's argument checks in liboctet.so's configuration (CApiJit.cpp);
// opening real model.so files: test/lit/run/aot-*.test, octet-aot-linker-tests.
TEST(CApi, OpenArguments) {
  octet_model *model = reinterpret_cast<octet_model *>(0x1);
  EXPECT_EQ(octet_model_open("m.so", nullptr, nullptr), OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error(), HasSubstr("octet_model_open: model is null"));

  EXPECT_EQ(octet_model_open(nullptr, nullptr, &model), OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(model, nullptr);
  EXPECT_THAT(octet_last_error(), HasSubstr("this is liboctet.so, which embeds none"));

  EXPECT_EQ(octet_model_open("/nonexistent/m.so", nullptr, &model), OCTET_ERROR_INVALID_MODEL);
  EXPECT_THAT(octet_last_error(), HasSubstr("cannot open '/nonexistent/m.so'"));

  // Only "profile" and "constants" apply to a compiled model: a compile
  // option is refused before the file is looked at.
  octet_options *options = octet_options_create();
  ASSERT_EQ(octet_options_set(options, "profile", "1"), OCTET_OK);
  ASSERT_EQ(octet_options_set(options, "constants", "mapped"), OCTET_OK);
  EXPECT_EQ(octet_model_open("/nonexistent/m.so", options, &model), OCTET_ERROR_INVALID_MODEL);
  ASSERT_EQ(octet_options_set(options, "gemm", "jit"), OCTET_OK);
  EXPECT_EQ(octet_model_open("/nonexistent/m.so", options, &model), OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error(), HasSubstr("option 'gemm' is a compile option"));
  octet_options_destroy(options);
}

TEST(CApi, ConcurrentRunsOnOneModel) {
  ModelPtr model = addModel();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 50; ++r) {
        int64_t batch = 1 + (t * 3 + r) % 5, sequence = 1 + (t + r * 5) % 41;
        std::vector<float> x(size_t(batch * sequence));
        std::vector<int64_t> ids(x.size());
        for (size_t i = 0; i < x.size(); ++i) {
          x[i] = float(t) - float(i) * 0.25f + float(r);
          ids[i] = int64_t((i * 7 + size_t(t)) % 10);
        }
        octet_tensor inputs[2] = {cTensor(x.data(), 0, OCTET_F32, {batch, sequence}),
                                  cTensor(ids.data(), 0, OCTET_I64, {batch, sequence})};
        // Alternate runtime-owned and caller-owned outputs.
        std::vector<float> buffer(x.size());
        octet_tensor output = r % 2 ? cTensor(buffer.data(), buffer.size() * 4, OCTET_F32, {})
                                    : cTensor(nullptr, 0, OCTET_F32, {});
        bool good = octet_run(model.get(), inputs, 2, &output, 1) == OCTET_OK &&
                    output.dims[0] == batch && output.dims[1] == sequence;
        const float *y = static_cast<const float *>(output.data);
        for (size_t i = 0; good && i < x.size(); ++i)
          good = y[i] == x[i] + 2 + float(ids[i]);
        if (r % 2 == 0)
          octet_tensor_free(output.data);
        if (!good)
          ++failures;
      }
    });
  for (auto &thread : threads)
    thread.join();
  EXPECT_EQ(failures.load(), 0);
}

} // namespace
