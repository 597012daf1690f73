//===- TensorFilesTest.cpp - octetc's tensor files: empty tensors ---------===//
//
// An empty TensorProto (a dim of 0, as ONNX's node tests test_tril_zero and
// test_triu_zero feed) has no data on either side: reading it must copy
// nothing, not pass null pointers to memcpy (UBSan's nonnull check in the
// sanitized suite, scripts/sanitize).
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/TensorFiles.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace {

std::string writeProto(const onnx::TensorProto &proto, const std::string &name) {
  std::string path = ::testing::TempDir() + "/" + name + ".pb";
  std::ofstream out(path, std::ios::binary);
  proto.SerializeToOstream(&out);
  return path;
}

TEST(TensorFiles, EmptyTensorsReadWithoutData) {
  struct Case {
    const char *name;
    int dataType;
    bool raw;
  } cases[] = {{"raw_f32", onnx::TensorProto::FLOAT, true},
               {"float_data", onnx::TensorProto::FLOAT, false},
               {"double_data", onnx::TensorProto::DOUBLE, false},
               {"int64_data", onnx::TensorProto::INT64, false},
               {"int32_data", onnx::TensorProto::INT32, false}};
  for (const Case &c : cases) {
    onnx::TensorProto proto;
    proto.set_data_type(c.dataType);
    proto.add_dims(3);
    proto.add_dims(0);
    if (c.raw)
      proto.set_raw_data(std::string());
    const std::string path = writeProto(proto, c.name);
    octet::io::HostTensor tensor;
    std::string error;
    ASSERT_TRUE(octet::io::readTensorProto(path, tensor, error)) << c.name << ": " << error;
    EXPECT_EQ(tensor.dims, (std::vector<int64_t>{3, 0})) << c.name;
    EXPECT_TRUE(tensor.bytes.empty()) << c.name;
    std::remove(path.c_str());
  }
}

// The size check still runs for an empty tensor that claims data.
TEST(TensorFiles, EmptyTensorWithDataIsAnError) {
  onnx::TensorProto proto;
  proto.set_data_type(onnx::TensorProto::FLOAT);
  proto.add_dims(0);
  proto.add_float_data(1.0f);
  const std::string path = writeProto(proto, "empty_with_data");
  octet::io::HostTensor tensor;
  std::string error;
  EXPECT_FALSE(octet::io::readTensorProto(path, tensor, error));
  EXPECT_NE(error.find("need 0 elements, it holds 1"), std::string::npos) << error;
  std::remove(path.c_str());
}

} // namespace
