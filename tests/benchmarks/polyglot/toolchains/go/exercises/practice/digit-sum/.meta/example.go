package digitsum

// DigitSum returns the sum of the decimal digits of n.
func DigitSum(n int) int {
	sum := 0
	for ; n > 0; n /= 10 {
		sum += n % 10
	}
	return sum
}
