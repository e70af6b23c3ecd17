class DigitSum {

    int of(int number) {
        return Digits.of(number).stream().mapToInt(Integer::intValue).sum();
    }

}
