use super::*;

const OFED: &str = "OpenIB-cma u1.2 nonthreadsafe default libdaplcma.so.1 dapl.1.2 \"ib0 0\" \"\"";
const ILLUMOS: &str =
    "ibp0  u1.2  nonthreadsafe  default  udapl_tavor.so.1  SUNW.1.0  \" \"  \"driver_name=tavor\"";

fn one(text: &str) -> ConfEntry {
    let (entries, warnings) = parse(text.as_bytes());
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(entries.len(), 1, "{entries:?}");
    entries.into_iter().next().unwrap()
}

/// Parses `text`; asserts nothing is installed and returns the warnings.
fn none(text: &str) -> Vec<ConfWarning> {
    let (entries, warnings) = parse(text.as_bytes());
    assert!(entries.is_empty(), "{entries:?}");
    warnings
}

/// A record with field `n` (1-based) replaced by `value`.
fn with_field(n: usize, value: &str) -> String {
    let mut fields = [
        "ia",
        "u1.2",
        "nonthreadsafe",
        "default",
        "lib.so",
        "x.1.0",
        "i",
        "p",
    ];
    fields[n - 1] = value;
    fields.join(" ")
}

fn assert_skipped(text: &str, line: usize, needle: &str) {
    let warnings = none(text);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].line, line);
    assert!(warnings[0].message.contains(needle), "{warnings:?}");
    assert!(
        warnings[0].message.ends_with("record skipped"),
        "{warnings:?}"
    );
}

#[test]
fn ofed_line() {
    let e = one(OFED);
    assert_eq!(e.ia_name, b"OpenIB-cma");
    assert_eq!((e.api_major, e.api_minor, e.thread_safe), (1, 2, false));
    assert_eq!(e.library, "libdaplcma.so.1");
    assert_eq!(e.provider_version, "dapl.1.2");
    assert_eq!(e.instance_data, "ib0 0");
    assert_eq!(e.platform_data, "");
    assert_eq!(e.line, 1);
}

#[test]
fn illumos_datadm_line() {
    let e = one(&format!("{ILLUMOS}\n"));
    assert_eq!(e.ia_name, b"ibp0");
    assert_eq!((e.api_major, e.api_minor, e.thread_safe), (1, 2, false));
    assert_eq!(e.library, "udapl_tavor.so.1");
    assert_eq!(e.provider_version, "SUNW.1.0");
    assert_eq!(e.instance_data, " ");
    assert_eq!(e.platform_data, "driver_name=tavor");
}

#[test]
fn empty_and_comment_only_files() {
    assert_eq!(parse(b""), (vec![], vec![]));
    assert_eq!(parse(b"\n\n  \t \n"), (vec![], vec![]));
    let header = "# DAT configuration file\n#\n# IAname version threadsafe default \
                  library-path provider-version instance-data platform-information\n";
    assert_eq!(parse(header.as_bytes()), (vec![], vec![]));
}

#[test]
fn no_trailing_newline_and_line_numbers() {
    let text = format!("# header\n\n{OFED}\n  # indented comment\n{ILLUMOS}");
    let (entries, warnings) = parse(text.as_bytes());
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].line, 3);
    assert_eq!(entries[1].line, 5);
    assert_eq!(entries[1].platform_data, "driver_name=tavor");
}

#[test]
fn thread_safe_and_other_versions() {
    let e = one(&with_field(3, "threadsafe"));
    assert!(e.thread_safe);
    let e = one(&with_field(2, "u2.0"));
    assert_eq!((e.api_major, e.api_minor), (2, 0));
    let e = one(&with_field(2, "u10.15"));
    assert_eq!((e.api_major, e.api_minor), (10, 15));
    let e = one(&with_field(2, "u4294967295.007"));
    assert_eq!((e.api_major, e.api_minor), (u32::MAX, 7));
}

#[test]
fn empty_version_digits_read_as_zero() {
    let e = one(&with_field(2, "u.2"));
    assert_eq!((e.api_major, e.api_minor), (0, 2));
    let e = one(&with_field(2, "u1."));
    assert_eq!((e.api_major, e.api_minor), (1, 0));
    let e = one(&with_field(2, "u."));
    assert_eq!((e.api_major, e.api_minor), (0, 0));
}

#[test]
fn only_user_default_records_installed_silently() {
    assert!(none(&with_field(2, "k1.2")).is_empty());
    assert!(none(&with_field(4, "nondefault")).is_empty());
    let both = with_field(2, "k1.2").replace(" default ", " nondefault ");
    assert!(none(&both).is_empty());
    // Not-installed records skip the name-length check too.
    let long = "n".repeat(300);
    assert!(none(&with_field(2, "k1.2").replacen("ia", &long, 1)).is_empty());
}

#[test]
fn malformed_kernel_record_still_warns() {
    assert_skipped(&with_field(2, "k1"), 1, "field 2");
    assert_skipped(
        &with_field(3, "maybe").replace("u1.2", "k1.2"),
        1,
        "field 3",
    );
}

#[test]
fn invalid_api_version() {
    for bad in [
        "1.2", "U1.2", "x1.2", "u1", "u", "k", "u1.2.3", "u1.x", "ua.2", "u+1.2",
    ] {
        assert_skipped(&with_field(2, bad), 1, "field 2");
    }
    assert_skipped(&with_field(2, "\"\""), 1, "field 2");
    assert_skipped(&with_field(2, "u4294967296.0"), 1, "32-bit");
    assert_skipped(&with_field(2, "u1.99999999999"), 1, "32-bit");
}

#[test]
fn invalid_thread_safety_and_default() {
    for bad in [
        "thread-safe",
        "yes",
        "\"\"",
        "nonthread",
        "THREADSAFE",
        "safe",
    ] {
        assert_skipped(&with_field(3, bad), 1, "field 3");
    }
    for bad in ["defualt", "no", "\"\"", "non", "Default"] {
        assert_skipped(&with_field(4, bad), 1, "field 4");
    }
}

#[test]
fn keyword_prefix_match_installs_with_warning() {
    let (entries, warnings) = parse(with_field(3, "threadsafeX").as_bytes());
    assert_eq!(entries.len(), 1);
    assert!(entries[0].thread_safe);
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].message.contains("field 3"), "{warnings:?}");
    assert!(warnings[0].message.contains("installed"), "{warnings:?}");

    let text = format!("# c\n{}", with_field(4, "defaults"));
    let (entries, warnings) = parse(text.as_bytes());
    assert_eq!(entries.len(), 1);
    assert!(!entries[0].thread_safe);
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].line, 2);
    assert!(warnings[0].message.contains("field 4"), "{warnings:?}");

    let (entries, warnings) = parse(with_field(3, "nonthreadsafe2").as_bytes());
    assert!(!entries[0].thread_safe);
    assert_eq!(warnings.len(), 1);
    // A prefix match on a record that is not installed says nothing.
    assert!(none(&with_field(4, "nondefaultX")).is_empty());
}

#[test]
fn invalid_provider_version() {
    for bad in [
        "SUNW",
        "SUNW.1",
        "SUNW.",
        "SUNW..0",
        "SUNW.1.",
        ".1.0",
        "SUNW.1.0.0",
        "SUNW.a.0",
        "SUNW.1.0a",
        "\"\"",
    ] {
        assert_skipped(&with_field(6, bad), 1, "field 6");
    }
    for good in [
        "SUNW.1.0",
        "dapl.1.2",
        "1.2.3",
        "a-b_c.10.200",
        "x.99999999999999.0",
    ] {
        assert_eq!(one(&with_field(6, good)).provider_version, good);
    }
}

#[test]
fn wrong_field_count() {
    let seven = "ia u1.2 nonthreadsafe default lib.so x.1.0 \"i\"";
    assert_skipped(seven, 1, "7 field(s)");
    assert_skipped(&format!("{seven} p q"), 1, "9 field(s)");
    assert_skipped("ia", 1, "1 field(s)");
    assert_skipped(&format!("{OFED} extra # trailing"), 1, "9 field(s)");
}

#[test]
fn malformed_record_does_not_stop_parsing() {
    let text = format!("{OFED}\nbroken line\n\n{ILLUMOS}\n");
    let (entries, warnings) = parse(text.as_bytes());
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1].line, 4);
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].line, 2);
    assert_eq!(
        warnings[0].to_string(),
        format!("dat.conf line 2: {}", warnings[0].message)
    );
}

#[test]
fn comments_where_a_token_starts() {
    let e = one(&format!("{OFED} # trailing comment \"unterminated"));
    assert_eq!(e.instance_data, "ib0 0");
    let e = one(&format!("{OFED}#glued to the closing quote"));
    assert_eq!(e.platform_data, "");
    let e = one(&format!("{}\t#tab then comment", with_field(8, "plat")));
    assert_eq!(e.platform_data, "plat");
    // A comment mid-record ends it early: only 4 fields remain.
    assert_skipped(
        "ia u1.2 nonthreadsafe default # lib x.1.0 i p",
        1,
        "4 field(s)",
    );
}

#[test]
fn hash_inside_a_token_is_literal() {
    let e = one(&with_field(1, "ia#1").replace("p", "p#q"));
    assert_eq!(e.ia_name, b"ia#1");
    assert_eq!(e.platform_data, "p#q");
    let e = one(&with_field(7, "\"# not a comment\""));
    assert_eq!(e.instance_data, "# not a comment");
}

#[test]
fn quoted_tokens() {
    let e = one(&with_field(7, r#""a  b\tc""#));
    assert_eq!(e.instance_data, "a  btc");
    let e = one(&with_field(7, r#""say \"hi\" \\ done""#));
    assert_eq!(e.instance_data, r#"say "hi" \ done"#);
    let e = one(&with_field(7, "\"\""));
    assert_eq!(e.instance_data, "");
    let e = one(&with_field(7, "\" \""));
    assert_eq!(e.instance_data, " ");
    let e = one(&with_field(7, "\"tab\there\""));
    assert_eq!(e.instance_data, "tab\there");
    // Every field may be quoted, the IA name included.
    let e = one("\"my ia\" \"u1.2\" \"threadsafe\" \"default\" \"/opt/x y/lib.so\" \"v.1.0\" i p");
    assert_eq!(e.ia_name, b"my ia");
    assert_eq!(e.library, "/opt/x y/lib.so");
    // An empty IA name is accepted (the reference does).
    assert_eq!(one(&with_field(1, "\"\"")).ia_name, b"");
}

#[test]
fn quote_ends_tokens() {
    // After a closing quote a new token starts, blank or not.
    let e = one("ia u1.2 nonthreadsafe default lib.so x.1.0 \"i\"p");
    assert_eq!(
        (e.instance_data.as_str(), e.platform_data.as_str()),
        ("i", "p")
    );
    // An unescaped quote inside an unquoted token ends it, quote kept.
    let e = one("ia u1.2 nonthreadsafe default lib.so x.1.0 a\"b");
    assert_eq!(
        (e.instance_data.as_str(), e.platform_data.as_str()),
        ("a\"", "b")
    );
    // An escaped one does not, and backslashes stay in unquoted tokens.
    let e = one(r#"ia u1.2 nonthreadsafe default C:\lib\x.so x.1.0 a\"b p"#);
    assert_eq!(e.library, r"C:\lib\x.so");
    assert_eq!(e.instance_data, r#"a\"b"#);
    let e = one(r#"ia u1.2 nonthreadsafe default lib.so x.1.0 a\\"b"#);
    assert_eq!(
        (e.instance_data.as_str(), e.platform_data.as_str()),
        (r#"a\\""#, "b")
    );
    // The first character never escapes the second (reference quirk).
    let e = one(r#"ia u1.2 nonthreadsafe default lib.so x.1.0 \"b"#);
    assert_eq!(
        (e.instance_data.as_str(), e.platform_data.as_str()),
        (r#"\""#, "b")
    );
}

#[test]
fn unterminated_quote_resumes_at_next_line() {
    let text = format!("{OFED}\nia u1.2 nonthreadsafe default lib x.1.0 \"open\n{ILLUMOS}\n");
    let (entries, warnings) = parse(text.as_bytes());
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1].ia_name, b"ibp0");
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].line, 2);
    assert!(warnings[0].message.contains("unterminated"), "{warnings:?}");
    // Escaped closing quote, quote at end of file, lone quote.
    assert_skipped(&with_field(8, r#""p\""#), 1, "unterminated");
    assert_skipped("\"", 1, "unterminated");
    assert_skipped("# ok\n\"", 2, "unterminated");
    // A tokenizer error wins even when an earlier field is bad as well.
    assert_skipped("ia x \"", 1, "unterminated");
}

#[test]
fn crlf_lines() {
    let text = format!(
        "# comment\r\n{OFED}\r\n{ILLUMOS}\r\n\r\n{}\r",
        with_field(8, "plain")
    );
    let (entries, warnings) = parse(text.as_bytes());
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(entries.len(), 3);
    assert_eq!(entries[0].platform_data, "");
    assert_eq!(entries[1].platform_data, "driver_name=tavor");
    assert_eq!(entries[2].platform_data, "plain");
    assert_eq!(entries[2].line, 5);
    // Only one \r is removed; elsewhere \r is an ordinary byte.
    let e = one(&format!("{}\r\r\n", with_field(8, "p")));
    assert_eq!(e.platform_data, "p\r");
    assert_eq!(one(&with_field(1, "a\rb")).ia_name, b"a\rb");
    assert_skipped(&format!("{OFED} \r\r\n"), 1, "9 field(s)");
}

#[test]
fn form_feed_and_vertical_tab_are_not_blanks() {
    assert_skipped(
        "ia\x0bu1.2 nonthreadsafe default lib x.1.0 i p",
        1,
        "7 field(s)",
    );
    assert_eq!(one(&with_field(8, "p\x0c")).platform_data, "p\x0c");
}

#[test]
fn ia_name_length_limit() {
    let ok = "n".repeat(255);
    assert_eq!(one(&with_field(1, &ok)).ia_name.len(), 255);
    let long = "n".repeat(256);
    assert_skipped(&format!("#\n{}", with_field(1, &long)), 2, "field 1");
    let quoted = format!("\"{}\"", "n".repeat(256));
    assert_skipped(&with_field(1, &quoted), 1, "256 bytes");
}

#[test]
fn raw_bytes_and_utf8() {
    let mut text = b"ia\xff ".to_vec();
    text.extend_from_slice(b"u1.2 threadsafe default lib.so id\xfe.1.0 i p\xfd");
    let (entries, warnings) = parse(&text);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(entries[0].ia_name, b"ia\xff");
    assert_eq!(entries[0].provider_version, "id\u{fffd}.1.0");
    assert_eq!(entries[0].platform_data, "p\u{fffd}");
    assert_eq!(one(&with_field(7, "\"ünïcode\"")).instance_data, "ünïcode");

    let bad_lib = b"ia u1.2 threadsafe default lib\xff.so x.1.0 i p";
    let (entries, warnings) = parse(bad_lib);
    assert!(entries.is_empty());
    assert!(warnings[0].message.contains("field 5"), "{warnings:?}");
    let bad_instance = b"ia u1.2 threadsafe default lib x.1.0 \"\xc3\" p";
    let (entries, warnings) = parse(bad_instance);
    assert!(entries.is_empty());
    assert!(warnings[0].message.contains("field 7"), "{warnings:?}");

    assert_skipped(&with_field(1, "i\0a"), 1, "field 1 contains a NUL");
    assert_skipped(&with_field(8, "\"p\0\""), 1, "field 8 contains a NUL");
    // A NUL inside a comment is harmless.
    assert_eq!(one(&format!("{OFED} # \0")).line, 1);
}

#[test]
fn duplicates_kept_in_file_order() {
    let second = OFED.replace("libdaplcma.so.1", "other.so");
    let text = format!("{OFED}\n{second}\n{}\n", with_field(2, "u2.0"));
    let (entries, warnings) = parse(text.as_bytes());
    assert!(warnings.is_empty());
    let libs: Vec<_> = entries.iter().map(|e| e.library.as_str()).collect();
    assert_eq!(libs, ["libdaplcma.so.1", "other.so", "lib.so"]);
    assert_eq!(entries[0].ia_name, entries[1].ia_name);
}

#[test]
fn warning_excerpts_are_bounded() {
    let long = format!("u{}", "9".repeat(10_000));
    let warnings = none(&with_field(2, &long));
    assert!(
        warnings[0].message.len() < 300,
        "{}",
        warnings[0].message.len()
    );
    assert!(warnings[0].message.contains("..."));
}

#[test]
fn parse_file_reads_and_reports_missing() {
    let dir = std::env::temp_dir().join(format!("udapl-conf-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("dat.conf");
    std::fs::write(&path, format!("{OFED}\nbad\n")).unwrap();
    let (entries, warnings) = parse_file(&path).unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(warnings.len(), 1);
    let missing = parse_file(&dir.join("missing.conf")).unwrap_err();
    assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn example_file_parses_cleanly() {
    let text = include_bytes!("../../../dat.conf.example");
    let (entries, warnings) = parse(text);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(entries.len() >= 3, "{entries:?}");
    assert!(entries.iter().any(|e| is_builtin_library(&e.library)));
    assert!(entries.iter().any(|e| !is_builtin_library(&e.library)));
    for e in entries.iter().filter(|e| is_builtin_library(&e.library)) {
        let params = parse_builtin_params(&e.instance_data);
        assert!(params.unknown.is_empty(), "{e:?}");
        // The example shows only what this build has.
        let device = crate::registry::builtin_device(&params);
        assert_eq!(device.transport.unavailable(), None, "{e:?}");
    }
}

/// Random byte garbage, biased toward the tokenizer's special bytes, never panics.
#[test]
fn garbage_never_panics() {
    const ALPHABET: &[u8] = b" \t\n\r\"\\#.uk0123456789defaultthreadsafe\0\xff";
    for seed in [1u64, 7, 42, 1234, 0xdead_beef, u64::MAX] {
        let mut state = seed;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as usize
        };
        let raw: Vec<u8> = (0..4096).map(|_| next() as u8).collect();
        let biased: Vec<u8> = (0..4096)
            .map(|_| ALPHABET[next() % ALPHABET.len()])
            .collect();
        // A valid file with some bytes overwritten reaches the field checks.
        let mut mutated = format!("{OFED}\n{ILLUMOS}\n").repeat(40).into_bytes();
        for _ in 0..64 {
            let at = next() % mutated.len();
            mutated[at] = ALPHABET[next() % ALPHABET.len()];
        }
        for (buf, mostly_valid) in [(raw, false), (biased, false), (mutated, true)] {
            let (entries, warnings) = parse(&buf);
            let lines = buf.split(|&b| b == b'\n').count();
            assert!(entries.len() + warnings.len() <= 3 * lines);
            if mostly_valid {
                assert!(entries.len() >= 10, "seed {seed}: {}", entries.len());
                assert!(!warnings.is_empty(), "seed {seed}");
            }
            for e in &entries {
                assert!(e.line >= 1 && e.line <= lines);
                assert!(e.ia_name.len() < 256);
                let _ = parse_builtin_params(&e.instance_data);
            }
            for w in &warnings {
                assert!(w.line >= 1 && w.line <= lines);
            }
            let _ = parse_builtin_params(&String::from_utf8_lossy(&buf));
        }
    }
}

#[test]
fn builtin_key_value_params() {
    let p = parse_builtin_params("transport=tcp netdev=eth0 port=1");
    assert_eq!(p.transport.as_deref(), Some("tcp"));
    assert_eq!(p.netdev.as_deref(), Some("eth0"));
    assert_eq!(p.port, Some(1));
    assert!(p.unknown.is_empty());
    let p = parse_builtin_params("\ttransport=shm  if=lo\n");
    assert_eq!(p.transport.as_deref(), Some("shm"));
    assert_eq!(p.netdev.as_deref(), Some("lo"));
    assert_eq!(p.port, None);
    assert_eq!(
        parse_builtin_params("transport=verbs").transport.as_deref(),
        Some("verbs")
    );
    assert_eq!(parse_builtin_params(""), BuiltinParams::default());
    assert_eq!(parse_builtin_params(" "), BuiltinParams::default());
    let p = parse_builtin_params("transport=verbs device=mlx5_0 port=1");
    assert_eq!(p.transport.as_deref(), Some("verbs"));
    assert_eq!((p.device.as_deref(), p.port), (Some("mlx5_0"), Some(1)));
    assert_eq!(p.netdev, None);
    assert!(p.unknown.is_empty());
    let p = parse_builtin_params("device= device=rxe0 device=");
    assert_eq!(p.device.as_deref(), Some("rxe0"));
    assert_eq!(p.unknown, ["device=", "device="]);
}

#[test]
fn builtin_bare_ofed_params() {
    let p = parse_builtin_params("ib0 0");
    assert_eq!(p.netdev.as_deref(), Some("ib0"));
    assert_eq!(p.port, Some(0));
    assert!(p.unknown.is_empty());
    let p = parse_builtin_params("ib0 2 transport=verbs");
    assert_eq!((p.netdev.as_deref(), p.port), (Some("ib0"), Some(2)));
    assert_eq!(p.transport.as_deref(), Some("verbs"));
    let p = parse_builtin_params("netdev=eth1 3");
    assert_eq!((p.netdev.as_deref(), p.port), (Some("eth1"), Some(3)));
    // Surplus bare words are unknown; the first bare word wins.
    let p = parse_builtin_params("ib0 1 ib1 2");
    assert_eq!((p.netdev.as_deref(), p.port), (Some("ib0"), Some(1)));
    assert_eq!(p.unknown, ["ib1", "2"]);
    let p = parse_builtin_params("ib0 x");
    assert_eq!(p.unknown, ["x"]);
}

#[test]
fn builtin_bad_params_are_unknown() {
    let p = parse_builtin_params(
        "transport=udp transport=TCP netdev= port=-1 port=x port=99999999999 driver_name=tavor =v",
    );
    assert_eq!(p.transport, None);
    assert_eq!(p.netdev, None);
    assert_eq!(p.port, None);
    assert_eq!(
        p.unknown,
        [
            "transport=udp",
            "transport=TCP",
            "netdev=",
            "port=-1",
            "port=x",
            "port=99999999999",
            "driver_name=tavor",
            "=v"
        ]
    );
    // A later key overrides an earlier one.
    let p = parse_builtin_params("transport=tcp transport=shm if=a netdev=b port=1 port=2");
    assert_eq!(p.transport.as_deref(), Some("shm"));
    assert_eq!(p.netdev.as_deref(), Some("b"));
    assert_eq!(p.port, Some(2));
}

/// The options the TCP transport's table makes of `tokens`.
fn tcp_options(tokens: &[&str]) -> InstanceOptions {
    let (o, unknown) = transport::parse_options(TransportKind::Tcp, tokens);
    assert!(unknown.is_empty(), "{unknown:?}");
    o
}

fn option(p: &BuiltinParams, name: &str) -> String {
    let values = p.options.values();
    let v = values.iter().find(|(n, _)| *n == name);
    v.map(|(_, v)| v.clone()).unwrap_or_default()
}

#[test]
fn builtin_instance_options() {
    let p = parse_builtin_params("");
    assert_eq!(p.options, InstanceOptions::default());
    assert_eq!(p.family, None);

    let p = parse_builtin_params(
        "netdev=eth0 crc=on ack=local fpdu=mss rnr_timeout=250 \
         keepalive=30,5,3 user_timeout=60000 family=inet6",
    );
    assert!(p.unknown.is_empty(), "{:?}", p.unknown);
    assert_eq!(p.netdev.as_deref(), Some("eth0"));
    assert_eq!(p.family, Some(AddressFamily::Inet6));
    assert_eq!(
        p.options,
        tcp_options(&[
            "crc=on",
            "ack=local",
            "fpdu=mss",
            "rnr_timeout=250",
            "keepalive=30,5,3",
            "user_timeout=60000"
        ])
    );
    assert_eq!(option(&p, "keepalive"), "30,5,3");

    // A later token overriding.
    let p = parse_builtin_params("crc=on crc=off ack=local ack=read fpdu=mss fpdu=max");
    assert!(p.unknown.is_empty(), "{:?}", p.unknown);
    assert_eq!(p.options, InstanceOptions::default());
    assert_eq!(
        parse_builtin_params("family=inet6 family=inet").family,
        Some(AddressFamily::Inet)
    );

    // Options mix with OFED bare words, before or after transport=.
    let p = parse_builtin_params("ib0 0 crc=on");
    assert_eq!((p.netdev.as_deref(), p.port), (Some("ib0"), Some(0)));
    assert!(p.unknown.is_empty());
    assert_eq!(option(&p, "crc"), "on");
    let p = parse_builtin_params("crc=on transport=tcp");
    assert_eq!(p.options, tcp_options(&["crc=on"]));
}

#[test]
fn builtin_bad_options_are_unknown_and_change_nothing() {
    let bad = [
        "crc=yes",
        "crc",
        "ack=remote",
        "fpdu=",
        "rnr_timeout=-1",
        "keepalive=30,5",
        "keepalive=30 ,5,3",
        "user_timeout=0",
        "family=inet4",
        "family=INET6",
        "family=",
        "transport=ib",
        "transport=",
        "if=",
        "mtu=1500",
    ];
    for token in bad {
        let p = parse_builtin_params(&format!("netdev=eth0 {token}"));
        // "keepalive=30 ,5,3" is two tokens, both unknown.
        let tokens: Vec<&str> = token.split_ascii_whitespace().collect();
        assert_eq!(p.unknown, tokens, "{token}");
        assert_eq!(p.options, InstanceOptions::default(), "{token}");
        assert_eq!(p.family, None, "{token}");
        assert_eq!(p.transport, None, "{token}");
        assert_eq!(p.netdev.as_deref(), Some("eth0"), "{token}");
    }
    // A bad token leaves an earlier good one in force; the unknown
    // tokens keep their order, generic or the transport's.
    let p = parse_builtin_params("crc=on crc=maybe keepalive=9,9,9 ib0 1 x keepalive=9,9");
    assert_eq!(p.options, tcp_options(&["crc=on", "keepalive=9,9,9"]));
    assert_eq!(p.unknown, ["crc=maybe", "x", "keepalive=9,9"]);
}

/// A transport this build does not have takes no options: they are
/// reported (its IA does not open either).
#[test]
fn options_for_a_transport_without_them_are_unknown() {
    let p = parse_builtin_params("crc=on transport=shm if=lo");
    assert_eq!(p.unknown, ["crc=on"]);
    assert!(p.options.values().is_empty());
}

#[test]
fn builtin_library_names() {
    for yes in [
        "libdat.so.1",
        "libdat.so",
        "builtin",
        "/usr/lib/libdat.so.1",
        "/usr/local/lib64/libdat.so",
        "./libdat.so.1",
    ] {
        assert!(is_builtin_library(yes), "{yes}");
    }
    for no in [
        "libdaplcma.so.1",
        "udapl_tavor.so.1",
        "libdat.so.2",
        "libdat.so.1.0",
        "libdat2.so",
        "Builtin",
        "/opt/builtin",
        "builtin.so",
        "libdat.so.1/",
        "",
    ] {
        assert!(!is_builtin_library(no), "{no}");
    }
}
