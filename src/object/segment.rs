//! The segments a post names (`DAT_LMR_TRIPLET`, `DAT_RMR_TRIPLET`) and the
//! scatter/gather list made of them, shared by EP and SRQ posts.

use crate::error::{DatError, Input, Result, Type};
use crate::transport::api::{KeyFault, Sge};

/// One local segment (`DAT_LMR_TRIPLET`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Segment {
    pub lmr_context: u32,
    pub addr: u64,
    pub len: u64,
}

/// A remote buffer (`DAT_RMR_TRIPLET`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RemoteSegment {
    pub rmr_context: u32,
    pub addr: u64,
    pub len: u64,
}

/// The most segments one post may carry (the device's limit).
pub const MAX_IOV: usize = 8;

/// §3.7 step 6: unknown context or missing right → privileges; another PZ
/// → protection; outside the LMR → invalid parameter.
pub fn key_fault(f: KeyFault, input: Input) -> DatError {
    match f {
        KeyFault::Key | KeyFault::Rights => DatError::of(Type::PrivilegesViolation),
        KeyFault::Domain => DatError::of(Type::ProtectionViolation),
        KeyFault::Bounds => DatError::invalid(input),
    }
}

/// The scatter/gather list of an IOV, on the stack: zero-length segments
/// are left out (their other fields are ignored, §3.6).
#[inline]
pub(crate) fn sgl(iov: &[Segment], buf: &mut [Sge; MAX_IOV]) -> Result<(usize, u64)> {
    let mut n = 0;
    let mut total: u64 = 0;
    for s in iov {
        if s.len == 0 {
            continue;
        }
        let slot = buf
            .get_mut(n)
            .ok_or(DatError::invalid(Input::NumSegments))?;
        *slot = Sge {
            addr: s.addr,
            len: s.len,
            lkey: s.lmr_context,
        };
        n += 1;
        total = total
            .checked_add(s.len)
            .ok_or(DatError::invalid(Input::LocalIov))?;
    }
    Ok((n, total))
}
