//===- DTypeVisit.h - dispatch on a tensor's element type -------*- C++ -*-===//
#ifndef OCTET_RUNTIME_DTYPEVISIT_H
#define OCTET_RUNTIME_DTYPEVISIT_H

#include "runtime/Half.h"
#include "runtime/Plan.h"

#include <cstdint>

namespace octet::rt {

template <class T> struct TypeTag { using type = T; };

/// Calls fn(TypeTag<T>{}) with the C++ element type of `dtype` (Bool is uint8_t, 0 or 1;
/// F16 is Half, runtime/Half.h). `fn` is instantiated for every type: steps reject the
/// types they do not compute on before they visit.
template <class Fn> decltype(auto) visitDType(DType dtype, Fn &&fn) {
  switch (dtype) {
  case DType::F32:
    return fn(TypeTag<float>{});
  case DType::F64:
    return fn(TypeTag<double>{});
  case DType::I64:
    return fn(TypeTag<int64_t>{});
  case DType::I32:
    return fn(TypeTag<int32_t>{});
  case DType::I8:
    return fn(TypeTag<int8_t>{});
  case DType::I16:
    return fn(TypeTag<int16_t>{});
  case DType::U16:
    return fn(TypeTag<uint16_t>{});
  case DType::U32:
    return fn(TypeTag<uint32_t>{});
  case DType::U64:
    return fn(TypeTag<uint64_t>{});
  case DType::F16:
    return fn(TypeTag<Half>{});
  case DType::U8:
  case DType::Bool:
    break;
  }
  return fn(TypeTag<uint8_t>{});
}

} // namespace octet::rt

#endif
