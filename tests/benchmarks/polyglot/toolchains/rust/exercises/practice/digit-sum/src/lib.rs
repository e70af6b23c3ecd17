pub fn digit_sum(n: u64) -> u64 {
    todo!("add up the digits of {n}")
}
