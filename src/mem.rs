//! What the process has mapped at an address range, read from
//! `/proc/self/maps`. Used when registering memory: a range must be mapped
//! (what pinning would check on RDMA hardware), and a shared-virtual
//! registration must be backed by shared memory.

/// How a fully mapped range is backed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mapping {
    /// At least part of it is private (anonymous or file `MAP_PRIVATE`).
    Private,
    /// Every byte is in a `MAP_SHARED` mapping.
    Shared,
}

/// How `[va, va + len)` is mapped, or `None` if any byte of it is not mapped.
pub fn mapping(va: u64, len: u64) -> Option<Mapping> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    mapping_in(&maps, va, len)
}

fn mapping_in(maps: &str, va: u64, len: u64) -> Option<Mapping> {
    let end = va.checked_add(len)?;
    let mut cursor = va;
    let mut shared = true;
    for line in maps.lines() {
        let mut fields = line.split_ascii_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
            continue;
        };
        let Some((lo, hi)) = range.split_once('-') else {
            continue;
        };
        let (Ok(lo), Ok(hi)) = (u64::from_str_radix(lo, 16), u64::from_str_radix(hi, 16)) else {
            continue;
        };
        if hi <= cursor {
            continue;
        }
        if lo > cursor {
            return None;
        }
        shared &= perms.as_bytes().get(3) == Some(&b's');
        cursor = hi;
        if cursor >= end {
            return Some(if shared {
                Mapping::Shared
            } else {
                Mapping::Private
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
1000-3000 rw-p 00000000 00:00 0
3000-4000 rw-s 00000000 00:05 12 /dev/zero (deleted)
4000-5000 rw-s 00000000 00:05 13 /dev/shm/x
8000-9000 r--p 00000000 00:00 0
";

    #[test]
    fn ranges() {
        assert_eq!(mapping_in(MAPS, 0x1000, 0x10), Some(Mapping::Private));
        assert_eq!(mapping_in(MAPS, 0x2ff0, 0x20), Some(Mapping::Private));
        assert_eq!(mapping_in(MAPS, 0x3000, 0x2000), Some(Mapping::Shared));
        assert_eq!(mapping_in(MAPS, 0x4800, 0x1000), None);
        assert_eq!(mapping_in(MAPS, 0x500, 0x10), None);
        assert_eq!(mapping_in(MAPS, 0x8000, 0x1000), Some(Mapping::Private));
        assert_eq!(mapping_in(MAPS, u64::MAX, 2), None);
    }

    #[test]
    fn own_heap_is_mapped_private() {
        let v = vec![7u8; 8192];
        let a = v.as_ptr() as u64;
        assert_eq!(mapping(a, 8192), Some(Mapping::Private));
    }
}
