#![no_main]
// See src/fuzz.rs: udapl::fuzz::setup_engine.
libfuzzer_sys::fuzz_target!(|data: &[u8]| udapl::fuzz::setup_engine(data));
