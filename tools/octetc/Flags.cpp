//===- Flags.cpp - every octetc flag and subcommand -----------------------===//
#include "tools/octetc/Octetc.h"

#include "compiler/driver/Compile.h" // kDefaultCalibrationSamples
#include "runtime/Ceilings.h"

namespace octetc {

cl::OptionCategory octetcCategory("octetc options");
cl::SubCommand importCommand("import", "Import an ONNX model and print it as octet IR");
cl::opt<std::string> importModel(cl::Positional, cl::Required, cl::desc("<model.onnx>"),
                                 cl::sub(importCommand), cl::cat(octetcCategory));
cl::opt<std::string> importOutput("o", cl::desc("Output file (default: stdout)"),
                                  cl::value_desc("file"), cl::init("-"), cl::sub(importCommand),
                                  cl::cat(octetcCategory));
cl::opt<bool> elideWeights(
    "elide-weights",
    cl::desc("Elide large constants and weight blobs (for reading: the output does not parse "
             "back to the same model)"),
    cl::sub(importCommand), cl::cat(octetcCategory));
cl::opt<bool> emitBytecode(
    "emit-bytecode",
    cl::desc("Write MLIR bytecode (weights stay binary: fast for large models, and octet-opt "
             "reads it)"),
    cl::sub(importCommand), cl::cat(octetcCategory));

cl::SubCommand opsCommand("ops", "List the supported ONNX op types, one per line");

cl::SubCommand compileCommand(
    "compile",
    "Compile an ONNX model (FP32, or INT8 with --int8) ahead of time into one self-contained "
    "shared object: the plan, the kernels' code and the weights, with the runtime linked in "
    "by the system C compiler ($CC, else cc). The C API opens it (octet_model_open), a program "
    "can link it, and octetc run runs it (docs/aot.md)");
cl::opt<std::string> compileOutput("o", cl::desc("The model.so to write"), cl::value_desc("FILE"),
                                   cl::Required, cl::sub(compileCommand), cl::cat(octetcCategory));

cl::SubCommand
    inspectCommand("inspect",
                   "Print what a model.so written by octetc compile holds (docs/aot.md)");
cl::opt<std::string> inspectModel(cl::Positional, cl::Required, cl::desc("<model.so>"),
                                  cl::sub(inspectCommand), cl::cat(octetcCategory));
cl::opt<std::string> inspectCode("code",
                                 cl::desc("Write the kernel code section (raw x86-64) to FILE"),
                                 cl::value_desc("FILE"), cl::sub(inspectCommand),
                                 cl::cat(octetcCategory));

cl::SubCommand runCommand(
    "run",
    "Compile an ONNX model (FP32, or INT8 with --int8) and run it. Inputs come from --input files, "
    "from the input "
    "sets of --input-sets, or are made up (random token ids within the vocabulary, attention "
    "masks of ones with a padded tail on every other row, token type ids 0, f32 normal)");

/// The modifier of the flags that run and compile share: both subcommands and
/// octetc's category (cl::opt applies a modifier through its apply()).
struct RunAndCompile {
  template <typename Opt> void apply(Opt &option) const {
    option.addSubCommand(runCommand);
    option.addSubCommand(compileCommand);
    option.addCategory(octetcCategory);
  }
} const runAndCompile;

/// The same for the flags of run alone.
struct RunOnly {
  template <typename Opt> void apply(Opt &option) const {
    option.addSubCommand(runCommand);
    option.addCategory(octetcCategory);
  }
} const runOnly;
cl::opt<std::string> runModel(cl::Positional, cl::Required,
                              cl::desc("<model.onnx> (run: or a model.so of octetc compile)"),
                              runAndCompile);
cl::list<std::string>
    runInputs("input",
              cl::desc("An input as NAME=FILE (.npy, or an ONNX TensorProto .pb); repeatable. "
                       "Inputs not given are made up to match the given ones' dims"),
              cl::value_desc("NAME=FILE"), runOnly);
cl::opt<std::string> runInputSets(
    "input-sets",
    cl::desc("Run every subdirectory of DIR (sorted by name) as one input set of NAME.npy / "
             "NAME.pb files, all on one compiled model; with --output, set S's outputs go to "
             "OUTDIR/S/"),
    cl::value_desc("DIR"), runOnly);
cl::opt<int64_t> runBatch("batch", cl::desc("Batch size of made-up inputs (default 1)"),
                          cl::init(1), runOnly);
cl::opt<int64_t> runSeq("seq", cl::desc("Sequence length of made-up inputs (default 128)"),
                        cl::init(128), runOnly);
cl::opt<unsigned> runSeed("seed", cl::desc("Seed of made-up inputs"), cl::init(0), runOnly);
cl::opt<unsigned> runRepeat("repeat", cl::desc("Timed runs (default 10)"), cl::init(10), runOnly);
cl::opt<unsigned> runWarmup("warmup", cl::desc("Untimed runs first (default 2)"), cl::init(2),
                            runOnly);
cl::opt<std::string> runOutput("output", cl::desc("Write each output as DIR/NAME.npy"),
                               cl::value_desc("DIR"), runOnly);
cl::opt<std::string> runGemm("gemm", cl::desc("GEMM provider: auto (default), jit or onednn"),
                             cl::init("auto"), runAndCompile);
cl::opt<std::string> runIsa("isa",
                            cl::desc("host (default), or avx2: act as on a host without AVX-512"),
                            cl::init("host"), runAndCompile);
cl::opt<std::string> runTarget(
    "target",
    cl::desc("The CPU to build the kernels for: host (default), avx2, avx-vnni, avx512, "
             "avx512-vnni, amx or a CPU name (zen4, sapphirerapids, ...). `run` refuses a target "
             "this CPU cannot execute"),
    cl::value_desc("NAME"), cl::init("host"), runAndCompile);
cl::opt<bool> runAutotune(
    "autotune",
    cl::desc("Choose each GEMM's provider per M bucket by timing the candidates that run here "
             "(docs/kernel-selection.md); default: the documented rule"),
    runAndCompile);
cl::opt<std::string> runAttention(
    "attention",
    cl::desc("auto (default: int8 with --int8, bf16 with --precision bf16, else f32); f32; "
             "bf16: attention's Q·Kᵀ and P·V on bf16 operands with f32 sums, on AMX-BF16 or "
             "AVX512-BF16 (docs/attention-bf16.md); int8: on vpdpbusd, Q, K, V and the "
             "probabilities quantized at run time per row, key and head dim (AVX-512 VNNI; "
             "docs/attention-int8.md). Where the target lacks the instructions: f32"),
    cl::value_desc("auto|f32|bf16|int8"), cl::init("auto"), runAndCompile);
cl::opt<std::string> runPrecision(
    "precision",
    cl::desc("f32 (default), or bf16 for an FP32 model: every linear's weight stored as bf16 "
             "(half the bytes) and multiplied on vdpbf16ps with f32 sums, attention in bf16 "
             "too unless --attention=f32 (needs AVX512-BF16; not with --int8; "
             "docs/kernel-selection.md)"),
    cl::value_desc("f32|bf16"), cl::init("f32"), runAndCompile);
cl::opt<bool> runPrintKernelChoices(
    "print-kernel-choices",
    cl::desc("Print each GEMM's provider per M bucket: candidates' times, choice and reason"),
    runAndCompile);
cl::opt<std::string> runPasses(
    "passes",
    cl::desc("The passes between import and planning, as a comma-separated pipeline of function "
             "passes (default: the full FP32 pipeline; 'none': no optimization pass). The "
             "runtime's lowerings (octet-lower-runtime-linear, octet-lower-gelu) always follow. "
             "Any prefix of the pipeline must compute the same outputs. With --int8 they replace "
             "the INT8 lowering only: recognition (and, static, calibration) run first, then "
             "these passes ('none': plan the recognized, calibrated FP32 IR)"),
    cl::value_desc("PIPELINE"), cl::init(""), runAndCompile);
cl::opt<std::string> runInt8(
    "int8",
    cl::desc("Compile for INT8: 'static' (calibrate on --calib samples, SmoothQuant, per-tensor "
             "activation scales), 'dynamic' (per-token activation scales at run time, no "
             "calibration) or 'none' (FP32, the default). See docs/calibration.md"),
    cl::value_desc("static|dynamic|none"), cl::init("none"), runAndCompile);
// cl::desc keeps a StringRef: a description built at run time must outlive
// the option, so it is a static string, never a temporary.
const std::string runCalibDesc =
    std::string("Calibration samples for --int8=static: a directory of input sets "
                "(like --input-sets) or generate:N[xB][xS] (N generated batches of B "
                "sequences of S tokens; default ") +
    octet::kDefaultCalibrationSamples + ")";
cl::opt<std::string> runCalib("calib", cl::desc(runCalibDesc), cl::value_desc("DIR|generate:SPEC"),
                              runAndCompile);
cl::opt<double> runSmoothAlpha(
    "smoothquant-alpha",
    cl::desc("SmoothQuant's migration strength in [0, 1] for --int8=static (default 0.7)"),
    cl::init(0.7), runAndCompile);
cl::opt<bool> runNoSmooth("no-smoothquant", cl::desc("--int8=static without SmoothQuant"),
                          runAndCompile);
cl::opt<double> runCalibPercentile(
    "calib-percentile",
    cl::desc("--int8=static: clip the per-tensor activation range to the P-th percentile "
             "(P in (50, 100], e.g. 99.99; default: min/max)"),
    cl::init(0), runAndCompile);
cl::opt<bool> runPrintIr("print-ir-after-all",
                         cl::desc("Print the IR after import and after every pass"), runAndCompile);
cl::opt<bool> runNoPackTokens(
    "no-pack-tokens",
    cl::desc("Compute every position of a padded batch, as ONNX Runtime does (default: the "
             "layers skip padding tokens and padding positions of token-wise outputs are 0; "
             "docs/padding-free.md)"),
    runAndCompile);
cl::opt<bool> runExplainFusion(
    "explain-fusion",
    cl::desc("List every attention, LayerNorm and GELU block that was not fused, with its ONNX "
             "nodes and why (without it, one warning line says how many stayed unfused)"),
    runAndCompile);
cl::opt<bool> runPrintPlan("print-plan", cl::desc("Print the execution plan"), runOnly);
cl::opt<std::string> runConstants(
    "constants",
    cl::desc("Opening a model.so: huge_pages (default: its weights copied onto 2 MiB pages, "
             "faster GEMMs) or mapped (read where the file is mapped, shared between the "
             "processes that open it; docs/aot.md)"),
    cl::value_desc("huge_pages|mapped"), runOnly);
cl::opt<bool> runProfile(
    "profile",
    cl::desc("Time every step of the plan over the repeats and print a table (median per step, "
             "share of the total, ops, bytes, GOP/s, GB/s and the fraction of the roofline bound "
             "under the machine's ceilings; see docs/profiling.md)"),
    runOnly);
cl::opt<std::string>
    runProfileJson("profile-json",
                   cl::desc("Write the --profile table as JSON to FILE (implies profiling)"),
                   cl::value_desc("FILE"), runOnly);

cl::SubCommand calibrateCommand(
    "calibrate",
    "Import an ONNX model, run the recognition passes and calibration, and write the "
    "calibrated IR: MLIR with octet.calib (per-channel abs-max, per-tensor min/max of each GEMM "
    "input) on every octet.linear / octet.fused_linear. Progress and a summary go to stderr");
cl::opt<std::string> calibrateModel(cl::Positional, cl::Required, cl::desc("<model.onnx>"),
                                    cl::sub(calibrateCommand), cl::cat(octetcCategory));
const std::string calibrateSamplesDesc =
    std::string("A directory with one subdirectory per batch holding NAME.npy or "
                "NAME.pb for every model input, or generate:N[xB][xS]: N generated "
                "token batches of B sequences (default 8) of S tokens (default 128); "
                "default ") +
    octet::kDefaultCalibrationSamples;
cl::opt<std::string> calibrateSamples("samples", cl::desc(calibrateSamplesDesc),
                                      cl::value_desc("DIR|generate:SPEC"),
                                      cl::sub(calibrateCommand), cl::cat(octetcCategory));
cl::opt<double> calibratePercentile(
    "percentile",
    cl::desc("Per-tensor range: the mean over batches of each batch's (100-P)-th and P-th "
             "percentile, P in (50, 100] (e.g. 99.99; default: min/max over all batches)"),
    cl::init(0), cl::sub(calibrateCommand), cl::cat(octetcCategory));
cl::opt<std::string> calibrateOutput(
    "o", cl::desc("Output file (default: stdout; MLIR bytecode when it ends in .mlirbc)"),
    cl::value_desc("file"), cl::init("-"), cl::sub(calibrateCommand), cl::cat(octetcCategory));
cl::opt<std::string> calibrateGemm("gemm", cl::desc("GEMM provider: auto (default), jit or onednn"),
                                   cl::init("auto"), cl::sub(calibrateCommand),
                                   cl::cat(octetcCategory));
cl::opt<bool> calibratePrintIr("print-ir-after-all",
                               cl::desc("Print the IR after import and after every pass"),
                               cl::sub(calibrateCommand), cl::cat(octetcCategory));

cl::SubCommand
    ceilingsCommand("ceilings",
                    "Print the machine's roofline ceilings (peak FP32 FMA, INT8 vpdpbusd, read "
                    "bandwidth from L2, L3 and DRAM), measured once per host and thread count and "
                    "cached");
cl::opt<bool> ceilingsRefresh("refresh", cl::desc("Measure again, replacing the cache"),
                              cl::sub(ceilingsCommand), cl::cat(octetcCategory));
cl::opt<int> ceilingsRounds(
    "rounds", cl::desc("Whole measurements when measuring, each ceiling the best (default 3)"),
    cl::init(octet::rt::kDefaultCeilingRounds), cl::sub(ceilingsCommand), cl::cat(octetcCategory));
cl::opt<bool> ceilingsJson("json", cl::desc("Print the cached JSON"), cl::sub(ceilingsCommand),
                           cl::cat(octetcCategory));
cl::opt<int> ceilingsThreads("threads", cl::desc("OpenMP threads (default: all)"), cl::init(0),
                             cl::sub(ceilingsCommand), cl::cat(octetcCategory));
cl::opt<int> runThreads("threads", cl::desc("OpenMP threads (default: all)"), cl::init(0), runOnly);
cl::opt<std::string> memoryBudgetFlag(
    "memory-budget",
    cl::desc("The most memory the model may claim: its constants together (checked before any is "
             "read), and each made-up input. Bytes, or with a K, M or G suffix (powers of 1024); "
             "default: this host's physical memory"),
    cl::value_desc("BYTES"), cl::init(""), cl::sub(importCommand), cl::sub(runCommand),
    cl::sub(compileCommand), cl::sub(calibrateCommand), cl::cat(octetcCategory));

} // namespace octetc
