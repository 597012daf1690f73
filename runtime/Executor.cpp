//===- Executor.cpp - one run of a Plan ------------------------------------===//
#include "runtime/Executor.h"
#include "compiler/codegen/HugePages.h"
#include "compiler/codegen/x86/NextStepPrefetch.h"
#include "runtime/NextReadsCache.h"
#include "runtime/TokenLayout.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <omp.h>
#include <string>

namespace octet::rt {

namespace {

constexpr size_t kAlignment = 64;
/// Arenas up to this size stay cached per thread between runs; larger ones are
/// freed after the run so an idle thread does not hold them.
constexpr size_t kMaxCachedArena = size_t(512) << 20;

std::string dimsText(const int64_t *dims, int rank) {
  return shapeString(std::vector<int64_t>(dims, dims + std::max(rank, 0)));
}

/// The input's expected dims with symbolic names: [batch, sequence, 64].
std::string expectedDimsText(const IoInfo &io) {
  std::string text = "[";
  for (size_t d = 0; d < io.dims.size(); ++d) {
    text += d ? ", " : "";
    if (io.dims[d] >= 0)
      text += std::to_string(io.dims[d]);
    else if (d < io.dimNames.size() && !io.dimNames[d].empty())
      text += io.dimNames[d];
    else
      text += "?";
  }
  return text + "]";
}

bool isIntegerDType(DType dtype) {
  return dtype == DType::I64 || dtype == DType::I32 || dtype == DType::I8 || dtype == DType::U8 ||
         dtype == DType::Bool;
}

bool validDType(DType dtype) { return uint8_t(dtype) <= uint8_t(kLastDType); }

size_t alignUp(size_t value) { return (value + kAlignment - 1) / kAlignment * kAlignment; }

/// Product of dims as a byte count, false on overflow.
bool checkedBytes(const int64_t *dims, size_t rank, size_t elementBytes, size_t &bytes) {
  uint64_t total = elementBytes;
  for (size_t i = 0; i < rank; ++i)
    if (dims[i] < 0 || __builtin_mul_overflow(total, uint64_t(dims[i]), &total))
      return false;
  if (total > uint64_t(std::numeric_limits<int64_t>::max()))
    return false;
  bytes = size_t(total);
  return true;
}

// ---- Errors ------------------------------------------------------------------

struct Failure {
  RunError kind = RunError::None;
  std::string message;
};

// ---- Token-id ranges ---------------------------------------------------------

/// One branch-free pass (it vectorizes): is any element outside [begin, end)?
template <typename T> bool anyOutOfRange(const T *data, int64_t count, int64_t begin, int64_t end) {
  // v in [begin, end) <=> (v - begin) mod 2^64 < end - begin, for end >= begin.
  const uint64_t low = uint64_t(begin);
  const uint64_t width = end > begin ? uint64_t(end) - uint64_t(begin) : 0;
  unsigned bad = 0;
  for (int64_t i = 0; i < count; ++i)
    bad |= unsigned(uint64_t(int64_t(data[i])) - low >= width);
  return bad != 0;
}

template <typename T>
int64_t firstOutOfRange(const T *data, int64_t count, int64_t begin, int64_t end) {
  for (int64_t i = 0; i < count; ++i)
    if (int64_t(data[i]) < begin || int64_t(data[i]) >= end)
      return i;
  return -1;
}

template <typename T>
bool checkRangeOf(const void *data, int64_t count, int64_t begin, int64_t end, int64_t &badIndex,
                  int64_t &badValue) {
  const T *values = static_cast<const T *>(data);
  if (!anyOutOfRange(values, count, begin, end))
    return true;
  badIndex = firstOutOfRange(values, count, begin, end);
  badValue = int64_t(values[badIndex]);
  return false;
}

std::string indexTuple(int64_t flat, const RunTensor &tensor) {
  int64_t index[kMaxRank] = {};
  for (int d = tensor.rank; d-- > 0;) {
    index[d] = tensor.dims[d] ? flat % tensor.dims[d] : 0;
    flat = tensor.dims[d] ? flat / tensor.dims[d] : 0;
  }
  return dimsText(index, tensor.rank);
}

// ---- Input validation --------------------------------------------------------

/// The caller's array of `what` ("inputs", "outputs"): `count` of them where
/// the Plan has `expected`, and not null unless empty.
bool checkTensorArray(const char *what, size_t expected, const RunTensor *tensors, size_t count,
                      Failure &f) {
  if (count != expected) {
    f = {RunError::InvalidArgument, "expected " + std::to_string(expected) + " " + what +
                                        ", got " + std::to_string(count)};
    return false;
  }
  if (count && !tensors) {
    f = {RunError::InvalidArgument, std::string("the ") + what + " array is null"};
    return false;
  }
  return true;
}

bool validateInputs(const Plan &plan, const RunTensor *inputs, size_t numInputs, Failure &f) {
  if (!checkTensorArray("inputs", plan.inputs.size(), inputs, numInputs, f))
    return false;
  for (size_t i = 0; i < numInputs; ++i) {
    const IoInfo &io = plan.inputs[i];
    const RunTensor &in = inputs[i];
    const std::string where = "input " + std::to_string(i) + " '" + io.name + "'";
    if (in.dtype != io.dtype) {
      f = {RunError::InvalidInput, where + " has dtype " +
                                       (validDType(in.dtype) ? dtypeName(in.dtype) : "(invalid)") +
                                       ", expected " + dtypeName(io.dtype)};
      return false;
    }
    if (in.rank != int32_t(io.dims.size())) {
      f = {RunError::InvalidInput, where + " has rank " + std::to_string(in.rank) + ", expected " +
                                       std::to_string(io.dims.size()) + " " + expectedDimsText(io)};
      return false;
    }
    for (int d = 0; d < in.rank; ++d) {
      if (in.dims[d] < 0) {
        f = {RunError::InvalidInput, where + " has a negative dim " + std::to_string(d) + " (" +
                                         dimsText(in.dims, in.rank) + ")"};
        return false;
      }
      if (io.dims[d] >= 0 && in.dims[d] != io.dims[d]) {
        f = {RunError::InvalidInput, where + " has shape " + dimsText(in.dims, in.rank) +
                                         ", expected " + expectedDimsText(io) + ": dim " +
                                         std::to_string(d) + " must be " +
                                         std::to_string(io.dims[d])};
        return false;
      }
    }
    size_t bytes = 0;
    if (!checkedBytes(in.dims, size_t(in.rank), dtypeBytes(in.dtype), bytes)) {
      f = {RunError::InvalidInput, where + " shape " + dimsText(in.dims, in.rank) +
                                       " is too large (its byte size overflows)"};
      return false;
    }
    if (bytes && !in.data) {
      f = {RunError::InvalidArgument,
           where + " has shape " + dimsText(in.dims, in.rank) + " but its data pointer is null"};
      return false;
    }
  }

  // Inputs that name the same symbolic dim must agree.
  for (size_t i = 0; i < numInputs; ++i) {
    const IoInfo &io = plan.inputs[i];
    for (size_t d = 0; d < io.dimNames.size(); ++d) {
      if (io.dims[d] >= 0 || io.dimNames[d].empty())
        continue;
      // Compare with the first occurrence of the same name.
      bool done = false;
      for (size_t j = 0; j <= i && !done; ++j) {
        const IoInfo &other = plan.inputs[j];
        for (size_t e = 0; e < other.dimNames.size() && !done; ++e) {
          if (j == i && e == d) {
            done = true; // this is the first occurrence
            break;
          }
          if (other.dims[e] >= 0 || other.dimNames[e] != io.dimNames[d])
            continue;
          done = true;
          if (inputs[j].dims[e] != inputs[i].dims[d]) {
            f = {RunError::InvalidInput,
                 "inputs disagree on '" + io.dimNames[d] + "': input " + std::to_string(j) + " '" +
                     other.name + "' dim " + std::to_string(e) + " is " +
                     std::to_string(inputs[j].dims[e]) + " but input " + std::to_string(i) + " '" +
                     io.name + "' dim " + std::to_string(d) + " is " +
                     std::to_string(inputs[i].dims[d])};
            return false;
          }
        }
      }
    }
  }

  // Token ids: every element in [rangeBegin, rangeEnd).
  for (size_t i = 0; i < numInputs; ++i) {
    const IoInfo &io = plan.inputs[i];
    const RunTensor &in = inputs[i];
    if (!io.checkRange)
      continue;
    int64_t count = in.numElements(), badIndex = -1, badValue = 0;
    bool ok = true;
    switch (in.dtype) {
    case DType::I64:
      ok = checkRangeOf<int64_t>(in.data, count, io.rangeBegin, io.rangeEnd, badIndex, badValue);
      break;
    case DType::I32:
      ok = checkRangeOf<int32_t>(in.data, count, io.rangeBegin, io.rangeEnd, badIndex, badValue);
      break;
    case DType::I8:
      ok = checkRangeOf<int8_t>(in.data, count, io.rangeBegin, io.rangeEnd, badIndex, badValue);
      break;
    case DType::U8:
    case DType::Bool:
      ok = checkRangeOf<uint8_t>(in.data, count, io.rangeBegin, io.rangeEnd, badIndex, badValue);
      break;
    default:
      break; // validatePlan allows ranges on integer inputs only
    }
    if (!ok) {
      std::string message = "input " + std::to_string(i) + " '" + io.name + "' element " +
                            indexTuple(badIndex, in) + " is " + std::to_string(badValue) +
                            ", outside the valid range [" + std::to_string(io.rangeBegin) + ", " +
                            std::to_string(io.rangeEnd) + ")";
      if (!io.rangeWhy.empty())
        message += " (" + io.rangeWhy + ")";
      f = {RunError::InvalidInput, message};
      return false;
    }
  }
  return true;
}

// ---- Scalars -----------------------------------------------------------------

/// `packedRows`: the real tokens of a packed batch (Scalar::Kind::PackedDim),
/// or -1 before (or without) packing.
bool evaluateScalars(const Plan &plan, const RunTensor *inputs, std::vector<int64_t> &values,
                     Failure &f, int64_t packedRows = -1) {
  values.resize(plan.scalars.size());
  for (size_t i = 0; i < plan.scalars.size(); ++i) {
    const Scalar &s = plan.scalars[i];
    auto what = [&] { return s.what.empty() ? "scalar s" + std::to_string(i) : s.what; };
    const int64_t a = s.a >= 0 ? values[s.a] : 0, b = s.b >= 0 ? values[s.b] : 0;
    int64_t r = 0;
    bool overflow = false;
    switch (s.kind) {
    case Scalar::Kind::Constant:
      r = s.value;
      break;
    case Scalar::Kind::InputDim:
      r = inputs[s.input].dims[s.dim];
      break;
    case Scalar::Kind::PackedDim:
      r = packedRows < 0 ? a : s.dim == 0 ? 1 : packedRows;
      break;
    case Scalar::Kind::InputElement: {
      const RunTensor &t = inputs[s.input];
      const std::string element =
          "element " + std::to_string(s.dim) + " of input '" + plan.inputs[s.input].name + "'";
      if (s.dim >= t.numElements()) {
        f = {RunError::InvalidInput, what() + ": reads " + element + ", which has " +
                                         std::to_string(t.numElements()) + " elements"};
        return false;
      }
      switch (t.dtype) {
      case DType::I64:
        r = static_cast<const int64_t *>(t.data)[s.dim];
        break;
      case DType::I32:
        r = static_cast<const int32_t *>(t.data)[s.dim];
        break;
      case DType::I8:
        r = static_cast<const int8_t *>(t.data)[s.dim];
        break;
      case DType::U8:
        r = static_cast<const uint8_t *>(t.data)[s.dim];
        break;
      default:
        f = {RunError::InvalidInput, what() + ": " + element + " is " + dtypeName(t.dtype) +
                                         ", not an integer"};
        return false;
      }
      if (r < 0 || r > kMaxInputElementSize) {
        f = {RunError::InvalidInput, what() + ": " + element + " is " + std::to_string(r) +
                                         ", not a size in [0, " +
                                         std::to_string(kMaxInputElementSize) + "]"};
        return false;
      }
      break;
    }
    case Scalar::Kind::Add:
    case Scalar::Kind::Sub:
    case Scalar::Kind::Mul:
    case Scalar::Kind::DivS:
    case Scalar::Kind::FloorDivS:
    case Scalar::Kind::CeilDivS:
    case Scalar::Kind::RemS:
    case Scalar::Kind::MinS:
    case Scalar::Kind::MaxS: {
      // The same semantics the Plan builder folded constants with.
      ArithStatus status = applyIntBinary(*intBinaryOpOf(s.kind), a, b, r);
      if (status == ArithStatus::DivisionByZero) {
        f = {RunError::InvalidInput,
             what() + ": division by zero (" + std::to_string(a) + " divided by 0)"};
        return false;
      }
      overflow = status == ArithStatus::Overflow;
      break;
    }
    case Scalar::Kind::Cmp:
      r = compareInt(intPredicateOf(s.predicate), a, b);
      break;
    case Scalar::Kind::Select:
      r = a != 0 ? b : values[s.c];
      break;
    case Scalar::Kind::Broadcast:
      if (a == b || b == 1)
        r = a;
      else if (a == 1)
        r = b;
      else {
        f = {RunError::InvalidInput, what() + ": sizes " + std::to_string(a) + " and " +
                                         std::to_string(b) + " do not broadcast"};
        return false;
      }
      break;
    case Scalar::Kind::Equal:
      if (a != b) {
        f = {RunError::InvalidInput,
             what() + ": " + std::to_string(a) + " and " + std::to_string(b) + " must be equal"};
        return false;
      }
      r = a;
      break;
    }
    if (overflow) {
      f = {RunError::InvalidInput, what() + ": integer overflow (from " + std::to_string(a) +
                                       " and " + std::to_string(b) + ")"};
      return false;
    }
    values[i] = r;
  }
  return true;
}

// ---- Memory ------------------------------------------------------------------

void *alignedAllocate(size_t bytes) {
  return std::aligned_alloc(kAlignment, alignUp(std::max<size_t>(bytes, 1)));
}

/// An arena of 2 MiB or more lies on 2 MiB pages where the kernel gives them
/// (compiler/codegen/HugePages.h): a packed batch's attention reads each
/// head's K and V rows a QKV row apart, a 4 KiB page each, and on 4 KiB pages
/// its packing kernels waited on page walks (docs/decisions.md).
void *arenaAllocate(size_t bytes) {
  return bytes < kHugePageBytes ? alignedAllocate(bytes) : hugePageAllocate(bytes);
}

/// The arena buffer a thread reuses across runs (and across Plans).
struct ArenaCache {
  void *data = nullptr;
  size_t bytes = 0;
  bool busy = false; // a run on this thread holds it (a step that runs a Plan itself)
  ~ArenaCache() { std::free(data); }
};
thread_local ArenaCache arenaCache;

/// This run's arena: the thread's cached buffer when free and big enough.
class ArenaLease {
public:
  bool acquire(size_t bytes) {
    if (bytes == 0)
      return true;
    if (!arenaCache.busy && bytes <= kMaxCachedArena) {
      if (arenaCache.bytes < bytes) {
        std::free(arenaCache.data);
        arenaCache.data = nullptr;
        arenaCache.bytes = 0;
        void *fresh = arenaAllocate(bytes);
        if (!fresh)
          return false;
        arenaCache.data = fresh;
        arenaCache.bytes = alignUp(bytes);
      }
      arenaCache.busy = true;
      cached_ = true;
      data_ = arenaCache.data;
      return true;
    }
    data_ = arenaAllocate(bytes);
    return data_ != nullptr;
  }
  char *data() const { return static_cast<char *>(data_); }
  ~ArenaLease() {
    if (cached_)
      arenaCache.busy = false;
    else
      std::free(data_);
  }

private:
  void *data_ = nullptr;
  bool cached_ = false;
};

/// Frees the outputs execute() allocated unless the run succeeds.
class OutputGuard {
public:
  OutputGuard(RunTensor *outputs, size_t count) : outputs_(outputs), count_(count) {}
  void commit() { committed_ = true; }
  ~OutputGuard() {
    if (committed_)
      return;
    for (size_t i = 0; i < count_; ++i)
      if (outputs_[i].allocated) {
        std::free(outputs_[i].data);
        outputs_[i].data = nullptr;
        outputs_[i].allocated = false;
        outputs_[i].bytes = 0;
      }
  }

private:
  RunTensor *outputs_;
  size_t count_;
  bool committed_ = false;
};

/// Copies a strided tensor into a dense buffer (an output that is not written in place).
void copyStrided(const char *source, const std::vector<int64_t> &dims,
                 const std::vector<int64_t> &strides, size_t elementBytes, char *dest) {
  int64_t count = 1;
  for (int64_t d : dims)
    count *= d;
  if (count == 0)
    return;
  std::vector<int64_t> index(dims.size(), 0);
  int64_t offset = 0;
  for (int64_t n = 0; n < count; ++n) {
    std::memcpy(dest + n * elementBytes, source + offset * int64_t(elementBytes), elementBytes);
    for (size_t d = dims.size(); d-- > 0;) {
      offset += strides[d];
      if (++index[d] < dims[d])
        break;
      offset -= strides[d] * dims[d];
      index[d] = 0;
    }
  }
}

std::string tensorWhere(const Plan &plan, TensorId t) {
  return "tensor t" + std::to_string(t) + " '" + plan.tensors[t].name + "'";
}

// ---- The run -----------------------------------------------------------------

bool run(const Plan &plan, const RunTensor *inputs, size_t numInputs, RunTensor *outputs,
         size_t numOutputs, Failure &f, RunProfile *profile, const StepObserver *observer) {
  if (!checkTensorArray("outputs", plan.outputs.size(), outputs, numOutputs, f))
    return false;
  for (size_t i = 0; i < numOutputs; ++i)
    outputs[i].allocated = false;
  if (!validateInputs(plan, inputs, numInputs, f))
    return false;

  ExecContext ctx(plan);
  if (!evaluateScalars(plan, inputs, ctx.scalars_, f))
    return false;
  const std::vector<int64_t> &scalars = ctx.scalars_;

  // Every tensor's shape must be non-negative and its byte size representable.
  const size_t numTensors = plan.tensors.size();
  std::vector<size_t> tensorBytes(numTensors);
  for (size_t t = 0; t < numTensors; ++t) {
    const TensorInfo &info = plan.tensors[t];
    int64_t dims[64];
    size_t rank = std::min<size_t>(info.shape.size(), 64);
    for (size_t d = 0; d < rank; ++d)
      dims[d] = scalars[info.shape[d]];
    if (!checkedBytes(dims, rank, dtypeBytes(info.dtype), tensorBytes[t])) {
      f = {RunError::InvalidInput, tensorWhere(plan, TensorId(t)) + " has shape " +
                                       shapeString(std::vector<int64_t>(dims, dims + rank)) +
                                       " for these inputs, which is negative or too large"};
      return false;
    }
    // Inputs are bound by their dims: the plan's shape must be the caller's.
    if (info.storage == Storage::Input) {
      const RunTensor &in = inputs[info.index];
      if (!std::equal(dims, dims + rank, in.dims, in.dims + in.rank)) {
        f = {RunError::Runtime,
             "malformed plan: " + tensorWhere(plan, TensorId(t)) + " has shape " +
                 shapeString(std::vector<int64_t>(dims, dims + rank)) + " but input " +
                 std::to_string(info.index) + " is " + dimsText(in.dims, in.rank)};
        return false;
      }
    }
  }

  // Output shapes, then caller capacities, then runtime allocations.
  for (size_t i = 0; i < numOutputs; ++i) {
    const IoInfo &io = plan.outputs[i];
    const TensorInfo &info = plan.tensors[io.tensor];
    RunTensor &out = outputs[i];
    out.dtype = info.dtype;
    out.rank = int32_t(info.shape.size());
    for (int d = 0; d < out.rank; ++d)
      out.dims[d] = scalars[info.shape[d]];
  }
  for (size_t i = 0; i < numOutputs; ++i) {
    RunTensor &out = outputs[i];
    size_t needed = tensorBytes[plan.outputs[i].tensor];
    if (out.data && out.bytes < needed) {
      f = {RunError::OutputTooSmall, "output " + std::to_string(i) + " '" + plan.outputs[i].name +
                                         "' needs " + std::to_string(needed) + " bytes (" +
                                         dtypeName(out.dtype) + " " + dimsText(out.dims, out.rank) +
                                         ") but its buffer holds " + std::to_string(out.bytes)};
      return false;
    }
  }
  OutputGuard outputGuard(outputs, numOutputs);
  for (size_t i = 0; i < numOutputs; ++i) {
    RunTensor &out = outputs[i];
    if (out.data)
      continue;
    size_t needed = tensorBytes[plan.outputs[i].tensor];
    out.data = alignedAllocate(needed);
    if (!out.data) {
      f = {RunError::Runtime, "out of memory allocating output " + std::to_string(i) + " '" +
                                  plan.outputs[i].name + "' (" + std::to_string(needed) +
                                  " bytes)"};
      return false;
    }
    out.bytes = needed;
    out.allocated = true;
  }

  // Arena: each slot at a 64-byte aligned offset of one allocation.
  std::vector<size_t> slotOffsets(plan.arenaSlots.size()), slotBytes(plan.arenaSlots.size());
  size_t arenaBytes = 0;
  for (size_t s = 0; s < plan.arenaSlots.size(); ++s) {
    int64_t bytes = scalars[plan.arenaSlots[s]];
    if (bytes < 0 || uint64_t(bytes) > (uint64_t(1) << 56)) {
      f = {RunError::InvalidInput, "arena slot " + std::to_string(s) + " would hold " +
                                       std::to_string(bytes) + " bytes for these inputs"};
      return false;
    }
    slotOffsets[s] = arenaBytes;
    slotBytes[s] = size_t(bytes);
    arenaBytes += alignUp(size_t(bytes));
  }
  ArenaLease arena;
  if (!arena.acquire(arenaBytes)) {
    f = {RunError::Runtime, "out of memory allocating the activation arena (" +
                                std::to_string(arenaBytes) + " bytes)"};
    return false;
  }

  // Addresses: non-views first, then views (their base is never a view).
  ctx.addresses_.assign(numTensors, nullptr);
  for (size_t t = 0; t < numTensors; ++t) {
    const TensorInfo &info = plan.tensors[t];
    switch (info.storage) {
    case Storage::Input:
      ctx.addresses_[t] = inputs[info.index].data;
      break;
    case Storage::Output:
      ctx.addresses_[t] = outputs[info.index].data;
      break;
    case Storage::Constant:
      ctx.addresses_[t] = const_cast<void *>(info.constant);
      break;
    case Storage::Arena:
      if (tensorBytes[t] > slotBytes[info.index]) {
        f = {RunError::Runtime, "malformed plan: " + tensorWhere(plan, TensorId(t)) + " needs " +
                                    std::to_string(tensorBytes[t]) + " bytes but arena slot " +
                                    std::to_string(info.index) + " holds " +
                                    std::to_string(slotBytes[info.index])};
        return false;
      }
      ctx.addresses_[t] = arenaBytes ? arena.data() + slotOffsets[info.index] : nullptr;
      break;
    case Storage::View:
      break;
    }
  }
  // Views: their base's address plus their offset, checked to stay inside it.
  auto resolveViews = [&]() -> bool {
  for (size_t t = 0; t < numTensors; ++t) {
    const TensorInfo &info = plan.tensors[t];
    if (info.storage != Storage::View)
      continue;
    const int64_t elementBytes = int64_t(dtypeBytes(info.dtype));
    const int64_t offset = scalars[info.viewOffset];
    // The bytes the view can reach must lie inside its base.
    bool empty = false;
    int64_t low = 0, high = 0, stride = 1;
    bool overflow = __builtin_mul_overflow(offset, elementBytes, &low);
    high = low;
    for (size_t d = info.shape.size(); d-- > 0;) {
      int64_t size = scalars[info.shape[d]];
      int64_t s = info.viewStrides.empty() ? stride : scalars[info.viewStrides[d]];
      if (info.viewStrides.empty())
        overflow |= __builtin_mul_overflow(stride, size, &stride);
      if (size == 0)
        empty = true;
      int64_t reach = 0;
      overflow |= __builtin_mul_overflow(s, size - 1, &reach) ||
                  __builtin_mul_overflow(reach, elementBytes, &reach);
      if (reach < 0)
        overflow |= __builtin_add_overflow(low, reach, &low);
      else
        overflow |= __builtin_add_overflow(high, reach, &high);
    }
    const int64_t baseBytes = int64_t(tensorBytes[info.index]);
    if (!empty && (overflow || low < 0 || high + elementBytes > baseBytes)) {
      f = {RunError::Runtime,
           "malformed plan: view " + tensorWhere(plan, TensorId(t)) + " reaches bytes [" +
               std::to_string(low) + ", " + std::to_string(high + elementBytes) + ") of " +
               tensorWhere(plan, info.index) + ", which has " + std::to_string(baseBytes)};
      return false;
    }
    char *base = static_cast<char *>(ctx.addresses_[info.index]);
    ctx.addresses_[t] = base && !empty ? base + offset * elementBytes : base;
  }
  return true;
  };
  if (!resolveViews())
    return false;

  // After the token_layout step packs the batch: the packed dims and what
  // depends on them again. The arena keeps its padded layout (packed rows
  // never need more bytes); outputs keep their shapes (they are unpacked).
  auto repack = [&](const Step &step) -> bool {
    const TokenLayoutView layout(ctx.data<int64_t>(step.outputs.at(0)));
    if (layout.mode() != TokenMode::Packed)
      return true;
    std::vector<int64_t> padded = ctx.scalars_;
    if (!evaluateScalars(plan, inputs, ctx.scalars_, f, layout.rows()))
      return false;
    for (size_t t = 0; t < numTensors; ++t) {
      const TensorInfo &info = plan.tensors[t];
      int64_t dims[64];
      size_t rank = std::min<size_t>(info.shape.size(), 64);
      bool changed = false;
      for (size_t d = 0; d < rank; ++d) {
        dims[d] = scalars[info.shape[d]];
        changed |= dims[d] != padded[info.shape[d]];
      }
      if (!changed)
        continue;
      size_t bytes = 0;
      const bool fits = checkedBytes(dims, rank, dtypeBytes(info.dtype), bytes) &&
                        bytes <= tensorBytes[t] &&
                        (info.storage == Storage::Arena || info.storage == Storage::View);
      if (!fits) {
        f = {RunError::Runtime, "malformed plan: " + tensorWhere(plan, TensorId(t)) +
                                    " grows or is not in the arena when the batch is packed"};
        return false;
      }
      tensorBytes[t] = bytes;
    }
    return resolveViews();
  };

  if (profile) {
    profile->stepSeconds.assign(plan.steps.size(), 0.0);
    profile->stepWork.assign(plan.steps.size(), Work());
  }
  // The next step's cold first reads, which each step prefetches as it runs
  // where it takes part (compiler/codegen/x86/NextStepPrefetch.h), as this
  // thread's last runs of the same shapes found them (runtime/NextReadsCache.h).
  NextReadsCache::Lease nextReadsCache(plan, omp_get_max_threads());
  nextReadsCache->beginSegment(0, ctx.scalars_);
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step &step = *plan.steps[i];
    // After a token_layout step the shapes change: nothing to publish.
    const x86::NextStepReads *nextReads = i + 1 < plan.steps.size() && !step.definesTokenLayout()
                                              ? &nextReadsCache->readsOf(i + 1, ctx)
                                              : nullptr;
    if (observer && *observer) {
      Status observed = (*observer)(i, ctx);
      if (!observed.ok()) {
        f = {RunError::Runtime, observed.message()};
        return false;
      }
    }
    Status status;
    const auto start =
        profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    try {
      const x86::NextStepReads::Scope published(nextReads);
      status = step.run(ctx);
      if (profile) {
        profile->stepSeconds[i] =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (status.ok())
          profile->stepWork[i] = step.work(ctx);
      }
    } catch (const std::bad_alloc &) {
      status = Status::error("out of memory");
    } catch (const std::exception &e) {
      status = Status::error(e.what());
    } catch (...) {
      status = Status::error("unknown exception");
    }
    if (!status.ok()) {
      f = {RunError::Runtime, "step " + std::to_string(i) + " (" + step.kind() + ") for " +
                                  (step.location.empty() ? "<unknown>" : step.location) + ": " +
                                  status.message()};
      return false;
    }
    if (step.definesTokenLayout()) {
      if (!repack(step))
        return false;
      nextReadsCache->beginSegment(i + 1, ctx.scalars_);
    }
  }

  // Outputs the steps did not write in place (an input, a constant, a view).
  for (size_t i = 0; i < numOutputs; ++i) {
    TensorId t = plan.outputs[i].tensor;
    const TensorInfo &info = plan.tensors[t];
    if (info.storage == Storage::Output && size_t(info.index) == i)
      continue;
    if (tensorBytes[t] == 0)
      continue;
    copyStrided(static_cast<const char *>(ctx.addresses_[t]), ctx.shape(t), ctx.strides(t),
                dtypeBytes(info.dtype), static_cast<char *>(outputs[i].data));
  }
  outputGuard.commit();
  return true;
}

} // namespace

Status validatePlan(const Plan &plan) {
  const size_t numScalars = plan.scalars.size(), numTensors = plan.tensors.size();
  auto scalarOk = [&](ScalarId id) { return id >= 0 && size_t(id) < numScalars; };
  auto tensorOk = [&](TensorId id) { return id >= 0 && size_t(id) < numTensors; };
  auto bad = [](const std::string &message) { return Status::error("malformed plan: " + message); };

  for (size_t i = 0; i < numScalars; ++i) {
    const Scalar &s = plan.scalars[i];
    auto earlier = [&](ScalarId id) { return id >= 0 && size_t(id) < i; };
    const std::string where = "scalar s" + std::to_string(i);
    switch (s.kind) {
    case Scalar::Kind::Constant:
      break;
    case Scalar::Kind::InputDim:
      if (s.input < 0 || size_t(s.input) >= plan.inputs.size() || s.dim < 0 ||
          size_t(s.dim) >= plan.inputs[s.input].dims.size())
        return bad(where + " reads dim " + std::to_string(s.dim) + " of input " +
                   std::to_string(s.input) + ", which does not exist");
      break;
    case Scalar::Kind::InputElement:
      if (s.input < 0 || size_t(s.input) >= plan.inputs.size() || s.dim < 0 ||
          plan.inputs[s.input].dims.size() > 1)
        return bad(where + " reads element " + std::to_string(s.dim) + " of input " +
                   std::to_string(s.input) + ", which is not a 0-D or 1-D input");
      break;
    case Scalar::Kind::PackedDim:
      if (!earlier(s.a) || (s.dim != 0 && s.dim != 1))
        return bad(where + " packs s" + std::to_string(s.a) + " as dim " + std::to_string(s.dim) +
                   ", not an earlier scalar as dim 0 or 1");
      break;
    case Scalar::Kind::Select:
      if (!earlier(s.c))
        return bad(where + " uses s" + std::to_string(s.c) + ", not an earlier scalar");
      [[fallthrough]];
    case Scalar::Kind::Add:
    case Scalar::Kind::Sub:
    case Scalar::Kind::Mul:
    case Scalar::Kind::DivS:
    case Scalar::Kind::FloorDivS:
    case Scalar::Kind::CeilDivS:
    case Scalar::Kind::RemS:
    case Scalar::Kind::MinS:
    case Scalar::Kind::MaxS:
    case Scalar::Kind::Cmp:
    case Scalar::Kind::Broadcast:
    case Scalar::Kind::Equal:
      if (!earlier(s.a) || !earlier(s.b))
        return bad(where + " uses s" + std::to_string(s.a) + " and s" + std::to_string(s.b) +
                   ", not both earlier scalars");
      if (s.kind == Scalar::Kind::Cmp && uint8_t(s.predicate) > uint8_t(Scalar::Predicate::Ge))
        return bad(where + " has an unknown predicate");
      break;
    default:
      return bad(where + " has an unknown kind");
    }
  }
  for (size_t t = 0; t < numTensors; ++t) {
    const TensorInfo &info = plan.tensors[t];
    const std::string where = "tensor t" + std::to_string(t) + " '" + info.name + "'";
    if (!validDType(info.dtype))
      return bad(where + " has an unknown dtype");
    if (info.shape.size() > 64)
      return bad(where + " has rank " + std::to_string(info.shape.size()) + " (at most 64)");
    for (ScalarId id : info.shape)
      if (!scalarOk(id))
        return bad(where + " has a dim s" + std::to_string(id) + " that does not exist");
    switch (info.storage) {
    case Storage::Input:
      if (info.index < 0 || size_t(info.index) >= plan.inputs.size() ||
          plan.inputs[info.index].tensor != TensorId(t))
        return bad(where + " is input " + std::to_string(info.index) +
                   " but that input is not bound to it");
      break;
    case Storage::Output:
      if (info.index < 0 || size_t(info.index) >= plan.outputs.size() ||
          plan.outputs[info.index].tensor != TensorId(t))
        return bad(where + " is output " + std::to_string(info.index) +
                   " but that output is not bound to it");
      break;
    case Storage::Constant:
      if (!info.constant)
        return bad(where + " is a constant without data");
      break;
    case Storage::Arena:
      if (info.index < 0 || size_t(info.index) >= plan.arenaSlots.size())
        return bad(where + " is in arena slot " + std::to_string(info.index) +
                   ", which does not exist");
      break;
    case Storage::View:
      if (!tensorOk(info.index) || plan.tensors[info.index].storage == Storage::View)
        return bad(where + " is a view of t" + std::to_string(info.index) +
                   ", which does not exist or is itself a view");
      if (!scalarOk(info.viewOffset))
        return bad(where + " has no valid view offset");
      if (!info.viewStrides.empty() && info.viewStrides.size() != info.shape.size())
        return bad(where + " has " + std::to_string(info.viewStrides.size()) +
                   " strides for rank " + std::to_string(info.shape.size()));
      for (ScalarId id : info.viewStrides)
        if (!scalarOk(id))
          return bad(where + " has a stride s" + std::to_string(id) + " that does not exist");
      break;
    default:
      return bad(where + " has an unknown storage");
    }
  }
  for (size_t s = 0; s < plan.arenaSlots.size(); ++s)
    if (!scalarOk(plan.arenaSlots[s]))
      return bad("arena slot " + std::to_string(s) + " has no valid size scalar");

  auto checkIo = [&](const IoInfo &io, const char *kind, size_t i) -> Status {
    const std::string where = std::string(kind) + " " + std::to_string(i) + " '" + io.name + "'";
    if (!tensorOk(io.tensor))
      return bad(where + " is bound to t" + std::to_string(io.tensor) + ", which does not exist");
    const TensorInfo &info = plan.tensors[io.tensor];
    if (io.dims.size() > size_t(kMaxRank))
      return bad(where + " has rank " + std::to_string(io.dims.size()) + " (at most " +
                 std::to_string(kMaxRank) + ")");
    if (io.dims.size() != info.shape.size() || io.dtype != info.dtype)
      return bad(where + " does not match the dtype or rank of its tensor t" +
                 std::to_string(io.tensor));
    if (!io.dimNames.empty() && io.dimNames.size() != io.dims.size())
      return bad(where + " has " + std::to_string(io.dimNames.size()) + " dim names for rank " +
                 std::to_string(io.dims.size()));
    return Status();
  };
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    const IoInfo &io = plan.inputs[i];
    if (Status s = checkIo(io, "input", i); !s.ok())
      return s;
    if (plan.tensors[io.tensor].storage != Storage::Input ||
        plan.tensors[io.tensor].index != int(i))
      return bad("input " + std::to_string(i) + " '" + io.name + "' is bound to t" +
                 std::to_string(io.tensor) + ", which is not input " + std::to_string(i));
    if (io.checkRange && !isIntegerDType(io.dtype))
      return bad("input " + std::to_string(i) + " '" + io.name +
                 "' has a value range but is not an integer tensor");
  }
  for (size_t i = 0; i < plan.outputs.size(); ++i)
    if (Status s = checkIo(plan.outputs[i], "output", i); !s.ok())
      return s;

  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step *step = plan.steps[i].get();
    if (!step)
      return bad("step " + std::to_string(i) + " is null");
    for (const auto *ids : {&step->inputs, &step->outputs})
      for (TensorId id : *ids)
        if (!tensorOk(id))
          return bad("step " + std::to_string(i) + " (" + step->kind() + ") for " + step->location +
                     " uses t" + std::to_string(id) + ", which does not exist");
  }
  return Status();
}

Status execute(const Plan &plan, const RunTensor *inputs, size_t numInputs, RunTensor *outputs,
               size_t numOutputs, RunError *error, RunProfile *profile,
               const StepObserver *observer) {
  Failure failure;
  bool ok = false;
  try {
    if (plan.firstRunCheck && !plan.firstRunCheck->result().empty())
      failure = {RunError::Runtime, plan.firstRunCheck->result()};
    else
      ok = run(plan, inputs, numInputs, outputs, numOutputs, failure, profile, observer);
  } catch (const std::bad_alloc &) {
    failure = {RunError::Runtime, "out of memory"};
  } catch (const std::exception &e) {
    failure = {RunError::Runtime, e.what()};
  }
  if (error)
    *error = ok ? RunError::None : failure.kind;
  return ok ? Status() : Status::error(std::move(failure.message));
}

} // namespace octet::rt
