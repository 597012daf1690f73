//===- ElementwiseProgram.cpp - scalar meaning, checks and listing --------===//
#include "compiler/codegen/ElementwiseProgram.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace octet::rt {

namespace {
using Op = ElementwiseProgram::Op;

bool isBinary(Op op) { return op >= Op::Add && op <= Op::Pow; }
bool isUnary(Op op) { return op >= Op::Neg; }

const char *opName(Op op) {
  switch (op) {
  case Op::Input:
    return "input";
  case Op::Constant:
    return "constant";
  case Op::Add:
    return "add";
  case Op::Sub:
    return "sub";
  case Op::Mul:
    return "mul";
  case Op::Div:
    return "div";
  case Op::Max:
    return "max";
  case Op::Min:
    return "min";
  case Op::Pow:
    return "pow";
  case Op::Neg:
    return "neg";
  case Op::Abs:
    return "abs";
  case Op::Exp:
    return "exp";
  case Op::Log:
    return "log";
  case Op::Erf:
    return "erf";
  case Op::Tanh:
    return "tanh";
  case Op::Sigmoid:
    return "sigmoid";
  case Op::Sqrt:
    return "sqrt";
  case Op::Rsqrt:
    return "rsqrt";
  case Op::Reciprocal:
    return "reciprocal";
  case Op::Relu:
    return "relu";
  case Op::GeluErf:
    return "gelu_erf";
  case Op::GeluTanh:
    return "gelu_tanh";
  }
  return "?";
}

// Max / Min propagate NaN (arith.maximumf / ONNX Max), whichever side it is on.
float maxf(float a, float b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
float minf(float a, float b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }
} // namespace

float ElementwiseProgram::evaluateOp(const Instr &in, float a, float b) {
  const double x = a;
  float r = 0;
  switch (in.op) {
  case Op::Input: // read by the caller
    break;
  case Op::Constant:
    r = in.value;
    break;
  case Op::Add:
    r = a + b;
    break;
  case Op::Sub:
    r = a - b;
    break;
  case Op::Mul:
    r = a * b;
    break;
  case Op::Div:
    r = a / b;
    break;
  case Op::Max:
    r = maxf(a, b);
    break;
  case Op::Min:
    r = minf(a, b);
    break;
  case Op::Pow:
    r = std::pow(a, b);
    break;
  case Op::Neg:
    r = -a;
    break;
  case Op::Abs:
    r = std::fabs(a);
    break;
  case Op::Exp:
    r = float(std::exp(x));
    break;
  case Op::Log:
    r = float(std::log(x));
    break;
  case Op::Erf:
    r = float(std::erf(x));
    break;
  case Op::Tanh:
    r = float(std::tanh(x));
    break;
  case Op::Sigmoid:
    r = float(1.0 / (1.0 + std::exp(-x)));
    break;
  case Op::Sqrt:
    r = std::sqrt(a);
    break;
  case Op::Rsqrt:
    r = float(1.0 / std::sqrt(x));
    break;
  case Op::Reciprocal:
    r = 1.0f / a;
    break;
  case Op::Relu:
    r = std::isnan(a) ? a : std::max(a, 0.0f);
    break;
  case Op::GeluErf:
    r = float(x * 0.5 * (1.0 + std::erf(x * M_SQRT1_2)));
    break;
  case Op::GeluTanh: {
    const double u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
    r = float(0.5 * x * (1.0 + std::tanh(u)));
    break;
  }
  }
  return r;
}

float ElementwiseProgram::evaluate(const float *inputs) const {
  // Small programs: a stack buffer; larger ones a vector.
  float small[64];
  std::vector<float> large;
  float *v = small;
  if (instrs.size() > 64) {
    large.resize(instrs.size());
    v = large.data();
  }
  for (size_t i = 0; i < instrs.size(); ++i) {
    const Instr &in = instrs[i];
    if (in.op == Op::Input) {
      v[i] = inputs[in.a];
      continue;
    }
    const float a = in.a >= 0 ? v[in.a] : 0.0f;
    const float b = in.b >= 0 ? v[in.b] : 0.0f;
    v[i] = evaluateOp(in, a, b);
  }
  // No instructions: the identity of input 0 (the accumulator of a linear epilogue).
  return instrs.empty() ? inputs[0] : v[instrs.size() - 1];
}

std::string ElementwiseProgram::verify() const {
  std::ostringstream os;
  if (numInputs < 0)
    return "negative input count " + std::to_string(numInputs);
  for (size_t i = 0; i < instrs.size(); ++i) {
    const Instr &in = instrs[i];
    const int32_t id = int32_t(i);
    auto operand = [&](int32_t x, const char *which) {
      if (x < 0 || x >= id)
        os << "instruction %" << i << " (" << opName(in.op) << "): operand " << which << " = " << x
           << " is not an earlier instruction (0.." << id - 1 << "); ";
    };
    // A slot the op does not use holds -1: the passes over programs (dead
    // code, canonicalization) follow any operand that is not negative.
    auto unused = [&](int32_t x, const char *which) {
      if (x != -1)
        os << "instruction %" << i << " (" << opName(in.op) << "): unused operand " << which
           << " = " << x << " (must be -1); ";
    };
    if (in.op == Op::Input) {
      if (in.a < 0 || in.a >= numInputs)
        os << "instruction %" << i << ": input index " << in.a << " outside 0.." << numInputs - 1
           << "; ";
      unused(in.b, "b");
    } else if (isBinary(in.op)) {
      operand(in.a, "a");
      operand(in.b, "b");
    } else if (isUnary(in.op)) {
      operand(in.a, "a");
      unused(in.b, "b");
    } else if (in.op == Op::Constant) {
      unused(in.a, "a");
      unused(in.b, "b");
    } else {
      os << "instruction %" << i << ": unknown op " << int(in.op) << "; ";
    }
  }
  std::string s = os.str();
  if (s.size() >= 2)
    s.resize(s.size() - 2);
  return s;
}

std::string ElementwiseProgram::str() const {
  std::ostringstream os;
  os << "program(" << numInputs << " inputs)";
  if (instrs.empty())
    os << " identity";
  for (size_t i = 0; i < instrs.size(); ++i) {
    const Instr &in = instrs[i];
    os << "\n  %" << i << " = " << opName(in.op);
    if (in.op == Op::Input)
      os << " #" << in.a;
    else if (in.op == Op::Constant)
      os << " " << in.value;
    else if (isBinary(in.op))
      os << " %" << in.a << ", %" << in.b;
    else
      os << " %" << in.a;
  }
  return os.str();
}

} // namespace octet::rt
