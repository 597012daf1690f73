//===- ProfileCApiTest.cpp - the C API's "profile" option and JSON ---------===//
//
// runtime/CApi.cpp with a stub compiler that hands back the runtime tests'
// hand-built add model (test/unit/runtime/TestPlans.h), so the option, the
// recorded profile and octet_model_last_profile_json are tested without MLIR.
//
//===----------------------------------------------------------------------===//
#include "octet/octet.h"

#include "compiler/driver/Compile.h"
#include "runtime/Ceilings.h"
#include "test/unit/runtime/TestPlans.h"

#include <gtest/gtest.h>

#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace octet {
rt::Status validateCompileOptions(const CompileOptions &) { return rt::Status(); }
rt::Status compileOnnxFile(const std::string &, const CompileOptions &,
                           std::unique_ptr<rt::Plan> &plan) {
  plan = rt::test::makeAddModel();
  return rt::Status();
}
rt::Status compileOnnxBytes(const void *, size_t, const CompileOptions &,
                            std::unique_ptr<rt::Plan> &plan) {
  plan = rt::test::makeAddModel();
  return rt::Status();
}
rt::Status calibrateOnnxFile(const std::string &, const CompileOptions &, const std::string &,
                             CalibrationSummary *) {
  return rt::Status::error("calibration is not part of this test");
}
rt::Status compileOnnxFileToImage(const std::string &, const CompileOptions &, rt::PlanImage &,
                                  std::unique_ptr<rt::Plan> *) {
  return rt::Status::error("AOT compiles are not part of this test");
}
} // namespace octet

namespace {

octet_tensor cTensor(void *data, octet_dtype dtype, std::vector<int64_t> dims) {
  octet_tensor t;
  std::memset(&t, 0, sizeof(t));
  t.data = data;
  t.dtype = dtype;
  t.rank = int32_t(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    t.dims[i] = dims[i];
  return t;
}

octet_model *createModel(const char *profile) {
  octet_options *options = octet_options_create();
  if (profile) {
    EXPECT_EQ(octet_options_set(options, "profile", profile), OCTET_OK) << octet_last_error();
  }
  octet_model *model = nullptr;
  EXPECT_EQ(octet_model_create_from_file("stub.onnx", options, &model), OCTET_OK)
      << octet_last_error();
  octet_options_destroy(options);
  return model;
}

octet_status runOnce(octet_model *model) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  std::vector<int64_t> ids = {1, 2, 3, 4, 5, 6};
  octet_tensor inputs[2] = {cTensor(x.data(), OCTET_F32, {3, 2}),
                            cTensor(ids.data(), OCTET_I64, {3, 2})};
  octet_tensor output = cTensor(nullptr, OCTET_F32, {});
  octet_status status = octet_run(model, inputs, 2, &output, 1);
  octet_tensor_free(output.data);
  return status;
}

/// A cache directory holding made-up ceilings for this thread count, so that
/// the JSON shows them and nothing is measured.
struct ScopedCacheDir {
  char dir[32] = "/tmp/octet-profile-XXXXXX";
  ScopedCacheDir() {
    EXPECT_TRUE(mkdtemp(dir));
    setenv("XDG_CACHE_HOME", dir, 1);
    octet::rt::Ceilings c;
    c.threads = omp_get_max_threads(), c.host = "h", c.cpu = "test cpu", c.fp32Isa = "avx512";
    c.fp32Gflops = 123, c.l2GBs = 50, c.l3GBs = 40, c.dramGBs = 10, c.l3CacheBytes = 1 << 20;
    const std::string path = octet::rt::ceilingsCachePath(c.threads);
    std::system(("mkdir -p " + path.substr(0, path.rfind('/'))).c_str());
    std::ofstream(path) << c.toJson();
  }
  ~ScopedCacheDir() { std::system((std::string("rm -rf ") + dir).c_str()); }
};

TEST(ProfileCApi, OptionValues) {
  octet_options *options = octet_options_create();
  EXPECT_EQ(octet_options_set(options, "profile", "1"), OCTET_OK);
  EXPECT_EQ(octet_options_set(options, "profile", "0"), OCTET_OK);
  EXPECT_EQ(octet_options_set(options, "profile", "yes"), OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(octet_last_error()).find("expected 0 or 1"), std::string::npos)
      << octet_last_error();
  octet_options_destroy(options);
}

TEST(ProfileCApi, LastRunAsJson) {
  ScopedCacheDir cache;
  octet_model *model = createModel("1");
  ASSERT_TRUE(model);
  size_t needed = 123;
  EXPECT_EQ(octet_model_last_profile_json(model, nullptr, 0, &needed),
            OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(octet_last_error()).find("no successful octet_run"), std::string::npos)
      << octet_last_error();
  EXPECT_EQ(needed, 0u);

  ASSERT_EQ(runOnce(model), OCTET_OK) << octet_last_error();
  EXPECT_EQ(octet_model_last_profile_json(model, nullptr, 0, &needed),
            OCTET_ERROR_OUTPUT_TOO_SMALL);
  ASSERT_GT(needed, 100u);
  std::vector<char> small(needed - 1);
  EXPECT_EQ(octet_model_last_profile_json(model, small.data(), small.size(), nullptr),
            OCTET_ERROR_OUTPUT_TOO_SMALL);
  std::vector<char> buffer(needed);
  ASSERT_EQ(octet_model_last_profile_json(model, buffer.data(), buffer.size(), nullptr), OCTET_OK)
      << octet_last_error();
  const std::string json(buffer.data());
  EXPECT_EQ(json.size() + 1, needed);
  for (const char *key : {"\"steps\"", "\"median_seconds\"", "\"ops\"", "\"bytes\"",
                          "\"fp32_gflops\": 123", "\"roofline_fraction\"", "\"repeats\": 1"})
    EXPECT_NE(json.find(key), std::string::npos) << key << "\n" << json;
  EXPECT_EQ(octet_model_last_profile_json(model, nullptr, 5, nullptr),
            OCTET_ERROR_INVALID_ARGUMENT);
  octet_model_destroy(model);
}

TEST(ProfileCApi, WithoutTheOptionThereIsNoProfile) {
  octet_model *model = createModel(nullptr);
  ASSERT_TRUE(model);
  ASSERT_EQ(runOnce(model), OCTET_OK) << octet_last_error();
  char buffer[16];
  EXPECT_EQ(octet_model_last_profile_json(model, buffer, sizeof(buffer), nullptr),
            OCTET_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(octet_last_error()).find("profile = 1"), std::string::npos)
      << octet_last_error();
  EXPECT_EQ(octet_model_last_profile_json(nullptr, buffer, sizeof(buffer), nullptr),
            OCTET_ERROR_INVALID_ARGUMENT);
  octet_model_destroy(model);
}

} // namespace
