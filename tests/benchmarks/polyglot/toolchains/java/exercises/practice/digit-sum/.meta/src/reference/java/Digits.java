import java.util.ArrayList;
import java.util.List;

// A helper class of the example: the gold patch must add it beside DigitSum.java.
final class Digits {

    private Digits() {
    }

    static List<Integer> of(int number) {
        List<Integer> digits = new ArrayList<>();
        for (int rest = number; rest > 0; rest /= 10) {
            digits.add(rest % 10);
        }
        return digits;
    }

}
