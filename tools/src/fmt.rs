//! Human-readable values: DAT attribute fields decoded (flags, enums, sizes,
//! addresses), and column-aligned tables.

use crate::ia::{IaAttr, NamedAttr, ProviderAttr};
use dat_abi::*;

/// `true` / `false`.
pub fn boolean(b: bool) -> String {
    if b { "true" } else { "false" }.to_string()
}

/// A byte count, with its binary unit when it is a whole number of KiB or
/// more, or 1 MiB or more: `65536 (64 KiB)`, `1500`, `3145729 (~3.0 MiB)`,
/// `18446744073709551615 (2^64-1)`.
pub fn size(v: u64) -> String {
    if v == u64::MAX {
        return format!("{v} (2^64-1)");
    }
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut unit = None;
    for (i, name) in UNITS.iter().enumerate() {
        let scale = 1u64 << (10 * (i + 1));
        if v >= scale {
            unit = Some((scale, *name));
        }
    }
    match unit {
        None => v.to_string(),
        Some((scale, name)) if v % scale == 0 => format!("{v} ({} {name})", v / scale),
        Some((scale, name)) if scale >= 1 << 20 => {
            format!("{v} (~{:.1} {name})", v as f64 / scale as f64)
        }
        Some(_) => v.to_string(),
    }
}

/// An address-sized limit, in hex.
pub fn address_limit(v: u64) -> String {
    format!("{v:#x}")
}

/// `value (NAME)` for an enumeration, `value (unknown)` otherwise.
fn enumerated(v: u32, names: &[(u32, &str)]) -> String {
    match names.iter().find(|(n, _)| *n == v) {
        Some((_, name)) => format!("{v} ({name})"),
        None => format!("{v} (unknown)"),
    }
}

/// `0x1f (A|B|...)` for a bit set; unknown bits in hex; `zero` names 0.
fn flags(v: u32, names: &[(u32, &str)], zero: &str) -> String {
    if v == 0 {
        return format!("0x0 ({zero})");
    }
    let mut parts: Vec<String> = names
        .iter()
        .filter(|(bit, _)| v & bit != 0)
        .map(|(_, n)| n.to_string())
        .collect();
    let known = names.iter().fold(0, |m, (bit, _)| m | bit);
    if v & !known != 0 {
        parts.push(format!("{:#x}", v & !known));
    }
    format!("{v:#x} ({})", parts.join("|"))
}

/// `DAT_COMPLETION_FLAGS` supported.
pub fn completion_flags(v: u32) -> String {
    flags(
        v,
        &[
            (DAT_COMPLETION_SUPPRESS_FLAG, "SUPPRESS"),
            (DAT_COMPLETION_SOLICITED_WAIT_FLAG, "SOLICITED_WAIT"),
            (DAT_COMPLETION_UNSIGNALLED_FLAG, "UNSIGNALLED"),
            (DAT_COMPLETION_BARRIER_FENCE_FLAG, "BARRIER_FENCE"),
            (DAT_COMPLETION_EVD_THRESHOLD_FLAG, "EVD_THRESHOLD"),
        ],
        "DEFAULT",
    )
}

/// `DAT_QOS` supported.
pub fn qos(v: u32) -> String {
    flags(
        v,
        &[
            (DAT_QOS_HIGH_THROUGHPUT, "HIGH_THROUGHPUT"),
            (DAT_QOS_LOW_LATENCY, "LOW_LATENCY"),
            (DAT_QOS_ECONOMY, "ECONOMY"),
            (DAT_QOS_PREMIUM, "PREMIUM"),
        ],
        "BEST_EFFORT",
    )
}

/// The event streams of the EVD merging matrix, in `DAT_EVD_FLAGS` order.
pub const EVD_STREAMS: [&str; 6] = ["software", "cr", "dto", "connection", "rmr_bind", "async"];

/// The merging matrix: `all pairs`, `none`, or one line per stream naming
/// the streams it may share an EVD with.
pub fn merging(m: &[[bool; 6]; 6]) -> String {
    if m.iter().flatten().all(|&b| b) {
        return "true for every pair of streams".into();
    }
    if m.iter().flatten().all(|&b| !b) {
        return "false for every pair of streams".into();
    }
    m.iter()
        .enumerate()
        .map(|(i, row)| {
            let with: Vec<&str> = row
                .iter()
                .enumerate()
                .filter(|(_, &b)| b)
                .map(|(j, _)| EVD_STREAMS[j])
                .collect();
            let with = if with.is_empty() {
                "-".to_string()
            } else {
                with.join(",")
            };
            format!("{} with {with}", EVD_STREAMS[i])
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One `name value` row of an attribute table.
pub type Row = (&'static str, String);

/// Every `DAT_IA_ATTR` field, in struct order, decoded.
pub fn ia_rows(a: &IaAttr) -> Vec<Row> {
    let n = |v: i32| v.to_string();
    vec![
        ("adapter_name", a.adapter_name.clone()),
        ("vendor_name", a.vendor_name.clone()),
        (
            "hardware_version_major",
            a.hardware_version_major.to_string(),
        ),
        (
            "hardware_version_minor",
            a.hardware_version_minor.to_string(),
        ),
        (
            "firmware_version_major",
            a.firmware_version_major.to_string(),
        ),
        (
            "firmware_version_minor",
            a.firmware_version_minor.to_string(),
        ),
        (
            "ia_address_ptr",
            match &a.ia_address_ptr {
                Some(addr) if !addr.address.is_empty() => format!("{addr} ({})", addr.family),
                Some(addr) => addr.to_string(),
                None => "NULL".into(),
            },
        ),
        ("max_eps", n(a.max_eps)),
        ("max_dto_per_ep", n(a.max_dto_per_ep)),
        ("max_rdma_read_per_ep_in", n(a.max_rdma_read_per_ep_in)),
        ("max_rdma_read_per_ep_out", n(a.max_rdma_read_per_ep_out)),
        ("max_evds", n(a.max_evds)),
        ("max_evd_qlen", n(a.max_evd_qlen)),
        ("max_iov_segments_per_dto", n(a.max_iov_segments_per_dto)),
        ("max_lmrs", n(a.max_lmrs)),
        ("max_lmr_block_size", size(a.max_lmr_block_size)),
        (
            "max_lmr_virtual_address",
            address_limit(a.max_lmr_virtual_address),
        ),
        ("max_pzs", n(a.max_pzs)),
        ("max_message_size", size(a.max_message_size)),
        ("max_rdma_size", size(a.max_rdma_size)),
        ("max_rmrs", n(a.max_rmrs)),
        (
            "max_rmr_target_address",
            address_limit(a.max_rmr_target_address),
        ),
        ("max_srqs", n(a.max_srqs)),
        ("max_ep_per_srq", n(a.max_ep_per_srq)),
        ("max_recv_per_srq", n(a.max_recv_per_srq)),
        (
            "max_iov_segments_per_rdma_read",
            n(a.max_iov_segments_per_rdma_read),
        ),
        (
            "max_iov_segments_per_rdma_write",
            n(a.max_iov_segments_per_rdma_write),
        ),
        ("max_rdma_read_in", n(a.max_rdma_read_in)),
        ("max_rdma_read_out", n(a.max_rdma_read_out)),
        (
            "max_rdma_read_per_ep_in_guaranteed",
            boolean(a.max_rdma_read_per_ep_in_guaranteed),
        ),
        (
            "max_rdma_read_per_ep_out_guaranteed",
            boolean(a.max_rdma_read_per_ep_out_guaranteed),
        ),
        ("num_transport_attr", n(a.num_transport_attr)),
        ("transport_attr", listed(&a.transport_attr)),
        ("num_vendor_attr", n(a.num_vendor_attr)),
        ("vendor_attr", listed(&a.vendor_attr)),
    ]
}

/// Every `DAT_PROVIDER_ATTR` field, in struct order, decoded.
pub fn provider_rows(p: &ProviderAttr) -> Vec<Row> {
    vec![
        ("provider_name", p.provider_name.clone()),
        (
            "provider_version_major",
            p.provider_version_major.to_string(),
        ),
        (
            "provider_version_minor",
            p.provider_version_minor.to_string(),
        ),
        ("dapl_version_major", p.dapl_version_major.to_string()),
        ("dapl_version_minor", p.dapl_version_minor.to_string()),
        (
            "lmr_mem_types_supported",
            format!("{:#x}", p.lmr_mem_types_supported),
        ),
        (
            "iov_ownership_on_return",
            enumerated(
                p.iov_ownership_on_return,
                &[
                    (DAT_IOV_CONSUMER, "DAT_IOV_CONSUMER"),
                    (DAT_IOV_PROVIDER_NOMOD, "DAT_IOV_PROVIDER_NOMOD"),
                    (DAT_IOV_PROVIDER_MOD, "DAT_IOV_PROVIDER_MOD"),
                ],
            ),
        ),
        ("dat_qos_supported", qos(p.dat_qos_supported)),
        (
            "completion_flags_supported",
            completion_flags(p.completion_flags_supported),
        ),
        ("is_thread_safe", boolean(p.is_thread_safe)),
        (
            "max_private_data_size",
            u64::try_from(p.max_private_data_size)
                .map_or_else(|_| p.max_private_data_size.to_string(), size),
        ),
        ("supports_multipath", boolean(p.supports_multipath)),
        (
            "ep_creator",
            enumerated(
                p.ep_creator,
                &[
                    (DAT_PSP_CREATES_EP_NEVER, "DAT_PSP_CREATES_EP_NEVER"),
                    (DAT_PSP_CREATES_EP_IFASKED, "DAT_PSP_CREATES_EP_IFASKED"),
                    (DAT_PSP_CREATES_EP_ALWAYS, "DAT_PSP_CREATES_EP_ALWAYS"),
                ],
            ),
        ),
        (
            "pz_support",
            enumerated(
                p.pz_support,
                &[
                    (DAT_PZ_UNIQUE, "DAT_PZ_UNIQUE"),
                    (DAT_PZ_SAME, "DAT_PZ_SAME"),
                    (DAT_PZ_SHAREABLE, "DAT_PZ_SHAREABLE"),
                ],
            ),
        ),
        (
            "optimal_buffer_alignment",
            p.optimal_buffer_alignment.to_string(),
        ),
        (
            "evd_stream_merging_supported",
            merging(&p.evd_stream_merging_supported),
        ),
        ("srq_supported", boolean(p.srq_supported)),
        (
            "srq_watermarks_supported",
            p.srq_watermarks_supported.to_string(),
        ),
        (
            "srq_ep_pz_difference_supported",
            boolean(p.srq_ep_pz_difference_supported),
        ),
        ("srq_info_supported", p.srq_info_supported.to_string()),
        (
            "ep_recv_info_supported",
            p.ep_recv_info_supported.to_string(),
        ),
        ("lmr_sync_req", boolean(p.lmr_sync_req)),
        (
            "dto_async_return_guaranteed",
            boolean(p.dto_async_return_guaranteed),
        ),
        (
            "rdma_write_for_rdma_read_req",
            boolean(p.rdma_write_for_rdma_read_req),
        ),
        (
            "num_provider_specific_attr",
            p.num_provider_specific_attr.to_string(),
        ),
        ("provider_specific_attr", listed(&p.provider_specific_attr)),
    ]
}

/// A named attribute list in a table: how many there are (`-v` prints them).
fn listed(list: &[NamedAttr]) -> String {
    match list.len() {
        0 => "(none)".into(),
        1 => "1 named attribute".into(),
        n => format!("{n} named attributes"),
    }
}

/// Named attributes as `name=value` lines (`(none)` when empty).
pub fn named_lines(list: &[NamedAttr]) -> Vec<String> {
    if list.is_empty() {
        return vec!["(none)".into()];
    }
    list.iter()
        .map(|a| format!("{}={}", a.name, a.value))
        .collect()
}

/// `name value` rows, the names padded to one column (at least `width`
/// wide), each line indented by `indent`; a multi-line value continues
/// under its first line.
pub fn rows(rows: &[(impl AsRef<str>, String)], indent: usize, width: usize) -> String {
    let width = rows
        .iter()
        .map(|(n, _)| n.as_ref().len())
        .max()
        .unwrap_or(0)
        .max(width);
    let mut out = String::new();
    for (name, value) in rows {
        let mut lines = value.lines();
        let first = lines.next().unwrap_or("");
        let line = format!("{:indent$}{:width$}  {first}", "", name.as_ref());
        out.push_str(line.trim_end());
        out.push('\n');
        for more in lines {
            out.push_str(&format!("{:indent$}{:width$}  {more}\n", "", ""));
        }
    }
    out
}

/// A table with a header row, columns padded to their widest cell (the last
/// column is not padded).
pub fn table(header: &[&str], body: &[Vec<String>]) -> String {
    let cols = header.len();
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in body {
        for (i, c) in r.iter().enumerate().take(cols) {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 < cols {
                s.push_str(&format!("{c:<w$}  ", w = width[i]));
            } else {
                s.push_str(c);
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(header.to_vec());
    for r in body {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(size(1500), "1500");
        assert_eq!(size(65536), "65536 (64 KiB)");
        assert_eq!(size(1 << 31), "2147483648 (2 GiB)");
        assert_eq!(size(1536), "1536");
        assert_eq!(size((3 << 20) + 1), "3145729 (~3.0 MiB)");
        assert_eq!(size(u64::MAX), "18446744073709551615 (2^64-1)");
    }

    #[test]
    fn flags_and_enums() {
        assert_eq!(
            completion_flags(0x1f),
            "0x1f (SUPPRESS|SOLICITED_WAIT|UNSIGNALLED|BARRIER_FENCE|EVD_THRESHOLD)"
        );
        assert_eq!(completion_flags(0x41), "0x41 (SUPPRESS|0x40)");
        assert_eq!(qos(0), "0x0 (BEST_EFFORT)");
        assert_eq!(
            enumerated(1, &[(1, "DAT_PSP_CREATES_EP_IFASKED")]),
            "1 (DAT_PSP_CREATES_EP_IFASKED)"
        );
        assert_eq!(enumerated(9, &[(1, "X")]), "9 (unknown)");
    }

    #[test]
    fn merging_matrix() {
        assert_eq!(merging(&[[true; 6]; 6]), "true for every pair of streams");
        let mut m = [[false; 6]; 6];
        m[0][1] = true;
        let text = merging(&m);
        assert_eq!(text.lines().next(), Some("software with cr"));
        assert_eq!(text.lines().nth(1), Some("cr with -"));
    }

    #[test]
    fn named_attributes() {
        let list = vec![NamedAttr {
            name: "transport".into(),
            value: "tcp".into(),
        }];
        assert_eq!(named_lines(&list), ["transport=tcp"]);
        assert_eq!(named_lines(&[]), ["(none)"]);
        assert_eq!(listed(&list), "1 named attribute");
    }

    #[test]
    fn aligned_output() {
        let r = vec![("a", "1".to_string()), ("long_name", "x\ny".to_string())];
        assert_eq!(
            rows(&r, 2, 0),
            "  a          1\n  long_name  x\n             y\n"
        );
        assert_eq!(rows(&r[..1], 1, 3), " a    1\n");
        let t = table(
            &["IA", "STATUS"],
            &[
                vec!["tcp0".into(), "open".into()],
                vec!["x".into(), "".into()],
            ],
        );
        assert_eq!(t, "IA    STATUS\ntcp0  open\nx\n");
    }
}
