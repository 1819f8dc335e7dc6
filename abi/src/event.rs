//! `DAT_EVENT` and the event data of each stream.

use crate::*;

/// Data of a DTO completion event (the length field really is spelled
/// `transfered_length`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_dto_completion_event_data {
    pub ep_handle: DAT_EP_HANDLE,
    pub user_cookie: DAT_DTO_COOKIE,
    pub status: DAT_DTO_COMPLETION_STATUS,
    pub transfered_length: DAT_VLEN,
}
pub type DAT_DTO_COMPLETION_EVENT_DATA = dat_dto_completion_event_data;

/// Data of an RMR bind completion event.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_rmr_bind_completion_event_data {
    pub rmr_handle: DAT_RMR_HANDLE,
    pub user_cookie: DAT_RMR_COOKIE,
    pub status: DAT_DTO_COMPLETION_STATUS,
}
pub type DAT_RMR_BIND_COMPLETION_EVENT_DATA = dat_rmr_bind_completion_event_data;

/// The service point (PSP or RSP) a connection request arrived on.
#[repr(C)]
#[derive(Clone, Copy)]
pub union dat_sp_handle {
    pub rsp_handle: DAT_RSP_HANDLE,
    pub psp_handle: DAT_PSP_HANDLE,
}
pub type DAT_SP_HANDLE = dat_sp_handle;

/// Data of a connection request event.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_cr_arrival_event_data {
    pub sp_handle: DAT_SP_HANDLE,
    pub local_ia_address_ptr: DAT_IA_ADDRESS_PTR,
    pub conn_qual: DAT_CONN_QUAL,
    pub cr_handle: DAT_CR_HANDLE,
}
pub type DAT_CR_ARRIVAL_EVENT_DATA = dat_cr_arrival_event_data;

/// Data of a connection event.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_connection_event_data {
    pub ep_handle: DAT_EP_HANDLE,
    pub private_data_size: DAT_COUNT,
    pub private_data: DAT_PVOID,
}
pub type DAT_CONNECTION_EVENT_DATA = dat_connection_event_data;

/// Data of an asynchronous error event; `reason` holds a value of the
/// object's DAT_*_ASYNC_ERROR_REASON.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_asynch_error_event_data {
    pub dat_handle: DAT_HANDLE,
    pub reason: DAT_COUNT,
}
pub type DAT_ASYNCH_ERROR_EVENT_DATA = dat_asynch_error_event_data;

/// Data of a software event.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_software_event_data {
    pub pointer: DAT_PVOID,
}
pub type DAT_SOFTWARE_EVENT_DATA = dat_software_event_data;

/// Event data, selected by the event number.
#[repr(C)]
#[derive(Clone, Copy)]
pub union dat_event_data {
    pub dto_completion_event_data: DAT_DTO_COMPLETION_EVENT_DATA,
    pub rmr_completion_event_data: DAT_RMR_BIND_COMPLETION_EVENT_DATA,
    pub cr_arrival_event_data: DAT_CR_ARRIVAL_EVENT_DATA,
    pub connect_event_data: DAT_CONNECTION_EVENT_DATA,
    pub asynch_error_event_data: DAT_ASYNCH_ERROR_EVENT_DATA,
    pub software_event_data: DAT_SOFTWARE_EVENT_DATA,
}
pub type DAT_EVENT_DATA = dat_event_data;

/// An event (48 bytes; 4 bytes of padding follow `event_number`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dat_event {
    pub event_number: DAT_EVENT_NUMBER,
    pub evd_handle: DAT_EVD_HANDLE,
    pub event_data: DAT_EVENT_DATA,
}
pub type DAT_EVENT = dat_event;
