/*===- octet.h - the Octet C API ----------------------------------------===*
 *
 * Compile a BERT-family encoder from ONNX and run it. One compiled model is
 * immutable and serves concurrent octet_run calls from many threads, for any
 * batch and sequence length, with no recompilation.
 *
 * Errors: every call that can fail returns an octet_status; the message of
 * the calling thread's last failure is octet_last_error(). Nothing aborts,
 * and no input (null pointers, wrong dtypes, shapes or token ids) is read
 * out of bounds.
 *
 * See docs/c-api.md and examples/c/.
 *===----------------------------------------------------------------------===*/
#ifndef OCTET_OCTET_H
#define OCTET_OCTET_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OCTET_MAX_RANK 8

typedef enum {
  OCTET_OK = 0,
  OCTET_ERROR_INVALID_ARGUMENT = 1, /* a null pointer, bad option, index out of range */
  OCTET_ERROR_INVALID_MODEL = 2,    /* the ONNX model is malformed or cannot be read */
  OCTET_ERROR_UNSUPPORTED = 3,      /* a valid model uses something Octet does not support */
  OCTET_ERROR_INVALID_INPUT = 4,    /* octet_run: an input's dtype, shape or values */
  OCTET_ERROR_OUTPUT_TOO_SMALL = 5, /* octet_run: a caller-owned output buffer */
  OCTET_ERROR_RUNTIME = 6,          /* anything else during a run (out of memory, ...) */
} octet_status;

typedef enum {
  OCTET_F32 = 1,
  OCTET_F64 = 2,
  OCTET_I64 = 3,
  OCTET_I32 = 4,
  OCTET_I8 = 5,
  OCTET_U8 = 6,
  OCTET_BOOL = 7, /* one byte per element, 0 or 1 */
  OCTET_I16 = 8,
  OCTET_U16 = 9,
  OCTET_U32 = 10,
  OCTET_U64 = 11,
  OCTET_F16 = 12, /* IEEE binary16 bits (uint16_t storage) */
} octet_dtype;

typedef struct octet_model octet_model;
typedef struct octet_options octet_options;

/* The calling thread's last error message ("" if none); valid until its next call. */
const char *octet_last_error(void);
/* Bytes per element, 0 for an unknown dtype; and its name ("f32", ...). */
size_t octet_dtype_size(octet_dtype dtype);
const char *octet_dtype_name(octet_dtype dtype);

/* ---- Options --------------------------------------------------------------
 * Keys:  "gemm"               "auto" (default) | "jit" | "onednn"
 *        "isa"                "host" (default) | "avx2" (no AVX-512 kernels)
 *        "print_ir_after_all" "0" | "1": the IR after every pass, on stderr
 *        "profile"            "0" | "1": time every step of each octet_run
 *                             (octet_model_last_profile_json)
 *        "int8"               "none" (default, FP32) | "static" (calibrated
 *                             per-tensor activation scales) | "dynamic"
 *                             (per-token scales at run time)
 *        "calibration_samples"    static: a directory of input sets or
 *                             "generate:N[xB][xS]" (default "generate:16x8x128")
 *        "calibration_percentile" "0" (default: min/max) | P in (50, 100]
 *        "calibration_progress"   "0" (default) | "1": progress on stderr
 *        "smoothquant"        "on" (default) | "off"   (static only)
 *        "smoothquant_alpha"  a number in [0, 1], default "0.7"
 *        "external_data_dir"  the folder a model's external data must lie in
 *                             (default: the model file's; create_from_bytes:
 *                             none, external data is refused)
 *        "memory_budget"      bytes the model's constants may claim, checked
 *                             before any is read ("0", default: this host's
 *                             physical memory)
 *        "constants"          opening a model.so: "huge_pages" (default: the
 *                             weights copied onto 2 MiB pages, faster GEMMs)
 *                             | "mapped" (read where the file is mapped,
 *                             shared by the processes that open it)
 * See docs/calibration.md.
 */
octet_options *octet_options_create(void);
octet_status octet_options_set(octet_options *options, const char *key, const char *value);
void octet_options_destroy(octet_options *options);

/* ---- Models (JIT: compiled in this process) --------------------------------
 * options may be NULL (defaults). On failure *model is set to NULL. */
octet_status octet_model_create_from_file(const char *onnx_path, const octet_options *options,
                                          octet_model **model);
octet_status octet_model_create_from_bytes(const void *onnx_bytes, size_t size,
                                           const octet_options *options, octet_model **model);
void octet_model_destroy(octet_model *model); /* NULL is ignored */

/* ---- Models (AOT: compiled by `octetc compile` into a model.so) ------------
 * Opens the model.so at so_path: the file is checked (an ELF64 x86-64 shared
 * object, not truncated), loaded, and its Plan rebuilt in place (the kernel
 * code stays where the file is mapped; the weights are copied onto huge pages
 * unless the option "constants" is "mapped"). A corrupt file, one from
 * another Octet version, or one compiled for a CPU target this CPU cannot run
 * (it names the missing features) is OCTET_ERROR_INVALID_MODEL, never a crash;
 * corrupt weights are found before the first octet_run (it fails so).
 * so_path NULL: the model embedded in the model.so this program is linked
 * against (a program that links model.so directly; from liboctet.so it is
 * OCTET_ERROR_INVALID_ARGUMENT). options may be NULL; only "profile" and
 * "constants" apply, a compile option ("int8", "gemm", ...) is
 * OCTET_ERROR_INVALID_ARGUMENT.
 * A model.so exports this same API; there the compiler's entry points
 * (octet_model_create_from_*, octet_calibrate) return OCTET_ERROR_UNSUPPORTED.
 * See docs/aot.md. */
octet_status octet_model_open(const char *so_path, const octet_options *options,
                              octet_model **model);

/* ---- Calibration -----------------------------------------------------------
 * Runs the recognition passes and calibration of the model on `samples` (a
 * directory of input sets or "generate:N[xB][xS]"; NULL: the option
 * "calibration_samples" or its default) and writes the calibrated IR (MLIR
 * text, or bytecode for a path ending in ".mlirbc"; "-" is stdout) with
 * octet.calib on every linear. options may be NULL. */
octet_status octet_calibrate(const char *onnx_path, const char *samples,
                             const octet_options *options, const char *output_path);

/* ---- Inputs and outputs ----------------------------------------------------
 * dims[i] is -1 where the dim is symbolic; dim_names[i] is its ONNX name
 * ("batch", "sequence") or "" for a static or unnamed dim. The strings and
 * arrays live as long as the model. */
typedef struct {
  const char *name;
  octet_dtype dtype;
  int32_t rank;
  const int64_t *dims;
  const char *const *dim_names;
} octet_tensor_info;

int32_t octet_model_num_inputs(const octet_model *model);
int32_t octet_model_num_outputs(const octet_model *model);
octet_status octet_model_input_info(const octet_model *model, int32_t index,
                                    octet_tensor_info *info);
octet_status octet_model_output_info(const octet_model *model, int32_t index,
                                     octet_tensor_info *info);

/* What the compiler fused (a model created from ONNX; octetc --explain-fusion):
 * "fusion: N of M attention blocks fused, ..." and one "not fused: ..." line per
 * attention, LayerNorm or GELU block that stayed unfused, with its ONNX nodes and
 * why. Owned by the model; "" for a model.so (decided when it was compiled) and
 * NULL (octet_last_error) for a null model. */
const char *octet_model_fusion_report(const octet_model *model);

/* ---- Running ---------------------------------------------------------------
 * A tensor passed to or returned from octet_run: row-major, dense.
 *  - inputs: data, dtype, rank and dims set by the caller, in the model's
 *    input order (octet_model_input_info).
 *  - outputs, in the model's output order: octet_run sets dtype, rank and
 *    dims. Caller-owned: data points to `bytes` bytes; if the output needs
 *    more, the run fails with OCTET_ERROR_OUTPUT_TOO_SMALL and sets dims.
 *    Runtime-owned: data == NULL; octet_run allocates it (and sets bytes),
 *    and the caller releases it with octet_tensor_free. */
typedef struct {
  void *data;
  size_t bytes;
  octet_dtype dtype;
  int32_t rank;
  int64_t dims[OCTET_MAX_RANK];
} octet_tensor;

octet_status octet_run(const octet_model *model, const octet_tensor *inputs, int32_t num_inputs,
                       octet_tensor *outputs, int32_t num_outputs);
void octet_tensor_free(void *data);

/* ---- Profiling -------------------------------------------------------------
 * For a model created with the option "profile" = "1": the last successful
 * octet_run's per-step profile as JSON (docs/profiling.md): each step's kernel,
 * shapes, time, ops, bytes, GOP/s, GB/s and fraction of the roofline bound
 * under the machine's ceilings (measured on first use, about a second, then
 * cached per host). Writes a NUL-terminated string into buffer (size bytes);
 * *needed (optional) gets the size required, NUL included. A buffer that is
 * too small (or NULL with size 0) gives OCTET_ERROR_OUTPUT_TOO_SMALL; a model
 * without profiling or with no run yet gives OCTET_ERROR_INVALID_ARGUMENT. */
octet_status octet_model_last_profile_json(const octet_model *model, char *buffer, size_t size,
                                           size_t *needed);

/* ---- Tools for bindings (the Python package, docs/python.md) -------------
 * Progress of a compile (liboctet.so only): `callback` is called on the
 * compiling thread with a message and, where known, how far it is: during
 * static calibration done = batches observed, total = batches; otherwise
 * done = 0 and total = -1 ("compile", "link"). NULL removes it. The callback
 * must not call back into Octet with the same options. */
typedef void (*octet_progress_fn)(void *user, const char *message, int64_t done, int64_t total);
octet_status octet_options_set_progress(octet_options *options, octet_progress_fn callback,
                                        void *user);

/* Compiles the ONNX model at onnx_path with `options` (as
 * octet_model_create_from_file) and writes it as a self-contained model.so at
 * so_path (as `octetc compile`; docs/aot.md): the AOT runtime comes from
 * $OCTET_AOT_RUNTIME_DIR or the build tree's, the C compiler from $CC or cc.
 * The file is replaced only once the link succeeded. liboctet.so only. */
octet_status octet_compile_to_so(const char *onnx_path, const octet_options *options,
                                 const char *so_path);

/* This machine's measured ceilings (peak FP32 / INT8 GOP/s, L2, L3 and DRAM
 * bandwidth; docs/profiling.md) for `threads` OpenMP threads (<= 0: all) as
 * JSON: read from the per-host cache, or measured (about a second) and
 * cached when there is none or `refresh` is non-zero. Buffer rules as
 * octet_model_last_profile_json. */
octet_status octet_ceilings_json(int32_t threads, int32_t refresh, char *buffer, size_t size,
                                 size_t *needed);

#ifdef __cplusplus
}
#endif

#endif /* OCTET_OCTET_H */
