//===- ProgramEpilogue.cpp ------------------------------------------------===//
#include "compiler/codegen/x86/ProgramEpilogue.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>

namespace octet::x86 {

using Op = rt::ElementwiseProgram::Op;
using Xbyak::Opmask;
using Xbyak::Zmm;

namespace {
constexpr uint8_t kCmpUnord = 0x03;
constexpr uint32_t kQuietNaN = 0x7fc00000u;

bool isBinary(Op op) { return op >= Op::Add && op <= Op::Pow; }
bool isCommutative(Op op) {
  return op == Op::Add || op == Op::Mul || op == Op::Max || op == Op::Min;
}

} // namespace

bool toUnaryOp(Op op, GeluAccuracy gelu, UnaryOp &out) {
  const bool fast = gelu != GeluAccuracy::Full;
  switch (op) {
  case Op::Neg:
    out = UnaryOp::Neg;
    return true;
  case Op::Abs:
    out = UnaryOp::Abs;
    return true;
  case Op::Exp:
    out = UnaryOp::Exp;
    return true;
  case Op::Erf:
    out = UnaryOp::Erf;
    return true;
  case Op::Tanh:
    out = UnaryOp::Tanh;
    return true;
  case Op::Sigmoid:
    out = UnaryOp::Sigmoid;
    return true;
  case Op::Rsqrt:
    out = UnaryOp::Rsqrt;
    return true;
  case Op::Reciprocal:
    out = UnaryOp::Reciprocal;
    return true;
  case Op::GeluErf:
    out = fast ? UnaryOp::GeluErfFast : UnaryOp::GeluErf;
    return true;
  case Op::GeluTanh:
    out = fast ? UnaryOp::GeluTanhFast : UnaryOp::GeluTanh;
    return true;
  default:
    return false;
  }
}

namespace {

bool isConstant(const rt::ElementwiseProgram &p, int i, float value) {
  return p.instrs[i].op == Op::Constant && p.instrs[i].value == value;
}

/// The same value: one instruction, or two reading the same input.
bool sameValue(const rt::ElementwiseProgram &p, int i, int j) {
  const auto &x = p.instrs[i], &y = p.instrs[j];
  return i == j || (x.op == Op::Input && y.op == Op::Input && x.a == y.a);
}

/// `in` is `op` with the constant `value` as one operand (Div: the divisor):
/// the other operand, or -1.
int operandBeside(const rt::ElementwiseProgram &p, const rt::ElementwiseProgram::Instr &in, Op op,
                  float value) {
  if (in.op != op)
    return -1;
  if (isConstant(p, in.b, value))
    return in.a;
  return op != Op::Div && isConstant(p, in.a, value) ? in.b : -1;
}

/// Instruction `i` is GELU (erf) as a fused region spells octet.gelu,
/// (x * 0.5) * (erf(x * 2^-1/2 or x / 2^1/2) + 1), operands in either order:
/// x, or -1.
int decomposedGeluErf(const rt::ElementwiseProgram &p, int i) {
  const auto &mul = p.instrs[i];
  if (mul.op != Op::Mul)
    return -1;
  for (auto [half, onePlusErf] : {std::pair(mul.a, mul.b), std::pair(mul.b, mul.a)}) {
    const int x = operandBeside(p, p.instrs[half], Op::Mul, 0.5f);
    const int erf = operandBeside(p, p.instrs[onePlusErf], Op::Add, 1.0f);
    if (x < 0 || erf < 0 || p.instrs[erf].op != Op::Erf)
      continue;
    const auto &scaled = p.instrs[p.instrs[erf].a];
    const int byMul = operandBeside(p, scaled, Op::Mul, float(M_SQRT1_2));
    const int byDiv = operandBeside(p, scaled, Op::Div, float(M_SQRT2));
    if ((byMul >= 0 && sameValue(p, byMul, x)) || (byDiv >= 0 && sameValue(p, byDiv, x)))
      return x;
  }
  return -1;
}

/// The one live GELU whose value reaches the result through multiplications
/// (either operand) and divisions (as the dividend) only, each value on the
/// way used once: its doubled value doubles the result exactly. -1 if none.
int geluBeforeMultipliesOnly(const std::vector<rt::ElementwiseProgram::Instr> &ins,
                             const std::vector<bool> &live, int result) {
  const int n = int(ins.size());
  auto computes = [&](int i) {
    return live[i] && ins[i].op != Op::Input && ins[i].op != Op::Constant;
  };
  int gelu = -1;
  for (int i = 0; i < n; ++i)
    if (computes(i) && (ins[i].op == Op::GeluErf || ins[i].op == Op::GeluTanh)) {
      if (gelu >= 0)
        return -1;
      gelu = i;
    }
  for (int v = gelu; v >= 0 && v != result;) {
    int user = -1, uses = 0;
    for (int i = 0; i < n; ++i)
      if (computes(i) && (ins[i].a == v || ins[i].b == v)) {
        user = i;
        uses += (ins[i].a == v) + (ins[i].b == v);
      }
    if (uses != 1 || !(ins[user].op == Op::Mul || (ins[user].op == Op::Div && ins[user].a == v)))
      return -1;
    v = user;
  }
  return gelu;
}

/// Pow exponents with an exact or VectorMath-accurate vector form.
bool powExponentSupported(float e) {
  return e == 1 || e == 2 || e == 3 || e == 0.5f || e == -0.5f || e == -1;
}
} // namespace

rt::ElementwiseProgram withGeluOps(rt::ElementwiseProgram program) {
  for (int i = 0; i < int(program.instrs.size()); ++i)
    if (const int x = decomposedGeluErf(program, i); x >= 0)
      program.instrs[i] = {Op::GeluErf, x, -1, 0};
  return program;
}

std::string ProgramLowering::plan(const rt::ElementwiseProgram &source, bool input0InResult,
                                  int maxZmm, GeluAccuracy gelu) {
  steps_.clear();
  slots_ = 1, temps_ = 0, masks_ = 0;
  gelu_ = gelu;
  fastGelu_ = false;
  resultScale_ = 1.0f;
  if (std::string e = source.verify(); !e.empty())
    return "malformed program: " + e;
  rt::ElementwiseProgram program = source;
  if (program.instrs.empty()) // identity
    program.instrs.push_back({Op::Input, 0, -1, 0});
  const int n = int(program.instrs.size());
  // A requantized (or bf16-bound) result takes the fast GELU also where the
  // program spells it out; the erf and friends it replaces are dead below.
  if (gelu != GeluAccuracy::Full)
    program = withGeluOps(std::move(program));
  inputsRead_.assign(std::max(program.numInputs, 1), false);

  // Canonical value per instruction (one per distinct input and constant).
  std::vector<int> canon(n);
  std::map<std::pair<int, uint32_t>, int> seen;
  std::vector<rt::ElementwiseProgram::Instr> ins = program.instrs;
  for (int i = 0; i < n; ++i) {
    auto &in = ins[i];
    canon[i] = i;
    if (in.op == Op::Input || in.op == Op::Constant) {
      auto key = in.op == Op::Input ? std::make_pair(0, uint32_t(in.a))
                                    : std::make_pair(1, bitsOf(in.value));
      auto it = seen.emplace(key, i).first;
      canon[i] = it->second;
      continue;
    }
    in.a = canon[in.a];
    if (in.b >= 0)
      in.b = canon[in.b];
    // A constant first operand of a commutative op moves second, where it can
    // stay in memory.
    if (isCommutative(in.op) && ins[in.a].op == Op::Constant && ins[in.b].op != Op::Constant)
      std::swap(in.a, in.b);
  }

  // Which values the result depends on.
  const int result = canon[n - 1];
  std::vector<bool> live(n, false);
  live[result] = true;
  for (int i = n - 1; i >= 0; --i)
    if (live[i] && ins[i].op != Op::Input && ins[i].op != Op::Constant) {
      live[ins[i].a] = true;
      if (ins[i].b >= 0)
        live[ins[i].b] = true;
    }

  const int doubledGelu =
      gelu == GeluAccuracy::ForRequantize ? geluBeforeMultipliesOnly(ins, live, result) : -1;
  if (doubledGelu >= 0)
    resultScale_ = 2.0f;

  // Which constants need a register, and each value's last use.
  std::vector<bool> needsRegister(n, false);
  std::vector<int> lastUse(n, -1);
  for (int i = 0; i < n; ++i) {
    const auto &in = ins[i];
    if (!live[i] || in.op == Op::Input || in.op == Op::Constant)
      continue;
    if (in.op == Op::Log)
      return "instruction %" + std::to_string(i) + ": log has no vector form";
    if (in.op == Op::Pow) {
      if (ins[in.b].op != Op::Constant || !powExponentSupported(ins[in.b].value))
        return "instruction %" + std::to_string(i) +
               ": pow has a vector form only for a constant exponent in {-1, -0.5, 0.5, 1, 2, 3}";
    }
    needsRegister[in.a] = true;
    lastUse[in.a] = i;
    if (in.b >= 0) {
      if (ins[in.b].op != Op::Constant)
        needsRegister[in.b] = true;
      lastUse[in.b] = i;
    }
  }
  needsRegister[result] = true;
  lastUse[result] = n;

  // Linear scan.
  std::vector<bool> busy;
  std::vector<int> slotOf(n, -1);
  auto allocate = [&]() {
    size_t s = 0;
    while (s < busy.size() && busy[s])
      ++s;
    if (s == busy.size())
      busy.push_back(false);
    busy[s] = true;
    slots_ = std::max(slots_, int(s) + 1);
    return int(s);
  };
  busy.assign(1, false);
  for (int i = 0; i < n; ++i)
    if (canon[i] == i && ins[i].op == Op::Input && ins[i].a == 0 && input0InResult &&
        lastUse[i] >= 0) {
      busy[0] = true, slotOf[i] = 0;
      inputsRead_[0] = true;
    }
  for (int i = 0; i < n; ++i) {
    const auto &in = ins[i];
    if (canon[i] != i || slotOf[i] >= 0 || lastUse[i] < 0)
      continue; // a duplicate, preloaded or dead value
    Step step;
    step.op = in.op;
    if (in.op == Op::Input || in.op == Op::Constant) {
      if (!needsRegister[i])
        continue;
      step.dst = slotOf[i] = allocate();
      step.input = in.op == Op::Input ? in.a : -1;
      if (in.op == Op::Input)
        inputsRead_[in.a] = true;
      step.value = in.value;
      steps_.push_back(step);
      continue;
    }
    step.a = slotOf[in.a];
    if (in.op == Op::Pow) {
      step.value = ins[in.b].value;
    } else if (in.b >= 0) {
      if (ins[in.b].op == Op::Constant && slotOf[in.b] < 0) {
        step.bConstant = true;
        step.value = ins[in.b].value;
      } else {
        step.b = slotOf[in.b];
      }
    }
    // Operands whose last use this is free their registers for the result.
    if (lastUse[in.a] == i)
      busy[slotOf[in.a]] = false;
    if (in.b >= 0 && slotOf[in.b] >= 0 && lastUse[in.b] == i)
      busy[slotOf[in.b]] = false;
    step.dst = slotOf[i] = allocate();
    step.timesTwo = i == doubledGelu;

    int zmm = 0, mask = 0;
    UnaryOp unary;
    if (toUnaryOp(in.op, gelu_, unary)) {
      zmm = zmmScratchFor(unary), mask = maskScratchFor(unary);
      fastGelu_ |= unary == UnaryOp::GeluErfFast || unary == UnaryOp::GeluTanhFast;
    } else if (in.op == Op::Relu) {
      zmm = 1;
    } else if (in.op == Op::Max || in.op == Op::Min) {
      mask = 1;
    } else if (in.op == Op::Pow) {
      float e = step.value;
      zmm = e == 3 || e == -1 ? 1 : e == -0.5f ? 2 : 0;
      mask = e == -0.5f ? 1 : 0;
    }
    temps_ = std::max(temps_, zmm);
    masks_ = std::max(masks_, mask);
    steps_.push_back(step);
  }
  if (slotOf[result] != 0) {
    Step move;
    move.op = Op::Input;
    move.input = -1; // a register move
    move.a = slotOf[result];
    move.dst = 0;
    steps_.push_back(move);
  }
  if (slots_ + temps_ > maxZmm)
    return "the program needs " + std::to_string(slots_) + " value and " + std::to_string(temps_) +
           " temporary zmm registers, more than the " + std::to_string(maxZmm) + " available";
  return "";
}

void ProgramLowering::emit(Xbyak::CodeGenerator &gen, ConstantTable &constants, const Zmm &result,
                           const std::vector<Zmm> &values, const std::vector<Zmm> &temps,
                           const std::vector<Opmask> &masks,
                           const std::function<void(int, const Zmm &)> &loadInput) const {
  if (int(values.size()) < slots_ - 1 || int(temps.size()) < temps_ || int(masks.size()) < masks_)
    throw std::logic_error("ProgramLowering::emit: fewer registers than planned");
  VectorMath math(gen, constants, temps, masks);
  auto reg = [&](int slot) -> const Zmm & { return slot == 0 ? result : values[slot - 1]; };
  for (const Step &s : steps_) {
    const Zmm &d = reg(s.dst);
    switch (s.op) {
    case Op::Input:
      if (s.input >= 0)
        loadInput(s.input, d);
      else if (reg(s.a) != d)
        gen.vmovaps(d, reg(s.a));
      continue;
    case Op::Constant:
      math.broadcast(d, s.value);
      continue;
    default:
      break;
    }
    const Zmm &a = reg(s.a);
    if (isBinary(s.op) && s.op != Op::Pow) {
      auto binary = [&](const Xbyak::Operand &bo) {
        switch (s.op) {
        case Op::Add:
          math.add(d, a, bo);
          break;
        case Op::Sub:
          math.sub(d, a, bo);
          break;
        case Op::Mul:
          math.mul(d, a, bo);
          break;
        case Op::Div:
          math.div(d, a, bo);
          break;
        case Op::Max:
        case Op::Min:
          // vmaxps/vminps return the second operand when either is NaN; a NaN
          // first operand is put back afterwards.
          gen.vcmpps(masks[0], a, a, kCmpUnord);
          if (s.op == Op::Max)
            math.max(d, a, bo);
          else
            math.min(d, a, bo);
          gen.vpord(d | masks[0], d, constants.bits(kQuietNaN));
          break;
        default:
          break;
        }
      };
      if (s.bConstant)
        binary(math.constant(s.value));
      else
        binary(reg(s.b));
      continue;
    }
    UnaryOp unary;
    if (toUnaryOp(s.op, gelu_, unary)) {
      if (s.timesTwo && unary == UnaryOp::GeluErfFast)
        math.geluErfFast(d, a, true);
      else if (s.timesTwo && unary == UnaryOp::GeluTanhFast)
        math.geluTanhFast(d, a, true);
      else if (s.timesTwo)
        throw std::logic_error("ProgramLowering::emit: only a fast GELU is computed doubled");
      else
        math.unary(unary, d, a);
      continue;
    }
    switch (s.op) {
    case Op::Sqrt:
      gen.vsqrtps(d, a);
      break;
    case Op::Relu: // vmaxps returns its second operand (x) when x is NaN
      gen.vpxord(temps[0], temps[0], temps[0]);
      gen.vmaxps(d, temps[0], a);
      break;
    case Op::Pow: {
      const float e = s.value;
      if (e == 1) {
        if (d != a)
          gen.vmovaps(d, a);
      } else if (e == 2) {
        gen.vmulps(d, a, a);
      } else if (e == 3) {
        gen.vmulps(temps[0], a, a);
        gen.vmulps(d, temps[0], a);
      } else if (e == 0.5f) {
        gen.vsqrtps(d, a);
      } else if (e == -0.5f) {
        math.rsqrt(d, a);
      } else {
        math.reciprocal(d, a);
      }
      break;
    }
    default:
      throw std::logic_error("ProgramLowering::emit: op without a vector form");
    }
  }
}

rt::ElementwiseProgram geluTimesColumnProgram() {
  rt::ElementwiseProgram program;
  program.numInputs = 2;
  program.instrs = {
      {Op::Input, 0, -1, 0}, {Op::GeluErf, 0, -1, 0}, {Op::Input, 1, -1, 0}, {Op::Mul, 1, 2, 0}};
  return program;
}

std::unique_ptr<ProgramEpilogue> ProgramEpilogue::create(const rt::ElementwiseProgram &program,
                                                         std::string &error,
                                                         const std::vector<bool> &perColumn,
                                                         GeluAccuracy gelu) {
  std::unique_ptr<ProgramEpilogue> e(new ProgramEpilogue());
  e->columnOf_.assign(size_t(std::max(program.numInputs, 1)), -1);
  for (size_t i = 1; i < e->columnOf_.size(); ++i)
    if (i < perColumn.size() && perColumn[i])
      e->columnOf_[i] = e->columnInputs_++;
  for (size_t i = 0; i < program.instrs.size(); ++i) {
    const int input = program.instrs[i].a;
    if (program.instrs[i].op == Op::Input && input != 0 &&
        (input < 0 || input >= int(e->columnOf_.size()) || e->columnOf_[input] < 0)) {
      error = "instruction %" + std::to_string(i) + " reads input " + std::to_string(input) +
              "; a GEMM epilogue sees only the accumulator (input 0) and per-column vectors";
      return nullptr;
    }
  }
  error = e->lowering_.plan(program, true, kMaxEpilogueScratch + 1, gelu);
  if (!error.empty())
    return nullptr;
  e->forBf16_ = gelu == GeluAccuracy::ForBf16;
  e->scratch_ = e->lowering_.extraValueRegisters() + e->lowering_.tempRegisters();
  // Dry run: the constants VectorMath asks for, in the order it asks.
  Xbyak::CodeGenerator dry(64 * 1024);
  Xbyak::Label label;
  std::vector<Zmm> scratch;
  for (int r = 0; r < e->scratch_; ++r)
    scratch.push_back(Zmm(1 + r));
  auto column = [&](int c) { return dry.zword[dry.rax + c * 64]; };
  for (uint32_t bits : e->emitWith(dry, Zmm(0), scratch, label, column)) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    e->constants_.push_back(f);
  }
  dry.L(label);
  return e;
}

std::vector<uint32_t> ProgramEpilogue::emitWith(Xbyak::CodeGenerator &gen, const Zmm &acc,
                                                const std::vector<Zmm> &scratch,
                                                const Xbyak::Label &label,
                                                const ColumnInput &column) const {
  if (int(scratch.size()) < scratch_)
    throw std::logic_error("ProgramEpilogue: fewer scratch registers than asked for");
  const int valueCount = lowering_.extraValueRegisters();
  std::vector<Zmm> values(scratch.begin(), scratch.begin() + valueCount);
  std::vector<Zmm> temps(scratch.begin() + valueCount, scratch.begin() + scratch_);
  // The GEMM kernels use only k1 (GemmTileAvx512.h).
  std::vector<Opmask> masks = {Xbyak::util::k2, Xbyak::util::k3};
  ConstantTable table(gen, label);
  lowering_.emit(gen, table, acc, values, temps, masks, [&](int input, const Zmm &dst) {
    if (input <= 0 || input >= int(columnOf_.size()) || columnOf_[input] < 0)
      throw std::logic_error("ProgramEpilogue: input " + std::to_string(input) +
                             " is neither the accumulator nor a per-column vector");
    gen.vmovups(dst, column(columnOf_[input]));
  });
  return table.values();
}

void ProgramEpilogue::emit(Xbyak::CodeGenerator &gen, const Zmm &acc,
                           const std::vector<Zmm> &scratch, const Xbyak::Label &constants,
                           const ColumnInput &column) const {
  std::vector<uint32_t> used = emitWith(gen, acc, scratch, constants, column);
  // Same program, same code path: the table must be the one constants() gave.
  if (used.size() != constants_.size())
    throw std::logic_error("ProgramEpilogue: constant table differs from the dry run");
}

} // namespace octet::x86
