//! CRC32c (Castagnoli, as iSCSI) over the FPDU's length field, ULPDU and
//! pad; its four bytes on the wire are the little-endian bytes of the
//! value.

/// Bytes of the CRC field at the end of every FPDU.
pub const CRC_LEN: usize = 4;

/// A running CRC32c (Castagnoli) over bytes fed in pieces; the value after
/// the pieces `a`, `b` equals the CRC32c of `a ‖ b`. Hardware-accelerated
/// where the CPU has CRC32c instructions (SSE 4.2, ARMv8 CRC).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Crc(u32);

impl Crc {
    /// The CRC of no bytes.
    pub const fn new() -> Crc {
        Crc(0)
    }

    /// Continue over `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0 = ::crc32c::crc32c_append(self.0, bytes);
    }

    /// Continue over a piece of `piece_len` bytes whose own CRC32c
    /// ([`crc32c_of`]) is `piece_crc`, without its bytes.
    pub fn append_crc(&mut self, piece_crc: u32, piece_len: usize) {
        if piece_len > 0 {
            self.0 = ::crc32c::crc32c_combine(self.0, piece_crc, piece_len);
        }
    }

    /// The CRC32c value so far.
    pub const fn value(self) -> u32 {
        self.0
    }

    /// The four bytes that go on the wire: little-endian, as in iSCSI.
    pub const fn wire_bytes(self) -> [u8; 4] {
        self.0.to_le_bytes()
    }
}

/// CRC32c of one byte slice, e.g. payload just placed in memory.
pub fn crc32c_of(bytes: &[u8]) -> u32 {
    ::crc32c::crc32c(bytes)
}
