//===- CApiInternal.h - C++ entry points behind the C API -------*- C++ -*-===//
//
// For tests and the AOT loader: turn a Plan built in C++ into an octet_model
// that the C API serves like a compiled one.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_RUNTIME_CAPIINTERNAL_H
#define OCTET_RUNTIME_CAPIINTERNAL_H

#include "octet/octet.h"
#include "runtime/Plan.h"

#include <memory>

namespace octet {

/// Validates `plan` (validatePlan) and wraps it into a model that owns it.
/// On failure *model is null and octet_last_error() says why.
octet_status wrapPlanAsModel(std::unique_ptr<rt::Plan> plan, octet_model **model);

} // namespace octet

#endif
