//===- FusedKernels.cpp ---------------------------------------------------===//
#include "compiler/codegen/x86/FusedKernels.h"
#include "compiler/codegen/StealingSchedule.h"
#include "compiler/codegen/x86/NextStepPrefetch.h"

#include <omp.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>

namespace octet::x86 {

using Xbyak::Zmm;

namespace {

constexpr int kLanes = 16;
constexpr int kVecBytes = kLanes * sizeof(float);
constexpr uint8_t kCmpEqOq = 0x00;
constexpr uint8_t kCmpUnordQ = 0x03; // either operand NaN

std::vector<Zmm> zmmRange(int first, int last) {
  std::vector<Zmm> r;
  for (int i = first; i <= last; ++i)
    r.emplace_back(i);
  return r;
}

/// Rows per OpenMP task: enough work (~16 KiB of row data) to amortize a call.
int64_t rowsPerTask(int64_t n) { return std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)); }

} // namespace

//===----------------------------------------------------------------------===//
// RowKernel
//===----------------------------------------------------------------------===//

RowKernel::RowKernel(std::string name, int64_t n)
    : KernelGenerator(std::move(name) + "_n" + std::to_string(n), Isa::Avx512), n_(n),
      rowBytes_(int32_t(n * sizeof(float))), math_(*this, constants_, zmmRange(14, 31), {k2, k3}) {
  if (n < 1 || n > (int64_t(1) << 28))
    throw std::invalid_argument(this->name() + ": row length out of range");
}

void RowKernel::initTailMask() {
  if (int tail = int(n_ % kLanes)) {
    mov(eax, (1u << tail) - 1);
    kmovw(kTail, eax);
  }
}

void RowKernel::forEachVector(const std::function<void(int, int, bool)> &body) {
  int64_t full = n_ / kLanes;
  int64_t blocks = full / kUnroll;
  int rest = int(full % kUnroll);
  xor_(rCol, rCol);
  if (blocks > 0) {
    Xbyak::Label loop;
    L(loop);
    for (int u = 0; u < kUnroll; ++u)
      body(u, u * kVecBytes, false);
    add(rCol, kUnroll * kVecBytes);
    cmp(rCol, int32_t(blocks * kUnroll * kVecBytes));
    jb(loop);
  }
  for (int u = 0; u < rest; ++u)
    body(u, u * kVecBytes, false);
  if (n_ % kLanes)
    body(rest, rest * kVecBytes, true);
}

void RowKernel::load(const Zmm &z, const Xbyak::Address &a, bool tail) {
  if (tail)
    vmovups(z | kTail | T_z, a);
  else
    vmovups(z, a);
}

void RowKernel::store(const Xbyak::Address &a, const Zmm &z, bool tail) {
  vmovups(tail ? a | kTail : a, z);
}

void RowKernel::accumulate(const Zmm &a, const Zmm &v, bool tail, bool isMax) {
  Zmm dst = tail ? Zmm(a.getIdx()) | kTail : a;
  isMax ? vmaxps(dst, a, v) : vaddps(dst, a, v);
}

void RowKernel::reduceAccumulators(const Zmm &dst, bool isMax) {
  auto op = [&](const Zmm &d, const Zmm &b) { isMax ? vmaxps(d, d, b) : vaddps(d, d, b); };
  op(acc(0), acc(1));
  op(acc(2), acc(3));
  op(acc(0), acc(2));
  isMax ? math_.reduceMax(dst, acc(0)) : math_.reduceSum(dst, acc(0));
}

void RowKernel::emitRowLoop(const Xbyak::Address &rowCount, const std::function<void()> &setup,
                            const std::function<void()> &row) {
  Xbyak::Label rowLoop, done;
  preamble();
  mov(rRows, rowCount);
  test(rRows, rRows);
  jle(done, T_NEAR);
  setup();
  initTailMask();
  xor_(rRow, rRow);
  L(rowLoop);
  row();
  inc(rRow);
  cmp(rRow, rRows);
  jl(rowLoop, T_NEAR);
  L(done);
  postamble();
  constants_.emit();
}

//===----------------------------------------------------------------------===//
// LayerNormKernel
//===----------------------------------------------------------------------===//

namespace {
std::string layerNormName(const LayerNormQuantize &q) {
  using Mode = LayerNormQuantize::Mode;
  if (q.mode == Mode::None)
    return "layernorm";
  std::string name = q.mode == Mode::PerRow ? "layernorm_quantize_per_row"
                                            : q.signedOutput ? "layernorm_quantize_s8"
                                                             : "layernorm_quantize_u8";
  if (q.ownAffine)
    name += "_affine";
  return q.writeY ? name + "_y" : name;
}
} // namespace

LayerNormKernel::LayerNormKernel(int64_t n, std::vector<RowSource> sources, bool writeSum,
                                 float epsilon, LayerNormQuantize quantize)
    : RowKernel(layerNormName(quantize), n), sources_(std::move(sources)), writeSum_(writeSum),
      epsilon_(epsilon), quant_(quantize) {
  if (sources_.empty() || sources_.size() > 3)
    throw std::invalid_argument("layernorm: 1 to 3 sources");
  if (quant_.mode == LayerNormQuantize::Mode::None) {
    if (!quant_.writeY)
      throw std::invalid_argument("layernorm: nothing to write");
    return;
  }
  if (sources_.size() > 2 || std::count(sources_.begin(), sources_.end(), RowSource::Gathered))
    throw std::invalid_argument("layernorm: quantizing takes 1 or 2 dense sources");
  const int32_t lo = quant_.signedOutput ? -128 : 0;
  if (quant_.mode == LayerNormQuantize::Mode::PerTensor &&
      (quant_.zeroPoint < lo || quant_.zeroPoint > lo + 255 || !(quant_.scale > 0) ||
       !std::isfinite(quant_.scale)))
    throw std::invalid_argument("layernorm: quantization scale " + std::to_string(quant_.scale) +
                                " must be finite and > 0, zero point " +
                                std::to_string(quant_.zeroPoint) + " in the output's range");
  if (quant_.ownAffine && quant_.mode != LayerNormQuantize::Mode::PerTensor)
    throw std::invalid_argument("layernorm: the quantized value's own affine is per tensor only");
  if (quant_.mode == LayerNormQuantize::Mode::PerRow && quant_.signedOutput)
    throw std::invalid_argument("layernorm: per-row quantization writes u8");
}

void LayerNormKernel::generate() {
  const int numSources = int(sources_.size());
  auto field = [&](size_t offset) { return qword[rArgs + int(offset)]; };
  auto srcField = [&](int i) { return field(offsetof(LayerNormArgs, src) + i * sizeof(float *)); };
  using Mode = LayerNormQuantize::Mode;
  const Mode mode = quant_.mode;
  // x lives in its input row when that is all there is, else in sum or y;
  // with neither, every pass sums the sources again.
  const bool singleRow = numSources == 1 && sources_[0] == RowSource::Dense && !writeSum_;
  const bool buffered = singleRow || writeSum_ || quant_.writeY;
  const Xbyak::Reg64 rBuf = singleRow ? rSrc[0] : writeSum_ ? rSum : rY;
  auto zeroAccumulators = [&] {
    for (int u = 0; u < kUnroll; ++u)
      vxorps(acc(u), acc(u), acc(u));
  };
  auto sumSources = [&](int u, int disp, bool tail) {
    load(val(u), ptr[rSrc[0] + rCol + disp], tail);
    for (int i = 1; i < numSources; ++i) {
      if (tail) {
        load(tmp(u), ptr[rSrc[i] + rCol + disp], tail);
        vaddps(val(u), val(u), tmp(u));
      } else {
        vaddps(val(u), val(u), ptr[rSrc[i] + rCol + disp]);
      }
    }
  };
  auto loadX = [&](int u, int disp, bool tail) {
    if (buffered)
      load(val(u), ptr[rBuf + rCol + disp], tail);
    else
      sumSources(u, disp, tail);
  };
  // y = (x - mean) · rstd · gamma + beta, the same instructions in every pass.
  // d = s · gamma + beta (d may be s), the same instructions for either affine.
  auto affine = [&](const Zmm &d, const Zmm &s, int u, int disp, bool tail,
                    const Xbyak::Reg64 &gamma, const Xbyak::Reg64 &beta) {
    if (tail) {
      load(tmp(u), ptr[gamma + rCol + disp], tail);
      vmulps(d, s, tmp(u));
      load(tmp(u), ptr[beta + rCol + disp], tail);
      vaddps(d, d, tmp(u));
    } else {
      vmulps(d, s, ptr[gamma + rCol + disp]);
      vaddps(d, d, ptr[beta + rCol + disp]);
    }
  };
  // ownAffine: acc(u) = the quantized value's own affine of the same
  // normalization (accumulators are free in pass 3 per tensor).
  auto normalize = [&](int u, int disp, bool tail) {
    loadX(u, disp, tail);
    vsubps(val(u), val(u), zMean);
    vmulps(val(u), val(u), zRstd);
    if (quant_.ownAffine)
      affine(acc(u), val(u), u, disp, tail, rQGamma, rQBeta);
    affine(val(u), val(u), u, disp, tail, rGamma, rBeta);
  };
  // q = saturate(RNE(y / divisor) + zp) as QuantizeKernel: clamping y / divisor
  // to [lo - zp, hi - zp] before rounding equals saturating after (integer
  // bounds); NaN lanes become 0, i.e. zp.
  auto quantize = [&](const Zmm &v, int disp, bool tail, const Xbyak::Operand &divisor, float lo,
                      float hi, int32_t zp, bool toSigned) {
    vdivps(v, v, divisor); // the division the formula names, not a reciprocal
    vcmpps(kNan, v, v, kCmpUnordQ);
    vmaxps(v, v, constants_.f32(lo));
    vminps(v, v, constants_.f32(hi));
    vxorps(v | kNan, v, v);
    vcvtps2dq(v, v); // MXCSR's default rounding: to nearest even
    vpaddd(v, v, constants_.bits(uint32_t(zp)));
    mov(rTmp, rCol);
    shr(rTmp, 2); // float offset -> byte offset
    const Xbyak::Address dst = xword[rQ + rTmp + disp / 4];
    if (toSigned)
      vpmovsdb(tail ? dst | kTail : dst, v);
    else
      vpmovusdb(tail ? dst | kTail : dst, v);
  };

  emitRowLoop(
      field(offsetof(LayerNormArgs, rows)),
      [&] {
        if (quant_.writeY)
          mov(rY, field(offsetof(LayerNormArgs, y)));
        if (mode != Mode::None)
          mov(rQ, field(offsetof(LayerNormArgs, q)));
        if (mode == Mode::PerRow)
          mov(rRowScale, field(offsetof(LayerNormArgs, rowScale)));
        if (quant_.ownAffine) {
          mov(rQGamma, field(offsetof(LayerNormArgs, qGamma)));
          mov(rQBeta, field(offsetof(LayerNormArgs, qBeta)));
        }
        if (writeSum_)
          mov(rSum, field(offsetof(LayerNormArgs, sum)));
        mov(rGamma, field(offsetof(LayerNormArgs, gamma)));
        mov(rBeta, field(offsetof(LayerNormArgs, beta)));
        for (int i = 0; i < numSources; ++i) {
          if (sources_[i] == RowSource::Dense)
            mov(rSrc[i], srcField(i));
          else
            mov(rIdx[i], field(offsetof(LayerNormArgs, index) + i * sizeof(int64_t *)));
        }
      },
      [&] {
        for (int i = 0; i < numSources; ++i) {
          if (sources_[i] != RowSource::Gathered)
            continue;
          mov(rTmp, qword[rIdx[i] + rRow * 8]);
          imul(rTmp, rTmp, rowBytes_);
          add(rTmp, srcField(i));
          mov(rSrc[i], rTmp);
        }

        // Pass 1: x = sum of the sources, and the mean.
        zeroAccumulators();
        forEachVector([&](int u, int disp, bool tail) {
          sumSources(u, disp, tail);
          if (!singleRow && buffered)
            store(ptr[rBuf + rCol + disp], val(u), tail);
          accumulate(acc(u), val(u), tail, false);
        });
        reduceAccumulators(zMean, false);
        vmulps(zMean, zMean, constants_.f32(1.0f / float(n_)));

        // Pass 2: variance about the mean.
        zeroAccumulators();
        forEachVector([&](int u, int disp, bool tail) {
          loadX(u, disp, tail);
          vsubps(val(u), val(u), zMean);
          vfmadd231ps(tail ? acc(u) | kTail : acc(u), val(u), val(u));
        });
        reduceAccumulators(zRstd, false);
        // Deviations past ~1.8e19 overflow the sum of squares to +inf, and
        // 1/sqrt(inf) would zero the row. Such a row is rescaled by its
        // largest |x - mean| (docs/security.md): rstd = s / sqrt(sum((d s)^2)/n
        // + eps s^2) with s = 1/max|d|. An infinite d (the f32 mean or
        // deviation overflowed) gives s = 0 and NaN, as ONNX Runtime.
        Xbyak::Label finite, rstdDone;
        vcmpps(kOverflow, zRstd, constants_.f32(std::numeric_limits<float>::infinity()),
               kCmpEqOq);
        kortestw(kOverflow, kOverflow);
        jz(finite, T_NEAR);
        zeroAccumulators();
        forEachVector([&](int u, int disp, bool tail) {
          loadX(u, disp, tail);
          vsubps(val(u), val(u), zMean);
          vandps(val(u), val(u), constants_.bits(0x7fffffffu));
          accumulate(acc(u), val(u), tail, true);
        });
        reduceAccumulators(zRstd, true);
        math_.reciprocal(zRstd, zRstd); // s, held in zRstd until rstd replaces it
        zeroAccumulators();
        forEachVector([&](int u, int disp, bool tail) {
          loadX(u, disp, tail);
          vsubps(val(u), val(u), zMean);
          vmulps(val(u), val(u), zRstd);
          vfmadd231ps(tail ? acc(u) | kTail : acc(u), val(u), val(u));
        });
        reduceAccumulators(tmp(0), false);
        vmulps(tmp(0), tmp(0), constants_.f32(1.0f / float(n_)));
        vmulps(tmp(1), zRstd, zRstd);
        vfmadd231ps(tmp(0), tmp(1), constants_.f32(epsilon_));
        math_.rsqrt(tmp(0), tmp(0));
        vmulps(zRstd, zRstd, tmp(0));
        jmp(rstdDone, T_NEAR);
        L(finite);
        vmulps(zRstd, zRstd, constants_.f32(1.0f / float(n_)));
        vaddps(zRstd, zRstd, constants_.f32(epsilon_));
        math_.rsqrt(zRstd, zRstd);
        L(rstdDone);

        // Pass 3: normalize, scale, shift; per tensor also quantize, per row
        // take the absmax (vmaxps(acc, |y|, acc) returns acc for a NaN |y|).
        if (mode == Mode::PerRow)
          zeroAccumulators();
        const int32_t lo = quant_.signedOutput ? -128 : 0;
        const float scale = quant_.scale;
        forEachVector([&](int u, int disp, bool tail) {
          normalize(u, disp, tail);
          if (quant_.writeY)
            store(ptr[rY + rCol + disp], val(u), tail);
          if (mode == Mode::PerTensor) {
            quantize(quant_.ownAffine ? acc(u) : val(u), disp, tail, constants_.f32(scale),
                     float(lo - quant_.zeroPoint), float(lo + 255 - quant_.zeroPoint),
                     quant_.zeroPoint, quant_.signedOutput);
          } else if (mode == Mode::PerRow) {
            vandps(tmp(u), val(u), constants_.bits(0x7fffffffu));
            vmaxps(tail ? acc(u) | kTail : acc(u), tmp(u), acc(u));
          }
        });

        if (mode == Mode::PerRow) {
          // s = absmax / 127, or 1 when the absmax is 0 (no NaN is left).
          reduceAccumulators(zRowScale, true);
          vcmpps(kNan, zRowScale, constants_.f32(0.0f), kCmpEqOq);
          vdivps(zRowScale, zRowScale, constants_.f32(127.0f));
          vblendmps(zRowScale | kNan, zRowScale, constants_.f32(1.0f));
          vmovss(dword[rRowScale], Xbyak::Xmm(zRowScale.getIdx()));
          // Pass 4: y again (its stored bits when there are some), quantized.
          forEachVector([&](int u, int disp, bool tail) {
            if (quant_.writeY)
              load(val(u), ptr[rY + rCol + disp], tail);
            else
              normalize(u, disp, tail);
            quantize(val(u), disp, tail, zRowScale, -127.0f, 127.0f, 128, false);
          });
          add(rRowScale, 4);
        }

        for (int i = 0; i < numSources; ++i)
          if (sources_[i] == RowSource::Dense)
            add(rSrc[i], rowBytes_);
        if (quant_.writeY)
          add(rY, rowBytes_);
        if (writeSum_)
          add(rSum, rowBytes_);
        if (mode != Mode::None)
          add(rQ, int32_t(n_));
      });
}

void LayerNormKernel::run(const LayerNormArgs &args) {
  auto fn = entry<void (*)(const LayerNormArgs *)>();
  // Each thread starts on one range of ceil(rows / threads) rows: where the
  // INT8 GEMMs around it split rows (Int8GemmDriver::registerTileMBlock) into
  // one block per thread, as BERT-base's do at 113 and 786 rows, the rows that
  // GEMM computed on that thread (else up to a block's rounding apart), so x
  // is in this core's cache and the GEMM after it reads q rows this core
  // wrote. A thread done with its range takes chunks of kStealRows rows from
  // the back of the other's (StealingSchedule): the two ranges' rows do not
  // cost the same (the GEMM before may have stolen some of a range's panels,
  // whose lines then lie in the other core), and a LayerNorm of BERT-base's
  // 113 rows ran 20-40% longer on one thread than on the other.
  constexpr int64_t kStealRows = 8;
  const int64_t threads = std::max(1, omp_get_max_threads());
  const int64_t block = std::max<int64_t>(1, (args.rows + threads - 1) / threads);
  const int64_t chunksPerBlock = (block + kStealRows - 1) / kStealRows;
  StealingSchedule schedule(threads * chunksPerBlock, threads);
  auto runRows = [&](int64_t first, int64_t rows) {
    LayerNormArgs a = args;
    for (size_t i = 0; i < sources_.size(); ++i) {
      if (sources_[i] == RowSource::Dense)
        a.src[i] += first * n_;
      else
        a.index[i] += first;
    }
    if (a.sum)
      a.sum += first * n_;
    if (a.y)
      a.y += first * n_;
    if (a.q)
      a.q = static_cast<uint8_t *>(a.q) + first * n_;
    if (a.rowScale)
      a.rowScale += first;
    a.rows = rows;
    fn(&a);
  };
  // The next step's first reads (a GEMM's weight slice), a part per chunk.
  const NextStepReads *nextStep = NextStepReads::published();
#pragma omp parallel if (args.rows > kStealRows)
  {
    NextStepPrefetcher prefetcher(nextStep, omp_get_thread_num(), chunksPerBlock);
    schedule.run(omp_get_thread_num(), [&](int64_t item, bool) {
      prefetcher.advance();
      // Chunk c of thread t's block: rows [t * block + c * kStealRows, ...),
      // within the block and the rows (the last block may be short or empty).
      const int64_t t = item / chunksPerBlock, c = item % chunksPerBlock;
      const int64_t first = t * block + c * kStealRows;
      const int64_t end = std::min({first + kStealRows, (t + 1) * block, args.rows});
      if (first < end)
        runRows(first, end - first);
    });
  }
}

//===----------------------------------------------------------------------===//
// SoftmaxKernel
//===----------------------------------------------------------------------===//

SoftmaxKernel::SoftmaxKernel(int64_t n, float scale, bool hasMask)
    : RowKernel("softmax", n), scale_(scale), hasMask_(hasMask) {}

void SoftmaxKernel::generate() {
  auto field = [&](size_t offset) { return qword[rArgs + int(offset)]; };

  emitRowLoop(
      field(offsetof(Call, args) + offsetof(SoftmaxArgs, rows)),
      [&] {
        mov(rX, field(offsetof(Call, args) + offsetof(SoftmaxArgs, x)));
        mov(rY, field(offsetof(Call, args) + offsetof(SoftmaxArgs, y)));
        if (hasMask_) {
          mov(rMask, field(offsetof(Call, args) + offsetof(SoftmaxArgs, mask)));
          mov(rPer, field(offsetof(Call, args) + offsetof(SoftmaxArgs, rowsPerMask)));
          mov(rPhase, field(offsetof(Call, maskPhase)));
        }
      },
      [&] {
        // Pass 1: z = scale x + mask into y, and the row max.
        for (int u = 0; u < kUnroll; ++u)
          math_.broadcast(acc(u), -INFINITY);
        forEachVector([&](int u, int disp, bool tail) {
          load(val(u), ptr[rX + rCol + disp], tail);
          if (scale_ != 1.0f)
            vmulps(val(u), val(u), constants_.f32(scale_));
          if (hasMask_) {
            if (tail) {
              load(tmp(u), ptr[rMask + rCol + disp], tail);
              vaddps(val(u), val(u), tmp(u));
            } else {
              vaddps(val(u), val(u), ptr[rMask + rCol + disp]);
            }
          }
          store(ptr[rY + rCol + disp], val(u), tail);
          accumulate(acc(u), val(u), tail, true);
        });
        reduceAccumulators(zMax, true);
        // An all -inf row: exp(-inf - (-FLT_MAX)) = 0 instead of NaN.
        vmaxps(zMax, zMax, constants_.f32(-FLT_MAX));

        // Pass 2: e = exp(z - max) into y, and its sum.
        for (int u = 0; u < kUnroll; ++u)
          vxorps(acc(u), acc(u), acc(u));
        forEachVector([&](int u, int disp, bool tail) {
          load(val(u), ptr[rY + rCol + disp], tail);
          vsubps(val(u), val(u), zMax);
          math_.exp(val(u), val(u));
          store(ptr[rY + rCol + disp], val(u), tail);
          accumulate(acc(u), val(u), tail, false);
        });
        reduceAccumulators(zInv, false);
        const Xbyak::Opmask kZero = k2; // free: exp and reciprocal use no opmask
        vcmpps(kZero, zInv, constants_.f32(0.0f), kCmpEqOq);
        math_.reciprocalOfUniform(zInv, zInv);
        vxorps(zInv | kZero, zInv, zInv); // sum 0 (all -inf): zeros, not 0 * inf

        // Pass 3: normalize.
        forEachVector([&](int u, int disp, bool tail) {
          load(val(u), ptr[rY + rCol + disp], tail);
          vmulps(val(u), val(u), zInv);
          store(ptr[rY + rCol + disp], val(u), tail);
        });

        add(rX, rowBytes_);
        add(rY, rowBytes_);
        if (hasMask_) {
          Xbyak::Label sameMaskRow;
          inc(rPhase);
          cmp(rPhase, rPer);
          jl(sameMaskRow);
          xor_(rPhase, rPhase);
          add(rMask, rowBytes_);
          L(sameMaskRow);
        }
      });
}

void SoftmaxKernel::run(const SoftmaxArgs &args) {
  if (hasMask_ && args.rowsPerMask < 1)
    throw std::invalid_argument("softmax: rowsPerMask must be >= 1");
  auto fn = entry<void (*)(const Call *)>();
  const int64_t block = rowsPerTask(n_);
  const int64_t tasks = (args.rows + block - 1) / block;
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t first = t * block;
    Call c{args, 0};
    c.args.x += first * n_;
    c.args.y += first * n_;
    if (hasMask_) {
      c.args.mask += (first / args.rowsPerMask) * n_;
      c.maskPhase = first % args.rowsPerMask;
    }
    c.args.rows = std::min(block, args.rows - first);
    fn(&c);
  }
}

//===----------------------------------------------------------------------===//
// UnaryKernel
//===----------------------------------------------------------------------===//

UnaryKernel::UnaryKernel(UnaryOp op) : KernelGenerator("unary", Isa::Avx512), op_(op) {}

void UnaryKernel::generate() {
  VectorMath math(*this, constants_, zmmRange(1, 8), {k2});
  Xbyak::Label loop, tail, done;
  preamble();
  L(loop);
  cmp(rCount, kLanes);
  jl(tail, T_NEAR);
  vmovups(zVal, ptr[rX]);
  math.unary(op_, zVal, zVal);
  vmovups(ptr[rY], zVal);
  add(rX, kVecBytes);
  add(rY, kVecBytes);
  sub(rCount, kLanes);
  jmp(loop, T_NEAR);

  L(tail); // 0 <= count < 16: mask = (1 << count) - 1
  test(rCount, rCount);
  jz(done, T_NEAR);
  mov(ecx, edx);
  mov(eax, 1);
  shl(eax, cl);
  dec(eax);
  kmovw(kTail, eax);
  vmovups(zVal | kTail | T_z, ptr[rX]);
  math.unary(op_, zVal, zVal);
  vmovups(ptr[rY] | kTail, zVal);
  L(done);
  postamble();
  constants_.emit();
}

void UnaryKernel::run(const float *x, float *y, int64_t count) {
  auto fn = entry<void (*)(const float *, float *, int64_t)>();
  constexpr int64_t block = 4096; // multiple of 16: only the last task has a tail
  const int64_t tasks = (count + block - 1) / block;
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t first = t * block;
    fn(x + first, y + first, std::min(block, count - first));
  }
}

} // namespace octet::x86
