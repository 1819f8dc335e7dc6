//! How 64-bit service ids (DAT connection qualifiers) map to the 16-bit
//! ports of TCP and of rdma_cm's TCP port space, as OFED's dapl rdma_cm
//! provider maps them, so that peers running real dapl find each other.

/// The port of service id `q`: an id that fits in 16 bits is the port;
/// a larger one maps to `q % 32001 + 33534`. (Two large ids can share a
/// port.)
pub(crate) fn port_of_service(q: u64) -> u16 {
    match u16::try_from(q) {
        Ok(p) => p,
        // q % 32001 < 32001, so the sum is below 65535.
        Err(_) => (q % 32_001 + 33_534) as u16,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_ids_map_to_ports_as_ofed_dapl() {
        assert_eq!(port_of_service(0), 0);
        assert_eq!(port_of_service(4791), 4791);
        assert_eq!(port_of_service(65_535), 65_535);
        assert_eq!(port_of_service(65_536), (65_536 % 32_001 + 33_534) as u16);
        assert_eq!(
            port_of_service(u64::MAX),
            (u64::MAX % 32_001 + 33_534) as u16
        );
        for q in [70_000u64, 1 << 40, 123_456_789] {
            let p = port_of_service(q);
            assert!((33_534..65_535).contains(&p));
        }
    }
}
