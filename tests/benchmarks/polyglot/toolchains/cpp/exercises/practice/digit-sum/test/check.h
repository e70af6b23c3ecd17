// A minimal test harness for Clade's C++ test exercise, with the part of Catch's interface
// the exercise and the grader use (Exercism ships Catch here): TEST_CASE, REQUIRE, and
// `-r xml -o FILE` for a report in the layout of Catch's XML reporter.
#pragma once
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace check {
struct Case {
    const char* name;
    const char* file;
    int line;
    std::function<void()> body;
};
inline std::vector<Case>& cases() {
    static std::vector<Case> all;
    return all;
}
struct Register {
    Register(const char* name, const char* file, int line, std::function<void()> body) {
        cases().push_back({name, file, line, body});
    }
};
struct Failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};
}  // namespace check

#define CHECK_CONCAT2(a, b) a##b
#define CHECK_CONCAT(a, b) CHECK_CONCAT2(a, b)
#define TEST_CASE(name) \
    static void CHECK_CONCAT(test_, __LINE__)(); \
    static check::Register CHECK_CONCAT(reg_, __LINE__)(name, __FILE__, __LINE__, CHECK_CONCAT(test_, __LINE__)); \
    static void CHECK_CONCAT(test_, __LINE__)()
#define REQUIRE(expression) \
    do { \
        if (!(expression)) { \
            throw check::Failure(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": REQUIRE(" #expression ")"); \
        } \
    } while (0)
