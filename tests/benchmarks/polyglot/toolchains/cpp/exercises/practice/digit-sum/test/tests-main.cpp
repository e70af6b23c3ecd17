#include <cstring>
#include <fstream>
#include <iostream>

#include "check.h"

namespace {
std::string escaped(const std::string& text) {
    std::string out;
    for (char c : text) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            default: out += c;
        }
    }
    return out;
}
}  // namespace

// Runs every test case; `-r xml -o FILE` also writes the results there, as Catch's XML reporter.
int main(int argc, char** argv) {
    const char* report_path = nullptr;
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::strcmp(argv[i], "-o") == 0) report_path = argv[i + 1];
    }
    std::ofstream report;
    if (report_path != nullptr) {
        report.open(report_path);
        report << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Catch name=\"tests\">\n  <Group name=\"tests\">\n";
    }
    int failures = 0;
    for (const auto& test : check::cases()) {
        bool passed = true;
        std::string message;
        try {
            test.body();
        } catch (const std::exception& error) {
            passed = false;
            message = error.what();
        }
        if (!passed) {
            ++failures;
            std::cerr << test.name << ": " << message << "\n";
        }
        if (report.is_open()) {
            report << "    <TestCase name=\"" << escaped(test.name) << "\" filename=\"" << escaped(test.file)
                   << "\" line=\"" << test.line << "\">\n";
            if (!passed) report << "      <Failure>" << escaped(message) << "</Failure>\n";
            report << "      <OverallResult success=\"" << (passed ? "true" : "false") << "\"/>\n    </TestCase>\n";
        }
    }
    if (report.is_open()) report << "  </Group>\n</Catch>\n";
    std::cout << check::cases().size() << " test cases, " << failures << " failed\n";
    return failures;
}
