//===- Status.h - success or an error message, for the runtime --*- C++ -*-===//
//
// The runtime never throws across its API: every fallible call returns a
// Status whose message says what failed, where and why.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_RUNTIME_STATUS_H
#define OCTET_RUNTIME_STATUS_H

#include <string>
#include <utility>

namespace octet::rt {

class [[nodiscard]] Status {
public:
  Status() = default;
  static Status error(std::string message) {
    Status s;
    s.message_ = std::move(message);
    s.failed_ = true;
    return s;
  }
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string &message() const { return message_; }

private:
  std::string message_;
  bool failed_ = false;
};

} // namespace octet::rt

#endif
