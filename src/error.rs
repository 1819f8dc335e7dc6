//! `DAT_RETURN` values: class | type | subtype, and the names `dat_strerror`
//! gives them. This table is the only place the names live.
//!
//! Every error this crate produces carries the error class bit
//! (`0x8000_0000`), as the 1.2 header's `DAT_ERROR()` macro builds them.

use std::fmt;

/// Error class bit of a `DAT_RETURN`.
pub const CLASS_ERROR: u32 = 0x8000_0000;
/// Bits 29–16: the type.
pub const TYPE_MASK: u32 = 0x3FFF_0000;
/// Bits 15–0: the subtype.
pub const SUBTYPE_MASK: u32 = 0x0000_FFFF;

macro_rules! code_table {
    ($(#[$m:meta])* $vis:vis enum $name:ident : $names_fn:ident { $($variant:ident = $value:expr => $cname:literal,)* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u32)]
        $vis enum $name { $($variant = $value,)* }

        impl $name {
            /// Every value, in numeric order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The C identifier of this value.
            pub const fn c_name(self) -> &'static str {
                match self { $($name::$variant => $cname,)* }
            }

            /// The value with this number, if it is defined.
            pub fn from_u32(v: u32) -> Option<Self> {
                match v { $(x if x == $value => Some($name::$variant),)* _ => None }
            }
        }

        /// The C identifier for a raw number, if defined.
        pub fn $names_fn(v: u32) -> Option<&'static str> {
            $name::from_u32(v).map($name::c_name)
        }
    };
}

code_table! {
    /// `DAT_RETURN_TYPE`: the type field, already shifted into bits 29–16.
    pub enum Type: type_name {
        Success = 0x0000_0000 => "DAT_SUCCESS",
        Abort = 0x0001_0000 => "DAT_ABORT",
        ConnQualInUse = 0x0002_0000 => "DAT_CONN_QUAL_IN_USE",
        InsufficientResources = 0x0003_0000 => "DAT_INSUFFICIENT_RESOURCES",
        InternalError = 0x0004_0000 => "DAT_INTERNAL_ERROR",
        InvalidHandle = 0x0005_0000 => "DAT_INVALID_HANDLE",
        InvalidParameter = 0x0006_0000 => "DAT_INVALID_PARAMETER",
        InvalidState = 0x0007_0000 => "DAT_INVALID_STATE",
        LengthError = 0x0008_0000 => "DAT_LENGTH_ERROR",
        ModelNotSupported = 0x0009_0000 => "DAT_MODEL_NOT_SUPPORTED",
        ProviderNotFound = 0x000A_0000 => "DAT_NAME_NOT_FOUND",
        PrivilegesViolation = 0x000B_0000 => "DAT_PRIVILEGES_VIOLATION",
        ProtectionViolation = 0x000C_0000 => "DAT_PROTECTION_VIOLATION",
        QueueEmpty = 0x000D_0000 => "DAT_QUEUE_EMPTY",
        QueueFull = 0x000E_0000 => "DAT_QUEUE_FULL",
        TimeoutExpired = 0x000F_0000 => "DAT_TIMEOUT_EXPIRED",
        ProviderAlreadyRegistered = 0x0010_0000 => "DAT_PROVIDER_ALREADY_REGISTERED",
        ProviderInUse = 0x0011_0000 => "DAT_PROVIDER_IN_USE",
        InvalidAddress = 0x0012_0000 => "DAT_INVALID_ADDRESS",
        InterruptedCall = 0x0013_0000 => "DAT_INTERRUPTED_CALL",
        ConnQualUnavailable = 0x0014_0000 => "DAT_CONN_QUAL_UNAVAILABLE",
        NotImplemented = 0x0FFF_0000 => "DAT_NOT_IMPLEMENTED",
    }
}

code_table! {
    /// `DAT_RETURN_SUBTYPE`: the subtype field (bits 15–0), illumos 1.2 numbering.
    pub enum Sub: subtype_name {
        None = 0 => "",
        Interrupted = 1 => "DAT_SUB_INTERRUPTED",
        ResourceMemory = 2 => "DAT_RESOURCE_MEMORY",
        ResourceDevice = 3 => "DAT_RESOURCE_DEVICE",
        ResourceTep = 4 => "DAT_RESOURCE_TEP",
        ResourceTevd = 5 => "DAT_RESOURCE_TEVD",
        ResourceProtectionDomain = 6 => "DAT_RESOURCE_PROTECTION_DOMAIN",
        ResourceMemoryRegion = 7 => "DAT_RESOURCE_MEMORY_REGION",
        ResourceErrorHandler = 8 => "DAT_RESOURCE_ERROR_HANDLER",
        ResourceCredits = 9 => "DAT_RESOURCE_CREDITS",
        ResourceSrq = 10 => "DAT_RESOURCE_SRQ",
        HandleIa = 11 => "DAT_INVALID_HANDLE_IA",
        HandleEp = 12 => "DAT_INVALID_HANDLE_EP",
        HandleLmr = 13 => "DAT_INVALID_HANDLE_LMR",
        HandleRmr = 14 => "DAT_INVALID_HANDLE_RMR",
        HandlePz = 15 => "DAT_INVALID_HANDLE_PZ",
        HandlePsp = 16 => "DAT_INVALID_HANDLE_PSP",
        HandleRsp = 17 => "DAT_INVALID_HANDLE_RSP",
        HandleCr = 18 => "DAT_INVALID_HANDLE_CR",
        HandleCno = 19 => "DAT_INVALID_HANDLE_CNO",
        HandleEvdCr = 20 => "DAT_INVALID_HANDLE_EVD_CR",
        HandleEvdRequest = 21 => "DAT_INVALID_HANDLE_EVD_REQUEST",
        HandleEvdRecv = 22 => "DAT_INVALID_HANDLE_EVD_RECV",
        HandleEvdConn = 23 => "DAT_INVALID_HANDLE_EVD_CONN",
        HandleEvdAsync = 24 => "DAT_INVALID_HANDLE_EVD_ASYNC",
        HandleSrq = 25 => "DAT_INVALID_HANDLE_SRQ",
        Handle1 = 26 => "DAT_INVALID_HANDLE1",
        Handle2 = 27 => "DAT_INVALID_HANDLE2",
        Handle3 = 28 => "DAT_INVALID_HANDLE3",
        Handle4 = 29 => "DAT_INVALID_HANDLE4",
        Handle5 = 30 => "DAT_INVALID_HANDLE5",
        Handle6 = 31 => "DAT_INVALID_HANDLE6",
        Handle7 = 32 => "DAT_INVALID_HANDLE7",
        Handle8 = 33 => "DAT_INVALID_HANDLE8",
        Handle9 = 34 => "DAT_INVALID_HANDLE9",
        Handle10 = 35 => "DAT_INVALID_HANDLE10",
        Arg1 = 36 => "DAT_INVALID_ARG1",
        Arg2 = 37 => "DAT_INVALID_ARG2",
        Arg3 = 38 => "DAT_INVALID_ARG3",
        Arg4 = 39 => "DAT_INVALID_ARG4",
        Arg5 = 40 => "DAT_INVALID_ARG5",
        Arg6 = 41 => "DAT_INVALID_ARG6",
        Arg7 = 42 => "DAT_INVALID_ARG7",
        Arg8 = 43 => "DAT_INVALID_ARG8",
        Arg9 = 44 => "DAT_INVALID_ARG9",
        Arg10 = 45 => "DAT_INVALID_ARG10",
        EpUnconnected = 46 => "DAT_INVALID_STATE_EP_UNCONNECTED",
        EpActConnPending = 47 => "DAT_INVALID_STATE_EP_ACTCONNPENDING",
        EpPassConnPending = 48 => "DAT_INVALID_STATE_EP_PASSCONNPENDING",
        EpTentConnPending = 49 => "DAT_INVALID_STATE_EP_TENTCONNPENDING",
        EpConnected = 50 => "DAT_INVALID_STATE_EP_CONNECTED",
        EpDisconnected = 51 => "DAT_INVALID_STATE_EP_DISCONNECTED",
        EpReserved = 52 => "DAT_INVALID_STATE_EP_RESERVED",
        EpComplPending = 53 => "DAT_INVALID_STATE_EP_COMPLPENDING",
        EpDiscPending = 54 => "DAT_INVALID_STATE_EP_DISCPENDING",
        EpProviderControl = 55 => "DAT_INVALID_STATE_EP_PROVIDERCONTROL",
        EpNotReady = 56 => "DAT_INVALID_STATE_EP_NOTREADY",
        EpRecvWatermark = 57 => "DAT_INVALID_STATE_EP_RECV_WATERMARK",
        EpPz = 58 => "DAT_INVALID_STATE_EP_PZ",
        EpEvdRequest = 59 => "DAT_INVALID_STATE_EP_EVD_REQUEST",
        EpEvdRecv = 60 => "DAT_INVALID_STATE_EP_EVD_RECV",
        EpEvdConnect = 61 => "DAT_INVALID_STATE_EP_EVD_CONNECT",
        EpUnconfigured = 62 => "DAT_INVALID_STATE_EP_UNCONFIGURED",
        EpUnconfReserved = 63 => "DAT_INVALID_STATE_EP_UNCONFRESERVED",
        EpUnconfPassive = 64 => "DAT_INVALID_STATE_EP_UNCONFPASSIVE",
        EpUnconfTentative = 65 => "DAT_INVALID_STATE_EP_UNCONFTENTATIVE",
        CnoInUse = 66 => "DAT_INVALID_STATE_CNO_IN_USE",
        CnoDead = 67 => "DAT_INVALID_STATE_CNO_DEAD",
        EvdOpen = 68 => "DAT_INVALID_STATE_EVD_OPEN",
        EvdEnabled = 69 => "DAT_INVALID_STATE_EVD_ENABLED",
        EvdDisabled = 70 => "DAT_INVALID_STATE_EVD_DISABLED",
        EvdWaitable = 71 => "DAT_INVALID_STATE_EVD_WAITABLE",
        EvdUnwaitable = 72 => "DAT_INVALID_STATE_EVD_UNWAITABLE",
        EvdInUse = 73 => "DAT_INVALID_STATE_EVD_IN_USE",
        EvdConfigNotify = 74 => "DAT_INVALID_STATE_EVD_CONFIG_NOTIFY",
        EvdConfigSolicited = 75 => "DAT_INVALID_STATE_EVD_CONFIG_SOLICITED",
        EvdConfigThreshold = 76 => "DAT_INVALID_STATE_EVD_CONFIG_THRESHOLD",
        EvdWaiter = 77 => "DAT_INVALID_STATE_EVD_WAITER",
        EvdAsync = 78 => "DAT_INVALID_STATE_EVD_ASYNC",
        IaInUse = 79 => "DAT_INVALID_STATE_IA_IN_USE",
        LmrInUse = 80 => "DAT_INVALID_STATE_LMR_IN_USE",
        LmrFree = 81 => "DAT_INVALID_STATE_LMR_FREE",
        PzInUse = 82 => "DAT_INVALID_STATE_PZ_IN_USE",
        PzFree = 83 => "DAT_INVALID_STATE_PZ_FREE",
        SrqOperational = 84 => "DAT_INVALID_STATE_SRQ_OPERATIONAL",
        SrqError = 85 => "DAT_INVALID_STATE_SRQ_ERROR",
        SrqInUse = 86 => "DAT_INVALID_STATE_SRQ_IN_USE",
        PrivilegesRead = 87 => "DAT_PRIVILEGES_READ",
        PrivilegesWrite = 88 => "DAT_PRIVILEGES_WRITE",
        PrivilegesRdmaRead = 89 => "DAT_PRIVILEGES_RDMA_READ",
        PrivilegesRdmaWrite = 90 => "DAT_PRIVILEGES_RDMA_WRITE",
        ProtectionRead = 91 => "DAT_PROTECTION_READ",
        ProtectionWrite = 92 => "DAT_PROTECTION_WRITE",
        ProtectionRdmaRead = 93 => "DAT_PROTECTION_RDMA_READ",
        ProtectionRdmaWrite = 94 => "DAT_PROTECTION_RDMA_WRITE",
        AddressUnsupported = 95 => "DAT_INVALID_ADDRESS_UNSUPPORTED",
        AddressUnreachable = 96 => "DAT_INVALID_ADDRESS_UNREACHABLE",
        AddressMalformed = 97 => "DAT_INVALID_ADDRESS_MALFORMED",
        NameNotRegistered = 98 => "DAT_NAME_NOT_REGISTERED",
        MajorNotFound = 99 => "DAT_MAJOR_NOT_FOUND",
        MinorNotFound = 100 => "DAT_MINOR_NOT_FOUND",
        ThreadSafetyNotFound = 101 => "DAT_THREAD_SAFETY_NOT_FOUND",
        InvalidRoCookie = 102 => "DAT_INVALID_RO_COOKIE",
    }
}

/// A DAT error: the full `DAT_RETURN` value, error class bit set, and for
/// `DAT_INVALID_PARAMETER` which input of the call was invalid. One word:
/// the input rides in the subtype field, marked by [`INPUT_MARK`] (DAT
/// subtypes stop at 0x66), until the C layer numbers it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DatError(u32);

/// Marks a subtype field that holds an [`Input`]'s index, not a DAT subtype.
const INPUT_MARK: u32 = 0x8000;

macro_rules! inputs {
    ($($variant:ident => $cname:literal,)*) => {
        /// An input of a DAT call, named as the parameter of the C prototype
        /// that carries it. The core says which input was invalid; the C
        /// layer turns that into `DAT_INVALID_ARGn` of the called function.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Input { $($variant,)* }

        impl Input {
            /// Every input.
            pub const ALL: &'static [Input] = &[$(Input::$variant,)*];

            /// The parameter's name in the C prototypes (`<dat/udat.h>`).
            pub const fn c_name(self) -> &'static str {
                match self { $(Input::$variant => $cname,)* }
            }
        }
    };
}

inputs! {
    Agent => "agent",
    AsyncEvdHandle => "async_evd_handle",
    AsyncEvdQlen => "async_evd_qlen",
    BufsAllocSpan => "bufs_alloc_span",
    CloseFlags => "close_flags",
    CnoHandle => "cno_handle",
    CnoParam => "cno_param",
    CnoParamMask => "cno_param_mask",
    CompletionFlags => "completion_flags",
    ConnQual => "conn_qual",
    ConnectEvdHandle => "connect_evd_handle",
    ConnectFlags => "connect_flags",
    Context => "context",
    CrHandle => "cr_handle",
    CrParam => "cr_param",
    CrParamMask => "cr_param_mask",
    DaplMajor => "dapl_major",
    DaplMinor => "dapl_minor",
    DatHandle => "dat_handle",
    DatProviderList => "dat_provider_list",
    EntriesReturned => "entries_returned",
    EpAttributes => "ep_attributes",
    EpDupHandle => "ep_dup_handle",
    EpHandle => "ep_handle",
    EpParam => "ep_param",
    EpParamMask => "ep_param_mask",
    EpState => "ep_state",
    EvdFlags => "evd_flags",
    EvdHandle => "evd_handle",
    EvdMinQlen => "evd_min_qlen",
    EvdParam => "evd_param",
    EvdParamMask => "evd_param_mask",
    Event => "event",
    HandleType => "handle_type",
    Handoff => "handoff",
    HardHighWatermark => "hard_high_watermark",
    IaAttrMask => "ia_attr_mask",
    IaAttributes => "ia_attributes",
    IaFlags => "ia_flags",
    IaHandle => "ia_handle",
    Length => "length",
    LmrContext => "lmr_context",
    LmrHandle => "lmr_handle",
    LmrParam => "lmr_param",
    LmrParamMask => "lmr_param_mask",
    LmrTriplet => "lmr_triplet",
    LocalIov => "local_iov",
    LocalSegments => "local_segments",
    LowWatermark => "low_watermark",
    MajorMessage => "major_message",
    MaxToReturn => "max_to_return",
    MemPriv => "mem_priv",
    MemType => "mem_type",
    MinorMessage => "minor_message",
    Name => "name",
    NbufsAllocated => "nbufs_allocated",
    Nmore => "nmore",
    NumSegments => "num_segments",
    PrivateData => "private_data",
    PrivateDataSize => "private_data_size",
    Privileges => "privileges",
    Provider => "provider",
    ProviderAttrMask => "provider_attr_mask",
    ProviderAttributes => "provider_attributes",
    ProviderInfo => "provider_info",
    PspFlags => "psp_flags",
    PspHandle => "psp_handle",
    PspParam => "psp_param",
    PspParamMask => "psp_param_mask",
    PzHandle => "pz_handle",
    PzParam => "pz_param",
    PzParamMask => "pz_param_mask",
    Qos => "qos",
    RecvEvdHandle => "recv_evd_handle",
    RecvIdle => "recv_idle",
    RegionDescription => "region_description",
    RegisteredAddress => "registered_address",
    RegisteredLength => "registered_length",
    RemoteConnQual => "remote_conn_qual",
    RemoteIaAddress => "remote_ia_address",
    RemoteIov => "remote_iov",
    RequestEvdHandle => "request_evd_handle",
    RequestIdle => "request_idle",
    RmrContext => "rmr_context",
    RmrHandle => "rmr_handle",
    RmrParam => "rmr_param",
    RmrParamMask => "rmr_param_mask",
    RspHandle => "rsp_handle",
    RspParam => "rsp_param",
    RspParamMask => "rsp_param_mask",
    SoftHighWatermark => "soft_high_watermark",
    SrqAttr => "srq_attr",
    SrqHandle => "srq_handle",
    SrqMaxRecvDto => "srq_max_recv_dto",
    SrqParam => "srq_param",
    SrqParamMask => "srq_param_mask",
    ThreadSafety => "thread_safety",
    Threshold => "threshold",
    Timeout => "timeout",
    UserCookie => "user_cookie",
    Value => "value",
}

/// Result of a core operation.
pub type Result<T> = std::result::Result<T, DatError>;

impl DatError {
    /// `DAT_CLASS_ERROR | ty | sub`.
    pub const fn new(ty: Type, sub: Sub) -> Self {
        DatError(CLASS_ERROR | ty as u32 | sub as u32)
    }

    /// `DAT_INVALID_PARAMETER`: `input` of the call is invalid.
    pub const fn invalid(input: Input) -> Self {
        DatError(CLASS_ERROR | Type::InvalidParameter as u32 | INPUT_MARK | input as u32)
    }

    /// The input an invalid-parameter error names.
    #[inline]
    pub const fn input(self) -> Option<Input> {
        if self.0 & INPUT_MARK == 0 {
            return None;
        }
        Some(Input::ALL[(self.0 & (INPUT_MARK - 1)) as usize])
    }

    /// This error as returned by a C function whose prototype's parameters
    /// are `params`, in order: `DAT_INVALID_ARGn` names the position of the
    /// invalid input. `None` if the input is not one of `params` (or past
    /// the tenth), a mistake of the caller.
    pub fn code_in(self, params: &[&str]) -> Option<u32> {
        let Some(input) = self.input() else {
            return Some(self.0);
        };
        let n = params.iter().position(|p| *p == input.c_name())?;
        (n < 10).then(|| self.code() | (Sub::Arg1 as u32 + n as u32))
    }

    /// `DAT_INVALID_HANDLE` with the given subtype.
    pub const fn handle(sub: Sub) -> Self {
        Self::new(Type::InvalidHandle, sub)
    }

    /// `DAT_INVALID_STATE` with the given subtype.
    pub const fn state(sub: Sub) -> Self {
        Self::new(Type::InvalidState, sub)
    }

    /// `DAT_INSUFFICIENT_RESOURCES` with the given subtype.
    pub const fn resources(sub: Sub) -> Self {
        Self::new(Type::InsufficientResources, sub)
    }

    /// A type with no subtype.
    pub const fn of(ty: Type) -> Self {
        Self::new(ty, Sub::None)
    }

    /// The full 32-bit `DAT_RETURN` (for an invalid input, without the
    /// argument number: see [`DatError::code_in`]).
    #[inline]
    pub const fn code(self) -> u32 {
        if self.0 & INPUT_MARK != 0 {
            self.0 & !SUBTYPE_MASK
        } else {
            self.0
        }
    }

    /// The type field.
    pub const fn type_bits(self) -> u32 {
        self.code() & TYPE_MASK
    }

    /// The subtype field.
    pub const fn subtype_bits(self) -> u32 {
        self.code() & SUBTYPE_MASK
    }
}

impl fmt::Debug for DatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DatError(0x{:08x} {})", self.code(), self)?;
        match self.input() {
            Some(i) => write!(f, "[{}]", i.c_name()),
            None => Ok(()),
        }
    }
}

impl fmt::Display for DatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ty = type_name(self.type_bits()).unwrap_or("?");
        match subtype_name(self.subtype_bits()) {
            Some("") | None => f.write_str(ty),
            Some(sub) => write!(f, "{ty}/{sub}"),
        }
    }
}

impl std::error::Error for DatError {}

/// `dat_strerror`: the type and subtype names of any `DAT_RETURN`, class bits
/// ignored. `None` when the type or the subtype is not a 1.2 value.
pub fn strerror(value: u32) -> Option<(&'static str, &'static str)> {
    let major = type_name(value & TYPE_MASK)?;
    let minor = subtype_name(value & SUBTYPE_MASK)?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_complete_and_ordered() {
        assert_eq!(Type::ALL.len(), 22);
        assert_eq!(Sub::ALL.len(), 103);
        for (i, s) in Sub::ALL.iter().enumerate() {
            assert_eq!(*s as u32, i as u32, "subtypes are numbered 0..=102");
        }
        assert_eq!(Sub::InvalidRoCookie as u32, 0x66);
        assert_eq!(Sub::Handle1 as u32, 0x1A);
        assert_eq!(Sub::Arg1 as u32, 0x24);
    }

    #[test]
    fn error_encoding() {
        assert_eq!(DatError::handle(Sub::HandleIa).code(), 0x8005_000B);
        let ten: Vec<String> = (1..=10).map(|i| format!("p{i}")).collect();
        let mut params: Vec<&str> = ten.iter().map(String::as_str).collect();
        params[0] = "name";
        assert_eq!(
            DatError::invalid(Input::Name).code_in(&params),
            Some(0x8006_0024)
        );
        params[0] = "p1";
        params[9] = "name";
        assert_eq!(
            DatError::invalid(Input::Name).code_in(&params),
            Some(0x8006_002D)
        );
        assert_eq!(DatError::state(Sub::CnoInUse).code(), 0x8007_0042);
        assert_eq!(DatError::of(Type::QueueEmpty).code(), 0x800D_0000);
        assert_eq!(DatError::handle(Sub::Handle1).code(), 0x8005_001A);
    }

    #[test]
    fn an_invalid_input_becomes_the_argument_number_of_its_parameter() {
        let e = DatError::invalid(Input::RemoteIov);
        assert_eq!(e.code(), 0x8006_0000);
        let post_rdma_read = [
            "ep_handle",
            "num_segments",
            "local_iov",
            "user_cookie",
            "remote_iov",
            "completion_flags",
        ];
        assert_eq!(e.code_in(&post_rdma_read), Some(0x8006_0028));
        assert_eq!(e.code_in(&["ep_handle"]), None);
        let other = DatError::handle(Sub::HandleEp);
        assert_eq!(other.code_in(&post_rdma_read), Some(other.code()));
        for (i, input) in Input::ALL.iter().enumerate() {
            assert_eq!(*input as usize, i, "ALL is in declaration order");
            assert_eq!(DatError::invalid(*input).input(), Some(*input));
        }
        assert!(Input::ALL.len() < INPUT_MARK as usize);
        assert_eq!(std::mem::size_of::<DatError>(), 4);
        let names: std::collections::HashSet<_> = Input::ALL.iter().map(|i| i.c_name()).collect();
        assert_eq!(
            names.len(),
            Input::ALL.len(),
            "one variant per parameter name"
        );
    }

    #[test]
    fn strerror_names() {
        assert_eq!(strerror(0), Some(("DAT_SUCCESS", "")));
        assert_eq!(
            strerror(0x8005_000B),
            Some(("DAT_INVALID_HANDLE", "DAT_INVALID_HANDLE_IA"))
        );
        assert_eq!(strerror(0x4005_000B), strerror(0x0005_000B));
        assert_eq!(
            strerror(0x800A_0000).map(|s| s.0),
            Some("DAT_NAME_NOT_FOUND")
        );
        assert_eq!(
            strerror(0x8014_0000).map(|s| s.0),
            Some("DAT_CONN_QUAL_UNAVAILABLE")
        );
        assert_eq!(strerror(0x0015_0000), None);
        assert_eq!(strerror(0x8006_0067), None);
        assert_eq!(
            strerror(0x8006_0066),
            Some(("DAT_INVALID_PARAMETER", "DAT_INVALID_RO_COOKIE"))
        );
    }
}
