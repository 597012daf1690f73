//===- ElementwiseKernel.cpp ----------------------------------------------===//
#include "compiler/codegen/x86/ElementwiseKernel.h"

#include <cstddef>

namespace octet::x86 {
using namespace Xbyak;

ElementwiseKernel::ElementwiseKernel(std::vector<bool> broadcastColumns)
    : KernelGenerator("elementwise_program", Isa::Avx512, 64 * 1024),
      broadcastColumns_(std::move(broadcastColumns)) {}

std::unique_ptr<ElementwiseKernel> ElementwiseKernel::create(const rt::ElementwiseProgram &program,
                                                             std::vector<bool> broadcastColumns,
                                                             std::string &error) {
  if (program.numInputs > kElementwiseMaxInputs) {
    error = "the program has " + std::to_string(program.numInputs) +
            " inputs; the elementwise kernel takes at most " +
            std::to_string(kElementwiseMaxInputs);
    return nullptr;
  }
  broadcastColumns.resize(std::max(program.numInputs, 1), false);
  std::unique_ptr<ElementwiseKernel> k(new ElementwiseKernel(std::move(broadcastColumns)));
  error = k->lowering_.plan(program, false, 32);
  if (!error.empty())
    return nullptr;
  k->fn_ = k->entry<Fn>();
  return k;
}

void ElementwiseKernel::generate() {
  const Reg64 rArgs = rdi, rRows = rsi, rFullBytes = rdx, rCol = rax, rOut = rbx, rTmp = rcx;
  const Reg64 rIn[kElementwiseMaxInputs] = {r8, r9, r10, r11, r12, r13, r14, r15};
  const Opmask kTail = k1;
  const std::vector<bool> &read = lowering_.inputsRead();
  const int inputs = int(read.size());

  preamble();
  Label done, rowLoop, colLoop, tail, rowEnd;
  mov(rRows, ptr[rArgs + offsetof(ElementwiseKernelArgs, rows)]);
  test(rRows, rRows);
  jle(done, T_NEAR);
  mov(rFullBytes, ptr[rArgs + offsetof(ElementwiseKernelArgs, cols)]);
  // Tail mask from cols % 16, then the bytes of the full vectors.
  mov(ecx, edx);
  and_(ecx, 15);
  mov(eax, 1);
  shl(eax, cl);
  dec(eax);
  kmovw(kTail, eax);
  and_(rFullBytes, ~int64_t(15));
  shl(rFullBytes, 2);
  mov(rOut, ptr[rArgs + offsetof(ElementwiseKernelArgs, out)]);
  for (int i = 0; i < inputs; ++i)
    if (read[i])
      mov(rIn[i], ptr[rArgs + offsetof(ElementwiseKernelArgs, in) + 8 * i]);

  std::vector<Zmm> values, temps;
  int next = 1;
  for (int r = 0; r < lowering_.extraValueRegisters(); ++r)
    values.push_back(Zmm(next++));
  for (int r = 0; r < lowering_.tempRegisters(); ++r)
    temps.push_back(Zmm(next++));
  const std::vector<Opmask> masks = {k2, k3};
  auto body = [&](bool isTail) {
    lowering_.emit(*this, constants_, zmm0, values, temps, masks, [&](int i, const Zmm &dst) {
      if (broadcastColumns_[i])
        vbroadcastss(dst, dword[rIn[i]]);
      else if (isTail)
        vmovups(dst | kTail | T_z, zword[rIn[i] + rCol]);
      else
        vmovups(dst, zword[rIn[i] + rCol]);
    });
    if (isTail)
      vmovups(zword[rOut + rCol] | kTail, zmm0);
    else
      vmovups(zword[rOut + rCol], zmm0);
  };

  align(16);
  L(rowLoop);
  xor_(rCol, rCol);
  L(colLoop);
  cmp(rCol, rFullBytes);
  jge(tail, T_NEAR);
  body(false);
  add(rCol, 64);
  jmp(colLoop, T_NEAR);
  L(tail);
  kortestw(kTail, kTail);
  jz(rowEnd, T_NEAR);
  body(true);
  L(rowEnd);
  for (int i = 0; i < inputs; ++i)
    if (read[i]) {
      mov(rTmp, ptr[rArgs + offsetof(ElementwiseKernelArgs, inRowStride) + 8 * i]);
      lea(rIn[i], ptr[rIn[i] + rTmp * 4]);
    }
  mov(rTmp, ptr[rArgs + offsetof(ElementwiseKernelArgs, outRowStride)]);
  lea(rOut, ptr[rOut + rTmp * 4]);
  dec(rRows);
  jnz(rowLoop, T_NEAR);
  L(done);
  postamble();
  constants_.emit();
}

} // namespace octet::x86
