//===- PlanImageTest.cpp - the AOT Plan format round trip -----------------===//
//
// Compiles a generated BERT (argv[1], an ONNX file) to a PlanImage, reads it
// back from 64-byte aligned copies of its sections (as a mapped model.so
// holds them) and checks that:
//  - the rebuilt Plan runs bit-identically to the JIT Plan, FP32, INT8 and
//    --precision bf16 (whose linears read bf16 panels from the constants),
//  - opening generates no kernel (the code comes from the image),
//  - a corrupt, truncated or foreign image is a clear error.
//
//===----------------------------------------------------------------------===//
#include "runtime/PlanImage.h"
#include "compiler/codegen/x86/KernelGenerator.h"
#include "compiler/driver/Compile.h"
#include "runtime/Executor.h"
#include "runtime/StepRecipe.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <variant>

namespace {
using namespace octet;

std::string modelPath;

/// One section copied to 64-byte aligned memory, as the loader sees it.
struct Aligned {
  std::shared_ptr<uint8_t> data;
  size_t bytes = 0;
  explicit Aligned(const std::vector<uint8_t> &v) : bytes(v.size()) {
    void *p = std::aligned_alloc(64, (v.size() + 63) / 64 * 64 + 64);
    data.reset(static_cast<uint8_t *>(p), std::free);
    if (!v.empty())
      std::memcpy(p, v.data(), v.size());
  }
};

/// The code section in read+execute pages, as model.so's .text.
struct Executable {
  std::shared_ptr<uint8_t> data;
  size_t bytes = 0;
  explicit Executable(const std::vector<uint8_t> &v) : bytes(v.size()) {
    size_t mapped = (v.size() + 4095) / 4096 * 4096 + 4096;
    void *p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      std::abort();
    std::memcpy(p, v.data(), v.size());
    if (mprotect(p, mapped, PROT_READ | PROT_EXEC) != 0)
      std::abort();
    data.reset(static_cast<uint8_t *>(p), [mapped](uint8_t *q) { munmap(q, mapped); });
  }
};

struct Sections {
  Aligned plan, constants;
  Executable code;
  explicit Sections(const rt::PlanImage &image)
      : plan(image.plan), constants(image.constants), code(image.code) {}
  rt::PlanImageView view(size_t planBytes) const {
    return {plan.data.get(), planBytes,       constants.data.get(),
            constants.bytes, code.data.get(), code.bytes};
  }
  rt::PlanImageView view() const { return view(plan.bytes); }
};

/// Runs `plan` on seeded token ids (batch 2, sequence 9) and returns the
/// bytes of every output.
std::vector<std::vector<uint8_t>> run(const rt::Plan &plan) {
  std::vector<std::vector<int64_t>> storage;
  std::vector<rt::RunTensor> inputs;
  std::mt19937 gen(7);
  for (const rt::IoInfo &io : plan.inputs) {
    const bool ids = io.checkRange;
    std::vector<int64_t> values(2 * 9);
    for (int64_t &v : values)
      v = ids ? io.rangeBegin + int64_t(gen() % uint64_t(io.rangeEnd - io.rangeBegin)) : 1;
    storage.push_back(values);
    rt::RunTensor t;
    t.dtype = io.dtype;
    t.rank = 2;
    t.dims[0] = 2, t.dims[1] = 9;
    t.data = storage.back().data();
    t.bytes = values.size() * sizeof(int64_t);
    EXPECT_EQ(io.dtype, rt::DType::I64) << io.name;
    inputs.push_back(t);
  }
  std::vector<rt::RunTensor> outputs(plan.outputs.size());
  rt::Status status = rt::execute(plan, inputs, outputs);
  EXPECT_TRUE(status.ok()) << status.message();
  std::vector<std::vector<uint8_t>> bytes;
  for (rt::RunTensor &t : outputs) {
    auto *p = static_cast<uint8_t *>(t.data);
    bytes.emplace_back(p, p + t.bytes);
    std::free(t.data);
  }
  return bytes;
}

struct Mode {
  const char *name;
  CompileOptions::Int8 int8;
  bool autotune;     ///< the timed candidates' kernels must not reach the image
  bool bf16 = false; ///< --precision bf16: the linears' bf16 panels are constants of the image
};

class PlanImageRoundTrip : public ::testing::TestWithParam<Mode> {};

TEST_P(PlanImageRoundTrip, RunsBitIdenticalWithoutGeneratingKernels) {
  if (GetParam().bf16 && !x86::CpuFeatures::host().supports(x86::Isa::Avx512Bf16))
    GTEST_SKIP() << "this CPU lacks AVX512-BF16: a bf16 plan cannot run here";
  CompileOptions options;
  options.int8 = GetParam().int8;
  options.kernels.autotune = GetParam().autotune;
  options.kernels.linearBf16 = GetParam().bf16;
  options.calibrationSamples = "generate:2x2x16";
  // The JIT Plan of the same compile (autotune's choices vary between runs).
  std::unique_ptr<rt::Plan> jit;
  rt::PlanImage image;
  rt::Status status = compileOnnxFileToImage(modelPath, options, image, &jit);
  ASSERT_TRUE(status.ok()) << status.message();
  // A host without AVX-512 runs its FP32 steps on oneDNN and compiled C++ (no
  // kernel code); INT8 GEMMs on the AVX2 JIT.
  EXPECT_EQ(image.code.empty(), !x86::CpuFeatures::host().supports(x86::Isa::Avx512) &&
                                    GetParam().int8 == CompileOptions::Int8::None);
  EXPECT_FALSE(image.constants.empty());

  Sections sections(image);
  const uint64_t generatedBefore = x86::kernelsGenerated();
  std::unique_ptr<rt::Plan> aot;
  status = rt::readPlanImage(sections.view(), nullptr, aot);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(x86::kernelsGenerated(), generatedBefore) << "opening generated kernel code";
  ASSERT_TRUE(rt::validatePlan(*aot).ok());
  EXPECT_EQ(aot->describe(), jit->describe());
  EXPECT_EQ(run(*aot), run(*jit));

  // The same model compiles to the same bytes (timings aside).
  if (options.kernels.autotune)
    return;
  rt::PlanImage again;
  ASSERT_TRUE(compileOnnxFileToImage(modelPath, options, again).ok());
  EXPECT_EQ(again.plan, image.plan);
  EXPECT_EQ(again.constants, image.constants);
  EXPECT_EQ(again.code, image.code);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, PlanImageRoundTrip,
    ::testing::Values(Mode{"Fp32", CompileOptions::Int8::None, false},
                      Mode{"Int8Static", CompileOptions::Int8::Static, false},
                      Mode{"Int8Dynamic", CompileOptions::Int8::Dynamic, false},
                      Mode{"Int8StaticAutotuned", CompileOptions::Int8::Static, true},
                      Mode{"Bf16", CompileOptions::Int8::None, false, true}),
    [](const auto &info) { return std::string(info.param.name); });

/// The column groups of every qlinear step's recipe, by its N.
std::vector<std::pair<int64_t, int64_t>> qlinearGroups(const rt::Plan &plan) {
  std::vector<std::pair<int64_t, int64_t>> groups;
  for (const auto &step : plan.steps)
    if (step->recipe)
      if (const auto *q = std::get_if<rt::recipe::QLinear>(&step->recipe->call))
        groups.emplace_back(q->spec.n, q->spec.columnGroups);
  return groups;
}

// The merged Q/K/V GEMM (N = 3 x hidden, its three slices read by the
// attention) splits its panels by the attention's head groups; no other
// qlinear does; the image keeps it.
TEST(PlanImageColumnGroups, TheQkvGemmTakesTheAttentionsColumnGroups) {
  CompileOptions options;
  options.int8 = CompileOptions::Int8::Static;
  options.calibrationSamples = "generate:2x2x16";
  std::unique_ptr<rt::Plan> jit;
  rt::PlanImage image;
  rt::Status status = compileOnnxFileToImage(modelPath, options, image, &jit);
  ASSERT_TRUE(status.ok()) << status.message();
  Sections sections(image);
  std::unique_ptr<rt::Plan> aot;
  ASSERT_TRUE(rt::readPlanImage(sections.view(), nullptr, aot).ok());
  for (const rt::Plan *plan : {jit.get(), aot.get()}) {
    const auto groups = qlinearGroups(*plan);
    ASSERT_FALSE(groups.empty());
    int64_t grouped = 0, widest = 0;
    for (auto [n, g] : groups)
      widest = std::max(widest, n);
    for (auto [n, g] : groups) {
      // The generated BERT's hidden size is a third of the merged QKV's N.
      if (n == widest && g == 3)
        ++grouped;
      else
        EXPECT_EQ(g, 1) << "a qlinear of N = " << n;
    }
    EXPECT_EQ(grouped, 2) << "one merged Q/K/V GEMM per layer (2 layers)";
  }
}

class PlanImageErrors : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    image_ = new rt::PlanImage;
    rt::Status status = compileOnnxFileToImage(modelPath, CompileOptions(), *image_, &plan_);
    ASSERT_TRUE(status.ok()) << status.message();
  }
  static void TearDownTestSuite() {
    delete image_;
    plan_.reset();
  }
  /// `image` with its header's checksums recomputed, as a forger (or the
  /// fuzzer) would: a changed table then reaches the reader's checks.
  static rt::PlanImage resealed(rt::PlanImage image) {
    uint32_t versionLength;
    std::memcpy(&versionLength, image.plan.data() + 12, 4);
    const size_t sums = 16 + versionLength, rest = sums + 24;
    const uint64_t values[3] = {
        rt::imageChecksum(image.plan.data() + rest, image.plan.size() - rest),
        rt::imageChecksum(image.constants.data(), image.constants.size()),
        rt::imageChecksum(image.code.data(), image.code.size())};
    std::memcpy(image.plan.data() + sums, values, sizeof(values));
    return image;
  }
  /// Where `pattern` first occurs in the plan section (SIZE_MAX: nowhere).
  static size_t find(const std::vector<uint8_t> &pattern) {
    auto it = std::search(image_->plan.begin(), image_->plan.end(), pattern.begin(), pattern.end());
    return it == image_->plan.end() ? SIZE_MAX : size_t(it - image_->plan.begin());
  }
  /// The error of reading `image` (with the plan section cut to `planBytes`).
  static std::string errorOf(const rt::PlanImage &image, size_t planBytes = SIZE_MAX) {
    Sections sections(image);
    std::unique_ptr<rt::Plan> plan;
    rt::Status status =
        rt::readPlanImage(sections.view(std::min(planBytes, image.plan.size())), nullptr, plan);
    EXPECT_FALSE(status.ok());
    EXPECT_EQ(plan, nullptr);
    return status.message();
  }
  static rt::PlanImage *image_;
  static std::unique_ptr<rt::Plan> plan_; ///< the JIT Plan image_ was written from
};
rt::PlanImage *PlanImageErrors::image_ = nullptr;
std::unique_ptr<rt::Plan> PlanImageErrors::plan_;

/// Little-endian bytes of `values`, as the plan section stores them.
template <typename T> std::vector<uint8_t> bytesOf(std::initializer_list<T> values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  size_t at = 0;
  for (T v : values) {
    std::memcpy(out.data() + at, &v, sizeof(T));
    at += sizeof(T);
  }
  return out;
}

TEST_F(PlanImageErrors, CorruptPlanOrCodeIsCaughtAtOpen) {
  for (size_t at : {size_t(60), image_->plan.size() / 2, image_->plan.size() - 1}) {
    rt::PlanImage bad = *image_;
    bad.plan[at] ^= 0x40;
    EXPECT_NE(errorOf(bad).find("plan section's checksum"), std::string::npos) << errorOf(bad);
  }
  // An image for an AVX-512 target has code on any host (a host without
  // AVX-512 compiles no kernels for itself); the checksums come before the
  // check of the CPU's features.
  CompileOptions options;
  std::string error;
  ASSERT_TRUE(options.kernels.setTarget("avx512-vnni", error)) << error;
  rt::PlanImage withCode;
  std::unique_ptr<rt::Plan> plan;
  rt::Status status = compileOnnxFileToImage(modelPath, options, withCode, &plan);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_FALSE(withCode.code.empty());
  for (size_t at : {size_t(0), withCode.code.size() / 2, withCode.code.size() - 1}) {
    rt::PlanImage bad = withCode;
    bad.code[at] ^= 0x08;
    EXPECT_NE(errorOf(bad).find("code section's checksum"), std::string::npos) << errorOf(bad);
  }
}

TEST_F(PlanImageErrors, CorruptWeightsFailTheFirstRun) {
  // Opening does not read every weight page (it must be fast); every run does
  // the check first, so no output is ever computed from corrupt weights.
  rt::PlanImage bad = *image_;
  bad.constants[bad.constants.size() / 3] ^= 1;
  Sections sections(bad);
  std::unique_ptr<rt::Plan> plan;
  ASSERT_TRUE(rt::readPlanImage(sections.view(), nullptr, plan).ok());
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::vector<rt::RunTensor> inputs(plan->inputs.size()), outputs(plan->outputs.size());
    rt::RunError kind = rt::RunError::None;
    rt::Status status = rt::execute(*plan, inputs, outputs, &kind);
    EXPECT_FALSE(status.ok());
    EXPECT_EQ(kind, rt::RunError::Runtime);
    EXPECT_NE(status.message().find("constants (weights) section's checksum"), std::string::npos)
        << status.message();
  }
}

TEST_F(PlanImageErrors, TruncatedOrForeignSectionsAreClearErrors) {
  for (size_t cut : {size_t(0), size_t(5), size_t(20), image_->plan.size() - 1})
    EXPECT_NE(errorOf(*image_, cut).find(cut < 8 ? "not an Octet compiled model" : "corrupt"),
              std::string::npos)
        << "cut at " << cut << ": " << errorOf(*image_, cut);
  rt::PlanImage bad = *image_;
  bad.plan[8] += 1; // the format version
  EXPECT_NE(errorOf(bad).find("compile it again"), std::string::npos) << errorOf(bad);
  bad = *image_;
  bad.plan[0] = 'X';
  EXPECT_NE(errorOf(bad).find("not an Octet compiled model"), std::string::npos);
}

// Found by test/fuzz plan_image (its regression input plan_image-linear-weight-past-range):
// a linear recipe's sizes are read from the file, so sizes larger than its weight's
// constant range made the step's factory pack past the range.
TEST_F(PlanImageErrors, LinearSizesPastTheirWeightAreClearErrors) {
  // The test model's FFN-in linear: k = hidden 64, n = intermediate 128, as i64 k, i64 n.
  const size_t at = find(bytesOf<int64_t>({64, 128}));
  ASSERT_NE(at, SIZE_MAX) << "no linear with k 64, n 128 in the plan section";
  for (int64_t n : {int64_t(129), int64_t(1) << 40, int64_t(-1)}) {
    rt::PlanImage bad = *image_;
    std::memcpy(bad.plan.data() + at + 8, &n, 8);
    const std::string error = errorOf(resealed(bad));
    EXPECT_NE(error.find("corrupt"), std::string::npos) << error;
    EXPECT_NE(error.find("linear"), std::string::npos) << "n " << n << ": " << error;
  }
  // The untouched image, re-sealed, still opens: the checks above are the sizes'.
  Sections sections(resealed(*image_));
  std::unique_ptr<rt::Plan> plan;
  EXPECT_TRUE(rt::readPlanImage(sections.view(), nullptr, plan).ok());
}

// Found by test/fuzz plan_image (plan_image-unary-stray-operand-b): a unary op
// of an elementwise program with an operand b, which the op does not use.
// verify() let it through and dead-code elimination marked instruction b live,
// past the program's end; now every unused slot must be -1.
TEST_F(PlanImageErrors, AStrayOperandOfAUnaryOpIsAClearError) {
  // An instruction as written: u8 op, i32 a, i32 b (-1), f32 value (0), for
  // the first unary op (Neg .. GeluTanh) on an early instruction.
  size_t at = SIZE_MAX;
  for (int op = int(rt::ElementwiseProgram::Op::Neg);
       op <= int(rt::ElementwiseProgram::Op::GeluTanh) && at == SIZE_MAX; ++op)
    for (int32_t a = 0; a < 16 && at == SIZE_MAX; ++a) {
      std::vector<uint8_t> instr = {uint8_t(op)};
      for (const std::vector<uint8_t> &field : {bytesOf<int32_t>({a, -1}), bytesOf<float>({0.0f})})
        instr.insert(instr.end(), field.begin(), field.end());
      at = find(instr);
    }
  ASSERT_NE(at, SIZE_MAX) << "no unary instruction in the plan section";
  rt::PlanImage bad = *image_;
  const int32_t stray = 123456;
  std::memcpy(bad.plan.data() + at + 5, &stray, 4);
  const std::string error = errorOf(resealed(bad));
  EXPECT_NE(error.find("unused operand b = 123456"), std::string::npos) << error;
}

// Found by test/fuzz plan_image (plan_image-output-slot-unbound): an output
// bound to a tensor that names another output slot. The reader validates the
// whole Plan it rebuilt, so no caller gets one with ids that disagree.
TEST_F(PlanImageErrors, AnOutputBoundToTheWrongTensorIsAClearError) {
  ASSERT_GE(plan_->outputs.size(), 1u);
  const rt::IoInfo &io = plan_->outputs[0];
  // Its table entry as written: str name, u8 dtype, vec dims, dim names, i32 tensor.
  std::vector<uint8_t> entry = bytesOf<uint32_t>({uint32_t(io.name.size())});
  entry.insert(entry.end(), io.name.begin(), io.name.end());
  entry.push_back(uint8_t(io.dtype));
  const std::vector<uint8_t> dimCount = bytesOf<uint32_t>({uint32_t(io.dims.size())});
  entry.insert(entry.end(), dimCount.begin(), dimCount.end());
  for (int64_t d : io.dims) {
    const std::vector<uint8_t> b = bytesOf<int64_t>({d});
    entry.insert(entry.end(), b.begin(), b.end());
  }
  const std::vector<uint8_t> nameCount = bytesOf<uint32_t>({uint32_t(io.dimNames.size())});
  entry.insert(entry.end(), nameCount.begin(), nameCount.end());
  for (const std::string &n : io.dimNames) {
    const std::vector<uint8_t> b = bytesOf<uint32_t>({uint32_t(n.size())});
    entry.insert(entry.end(), b.begin(), b.end());
    entry.insert(entry.end(), n.begin(), n.end());
  }
  const std::vector<uint8_t> tensor = bytesOf<int32_t>({io.tensor});
  entry.insert(entry.end(), tensor.begin(), tensor.end());
  const size_t at = find(entry);
  ASSERT_NE(at, SIZE_MAX) << "output 0's table entry not found in the plan section";
  const size_t tensorAt = at + entry.size() - 4;
  // Another tensor (the first input's), and one past the table.
  for (int32_t other : {plan_->inputs[0].tensor, int32_t(plan_->tensors.size())}) {
    rt::PlanImage bad = *image_;
    std::memcpy(bad.plan.data() + tensorAt, &other, 4);
    const std::string error = errorOf(resealed(bad));
    EXPECT_NE(error.find("the compiled model is corrupt"), std::string::npos) << error;
    EXPECT_NE(error.find("malformed plan"), std::string::npos) << error;
  }
}

} // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MODEL.onnx (a small generated BERT)\n", argv[0]);
    return 2;
  }
  modelPath = argv[1];
  return RUN_ALL_TESTS();
}
