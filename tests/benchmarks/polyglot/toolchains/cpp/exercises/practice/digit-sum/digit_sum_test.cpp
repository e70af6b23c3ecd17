#include "digit_sum.h"
#include "test/check.h"

TEST_CASE("zero") { REQUIRE(digit_sum::of(0) == 0); }

#if defined(EXERCISM_RUN_ALL_TESTS)
TEST_CASE("several digits") {
    const int expected = 17;
    REQUIRE(digit_sum::of(1907) == expected);
}

TEST_CASE("many nines") { REQUIRE(54 == digit_sum::of(999999)); }
#endif
