#include "digit_sum.h"

namespace digit_sum {

int of(int number) {
    int sum = 0;
    for (; number > 0; number /= 10) {
        sum += number % 10;
    }
    return sum;
}

}  // namespace digit_sum
