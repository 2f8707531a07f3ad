#pragma once
// test::CoutTo: sends std::cout to another stream for one scope (what a documented example
// prints, checked by the test that runs it).
#include <iostream>

namespace test {
class CoutTo {
 public:
  explicit CoutTo(std::ostream& to) : saved_(std::cout.rdbuf(to.rdbuf())) {}
  ~CoutTo() { std::cout.rdbuf(saved_); }
  CoutTo(const CoutTo&) = delete;
  CoutTo& operator=(const CoutTo&) = delete;

 private:
  std::streambuf* saved_;
};
}  // namespace test
