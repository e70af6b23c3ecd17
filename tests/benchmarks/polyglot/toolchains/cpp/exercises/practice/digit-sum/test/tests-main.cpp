#include "check.h"

int main() {
    for (const auto& test : check::cases()) {
        try {
            test.body();
        } catch (const std::exception& error) {
            std::cerr << test.name << ": " << error.what() << "\n";
            ++check::failures();
        }
    }
    std::cout << check::cases().size() << " tests, " << check::failures() << " failed\n";
    return check::failures() == 0 ? 0 : 1;
}
