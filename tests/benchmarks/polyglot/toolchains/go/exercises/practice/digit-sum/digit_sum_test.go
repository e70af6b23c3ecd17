package digitsum

import "testing"

var cases = []struct {
	in, want int
}{
	{0, 0},
	{7, 7},
	{1907, 17},
	{999999, 54},
}

func TestDigitSum(t *testing.T) {
	for _, c := range cases {
		if got := DigitSum(c.in); got != c.want {
			t.Fatalf("DigitSum(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}
