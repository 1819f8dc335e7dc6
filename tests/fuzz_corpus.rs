//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/`) and the
//! encoders' seeds through the fuzz entry points (`udapl::fuzz`) on stable
//! Rust: every input that once found a bug stays a regression test, with
//! no fuzzer needed. `UPDATE_FUZZ_SEEDS=1` writes the seeds into the corpus.

use std::path::PathBuf;

fn corpus_dir(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target)
}

#[test]
fn every_committed_input_runs_clean() {
    let mut total = 0;
    for (name, run) in udapl::fuzz::TARGETS {
        let dir = corpus_dir(name);
        let files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("corpus entry").path())
            .collect();
        assert!(!files.is_empty(), "no corpus for {name}");
        for f in files {
            let data = std::fs::read(&f).expect("corpus file");
            // A panic names the input that caused it.
            let ok = std::panic::catch_unwind(|| run(&data)).is_ok();
            assert!(ok, "{name}: {} fails", f.display());
            total += 1;
        }
    }
    assert!(total > 0);
}

#[test]
fn the_seeds_are_in_the_corpus_and_run_clean() {
    let update = std::env::var_os("UPDATE_FUZZ_SEEDS").is_some();
    for (i, (name, data)) in udapl::fuzz::seeds().into_iter().enumerate() {
        let (_, run) = udapl::fuzz::TARGETS
            .iter()
            .find(|(n, _)| *n == name)
            .expect("a seed for a known target");
        run(&data);
        let path = corpus_dir(name).join(format!("seed-{i:02}"));
        if update {
            std::fs::create_dir_all(corpus_dir(name)).expect("corpus dir");
            std::fs::write(&path, &data).expect("write seed");
        }
        let committed = std::fs::read(&path).unwrap_or_default();
        assert!(
            committed == data,
            "{} differs from the seed (UPDATE_FUZZ_SEEDS=1 rewrites it)",
            path.display()
        );
    }
}
