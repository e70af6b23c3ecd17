// A minimal test harness for Clade's C++ test exercise (Exercism ships Catch here).
#pragma once
#include <functional>
#include <iostream>
#include <vector>

namespace check {
struct Case {
    const char* name;
    std::function<void()> body;
};
inline std::vector<Case>& cases() {
    static std::vector<Case> all;
    return all;
}
inline int& failures() {
    static int count = 0;
    return count;
}
struct Register {
    Register(const char* name, std::function<void()> body) { cases().push_back({name, body}); }
};
}  // namespace check

#define CHECK_CONCAT2(a, b) a##b
#define CHECK_CONCAT(a, b) CHECK_CONCAT2(a, b)
#define TEST(name) \
    static void CHECK_CONCAT(test_, __LINE__)(); \
    static check::Register CHECK_CONCAT(reg_, __LINE__)(name, CHECK_CONCAT(test_, __LINE__)); \
    static void CHECK_CONCAT(test_, __LINE__)()
#define EXPECT_EQ(actual, expected) \
    do { \
        if (!((actual) == (expected))) { \
            std::cerr << __FILE__ << ":" << __LINE__ << ": " #actual " != " #expected "\n"; \
            ++check::failures(); \
        } \
    } while (0)
