//===- TensorFiles.cpp - .npy and ONNX TensorProto (.pb) files ------------===//
#include "compiler/driver/TensorFiles.h"

#include <onnx/onnx_pb.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

using octet::rt::DType;

namespace octet::io {

namespace {

bool readWholeFile(const std::string &path, std::string &contents, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open '" + path + "': " + std::strerror(errno);
    return false;
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    error = "cannot read '" + path + "'";
    return false;
  }
  contents = buffer.str();
  return true;
}

/// The element count of `dims`, false on a negative dim or overflow.
bool checkedCount(const std::vector<int64_t> &dims, size_t elementSize, size_t &bytes) {
  unsigned __int128 total = elementSize;
  for (int64_t d : dims) {
    if (d < 0)
      return false;
    total *= uint64_t(d);
    if (total > (unsigned __int128)(std::numeric_limits<int64_t>::max()))
      return false;
  }
  bytes = size_t(total);
  return true;
}

/// The value of `key` in a .npy header dict ("{'descr': '<f4', ...}").
bool headerValue(const std::string &header, const std::string &key, std::string &value) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos)
    return false;
  at = header.find(':', at);
  if (at == std::string::npos)
    return false;
  ++at;
  while (at < header.size() && std::isspace(static_cast<unsigned char>(header[at])))
    ++at;
  if (at >= header.size())
    return false;
  size_t end;
  if (header[at] == '\'') {
    end = header.find('\'', at + 1);
    if (end == std::string::npos)
      return false;
    value = header.substr(at + 1, end - at - 1);
  } else if (header[at] == '(') {
    end = header.find(')', at);
    if (end == std::string::npos)
      return false;
    value = header.substr(at, end - at + 1);
  } else {
    end = header.find_first_of(",}", at);
    if (end == std::string::npos)
      return false;
    value = header.substr(at, end - at);
    while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back())))
      value.pop_back();
  }
  return true;
}

} // namespace

std::string formatDims(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

bool readNpy(const std::string &path, HostTensor &tensor, std::string &error) {
  std::string data;
  if (!readWholeFile(path, data, error))
    return false;
  auto fail = [&](const std::string &why) {
    error = "'" + path + "' is not a valid .npy file: " + why;
    return false;
  };
  if (data.size() < 10 || std::memcmp(data.data(), "\x93NUMPY", 6) != 0)
    return fail("it does not start with the \\x93NUMPY magic");
  unsigned major = uint8_t(data[6]);
  size_t headerLength, headerStart;
  if (major == 1) {
    headerLength = uint8_t(data[8]) | (size_t(uint8_t(data[9])) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12)
      return fail("truncated header");
    headerLength = 0;
    for (int i = 0; i < 4; ++i)
      headerLength |= size_t(uint8_t(data[8 + i])) << (8 * i);
    headerStart = 12;
  } else {
    return fail("format version " + std::to_string(major) + " (only 1, 2 and 3 exist)");
  }
  if (headerStart + headerLength > data.size())
    return fail("the header is longer than the file");
  std::string header = data.substr(headerStart, headerLength);
  std::string descr, fortran, shape;
  if (!headerValue(header, "descr", descr) || !headerValue(header, "fortran_order", fortran) ||
      !headerValue(header, "shape", shape))
    return fail("the header lacks 'descr', 'fortran_order' or 'shape'");
  if (descr.size() < 2)
    return fail("dtype '" + descr + "'");
  char order = descr[0];
  std::string kind = descr.substr(1);
  if (order == '>' && kind != "i1" && kind != "u1" && kind != "b1")
    return fail("big-endian dtype '" + descr + "' (write it little-endian)");
  if (order != '<' && order != '|' && order != '=' && order != '>')
    return fail("dtype '" + descr + "'");
  if (kind == "f4")
    tensor.dtype = DType::F32;
  else if (kind == "f8")
    tensor.dtype = DType::F64;
  else if (kind == "i8")
    tensor.dtype = DType::I64;
  else if (kind == "i4")
    tensor.dtype = DType::I32;
  else if (kind == "i1")
    tensor.dtype = DType::I8;
  else if (kind == "u1")
    tensor.dtype = DType::U8;
  else if (kind == "b1")
    tensor.dtype = DType::Bool;
  else if (kind == "i2")
    tensor.dtype = DType::I16;
  else if (kind == "u2")
    tensor.dtype = DType::U16;
  else if (kind == "u4")
    tensor.dtype = DType::U32;
  else if (kind == "u8")
    tensor.dtype = DType::U64;
  else if (kind == "f2")
    tensor.dtype = DType::F16;
  else
    return fail("unsupported dtype '" + descr +
                "' (supported: float16, float32, float64, int8, int16, int32, int64, uint8, "
                "uint16, uint32, uint64, bool)");
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')')
    return fail("malformed shape '" + shape + "'");
  tensor.dims.clear();
  std::string inner = shape.substr(1, shape.size() - 2);
  std::stringstream items(inner);
  std::string item;
  while (std::getline(items, item, ',')) {
    size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \tL");
    if (b == std::string::npos)
      continue; // "(3,)" has an empty last item
    std::string digits = item.substr(b, e - b + 1);
    if (digits.empty() || digits.size() > 18 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      return fail("malformed shape '" + shape + "'");
    tensor.dims.push_back(std::stoll(digits));
  }
  if (fortran == "True" && tensor.dims.size() > 1)
    return fail("Fortran order (save it with numpy.ascontiguousarray)");
  if (fortran != "True" && fortran != "False")
    return fail("fortran_order '" + fortran + "'");
  size_t bytes;
  if (!checkedCount(tensor.dims, octet::rt::dtypeBytes(tensor.dtype), bytes))
    return fail("shape " + shape + " is too large");
  size_t available = data.size() - headerStart - headerLength;
  if (available != bytes)
    return fail("shape " + formatDims(tensor.dims) + " of " + descr + " needs " +
                std::to_string(bytes) + " data bytes, the file has " + std::to_string(available));
  const char *payload = data.data() + headerStart + headerLength;
  tensor.bytes.assign(payload, payload + bytes);
  if (tensor.dtype == DType::Bool)
    for (uint8_t &b : tensor.bytes)
      b = b ? 1 : 0;
  return true;
}

bool writeNpy(const std::string &path, const HostTensor &tensor, std::string &error) {
  const char *descr = "<f4";
  switch (tensor.dtype) {
  case DType::F32:
    descr = "<f4";
    break;
  case DType::F64:
    descr = "<f8";
    break;
  case DType::I64:
    descr = "<i8";
    break;
  case DType::I32:
    descr = "<i4";
    break;
  case DType::I8:
    descr = "|i1";
    break;
  case DType::U8:
    descr = "|u1";
    break;
  case DType::Bool:
    descr = "|b1";
    break;
  case DType::I16:
    descr = "<i2";
    break;
  case DType::U16:
    descr = "<u2";
    break;
  case DType::U32:
    descr = "<u4";
    break;
  case DType::U64:
    descr = "<u8";
    break;
  case DType::F16:
    descr = "<f2";
    break;
  }
  std::string shape = "(";
  for (size_t i = 0; i < tensor.dims.size(); ++i)
    shape += std::to_string(tensor.dims[i]) +
             (tensor.dims.size() == 1 || i + 1 < tensor.dims.size() ? "," : "");
  shape += ")";
  std::string header =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so that the data starts 64-byte aligned; the header ends in '\n'.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  bool v2 = header.size() > 65535;
  std::ofstream out(path, std::ios::binary);
  if (!out) {
    error = "cannot write '" + path + "': " + std::strerror(errno);
    return false;
  }
  out.write("\x93NUMPY", 6);
  out.put(char(v2 ? 2 : 1));
  out.put(0);
  size_t length = header.size();
  for (int i = 0; i < (v2 ? 4 : 2); ++i)
    out.put(char((length >> (8 * i)) & 0xff));
  out << header;
  out.write(reinterpret_cast<const char *>(tensor.bytes.data()),
            std::streamsize(tensor.bytes.size()));
  if (!out) {
    error = "cannot write '" + path + "'";
    return false;
  }
  return true;
}

bool readTensorProto(const std::string &path, HostTensor &tensor, std::string &error) {
  std::string data;
  if (!readWholeFile(path, data, error))
    return false;
  auto fail = [&](const std::string &why) {
    error = "'" + path + "' is not a valid ONNX TensorProto: " + why;
    return false;
  };
  onnx::TensorProto proto;
  if (!proto.ParseFromString(data))
    return fail("protobuf parse error");
  if (proto.data_location() == onnx::TensorProto::EXTERNAL)
    return fail("external data is not supported");
  tensor.name = proto.name();
  tensor.dims.assign(proto.dims().begin(), proto.dims().end());
  switch (proto.data_type()) {
  case onnx::TensorProto::FLOAT:
    tensor.dtype = DType::F32;
    break;
  case onnx::TensorProto::DOUBLE:
    tensor.dtype = DType::F64;
    break;
  case onnx::TensorProto::INT64:
    tensor.dtype = DType::I64;
    break;
  case onnx::TensorProto::INT32:
    tensor.dtype = DType::I32;
    break;
  case onnx::TensorProto::INT8:
    tensor.dtype = DType::I8;
    break;
  case onnx::TensorProto::UINT8:
    tensor.dtype = DType::U8;
    break;
  case onnx::TensorProto::BOOL:
    tensor.dtype = DType::Bool;
    break;
  case onnx::TensorProto::INT16:
    tensor.dtype = DType::I16;
    break;
  case onnx::TensorProto::UINT16:
    tensor.dtype = DType::U16;
    break;
  case onnx::TensorProto::UINT32:
    tensor.dtype = DType::U32;
    break;
  case onnx::TensorProto::UINT64:
    tensor.dtype = DType::U64;
    break;
  case onnx::TensorProto::FLOAT16: // the bits, in int32_data when not raw
    tensor.dtype = DType::F16;
    break;
  default:
    return fail("unsupported data_type " + std::to_string(proto.data_type()) +
                " (supported: float, float16, double, int64, int32, int16, int8, uint64, uint32, "
                "uint16, uint8, bool)");
  }
  size_t bytes, elementSize = octet::rt::dtypeBytes(tensor.dtype);
  if (!checkedCount(tensor.dims, elementSize, bytes))
    return fail("dims " + formatDims(tensor.dims) + " are negative or too large");
  size_t count = bytes / elementSize;
  tensor.bytes.assign(bytes, 0);
  // An empty tensor has no buffer on either side (null data pointers), and
  // memcpy's pointers must not be null even for 0 bytes.
  auto copyAll = [&](const void *from) {
    if (bytes)
      std::memcpy(tensor.bytes.data(), from, bytes);
  };
  auto sizeMismatch = [&](size_t have) {
    return fail("dims " + formatDims(tensor.dims) + " need " + std::to_string(count) +
                " elements, it holds " + std::to_string(have));
  };
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != bytes)
      return fail("dims " + formatDims(tensor.dims) + " need " + std::to_string(bytes) +
                  " raw bytes, it holds " + std::to_string(proto.raw_data().size()));
    copyAll(proto.raw_data().data());
  } else {
    switch (tensor.dtype) {
    case DType::F32:
      if (size_t(proto.float_data_size()) != count)
        return sizeMismatch(proto.float_data_size());
      copyAll(proto.float_data().data());
      break;
    case DType::F64:
      if (size_t(proto.double_data_size()) != count)
        return sizeMismatch(proto.double_data_size());
      copyAll(proto.double_data().data());
      break;
    case DType::I64:
      if (size_t(proto.int64_data_size()) != count)
        return sizeMismatch(proto.int64_data_size());
      copyAll(proto.int64_data().data());
      break;
    case DType::U32:
    case DType::U64: // uint32 and uint64 live in uint64_data
      if (size_t(proto.uint64_data_size()) != count)
        return sizeMismatch(proto.uint64_data_size());
      for (size_t i = 0; i < count; ++i) {
        uint64_t v = proto.uint64_data(int(i));
        std::memcpy(tensor.bytes.data() + elementSize * i, &v, elementSize); // low bytes
      }
      break;
    default: { // int32, int16, uint16, float16 (bits), int8, uint8 and bool: int32_data
      if (size_t(proto.int32_data_size()) != count)
        return sizeMismatch(proto.int32_data_size());
      for (size_t i = 0; i < count; ++i) {
        int32_t v = proto.int32_data(int(i));
        if (tensor.dtype == DType::Bool)
          tensor.bytes[i] = v != 0;
        else // the low bytes (little-endian host, as ONNX's raw_data)
          std::memcpy(tensor.bytes.data() + elementSize * i, &v, elementSize);
      }
    }
    }
  }
  return true;
}

bool readTensorFile(const std::string &path, HostTensor &tensor, std::string &error) {
  auto endsWith = [&](const char *suffix) {
    size_t n = std::strlen(suffix);
    return path.size() >= n && path.compare(path.size() - n, n, suffix) == 0;
  };
  if (endsWith(".pb"))
    return readTensorProto(path, tensor, error);
  if (endsWith(".npy"))
    return readNpy(path, tensor, error);
  error = "'" + path + "': give a .npy or an ONNX TensorProto .pb file";
  return false;
}

} // namespace octet::io
