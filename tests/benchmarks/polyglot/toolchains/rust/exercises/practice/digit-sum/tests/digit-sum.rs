use digit_sum::*;

#[test]
fn zero() {
    assert_eq!(digit_sum(0), 0);
}

#[test]
#[ignore]
fn several_digits() {
    assert_eq!(digit_sum(1907), 17);
}

#[test]
#[ignore]
fn many_nines() {
    assert_eq!(digit_sum(999_999), 54);
}
