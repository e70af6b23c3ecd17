use itertools::Itertools;

pub fn digit_sum(n: u64) -> u64 {
    // The example's crate (from .meta/Cargo-example.toml) must be there to build.
    let digits = n.to_string().chars().map(|c| u64::from(c.to_digit(10).unwrap())).collect_vec();
    digits.iter().sum()
}
