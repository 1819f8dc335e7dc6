//! The codec's tests: known vectors, round trips, every error, and random
//! and mutated input.

use super::*;

/// Bit-at-a-time CRC32c (reflected Castagnoli polynomial 0x82F63B78),
/// independent of the crate, to cross-check it.
fn reference_crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// splitmix64: a small deterministic PRNG for the property tests.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn bytes(&mut self, out: &mut [u8]) {
        for b in out {
            *b = self.next() as u8;
        }
    }
}

fn hdr(ulp: Ulp, last: bool) -> Header {
    Header::new(ulp, last)
}

fn encode_hdr(h: &Header) -> ([u8; MAX_HDR_LEN], usize) {
    let mut out = [0u8; MAX_HDR_LEN];
    let n = h.encode(&mut out);
    (out, n)
}

fn all_ulps() -> [Ulp; 9] {
    let req = ReadRequest {
        sink_stag: 1,
        sink_to: 2,
        size: 3,
        source_stag: 4,
        source_to: 5,
    };
    [
        Ulp::RdmaWrite {
            stag: 0xDEAD_BEEF,
            to: u64::MAX,
        },
        Ulp::ReadRequest { msn: 7, mo: 0, req },
        Ulp::ReadResponse {
            stag: 0x0102_0304,
            to: 0x7F00_0000_1000,
        },
        Ulp::Send {
            msn: 1,
            mo: 0,
            solicited: false,
            invalidate: None,
        },
        Ulp::Send {
            msn: 2,
            mo: 4096,
            solicited: false,
            invalidate: Some(0x55AA_55AA),
        },
        Ulp::Send {
            msn: 3,
            mo: 8,
            solicited: true,
            invalidate: None,
        },
        Ulp::Send {
            msn: u32::MAX,
            mo: u32::MAX,
            solicited: true,
            invalidate: Some(9),
        },
        Ulp::Terminate { msn: 1, mo: 0 },
        Ulp::Terminate { msn: 5, mo: 3 },
    ]
}

/// Feed `bytes` to a parser in chunks of `chunk`; the final status and
/// the total consumed.
fn parse_mpa(
    cfg: MpaConfig,
    bytes: &[u8],
    chunk: usize,
) -> (Result<Option<(MpaFrameOwned, usize)>, MpaError>, usize) {
    let mut p = MpaParser::new(cfg);
    let mut pos = 0;
    loop {
        let end = (pos + chunk).min(bytes.len());
        match p.feed(&bytes[pos..end]) {
            Err(e) => return (Err(e), pos),
            Ok(fed) => {
                pos += fed.consumed;
                match fed.status {
                    MpaStatus::Frame(f) => return (Ok(Some((MpaFrameOwned::from(&f), pos))), pos),
                    MpaStatus::NeedMore(n) => {
                        assert!(n > 0);
                        if end == bytes.len() {
                            return (Ok(None), pos);
                        }
                    }
                }
            }
        }
    }
}

/// A decoded frame detached from the parser's buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
struct MpaFrameOwned {
    kind: MpaKind,
    markers: bool,
    crc: bool,
    reject: bool,
    revision: u8,
    ird_ord: Option<IrdOrd>,
    private_data: Vec<u8>,
    reserved_flags: u8,
}

impl From<&MpaFrame<'_>> for MpaFrameOwned {
    fn from(f: &MpaFrame<'_>) -> Self {
        MpaFrameOwned {
            kind: f.kind,
            markers: f.markers,
            crc: f.crc,
            reject: f.reject,
            revision: f.revision,
            ird_ord: f.ird_ord,
            private_data: f.private_data.to_vec(),
            reserved_flags: f.reserved_flags,
        }
    }
}

impl MpaFrameOwned {
    fn frame(&self) -> MpaFrame<'_> {
        MpaFrame {
            kind: self.kind,
            markers: self.markers,
            crc: self.crc,
            reject: self.reject,
            revision: self.revision,
            ird_ord: self.ird_ord,
            private_data: &self.private_data,
            reserved_flags: self.reserved_flags,
        }
    }
}

// ───────────── CRC ─────────────

#[test]
fn crc32c_known_answers_from_iscsi_test_vectors() {
    let ascending: Vec<u8> = (0u8..32).collect();
    let descending: Vec<u8> = (0u8..32).rev().collect();
    let cases: [(&[u8], u32); 5] = [
        (&[0u8; 32], 0x8A91_36AA),
        (&[0xFFu8; 32], 0x62A8_AB43),
        (&ascending, 0x46DD_794E),
        (&descending, 0x113F_DB5C),
        (b"123456789", 0xE306_9283),
    ];
    for (data, want) in cases {
        assert_eq!(crc32c_of(data), want);
        assert_eq!(reference_crc32c(data), want);
    }
    // On the wire, 32 zero bytes' CRC reads aa 36 91 8a (iSCSI's byte order).
    let mut c = Crc::new();
    c.update(&[0u8; 32]);
    assert_eq!(c.wire_bytes(), [0xAA, 0x36, 0x91, 0x8A]);
}

#[test]
fn crc_accumulator_over_pieces_equals_one_shot() {
    let mut rng = Rng(1);
    let mut data = [0u8; 300];
    rng.bytes(&mut data);
    for split in [0, 1, 3, 4, 150, 299, 300] {
        let (a, b) = data.split_at(split);
        let mut by_bytes = Crc::new();
        by_bytes.update(a);
        by_bytes.update(b);
        let mut by_crc = Crc::new();
        by_crc.append_crc(crc32c_of(a), a.len());
        by_crc.append_crc(crc32c_of(b), b.len());
        assert_eq!(by_bytes.value(), crc32c_of(&data));
        assert_eq!(by_crc.value(), crc32c_of(&data));
    }
    assert_eq!(Crc::new().value(), crc32c_of(&[]));
}

// ───────────── MPA ─────────────

#[test]
fn mpa_request_golden_enhanced_ird_ord_and_three_bytes() {
    let frame = MpaFrame {
        ird_ord: Some(IrdOrd {
            ird: 1,
            ord: 1,
            peer_to_peer: true,
            rtr: RtrFlags {
                rdma_write: true,
                ..RtrFlags::default()
            },
        }),
        private_data: b"abc",
        ..MpaFrame::new(MpaKind::Request, 2)
    };
    let mut want = Vec::new();
    want.extend_from_slice(b"MPA ID Req Frame");
    want.extend_from_slice(&[0x10, 0x02, 0x00, 0x07]); // H, revision 2, 4 + 3 bytes
    want.extend_from_slice(&[0x80, 0x01, 0x80, 0x01]); // P2P | IRD 1, write RTR | ORD 1
    want.extend_from_slice(b"abc");
    let mut out = [0u8; 64];
    let n = frame.encode(&mut out).unwrap();
    assert_eq!(&out[..n], &want[..]);
    assert_eq!(n, frame.encoded_len());
    let (r, consumed) = parse_mpa(MpaConfig::new(MpaKind::Request), &want, want.len());
    let (got, _) = r.unwrap().unwrap();
    assert_eq!(consumed, want.len());
    assert_eq!(got.frame(), frame);
}

#[test]
fn mpa_reply_golden_revision_one_reject_with_crc() {
    let frame = MpaFrame {
        crc: true,
        reject: true,
        private_data: b"no",
        ..MpaFrame::new(MpaKind::Reply, 1)
    };
    let mut out = [0u8; 32];
    let n = frame.encode(&mut out).unwrap();
    let mut want = b"MPA ID Rep Frame".to_vec();
    want.extend_from_slice(&[0x60, 0x01, 0x00, 0x02, b'n', b'o']);
    assert_eq!(&out[..n], &want[..]);
}

#[test]
fn mpa_roundtrip_every_flag_revision_and_length() {
    let pd: Vec<u8> = (0..=255u8).cycle().take(PROFILE_PD_SEND_MAX).collect();
    let mut out = [0u8; MPA_HEADER_LEN + MPA_PD_MAX];
    for kind in [MpaKind::Request, MpaKind::Reply] {
        for revision in 0..=2u8 {
            for flags in 0..16u8 {
                for enhanced in [false, true] {
                    if enhanced && revision < 2 {
                        continue;
                    }
                    for len in [0, 1, 3, 4, 5, 252] {
                        let ird_ord = enhanced.then_some(IrdOrd {
                            ird: IRD_ORD_MAX,
                            ord: u16::from(flags),
                            peer_to_peer: flags & 1 != 0,
                            rtr: RtrFlags {
                                zero_length_send: flags & 2 != 0,
                                rdma_write: flags & 4 != 0,
                                rdma_read: flags & 8 != 0,
                            },
                        });
                        let frame = MpaFrame {
                            kind,
                            markers: flags & 1 != 0,
                            crc: flags & 2 != 0,
                            reject: flags & 4 != 0,
                            revision,
                            ird_ord,
                            private_data: &pd[..len],
                            reserved_flags: flags & 8,
                        };
                        let n = frame.encode(&mut out).unwrap();
                        let cfg = MpaConfig {
                            accept_markers: true,
                            ..MpaConfig::new(kind)
                        };
                        for chunk in [1, 7, n] {
                            let (r, consumed) = parse_mpa(cfg, &out[..n], chunk);
                            let (got, _) = r.unwrap().unwrap();
                            assert_eq!(consumed, n);
                            assert_eq!(got.frame(), frame);
                            assert_eq!(got.frame().effective_revision(), revision.max(1));
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn mpa_parser_stops_at_frame_end_and_reports_need() {
    let frame = MpaFrame {
        private_data: b"xyz",
        ..MpaFrame::new(MpaKind::Reply, 1)
    };
    let mut buf = [0u8; 64];
    let n = frame.encode(&mut buf).unwrap();
    buf[n..n + 8].copy_from_slice(&[0x00, 0x12, 0xC1, 0x40, 1, 2, 3, 4]); // an FPDU follows
    let mut p = MpaParser::new(MpaConfig::new(MpaKind::Reply));
    let fed = p.feed(&buf[..5]).unwrap();
    assert_eq!((fed.consumed, fed.status), (5, MpaStatus::NeedMore(15)));
    let fed = p.feed(&buf[5..20]).unwrap();
    assert_eq!((fed.consumed, fed.status), (15, MpaStatus::NeedMore(3)));
    let fed = p.feed(&buf[20..n + 8]).unwrap();
    assert_eq!(fed.consumed, 3);
    assert_eq!(fed.status, MpaStatus::Frame(frame));
    // Done: nothing more is taken.
    let fed = p.feed(&buf[n..n + 8]).unwrap();
    assert_eq!((fed.consumed, fed.status), (0, MpaStatus::Frame(frame)));
    // Empty input asks for the header.
    let mut p = MpaParser::new(MpaConfig::new(MpaKind::Reply));
    assert_eq!(
        p.feed(&[]).unwrap().status,
        MpaStatus::NeedMore(MPA_HEADER_LEN)
    );
}

#[test]
fn mpa_http_request_and_garbage_fail_at_first_wrong_byte() {
    let mut p = MpaParser::new(MpaConfig::new(MpaKind::Request));
    assert_eq!(
        p.feed(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
        Err(MpaError::BadKey)
    );
    // Sticky.
    assert_eq!(p.feed(b"MPA ID Req Frame"), Err(MpaError::BadKey));
    // A key that starts right and goes wrong later.
    let (r, consumed) = parse_mpa(
        MpaConfig::new(MpaKind::Request),
        b"MPA ID Reg Frame\x00\x01\x00\x00",
        1,
    );
    assert_eq!(r, Err(MpaError::BadKey));
    assert_eq!(consumed, 9);
    // A truncated header is not an error, just incomplete.
    let (r, consumed) = parse_mpa(
        MpaConfig::new(MpaKind::Request),
        b"MPA ID Req Frame\x00\x01",
        4,
    );
    assert_eq!((r, consumed), (Ok(None), 18));
}

#[test]
fn mpa_other_sides_key_is_reported_as_such() {
    let mut buf = [0u8; 32];
    let n = MpaFrame::new(MpaKind::Reply, 2).encode(&mut buf).unwrap();
    let (r, _) = parse_mpa(MpaConfig::new(MpaKind::Request), &buf[..n], 1);
    assert_eq!(r, Err(MpaError::UnexpectedKey(MpaKind::Reply)));
    let n = MpaFrame::new(MpaKind::Request, 2).encode(&mut buf).unwrap();
    let (r, _) = parse_mpa(MpaConfig::new(MpaKind::Reply), &buf[..n], n);
    assert_eq!(r, Err(MpaError::UnexpectedKey(MpaKind::Request)));
}

fn raw_mpa(kind: MpaKind, flags: u8, revision: u8, pd_len: u16) -> Vec<u8> {
    let mut v = kind.key().to_vec();
    v.push(flags);
    v.push(revision);
    v.extend_from_slice(&pd_len.to_be_bytes());
    v.resize(MPA_HEADER_LEN + pd_len as usize, 0);
    v
}

#[test]
fn mpa_revision_three_and_above_refused_zero_accepted_as_one() {
    for rev in [3u8, 4, 0xFF] {
        let (r, consumed) = parse_mpa(
            MpaConfig::new(MpaKind::Request),
            &raw_mpa(MpaKind::Request, 0, rev, 0),
            64,
        );
        assert_eq!(r, Err(MpaError::UnsupportedRevision(rev)));
        assert_eq!(consumed, 0);
    }
    let (r, _) = parse_mpa(
        MpaConfig::new(MpaKind::Request),
        &raw_mpa(MpaKind::Request, 0, 0, 0),
        64,
    );
    assert_eq!(r.unwrap().unwrap().0.frame().effective_revision(), 1);
}

#[test]
fn mpa_private_data_over_limit_refused_from_header() {
    let cfg = MpaConfig::new(MpaKind::Request);
    let (r, _) = parse_mpa(
        cfg,
        &raw_mpa(MpaKind::Request, 0, 1, 513)[..MPA_HEADER_LEN],
        64,
    );
    assert_eq!(r, Err(MpaError::PrivateDataTooLong { len: 513, max: 512 }));
    let (r, _) = parse_mpa(cfg, &raw_mpa(MpaKind::Request, 0, 1, 512), 64);
    assert!(r.unwrap().is_some());
    let small = MpaConfig {
        max_private_data: 256,
        ..cfg
    };
    let (r, _) = parse_mpa(small, &raw_mpa(MpaKind::Request, 0, 1, 257), 64);
    assert_eq!(r, Err(MpaError::PrivateDataTooLong { len: 257, max: 256 }));
    // A limit above the RFC's is capped.
    let big = MpaConfig {
        max_private_data: 4000,
        ..cfg
    };
    let (r, _) = parse_mpa(
        big,
        &raw_mpa(MpaKind::Request, 0, 1, 600)[..MPA_HEADER_LEN],
        64,
    );
    assert_eq!(r, Err(MpaError::PrivateDataTooLong { len: 600, max: 512 }));
}

#[test]
fn mpa_markers_reported_distinctly_with_revision() {
    let bytes = raw_mpa(MpaKind::Request, 0x80, 2, 0);
    let (r, _) = parse_mpa(MpaConfig::new(MpaKind::Request), &bytes, 64);
    assert_eq!(r, Err(MpaError::Markers { revision: 2 }));
    let cfg = MpaConfig {
        accept_markers: true,
        ..MpaConfig::new(MpaKind::Request)
    };
    let (r, _) = parse_mpa(cfg, &bytes, 64);
    assert!(r.unwrap().unwrap().0.markers);
}

#[test]
fn mpa_enhanced_needs_revision_two_and_four_bytes() {
    let cfg = MpaConfig::new(MpaKind::Reply);
    let (r, _) = parse_mpa(cfg, &raw_mpa(MpaKind::Reply, 0x10, 1, 4), 64);
    assert_eq!(r, Err(MpaError::EnhancedNeedsRevision2 { revision: 1 }));
    let (r, _) = parse_mpa(cfg, &raw_mpa(MpaKind::Reply, 0x10, 0, 4), 64);
    assert_eq!(r, Err(MpaError::EnhancedNeedsRevision2 { revision: 0 }));
    let (r, _) = parse_mpa(cfg, &raw_mpa(MpaKind::Reply, 0x10, 2, 3), 64);
    assert_eq!(r, Err(MpaError::EnhancedTooShort { len: 3 }));
    // Revision 2 without H: no IRD/ORD word.
    let (r, _) = parse_mpa(cfg, &raw_mpa(MpaKind::Reply, 0, 2, 3), 64);
    let f = r.unwrap().unwrap().0;
    assert_eq!((f.ird_ord, f.private_data.len()), (None, 3));
}

#[test]
fn mpa_reserved_flags_tolerated_and_kept() {
    let bytes = raw_mpa(MpaKind::Request, 0x4F, 1, 0);
    let (r, _) = parse_mpa(MpaConfig::new(MpaKind::Request), &bytes, 64);
    let f = r.unwrap().unwrap().0;
    assert!(f.crc);
    assert_eq!(f.reserved_flags, 0x0F);
    let mut out = [0u8; 32];
    let n = f.frame().encode(&mut out).unwrap();
    assert_eq!(&out[..n], &bytes[..]);
}

#[test]
fn mpa_encode_refuses_what_the_profile_does_not_send() {
    let pd = [0u8; 300];
    let mut out = [0u8; 600];
    let f = MpaFrame {
        private_data: &pd[..253],
        ird_ord: Some(IrdOrd::default()),
        ..MpaFrame::new(MpaKind::Request, 2)
    };
    assert_eq!(
        f.encode(&mut out),
        Err(MpaEncodeError::PrivateDataTooLong { len: 257, max: 256 })
    );
    let f = MpaFrame {
        private_data: &pd[..252],
        ..f
    };
    assert_eq!(f.encode(&mut out), Ok(MPA_HEADER_LEN + 256));
    assert_eq!(
        f.encode(&mut out[..100]),
        Err(MpaEncodeError::BufferTooSmall { need: 276 })
    );
    let f = MpaFrame {
        private_data: &pd,
        ..MpaFrame::new(MpaKind::Request, 1)
    };
    assert_eq!(f.encode_with_limit(&mut out, 512), Ok(MPA_HEADER_LEN + 300));
    let f = MpaFrame {
        ird_ord: Some(IrdOrd {
            ird: 0x4000,
            ..IrdOrd::default()
        }),
        ..MpaFrame::new(MpaKind::Reply, 2)
    };
    assert_eq!(f.encode(&mut out), Err(MpaEncodeError::IrdOrdOutOfRange));
    let f = MpaFrame {
        ird_ord: Some(IrdOrd::default()),
        ..MpaFrame::new(MpaKind::Reply, 1)
    };
    assert_eq!(
        f.encode(&mut out),
        Err(MpaEncodeError::EnhancedNeedsRevision2 { revision: 1 })
    );
    let f = MpaFrame::new(MpaKind::Reply, 3);
    assert_eq!(f.encode(&mut out), Err(MpaEncodeError::Revision(3)));
    let f = MpaFrame {
        reserved_flags: 0x10,
        ..MpaFrame::new(MpaKind::Reply, 1)
    };
    assert_eq!(f.encode(&mut out), Err(MpaEncodeError::ReservedFlags(0x10)));
}

#[test]
fn ird_ord_word_bits() {
    let io = IrdOrd {
        ird: 0x1234,
        ord: 0x0ABC,
        peer_to_peer: true,
        rtr: RtrFlags {
            zero_length_send: true,
            rdma_write: false,
            rdma_read: true,
        },
    };
    assert_eq!(io.encode(), Some([0xD2, 0x34, 0x4A, 0xBC]));
    assert_eq!(IrdOrd::decode([0xD2, 0x34, 0x4A, 0xBC]), io);
    assert_eq!(IrdOrd { ord: 0x4000, ..io }.encode(), None);
}

// ───────────── DDP / RDMAP ─────────────

#[test]
fn header_roundtrip_every_kind_and_last_flag() {
    for ulp in all_ulps() {
        for last in [false, true] {
            let h = hdr(ulp, last);
            let (buf, n) = encode_hdr(&h);
            assert_eq!(n, ulp.header_len());
            assert_eq!(Header::decode(&buf[..n]), Ok((h, n)));
            let mut out = [0u8; MAX_HDR_LEN];
            assert_eq!(ulp.encode(last, &mut out), n);
            assert_eq!(Ulp::decode(&out[..n]).unwrap().0.ulp, ulp);
            // One byte short is truncated, never a wrong header.
            assert_eq!(
                Header::decode(&buf[..n - 1]),
                Err(DdpError::Truncated { need: n })
            );
        }
    }
}

#[test]
fn header_opcode_numbers_and_queues() {
    let want = [
        (0, true, None),
        (1, false, Some(1)),
        (2, true, None),
        (3, false, Some(0)),
    ];
    for (v, tagged, queue) in want {
        let op = Opcode::from_u8(v).unwrap();
        assert_eq!((op as u8, op.tagged(), op.queue()), (v, tagged, queue));
    }
    for v in 4..=6 {
        assert_eq!(Opcode::from_u8(v).unwrap().queue(), Some(QN_SEND));
    }
    assert_eq!(Opcode::Terminate.queue(), Some(QN_TERMINATE));
    assert!((8..16).all(|v| Opcode::from_u8(v).is_none()));
}

#[test]
fn golden_tagged_rdma_write_fpdu_with_five_bytes_and_pad() {
    let h = hdr(
        Ulp::RdmaWrite {
            stag: 0x1122_3344,
            to: 0x0000_7F00_1234_5678,
        },
        true,
    );
    let mut want = vec![
        0x00, 0x13, // ULPDU length 19 = 14 + 5
        0xC1, // T | L | DDP version 1
        0x40, // RDMAP version 1, opcode 0 (RDMA Write)
        0x11, 0x22, 0x33, 0x44, // Sink STag
        0x00, 0x00, 0x7F, 0x00, 0x12, 0x34, 0x56, 0x78, // Tagged Offset
        b'h', b'e', b'l', b'l', b'o', // payload
        0x00, 0x00, 0x00, // pad: 2 + 19 + 3 = 24
    ];
    let crc = reference_crc32c(&want);
    want.extend_from_slice(&crc.to_le_bytes());
    let mut out = [0u8; 64];
    let n = encode_fpdu(&h, b"hello", true, &mut out).unwrap();
    assert_eq!(&out[..n], &want[..]);
    assert_eq!(n, 19 + fpdu_overhead(19));
    // Without CRC the field is zeros.
    let n = encode_fpdu(&h, b"hello", false, &mut out).unwrap();
    assert_eq!(&out[..n - 4], &want[..n - 4]);
    assert_eq!(&out[n - 4..n], &[0, 0, 0, 0]);
}

#[test]
fn golden_send_with_solicited_event() {
    let h = hdr(
        Ulp::Send {
            msn: 1,
            mo: 0,
            solicited: true,
            invalidate: None,
        },
        true,
    );
    let (buf, n) = encode_hdr(&h);
    #[rustfmt::skip]
    let want = [
        0x41, // L | DDP version 1 (untagged)
        0x45, // RDMAP version 1, opcode 5 (Send with SE)
        0, 0, 0, 0, // reserved (no Invalidate STag)
        0, 0, 0, 0, // QN 0
        0, 0, 0, 1, // MSN 1
        0, 0, 0, 0, // MO 0
    ];
    assert_eq!(&buf[..n], &want);
    let h = hdr(
        Ulp::Send {
            msn: 1,
            mo: 0,
            solicited: true,
            invalidate: Some(0xCAFE_F00D),
        },
        false,
    );
    let (buf, n) = encode_hdr(&h);
    assert_eq!(&buf[..6], &[0x01, 0x46, 0xCA, 0xFE, 0xF0, 0x0D]);
    assert_eq!(n, UNTAGGED_HDR_LEN);
}

#[test]
fn golden_read_request_with_its_28_bytes() {
    let req = ReadRequest {
        sink_stag: 0xAABB_CCDD,
        sink_to: 0x1000,
        size: 0x2000,
        source_stag: 0x0102_0304,
        source_to: 0xDE_ADBE_EF00,
    };
    let h = hdr(Ulp::ReadRequest { msn: 1, mo: 0, req }, true);
    let (buf, n) = encode_hdr(&h);
    #[rustfmt::skip]
    let want = [
        0x41, 0x41, // L | DDP v1; RDMAP v1, opcode 1
        0, 0, 0, 0, // reserved
        0, 0, 0, 1, // QN 1
        0, 0, 0, 1, // MSN 1
        0, 0, 0, 0, // MO 0
        0xAA, 0xBB, 0xCC, 0xDD, // Sink STag
        0, 0, 0, 0, 0, 0, 0x10, 0x00, // Sink TO
        0, 0, 0x20, 0x00, // Read size
        0x01, 0x02, 0x03, 0x04, // Source STag
        0, 0, 0, 0xDE, 0xAD, 0xBE, 0xEF, 0x00, // Source TO
    ];
    assert_eq!(&buf[..n], &want);
    let mut r = [0u8; READ_REQUEST_LEN];
    req.encode(&mut r);
    assert_eq!(&r[..], &want[UNTAGGED_HDR_LEN..]);
    assert_eq!(ReadRequest::decode(&want[UNTAGGED_HDR_LEN..]), Some(req));
    assert_eq!(ReadRequest::decode(&want[UNTAGGED_HDR_LEN + 1..]), None);
    // As an FPDU: ULPDU 46, no pad.
    let mut out = [0u8; 64];
    assert_eq!(encode_fpdu(&h, &[], true, &mut out), Ok(2 + 46 + 4));
}

#[test]
fn ddp_version_errors_name_tagged_or_untagged_code() {
    let (mut w, n) = encode_hdr(&hdr(Ulp::RdmaWrite { stag: 1, to: 2 }, true));
    w[0] = (w[0] & !3) | 2;
    let e = Header::decode(&w[..n]).unwrap_err();
    assert_eq!(
        e,
        DdpError::DdpVersion {
            tagged: true,
            version: 2
        }
    );
    assert_eq!(e.term().unwrap().raw(), (1, 1, 0x04));
    let (mut s, n) = encode_hdr(&hdr(
        Ulp::Send {
            msn: 1,
            mo: 0,
            solicited: false,
            invalidate: None,
        },
        true,
    ));
    s[0] &= !3;
    let e = Header::decode(&s[..n]).unwrap_err();
    assert_eq!(
        e,
        DdpError::DdpVersion {
            tagged: false,
            version: 0
        }
    );
    assert_eq!(e.term().unwrap().raw(), (1, 2, 0x06));
    // Reported from the two control bytes alone.
    assert_eq!(Header::decode(&s[..2]), Err(e));
}

#[test]
fn rdmap_version_and_opcode_errors() {
    let (mut s, n) = encode_hdr(&hdr(Ulp::Terminate { msn: 1, mo: 0 }, true));
    s[1] = 0x87; // version 2
    let e = Header::decode(&s[..n]).unwrap_err();
    assert_eq!(e, DdpError::RdmapVersion(2));
    assert_eq!(e.term().unwrap().raw(), (0, 2, 0x05));
    for op in 8..16u8 {
        s[1] = 0x40 | op;
        let e = Header::decode(&s[..n]).unwrap_err();
        assert_eq!(e, DdpError::Opcode(op));
        assert_eq!(e.term().unwrap().raw(), (0, 2, 0x06));
    }
}

#[test]
fn tagged_bit_must_match_opcode() {
    let (mut w, n) = encode_hdr(&hdr(Ulp::RdmaWrite { stag: 1, to: 2 }, true));
    w[0] &= !DDP_TAGGED;
    let e = Header::decode(&w[..n]).unwrap_err();
    assert_eq!(
        e,
        DdpError::TaggedMismatch {
            opcode: Opcode::RdmaWrite,
            tagged: false
        }
    );
    assert_eq!(
        e.term(),
        Some(TermError::RdmapOperation(RdmapOperation::UnexpectedOpcode))
    );
    let (mut s, n) = encode_hdr(&hdr(
        Ulp::Send {
            msn: 1,
            mo: 0,
            solicited: false,
            invalidate: None,
        },
        true,
    ));
    s[0] |= DDP_TAGGED;
    assert_eq!(
        Header::decode(&s[..n]),
        Err(DdpError::TaggedMismatch {
            opcode: Opcode::Send,
            tagged: true
        })
    );
}

#[test]
fn wrong_queue_number_for_send_read_request_terminate() {
    for ulp in all_ulps().into_iter().filter(|u| !u.opcode().tagged()) {
        let (mut b, n) = encode_hdr(&hdr(ulp, true));
        let right = ulp.opcode().queue().unwrap();
        for qn in [0u32, 1, 2, 3, u32::MAX]
            .into_iter()
            .filter(|&q| q != right)
        {
            b[6..10].copy_from_slice(&qn.to_be_bytes());
            let e = Header::decode(&b[..n]).unwrap_err();
            assert_eq!(
                e,
                DdpError::InvalidQn {
                    opcode: ulp.opcode(),
                    qn
                }
            );
            assert_eq!(e.term().unwrap().raw(), (1, 2, 0x01));
        }
    }
}

#[test]
fn reserved_header_bits_tolerated_and_kept() {
    let (mut b, n) = encode_hdr(&hdr(
        Ulp::Send {
            msn: 4,
            mo: 0,
            solicited: false,
            invalidate: None,
        },
        false,
    ));
    b[0] |= 0x3C;
    b[1] |= 0x30;
    b[2..6].copy_from_slice(&[1, 2, 3, 4]);
    let (h, len) = Header::decode(&b[..n]).unwrap();
    assert_eq!(
        h.ulp,
        Ulp::Send {
            msn: 4,
            mo: 0,
            solicited: false,
            invalidate: None
        }
    );
    assert_eq!(
        h.reserved,
        Reserved {
            ddp: 0x3C,
            rdmap: 0x30,
            word: 0x0102_0304
        }
    );
    let (again, m) = encode_hdr(&h);
    assert_eq!(&again[..m], &b[..len]);
}

// ───────────── FPDU ─────────────

#[test]
fn fpdu_pad_and_overhead() {
    let pads = [2, 1, 0, 3, 2, 1, 0, 3];
    for (len, pad) in pads.iter().enumerate() {
        assert_eq!(fpdu_pad(len), *pad);
        assert_eq!((2 + len + fpdu_pad(len)) % 4, 0);
        assert_eq!(fpdu_overhead(len), 2 + pad + 4);
    }
    assert_eq!(fpdu_pad(MAX_ULPDU_LEN), 3);
}

#[test]
fn max_payload_fills_but_never_exceeds_the_limit() {
    for mss in [0usize, 20, 21, 100, 1448, 1460, 9000, 70_000] {
        for hl in [TAGGED_HDR_LEN, UNTAGGED_HDR_LEN] {
            let p = max_payload(hl, mss);
            if p > 0 || hl + fpdu_overhead(hl) <= mss {
                assert!(hl + p + fpdu_overhead(hl + p) <= mss, "{mss} {hl}");
                assert!(hl + p <= MAX_ULPDU_LEN);
                let more = hl + p + 1;
                assert!(more > MAX_ULPDU_LEN || more + fpdu_overhead(more) > mss);
            }
        }
    }
    assert_eq!(max_payload(TAGGED_HDR_LEN, 1460), 1440);
    assert_eq!(
        max_payload(TAGGED_HDR_LEN, 1 << 20),
        MAX_ULPDU_LEN - TAGGED_HDR_LEN
    );
}

#[test]
fn fpdu_tx_pieces_match_one_shot_encoding() {
    let mut rng = Rng(7);
    let mut payload = [0u8; 1001];
    rng.bytes(&mut payload);
    let h = hdr(
        Ulp::Send {
            msn: 9,
            mo: 100,
            solicited: false,
            invalidate: None,
        },
        false,
    );
    for crc in [false, true] {
        let mut whole = [0u8; 1100];
        let n = encode_fpdu(&h, &payload, crc, &mut whole).unwrap();
        let mut tx = FpduTx::new(&h, payload.len(), crc).unwrap();
        let mut wire = tx.head().to_vec();
        let (a, rest) = payload.split_at(10);
        let (b, c) = rest.split_at(500);
        tx.payload(a).unwrap();
        tx.payload_crc(b.len(), crc32c_of(b)).unwrap();
        tx.payload(c).unwrap();
        wire.extend_from_slice(&payload);
        wire.extend_from_slice(tx.trailer().unwrap());
        assert_eq!(&wire[..], &whole[..n]);
    }
}

#[test]
fn fpdu_tx_refuses_oversize_and_wrong_payload_counts() {
    let h = hdr(Ulp::RdmaWrite { stag: 1, to: 0 }, true);
    assert_eq!(
        FpduTx::new(&h, MAX_ULPDU_LEN - TAGGED_HDR_LEN + 1, true).unwrap_err(),
        FpduError::UlpduTooLong {
            ulpdu_len: MAX_ULPDU_LEN + 1,
            max: MAX_ULPDU_LEN
        }
    );
    assert!(FpduTx::new(&h, MAX_ULPDU_LEN - TAGGED_HDR_LEN, true).is_ok());
    let mut tx = FpduTx::new(&h, 4, true).unwrap();
    assert_eq!(
        tx.trailer().unwrap_err(),
        FpduError::Misuse {
            expected: 4,
            got: 0
        }
    );
    assert_eq!(
        tx.payload(&[0; 5]),
        Err(FpduError::Misuse {
            expected: 4,
            got: 5
        })
    );
    let mut small = [0u8; 10];
    assert_eq!(
        encode_fpdu(&h, &[1, 2], true, &mut small),
        Err(FpduError::BufferTooSmall {
            need: 2 + 16 + 2 + 4
        })
    );
}

/// A stream of FPDUs of every kind and several payload sizes, with the
/// segments and payloads that went in.
fn sample_stream(crc: bool) -> (Vec<u8>, Vec<(Header, Vec<u8>)>) {
    let mut stream = Vec::new();
    let mut sent = Vec::new();
    let mut out = vec![0u8; 70_000];
    for (i, ulp) in all_ulps().into_iter().enumerate() {
        let payload: Vec<u8> = match ulp {
            Ulp::ReadRequest { .. } => Vec::new(),
            _ => (0..i * 37 % 11 + i).map(|x| x as u8).collect(),
        };
        let h = hdr(ulp, i % 2 == 0);
        let n = encode_fpdu(&h, &payload, crc, &mut out).unwrap();
        stream.extend_from_slice(&out[..n]);
        sent.push((h, payload));
    }
    (stream, sent)
}

/// Drive a reader over `stream` in chunks of `chunk`, collecting segments
/// and payloads.
fn read_stream(
    reader: &mut FpduReader,
    stream: &[u8],
    chunk: usize,
) -> Result<Vec<(Header, Vec<u8>)>, FpduError> {
    let mut got = Vec::new();
    let mut pos = 0;
    let mut current: Option<(Header, Vec<u8>)> = None;
    while pos < stream.len() {
        let end = (pos + chunk).min(stream.len());
        let before = reader.need();
        let fed = reader.feed(&stream[pos..end])?;
        if let RxNeed::Payload(_) = before {
            current
                .as_mut()
                .unwrap()
                .1
                .extend_from_slice(&stream[pos..pos + fed.consumed]);
        }
        pos += fed.consumed;
        match fed.event {
            Some(RxEvent::Segment(s)) => {
                assert_eq!(reader.segment(), Some(s));
                current = Some((s.header, Vec::new()));
            }
            Some(RxEvent::Done) => got.push(current.take().unwrap()),
            None => assert!(fed.consumed > 0 || pos == stream.len()),
        }
    }
    Ok(got)
}

#[test]
fn fpdu_reader_streams_segments_in_any_chunking() {
    for crc in [false, true] {
        let (stream, sent) = sample_stream(crc);
        for chunk in [1, 2, 3, 5, 16, 47, stream.len()] {
            let mut r = FpduReader::new(crc);
            assert_eq!(read_stream(&mut r, &stream, chunk).unwrap(), sent);
            assert_eq!(r.need(), RxNeed::Header(4));
        }
    }
}

#[test]
fn fpdu_reader_is_at_a_boundary_only_between_fpdus() {
    let (stream, _) = sample_stream(false);
    let mut r = FpduReader::new(false);
    assert!(r.at_boundary());
    let mut boundaries = 0;
    for (i, b) in stream.iter().enumerate() {
        r.feed(std::slice::from_ref(b)).unwrap();
        if r.at_boundary() {
            boundaries += 1;
            // Every boundary is where a length field starts.
            assert!(i + 1 == stream.len() || r.need() == RxNeed::Header(4));
        }
    }
    assert!(r.at_boundary(), "the stream ends between FPDUs");
    let (_, sent) = sample_stream(false);
    assert_eq!(boundaries, sent.len());
    // A refused header leaves the reader nowhere.
    let mut r = FpduReader::new(false);
    assert!(r.feed(&[0, 20, 0x41, 0x40]).is_err());
    assert!(!r.at_boundary());
}

#[test]
fn fpdu_reader_direct_read_and_placed_crc() {
    let (stream, sent) = sample_stream(true);
    let mut r = FpduReader::new(true);
    let mut pos = 0;
    let mut got = Vec::new();
    let mut payload = Vec::new();
    while pos < stream.len() {
        let event = match r.need() {
            RxNeed::Header(n) | RxNeed::Trailer(n) => {
                // As a read() into the reader's own buffer would.
                let spare = r.spare();
                assert_eq!(spare.len(), n);
                let k = n.min(3);
                spare[..k].copy_from_slice(&stream[pos..pos + k]);
                pos += k;
                r.commit(k).unwrap()
            }
            RxNeed::Payload(n) => {
                assert!(r.spare().is_empty());
                // "Placement" elsewhere, then the CRC of what was placed.
                let k = n.min(4);
                payload.extend_from_slice(&stream[pos..pos + k]);
                let placed = &stream[pos..pos + k];
                pos += k;
                r.placed_crc(k, crc32c_of(placed)).unwrap();
                None
            }
        };
        match event {
            Some(RxEvent::Segment(s)) => got.push((s.header, Vec::new())),
            Some(RxEvent::Done) => got.last_mut().unwrap().1 = std::mem::take(&mut payload),
            None => {}
        }
    }
    assert_eq!(got, sent);
    // Misuse is refused without breaking the stream.
    assert_eq!(
        r.placed(&[1]),
        Err(FpduError::Misuse {
            expected: 0,
            got: 1
        })
    );
    assert_eq!(
        r.commit(9),
        Err(FpduError::Misuse {
            expected: 4,
            got: 9
        })
    );
}

#[test]
fn fpdu_reader_detects_bad_crc_anywhere() {
    let h = hdr(Ulp::ReadResponse { stag: 5, to: 6 }, true);
    let mut out = [0u8; 64];
    let n = encode_fpdu(&h, b"payload", true, &mut out).unwrap();
    for i in 0..n {
        let mut bad = out;
        bad[i] ^= 0x01;
        let mut r = FpduReader::new(true);
        let res = read_stream(&mut r, &bad[..n], n);
        if i < 2 + TAGGED_HDR_LEN {
            // Length or header bits: either a header error or a CRC error.
            assert!(res.is_err() || i == 0, "byte {i}");
        } else {
            let e = res.unwrap_err();
            assert!(matches!(e, FpduError::Crc { .. }), "byte {i}: {e:?}");
            assert_eq!(e.term(), Some(TermError::Mpa(MpaCode::Crc)));
            // Sticky.
            assert_eq!(r.feed(&[0]), Err(e));
        }
    }
    // Without CRC, the field is not checked.
    let mut r = FpduReader::new(false);
    let mut bad = out;
    bad[n - 1] ^= 0xFF;
    assert_eq!(read_stream(&mut r, &bad[..n], 5).unwrap().len(), 1);
}

#[test]
fn fpdu_reader_length_field_checks() {
    // ULPDU length shorter than the tagged header it announces.
    let mut r = FpduReader::new(false);
    let e = r.feed(&[0x00, 0x0D, 0xC1, 0x40]).unwrap_err();
    assert_eq!(
        e,
        FpduError::UlpduTooShort {
            ulpdu_len: 13,
            header_len: TAGGED_HDR_LEN
        }
    );
    assert_eq!(e.term().unwrap().raw(), (2, 0, 0x03));
    // A Read Request needs 46.
    let mut r = FpduReader::new(false);
    let e = r.feed(&[0x00, 0x12, 0x41, 0x41]).unwrap_err();
    assert_eq!(
        e,
        FpduError::UlpduTooShort {
            ulpdu_len: 18,
            header_len: READ_REQUEST_HDR_LEN
        }
    );
    // Over the reader's limit.
    let mut r = FpduReader::with_max_ulpdu(false, 1460);
    let e = r.feed(&[0x05, 0xB5, 0xC1, 0x40]).unwrap_err();
    assert_eq!(
        e,
        FpduError::UlpduTooLong {
            ulpdu_len: 1461,
            max: 1460
        }
    );
    // Header errors carry their Terminate codes.
    let mut r = FpduReader::new(false);
    let e = r.feed(&[0x00, 0x20, 0xC2, 0x40]).unwrap_err();
    assert_eq!(e.term().unwrap().raw(), (1, 1, 0x04));
    let mut r = FpduReader::new(false);
    let mut s = [0u8; 24];
    s[..2].copy_from_slice(&[0x00, 0x12]);
    s[2..4].copy_from_slice(&[0x41, 0x43]);
    s[8..12].copy_from_slice(&5u32.to_be_bytes());
    let e = read_stream(&mut r, &s, 24).unwrap_err();
    assert_eq!(
        e,
        FpduError::Ddp(DdpError::InvalidQn {
            opcode: Opcode::Send,
            qn: 5
        })
    );
}

// ───────────── Terminate ─────────────

#[test]
fn terminate_codes_match_the_iana_rddp_registry() {
    use TermError as T;
    let table = [
        (T::RdmapCatastrophic { code: 0x00 }, (0, 0, 0x00)),
        (T::RdmapCatastrophic { code: 0xFF }, (0, 0, 0xFF)),
        (
            T::RdmapProtection(RdmapProtection::InvalidStag),
            (0, 1, 0x00),
        ),
        (
            T::RdmapProtection(RdmapProtection::BaseOrBounds),
            (0, 1, 0x01),
        ),
        (
            T::RdmapProtection(RdmapProtection::AccessRights),
            (0, 1, 0x02),
        ),
        (
            T::RdmapProtection(RdmapProtection::StagNotAssociated),
            (0, 1, 0x03),
        ),
        (T::RdmapProtection(RdmapProtection::ToWrap), (0, 1, 0x04)),
        (
            T::RdmapProtection(RdmapProtection::CannotInvalidate),
            (0, 1, 0x09),
        ),
        (
            T::RdmapProtection(RdmapProtection::Unspecified),
            (0, 1, 0xFF),
        ),
        (
            T::RdmapOperation(RdmapOperation::InvalidVersion),
            (0, 2, 0x05),
        ),
        (
            T::RdmapOperation(RdmapOperation::UnexpectedOpcode),
            (0, 2, 0x06),
        ),
        (
            T::RdmapOperation(RdmapOperation::CatastrophicStream),
            (0, 2, 0x07),
        ),
        (
            T::RdmapOperation(RdmapOperation::CatastrophicGlobal),
            (0, 2, 0x08),
        ),
        (
            T::RdmapOperation(RdmapOperation::CannotInvalidate),
            (0, 2, 0x09),
        ),
        (T::RdmapOperation(RdmapOperation::Unspecified), (0, 2, 0xFF)),
        (T::DdpCatastrophic, (1, 0, 0x00)),
        (T::DdpTagged(DdpTagged::InvalidStag), (1, 1, 0x00)),
        (T::DdpTagged(DdpTagged::BaseOrBounds), (1, 1, 0x01)),
        (T::DdpTagged(DdpTagged::StagNotAssociated), (1, 1, 0x02)),
        (T::DdpTagged(DdpTagged::ToWrap), (1, 1, 0x03)),
        (T::DdpTagged(DdpTagged::InvalidVersion), (1, 1, 0x04)),
        (T::DdpUntagged(DdpUntagged::InvalidQn), (1, 2, 0x01)),
        (
            T::DdpUntagged(DdpUntagged::InvalidMsnNoBuffer),
            (1, 2, 0x02),
        ),
        (T::DdpUntagged(DdpUntagged::InvalidMsnRange), (1, 2, 0x03)),
        (T::DdpUntagged(DdpUntagged::InvalidMo), (1, 2, 0x04)),
        (T::DdpUntagged(DdpUntagged::MessageTooLong), (1, 2, 0x05)),
        (T::DdpUntagged(DdpUntagged::InvalidVersion), (1, 2, 0x06)),
        (T::Mpa(MpaCode::ConnectionLost), (2, 0, 0x01)),
        (T::Mpa(MpaCode::Crc), (2, 0, 0x02)),
        (T::Mpa(MpaCode::MarkerMismatch), (2, 0, 0x03)),
        (T::Mpa(MpaCode::InvalidSetupFrame), (2, 0, 0x04)),
        (T::Mpa(MpaCode::LocalCatastrophic), (2, 0, 0x05)),
        (T::Mpa(MpaCode::InsufficientIrd), (2, 0, 0x06)),
        (T::Mpa(MpaCode::NoMatchingRtr), (2, 0, 0x07)),
    ];
    for (e, raw) in table {
        assert_eq!(e.raw(), raw);
        assert_eq!(T::from_raw(raw.0, raw.1, raw.2), e);
        assert!(e.registered());
        assert!(!e.to_string().contains("unregistered"));
    }
    // Everything else is kept as received.
    let mut registered = 0;
    for layer in 0..16u8 {
        for etype in 0..16u8 {
            for code in 0..=255u8 {
                let e = T::from_raw(layer, etype, code);
                assert_eq!(e.raw(), (layer, etype, code));
                registered += usize::from(e.registered());
            }
        }
    }
    assert_eq!(registered, 256 + table.len() - 2);
}

#[test]
fn golden_terminate_invalid_stag_of_a_read_request() {
    let req = ReadRequest {
        sink_stag: 0x10,
        sink_to: 0x2000,
        size: 64,
        source_stag: 0xBAD,
        source_to: 0x3000,
    };
    let (rr, rr_len) = encode_hdr(&hdr(Ulp::ReadRequest { msn: 1, mo: 0, req }, true));
    let term = Terminate::with_segment(
        TermError::RdmapProtection(RdmapProtection::InvalidStag),
        rr_len as u16,
        &rr[..UNTAGGED_HDR_LEN],
        Some(&rr[UNTAGGED_HDR_LEN..rr_len]),
    );
    let mut body = [0u8; TERMINATE_MAX_LEN];
    let blen = term.encode(&mut body).unwrap();
    let h = hdr(Ulp::Terminate { msn: 1, mo: 0 }, true);
    let mut out = [0u8; 128];
    let n = encode_fpdu(&h, &body[..blen], true, &mut out).unwrap();
    #[rustfmt::skip]
    let mut want = vec![
        0x00, 0x46, // ULPDU 70 = 18 + 52
        0x41, 0x47, // L | DDP v1; RDMAP v1, opcode 7 (Terminate)
        0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, // reserved, QN 2, MSN 1, MO 0
        0x01, // layer 0 (RDMAP), type 1 (remote protection)
        0x00, // code 0 (invalid STag)
        0xE0, // M | D | R
        0x00,
        0x00, 0x2E, // offending ULPDU length 46
        0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, // its DDP header
        0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 64, // sink STag, TO, size
        0, 0, 0x0B, 0xAD, 0, 0, 0, 0, 0, 0, 0x30, 0, // source STag, TO
    ];
    let crc = reference_crc32c(&want);
    want.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(&out[..n], &want[..]);
    // And back.
    let mut r = FpduReader::new(true);
    let segs = read_stream(&mut r, &want, 7).unwrap();
    assert_eq!(segs[0].0, h);
    let (t, used) = Terminate::decode(&segs[0].1).unwrap();
    assert_eq!((t, used), (term, blen));
    assert_eq!(
        t.offending(),
        Some(Ok(hdr(Ulp::ReadRequest { msn: 1, mo: 0, req }, true)))
    );
}

#[test]
fn terminate_roundtrip_with_and_without_headers() {
    let (w, wl) = encode_hdr(&hdr(Ulp::RdmaWrite { stag: 3, to: 4 }, false));
    let (s, sl) = encode_hdr(&hdr(
        Ulp::Send {
            msn: 2,
            mo: 0,
            solicited: false,
            invalidate: None,
        },
        true,
    ));
    let cases = [
        Terminate::new(TermError::RdmapCatastrophic { code: 0xFF }),
        Terminate::new(TermError::Mpa(MpaCode::Crc)),
        Terminate::with_segment(
            TermError::DdpTagged(DdpTagged::BaseOrBounds),
            100,
            &w[..wl],
            None,
        ),
        Terminate::with_segment(
            TermError::DdpUntagged(DdpUntagged::InvalidMsnNoBuffer),
            18,
            &s[..sl],
            None,
        ),
        Terminate {
            segment_len: Some(7),
            ..Terminate::new(TermError::DdpCatastrophic)
        }
        .with_length_valid(),
        // Reserved bits in the last byte only: the low bits of byte 2 would read
        // as siw's flags.
        Terminate {
            reserved: 0x00BC,
            ..Terminate::new(TermError::Unregistered {
                layer: 9,
                etype: 3,
                code: 1,
            })
        },
    ];
    for t in cases {
        let mut body = [0u8; TERMINATE_MAX_LEN];
        let n = t.encode(&mut body).unwrap();
        assert_eq!(n, t.encoded_len());
        assert_eq!(Terminate::decode(&body[..n]), Ok((t, n)));
        for cut in 0..n {
            assert!(
                matches!(
                    Terminate::decode(&body[..cut]),
                    Err(TermDecodeError::Truncated { .. })
                ),
                "cut {cut}"
            );
        }
    }
    // Parts that disagree with the flags are refused.
    let bad = Terminate {
        segment_len: Some(1),
        ..Terminate::new(TermError::DdpCatastrophic)
    };
    assert_eq!(
        bad.encode(&mut [0u8; 64]),
        Err(TermEncodeError::Inconsistent)
    );
    let bad = Terminate::with_segment(TermError::DdpCatastrophic, 1, &w[..wl - 1], None);
    assert_eq!(
        bad.encode(&mut [0u8; 64]),
        Err(TermEncodeError::DdpHeaderLength(13))
    );
    let bad = Terminate::with_segment(TermError::DdpCatastrophic, 1, &s[..sl], Some(&s[..4]));
    assert_eq!(
        bad.encode(&mut [0u8; 64]),
        Err(TermEncodeError::RdmapHeaderLength(4))
    );
}

impl Terminate<'_> {
    fn with_length_valid(self) -> Self {
        Terminate {
            length_valid: true,
            ..self
        }
    }
}

#[test]
fn terminate_truncated_still_names_its_error() {
    let body = [0x12, 0x02, 0xC0, 0x00, 0x00];
    assert_eq!(
        Terminate::decode(&body),
        Err(TermDecodeError::Truncated {
            error: Some(TermError::DdpUntagged(DdpUntagged::InvalidMsnNoBuffer)),
            need: 6
        })
    );
    assert_eq!(
        Terminate::decode(&body[..3]),
        Err(TermDecodeError::Truncated {
            error: None,
            need: 4
        })
    );
}

#[test]
fn terminate_from_siw_little_endian_bitfields() {
    // What siw on x86 sends for "no receive posted" against a Send: type
    // in the high nibble, M|D in the low bits of byte 2, then the length
    // (siw puts the payload length) and the 18-byte DDP header.
    let (s, sl) = encode_hdr(&hdr(
        Ulp::Send {
            msn: 3,
            mo: 0,
            solicited: false,
            invalidate: None,
        },
        true,
    ));
    let mut body = vec![0x21, 0x02, 0x03, 0x00, 0x00, 0x10];
    body.extend_from_slice(&s[..sl]);
    let (t, n) = Terminate::decode(&body).unwrap();
    assert_eq!(t.layout, TermLayout::SiwLittleEndian);
    assert_eq!(
        t.error,
        TermError::DdpUntagged(DdpUntagged::InvalidMsnNoBuffer)
    );
    assert_eq!(
        (t.length_valid, t.segment_len, t.ddp_header, t.inferred),
        (true, Some(16), Some(&s[..sl]), false)
    );
    assert_eq!(n, body.len());
    let mut again = [0u8; TERMINATE_MAX_LEN];
    let m = t.encode(&mut again).unwrap();
    assert_eq!(&again[..m], &body[..]);
    // RDMAP remote protection with the whole Read Request: M|D|R = 0x07.
    let req = ReadRequest::default();
    let (rr, rl) = encode_hdr(&hdr(Ulp::ReadRequest { msn: 1, mo: 0, req }, true));
    let mut body = vec![0x10, 0x00, 0x07, 0x00, 0x00, 0x00];
    body.extend_from_slice(&rr[..rl]);
    let (t, n) = Terminate::decode(&body).unwrap();
    assert_eq!(
        t.error,
        TermError::RdmapProtection(RdmapProtection::InvalidStag)
    );
    assert_eq!(
        (t.rdmap_header.map(<[u8]>::len), n),
        (Some(READ_REQUEST_LEN), body.len())
    );
    // No flags, but only the swapped reading is registered: MPA CRC error.
    let (t, _) = Terminate::decode(&[0x02, 0x02, 0x00, 0x00]).unwrap();
    assert_eq!(
        (t.layout, t.error),
        (TermLayout::SiwLittleEndian, TermError::Mpa(MpaCode::Crc))
    );
    // The RFC layout of the same error.
    let (t, _) = Terminate::decode(&[0x20, 0x02, 0x00, 0x00]).unwrap();
    assert_eq!(
        (t.layout, t.error),
        (TermLayout::Rfc, TermError::Mpa(MpaCode::Crc))
    );
    // Explicit layout.
    let (t, _) =
        Terminate::decode_as(&[0x21, 0x02, 0x00, 0x00], TermLayout::SiwLittleEndian).unwrap();
    assert_eq!(
        t.error,
        TermError::DdpUntagged(DdpUntagged::InvalidMsnNoBuffer)
    );
}

#[test]
fn terminate_trailing_bytes_tolerated_and_unannounced_headers_inferred() {
    let (w, wl) = encode_hdr(&hdr(
        Ulp::RdmaWrite {
            stag: 0xAB,
            to: 0x1000,
        },
        true,
    ));
    let mut body = vec![0x11, 0x00, 0x00, 0x00, 0x00, 0x20];
    body.extend_from_slice(&w[..wl]);
    body.extend_from_slice(&[0xEE; 5]); // beyond anything announced
    let (t, n) = Terminate::decode(&body).unwrap();
    assert_eq!(t.error, TermError::DdpTagged(DdpTagged::InvalidStag));
    assert!(t.inferred);
    assert_eq!(
        (t.segment_len, t.ddp_header, n),
        (Some(0x20), Some(&w[..wl]), 6 + wl)
    );
    assert_eq!(
        t.offending(),
        Some(Ok(hdr(
            Ulp::RdmaWrite {
                stag: 0xAB,
                to: 0x1000
            },
            true
        )))
    );
    let mut again = [0u8; TERMINATE_MAX_LEN];
    let m = t.encode(&mut again).unwrap();
    assert_eq!(&again[..m], &body[..n]);
    // Trailing bytes that do not parse are left alone.
    let (t, n) = Terminate::decode(&[
        0x00, 0xFF, 0x00, 0x00, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
    ])
    .unwrap();
    assert_eq!(
        (t.error, t.inferred, n),
        (TermError::RdmapCatastrophic { code: 0xFF }, false, 4)
    );
}

// ───────────── Property: random and mutated input ─────────────

fn check_mpa(bytes: &[u8], rng: &mut Rng) {
    for kind in [MpaKind::Request, MpaKind::Reply] {
        let cfg = MpaConfig {
            accept_markers: rng.below(2) == 0,
            ..MpaConfig::new(kind)
        };
        let chunk = 1 + rng.below(40);
        if let (Ok(Some((f, consumed))), _) = parse_mpa(cfg, bytes, chunk) {
            let mut out = [0u8; MPA_HEADER_LEN + MPA_PD_MAX];
            let n = f.frame().encode_with_limit(&mut out, MPA_PD_MAX).unwrap();
            assert_eq!(&out[..n], &bytes[..consumed]);
        }
    }
}

fn check_header(bytes: &[u8]) {
    if let Ok((h, n)) = Header::decode(bytes) {
        let (out, m) = encode_hdr(&h);
        assert_eq!(&out[..m], &bytes[..n]);
    }
}

fn check_terminate(bytes: &[u8]) {
    if let Ok((t, n)) = Terminate::decode(bytes) {
        let mut out = [0u8; TERMINATE_MAX_LEN];
        let m = t.encode(&mut out).unwrap();
        assert_eq!(&out[..m], &bytes[..n]);
        let _ = t.offending();
    }
}

fn check_fpdus(bytes: &[u8], crc: bool, rng: &mut Rng) {
    let mut r = FpduReader::with_max_ulpdu(
        crc,
        if rng.below(2) == 0 {
            MAX_ULPDU_LEN
        } else {
            200
        },
    );
    let (mut pos, mut start) = (0, 0);
    while pos < bytes.len() {
        let end = (pos + 1 + rng.below(64)).min(bytes.len());
        let Ok(fed) = r.feed(&bytes[pos..end]) else {
            return;
        };
        pos += fed.consumed;
        match fed.event {
            Some(RxEvent::Segment(s)) => {
                let (out, m) = encode_hdr(&s.header);
                assert_eq!(&out[..m], &bytes[start + 2..start + 2 + m]);
                assert_eq!(usize::from(s.ulpdu_len), m + s.payload_len);
                assert_eq!(be16(bytes, start), s.ulpdu_len);
            }
            Some(RxEvent::Done) => {
                if crc {
                    let c = reference_crc32c(&bytes[start..pos - 4]);
                    assert_eq!(&c.to_le_bytes()[..], &bytes[pos - 4..pos]);
                }
                start = pos;
            }
            None => {}
        }
    }
}

fn mutate(rng: &mut Rng, v: &mut Vec<u8>) {
    for _ in 0..rng.below(3) {
        if !v.is_empty() {
            let i = rng.below(v.len());
            v[i] ^= 1 << rng.below(8);
        }
    }
    if rng.below(4) == 0 {
        v.truncate(rng.below(v.len() + 1));
    }
}

#[test]
fn parsers_never_panic_and_never_accept_what_they_cannot_reproduce() {
    let mut rng = Rng(0x1D_A7A5);
    let (stream_crc, _) = sample_stream(true);
    let (stream_plain, _) = sample_stream(false);
    let mut frames = Vec::new();
    let mut buf = [0u8; MPA_HEADER_LEN + MPA_PD_MAX];
    for (kind, rev, io) in [
        (MpaKind::Request, 2, true),
        (MpaKind::Reply, 1, false),
        (MpaKind::Reply, 2, true),
    ] {
        let f = MpaFrame {
            ird_ord: io.then_some(IrdOrd {
                ird: 4,
                ord: 4,
                ..IrdOrd::default()
            }),
            private_data: b"private",
            ..MpaFrame::new(kind, rev)
        };
        let n = f.encode(&mut buf).unwrap();
        frames.push(buf[..n].to_vec());
    }
    let mut terms = Vec::new();
    let (rr, rl) = encode_hdr(&hdr(
        Ulp::ReadRequest {
            msn: 1,
            mo: 0,
            req: ReadRequest::default(),
        },
        true,
    ));
    for t in [
        Terminate::new(TermError::Mpa(MpaCode::Crc)),
        Terminate::with_segment(
            TermError::RdmapProtection(RdmapProtection::AccessRights),
            46,
            &rr[..18],
            Some(&rr[18..rl]),
        ),
    ] {
        let mut b = [0u8; TERMINATE_MAX_LEN];
        let n = t.encode(&mut b).unwrap();
        terms.push(b[..n].to_vec());
    }
    let mut accepted = [0usize; 4];
    for round in 0..20_000 {
        // Pure noise, or a valid encoding with a few bits flipped.
        let mut v = vec![0u8; rng.below(200)];
        rng.bytes(&mut v);
        let choice = rng.below(6);
        match choice {
            0 => {}
            1 => v = frames[round % frames.len()].clone(),
            2 => v = stream_crc.clone(),
            3 => v = stream_plain.clone(),
            4 => v = terms[round % terms.len()].clone(),
            _ => {
                v = encode_hdr(&hdr(all_ulps()[round % 9], round % 2 == 0))
                    .0
                    .to_vec()
            }
        }
        if choice != 0 {
            mutate(&mut rng, &mut v);
        }
        check_mpa(&v, &mut rng);
        check_header(&v);
        check_terminate(&v);
        check_fpdus(&v, true, &mut rng);
        check_fpdus(&v, false, &mut rng);
        accepted[0] += usize::from(Header::decode(&v).is_ok());
        accepted[1] += usize::from(Terminate::decode(&v).is_ok());
        accepted[2] += usize::from(matches!(
            parse_mpa(MpaConfig::new(MpaKind::Reply), &v, 64).0,
            Ok(Some(_))
        ));
        accepted[3] += usize::from(
            read_stream(&mut FpduReader::new(true), &v, 9).is_ok_and(|s| !s.is_empty()),
        );
    }
    // The mutated inputs reached the accepting paths, not only the errors.
    assert!(accepted.iter().all(|&a| a > 50), "{accepted:?}");
}
