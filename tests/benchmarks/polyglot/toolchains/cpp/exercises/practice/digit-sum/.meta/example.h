#if !defined(DIGIT_SUM_H)
#define DIGIT_SUM_H

namespace digit_sum {

int of(int number);

}  // namespace digit_sum

#endif  // DIGIT_SUM_H
