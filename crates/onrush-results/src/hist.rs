//! The histograms of the result files: their type, their encoding in `intervals.jsonl`, and
//! the statistics `summary.json` shows of them.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::hdr::HistDecoder;

/// The histogram type used everywhere: `u64` counts of microsecond values.
pub type Hist = Histogram<u64>;

/// Significant decimal digits kept by every histogram.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// Values are clamped to this (one hour in µs) before recording, which bounds an
/// auto-resized histogram at the size of a `1..=3_600_000_000` one (184 KiB).
pub const MAX_VALUE_US: u64 = 3_600_000_000;

/// A new empty auto-resizing histogram (starts at 2,048 counters = 16 KiB, covering
/// 0..2,047 µs exactly; each doubling of the largest value seen adds 1,024 counters = 8 KiB).
pub fn new_hist() -> Hist {
    Histogram::new(SIGNIFICANT_DIGITS).expect("3 significant digits is valid")
}

/// Reusable encoder of histograms to base64 of the standard HdrHistogram V2 compressed
/// ("V2 deflate") encoding, the format `HistogramLogReader` and friends read.
pub struct HistEncoder {
    ser: V2DeflateSerializer,
    buf: Vec<u8>,
}

impl Default for HistEncoder {
    fn default() -> Self {
        HistEncoder::new()
    }
}

/// A fresh encoder: an encoder holds only reusable buffers.
impl Clone for HistEncoder {
    fn clone(&self) -> Self {
        HistEncoder::new()
    }
}

impl HistEncoder {
    pub fn new() -> Self {
        HistEncoder {
            ser: V2DeflateSerializer::new(),
            buf: Vec::new(),
        }
    }

    /// The base64 text of `h`, as `intervals.jsonl` holds it (`HISTFAAA...`).
    pub fn encode(&mut self, h: &Hist) -> String {
        self.buf.clear();
        self.ser
            .serialize(h, &mut self.buf)
            .expect("serializing into a Vec cannot fail");
        B64.encode(&self.buf)
    }
}

/// Decodes base64 of a V2 or V2-deflate encoded histogram into an auto-resizing histogram.
/// For many histograms keep one [`HistDecoder`] instead (it reuses its buffers).
pub fn decode_hist(text: &str) -> Result<Hist, String> {
    HistDecoder::new().decode_hist(text)
}

/// Statistics of a microsecond histogram, in milliseconds with microsecond precision.
/// All zero when `count` is 0. Percentiles and max are HdrHistogram's "highest equivalent
/// value" (within 0.1% of the recorded value), min its "lowest equivalent value".
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MsStats {
    pub count: u64,
    pub min: f64,
    pub mean: f64,
    pub stdev: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

/// µs → ms, exact to the microsecond.
#[inline]
pub fn us_to_ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// Rounds to 3 decimals (a microsecond when the unit is ms).
#[inline]
pub fn round3(x: f64) -> f64 {
    if x.is_finite() {
        (x * 1000.0).round() / 1000.0
    } else {
        0.0
    }
}

impl MsStats {
    /// Statistics of a histogram of microsecond values.
    pub fn from_hist(h: &Hist) -> MsStats {
        if h.is_empty() {
            return MsStats::default();
        }
        let q = |q: f64| us_to_ms(h.value_at_quantile(q));
        MsStats {
            count: h.len(),
            min: us_to_ms(h.min()),
            mean: round3(h.mean() / 1000.0),
            stdev: round3(h.stdev() / 1000.0),
            p50: q(0.50),
            p90: q(0.90),
            p95: q(0.95),
            p99: q(0.99),
            p999: q(0.999),
            max: us_to_ms(h.max()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip() {
        let mut h = new_hist();
        for v in [0, 1, 5, 999, 12_345, 2_000_000, MAX_VALUE_US] {
            h.record(v).unwrap();
        }
        let text = HistEncoder::new().encode(&h);
        assert!(text.starts_with("HISTFAAA"));
        let back = decode_hist(&text).unwrap();
        assert_eq!(back, h);
        assert!(back.is_auto_resize());
        assert!(decode_hist("not base64!").is_err());
        assert!(decode_hist("AAAA").is_err());
    }

    #[test]
    fn stats_in_ms() {
        let mut h = new_hist();
        for v in 1..=1000u64 {
            h.record(v).unwrap();
        }
        let s = MsStats::from_hist(&h);
        assert_eq!(s.count, 1000);
        assert_eq!(s.min, 0.001);
        assert_eq!(s.p50, 0.5);
        assert_eq!(s.max, 1.0);
        assert!((s.mean - 0.5005).abs() <= 0.0005); // 500.5 µs rounded to the µs
        assert_eq!(MsStats::from_hist(&new_hist()), MsStats::default());
    }
}
