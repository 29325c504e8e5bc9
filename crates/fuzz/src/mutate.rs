//! Byte-level mutations of an input (the havoc stage of AFL-style fuzzers):
//! bit flips, random and "interesting" bytes, deletions, duplications,
//! splices with another input, format tokens and numbers at edges.

use rand::rngs::Xoshiro256PlusPlus;
use rand::RngExt;

/// Numbers at the edges of the types parsers convert to.
const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "255",
    "256",
    "65535",
    "2147483647",
    "-2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "1e308",
    "-1e308",
    "1e-308",
    "NaN",
    "inf",
    "-inf",
    "0.0000001",
    "99999999999999999999999",
];

/// Inputs are cut back to this size, so a run of insertions cannot grow them
/// without bound.
pub const MAX_LEN: usize = 256 * 1024;

/// Applies 1 to 8 random mutations to `input`; `other` is another corpus
/// entry for splicing, `dictionary` the format's tokens.
pub fn mutate(
    rng: &mut Xoshiro256PlusPlus,
    input: &[u8],
    other: &[u8],
    dictionary: &[&str],
) -> Vec<u8> {
    let mut data = input.to_vec();
    let rounds = 1 << rng.random_range(0..4u32);
    for _ in 0..rounds {
        let len = data.len();
        let at = |rng: &mut Xoshiro256PlusPlus| rng.random_range(0..=len);
        match rng.random_range(0..10u32) {
            0 if len > 0 => {
                let i = rng.random_range(0..len);
                data[i] ^= 1 << rng.random_range(0..8u32);
            }
            1 if len > 0 => {
                let i = rng.random_range(0..len);
                data[i] = rng.random();
            }
            2 if len > 0 => {
                let start = rng.random_range(0..len);
                let end = (start + rng.random_range(1..=64usize)).min(len);
                data.drain(start..end);
            }
            3 if len > 0 => {
                let start = rng.random_range(0..len);
                let end = (start + rng.random_range(1..=256usize)).min(len);
                let chunk = data[start..end].to_vec();
                let i = at(rng);
                data.splice(i..i, chunk);
            }
            4 if !other.is_empty() => {
                let start = rng.random_range(0..other.len());
                let end = (start + rng.random_range(1..=512usize)).min(other.len());
                let i = at(rng);
                data.splice(i..i, other[start..end].iter().copied());
            }
            5 | 6 if !dictionary.is_empty() => {
                let token = dictionary[rng.random_range(0..dictionary.len())];
                let i = at(rng);
                data.splice(i..i, token.bytes());
            }
            7 => replace_number(rng, &mut data),
            8 => {
                let i = at(rng);
                let n = rng.random_range(1..=16usize);
                let bytes: Vec<u8> = (0..n).map(|_| rng.random()).collect();
                data.splice(i..i, bytes);
            }
            _ if len > 0 => {
                // Truncate: inputs cut short, as a crash leaves files.
                let keep = rng.random_range(0..len);
                data.truncate(keep);
            }
            _ => {}
        }
    }
    data.truncate(MAX_LEN);
    data
}

/// Replaces a run of digits (or, without one, a random spot) with an edge
/// number.
fn replace_number(rng: &mut Xoshiro256PlusPlus, data: &mut Vec<u8>) {
    let number = NUMBERS[rng.random_range(0..NUMBERS.len())].as_bytes();
    let digits: Vec<usize> = data
        .iter()
        .enumerate()
        .filter(|(_, b)| b.is_ascii_digit())
        .map(|(i, _)| i)
        .collect();
    if digits.is_empty() {
        let i = rng.random_range(0..=data.len());
        data.splice(i..i, number.iter().copied());
        return;
    }
    let start = digits[rng.random_range(0..digits.len())];
    let mut end = start;
    while end < data.len() && (data[end].is_ascii_digit() || data[end] == b'.') {
        end += 1;
    }
    data.splice(start..end, number.iter().copied());
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn mutations_are_bounded_and_vary() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let seed = b"name = \"w\"\nthreads = 4\n";
        let mut distinct = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let m = mutate(&mut rng, seed, b"[[app]]", &["epoch = "]);
            assert!(m.len() <= MAX_LEN);
            distinct.insert(m);
        }
        assert!(distinct.len() > 150, "{} distinct of 200", distinct.len());
    }
}
