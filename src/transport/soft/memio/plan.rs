//! [`IoPlan`]: the bytes of one transfer (a local header, a byte range of a
//! scatter list of application memory, a local trailer) and the iovecs
//! that name them.

use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;

use super::{app_ptr, RawSeg, MAX_CALL_BYTES};

/// The bytes of a transfer: a local header, bytes `[off, off + len)` of a
/// scatter list of application memory, a local trailer, in this order.
///
/// A plan made by [`IoPlan::send`] is only read; one made by
/// [`IoPlan::recv`] borrows its header and trailer mutably and may be
/// received into. After a partial transfer, [`IoPlan::advance`] drops the
/// bytes transferred.
pub struct IoPlan<'a> {
    head: *mut u8,
    head_len: usize,
    /// The list from the segment holding the next application byte.
    pub(super) segs: &'a [RawSeg],
    /// Bytes of `segs[0]` already behind us.
    pub(super) off: u64,
    /// Application bytes left.
    pub(super) len: u64,
    tail: *mut u8,
    tail_len: usize,
    pub(super) writable: bool,
    _local: PhantomData<&'a mut [u8]>,
}

impl<'a> IoPlan<'a> {
    fn new(
        head: (*mut u8, usize),
        segs: &'a [RawSeg],
        off: u64,
        len: u64,
        tail: (*mut u8, usize),
        writable: bool,
    ) -> Option<IoPlan<'a>> {
        let end = off.checked_add(len)?;
        let mut total: u64 = 0;
        for s in segs {
            total = total.checked_add(s.len)?;
        }
        if end > total {
            return None;
        }
        let mut plan = IoPlan {
            head: head.0,
            head_len: head.1,
            segs,
            off,
            len,
            tail: tail.0,
            tail_len: tail.1,
            writable,
            _local: PhantomData,
        };
        plan.skip_spent_segs();
        Some(plan)
    }

    /// A plan to send: `header`, bytes `[off, off + len)` of `segs`,
    /// `trailer`. `None` if the range is not inside the list.
    pub fn send(
        header: &'a [u8],
        segs: &'a [RawSeg],
        off: u64,
        len: u64,
        trailer: &'a [u8],
    ) -> Option<IoPlan<'a>> {
        Self::new(
            (header.as_ptr().cast_mut(), header.len()),
            segs,
            off,
            len,
            (trailer.as_ptr().cast_mut(), trailer.len()),
            false,
        )
    }

    /// A plan to receive into: `header`, bytes `[off, off + len)` of `segs`,
    /// `trailer`. `None` if the range is not inside the list.
    pub fn recv(
        header: &'a mut [u8],
        segs: &'a [RawSeg],
        off: u64,
        len: u64,
        trailer: &'a mut [u8],
    ) -> Option<IoPlan<'a>> {
        Self::new(
            (header.as_mut_ptr(), header.len()),
            segs,
            off,
            len,
            (trailer.as_mut_ptr(), trailer.len()),
            true,
        )
    }

    /// Bytes of the plan not yet transferred.
    pub fn len(&self) -> u64 {
        self.head_len as u64 + self.len + self.tail_len as u64
    }

    /// Whether every byte has been transferred.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops the first `n` bytes (transferred). Panics if `n` exceeds
    /// [`IoPlan::len`].
    pub fn advance(&mut self, n: usize) {
        let mut n = n as u64;
        assert!(n <= self.len(), "IoPlan advanced past its end");
        let h = n.min(self.head_len as u64) as usize;
        self.head = self.head.wrapping_add(h);
        self.head_len -= h;
        n -= h as u64;
        let a = n.min(self.len);
        self.off += a;
        self.len -= a;
        n -= a;
        self.skip_spent_segs();
        let t = n as usize;
        self.tail = self.tail.wrapping_add(t);
        self.tail_len -= t;
    }

    /// Drops leading segments that are wholly behind `off`, and the whole
    /// list once no application byte is left.
    fn skip_spent_segs(&mut self) {
        if self.len == 0 {
            self.segs = &[];
            self.off = 0;
            return;
        }
        while let Some(s) = self.segs.first() {
            if self.off < s.len {
                break;
            }
            self.off -= s.len;
            self.segs = &self.segs[1..];
        }
    }

    /// Fills `iov` with the plan's next bytes, skipping empty parts: at most
    /// `iov.len()` entries and [`MAX_CALL_BYTES`] bytes. Returns the entries
    /// and bytes filled; fewer bytes than [`IoPlan::len`] when the array or
    /// the byte limit ran out.
    #[cfg(test)]
    pub(super) fn fill(&self, iov: &mut [libc::iovec]) -> (usize, usize) {
        let len = iov.len();
        // SAFETY: `MaybeUninit<iovec>` has the layout of `iovec`, and
        // `fill_uninit` only stores initialised values, so `iov` stays
        // initialised.
        let iov = unsafe {
            std::slice::from_raw_parts_mut(iov.as_mut_ptr().cast::<MaybeUninit<libc::iovec>>(), len)
        };
        self.fill_uninit(iov)
    }

    /// [`IoPlan::fill`] into possibly uninitialised entries: the first
    /// `count` returned are initialised.
    pub(super) fn fill_uninit(&self, iov: &mut [MaybeUninit<libc::iovec>]) -> (usize, usize) {
        let mut count = 0;
        let mut bytes = 0usize;
        let mut push = |base: *mut libc::c_void, len: usize| -> bool {
            if len == 0 {
                return true;
            }
            if count == iov.len() || bytes == MAX_CALL_BYTES {
                return false;
            }
            let take = len.min(MAX_CALL_BYTES - bytes);
            iov[count].write(libc::iovec {
                iov_base: base,
                iov_len: take,
            });
            count += 1;
            bytes += take;
            take == len
        };
        if !push(self.head.cast(), self.head_len) {
            return (count, bytes);
        }
        let mut off = self.off;
        let mut left = self.len;
        for s in self.segs {
            if left == 0 {
                break;
            }
            let n = (s.len - off).min(left);
            let base = app_ptr(s.addr.wrapping_add(off));
            // n ≤ the plan's length; more than fits a call is cut by push.
            if !push(base, usize::try_from(n).unwrap_or(usize::MAX)) {
                return (count, bytes);
            }
            left -= n;
            off = 0;
        }
        push(self.tail.cast(), self.tail_len);
        (count, bytes)
    }
}

impl fmt::Debug for IoPlan<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IoPlan")
            .field("header", &self.head_len)
            .field("segs", &self.segs)
            .field("off", &self.off)
            .field("len", &self.len)
            .field("trailer", &self.tail_len)
            .field("writable", &self.writable)
            .finish()
    }
}

impl<'a> IoPlan<'a> {
    /// A copy of the cursor for a send or receive loop to advance; the
    /// original keeps the borrows.
    pub(super) fn shallow(&self) -> IoPlan<'a> {
        IoPlan {
            head: self.head,
            head_len: self.head_len,
            segs: self.segs,
            off: self.off,
            len: self.len,
            tail: self.tail,
            tail_len: self.tail_len,
            writable: self.writable,
            _local: PhantomData,
        }
    }
}
