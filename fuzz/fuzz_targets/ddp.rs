#![no_main]
// See src/fuzz.rs: udapl::fuzz::ddp.
libfuzzer_sys::fuzz_target!(|data: &[u8]| udapl::fuzz::ddp(data));
