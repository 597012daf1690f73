//===- DnnlCommon.h - what the oneDNN providers share -----------*- C++ -*-===//
//
// Internal to compiler/codegen/onednn: turning oneDNN's exceptions into a
// Status, the aliasing check of run()'s buffers, and a readable name of a
// memory format for messages and tests.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_ONEDNN_DNNLCOMMON_H
#define OCTET_COMPILER_CODEGEN_ONEDNN_DNNLCOMMON_H

#include "compiler/codegen/Status.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <new>
#include <sstream>
#include <string>

namespace octet::onednn::detail {

/// Runs `body`, turning every exception into a Status whose message starts
/// with `prefix` and `what` (nothing escapes).
template <typename Fn>
rt::Status guarded(const char *prefix, const char *what, Fn &&body) noexcept {
  auto fail = [&](const std::string &why) {
    return rt::Status::error(std::string(prefix) + what + ": " + why);
  };
  try {
    return body();
  } catch (const dnnl::error &e) {
    std::ostringstream os;
    os << e.what() << " (dnnl_status_t " << int(e.status) << ")";
    return fail(os.str());
  } catch (const std::bad_alloc &) {
    return fail("out of memory");
  } catch (const std::exception &e) {
    return fail(e.what());
  } catch (...) {
    return fail("unknown exception");
  }
}

/// The byte spans of two strided row-major matrices of m rows intersect
/// (conservative: spans, not the exact elements). Strides and widths in bytes.
bool overlaps(const void *p, int64_t ldp, int64_t np, const void *q, int64_t ldq, int64_t nq,
              int64_t m);

/// Runs a matmul primitive once on src / dst views (and the optional bias):
/// scratchpad and stream per call, so concurrent runs on one primitive are safe.
void executeMatMul(const dnnl::engine &engine, const dnnl::matmul::primitive_desc &pd,
                   const dnnl::matmul &prim, const dnnl::memory &src, const dnnl::memory &weights,
                   const dnnl::memory &dst, const dnnl::memory *bias);

/// oneDNN's name of the implementation `pd` chose ("unknown" when it gives none).
std::string implementationName(const dnnl::primitive_desc_base &pd);

/// "ab", "ba", "blocked b16 a4", ... (and the strides when `strides`).
std::string describe(const dnnl::memory::desc &md, bool strides);

} // namespace octet::onednn::detail

#endif
