package digitsum

// DigitSum returns the sum of the decimal digits of n.
func DigitSum(n int) int {
	panic("Please implement the DigitSum function")
}
