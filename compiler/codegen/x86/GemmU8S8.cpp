//===- GemmU8S8.cpp -------------------------------------------------------===//
#include "compiler/codegen/x86/GemmU8S8.h"
#include "compiler/codegen/GemmBlocking.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace octet::x86 {

using gemm_blocking::ceilDiv;
using gemm_blocking::roundUp;

namespace {
[[noreturn]] void reject(const std::string &what) {
  throw std::invalid_argument("GemmU8S8: " + what);
}

void checkShape(int64_t n, int64_t k) {
  if (std::string why = checkGemmU8S8Shape(n, k); !why.empty())
    reject(why);
}
} // namespace

std::string checkGemmU8S8Shape(int64_t n, int64_t k) {
  if (n < 1)
    return "N must be >= 1, got " + std::to_string(n);
  if (k < 1 || k > kMaxU8S8K)
    return "K must be in 1.." + std::to_string(kMaxU8S8K) +
           " (s32 sums of u8 * s8 products must not overflow), got " + std::to_string(k);
  return "";
}

int gemmU8S8PanelWidth(int64_t n) { return gemm_blocking::panelWidth(n); }

std::string checkGemmU8S8Params(const GemmU8S8Params &p, int64_t n) {
  if (p.aZeroPoint < 0 || p.aZeroPoint > 255)
    return "activation zero point must be in 0..255, got " + std::to_string(p.aZeroPoint);
  if (!p.xScalePerRow && !std::isfinite(p.xScale))
    return "activation scale must be finite";
  if (p.wScale.size() != 1 && int64_t(p.wScale.size()) != n)
    return "weight scales: need 1 or N = " + std::to_string(n) + ", got " +
           std::to_string(p.wScale.size());
  for (size_t j = 0; j < p.wScale.size(); ++j)
    if (!std::isfinite(p.wScale[j]))
      return "weight scale " + std::to_string(j) + " is not finite";
  return "";
}

PackedU8S8 packU8S8(const int8_t *b, int64_t k, int64_t n, WeightLayout layout) {
  checkShape(n, k);
  if (!b)
    reject("packU8S8: null weight");
  PackedU8S8 packed;
  packed.n = n, packed.k = k, packed.nr = gemmU8S8PanelWidth(n);
  const PackedWeightLayout to = packedWeightLayout(PackIsa::Avx512Vnni, k, n, packed.nr);
  packed.data.resize(to.bytes());
  packed.colsum.resize(n);
  packWeight(to, b, layout, packed.data.data(), packed.colsum.data());
  return packed;
}

bool GemmU8S8::hostSupported() { return CpuFeatures::host().supports(Isa::Avx512Vnni); }

GemmU8S8::GemmU8S8(PackedU8S8View packed, GemmU8S8Params params)
    : n_(packed.n), k_(packed.k), packed_(packed), params_(std::move(params)), nr_(packed.nr) {
  checkShape(n_, k_);
  if (nr_ != gemmU8S8PanelWidth(n_) || !packed.data ||
      packed.bytes != roundUp(n_, nr_) * ceilDiv(k_, 4) * 4 || !packed.colsum)
    reject("packed weights are not packU8S8's layout for N " + std::to_string(n_) + ", K " +
           std::to_string(k_));
  if (std::string why = checkGemmU8S8Params(params_, n_); !why.empty())
    reject(why);

  panels_ = ceilDiv(n_, nr_);
  k4_ = ceilDiv(k_, 4);
  const int64_t padded = panels_ * nr_;
  comp_.assign(padded, 0);
  scale_.assign(padded, 0.0f);
  bias_.assign(padded, 0.0f);
  for (int64_t j = 0; j < n_; ++j) {
    comp_[j] = params_.aZeroPoint * packed.colsum[j];
    const float w = params_.wScale[params_.wScale.size() == 1 ? 0 : j];
    scale_[j] = params_.xScalePerRow ? w : params_.xScale * w;
    if (params_.bias)
      bias_[j] = params_.bias[j];
  }

  const int scratch = params_.elementwise ? params_.elementwise->scratchZmmCount() : 0;
  mr_ = GemmU8S8Vnni::maxRows(nr_, scratch);
  if (mr_ < 1)
    reject("the elementwise epilogue asks " + std::to_string(scratch) +
           " scratch zmm, leaving no accumulator rows");
  kc_ = gemm_blocking::kBlock(k_, nr_, sizeof(int8_t));
  const int tailColumns = n_ % nr_ ? int(n_ % nr_) : nr_;
  for (int rows = 1; rows <= mr_; ++rows)
    for (int columns : {nr_, tailColumns}) {
      GemmU8S8VnniConfig config;
      config.mr = rows, config.nr = nr_, config.columns = columns;
      config.kTailBytes = int(k_ % 4);
      GemmU8S8EpilogueConfig &e = config.epilogue;
      e.compensation = params_.aZeroPoint != 0;
      e.xScalePerRow = params_.xScalePerRow;
      e.bias = params_.bias != nullptr;
      e.residual = params_.residual;
      e.elementwise = params_.elementwise;
      e.columnStride = padded * int64_t(sizeof(float));
      e.output = params_.output;
      e.outScale = params_.outScale;
      e.outZeroPoint = params_.outZeroPoint;
      kernels_.push_back(std::make_unique<GemmU8S8Vnni>(config));
      kernelFns_.push_back(kernels_.back()->entry<GemmU8S8KernelFn>());
    }
}

int64_t GemmU8S8::mc(int64_t m) const {
  return gemm_blocking::mBlock(m, k_, mr_, panels_, sizeof(uint8_t));
}

void GemmU8S8::run(const uint8_t *a, int64_t m, int64_t lda, void *c, int64_t ldc,
                   const float *residual, int64_t ldr, const float *xScale,
                   const float *const *columns) const {
  if (m < 0)
    reject("run: M must be >= 0, got " + std::to_string(m));
  if (m == 0)
    return;
  static const bool supported = hostSupported();
  if (!supported) // a plan built for another CPU: never execute its code here
    throw std::runtime_error("GemmU8S8: cannot run on this host: it lacks AVX-512 VNNI (host "
                             "has: " + CpuFeatures::host().describe() + ")");
  if (!a || !c)
    reject("run: null A or C");
  if (lda < k_)
    reject("run: lda " + std::to_string(lda) + " < K " + std::to_string(k_));
  if (ldc < n_)
    reject("run: ldc " + std::to_string(ldc) + " < N " + std::to_string(n_));
  if (params_.xScalePerRow && !xScale)
    reject("run: the GEMM takes per-row activation scales: need M of them");
  if (params_.residual && (!residual || ldr < n_))
    reject("run: the epilogue adds a residual: need one with ldr >= N " + std::to_string(n_));

  const auto columnInputs = padColumnInputs(params_.elementwise, n_, panels_ * nr_, columns);

  const int64_t mBlock = mc(m), mBlocks = ceilDiv(m, mBlock);
  const int64_t kBlocks = ceilDiv(k_, kc_);
  const int elementBytes = params_.output == QuantOutput::F32 ? 4 : 1;
  auto *cBytes = static_cast<uint8_t *>(c);
#pragma omp parallel if (mBlocks * panels_ > 1)
  {
    // s32 sums of one (M block, panel) between K blocks, reused across runs.
    thread_local std::vector<int32_t, CacheLineAllocator<int32_t>> partial;
    if (kBlocks > 1 && int64_t(partial.size()) < mBlock * nr_)
      partial.resize(mBlock * nr_);
#pragma omp for collapse(2) schedule(static)
    for (int64_t mb = 0; mb < mBlocks; ++mb)
      for (int64_t p = 0; p < panels_; ++p) {
        const int64_t rowBegin = mb * mBlock, rowEnd = std::min(m, rowBegin + mBlock);
        const int64_t col = p * nr_;
        const bool tailPanel = n_ - col < nr_;
        const int8_t *panel = packed_.data + p * k4_ * nr_ * 4;
        for (int64_t kb = 0; kb < kBlocks; ++kb) {
          const int64_t k0 = kb * kc_, len = std::min(kc_, k_ - k0);
          for (int64_t row = rowBegin; row < rowEnd; row += mr_) {
            GemmU8S8Args args{a + row * lda + k0,
                              panel + (k0 / 4) * nr_ * 4,
                              kBlocks > 1 ? partial.data() + (row - rowBegin) * nr_ : nullptr,
                              cBytes + (row * ldc + col) * elementBytes,
                              comp_.data() + col,
                              scale_.data() + col,
                              bias_.data() + col,
                              params_.residual ? residual + row * ldr + col : nullptr,
                              lda,
                              ldc,
                              ldr,
                              len / 4,
                              len % 4,
                              kb > 0,
                              kb == kBlocks - 1,
                              params_.xScalePerRow ? xScale + row : nullptr,
                              columnInputs.empty() ? nullptr : columnInputs.data() + col};
            kernel(int(std::min<int64_t>(mr_, rowEnd - row)), tailPanel)(&args);
          }
        }
      }
  }
}

} // namespace octet::x86
