"""The toolchain fixture (digit-sum) with test files in which no twin can be planted: every
test compares the solution's answer with another of its answers (no literal expected value),
so grading plants a fallback must-fail test instead. (Java says `isTrue()`: the twin writer
takes `of(...)` for a value builder such as `List.of`.)"""

from __future__ import annotations

import shutil
from pathlib import Path

from .test_toolchains import TOOLCHAINS

TEST_FILE = {
    "cpp": "digit_sum_test.cpp",
    "go": "digit_sum_test.go",
    "java": "src/test/java/DigitSumTest.java",
    "javascript": "digit-sum.spec.js",
    "rust": "tests/digit-sum.rs",
}
REAL_TESTS = {
    "cpp": ["digits in any order", "zeroes add nothing"],
    "go": ["TestDigitsInAnyOrder", "TestZeroesAddNothing"],
    "java": ["digitsInAnyOrder", "zeroesAddNothing"],
    "javascript": ["digits in any order", "zeroes add nothing"],
    "rust": ["digits_in_any_order", "zeroes_add_nothing"],
}
UNTWINNABLE = {
    "go": """package digitsum

import "testing"

func TestDigitsInAnyOrder(t *testing.T) {
	if got := DigitSum(1907); got != DigitSum(9701) {
		t.Fatalf("DigitSum(1907) = %d, DigitSum(9701) = %d", got, DigitSum(9701))
	}
}

func TestZeroesAddNothing(t *testing.T) {
	if got := DigitSum(7); got != DigitSum(7000) {
		t.Fatalf("DigitSum(7) = %d, DigitSum(7000) = %d", got, DigitSum(7000))
	}
}
""",
    "javascript": """import { describe, expect, test, xtest } from '@jest/globals';
import { digitSum } from './digit-sum';

describe('digitSum', () => {
  test('digits in any order', () => {
    expect(digitSum(1907)).toEqual(digitSum(9701));
  });

  xtest('zeroes add nothing', () => {
    expect(digitSum(7)).toEqual(digitSum(7000));
  });
});
""",
    "rust": """use digit_sum::*;

#[test]
fn digits_in_any_order() {
    assert_eq!(digit_sum(1907), digit_sum(9701));
}

#[test]
#[ignore]
fn zeroes_add_nothing() {
    assert_eq!(digit_sum(7), digit_sum(7000));
}
""",
    "java": """import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

public class DigitSumTest {

    @Test
    public void digitsInAnyOrder() {
        assertThat(new DigitSum().of(1907) == new DigitSum().of(9701)).isTrue();
    }

    @Disabled("Remove to run test")
    @Test
    public void zeroesAddNothing() {
        assertThat(new DigitSum().of(7) == new DigitSum().of(7000)).isTrue();
    }

}
""",
    "cpp": """#include "digit_sum.h"
#include "test/check.h"

TEST_CASE("digits in any order") { REQUIRE(digit_sum::of(1907) == digit_sum::of(9701)); }

#if defined(EXERCISM_RUN_ALL_TESTS)
TEST_CASE("zeroes add nothing") {
    REQUIRE(digit_sum::of(7) == digit_sum::of(7000));
}
#endif
""",
}


def untwinnable_root(dest: Path) -> Path:
    """A copy of the toolchain fixtures at `dest`, every test file replaced by its untwinnable one."""
    shutil.copytree(TOOLCHAINS, dest)
    for language, text in UNTWINNABLE.items():
        (dest / language / "exercises" / "practice" / "digit-sum" / TEST_FILE[language]).write_text(text)
    return dest
