#include "digit_sum.h"
#include "test/check.h"

TEST("zero") { EXPECT_EQ(digit_sum::of(0), 0); }

#if defined(EXERCISM_RUN_ALL_TESTS)
TEST("several digits") { EXPECT_EQ(digit_sum::of(1907), 17); }

TEST("many nines") { EXPECT_EQ(digit_sum::of(999999), 54); }
#endif
