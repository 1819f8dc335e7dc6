//! The core defines the ABI numbers it uses (event numbers, flags, memory
//! types, attribute values, handle types) in its own terms; this module
//! proves at compile time that they agree with the C types of `dat_abi`,
//! so the two can never drift apart. Error codes are checked by a test
//! against the generated header, name by name.

use udapl::handle::HandleType;
use udapl::object::ep::EpState;
use udapl::object::{attr, evd, event, lmr};

use dat_abi::*;

macro_rules! same {
    ($($core:expr => $c:expr),* $(,)?) => {
        $(const _: () = assert!($core as u64 == $c as u64, stringify!($core));)*
    };
}

same! {
    EpState::Unconnected.to_dat() => DAT_EP_STATE_UNCONNECTED,
    EpState::Reserved.to_dat() => DAT_EP_STATE_RESERVED,
    EpState::PassiveConnectionPending.to_dat() => DAT_EP_STATE_PASSIVE_CONNECTION_PENDING,
    EpState::ActiveConnectionPending.to_dat() => DAT_EP_STATE_ACTIVE_CONNECTION_PENDING,
    EpState::TentativeConnectionPending.to_dat() => DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING,
    EpState::Connected.to_dat() => DAT_EP_STATE_CONNECTED,
    EpState::DisconnectPending.to_dat() => DAT_EP_STATE_DISCONNECT_PENDING,
    EpState::Disconnected.to_dat() => DAT_EP_STATE_DISCONNECTED,
    EpState::CompletionPending.to_dat() => DAT_EP_STATE_COMPLETION_PENDING,
    event::DTO_COMPLETION => DAT_DTO_COMPLETION_EVENT,
    event::RMR_BIND_COMPLETION => DAT_RMR_BIND_COMPLETION_EVENT,
    event::CONNECTION_REQUEST => DAT_CONNECTION_REQUEST_EVENT,
    event::CONNECTION_ESTABLISHED => DAT_CONNECTION_EVENT_ESTABLISHED,
    event::CONNECTION_BROKEN => DAT_CONNECTION_EVENT_BROKEN,
    event::ASYNC_EVD_OVERFLOW => DAT_ASYNC_ERROR_EVD_OVERFLOW,
    event::ASYNC_IA_CATASTROPHIC => DAT_ASYNC_ERROR_IA_CATASTROPHIC,
    event::SOFTWARE => DAT_SOFTWARE_EVENT,
    event::REASON_EVD_OVERFLOW => DAT_EVD_OVERFLOW_ERROR,
    event::REASON_IA_CATASTROPHIC => DAT_IA_CATASTROPHIC_ERROR,
    evd::EVD_SOFTWARE_FLAG => DAT_EVD_SOFTWARE_FLAG,
    evd::EVD_ASYNC_FLAG => DAT_EVD_ASYNC_FLAG,
    udapl::object::EVD_CR_FLAG => DAT_EVD_CR_FLAG,
    udapl::object::EVD_DTO_FLAG => DAT_EVD_DTO_FLAG,
    udapl::object::EVD_CONNECTION_FLAG => DAT_EVD_CONNECTION_FLAG,
    udapl::object::EVD_RMR_BIND_FLAG => DAT_EVD_RMR_BIND_FLAG,
    evd::STATE_ENABLED => DAT_EVD_STATE_ENABLED,
    evd::STATE_DISABLED => DAT_EVD_STATE_DISABLED,
    evd::STATE_WAITABLE => DAT_EVD_STATE_WAITABLE,
    evd::STATE_UNWAITABLE => DAT_EVD_STATE_UNWAITABLE,
    evd::TIMEOUT_INFINITE => DAT_TIMEOUT_INFINITE,
    attr::MEM_TYPE_VIRTUAL => DAT_MEM_TYPE_VIRTUAL,
    attr::MEM_TYPE_LMR => DAT_MEM_TYPE_LMR,
    attr::MEM_TYPE_SHARED_VIRTUAL => DAT_MEM_TYPE_SHARED_VIRTUAL,
    attr::MEM_TYPE_SO_VIRTUAL => DAT_MEM_TYPE_SO_VIRTUAL,
    lmr::PRIV_LOCAL_READ => DAT_MEM_PRIV_LOCAL_READ_FLAG,
    lmr::PRIV_REMOTE_READ => DAT_MEM_PRIV_REMOTE_READ_FLAG,
    lmr::PRIV_LOCAL_WRITE => DAT_MEM_PRIV_LOCAL_WRITE_FLAG,
    lmr::PRIV_REMOTE_WRITE => DAT_MEM_PRIV_REMOTE_WRITE_FLAG,
    lmr::PRIV_RO_DISABLE => DAT_MEM_PRIV_RO_DISABLE_FLAG,
    lmr::COOKIE_SIZE => DAT_LMR_COOKIE_SIZE,
    attr::COMPLETION_SUPPRESS => DAT_COMPLETION_SUPPRESS_FLAG,
    attr::COMPLETION_SOLICITED_WAIT => DAT_COMPLETION_SOLICITED_WAIT_FLAG,
    attr::COMPLETION_UNSIGNALLED => DAT_COMPLETION_UNSIGNALLED_FLAG,
    attr::COMPLETION_BARRIER_FENCE => DAT_COMPLETION_BARRIER_FENCE_FLAG,
    attr::COMPLETION_EVD_THRESHOLD => DAT_COMPLETION_EVD_THRESHOLD_FLAG,
    attr::IOV_CONSUMER => DAT_IOV_CONSUMER,
    attr::QOS_BEST_EFFORT => DAT_QOS_BEST_EFFORT,
    attr::PSP_CREATES_EP_NEVER => DAT_PSP_CREATES_EP_NEVER,
    attr::PSP_CREATES_EP_IFASKED => DAT_PSP_CREATES_EP_IFASKED,
    attr::PZ_UNIQUE => DAT_PZ_UNIQUE,
    HandleType::Cr => DAT_HANDLE_TYPE_CR,
    HandleType::Ep => DAT_HANDLE_TYPE_EP,
    HandleType::Evd => DAT_HANDLE_TYPE_EVD,
    HandleType::Ia => DAT_HANDLE_TYPE_IA,
    HandleType::Lmr => DAT_HANDLE_TYPE_LMR,
    HandleType::Psp => DAT_HANDLE_TYPE_PSP,
    HandleType::Pz => DAT_HANDLE_TYPE_PZ,
    HandleType::Rmr => DAT_HANDLE_TYPE_RMR,
    HandleType::Rsp => DAT_HANDLE_TYPE_RSP,
    HandleType::Cno => DAT_HANDLE_TYPE_CNO,
    HandleType::Srq => DAT_HANDLE_TYPE_SRQ,
    udapl::error::CLASS_ERROR => DAT_CLASS_ERROR,
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    /// Every error type and subtype the core names has the same number in
    /// the generated C header.
    #[test]
    fn error_codes_match_the_header() {
        let header = include_str!("../../include/dat/udat.h");
        let defines: HashMap<&str, &str> = header
            .lines()
            .filter_map(|l| l.strip_prefix("#define "))
            .filter_map(|l| l.split_once(' '))
            .collect();
        let value = |name: &str| -> Option<u64> {
            let mut v = *defines.get(name)?;
            // Follow aliases such as DAT_NAME_NOT_FOUND -> DAT_PROVIDER_NOT_FOUND.
            while let Some(next) = defines.get(v) {
                v = next;
            }
            let v = v.trim().trim_end_matches(['u', 'U', 'l', 'L']);
            match v.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16).ok(),
                None => v.parse().ok(),
            }
        };
        let mut checked = 0;
        for t in udapl::error::Type::ALL {
            assert_eq!(value(t.c_name()), Some(*t as u64), "{}", t.c_name());
            checked += 1;
        }
        for s in udapl::error::Sub::ALL {
            if s.c_name().is_empty() {
                assert_eq!(value("DAT_NO_SUBTYPE"), Some(*s as u64));
                continue;
            }
            assert_eq!(value(s.c_name()), Some(*s as u64), "{}", s.c_name());
            checked += 1;
        }
        assert!(checked > 100);
    }
}
