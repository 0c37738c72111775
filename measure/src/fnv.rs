//! 64-bit FNV-1a (Fowler, Noll and Vo): the one hash of the measurement crate, for seeds that
//! must not change between Rust releases (std's hashers may) and for telling files apart. Not
//! cryptographic.

const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// A running FNV-1a hash.
pub struct Fnv1a(u64);

impl Fnv1a {
    /// The empty hash.
    pub fn new() -> Fnv1a {
        Fnv1a(OFFSET)
    }

    /// The empty hash mixed with `seed`: a family of hashes, one per seed.
    pub fn seeded(seed: u64) -> Fnv1a {
        Fnv1a(OFFSET ^ seed)
    }

    /// Takes in `bytes`.
    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(PRIME);
        }
    }

    /// The hash of everything written.
    pub fn finish(&self) -> u64 {
        self.0
    }
}

impl Default for Fnv1a {
    fn default() -> Fnv1a {
        Fnv1a::new()
    }
}
