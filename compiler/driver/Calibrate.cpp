//===- Calibrate.cpp - observe GEMM inputs, write octet.calib -------------===//
//
// The instrumented clone is the ordinary FP32 pipeline and Plan, with each
// linear's location tagged so that its step can be found; an executor
// observer (rt::StepObserver) folds each linear's input into its statistics
// just before the linear's step runs, so the values are the ones the FP32
// plan computes (fusion included) and no input outlives its step (returning
// every GEMM input as an output held ~250 MiB per 8 x 128 batch of
// BERT-base). Statistics are accumulated per batch in double where they are
// sums, in f32 where they are extremes (exact: any order of folding gives
// the same bits, see foldRows).
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/Calibrate.h"

#include "compiler/driver/PlanBuilder.h"
#include "compiler/driver/Samples.h"
#include "compiler/ir/AttrNames.h"
#include "compiler/ir/Locations.h"
#include "compiler/passes/Passes.h"
#include "runtime/StridedIter.h"

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

/// One block of rows' extremes, folded later in block order.
struct RowBlockStats {
  std::vector<float> absMax, channelMin, channelMax;
  float min = std::numeric_limits<float>::infinity();
  float max = -std::numeric_limits<float>::infinity();
  int64_t badRow = -1, badChannel = -1; ///< the first NaN / Inf, row-major
  float badValue = 0;
};

/// Folds `rows` rows of K floats into `obs` as one sequential row-major
/// pass would, bit for bit: std::min / std::max keep the left operand on
/// ties (the sign of a zero), so per-block results folded in block order
/// equal the sequential fold; blocks run on OpenMP threads.
void foldRows(Observation &obs, const float *x, int64_t rows, const std::string &batch) {
  const int64_t k = obs.k;
  const int64_t blocks = std::min<int64_t>(rows, 64);
  std::vector<RowBlockStats> stats(size_t(std::max<int64_t>(blocks, 0)));
#pragma omp parallel for schedule(dynamic)
  for (int64_t b = 0; b < blocks; ++b) {
    RowBlockStats &s = stats[size_t(b)];
    s.absMax.assign(size_t(k), 0.0f);
    s.channelMin.assign(size_t(k), std::numeric_limits<float>::infinity());
    s.channelMax.assign(size_t(k), -std::numeric_limits<float>::infinity());
    float lo = s.min, hi = s.max;
    for (int64_t r = rows * b / blocks, end = rows * (b + 1) / blocks; r < end; ++r) {
      const float *row = x + r * k;
      for (int64_t j = 0; j < k; ++j) {
        float v = row[j];
        if (!std::isfinite(v)) {
          s.badRow = r, s.badChannel = j, s.badValue = v;
          r = end;
          break;
        }
        s.absMax[size_t(j)] = std::max(s.absMax[size_t(j)], std::fabs(v));
        s.channelMin[size_t(j)] = std::min(s.channelMin[size_t(j)], v);
        s.channelMax[size_t(j)] = std::max(s.channelMax[size_t(j)], v);
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
    s.min = lo, s.max = hi;
  }
  for (const RowBlockStats &s : stats) {
    if (s.badRow >= 0) {
      obs.error = obs.what + ": its input holds " + (std::isnan(s.badValue) ? "NaN" : "Inf") +
                  " in " + batch + " (row " + std::to_string(s.badRow) + ", channel " +
                  std::to_string(s.badChannel) +
                  "): the FP32 model overflows or divides by zero on these samples";
      return;
    }
    for (int64_t j = 0; j < k; ++j) {
      obs.absMax[size_t(j)] = std::max(obs.absMax[size_t(j)], s.absMax[size_t(j)]);
      obs.channelMin[size_t(j)] = std::min(obs.channelMin[size_t(j)], s.channelMin[size_t(j)]);
      obs.channelMax[size_t(j)] = std::max(obs.channelMax[size_t(j)], s.channelMax[size_t(j)]);
    }
    obs.min = std::min(obs.min, s.min);
    obs.max = std::max(obs.max, s.max);
  }
  obs.rows += rows;
}

/// Folds one batch's [..., K] input of a linear (tensor `t` of the run that
/// is about to execute the linear's step) into `obs`.
void observe(Observation &obs, const rt::ExecContext &ctx, rt::TensorId t, double percentile,
             const std::string &batch) {
  const int rank = ctx.rank(t);
  if (ctx.dtype(t) != rt::DType::F32 || rank < 1 || ctx.dim(t, rank - 1) != obs.k) {
    obs.error = obs.what + ": the instrumented plan gave it " + rt::dtypeName(ctx.dtype(t)) +
                " of rank " + std::to_string(rank) + ", expected f32 [..., " +
                std::to_string(obs.k) + "]";
    return;
  }
  const int64_t n = ctx.numElements(t), rows = obs.k ? n / obs.k : 0;
  const float *x = ctx.data<float>(t);
  std::vector<float> dense; // a strided view (a slice), read in row-major order
  if (n > 0 && !ctx.isContiguous(t)) {
    const std::vector<int64_t> shape = ctx.shape(t), strides = ctx.strides(t);
    dense.resize(size_t(n));
    const auto loop = rt::strided::makeLoop<1>(shape, {&strides});
    rt::strided::forEachRun(loop, [&](int64_t position, int64_t count,
                                      const std::array<int64_t, 1> &offset,
                                      const std::array<int64_t, 1> &stride) {
      for (int64_t e = 0; e < count; ++e)
        dense[size_t(position + e)] = x[offset[0] + e * stride[0]];
    });
    x = dense.data();
  }
  foldRows(obs, x, rows, batch);
  if (!obs.error.empty())
    return;
  if (percentile > 0 && n > 0) {
    std::vector<float> values(x, x + n);
    obs.percentileHiSum += percentileOf(values, percentile / 100);
    obs.percentileLoSum += percentileOf(values, 1 - percentile / 100);
  }
}

/// The tag PlanBuilder copies into the step names of the clone's linear #i.
std::string calibrationTag(size_t i) { return "octet.calibrate." + std::to_string(i); }

/// Whether the step name `location` ('+'-joined node names) holds `tag`.
bool hasTag(const std::string &location, const std::string &tag) {
  for (StringRef rest = location; !rest.empty();) {
    auto [part, tail] = rest.split('+');
    if (part == tag)
      return true;
    rest = tail;
  }
  return false;
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

  // The instrumented clone: each linear's location gets a tag that its step's
  // name carries, so the observer finds the step and its input tensor.
  OwningOpRef<ModuleOp> clone(module.clone());
  auto cloneMain = clone->lookupSymbol<func::FuncOp>("main");
  SmallVector<Operation *> cloneLinears = linearsOf(cloneMain);
  MLIRContext *ctx = module.getContext();
  for (auto [i, op] : llvm::enumerate(cloneLinears))
    op->setLoc(
        FusedLoc::get(ctx, {NameLoc::get(StringAttr::get(ctx, calibrationTag(i))), op->getLoc()}));
  PassManager pm(ctx, ModuleOp::getOperationName());
  OpPassManager &fn = pm.nest<func::FuncOp>();
  fn.addPass(createOctetFuseElementwise());
  fn.addPass(createOctetLowerRuntimeLinear());
  fn.addPass(createOctetLowerGelu());
  fn.addPass(createOctetPlanMemory());
  if (failed(pm.run(*clone)))
    return rt::Status::error("calibration: the FP32 pipeline failed on the instrumented model");
  // The module goes on to quantization: the instrumented Plan reads its weights
  // in place, and its GEMMs pack theirs at each run instead of holding a
  // packed copy of every weight (BERT-base: 324 MiB) for the whole calibration.
  rt::KernelOptions kernels = options.kernels;
  kernels.packWeightsPerRun = true;
  FailureOr<std::unique_ptr<rt::Plan>> built = buildPlan(cloneMain, kernels, PlanConstants::Borrow);
  if (failed(built))
    return rt::Status::error("calibration: cannot build the instrumented execution plan");
  const rt::Plan &plan = **built;
  // Step index -> the linear it runs (its last step: a copy that makes the
  // input contiguous may come first and carries the same name).
  std::vector<int> linearOfStep(plan.steps.size(), -1);
  for (size_t i = 0; i < linears.size(); ++i) {
    const std::string tag = calibrationTag(i);
    size_t found = plan.steps.size();
    for (size_t s = 0; s < plan.steps.size(); ++s)
      if (hasTag(plan.steps[s]->location, tag))
        found = s;
    if (found == plan.steps.size() || plan.steps[found]->inputs.empty() ||
        !StringRef(plan.steps[found]->kind()).contains("gemm") || linearOfStep[found] >= 0)
      return rt::Status::error("calibration: " + observations[i].what +
                               " has no step of its own in the instrumented plan");
    linearOfStep[found] = int(i);
  }

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
    // Each linear's input, just before its step reads it; a NaN stops the run.
    const rt::StepObserver observer = [&](size_t step, const rt::ExecContext &run) {
      int i = linearOfStep[step];
      if (i < 0)
        return rt::Status();
      Observation &obs = observations[size_t(i)];
      observe(obs, run, plan.steps[step]->inputs.front(), percentile, label);
      return obs.error.empty() ? rt::Status() : rt::Status::error("calibration: " + obs.error);
    };
    rt::Status run = rt::execute(plan, inputs, outputs, nullptr, nullptr, &observer);
    for (rt::RunTensor &o : outputs)
      if (o.allocated)
        std::free(o.data);
    for (const Observation &obs : observations)
      if (!obs.error.empty())
        return rt::Status::error("calibration: " + obs.error);
    if (!run.ok())
      return rt::Status::error(
          "calibration " + label + ": " + run.message() +
          (dirs.empty() ? " (a generated batch of " + std::to_string(spec.batch) + " x " +
                              std::to_string(spec.seq) +
                              " tokens: if the model takes shorter sequences, give a smaller S "
                              "in generate:NxBxS)"
                        : ""));
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
    if (auto old = op->getAttrOfType<DictionaryAttr>(octet::attr::kCalib))
      entries.append(old.getValue());
    entries.set("input_absmax", DenseElementsAttr::get(RankedTensorType::get({obs.k}, f32),
                                                       ArrayRef<float>(obs.absMax)));
    entries.set("input_min", FloatAttr::get(f32, lo));
    entries.set("input_max", FloatAttr::get(f32, hi));
    auto channels = RankedTensorType::get({obs.k}, f32);
    entries.set("input_channel_min",
                DenseElementsAttr::get(channels, ArrayRef<float>(obs.channelMin)));
    entries.set("input_channel_max",
                DenseElementsAttr::get(channels, ArrayRef<float>(obs.channelMax)));
    op->setAttr(octet::attr::kCalib, entries.getDictionary(ctx));
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
