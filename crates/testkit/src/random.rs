//! [`SplitMix`]: a small deterministic generator for tests that spread what they do (where a
//! process is killed, which bytes of a file are damaged) pseudo-randomly, yet can repeat a run:
//! seed it from the clock so runs differ, and print the seed with the result.

use std::time::{SystemTime, UNIX_EPOCH};

/// splitmix64: a `u64` of state, a few multiplications per number; not for anything but tests.
///
/// ```
/// use openharness_testkit::random::SplitMix;
///
/// let seed = SplitMix::seed_from_clock();
/// let (mut a, mut b) = (SplitMix::new(seed), SplitMix::new(seed));
/// let pause = a.below(80_000);
/// assert!(pause < 80_000);
/// assert_eq!(pause, b.below(80_000), "one seed, one sequence");
/// assert!(a.pick(3) < 3);
/// ```
#[derive(Debug, Clone)]
pub struct SplitMix(u64);

impl SplitMix {
    /// A generator whose sequence `seed` fixes.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// A seed from the clock (nanoseconds since the epoch), so that runs differ.
    pub fn seed_from_clock() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos() as u64)
    }

    /// The next number of the sequence.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// An index below `len` (0 when `len` is 0): a position in a slice of that length.
    pub fn pick(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }
}
