//! HDR histogram helpers: construction and recording here; the type, the encoding of the
//! result files and the statistics are onrush-results' (re-exported).

pub use onrush_results::{
    decode_hist, new_hist, round3, us_to_ms, Hist, MsStats, MAX_VALUE_US, SIGNIFICANT_DIGITS,
};

/// The encoder of the result files' histograms.
pub(crate) type Encoder = onrush_results::HistEncoder;

/// Records `value_us`, clamped to [`MAX_VALUE_US`]. Uses `record` (which grows an auto-resizing
/// histogram) rather than `saturating_record`, which on an auto-resizing histogram clamps to the
/// *current* top instead of growing. After clamping, `record` cannot fail here.
#[inline]
pub(crate) fn record(h: &mut Hist, value_us: u64) {
    let _ = h.record(value_us.min(MAX_VALUE_US));
}

/// Moves a non-empty histogram out, leaving an empty one of the same size behind, so the worker
/// keeps its grown capacity and the hot path does not resize again.
pub(crate) fn take_hist(h: &mut Hist) -> Option<Hist> {
    if h.is_empty() {
        return None;
    }
    let fresh = Hist::new_from(h);
    Some(std::mem::replace(h, fresh))
}

/// Adds `src` into `dst` (auto-resizing `dst` as needed).
pub(crate) fn add_into(dst: &mut Hist, src: &Hist) {
    if !dst.is_auto_resize() {
        dst.auto(true);
    }
    dst.add(src)
        .expect("auto-resizing histogram accepts any value");
}

/// Adds an optional histogram into an optional accumulator, moving it when the accumulator is
/// empty.
pub(crate) fn merge_opt(dst: &mut Option<Hist>, src: Option<Hist>) {
    match (dst.as_mut(), src) {
        (_, None) => {}
        (None, Some(mut s)) => {
            s.auto(true);
            *dst = Some(s);
        }
        (Some(d), Some(s)) => add_into(d, &s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip() {
        let mut h = new_hist();
        for v in [0, 1, 5, 999, 12_345, 2_000_000, u64::MAX] {
            record(&mut h, v);
        }
        assert_eq!(h.max(), h.highest_equivalent(MAX_VALUE_US));
        let text = Encoder::new().encode(&h);
        let back = decode_hist(&text).unwrap();
        assert_eq!(back, h);
        assert!(decode_hist("not base64!").is_err());
        assert!(decode_hist("AAAA").is_err());
    }

    #[test]
    fn saturating_record_does_not_grow_auto_resizing_histograms() {
        // Why `record` clamps itself instead of using `saturating_record`.
        let mut h = new_hist();
        h.saturating_record(1_000_000);
        assert!(h.max() < 1_000_000);
        let mut h = new_hist();
        record(&mut h, 1_000_000);
        assert!(h.equivalent(h.max(), 1_000_000));
    }
}
