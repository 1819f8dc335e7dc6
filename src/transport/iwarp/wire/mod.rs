//! The iWARP wire format as pure functions and small state machines: what
//! the bytes on the TCP connection are, and nothing about sockets. Nothing
//! here allocates: headers go into fixed arrays, frames into caller
//! buffers. docs/wire.md describes the format and the decisions taken.
//!
//! - [`crc`]: CRC32c, as MPA sends it;
//! - [`mpa`]: MPA setup frames (Request, Reply) and their parser;
//! - [`ddp`]: DDP/RDMAP headers, Read Requests, the Terminate error codes;
//! - [`fpdu`]: FPDU framing, sending and receiving;
//! - [`terminate`]: Terminate messages, in the RFC and `siw` layouts.

pub mod crc;
pub mod ddp;
pub mod fpdu;
pub mod mpa;
pub mod terminate;
#[cfg(test)]
mod tests;

pub use crc::*;
pub use ddp::*;
pub use fpdu::*;
pub use mpa::*;
pub use terminate::*;

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(w)
}
