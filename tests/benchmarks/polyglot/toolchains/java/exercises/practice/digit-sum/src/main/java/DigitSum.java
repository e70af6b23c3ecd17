class DigitSum {

    int of(int number) {
        throw new UnsupportedOperationException("Delete this statement and write your own implementation.");
    }

}
