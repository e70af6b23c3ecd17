import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

public class DigitSumTest {

    @Test
    public void zero() {
        assertThat(new DigitSum().of(0)).isEqualTo(0);
    }

    @Disabled("Remove to run test")
    @Test
    public void severalDigits() {
        assertThat(new DigitSum().of(1907)).isEqualTo(17);
    }

    @Disabled("Remove to run test")
    @Test
    public void manyNines() {
        assertThat(new DigitSum().of(999999)).isEqualTo(54);
    }

}
