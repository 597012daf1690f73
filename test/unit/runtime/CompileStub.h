//===- CompileStub.h - what the stub compiler saw ---------------*- C++ -*-===//
#ifndef OCTET_TEST_UNIT_RUNTIME_COMPILESTUB_H
#define OCTET_TEST_UNIT_RUNTIME_COMPILESTUB_H

#include "compiler/driver/Compile.h"

namespace octet {
extern CompileOptions lastCompileOptions;
extern int compileCalls;
} // namespace octet

#endif
