//===- octet_run_fuzzer.cpp - libFuzzer: octet_run's input validation ------===//
//
// octet_run over a small model (test/unit/runtime/TestPlans.h: y = x + 2 +
// ids, ids checked to [0, 10)) with input and output arrays, counts, dtype
// codes, ranks, dims and values all taken from the fuzzer's bytes. Every call
// must return a status (never crash or read past what it was given). The C
// API and the executor are compiled in with coverage (test/fuzz/build). Each
// input's data holds exactly what its dims and dtype say (the API's contract),
// bounded to 64 KiB; shapes of more than 2^63 bytes get a page that faults if
// read (they must be refused unread), others too large to allocate are skipped.
//
//===----------------------------------------------------------------------===//
#include "../unit/runtime/TestPlans.h"

#include "octet/octet.h"
#include "runtime/CApiInternal.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

struct Bytes {
  const uint8_t *data;
  size_t size;
  template <typename T> T take() {
    T value{};
    size_t n = size < sizeof(T) ? size : sizeof(T);
    std::memcpy(&value, data, n);
    data += n, size -= n;
    return value;
  }
};

octet_model *model() {
  static octet_model *m = [] {
    octet_model *result = nullptr;
    if (octet::wrapPlanAsModel(octet::rt::test::makeAddModel(), &result) != OCTET_OK)
      std::abort();
    return result;
  }();
  return m;
}

/// A page no one may read: data for shapes too large to allocate.
void *unreadablePage() {
  static void *page = mmap(nullptr, size_t(sysconf(_SC_PAGESIZE)), PROT_NONE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return page;
}

} // namespace

// The C API's link to an embedded model.so image: none here (as in liboctet.so).
const octet::rt::AotImageDescriptor *octet::capi::embeddedAotImage() { return nullptr; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Bytes in{data, size};
  const int32_t numInputs = int32_t(in.take<uint8_t>() % 5) - 1;  // -1..3
  const int32_t numOutputs = int32_t(in.take<uint8_t>() % 4) - 1; // -1..2
  const int arrayInputs = numInputs < 0 ? 0 : numInputs, arrayOutputs = numOutputs < 0 ? 0 : numOutputs;
  std::vector<octet_tensor> inputs(static_cast<size_t>(arrayInputs));
  std::vector<octet_tensor> outputs(static_cast<size_t>(arrayOutputs));
  std::vector<std::vector<uint8_t>> buffers;
  for (octet_tensor &t : inputs) {
    std::memset(&t, 0, sizeof(t));
    int32_t code = in.take<int8_t>();
    std::memcpy(&t.dtype, &code, sizeof(code)); // any int, as C may pass
    t.rank = int32_t(in.take<uint8_t>() % 11) - 1; // -1..9
    uint64_t elements = 1;
    bool huge = false;
    unsigned __int128 exactElements = 1; // saturating at 2^100
    for (int d = 0; d < OCTET_MAX_RANK; ++d) {
      t.dims[d] = d < t.rank ? int64_t(in.take<int16_t>()) : 0;
      if (d < t.rank && (in.take<uint8_t>() & 0x80))
        t.dims[d] *= int64_t(1) << 40; // now and then a size no buffer can hold
    }
    for (int d = 0; d < t.rank && d < OCTET_MAX_RANK; ++d) {
      if (t.dims[d] >= 0)
        exactElements = std::min<unsigned __int128>(exactElements * uint64_t(t.dims[d]),
                                                    (unsigned __int128)1 << 100);
      if (t.dims[d] < 0)
        elements = 0;
      else if (t.dims[d] > 0 && elements > (uint64_t(1) << 16) / uint64_t(t.dims[d]))
        huge = true;
      else
        elements *= uint64_t(t.dims[d]);
    }
    // Only a valid code may be read as the enum in C++ (octet_run reads the int).
    size_t element = code >= OCTET_F32 && code <= OCTET_F16 ? octet_dtype_size(octet_dtype(code)) : 0;
    if (huge || elements * (element ? element : 8) > (size_t(1) << 16)) {
      // No caller can own more than 2^63 bytes: such dims must be refused
      // unread (the page faults if not). Smaller ones the contract says the
      // caller holds, which this harness cannot: skip them.
      if (exactElements * 8 < ((unsigned __int128)1 << 63))
        return 0;
      t.data = unreadablePage();
    } else {
      buffers.emplace_back(elements * (element ? element : 8) + 1);
      for (uint8_t &b : buffers.back())
        b = in.take<uint8_t>();
      t.data = (in.take<uint8_t>() & 0x40) ? nullptr : buffers.back().data();
    }
  }
  for (octet_tensor &t : outputs) {
    std::memset(&t, 0, sizeof(t));
    if (in.take<uint8_t>() & 1) { // caller-owned, of some size
      buffers.emplace_back(in.take<uint8_t>() * 4);
      t.data = buffers.back().data();
      t.bytes = buffers.back().size();
    }
  }
  const bool nullArrays = in.take<uint8_t>() == 0xff;
  octet_status status =
      octet_run(model(), nullArrays ? nullptr : inputs.data(), numInputs,
                nullArrays ? nullptr : outputs.data(), numOutputs);
  for (size_t i = 0; status == OCTET_OK && i < outputs.size(); ++i) {
    bool callerOwned = false;
    for (const auto &b : buffers)
      callerOwned = callerOwned || outputs[i].data == b.data();
    if (!callerOwned)
      octet_tensor_free(outputs[i].data);
  }
  if (status != OCTET_OK && octet_last_error()[0] == '\0')
    std::abort(); // every failure says why
  return 0;
}
