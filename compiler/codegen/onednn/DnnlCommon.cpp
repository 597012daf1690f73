//===- DnnlCommon.cpp - what the oneDNN providers share -------------------===//
#include "compiler/codegen/onednn/DnnlCommon.h"

#include <unordered_map>

namespace octet::onednn::detail {

bool overlaps(const void *p, int64_t ldp, int64_t np, const void *q, int64_t ldq, int64_t nq,
              int64_t m) {
  auto begin = [](const void *x) { return reinterpret_cast<std::uintptr_t>(x); };
  auto end = [&](const void *x, int64_t ld, int64_t cols) {
    return begin(x) + static_cast<std::uintptr_t>((m - 1) * ld + cols);
  };
  return begin(p) < end(q, ldq, nq) && begin(q) < end(p, ldp, np);
}

void executeMatMul(const dnnl::engine &engine, const dnnl::matmul::primitive_desc &pd,
                   const dnnl::matmul &prim, const dnnl::memory &src, const dnnl::memory &weights,
                   const dnnl::memory &dst, const dnnl::memory *bias) {
  dnnl::memory scratch(pd.scratchpad_desc(), engine);
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src},
                                             {DNNL_ARG_WEIGHTS, weights},
                                             {DNNL_ARG_DST, dst},
                                             {DNNL_ARG_SCRATCHPAD, scratch}};
  if (bias)
    args.emplace(DNNL_ARG_BIAS, *bias);
  dnnl::stream stream(engine);
  prim.execute(stream, args);
  stream.wait();
}

std::string implementationName(const dnnl::primitive_desc_base &pd) {
  const char *name = nullptr;
  try {
    name = pd.impl_info_str();
  } catch (...) {
  }
  return name ? name : "unknown";
}

std::string describe(const dnnl::memory::desc &md, bool strides) {
  const dnnl_memory_desc_t &d = md.data;
  if (d.format_kind != dnnl_blocked)
    return "format_kind " + std::to_string(int(d.format_kind));
  const auto &b = d.format_desc.blocking;
  std::ostringstream os;
  if (b.inner_nblks == 0 && d.ndims == 2)
    os << (b.strides[1] == 1 ? "ab" : b.strides[0] == 1 ? "ba" : "strided");
  else
    os << "blocked";
  if (strides) {
    os << " strides {";
    for (int i = 0; i < d.ndims; ++i)
      os << (i ? ", " : "") << b.strides[i];
    os << "}";
  }
  for (int i = 0; i < b.inner_nblks; ++i)
    os << " " << char('a' + b.inner_idxs[i]) << b.inner_blks[i];
  return os.str();
}

} // namespace octet::onednn::detail
