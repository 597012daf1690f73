//===- octet-jit-dump.cpp - print a JIT kernel's bytes for llvm-mc ---------===//
//
//   octet-jit-dump --kernel gemm-f32 --mr 9 --nr 48 --columns 17 [--bias] [--residual]
//   octet-jit-dump --kernel layernorm --n 100 [--residual] [--write-sum] [--embedding]
//   octet-jit-dump --kernel softmax --n 17 [--mask] [--scale 0.125]
//   octet-jit-dump --kernel unary --op exp|erf|tanh|sigmoid|rsqrt|reciprocal|gelu-erf|...
//   octet-jit-dump --kernel gemm-u8s8 --mr 9 --nr 48 --columns 17 --k-tail 3 [--compensation]
//                  [--bias] [--residual] [--output f32|u8|s8 --out-scale S --out-zp Z]
//   octet-jit-dump --kernel gemm-u8s8-amx --mr 32 --columns 32 --k-tail 5 [gemm-u8s8's epilogue
//                  options]   (AMX tiles; --mr rows 1..32, --columns 1..32, --k-tail K % 64)
//   octet-jit-dump --kernel ceiling-tdpbusd   (the AMX peak loop of `octetc ceilings`)
//   octet-jit-dump --kernel attention-tile-bf16   (attention's AMX-BF16 tile GEMM)
//   octet-jit-dump --kernel attention-bf16-keys|attention-bf16-values|attention-bf16-rows
//
// Generates one kernel (Xbyak only emits bytes: no AVX-512 needed on the host)
// and prints its code, up to and including the final `ret`, as llvm-mc
// disassembler input (`0x62 0xf1 ...`, 16 bytes a line). The constant table
// after the code is printed as `#` comment lines, which llvm-mc skips, one
// 32-bit word a line: `# const +OFFSET 0xBITS FLOAT`, OFFSET from the table's
// start. Check it by piping this tool's output straight to FileCheck.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/x86/AttentionBf16Kernels.h"
#include "compiler/codegen/x86/FusedKernels.h"
#include "compiler/codegen/x86/GemmF32Avx512.h"
#include "compiler/codegen/x86/Int8GemmKernelAmx.h"
#include "compiler/codegen/x86/Int8GemmKernelVnni.h"
#include "compiler/codegen/x86/ProgramEpilogue.h"
#include "runtime/Ceilings.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <memory>
#include <stdexcept>

using namespace octet::x86;
namespace cl = llvm::cl;

enum class Kernel {
  GemmF32,
  Int8GemmVnni,
  Int8GemmAmx,
  CeilingTdpbusd,
  AttentionTileBf16,
  AttentionBf16Rows,
  AttentionBf16Keys,
  AttentionBf16Values,
  LayerNorm,
  Softmax,
  Unary
};

static cl::opt<Kernel> kernel(
    "kernel", cl::Required, cl::desc("Kernel to generate"),
    cl::values(clEnumValN(Kernel::GemmF32, "gemm-f32", "AVX-512 FP32 GEMM micro-kernel"),
               clEnumValN(Kernel::Int8GemmVnni, "gemm-u8s8",
                          "AVX-512 VNNI u8 x s8 GEMM micro-kernel (--mr/--nr/--columns/--bias/"
                          "--residual as gemm-f32)"),
               clEnumValN(Kernel::Int8GemmAmx, "gemm-u8s8-amx",
                          "AMX u8 x s8 GEMM micro-kernel (--mr rows 1..32, --columns 1..32, "
                          "--k-tail K % 64, epilogue options as gemm-u8s8)"),
               clEnumValN(Kernel::CeilingTdpbusd, "ceiling-tdpbusd",
                          "the AMX tdpbusd peak loop of the machine ceilings (no options)"),
               clEnumValN(Kernel::AttentionTileBf16, "attention-tile-bf16",
                          "attention's AMX-BF16 tile GEMM (no options)"),
               clEnumValN(Kernel::AttentionBf16Rows, "attention-bf16-rows",
                          "f32 rows to bf16 rows (no options)"),
               clEnumValN(Kernel::AttentionBf16Keys, "attention-bf16-keys",
                          "K to bf16 Q·Kᵀ B tiles (no options)"),
               clEnumValN(Kernel::AttentionBf16Values, "attention-bf16-values",
                          "V to bf16 P·V B tiles (no options)"),
               clEnumValN(Kernel::LayerNorm, "layernorm", "LayerNorm over rows of --n"),
               clEnumValN(Kernel::Softmax, "softmax", "softmax over rows of --n"),
               clEnumValN(Kernel::Unary, "unary", "elementwise --op")));
// gemm-f32
static cl::opt<int> mr("mr", cl::desc("gemm-f32: rows"), cl::init(1));
static cl::opt<int> nr("nr", cl::desc("gemm-f32: panel width (32 or 48)"), cl::init(48));
static cl::opt<int> columns("columns", cl::desc("gemm-f32: valid columns (default --nr)"),
                            cl::init(0));
static cl::opt<bool> bias("bias", cl::desc("gemm-f32: add a bias row"));
static cl::opt<bool> residual("residual",
                              cl::desc("gemm-f32: add a residual; layernorm: a second source"));
// gemm-u8s8
static cl::opt<int> kTail("k-tail",
                          cl::desc("gemm-u8s8: K % 4 (masked last K group); gemm-u8s8-amx: K % 64"),
                          cl::init(0));
static cl::opt<bool> compensation("compensation",
                                  cl::desc("gemm-u8s8: subtract a_zero_point * colsum_B"));
static cl::opt<QuantOutput> output("output", cl::desc("gemm-u8s8: output type"),
                                   cl::init(QuantOutput::F32),
                                   cl::values(clEnumValN(QuantOutput::F32, "f32", ""),
                                              clEnumValN(QuantOutput::U8, "u8", ""),
                                              clEnumValN(QuantOutput::S8, "s8", "")));
static cl::opt<float> outScale("out-scale", cl::desc("gemm-u8s8: u8/s8 output scale"),
                               cl::init(1.0f));
static cl::opt<int> outZeroPoint("out-zp", cl::desc("gemm-u8s8: u8/s8 output zero point"),
                                 cl::init(0));
static cl::opt<bool> geluTimesColumn(
    "gelu-times-column",
    cl::desc("gemm-u8s8, gemm-u8s8-amx: the INT8 FFN-in's epilogue program, GELU (erf) times a "
             "per-column input, with the fast GELU of a u8/s8 output"));
// layernorm, softmax
static cl::opt<int64_t> n("n", cl::desc("layernorm, softmax: row length"), cl::init(16));
static cl::opt<bool> writeSum("write-sum", cl::desc("layernorm: store the summed sources"));
static cl::opt<bool> embedding("embedding",
                               cl::desc("layernorm: three gathered sources (embeddings)"));
static cl::opt<float> epsilon("epsilon", cl::desc("layernorm: epsilon"), cl::init(1e-5f));
static cl::opt<bool> mask("mask", cl::desc("softmax: add a mask row"));
static cl::opt<float> scale("scale", cl::desc("softmax: scale of x"), cl::init(1.0f));
// unary
static cl::opt<UnaryOp> op(
    "op", cl::desc("unary: the function"), cl::init(UnaryOp::Exp),
    cl::values(clEnumValN(UnaryOp::Neg, "neg", ""), clEnumValN(UnaryOp::Abs, "abs", ""),
               clEnumValN(UnaryOp::Exp, "exp", ""), clEnumValN(UnaryOp::Erf, "erf", ""),
               clEnumValN(UnaryOp::Tanh, "tanh", ""), clEnumValN(UnaryOp::Sigmoid, "sigmoid", ""),
               clEnumValN(UnaryOp::Rsqrt, "rsqrt", ""),
               clEnumValN(UnaryOp::Reciprocal, "reciprocal", ""),
               clEnumValN(UnaryOp::GeluErf, "gelu-erf", ""),
               clEnumValN(UnaryOp::GeluTanh, "gelu-tanh", "")));

/// The --gelu-times-column program (kept alive for the kernel that reads it).
static const EpilogueEmitter *ffnInEpilogue() {
  if (!geluTimesColumn)
    return nullptr;
  static std::unique_ptr<ProgramEpilogue> emitter = [] {
    std::string error;
    auto e = ProgramEpilogue::create(geluTimesColumnProgram(), error, {false, true},
                                     GeluAccuracy::ForRequantize);
    if (!e)
      throw std::logic_error("the FFN-in program: " + error);
    return e;
  }();
  return emitter.get();
}

static std::unique_ptr<KernelGenerator> makeKernel() {
  switch (kernel) {
  case Kernel::GemmF32: {
    GemmF32Avx512Config config{mr, nr, columns ? int(columns) : int(nr), bias, residual};
    if ((config.nr != 32 && config.nr != 48) || config.columns < 1 || config.columns > config.nr ||
        config.mr < 1 || config.mr > GemmF32Avx512::maxRows(config.nr, 0))
      return nullptr;
    return std::make_unique<GemmF32Avx512>(config);
  }
  case Kernel::Int8GemmVnni: {
    Int8GemmKernelConfig config;
    config.rows = mr, config.nr = nr, config.columns = columns ? int(columns) : int(nr);
    config.kTailBytes = kTail, config.epilogue.compensation = compensation;
    config.epilogue.bias = bias, config.epilogue.residual = residual;
    config.epilogue.output = output;
    config.epilogue.outScale = outScale, config.epilogue.outZeroPoint = outZeroPoint;
    config.epilogue.elementwise = ffnInEpilogue();
    config.epilogue.columnStride = 64 * 1024;
    return std::make_unique<Int8GemmKernelVnni>(config); // throws on a shape it rejects
  }
  case Kernel::Int8GemmAmx: {
    Int8GemmKernelConfig config;
    config.rows = mr, config.nr = kAmxPanel, config.columns = columns ? int(columns) : kAmxPanel;
    config.kTailBytes = kTail;
    config.epilogue.compensation = compensation, config.epilogue.bias = bias;
    config.epilogue.residual = residual, config.epilogue.output = output;
    config.epilogue.outScale = outScale, config.epilogue.outZeroPoint = outZeroPoint;
    config.epilogue.elementwise = ffnInEpilogue();
    config.epilogue.columnStride = 64 * 1024;
    return std::make_unique<Int8GemmKernelAmx>(config); // throws on a shape it rejects
  }
  case Kernel::CeilingTdpbusd:
    return octet::rt::makeAmxPeakLoop();
  case Kernel::AttentionTileBf16:
    return std::make_unique<AttentionTileBf16Kernel>();
  case Kernel::AttentionBf16Rows:
    return std::make_unique<AttentionBf16PackKernel>(Bf16Pack::Rows);
  case Kernel::AttentionBf16Keys:
    return std::make_unique<AttentionBf16PackKernel>(Bf16Pack::Keys);
  case Kernel::AttentionBf16Values:
    return std::make_unique<AttentionBf16PackKernel>(Bf16Pack::Values);
  case Kernel::LayerNorm: {
    std::vector<RowSource> sources(residual ? 2 : 1, RowSource::Dense);
    if (embedding)
      sources.assign(3, RowSource::Gathered);
    return std::make_unique<LayerNormKernel>(n, sources, writeSum, epsilon);
  }
  case Kernel::Softmax:
    return std::make_unique<SoftmaxKernel>(n, scale, mask);
  case Kernel::Unary:
    return std::make_unique<UnaryKernel>(op);
  }
  return nullptr;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "Octet JIT kernel bytes for llvm-mc --disassemble\n");
  std::unique_ptr<KernelGenerator> gen;
  std::vector<uint8_t> bytes;
  size_t code;
  try { // generators throw on arguments they reject (row length, register pool)
    gen = makeKernel();
    if (!gen)
      throw std::invalid_argument("gemm-f32 shape: nr 32|48, 1 <= columns <= nr, 1 <= mr <= " +
                                  std::to_string(GemmF32Avx512::maxRows(nr, 0)));
    bytes = gen->bytes();
    code = gen->codeSize();
  } catch (const std::exception &e) {
    llvm::errs() << "octet-jit-dump: " << e.what() << "\n";
    return 1;
  }
  llvm::outs() << "# " << gen->name() << ": " << code << " bytes of code\n";
  for (size_t i = 0; i < code; ++i)
    llvm::outs() << llvm::format_hex(bytes[i], 4) << (i % 16 == 15 || i + 1 == code ? "\n" : " ");
  // The table starts at the first 64-byte boundary after the code.
  const size_t table = (code + 63) / 64 * 64;
  for (size_t at = table; at + 4 <= bytes.size(); at += 4) {
    uint32_t bits;
    float value;
    std::memcpy(&bits, &bytes[at], 4);
    std::memcpy(&value, &bits, 4);
    llvm::outs() << "# const +" << (at - table) << " " << llvm::format_hex(bits, 10) << " "
                 << llvm::format("%.9g", value) << "\n";
  }
  return 0;
}
