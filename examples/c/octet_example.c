/* octet_example - compile an ONNX BERT-family encoder and run it once (C99).
 *
 *   octet_example MODEL.onnx|MODEL.so|- [batch sequence]
 *
 * MODEL.onnx is compiled here (JIT); MODEL.so, written by `octetc compile`,
 * is opened with octet_model_open (AOT, through liboctet.so); "-" opens the
 * model.so this program was linked against instead of liboctet.so:
 *   cc octet_example.c -Iruntime/include model.so -Wl,-rpath,DIR -lm
 * (docs/aot.md).
 * Lists the model's inputs and outputs, fills the int64 inputs (token ids in
 * 1..99, an attention mask of ones whose second row ends in two padding
 * tokens, token types 0), runs with runtime-owned outputs and prints each
 * output's shape, first values and checksum. Every status is checked; on
 * failure octet_last_error() says why.
 */
#include <octet/octet.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check(octet_status status, const char *what) {
  if (status == OCTET_OK)
    return 1;
  fprintf(stderr, "octet_example: %s failed (status %d): %s\n", what, (int)status,
          octet_last_error());
  return 0;
}

/* JIT from ONNX, AOT from a model.so, or the linked model.so ("-"). */
static octet_status open_model(const char *path, octet_model **model) {
  size_t length = strlen(path);
  if (strcmp(path, "-") == 0)
    return octet_model_open(NULL, NULL, model);
  if (length > 3 && strcmp(path + length - 3, ".so") == 0)
    return octet_model_open(path, NULL, model);
  return octet_model_create_from_file(path, NULL, model);
}

static void print_info(const char *kind, int32_t index, const octet_tensor_info *info) {
  printf("%s %d: %s %s [", kind, (int)index, info->name, octet_dtype_name(info->dtype));
  for (int32_t d = 0; d < info->rank; ++d) {
    if (d)
      printf(", ");
    if (info->dims[d] >= 0)
      printf("%lld", (long long)info->dims[d]);
    else if (info->dim_names[d][0])
      printf("%s", info->dim_names[d]);
    else
      printf("?");
  }
  printf("]\n");
}

/* Fills one [batch, sequence] int64 input according to its name. */
static void fill_input(const char *name, int64_t *data, int64_t batch, int64_t sequence) {
  int is_mask = strstr(name, "mask") != NULL;
  int is_type = strstr(name, "type") != NULL;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < sequence; ++s) {
      int64_t value;
      if (is_mask) /* the second row is padded: its last two tokens are masked out */
        value = (b == 1 && sequence > 2 && s >= sequence - 2) ? 0 : 1;
      else if (is_type)
        value = 0;
      else
        value = 1 + (b * 31 + s * 7) % 99; /* token ids 1..99 */
      data[b * sequence + s] = value;
    }
}

static double element_as_double(const octet_tensor *t, int64_t i) {
  switch (t->dtype) {
  case OCTET_F32:
    return ((const float *)t->data)[i];
  case OCTET_F64:
    return ((const double *)t->data)[i];
  case OCTET_I64:
    return (double)((const int64_t *)t->data)[i];
  case OCTET_I32:
    return ((const int32_t *)t->data)[i];
  case OCTET_I8:
    return ((const int8_t *)t->data)[i];
  default:
    return ((const uint8_t *)t->data)[i];
  }
}

int main(int argc, char **argv) {
  if (argc != 2 && argc != 4) {
    fprintf(stderr, "usage: %s MODEL.onnx|MODEL.so|- [batch sequence]\n", argv[0]);
    return 2;
  }
  int64_t batch = argc == 4 ? atoll(argv[2]) : 2;
  int64_t sequence = argc == 4 ? atoll(argv[3]) : 8;
  if (batch < 1 || sequence < 1) {
    fprintf(stderr, "octet_example: batch and sequence must be positive\n");
    return 2;
  }

  int exit_code = 1;
  octet_model *model = NULL;
  octet_tensor *inputs = NULL, *outputs = NULL;
  int32_t num_inputs = 0, num_outputs = 0;

  if (!check(open_model(argv[1], &model), "opening the model"))
    goto done;
  num_inputs = octet_model_num_inputs(model);
  num_outputs = octet_model_num_outputs(model);
  if (num_inputs < 0 || num_outputs < 0) {
    fprintf(stderr, "octet_example: %s\n", octet_last_error());
    goto done;
  }
  inputs = calloc((size_t)num_inputs + 1, sizeof(octet_tensor));
  outputs = calloc((size_t)num_outputs + 1, sizeof(octet_tensor));
  if (!inputs || !outputs) {
    fprintf(stderr, "octet_example: out of memory\n");
    goto done;
  }

  for (int32_t i = 0; i < num_inputs; ++i) {
    octet_tensor_info info;
    if (!check(octet_model_input_info(model, i, &info), "octet_model_input_info"))
      goto done;
    print_info("input", i, &info);
    if (info.dtype != OCTET_I64 || info.rank != 2) {
      fprintf(stderr, "octet_example: input '%s' is not an int64 [batch, sequence] tensor\n",
              info.name);
      goto done;
    }
    int64_t dims[2] = {batch, sequence};
    for (int d = 0; d < 2; ++d)
      if (info.dims[d] >= 0)
        dims[d] = info.dims[d]; /* a static dim: use the model's */
    octet_tensor *t = &inputs[i];
    t->dtype = OCTET_I64;
    t->rank = 2;
    t->dims[0] = dims[0];
    t->dims[1] = dims[1];
    t->bytes = (size_t)(dims[0] * dims[1]) * sizeof(int64_t);
    t->data = malloc(t->bytes ? t->bytes : 1);
    if (!t->data) {
      fprintf(stderr, "octet_example: out of memory\n");
      goto done;
    }
    fill_input(info.name, t->data, dims[0], dims[1]);
  }
  for (int32_t i = 0; i < num_outputs; ++i) {
    octet_tensor_info info;
    if (!check(octet_model_output_info(model, i, &info), "octet_model_output_info"))
      goto done;
    print_info("output", i, &info);
    outputs[i].data = NULL; /* runtime-owned: octet_run allocates it */
  }

  if (!check(octet_run(model, inputs, num_inputs, outputs, num_outputs), "octet_run"))
    goto done;

  for (int32_t i = 0; i < num_outputs; ++i) {
    const octet_tensor *t = &outputs[i];
    int64_t count = 1;
    printf("output %d: %s [", (int)i, octet_dtype_name(t->dtype));
    for (int32_t d = 0; d < t->rank; ++d) {
      printf(d ? ", %lld" : "%lld", (long long)t->dims[d]);
      count *= t->dims[d];
    }
    printf("]\n  first values:");
    for (int64_t e = 0; e < count && e < 8; ++e)
      printf(" %.6g", element_as_double(t, e));
    double sum = 0, abs_sum = 0;
    int finite = 1;
    for (int64_t e = 0; e < count; ++e) {
      double v = element_as_double(t, e);
      sum += v;
      abs_sum += fabs(v);
      finite &= isfinite(v) != 0;
    }
    printf("\n  checksum: sum %.6f, sum of |x| %.6f%s\n", sum, abs_sum,
           finite ? "" : " (NOT FINITE)");
    if (!finite)
      goto done;
  }
  exit_code = 0;

done:
  if (inputs)
    for (int32_t i = 0; i < num_inputs; ++i)
      free(inputs[i].data);
  if (outputs)
    for (int32_t i = 0; i < num_outputs; ++i)
      octet_tensor_free(outputs[i].data);
  free(inputs);
  free(outputs);
  octet_model_destroy(model);
  return exit_code;
}
