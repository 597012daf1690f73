//===- Calibrate.cpp - observe GEMM inputs, write octet.calib -------------===//
//
// The instrumented clone returns each linear's input as an extra result, so
// the ordinary PlanBuilder and runtime produce the observations: no special
// step kind, and the values are the ones the FP32 plan computes (fusion
// included). Statistics are accumulated per batch in double where they are
// sums, in f32 where they are extremes (exact).
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/Calibrate.h"

#include "compiler/driver/PlanBuilder.h"
#include "compiler/driver/Samples.h"
#include "compiler/ir/Locations.h"
#include "compiler/passes/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>

using namespace mlir;
namespace rt = octet::rt;

namespace {

/// The linears of `func` in program order (a clone lists them in the same order).
SmallVector<Operation *> linearsOf(func::FuncOp func) {
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (isa<octet::LinearOp, octet::FusedLinearOp>(op))
      ops.push_back(op);
  });
  return ops;
}

Value gemmInput(Operation *op) {
  if (auto linear = dyn_cast<octet::LinearOp>(op))
    return linear.getInput();
  return cast<octet::FusedLinearOp>(op).getInput();
}

/// What one linear's input showed over the batches so far.
struct Observation {
  std::string what; ///< "linear #3 'octet.linear' at model.onnx:/l0/MatMul", for messages
  int64_t k = 0;
  std::vector<float> absMax;
  std::vector<float> channelMin, channelMax; ///< signed extremes per channel (SmoothQuant's range)
  float min = std::numeric_limits<float>::infinity();
  float max = -std::numeric_limits<float>::infinity();
  double percentileLoSum = 0, percentileHiSum = 0;
  int64_t rows = 0;
  std::string error;
};

/// numpy.percentile's default ("linear"): the order statistic at q·(n-1),
/// interpolated. Reorders `v`.
double percentileOf(std::vector<float> &v, double q) {
  double pos = q * double(v.size() - 1);
  size_t lo = size_t(pos);
  std::nth_element(v.begin(), v.begin() + lo, v.end());
  double a = v[lo];
  if (lo + 1 >= v.size())
    return a;
  double b = *std::min_element(v.begin() + lo + 1, v.end());
  return a + (pos - double(lo)) * (b - a);
}

/// Folds one batch's [..., K] input of a linear into `obs`.
void observe(Observation &obs, const rt::RunTensor &t, double percentile, const std::string &batch) {
  if (t.dtype != rt::DType::F32 || t.rank < 1 || t.dims[t.rank - 1] != obs.k) {
    obs.error = obs.what + ": the instrumented plan returned " + rt::dtypeName(t.dtype) +
                " of rank " + std::to_string(t.rank) + ", expected f32 [..., " +
                std::to_string(obs.k) + "]";
    return;
  }
  const float *x = static_cast<const float *>(t.data);
  int64_t n = t.numElements(), rows = obs.k ? n / obs.k : 0;
  float lo = obs.min, hi = obs.max;
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = x + r * obs.k;
    for (int64_t j = 0; j < obs.k; ++j) {
      float v = row[j];
      if (!std::isfinite(v)) {
        obs.error = obs.what + ": its input holds " + (std::isnan(v) ? "NaN" : "Inf") + " in " +
                    batch + " (row " + std::to_string(r) + ", channel " + std::to_string(j) +
                    "): the FP32 model overflows or divides by zero on these samples";
        return;
      }
      obs.absMax[size_t(j)] = std::max(obs.absMax[size_t(j)], std::fabs(v));
      obs.channelMin[size_t(j)] = std::min(obs.channelMin[size_t(j)], v);
      obs.channelMax[size_t(j)] = std::max(obs.channelMax[size_t(j)], v);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  obs.min = lo;
  obs.max = hi;
  obs.rows += rows;
  if (percentile > 0 && n > 0) {
    std::vector<float> values(x, x + n);
    obs.percentileHiSum += percentileOf(values, percentile / 100);
    obs.percentileLoSum += percentileOf(values, 1 - percentile / 100);
  }
}

} // namespace

rt::Status octet::calibrateModule(ModuleOp module, const CompileOptions &options,
                                  CalibrationSummary *summary) {
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  auto progress = [&](const std::string &line) {
    if (options.progress)
      options.progress(line);
  };
  if (rt::Status valid = validateCompileOptions(options); !valid.ok())
    return valid;
  const double percentile = options.calibrationPercentile;
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main)
    return rt::Status::error("calibration: the module has no @main function");
  SmallVector<Operation *> linears = linearsOf(main);
  if (linears.empty())
    return rt::Status::error("calibration: the model has no octet.linear or octet.fused_linear "
                             "after recognition (no MatMul with a constant weight): nothing to "
                             "calibrate");
  std::vector<Observation> observations(linears.size());
  for (auto [i, op] : llvm::enumerate(linears)) {
    Observation &obs = observations[i];
    std::string where = formatLocation(op->getLoc());
    obs.what = "linear #" + std::to_string(i) + " '" + op->getName().getStringRef().str() + "'" +
               (where.empty() ? "" : " at " + where);
    auto type = dyn_cast<RankedTensorType>(gemmInput(op).getType());
    if (!type || !type.getElementType().isF32() || type.getRank() < 1)
      return rt::Status::error(obs.what + ": its input is not a ranked f32 tensor, so it "
                                          "cannot be calibrated");
    auto weight = cast<RankedTensorType>(op->getOperand(1).getType());
    bool transposed = op->hasAttr("transpose_weight");
    obs.k = weight.getDimSize(transposed ? 1 : 0);
    if (ShapedType::isDynamic(obs.k))
      return rt::Status::error(obs.what + ": its weight's input-feature dim is dynamic");
    obs.absMax.assign(size_t(obs.k), 0.0f);
    obs.channelMin.assign(size_t(obs.k), std::numeric_limits<float>::infinity());
    obs.channelMax.assign(size_t(obs.k), -std::numeric_limits<float>::infinity());
  }

  // The instrumented clone: every GEMM input becomes an extra result.
  OwningOpRef<ModuleOp> clone(module.clone());
  auto cloneMain = clone->lookupSymbol<func::FuncOp>("main");
  SmallVector<Operation *> cloneLinears = linearsOf(cloneMain);
  auto ret = cast<func::ReturnOp>(cloneMain.front().getTerminator());
  const unsigned firstObserved = ret.getNumOperands();
  MLIRContext *ctx = module.getContext();
  for (auto [i, op] : llvm::enumerate(cloneLinears)) {
    Value x = gemmInput(op);
    unsigned index = ret.getNumOperands();
    NamedAttrList attrs;
    attrs.set("octet.name", StringAttr::get(ctx, "octet.calibrate." + std::to_string(i)));
    if (failed(cloneMain.insertResult(index, x.getType(), attrs.getDictionary(ctx))))
      return rt::Status::error("calibration: cannot add a result to the instrumented @main");
    ret.getOperandsMutable().append(x);
  }
  PassManager pm(ctx, ModuleOp::getOperationName());
  OpPassManager &fn = pm.nest<func::FuncOp>();
  fn.addPass(createOctetFuseElementwise());
  fn.addPass(createOctetPlanMemory());
  if (failed(pm.run(*clone)))
    return rt::Status::error("calibration: the FP32 pipeline failed on the instrumented model");
  // The module goes on to quantization: the instrumented Plan reads its weights in place.
  FailureOr<std::unique_ptr<rt::Plan>> built =
      buildPlan(cloneMain, options.kernels, PlanConstants::Borrow);
  if (failed(built))
    return rt::Status::error("calibration: cannot build the instrumented execution plan");
  const rt::Plan &plan = **built;

  // The batches: generated, or one per input-set directory.
  std::string samples =
      options.calibrationSamples.empty() ? kDefaultCalibrationSamples : options.calibrationSamples;
  std::string error;
  GenerateSpec spec;
  std::vector<std::string> dirs;
  if (isGenerateSpec(samples)) {
    if (!parseGenerateSpec(samples, spec, error))
      return rt::Status::error("calibration " + error);
  } else if (!listInputSets(samples, "calibration samples", dirs, error)) {
    return rt::Status::error(error);
  }
  const int64_t batches = dirs.empty() ? spec.batches : int64_t(dirs.size());
  progress("calibrate: " + std::to_string(linears.size()) + " linear(s), " +
           std::to_string(batches) + " batch(es) from '" + samples + "'");
  std::mt19937_64 rng(0); // generated samples are the same on every run
  for (int64_t b = 0; b < batches; ++b) {
    std::string label = "batch " + std::to_string(b + 1) + "/" + std::to_string(batches);
    std::vector<io::HostTensor> tensors;
    if (dirs.empty()) {
      tensors = generateBatch(plan, spec.batch, spec.seq, rng);
    } else {
      label += " (sample set '" + dirs[size_t(b)] + "')";
      std::vector<bool> given;
      if (!readInputSet(plan, dirs[size_t(b)], tensors, given, error))
        return rt::Status::error("calibration " + label + ": " + error);
      for (size_t i = 0; i < given.size(); ++i)
        if (!given[i])
          return rt::Status::error("calibration " + label + ": no file for input '" +
                                   plan.inputs[i].name + "' (give " + plan.inputs[i].name +
                                   ".npy or " + plan.inputs[i].name + ".pb)");
    }
    std::vector<rt::RunTensor> inputs, outputs(plan.outputs.size());
    if (!runInputsOf(plan, tensors, inputs, error))
      return rt::Status::error("calibration " + label + ": " + error);
    rt::Status run = rt::execute(plan, inputs, outputs);
    struct Release {
      std::vector<rt::RunTensor> &outputs;
      ~Release() {
        for (rt::RunTensor &o : outputs)
          if (o.allocated)
            std::free(o.data);
      }
    } release{outputs};
    if (!run.ok())
      return rt::Status::error(
          "calibration " + label + ": " + run.message() +
          (dirs.empty() ? " (a generated batch of " + std::to_string(spec.batch) + " x " +
                              std::to_string(spec.seq) +
                              " tokens: if the model takes shorter sequences, give a smaller S "
                              "in generate:NxBxS)"
                        : ""));
#pragma omp parallel for schedule(dynamic)
    for (size_t i = 0; i < observations.size(); ++i)
      observe(observations[i], outputs[firstObserved + i], percentile, label);
    for (const Observation &obs : observations)
      if (!obs.error.empty())
        return rt::Status::error("calibration: " + obs.error);
    std::string line;
    llvm::raw_string_ostream os(line);
    os << "calibrate: " << label << " (" << llvm::format("%.1f", elapsed()) << " s)";
    progress(line);
  }

  // octet.calib on the original linears; other keys of an existing one stay.
  auto f32 = Float32Type::get(ctx);
  for (auto [op, obs] : llvm::zip_equal(linears, observations)) {
    if (obs.rows == 0)
      return rt::Status::error("calibration: " + obs.what +
                               ": the samples gave its input no rows (empty tensors)");
    float lo = obs.min, hi = obs.max;
    if (percentile > 0) {
      lo = float(obs.percentileLoSum / double(batches));
      hi = float(obs.percentileHiSum / double(batches));
    }
    NamedAttrList entries;
    if (auto old = op->getAttrOfType<DictionaryAttr>("octet.calib"))
      entries.append(old.getValue());
    entries.set("input_absmax",
                DenseElementsAttr::get(RankedTensorType::get({obs.k}, f32),
                                       ArrayRef<float>(obs.absMax)));
    entries.set("input_min", FloatAttr::get(f32, lo));
    entries.set("input_max", FloatAttr::get(f32, hi));
    auto channels = RankedTensorType::get({obs.k}, f32);
    entries.set("input_channel_min",
                DenseElementsAttr::get(channels, ArrayRef<float>(obs.channelMin)));
    entries.set("input_channel_max",
                DenseElementsAttr::get(channels, ArrayRef<float>(obs.channelMax)));
    op->setAttr("octet.calib", entries.getDictionary(ctx));
  }
  if (summary) {
    summary->linears = int(linears.size());
    summary->batches = int(batches);
    summary->rows = observations.front().rows;
    summary->seconds = elapsed();
    summary->samples = samples;
  }
  return rt::Status();
}
