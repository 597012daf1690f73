//===- PlanImage.cpp - the Plan's byte format (AOT) -----------------------===//
//
// Plan section layout (all integers little endian):
//   header: magic "OCTETPLN", u32 format version, str Octet version,
//           u64 checksums of the rest of this section, the constants and the code;
//   rest:   the kernel options (target name, CPU features, GEMM provider),
//           constant ranges (offset, bytes in the constants section),
//           kernels (name, offset, bytes in the code section, in the order
//           they were generated), scalars, tensors, arena slots, inputs,
//           outputs, steps (location + recipe).
// A str is a u32 length and its bytes; a vector a u32 count and its elements.
// A constant pointer is (range index, byte offset), -1 for null.
// Opening checks the plan and code checksums; the constants' checksum is
// checked before the first run (Plan::firstRunCheck).
//
//===----------------------------------------------------------------------===//
#include "runtime/PlanImage.h"

#include "runtime/Executor.h"

#include "compiler/codegen/x86/GemmBf16.h"
#include "compiler/codegen/x86/KernelGenerator.h"
#include "runtime/StepRecipe.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <type_traits>

#ifndef OCTET_VERSION_STRING
#error "OCTET_VERSION_STRING must be defined by the build"
#endif

namespace octet::rt {

namespace {

constexpr char kMagic[8] = {'O', 'C', 'T', 'E', 'T', 'P', 'L', 'N'};
constexpr size_t kAlign = 64;

// ---- Checksum ---------------------------------------------------------------
// Fletcher-style sums of 64-bit words in eight lanes (vectorized by the
// compiler: memory bound), per 1 MiB chunk, the chunks on all threads and
// combined in order. It catches any single changed bit and reordered words;
// it guards against damaged files, not against an adversary.
constexpr size_t kChecksumChunk = size_t(1) << 20;

uint64_t mix(uint64_t h, uint64_t v) {
  h = (h ^ v) * 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 29);
}

uint64_t chunkChecksum(const uint8_t *data, size_t bytes) {
  uint64_t a[8] = {}, b[8] = {};
  const size_t blocks = bytes / 64;
  for (size_t i = 0; i < blocks; ++i)
    for (int l = 0; l < 8; ++l) {
      uint64_t w;
      std::memcpy(&w, data + 64 * i + 8 * l, 8);
      a[l] += w;
      b[l] += a[l];
    }
  uint64_t tail[8] = {};
  if (bytes % 64)
    std::memcpy(tail, data + 64 * blocks, bytes % 64);
  uint64_t h = bytes;
  for (int l = 0; l < 8; ++l)
    h = mix(mix(mix(h, a[l]), b[l]), tail[l]);
  return h;
}

uint64_t checksum(const uint8_t *data, size_t bytes) {
  const int64_t chunks = int64_t((bytes + kChecksumChunk - 1) / kChecksumChunk);
  std::vector<uint64_t> sums(static_cast<size_t>(chunks));
#pragma omp parallel for if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c)
    sums[size_t(c)] = chunkChecksum(data + size_t(c) * kChecksumChunk,
                                    std::min(kChecksumChunk, bytes - size_t(c) * kChecksumChunk));
  uint64_t h = mix(0x6F63746574ull, bytes); // "octet"
  for (uint64_t sum : sums)
    h = mix(h, sum);
  return h;
}

// ---- Writer -----------------------------------------------------------------
class Writer {
public:
  std::vector<uint8_t> bytes;

  template <typename T> void pod(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto *p = reinterpret_cast<const uint8_t *>(&v);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  void u8(uint8_t v) { pod(v); }
  void u32(uint32_t v) { pod(v); }
  void i32(int32_t v) { pod(v); }
  void i64(int64_t v) { pod(v); }
  void u64(uint64_t v) { pod(v); }
  void f32(float v) { pod(v); }
  void str(const std::string &s) {
    u32(uint32_t(s.size()));
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  template <typename T> void vec(const std::vector<T> &v) {
    u32(uint32_t(v.size()));
    for (const T &e : v)
      pod(e);
  }
  void bools(const std::vector<bool> &v) {
    u32(uint32_t(v.size()));
    for (bool b : v)
      u8(b);
  }
};

// ---- Reader -----------------------------------------------------------------
// Every read is bounds checked; the first failure sticks (`error`) and later
// reads return zeros, so decoding code checks once per table.
class Reader {
public:
  Reader(const uint8_t *data, size_t size) : data_(data), size_(size) {}
  std::string error;

  bool take(void *out, size_t n) {
    if (!error.empty() || n > size_ - at_) {
      if (error.empty())
        error = "the plan section ends at byte " + std::to_string(size_) + ", reading " +
                std::to_string(n) + " bytes at " + std::to_string(at_);
      std::memset(out, 0, n);
      return false;
    }
    std::memcpy(out, data_ + at_, n);
    at_ += n;
    return true;
  }
  template <typename T> T pod() {
    T v;
    take(&v, sizeof(T));
    return v;
  }
  uint8_t u8() { return pod<uint8_t>(); }
  uint32_t u32() { return pod<uint32_t>(); }
  int32_t i32() { return pod<int32_t>(); }
  int64_t i64() { return pod<int64_t>(); }
  uint64_t u64() { return pod<uint64_t>(); }
  float f32() { return pod<float>(); }
  /// A count of elements of `elementBytes` each that must fit in what is left.
  uint32_t count(size_t elementBytes) {
    uint32_t n = u32();
    if (error.empty() && size_t(n) * std::max<size_t>(elementBytes, 1) > size_ - at_) {
      error = "a table at byte " + std::to_string(at_) + " claims " + std::to_string(n) +
              " entries, more than the section holds";
      return 0;
    }
    return error.empty() ? n : 0;
  }
  std::string str() {
    uint32_t n = count(1);
    std::string s(n, '\0');
    take(s.data(), n);
    return s;
  }
  template <typename T> std::vector<T> vec() {
    uint32_t n = count(sizeof(T));
    std::vector<T> v(n);
    for (T &e : v)
      e = pod<T>();
    return v;
  }
  std::vector<bool> bools() {
    uint32_t n = count(1);
    std::vector<bool> v(n);
    for (uint32_t i = 0; i < n; ++i)
      v[i] = u8() != 0;
    return v;
  }
  /// An enum stored as u8 whose values are 0..last.
  template <typename E> E enumeration(E last, const char *what) {
    uint8_t v = u8();
    if (v > uint8_t(last) && error.empty())
      error = std::string("invalid ") + what + " " + std::to_string(v);
    return E(v);
  }
  size_t offset() const { return at_; }

private:
  const uint8_t *data_;
  size_t size_;
  size_t at_ = 0;
};

// ---- Constant pointers ------------------------------------------------------
/// The Plan's constant ranges, deduplicated and sorted, and which of them the
/// image uses (only those are stored).
class ConstantEncoder {
public:
  explicit ConstantEncoder(const std::vector<ConstantRange> &ranges) {
    std::map<const uint8_t *, size_t> unique;
    for (const ConstantRange &r : ranges) {
      auto *p = static_cast<const uint8_t *>(r.data);
      size_t &bytes = unique[p];
      bytes = std::max(bytes, r.bytes);
    }
    for (auto [p, bytes] : unique)
      sorted_.push_back({p, bytes});
  }

  /// (index among the used ranges, offset); false when `p` lies in no range.
  bool encode(const void *p, Writer &w) {
    if (!p) {
      w.i32(-1);
      return true;
    }
    auto *q = static_cast<const uint8_t *>(p);
    auto it = std::upper_bound(sorted_.begin(), sorted_.end(), q,
                               [](const uint8_t *v, const Range &r) { return v < r.data; });
    if (it == sorted_.begin())
      return false;
    --it;
    size_t offset = size_t(q - it->data);
    if (offset > it->bytes || (offset == it->bytes && it->bytes != 0))
      return false;
    size_t index = size_t(it - sorted_.begin());
    auto [pos, inserted] = usedIndex_.try_emplace(index, used_.size());
    if (inserted)
      used_.push_back(index);
    w.i32(int32_t(pos->second));
    w.u64(offset);
    return true;
  }

  /// Lays the used ranges out in the constants section; writes their table.
  void finish(Writer &table, std::vector<uint8_t> &section) const {
    table.u32(uint32_t(used_.size()));
    for (size_t index : used_) {
      const Range &r = sorted_[index];
      section.resize((section.size() + kAlign - 1) / kAlign * kAlign, 0);
      table.u64(section.size());
      table.u64(r.bytes);
      section.insert(section.end(), r.data, r.data + r.bytes);
    }
  }

private:
  struct Range {
    const uint8_t *data;
    size_t bytes;
  };
  std::vector<Range> sorted_;
  std::map<size_t, size_t> usedIndex_;
  std::vector<size_t> used_;
};

struct ConstantDecoder {
  std::vector<const uint8_t *> data;
  std::vector<size_t> bytes;

  const void *decode(Reader &r) {
    int32_t index = r.i32();
    if (index < 0)
      return nullptr;
    uint64_t offset = r.u64();
    if (size_t(index) >= data.size() || offset > bytes[index]) {
      if (r.error.empty())
        r.error = "a constant reference (" + std::to_string(index) + ", " + std::to_string(offset) +
                  ") lies outside the constants section";
      return nullptr;
    }
    remaining[data[index] + offset] = bytes[index] - offset;
    return data[index] + offset;
  }

  /// The bytes from a decoded pointer to the end of its constant range.
  std::map<const void *, uint64_t> remaining;
};

// ---- Specs ------------------------------------------------------------------
struct SpecWriter {
  Writer &w;
  ConstantEncoder &constants;
  std::string error;

  void pointer(const void *p, const char *what) {
    if (!constants.encode(p, w) && error.empty())
      error = std::string("internal: the ") + what +
              " pointer of a step is not in the Plan's constant ranges";
  }
  void program(const ElementwiseProgram &p) {
    w.i32(p.numInputs);
    w.u32(uint32_t(p.instrs.size()));
    for (const ElementwiseProgram::Instr &i : p.instrs) {
      w.u8(uint8_t(i.op));
      w.i32(i.a);
      w.i32(i.b);
      w.f32(i.value);
    }
  }
  void extras(const std::vector<TensorId> &ids, const std::vector<bool> &perColumn) {
    w.vec(ids);
    w.bools(perColumn);
  }
  void choice(const GemmChoice &c) {
    for (GemmProvider p : c)
      w.u8(uint8_t(p));
  }

  void operator()(const recipe::Binary &r) {
    w.u8(uint8_t(r.kind)), w.i32(r.a), w.i32(r.b), w.i32(r.out);
  }
  void operator()(const recipe::Unary &r) { w.u8(uint8_t(r.kind)), w.i32(r.in), w.i32(r.out); }
  void operator()(const recipe::Cast &r) { w.i32(r.in), w.i32(r.out); }
  void operator()(const recipe::Where &r) {
    w.i32(r.condition), w.i32(r.a), w.i32(r.b), w.i32(r.out);
  }
  void operator()(const recipe::Gather &r) {
    w.i32(r.data), w.i32(r.indices), w.i32(r.axis), w.i32(r.out);
  }
  void operator()(const recipe::GatherND &r) {
    w.i32(r.data), w.i32(r.indices), w.i32(r.batchDims), w.i32(r.out);
  }
  void operator()(const recipe::GatherElements &r) {
    w.i32(r.data), w.i32(r.indices), w.i32(r.axis), w.i32(r.out);
  }
  void operator()(const recipe::TokenLayout &r) {
    w.vec(r.masks), w.i32(r.batch), w.i32(r.seq), w.i32(r.out);
  }
  void operator()(const recipe::PackTokens &r) { w.i32(r.in), w.i32(r.layout), w.i32(r.out); }
  void operator()(const recipe::UnpackTokens &r) { w.i32(r.in), w.i32(r.layout), w.i32(r.out); }
  void operator()(const recipe::EmbeddingSum &r) {
    w.vec(r.tables), w.vec(r.indices), w.i32(r.layout), w.i32(r.out);
  }
  void operator()(const recipe::Copy &r) { w.i32(r.in), w.i32(r.out); }
  void operator()(const recipe::Concat &r) { w.vec(r.ins), w.i32(r.axis), w.i32(r.out); }
  void operator()(const recipe::Reduce &r) {
    w.u8(uint8_t(r.kind)), w.i32(r.in), w.vec(r.axes), w.i32(r.out);
  }
  void operator()(const recipe::CumSum &r) {
    w.i32(r.in), w.i32(r.axis), w.u8(r.exclusive), w.u8(r.reverse), w.i32(r.out);
  }
  void operator()(const recipe::Softmax &r) { w.i32(r.in), w.i32(r.axis), w.i32(r.out); }
  void operator()(const recipe::Range &r) { w.i32(r.start), w.i32(r.delta), w.i32(r.out); }
  void operator()(const recipe::FromElements &r) { w.vec(r.elements), w.i32(r.out); }
  void operator()(const recipe::MatMul &r) { w.i32(r.a), w.i32(r.b), w.i32(r.out); }
  void operator()(const recipe::Linear &r) {
    const LinearSpec &s = r.spec;
    w.i32(s.input), w.i32(s.output);
    pointer(s.weight, "linear weight");
    w.u8(uint8_t(s.layout)), w.i64(s.k), w.i64(s.n);
    pointer(s.bias, "linear bias");
    extras(s.extras, s.extraPerColumn);
    program(s.epilogue);
    choice(s.provider);
    pointer(s.bf16Weight, "linear bf16 weight");
  }
  void operator()(const recipe::LayerNorm &r) {
    const LayerNormSpec &s = r.spec;
    w.i32(s.x), w.i32(s.residual), w.i32(s.output), w.i32(s.sum);
    pointer(s.gamma, "layer norm gamma");
    pointer(s.beta, "layer norm beta");
    w.i64(s.n), w.f32(s.epsilon), w.i32(s.quantized), w.i32(s.rowScale);
    w.u8(uint8_t(s.quantizedType)), w.f32(s.qScale), w.i32(s.qZeroPoint);
    w.u8(s.qGamma != nullptr);
    if (s.qGamma) {
      pointer(s.qGamma, "layer norm quantized gamma");
      pointer(s.qBeta, "layer norm quantized beta");
    }
  }
  void operator()(const recipe::Attention &r) {
    const AttentionSpec &s = r.spec;
    w.i32(s.q), w.i32(s.k), w.i32(s.v), w.i32(s.mask), w.i32(s.output);
    w.i64(s.numHeads), w.f32(s.scale), w.u8(uint8_t(s.precision)), w.u8(s.zeroMaskedRows);
    w.i32(s.tokenLayout);
    w.u8(uint8_t(s.outputType)), w.f32(s.outputScale), w.i32(s.outputZeroPoint);
  }
  void operator()(const recipe::FusedElementwise &r) {
    program(r.program);
    w.vec(r.inputs);
    w.i32(r.output);
  }
  void operator()(const recipe::Quantize &r) {
    w.i32(r.in), w.i32(r.scale), w.i32(r.zeroPoint), w.i32(r.axis), w.i32(r.out);
  }
  void operator()(const recipe::Dequantize &r) {
    w.i32(r.in), w.i32(r.scale), w.i32(r.zeroPoint), w.i32(r.axis), w.i32(r.out);
  }
  void operator()(const recipe::QuantizePerRow &r) { w.i32(r.in), w.i32(r.out), w.i32(r.scaleOut); }
  void operator()(const recipe::QLinear &r) {
    const QLinearSpec &s = r.spec;
    w.u8(uint8_t(r.outType));
    w.i32(s.input), w.i32(s.output);
    pointer(s.weight, "qlinear weight");
    w.u8(uint8_t(s.layout));
    w.u8(s.packed.has_value());
    if (s.packed)
      w.u8(uint8_t(s.packed->isa)), w.i64(s.packed->k), w.i64(s.packed->n), w.i32(s.packed->nr);
    pointer(s.colsum, "qlinear column sums");
    w.i64(s.k), w.i64(s.n);
    pointer(s.bias, "qlinear bias");
    pointer(s.wScale, "qlinear weight scale");
    w.i64(s.wScaleCount);
    w.i32(s.xScale), w.i32(s.xZeroPoint), w.i32(s.outScale), w.i32(s.outZeroPoint);
    w.u8(s.xScalePerRow);
    pointer(s.xScaleConst, "qlinear input scale");
    pointer(s.xZeroPointConst, "qlinear input zero point");
    pointer(s.outScaleConst, "qlinear output scale");
    pointer(s.outZeroPointConst, "qlinear output zero point");
    extras(s.extras, s.extraPerColumn);
    program(s.epilogue);
    choice(s.provider);
    w.i64(s.columnGroups);
  }
};

struct SpecReader {
  Reader &r;
  ConstantDecoder &constants;

  template <typename T> const T *pointer() { return static_cast<const T *>(constants.decode(r)); }
  /// That `count` elements of T at `p` (null: none needed) lie within p's
  /// constant range: a recipe's sizes are read from the file too, so a
  /// factory must never read past the range (found by test/fuzz plan_image).
  template <typename T> void expect(const T *p, int64_t count, const char *what) {
    if (!p || !r.error.empty())
      return;
    auto it = constants.remaining.find(p);
    if (count < 0 || it == constants.remaining.end() || uint64_t(count) > it->second / sizeof(T))
      r.error = std::string(what) + " needs " + std::to_string(count) + " elements, more than " +
                "its constant range holds";
  }
  ElementwiseProgram program() {
    ElementwiseProgram p;
    p.numInputs = r.i32();
    uint32_t n = r.count(13);
    p.instrs.resize(n);
    for (ElementwiseProgram::Instr &i : p.instrs) {
      i.op = r.enumeration(ElementwiseProgram::Op::GeluTanh, "program op");
      i.a = r.i32();
      i.b = r.i32();
      i.value = r.f32();
    }
    if (r.error.empty()) {
      std::string bad = p.verify();
      if (!bad.empty())
        r.error = "malformed elementwise program: " + bad;
    }
    return p;
  }
  DType dtype() { return r.enumeration(kLastDType, "dtype"); }
  GemmChoice choice() {
    GemmChoice c{};
    for (GemmProvider &p : c)
      p = r.enumeration(GemmProvider::JitAvx2, "GEMM provider");
    return c;
  }
  WeightLayout layout() { return r.enumeration(WeightLayout::NK, "weight layout"); }

  StepRecipe::Call read(uint8_t index) {
    using namespace recipe;
    switch (index) {
    case 0: {
      Binary b{r.enumeration(BinaryKind::FMod, "binary kind"), 0, 0, 0};
      b.a = r.i32(), b.b = r.i32(), b.out = r.i32();
      return b;
    }
    case 1: {
      Unary u{r.enumeration(UnaryKind::IsNegInf, "unary kind"), 0, 0};
      u.in = r.i32(), u.out = r.i32();
      return u;
    }
    case 2: {
      Cast c{};
      c.in = r.i32(), c.out = r.i32();
      return c;
    }
    case 3: {
      Where x{};
      x.condition = r.i32(), x.a = r.i32(), x.b = r.i32(), x.out = r.i32();
      return x;
    }
    case 4: {
      Gather g{};
      g.data = r.i32(), g.indices = r.i32(), g.axis = r.i32(), g.out = r.i32();
      return g;
    }
    case 5: {
      Copy c{};
      c.in = r.i32(), c.out = r.i32();
      return c;
    }
    case 6: {
      Concat c{};
      c.ins = r.vec<TensorId>(), c.axis = r.i32(), c.out = r.i32();
      return c;
    }
    case 7: {
      Reduce x{r.enumeration(ReduceKind::Min, "reduce kind"), 0, {}, 0};
      x.in = r.i32(), x.axes = r.vec<int>(), x.out = r.i32();
      return x;
    }
    case 8: {
      CumSum c{};
      c.in = r.i32(), c.axis = r.i32(), c.exclusive = r.u8(), c.reverse = r.u8(), c.out = r.i32();
      return c;
    }
    case 9: {
      Softmax s{};
      s.in = r.i32(), s.axis = r.i32(), s.out = r.i32();
      return s;
    }
    case 10: {
      Range x{};
      x.start = r.i32(), x.delta = r.i32(), x.out = r.i32();
      return x;
    }
    case 11: {
      FromElements f{};
      f.elements = r.vec<ScalarId>(), f.out = r.i32();
      return f;
    }
    case 12: {
      MatMul m{};
      m.a = r.i32(), m.b = r.i32(), m.out = r.i32();
      return m;
    }
    case 13: {
      LinearSpec s;
      s.input = r.i32(), s.output = r.i32();
      s.weight = pointer<float>();
      s.layout = layout(), s.k = r.i64(), s.n = r.i64();
      s.bias = pointer<float>();
      s.extras = r.vec<TensorId>(), s.extraPerColumn = r.bools();
      s.epilogue = program();
      s.provider = choice();
      s.bf16Weight = pointer<uint16_t>();
      // Below 2^31 each, packedBf16Elements (N and K rounded up) cannot overflow.
      if (s.k < 0 || s.n < 0 || s.k > INT32_MAX || s.n > INT32_MAX ||
          (s.n > 0 && s.k > INT64_MAX / s.n))
        r.error = "a linear step has sizes k " + std::to_string(s.k) + ", n " + std::to_string(s.n);
      else
        expect(s.weight, s.k * s.n, "a linear weight"), expect(s.bias, s.n, "a linear bias"),
            expect(s.bf16Weight, x86::packedBf16Elements(s.k, s.n), "a linear bf16 weight");
      return Linear{s};
    }
    case 14: {
      LayerNormSpec s;
      s.x = r.i32(), s.residual = r.i32(), s.output = r.i32(), s.sum = r.i32();
      s.gamma = pointer<float>(), s.beta = pointer<float>();
      s.n = r.i64(), s.epsilon = r.f32(), s.quantized = r.i32(), s.rowScale = r.i32();
      s.quantizedType = dtype(), s.qScale = r.f32(), s.qZeroPoint = r.i32();
      if (r.u8())
        s.qGamma = pointer<float>(), s.qBeta = pointer<float>();
      return LayerNorm{s};
    }
    case 15: {
      AttentionSpec s;
      s.q = r.i32(), s.k = r.i32(), s.v = r.i32(), s.mask = r.i32(), s.output = r.i32();
      s.numHeads = r.i64(), s.scale = r.f32();
      if (const uint8_t precision = r.u8(); precision <= uint8_t(AttentionPrecision::Int8))
        s.precision = AttentionPrecision(precision);
      else if (r.error.empty())
        r.error = "an attention step has precision " + std::to_string(precision) +
                  ", not f32 (0), bf16 (1) or int8 (2)";
      s.zeroMaskedRows = r.u8() != 0;
      s.tokenLayout = r.i32();
      s.outputType = DType(r.u8()); // checked by makeAttention
      s.outputScale = r.f32(), s.outputZeroPoint = r.i32();
      return Attention{s};
    }
    case 16: {
      FusedElementwise f{};
      f.program = program();
      f.inputs = r.vec<TensorId>(), f.output = r.i32();
      return f;
    }
    case 17: {
      Quantize q{};
      q.in = r.i32(), q.scale = r.i32(), q.zeroPoint = r.i32(), q.axis = r.i32(), q.out = r.i32();
      return q;
    }
    case 18: {
      Dequantize q{};
      q.in = r.i32(), q.scale = r.i32(), q.zeroPoint = r.i32(), q.axis = r.i32(), q.out = r.i32();
      return q;
    }
    case 19: {
      QuantizePerRow q{};
      q.in = r.i32(), q.out = r.i32(), q.scaleOut = r.i32();
      return q;
    }
    case 20: {
      DType outType = dtype();
      QLinearSpec s;
      s.input = r.i32(), s.output = r.i32();
      s.weight = pointer<int8_t>();
      s.layout = layout();
      if (r.u8()) {
        PackedWeightLayout p;
        p.isa = r.enumeration(PackIsa::Amx, "pack isa");
        p.k = r.i64(), p.n = r.i64(), p.nr = r.i32();
        s.packed = p;
      }
      s.colsum = pointer<int32_t>();
      s.k = r.i64(), s.n = r.i64();
      s.bias = pointer<float>(), s.wScale = pointer<float>();
      s.wScaleCount = r.i64();
      s.xScale = r.i32(), s.xZeroPoint = r.i32(), s.outScale = r.i32(), s.outZeroPoint = r.i32();
      s.xScalePerRow = r.u8();
      s.xScaleConst = pointer<float>();
      s.xZeroPointConst = pointer<uint8_t>();
      s.outScaleConst = pointer<float>();
      s.outZeroPointConst = pointer<void>();
      s.extras = r.vec<TensorId>(), s.extraPerColumn = r.bools();
      s.epilogue = program();
      s.provider = choice();
      s.columnGroups = r.i64();
      return QLinear{s, outType};
    }
    case 21: {
      GatherND g{};
      g.data = r.i32(), g.indices = r.i32(), g.batchDims = r.i32(), g.out = r.i32();
      return g;
    }
    case 22: {
      GatherElements g{};
      g.data = r.i32(), g.indices = r.i32(), g.axis = r.i32(), g.out = r.i32();
      return g;
    }
    case 23: {
      TokenLayout t{};
      t.masks = r.vec<TensorId>(), t.batch = r.i32(), t.seq = r.i32(), t.out = r.i32();
      return t;
    }
    case 24: {
      PackTokens t{};
      t.in = r.i32(), t.layout = r.i32(), t.out = r.i32();
      return t;
    }
    case 25: {
      UnpackTokens t{};
      t.in = r.i32(), t.layout = r.i32(), t.out = r.i32();
      return t;
    }
    case 26: {
      EmbeddingSum e{};
      e.tables = r.vec<TensorId>(), e.indices = r.vec<TensorId>();
      e.layout = r.i32(), e.out = r.i32();
      return e;
    }
    }
    if (r.error.empty())
      r.error = "unknown step recipe " + std::to_string(index);
    return Copy{};
  }
};

static_assert(std::variant_size_v<StepRecipe::Call> == 27,
              "a new recipe needs its SpecWriter and SpecReader cases and a format version bump");

// ---- Kernel options ---------------------------------------------------------
void writeFeatures(Writer &w, const x86::CpuFeatures &f) {
  w.u32(uint32_t(x86::CpuFeatures::flags().size()));
  for (const x86::CpuFeatures::Flag &flag : x86::CpuFeatures::flags())
    w.u8(f.*flag.field);
}
x86::CpuFeatures readFeatures(Reader &r) {
  x86::CpuFeatures f;
  uint32_t n = r.count(1);
  if (n != x86::CpuFeatures::flags().size() && r.error.empty())
    r.error = "the image lists " + std::to_string(n) + " CPU features, this Octet knows " +
              std::to_string(x86::CpuFeatures::flags().size());
  for (const x86::CpuFeatures::Flag &flag : x86::CpuFeatures::flags())
    f.*flag.field = r.u8() != 0;
  return f;
}

} // namespace

bool planUsesOneDnn(const Plan &plan) {
  for (const auto &step : plan.steps)
    if (step->kind().find("onednn") != std::string::npos)
      return true;
  return false;
}

Status writePlanImage(const Plan &plan, const KernelOptions &options,
                      const x86::KernelCodeCapture &capture, PlanImage &out) {
  out = PlanImage();
  // The Plan's constants, and the bf16 panels buildStep packed into recipes
  // (--precision bf16): they are stored instead of the f32 weights.
  std::vector<ConstantRange> ranges = plan.constants;
  for (const auto &step : plan.steps)
    if (const auto *linear =
            step->recipe ? std::get_if<recipe::Linear>(&step->recipe->call) : nullptr;
        linear && linear->bf16Packed)
      ranges.push_back({linear->bf16Packed.get(), linear->bf16PackedBytes});
  ConstantEncoder constants(ranges);
  Writer body;

  // Kernels: identical code is stored once.
  std::map<std::vector<uint8_t>, size_t> codeOffset;
  Writer kernels;
  kernels.u32(uint32_t(capture.kernels().size()));
  for (const x86::KernelCodeCapture::Kernel &k : capture.kernels()) {
    auto [it, inserted] = codeOffset.try_emplace(k.code, 0);
    if (inserted) {
      out.code.resize((out.code.size() + kAlign - 1) / kAlign * kAlign, 0xCC); // int3 padding
      it->second = out.code.size();
      out.code.insert(out.code.end(), k.code.begin(), k.code.end());
    }
    kernels.str(k.name);
    kernels.u64(it->second);
    kernels.u64(k.code.size());
  }
  out.kernelCalls = capture.kernels().size();
  out.kernels = codeOffset.size();

  body.u32(uint32_t(plan.scalars.size()));
  for (const Scalar &s : plan.scalars) {
    body.u8(uint8_t(s.kind)), body.i64(s.value), body.i32(s.input), body.i32(s.dim);
    body.i32(s.a), body.i32(s.b), body.i32(s.c), body.u8(uint8_t(s.predicate));
    body.str(s.what);
  }
  body.u32(uint32_t(plan.tensors.size()));
  for (size_t t = 0; t < plan.tensors.size(); ++t) {
    const TensorInfo &info = plan.tensors[t];
    body.str(info.name), body.u8(uint8_t(info.dtype)), body.vec(info.shape);
    body.u8(uint8_t(info.storage)), body.i32(info.index);
    if (!constants.encode(info.constant, body))
      return Status::error("tensor " + std::to_string(t) + " ('" + info.name +
                           "') points at bytes outside the Plan's constant ranges");
    body.i32(info.viewOffset), body.vec(info.viewStrides);
  }
  body.vec(plan.arenaSlots);
  for (const std::vector<IoInfo> *ios : {&plan.inputs, &plan.outputs}) {
    body.u32(uint32_t(ios->size()));
    for (const IoInfo &io : *ios) {
      body.str(io.name), body.u8(uint8_t(io.dtype)), body.vec(io.dims);
      body.u32(uint32_t(io.dimNames.size()));
      for (const std::string &n : io.dimNames)
        body.str(n);
      body.i32(io.tensor), body.u8(io.checkRange), body.i64(io.rangeBegin), body.i64(io.rangeEnd);
      body.str(io.rangeWhy);
    }
  }
  body.u32(uint32_t(plan.steps.size()));
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step &step = *plan.steps[i];
    if (!step.recipe)
      return Status::error("step " + std::to_string(i) + " (" + step.kind() + " at '" +
                           step.location + "') was not built from a recipe");
    body.str(step.location);
    body.u8(uint8_t(step.recipe->call.index()));
    SpecWriter writer{body, constants, {}};
    std::visit(writer, step.recipe->call);
    if (!writer.error.empty())
      return Status::error(writer.error + " (step " + std::to_string(i) + ", '" + step.location +
                           "')");
  }

  Writer table;
  constants.finish(table, out.constants);

  Writer rest;              // everything the plan checksum covers
  rest.str(options.target); // messages add the features it stands for
  writeFeatures(rest, options.cpu);
  rest.u8(uint8_t(options.gemm));
  rest.u8(options.allowAvx512);
  for (const Writer *part : {&table, &kernels, &body})
    rest.bytes.insert(rest.bytes.end(), part->bytes.begin(), part->bytes.end());

  Writer header;
  for (char c : kMagic)
    header.u8(uint8_t(c));
  header.u32(kPlanFormatVersion);
  header.str(OCTET_VERSION_STRING);
  header.u64(checksum(rest.bytes.data(), rest.bytes.size()));
  header.u64(checksum(out.constants.data(), out.constants.size()));
  header.u64(checksum(out.code.data(), out.code.size()));
  out.plan = std::move(header.bytes);
  out.plan.insert(out.plan.end(), rest.bytes.begin(), rest.bytes.end());
  return Status();
}

namespace {
Status corrupt(const std::string &why) {
  return Status::error("the compiled model is corrupt: " + why);
}

/// Everything before the scalars: the header (versions and checksums checked,
/// the plan and code checksums verified), the kernel options and the tables
/// of constant ranges and kernels. `r` is left at the scalars.
Status readHead(const PlanImageView &image, Reader &r, PlanImageInfo &info, KernelOptions &options,
                uint64_t &constantsSum) {
  char magic[sizeof(kMagic)];
  if (!r.take(magic, sizeof(magic)) || std::memcmp(magic, kMagic, sizeof(kMagic)) != 0)
    return Status::error("not an Octet compiled model (no plan header)");
  info.formatVersion = r.u32();
  info.octetVersion = r.str();
  if (!r.error.empty())
    return corrupt(r.error);
  if (info.formatVersion != kPlanFormatVersion || info.octetVersion != OCTET_VERSION_STRING)
    return Status::error("the model was compiled by Octet " + info.octetVersion + " (plan format " +
                         std::to_string(info.formatVersion) + "); this is Octet " +
                         OCTET_VERSION_STRING + " (plan format " +
                         std::to_string(kPlanFormatVersion) + "): compile it again");
  uint64_t planSum = r.u64();
  constantsSum = r.u64();
  uint64_t codeSum = r.u64();
  if (!r.error.empty())
    return corrupt(r.error);
  const size_t restStart = r.offset();
  if (checksum(image.plan + restStart, image.planBytes - restStart) != planSum)
    return corrupt("the plan section's checksum does not match");
  if (checksum(image.code, image.codeBytes) != codeSum)
    return corrupt("the code section's checksum does not match");
  info.target = r.str();
  info.features = readFeatures(r);
  options.cpu = info.features;
  options.target = info.target;
  options.gemm = r.enumeration(KernelOptions::Gemm::OneDnn, "GEMM provider");
  options.allowAvx512 = r.u8() != 0;
  for (uint32_t i = 0, n = r.count(16); i < n && r.error.empty(); ++i) {
    uint64_t offset = r.u64(), bytes = r.u64();
    if (offset > image.constantsBytes || bytes > image.constantsBytes - offset)
      return corrupt("constant range " + std::to_string(i) + " lies outside the constants section");
    if ((reinterpret_cast<uintptr_t>(image.constants) + offset) % kAlign != 0)
      return corrupt("constant range " + std::to_string(i) + " is not 64-byte aligned");
    info.constants.push_back({image.constants + offset, size_t(bytes)});
  }
  for (uint32_t i = 0, n = r.count(16); i < n && r.error.empty(); ++i) {
    PlanImageInfo::Kernel k;
    k.name = r.str();
    k.offset = r.u64(), k.bytes = r.u64();
    if (k.offset > image.codeBytes || k.bytes > image.codeBytes - k.offset)
      return corrupt("kernel " + std::to_string(i) + " lies outside the code section");
    info.kernels.push_back(std::move(k));
  }
  if (!r.error.empty())
    return corrupt(r.error);
  return Status();
}
} // namespace

Status describePlanImage(const PlanImageView &image, PlanImageInfo &info) {
  info = PlanImageInfo();
  Reader r(image.plan, image.planBytes);
  KernelOptions options;
  uint64_t constantsSum = 0;
  return readHead(image, r, info, options, constantsSum);
}

Status readPlanImage(const PlanImageView &image, std::shared_ptr<const void> owner,
                     std::unique_ptr<Plan> &out, KernelOptions *optionsOut) {
  Reader r(image.plan, image.planBytes);
  PlanImageInfo info;
  KernelOptions options;
  uint64_t constantsSum = 0;
  if (Status status = readHead(image, r, info, options, constantsSum); !status.ok())
    return status;
  std::string missing = info.features.missingOn(x86::CpuFeatures::host());
  if (!missing.empty())
    return Status::error("this CPU does not support the model's target '" + info.target + "' (" +
                         info.features.describe() + "): it lacks " + missing +
                         " (it has: " + x86::CpuFeatures::host().describe() + ")");
  ConstantDecoder constants;
  for (const ConstantRange &range : info.constants) {
    constants.data.push_back(static_cast<const uint8_t *>(range.data));
    constants.bytes.push_back(range.bytes);
  }
  std::vector<x86::KernelCodeReplay::Kernel> kernels;
  for (const PlanImageInfo::Kernel &k : info.kernels)
    kernels.push_back({k.name, image.code + k.offset, size_t(k.bytes)});

  auto plan = std::make_unique<Plan>();
  plan->scalars.resize(r.count(30));
  for (Scalar &s : plan->scalars) {
    s.kind = r.enumeration(Scalar::Kind::PackedDim, "scalar kind");
    s.value = r.i64(), s.input = r.i32(), s.dim = r.i32();
    s.a = r.i32(), s.b = r.i32(), s.c = r.i32();
    s.predicate = r.enumeration(Scalar::Predicate::Ge, "predicate");
    s.what = r.str();
  }
  plan->tensors.resize(r.count(20));
  for (TensorInfo &t : plan->tensors) {
    t.name = r.str();
    t.dtype = r.enumeration(kLastDType, "dtype");
    t.shape = r.vec<ScalarId>();
    t.storage = r.enumeration(Storage::View, "storage");
    t.index = r.i32();
    t.constant = constants.decode(r);
    t.viewOffset = r.i32();
    t.viewStrides = r.vec<ScalarId>();
  }
  plan->arenaSlots = r.vec<ScalarId>();
  for (std::vector<IoInfo> *ios : {&plan->inputs, &plan->outputs}) {
    ios->resize(r.count(30));
    for (IoInfo &io : *ios) {
      io.name = r.str();
      io.dtype = r.enumeration(kLastDType, "dtype");
      io.dims = r.vec<int64_t>();
      io.dimNames.resize(r.count(4));
      for (std::string &n : io.dimNames)
        n = r.str();
      io.tensor = r.i32(), io.checkRange = r.u8() != 0;
      io.rangeBegin = r.i64(), io.rangeEnd = r.i64();
      io.rangeWhy = r.str();
    }
  }
  if (!r.error.empty())
    return corrupt(r.error);

  // The steps: the same factories on the same recipes, with the kernels' code
  // taken from the image instead of generated.
  x86::KernelCodeReplay replay(std::move(kernels));
  uint32_t numSteps = r.count(2);
  for (uint32_t i = 0; i < numSteps; ++i) {
    std::string location = r.str();
    uint8_t index = r.u8();
    SpecReader reader{r, constants};
    StepRecipe recipe{reader.read(index)};
    if (!r.error.empty())
      return corrupt(r.error + " (step " + std::to_string(i) + ", '" + location + "')");
    std::string error;
    StepPtr step = buildStep(recipe, options, error);
    if (!step)
      return corrupt("step " + std::to_string(i) + " ('" + location +
                     "') cannot be rebuilt: " + error);
    step->location = std::move(location);
    plan->steps.push_back(std::move(step));
  }
  if (replay.used() != replay.size())
    return corrupt("the steps use " + std::to_string(replay.used()) + " of the " +
                   std::to_string(replay.size()) + " kernels in the code section");
  if (r.offset() != image.planBytes)
    return corrupt(std::to_string(image.planBytes - r.offset()) +
                   " bytes follow the last step in the plan section");
  for (size_t i = 0; i < constants.data.size(); ++i)
    plan->constants.push_back({constants.data[i], constants.bytes[i]});
  // Reading every weight page costs more than the rest of opening (BERT-base:
  // ~170 MB), so the weights are checked before the first run instead.
  plan->firstRunCheck = std::make_shared<const FirstRunCheck>(
      [constants = image.constants, bytes = image.constantsBytes, constantsSum]() -> std::string {
        if (checksum(constants, bytes) != constantsSum)
          return "the compiled model is corrupt: the constants (weights) section's checksum "
                 "does not match";
        return "";
      });
  plan->keepAlive.push_back(std::move(owner));
  // Every id the tables and recipes hold was read from the file: the Plan is
  // checked whole here, so no caller can get one that is malformed (found by
  // test/fuzz plan_image: an output tensor whose output slot names another).
  if (Status valid = validatePlan(*plan); !valid.ok())
    return Status::error("the compiled model is corrupt: " + valid.message());
  if (optionsOut)
    *optionsOut = options;
  out = std::move(plan);
  return Status();
}

uint64_t imageChecksum(const uint8_t *data, size_t bytes) { return checksum(data, bytes); }

} // namespace octet::rt
