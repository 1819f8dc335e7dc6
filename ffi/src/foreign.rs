//! Handles of third-party providers (loaded through dat.conf).
//!
//! A handle that is not in our arena is dispatched the way the reference
//! libdat does it, through the `DAT_PROVIDER *` in its first word, but only
//! if that word can be read without faulting and names the table of a
//! registered provider. Anything else is `DAT_INVALID_HANDLE`.

use crate::registry_glue;
use crate::types::DAT_PROVIDER;

/// Reads one word at `addr` without faulting (`process_vm_readv` on ourself).
fn read_word(addr: usize) -> Option<usize> {
    let mut word: usize = 0;
    let local = libc::iovec {
        iov_base: (&mut word as *mut usize).cast(),
        iov_len: std::mem::size_of::<usize>(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: std::mem::size_of::<usize>(),
    };
    // SAFETY: the kernel copies from our own address space and reports
    // EFAULT for an unmapped source instead of faulting; `local` is valid.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    (n == std::mem::size_of::<usize>() as isize).then_some(word)
}

/// The provider table of a foreign handle, if it is one.
pub(crate) fn provider(addr: usize) -> Option<&'static DAT_PROVIDER> {
    let reg = registry_glue::existing()?;
    let table = read_word(addr)?;
    if table == 0 || !reg.knows_provider(table) {
        return None;
    }
    // SAFETY: `table` was registered with dat_registry_add_provider and stays
    // valid while the provider's library is loaded (it is while it has entries).
    Some(unsafe { &*(table as *const DAT_PROVIDER) })
}

#[cfg(test)]
mod tests {
    #[test]
    fn read_word_does_not_fault() {
        let x: usize = 0xdead_beef;
        assert_eq!(
            super::read_word(&x as *const usize as usize),
            Some(0xdead_beef)
        );
        assert_eq!(super::read_word(8), None);
    }
}
