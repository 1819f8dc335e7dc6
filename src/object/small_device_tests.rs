//! The object layer over a device that implements only what the transport
//! interface requires: no memory windows, no shared receive queues. What
//! it lacks, `dat_ia_query` reports and the create calls refuse with
//! `DAT_MODEL_NOT_SUPPORTED`; memory goes through the device's
//! registration and key check.

use std::net::SocketAddr;
use std::result::Result;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use super::*;
use crate::error::{DatError, Input, Type};
use crate::transport::api::{
    Access, CmHandler, CompletionQueue, Device, DeviceError, KeyFault, Listener, MemoryRegion,
    PdId, QpConfig, QueuePair,
};
use crate::transport::{Capabilities, DeviceConfig, SOFTWARE_CAPABILITIES};

/// Protection domains and one registration's worth of keys; nothing else.
struct SmallDevice {
    caps: Capabilities,
    next_pd: AtomicU64,
    /// The local key of the last registration (0: none live).
    lkey: AtomicU32,
}

const LKEY: u32 = 0x5a5a;

impl SmallDevice {
    fn new(windows_and_srqs_claimed: bool) -> Arc<SmallDevice> {
        let (max_mw, max_srq) = if windows_and_srqs_claimed {
            (16, 16)
        } else {
            (0, 0)
        };
        Arc::new(SmallDevice {
            caps: Capabilities {
                max_mw,
                max_srq,
                ..SOFTWARE_CAPABILITIES
            },
            next_pd: AtomicU64::new(1),
            lkey: AtomicU32::new(0),
        })
    }
}

impl Device for SmallDevice {
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }
    fn address(&self) -> SocketAddr {
        "127.0.0.1:0".parse().expect("address")
    }
    fn port_of_service(&self, service: u64) -> u16 {
        service as u16
    }
    fn alloc_pd(&self) -> Result<PdId, DeviceError> {
        Ok(PdId(self.next_pd.fetch_add(1, Ordering::Relaxed)))
    }
    fn dealloc_pd(&self, _: PdId) -> Result<(), DeviceError> {
        Ok(())
    }
    fn register(
        &self,
        _: PdId,
        addr: u64,
        len: u64,
        access: Access,
    ) -> Result<MemoryRegion, DeviceError> {
        self.lkey.store(LKEY, Ordering::Relaxed);
        Ok(MemoryRegion {
            lkey: LKEY,
            rkey: if access.is_remote() { LKEY + 1 } else { 0 },
            addr,
            len,
            id: 1,
        })
    }
    fn deregister(&self, _: &MemoryRegion) -> Result<(), DeviceError> {
        self.lkey.store(0, Ordering::Relaxed);
        Ok(())
    }
    fn check_local(
        &self,
        lkey: u32,
        _: u64,
        _: u64,
        _: Access,
        _: Option<PdId>,
    ) -> Result<(), KeyFault> {
        if lkey != 0 && lkey == self.lkey.load(Ordering::Relaxed) {
            Ok(())
        } else {
            Err(KeyFault::Key)
        }
    }
    fn create_cq(&self, _: u32) -> Result<Arc<dyn CompletionQueue>, DeviceError> {
        Err(DeviceError::Resources)
    }
    fn create_qp(&self, _: QpConfig) -> Result<Arc<dyn QueuePair>, DeviceError> {
        Err(DeviceError::Resources)
    }
    fn listen(&self, _: u16, _: Arc<dyn CmHandler>) -> Result<Arc<dyn Listener>, DeviceError> {
        Err(DeviceError::Resources)
    }
    fn accept(&self, _: u64, _: &dyn QueuePair, _: &[u8]) -> Result<(), DeviceError> {
        Err(DeviceError::NotFound)
    }
    fn progress(&self) -> bool {
        false
    }
}

fn open_on(dev: Arc<SmallDevice>) -> Arc<Ia> {
    let address = dev.address();
    Ia::open_on::<Evd>(
        OpenParams {
            name: "small0".into(),
            ro_aware: false,
            provider_word: 0x1000,
            dapl_major: 1,
            dapl_minor: 2,
            thread_safe: false,
            device: DeviceConfig::default(),
            async_evd: AsyncRequest::Create(4),
        },
        dev,
        address,
        None,
    )
    .expect("open")
}

#[test]
fn query_reports_no_windows_and_no_srqs() {
    let ia = open_on(SmallDevice::new(false));
    assert_eq!(ia.limits.max_rmrs, 0);
    assert_eq!(ia.limits.max_srqs, 0);
    assert!(!ia.provider_attributes.srq_supported);
    ia.close(false).expect("close");
}

#[test]
fn rmr_and_srq_create_are_model_not_supported() {
    // Capabilities saying so, and the trait's defaults behind a device
    // whose capabilities claim more than it implements.
    for claimed in [false, true] {
        let ia = open_on(SmallDevice::new(claimed));
        let pz = Pz::create(&ia).expect("pz");
        assert_eq!(
            Rmr::create(&pz).err(),
            Some(DatError::of(Type::ModelNotSupported)),
            "claimed {claimed}"
        );
        assert_eq!(
            Srq::create(&ia, pz.handle, 4, 1, 0).err(),
            Some(DatError::of(Type::ModelNotSupported)),
            "claimed {claimed}"
        );
        // Nothing half-created holds the PZ.
        pz.free().expect("pz free");
        ia.close(true).expect("graceful close");
    }
}

#[test]
fn lmr_contexts_and_sync_checks_come_from_the_device() {
    let dev = SmallDevice::new(false);
    let ia = open_on(dev.clone());
    let pz = Pz::create(&ia).expect("pz");
    let buf = vec![0u8; 4096];
    let lmr = Lmr::create(
        &ia,
        LmrRequest {
            mem_type: attr::MEM_TYPE_VIRTUAL,
            region: Region::Va(buf.as_ptr() as u64),
            length: 4096,
            pz: pz.handle,
            privileges: lmr::PRIV_LOCAL_READ | lmr::PRIV_REMOTE_WRITE | lmr::PRIV_LOCAL_WRITE,
        },
    )
    .expect("lmr");
    assert_eq!((lmr.lmr_context, lmr.rmr_context), (LKEY, LKEY + 1));
    let seg = (LKEY, buf.as_ptr() as u64, 16);
    ia.sync_segments([seg].into_iter()).expect("sync");
    lmr.free().expect("lmr free");
    assert_eq!(dev.lkey.load(Ordering::Relaxed), 0, "deregistered");
    assert_eq!(
        ia.sync_segments([seg].into_iter()),
        Err(DatError::invalid(Input::LocalSegments))
    );
    ia.close(false).expect("close");
}
