//===- Samples.cpp - input sets from files, or generated token batches ----===//
#include "compiler/driver/Samples.h"
#include "runtime/Half.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

namespace octet {

using io::formatDims;
using io::HostTensor;

bool checkInput(const rt::IoInfo &io, const HostTensor &tensor, const std::string &source,
                std::string &error) {
  if (tensor.dtype != io.dtype) {
    error = "input '" + io.name + "' expects " + rt::dtypeName(io.dtype) + ", " + source +
            " holds " + rt::dtypeName(tensor.dtype);
    return false;
  }
  if (tensor.dims.size() != io.dims.size()) {
    error = "input '" + io.name + "' expects rank " + std::to_string(io.dims.size()) + ", " +
            source + " has shape " + formatDims(tensor.dims);
    return false;
  }
  for (size_t d = 0; d < io.dims.size(); ++d)
    if (io.dims[d] >= 0 && io.dims[d] != tensor.dims[d]) {
      error = "input '" + io.name + "' dim " + std::to_string(d) + " must be " +
              std::to_string(io.dims[d]) + ", " + source + " has shape " + formatDims(tensor.dims);
      return false;
    }
  return true;
}

bool listInputSets(const std::string &root, const std::string &what,
                   std::vector<std::string> &dirs, std::string &error) {
  if (!llvm::sys::fs::is_directory(root)) {
    error = what + " '" + root + "' is not a directory" +
            (llvm::sys::fs::exists(root) ? "" : " (it does not exist)");
    return false;
  }
  std::error_code ec;
  dirs.clear();
  for (llvm::sys::fs::directory_iterator it(root, ec), end; it != end && !ec; it.increment(ec))
    if (llvm::sys::fs::is_directory(it->path()))
      dirs.push_back(it->path());
  if (ec) {
    error = "cannot list " + what + " '" + root + "': " + ec.message();
    return false;
  }
  if (dirs.empty()) {
    error = what + " '" + root +
            "' has no subdirectories (give one subdirectory per input set, holding NAME.npy or "
            "NAME.pb for each model input)";
    return false;
  }
  std::sort(dirs.begin(), dirs.end());
  return true;
}

bool readInputSet(const rt::Plan &plan, const std::string &dir, std::vector<HostTensor> &tensors,
                  std::vector<bool> &given, std::string &error) {
  tensors.assign(plan.inputs.size(), HostTensor());
  given.assign(plan.inputs.size(), false);
  std::vector<std::string> files;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec))
    files.push_back(it->path());
  if (ec) {
    error = "cannot list '" + dir + "': " + ec.message();
    return false;
  }
  std::sort(files.begin(), files.end());
  for (const std::string &path : files) {
    llvm::StringRef file = llvm::sys::path::filename(path);
    llvm::StringRef ext = llvm::sys::path::extension(file);
    if (ext != ".npy" && ext != ".pb")
      continue;
    std::string name = llvm::sys::path::stem(file).str();
    auto it = std::find_if(plan.inputs.begin(), plan.inputs.end(),
                           [&](const rt::IoInfo &io) { return io.name == name; });
    if (it == plan.inputs.end()) {
      std::string names;
      for (const rt::IoInfo &io : plan.inputs)
        names += (names.empty() ? "" : ", ") + io.name;
      error = "'" + path + "': the model has no input '" + name + "' (inputs: " + names + ")";
      return false;
    }
    size_t index = size_t(it - plan.inputs.begin());
    if (given[index]) {
      error = "'" + dir + "' holds input '" + name + "' twice (.npy and .pb)";
      return false;
    }
    if (!io::readTensorFile(path, tensors[index], error) ||
        !checkInput(*it, tensors[index], "'" + path + "'", error))
      return false;
    given[index] = true;
  }
  return true;
}

bool isGenerateSpec(const std::string &samples) { return samples.rfind("generate:", 0) == 0; }

bool parseGenerateSpec(const std::string &samples, GenerateSpec &spec, std::string &error) {
  auto fail = [&] {
    error = "samples '" + samples +
            "': give generate:N[xB][xS] with positive integers (N batches of B sequences of "
            "S tokens, e.g. generate:16x8x128)";
    return false;
  };
  if (!isGenerateSpec(samples))
    return fail();
  std::string rest = samples.substr(strlen("generate:"));
  std::vector<int64_t> parts;
  size_t at = 0;
  while (true) {
    size_t x = rest.find('x', at);
    std::string item = rest.substr(at, x == std::string::npos ? std::string::npos : x - at);
    if (item.empty() || item.size() > 9 ||
        item.find_first_not_of("0123456789") != std::string::npos)
      return fail();
    parts.push_back(std::stoll(item));
    if (parts.back() <= 0)
      return fail();
    if (x == std::string::npos)
      break;
    at = x + 1;
  }
  if (parts.size() > 3)
    return fail();
  spec = GenerateSpec();
  spec.batches = parts[0];
  if (parts.size() > 1)
    spec.batch = parts[1];
  if (parts.size() > 2)
    spec.seq = parts[2];
  return true;
}

void setElement(HostTensor &t, int64_t i, double v) {
  uint8_t *p = t.bytes.data() + size_t(i) * rt::dtypeBytes(t.dtype);
  switch (t.dtype) {
  case rt::DType::F32: {
    float f = float(v);
    std::memcpy(p, &f, 4);
    break;
  }
  case rt::DType::F64:
    std::memcpy(p, &v, 8);
    break;
  case rt::DType::I64: {
    int64_t x = int64_t(v);
    std::memcpy(p, &x, 8);
    break;
  }
  case rt::DType::I32: {
    int32_t x = int32_t(v);
    std::memcpy(p, &x, 4);
    break;
  }
  case rt::DType::Bool:
    *p = v != 0;
    break;
  case rt::DType::I8:
  case rt::DType::U8:
    *p = uint8_t(int64_t(v));
    break;
  case rt::DType::I16:
  case rt::DType::U16: { // the low two bytes of the two's complement value
    uint16_t x = uint16_t(int64_t(v));
    std::memcpy(p, &x, 2);
    break;
  }
  case rt::DType::U32: {
    uint32_t x = uint32_t(int64_t(v));
    std::memcpy(p, &x, 4);
    break;
  }
  case rt::DType::U64: {
    uint64_t x = uint64_t(int64_t(v));
    std::memcpy(p, &x, 8);
    break;
  }
  case rt::DType::F16: {
    uint16_t x = rt::halfBitsFromDouble(v);
    std::memcpy(p, &x, 2);
    break;
  }
  }
}

namespace {

bool nameHas(const std::string &name, const char *part) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  return lower.find(part) != std::string::npos;
}

/// Token ids of one vocabulary [begin, end): padding, [CLS], [SEP] and a
/// Zipf(1.1) distribution over the ordinary ids by rank (low ids frequent, as
/// in WordPiece / SentencePiece vocabularies, which sort by frequency).
struct Vocabulary {
  int64_t pad = 0, cls = 0, sep = 0, first = 0;
  std::vector<double> cdf; ///< over ranks 1..size of the ordinary ids from `first`

  Vocabulary(int64_t begin, int64_t end) {
    int64_t size = std::max<int64_t>(1, end - begin);
    if (size > 1000) { // BERT WordPiece: [PAD] 0, [CLS] 101, [SEP] 102, words from ~1000
      pad = begin, cls = begin + 101, sep = begin + 102, first = begin + 1000;
    } else if (size >= 4) {
      pad = begin, cls = begin + 1, sep = begin + 2, first = begin + 3;
    } else {
      pad = cls = sep = first = begin;
    }
    int64_t ranks = std::max<int64_t>(1, end - first);
    cdf.resize(size_t(ranks));
    double total = 0;
    for (int64_t r = 0; r < ranks; ++r)
      cdf[size_t(r)] = total += std::pow(double(r + 1), -1.1);
    for (double &c : cdf)
      c /= total;
  }
  int64_t draw(std::mt19937_64 &rng) const {
    double u = std::uniform_real_distribution<double>(0, 1)(rng);
    size_t rank = size_t(std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
    return first + int64_t(std::min(rank, cdf.size() - 1));
  }
};

} // namespace

std::vector<HostTensor> generateBatch(const rt::Plan &plan, int64_t batch, int64_t seq,
                                      std::mt19937_64 &rng) {
  // Static dims of any input fix the batch (dim 0) and sequence (dim 1).
  for (const rt::IoInfo &io : plan.inputs) {
    if (!io.dims.empty() && io.dims[0] >= 0)
      batch = io.dims[0];
    if (io.dims.size() >= 2 && io.dims[1] >= 0)
      seq = io.dims[1];
  }
  // Row 0 is full length, so the batch spans the whole sequence; the others
  // are uniform in [max(2, seq/8), seq].
  std::vector<int64_t> lengths(size_t(std::max<int64_t>(batch, 0)), seq);
  std::uniform_int_distribution<int64_t> length(std::min(seq, std::max<int64_t>(2, seq / 8)),
                                                seq);
  for (size_t r = 1; r < lengths.size(); ++r)
    lengths[r] = length(rng);
  std::vector<HostTensor> tensors;
  for (const rt::IoInfo &io : plan.inputs) {
    HostTensor t;
    t.dtype = io.dtype;
    for (size_t d = 0; d < io.dims.size(); ++d)
      t.dims.push_back(io.dims[d] >= 0 ? io.dims[d] : d == 0 ? batch : seq);
    int64_t n = t.numElements();
    t.bytes.assign(size_t(n) * rt::dtypeBytes(t.dtype), 0);
    int64_t cols = t.dims.empty() ? 1 : t.dims.back();
    auto lengthOf = [&](int64_t i) {
      int64_t row = cols ? i / cols : 0;
      return t.dims.size() >= 2 && row < int64_t(lengths.size()) ? lengths[size_t(row)] : cols;
    };
    bool isFloat =
        io.dtype == rt::DType::F32 || io.dtype == rt::DType::F64 || io.dtype == rt::DType::F16;
    if (isFloat) {
      std::normal_distribution<double> normal;
      for (int64_t i = 0; i < n; ++i)
        setElement(t, i, normal(rng));
    } else if (nameHas(io.name, "mask")) {
      for (int64_t i = 0; i < n; ++i)
        setElement(t, i, (cols ? i % cols : 0) < lengthOf(i) ? 1 : 0);
    } else if (nameHas(io.name, "position")) {
      for (int64_t i = 0; i < n; ++i)
        setElement(t, i, double(cols ? i % cols : 0));
    } else if (io.checkRange) {
      Vocabulary vocab(io.rangeBegin, io.rangeEnd);
      for (int64_t i = 0; i < n; ++i) {
        int64_t col = cols ? i % cols : 0, len = lengthOf(i);
        int64_t id = col >= len             ? vocab.pad
                     : col == 0             ? vocab.cls
                     : col == len - 1       ? vocab.sep
                                            : vocab.draw(rng);
        setElement(t, i, double(id));
      }
    } // else (token type ids, other integers): 0
    tensors.push_back(std::move(t));
  }
  return tensors;
}

bool runInputsOf(const rt::Plan &plan, std::vector<HostTensor> &tensors,
                 std::vector<rt::RunTensor> &inputs, std::string &error) {
  inputs.assign(tensors.size(), rt::RunTensor());
  for (size_t i = 0; i < tensors.size(); ++i) {
    HostTensor &t = tensors[i];
    if (t.dims.size() > size_t(rt::kMaxRank)) {
      error = "input '" + (i < plan.inputs.size() ? plan.inputs[i].name : std::to_string(i)) +
              "' has rank " + std::to_string(t.dims.size()) + ", more than " +
              std::to_string(rt::kMaxRank);
      return false;
    }
    inputs[i].data = t.bytes.data();
    inputs[i].bytes = t.bytes.size();
    inputs[i].dtype = t.dtype;
    inputs[i].rank = int32_t(t.dims.size());
    for (size_t d = 0; d < t.dims.size(); ++d)
      inputs[i].dims[d] = t.dims[d];
  }
  return true;
}

} // namespace octet
