//===- Plan.h - what a compiled model executes, MLIR-free -------*- C++ -*-===//
//
// A Plan is the compiled model: run-time scalars (the symbolic dims and the
// sizes derived from them), a tensor table, the activation arena's slots and a
// list of steps. It is immutable after compilation, so one Plan serves
// concurrent runs; each run owns an ExecContext (scalar values, tensor
// addresses, its arena).
//
//  - Scalars are evaluated once per run, in order: input dims, constants and
//    arithmetic on earlier scalars. Every tensor dim is a scalar id (static
//    dims are Constant scalars), so one Plan serves every batch and sequence.
//  - Tensors live in an input, an output (the caller's buffer), a constant
//    (weights, owned by the Plan), an arena slot, or are a view of another
//    tensor (reshape; slice, transpose and broadcast as strided views).
//  - Steps are kernels bound to tensor ids; run() reads addresses and shapes
//    from the ExecContext and reports errors as a Status.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_RUNTIME_PLAN_H
#define OCTET_RUNTIME_PLAN_H

#include "compiler/codegen/ScalarArithmetic.h"
#include "compiler/codegen/Status.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace octet::x86 {
struct NextStepReads; // compiler/codegen/x86/NextStepPrefetch.h
}

namespace octet::rt {

/// Element types. The numbers are stored in plan images and (plus one) are the C API's
/// octet_dtype codes: append new types, never renumber.
enum class DType : uint8_t { F32, F64, I64, I32, I8, U8, Bool, I16, U16, U32, U64, F16 };
/// The last DType (plan images validate codes up to it).
constexpr DType kLastDType = DType::F16;
size_t dtypeBytes(DType dtype);
const char *dtypeName(DType dtype);
/// Dims as "[2, 3, 4]", for messages.
std::string shapeString(const std::vector<int64_t> &shape);

using ScalarId = int32_t;
using TensorId = int32_t;

/// One run-time integer (an `index` value of the IR).
struct Scalar {
  enum class Kind : uint8_t {
    Constant, ///< value
    InputDim, ///< dim `dim` of input `input`
    Add, Sub, Mul,
    DivS,      ///< a / b, truncating (arith.divsi)
    FloorDivS, ///< floor(a / b)
    CeilDivS,  ///< ceil(a / b)
    RemS,      ///< a % b, sign of a (arith.remsi)
    MinS, MaxS,
    Cmp,       ///< a (cmp) b as 0 / 1
    Select,    ///< a != 0 ? b : c
    Broadcast, ///< numpy broadcast of dims a and b (1 stretches), error if they differ
    Equal,     ///< a, error unless a == b (e.g. a matmul's inner dims)
    /// Element `dim` (flat position) of integer input `input`, read before any
    /// step: a size a model takes as data (Tile's repeats, Expand's shape).
    /// An error when it is negative or above kMaxInputElementSize.
    InputElement,
    /// A dim of the rows between octet.pack_tokens and octet.unpack_tokens
    /// (docs/padding-free.md): `a` (the padded batch, dim 0, or seq, dim 1)
    /// until the run's token_layout step packs the batch; then 1 (dim 0) or
    /// the number of real tokens (dim 1). Never larger in product.
    PackedDim,
  };
  enum class Predicate : uint8_t { Eq, Ne, Lt, Le, Gt, Ge };
  Kind kind = Kind::Constant;
  int64_t value = 0;
  int32_t input = 0, dim = 0;
  ScalarId a = -1, b = -1, c = -1;
  Predicate predicate = Predicate::Eq;
  /// For the checking kinds (and division by zero): what is computed, for the error.
  std::string what;
};

/// The integer operation of an arithmetic kind (Add .. MaxS), none for the others: the
/// one semantics (compiler/codegen/ScalarArithmetic.h) that the Plan builder's folding
/// and the executor's evaluation share.
inline std::optional<IntBinaryOp> intBinaryOpOf(Scalar::Kind kind) {
  using K = Scalar::Kind;
  using B = IntBinaryOp;
  static constexpr std::pair<K, B> kOps[] = {
      {K::Add, B::Add},   {K::Sub, B::Sub},         {K::Mul, B::Mul},
      {K::DivS, B::DivS}, {K::FloorDivS, B::FloorDivS}, {K::CeilDivS, B::CeilDivS},
      {K::RemS, B::RemS}, {K::MinS, B::MinS},       {K::MaxS, B::MaxS}};
  for (auto [k, op] : kOps)
    if (k == kind)
      return op;
  return std::nullopt;
}

/// Scalar::Predicate as ScalarArithmetic's predicate: the same names in the same order
/// (the Plan image stores the number, so neither may be reordered).
inline IntPredicate intPredicateOf(Scalar::Predicate predicate) {
  static_assert(uint8_t(Scalar::Predicate::Ge) == uint8_t(IntPredicate::Ge));
  return IntPredicate(uint8_t(predicate));
}

/// The largest size a Scalar::Kind::InputElement may read: a shape entry
/// beyond it is an input error, not an allocation attempt.
constexpr int64_t kMaxInputElementSize = (int64_t(1) << 31) - 1;

enum class Storage : uint8_t { Input, Output, Constant, Arena, View };

struct TensorInfo {
  std::string name; ///< the op or value it comes from, for messages and dumps
  DType dtype = DType::F32;
  std::vector<ScalarId> shape;
  Storage storage = Storage::Arena;
  /// Input / Output: the position; Arena: the slot; View: the base tensor,
  /// which is never itself a View (the compiler composes views).
  int32_t index = -1;
  const void *constant = nullptr; ///< Constant: its bytes, kept alive by Plan::keepAlive
  ScalarId viewOffset = -1;          ///< View: element offset into the base
  std::vector<ScalarId> viewStrides; ///< View: element stride per dim (0: broadcast); empty: contiguous
};

/// An input or output as the API lists it.
struct IoInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> dims;          ///< -1 where symbolic
  std::vector<std::string> dimNames;  ///< the symbol's name ("batch"), "" if none
  TensorId tensor = -1;
  /// Inputs only: every element must lie in [rangeBegin, rangeEnd) (token ids
  /// that index an embedding table); rangeWhy says which table.
  bool checkRange = false;
  int64_t rangeBegin = 0, rangeEnd = 0;
  std::string rangeWhy;
};

class ExecContext;
struct StepRecipe;

/// What one run of a step does, for profiles and rooflines (runtime/Profile.h):
/// arithmetic operations (a multiply-add counts 2), bytes it must move between
/// memory and the cores at least once, and its shapes as text.
struct Work {
  double ops = 0;
  double bytes = 0;
  std::string shapes;
};

class Step {
public:
  virtual ~Step() = default;
  /// Kernel and provider, for profiles and dumps: "gemm.jit_avx512", "add", ...
  virtual std::string kind() const = 0;
  /// Runs the step. Must be safe to call concurrently from many threads with
  /// different contexts (the Step is immutable). Threads inside: OpenMP.
  virtual Status run(const ExecContext &ctx) const = 0;
  /// Operations and bytes of one run with the context's shapes (after the
  /// scalars are evaluated). Default: one op per output element, the bytes of
  /// every input and output once, "in shapes -> out shapes".
  virtual Work work(const ExecContext &ctx) const;
  /// True for the token_layout step: after it runs, the executor reads its
  /// output (runtime/TokenLayout.h) and, if the batch is packed, re-evaluates
  /// the PackedDim scalars and what depends on them.
  virtual bool definesTokenLayout() const { return false; }
  /// What each of `threads` threads reads first, when that is likely cold (a
  /// GEMM's first weight slice, from DRAM), for the step before this one to
  /// prefetch as it runs (compiler/codegen/x86/NextStepPrefetch.h). Called
  /// with this run's shapes, and a function of the scalars and `threads`
  /// only: each thread keeps what it got for the next runs of the same
  /// shapes (runtime/NextReadsCache.h). Default: nothing.
  virtual void firstReads(const ExecContext &, int64_t /*threads*/, x86::NextStepReads &) const {}

  std::string location; ///< the op it implements (ONNX node name), for messages
  std::vector<TensorId> inputs, outputs; ///< what it reads and writes
  /// The factory call that built it (runtime/StepRecipe.h), when made by
  /// buildStep: what an AOT model stores to build it again.
  std::shared_ptr<const StepRecipe> recipe;
};

/// A step's place in run-time error messages, "kind (ONNX node)": spelled
/// out only when a message is built, so that a run that succeeds composes no
/// strings (kind() builds several) and reads none of the step's cold fields.
class StepWhere {
public:
  explicit StepWhere(const Step &step) : step_(step) {}
  std::string str() const;

private:
  const Step &step_;
};
inline std::string operator+(const StepWhere &where, const std::string &text) {
  return where.str() + text;
}
inline std::string operator+(const StepWhere &where, const char *text) {
  return where.str() + text;
}

/// Bytes that tensors (TensorInfo::constant) or step recipes point into.
struct ConstantRange {
  const void *data = nullptr;
  size_t bytes = 0;
};

/// A check done once, before the first run, whose failure fails every run:
/// an AOT model's weights checksum, too slow for opening (a read of every
/// weight page) but due before any output is computed from them.
class FirstRunCheck {
public:
  explicit FirstRunCheck(std::function<std::string()> check) : check_(std::move(check)) {}
  /// "" when the check passed; runs it on the first call (thread safe).
  const std::string &result() const {
    std::call_once(once_, [this] { error_ = check_(); });
    return error_;
  }

private:
  std::function<std::string()> check_;
  mutable std::once_flag once_;
  mutable std::string error_;
};

/// A number no other Plan of this process has had (Plan::serial).
uint64_t newPlanSerial();

struct Plan {
  /// This Plan's identity for what a thread keeps between runs of it (the
  /// executor's next-step reads), where an address could be a new Plan's.
  uint64_t serial = newPlanSerial();
  std::vector<Scalar> scalars;
  std::vector<TensorInfo> tensors;
  std::vector<ScalarId> arenaSlots; ///< byte size of each slot (laid out 64-byte aligned)
  std::vector<IoInfo> inputs, outputs;
  std::vector<std::unique_ptr<Step>> steps;
  std::vector<std::shared_ptr<const void>> keepAlive; ///< constant data the tensors point into
  /// Every constant range the tensors and recipes point into, for AOT. The
  /// compiler may list bytes it does not own (the compiled module's weights,
  /// read only while steps are built); an image is written before those go.
  std::vector<ConstantRange> constants;
  std::shared_ptr<const FirstRunCheck> firstRunCheck; ///< null: none

  /// A human-readable listing (scalars, tensors, steps) for --print-plan and tests.
  std::string describe() const;
};

/// The state of one run: scalar values and tensor addresses.
class ExecContext {
public:
  explicit ExecContext(const Plan &plan) : plan_(plan) {}
  const Plan &plan() const { return plan_; }

  int64_t scalar(ScalarId id) const { return scalars_[id]; }
  int rank(TensorId t) const { return int(plan_.tensors[t].shape.size()); }
  int64_t dim(TensorId t, int i) const { return scalars_[plan_.tensors[t].shape[i]]; }
  std::vector<int64_t> shape(TensorId t) const;
  int64_t numElements(TensorId t) const;
  /// Element strides: a view's own, else row-major contiguous.
  std::vector<int64_t> strides(TensorId t) const;
  bool isContiguous(TensorId t) const;
  DType dtype(TensorId t) const { return plan_.tensors[t].dtype; }
  void *data(TensorId t) const { return addresses_[t]; }
  template <typename T> T *data(TensorId t) const { return static_cast<T *>(addresses_[t]); }

  // Filled by the executor before the first step runs.
  std::vector<int64_t> scalars_;
  std::vector<void *> addresses_;

private:
  const Plan &plan_;
};

} // namespace octet::rt

#endif
