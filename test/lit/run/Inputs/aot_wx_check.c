/* aot_wx_check MODEL.so|- : opens an AOT model (a path: through liboctet.so; "-": the
 * model.so this program is linked against), runs it once on a [1, 4] batch of ones for
 * every int64 input, then reads /proc/self/maps and prints every mapping that is both
 * writable and executable ("W+X: ...") and the permissions of the model.so's mappings.
 * Exits 0 only if the run succeeded and there is no W+X mapping. */
#include <octet/octet.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.so|-\n", argv[0]);
    return 2;
  }
  const char *path = strcmp(argv[1], "-") == 0 ? NULL : argv[1];
  octet_model *model = NULL;
  if (octet_model_open(path, NULL, &model) != OCTET_OK) {
    fprintf(stderr, "open: %s\n", octet_last_error());
    return 1;
  }
  int32_t num_inputs = octet_model_num_inputs(model), num_outputs = octet_model_num_outputs(model);
  octet_tensor inputs[8], outputs[8];
  int64_t ones[4] = {1, 1, 1, 1};
  if (num_inputs > 8 || num_outputs > 8)
    return 1;
  memset(inputs, 0, sizeof(inputs));
  memset(outputs, 0, sizeof(outputs));
  for (int32_t i = 0; i < num_inputs; ++i) {
    inputs[i].data = ones;
    inputs[i].bytes = sizeof(ones);
    inputs[i].dtype = OCTET_I64;
    inputs[i].rank = 2;
    inputs[i].dims[0] = 1;
    inputs[i].dims[1] = 4;
  }
  if (octet_run(model, inputs, num_inputs, outputs, num_outputs) != OCTET_OK) {
    fprintf(stderr, "run: %s\n", octet_last_error());
    return 1;
  }
  printf("ran: %d output(s)\n", (int)num_outputs);
  for (int32_t i = 0; i < num_outputs; ++i)
    octet_tensor_free(outputs[i].data);

  FILE *maps = fopen("/proc/self/maps", "r");
  if (!maps)
    return 1;
  char line[4096];
  int wx = 0;
  while (fgets(line, sizeof(line), maps)) {
    char perms[8] = "";
    if (sscanf(line, "%*s %7s", perms) != 1)
      continue;
    if (strchr(perms, 'w') && strchr(perms, 'x')) {
      printf("W+X: %s", line);
      wx = 1;
    }
    if (strstr(line, ".so") && strstr(line, "model"))
      printf("model mapping %s\n", perms);
  }
  fclose(maps);
  octet_model_destroy(model);
  printf(wx ? "FAIL: a writable and executable mapping\n" : "no writable+executable mapping\n");
  return wx;
}
