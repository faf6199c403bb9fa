//! The histograms of the result files: their type, their encoding in `intervals.jsonl`, and
//! the statistics `summary.json` shows of them.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use hdrhistogram::serialization::{Serializer, V2Serializer};
use hdrhistogram::Histogram;
use miniz_oxide::deflate::core::{
    compress, create_comp_flags_from_zip_params, CompressorOxide, TDEFLFlush, TDEFLStatus,
};
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
///
/// hdrhistogram's own `V2DeflateSerializer` builds a zlib compressor per histogram at the default
/// level (its ~160 KiB of tables allocated and zeroed each time) and spends most of an encoding in
/// lazy matching. This one keeps one compressor, reset between histograms, at the fastest level
/// (greedy matching): ~1/3 of the instructions for a slightly longer text (callgrind,
/// docs/benchmarks.md, "Keep-alive instructions per request against wrk"). Any zlib stream is
/// valid V2 deflate; every reader decodes it the same.
///
/// It also remembers its last histogram's serialized bytes and text: a step's second often
/// has the same latency, service-time and TTFB histograms (no queueing before the request, a
/// response read in one piece), and encoding the same bytes again gives the same text. A
/// byte-for-byte compare of the serialized form (~1-2 KiB, a `memcmp`) decides it, so the text
/// is the one compressing would give; it saves two of a keep-alive step's three compressions
/// a second (~1.2 M instructions a second under callgrind, docs/benchmarks.md).
pub struct HistEncoder {
    ser: V2Serializer,
    raw: Vec<u8>,
    buf: Vec<u8>,
    zlib: Box<CompressorOxide>,
    /// The serialized bytes of the last histogram encoded, and its text.
    last_raw: Vec<u8>,
    last_text: String,
}

/// The cookie of a V2-deflate histogram (hdrhistogram keeps its constant private).
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;

/// Greedy matching, one probe: miniz_oxide's fastest level that still compresses.
const ZLIB_LEVEL: i32 = 1;

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
        // window_bits > 0: with the zlib header and Adler-32 trailer.
        let flags = create_comp_flags_from_zip_params(ZLIB_LEVEL, 15, 0);
        HistEncoder {
            ser: V2Serializer::new(),
            raw: Vec::new(),
            buf: Vec::new(),
            zlib: Box::new(CompressorOxide::new(flags)),
            last_raw: Vec::new(),
            last_text: String::new(),
        }
    }

    /// The base64 text of `h`, as `intervals.jsonl` holds it (`HISTFAAA...`).
    pub fn encode(&mut self, h: &Hist) -> String {
        self.raw.clear();
        self.ser
            .serialize(h, &mut self.raw)
            .expect("serializing into a Vec cannot fail");
        if !self.last_text.is_empty() && self.raw == self.last_raw {
            return self.last_text.clone();
        }
        // Cookie, then the compressed length (filled in below), then the zlib stream.
        self.buf.clear();
        self.buf
            .extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
        self.buf.extend_from_slice(&[0; 4]);
        self.zlib.reset();
        let mut input = &self.raw[..];
        let mut at = self.buf.len();
        self.buf.resize(at + (input.len() / 2).max(64), 0);
        loop {
            let (status, read, written) = compress(
                &mut self.zlib,
                input,
                &mut self.buf[at..],
                TDEFLFlush::Finish,
            );
            at += written;
            input = &input[read..];
            match status {
                TDEFLStatus::Done => break,
                TDEFLStatus::Okay => {
                    let len = self.buf.len();
                    self.buf.resize(len * 2, 0);
                }
                _ => unreachable!("compressing into a buffer with room cannot fail"),
            }
        }
        self.buf.truncate(at);
        let compressed = (at - 8) as u32;
        self.buf[4..8].copy_from_slice(&compressed.to_be_bytes());
        let text = B64.encode(&self.buf);
        std::mem::swap(&mut self.raw, &mut self.last_raw);
        self.last_text.clone_from(&text);
        text
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
        // One walk of the counts for the five percentiles (`value_at_quantiles`, the same values
        // as `value_at_quantile` each) and one of the recorded values for mean and stdev,
        // instead of `mean()` and `stdev()` (which walks twice) through hdrhistogram's iterator:
        // the same arithmetic in the same order, so the same figures to the last bit.
        let mut p = [0u64; 5];
        for (slot, v) in p
            .iter_mut()
            .zip(h.value_at_quantiles([0.50, 0.90, 0.95, 0.99, 0.999]))
        {
            *slot = v;
        }
        let (mean, stdev) = mean_stdev(h);
        MsStats {
            count: h.len(),
            min: us_to_ms(h.min()),
            mean: round3(mean / 1000.0),
            stdev: round3(stdev / 1000.0),
            p50: us_to_ms(p[0]),
            p90: us_to_ms(p[1]),
            p95: us_to_ms(p[2]),
            p99: us_to_ms(p[3]),
            p999: us_to_ms(p[4]),
            max: us_to_ms(h.max()),
        }
    }
}

/// `(h.mean(), h.stdev())`, computed as hdrhistogram computes them (same order of operations),
/// with one walk of the histogram instead of three. `h` is not empty.
fn mean_stdev(h: &Hist) -> (f64, f64) {
    let total = h.len() as f64;
    let mut mean = 0.0_f64;
    // The recorded values (median equivalents) and their counts: a few hundred at most for
    // usual latencies, kept so that the second sum needs no second walk.
    let mut points = Vec::with_capacity(64);
    for v in h.iter_recorded() {
        let value = h.median_equivalent(v.value_iterated_to()) as f64;
        let count = v.count_at_value() as f64;
        mean += value * count / total;
        points.push((value, count));
    }
    let deviations = points.iter().fold(0.0_f64, |sum, &(value, count)| {
        let dev = value - mean;
        sum + (dev * dev) * count
    });
    (mean, (deviations / total).sqrt())
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

    /// The remembered last text is given back only for the same histogram: a reused encoder
    /// writes, for every histogram of a sequence with repeats, what a fresh one writes.
    #[test]
    fn a_reused_encoder_writes_what_a_fresh_one_writes() {
        let hist = |values: &[u64]| {
            let mut h = new_hist();
            values.iter().for_each(|&v| h.record(v).unwrap());
            h
        };
        let a = hist(&[100, 250, 250, 4_000]);
        let b = hist(&[100, 250, 4_000]);
        let mut c = hist(&[100, 250, 250, 4_000]);
        c.auto(true);
        c.record(5_000_000).unwrap();
        let sequence = [&a, &a, &b, &a, &c, &c, &new_hist(), &a];
        let mut reused = HistEncoder::new();
        let mut texts = Vec::new();
        for h in sequence {
            let text = reused.encode(h);
            assert_eq!(text, HistEncoder::new().encode(h));
            assert_eq!(&decode_hist(&text).unwrap(), h);
            texts.push(text);
        }
        assert_eq!(texts[0], texts[1]);
        assert_ne!(texts[1], texts[2], "one count apart");
        assert_ne!(texts[3], texts[4]);
    }

    #[test]
    fn stats_are_hdrhistograms_to_the_bit() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for n in [1u64, 2, 7, 1000, 20_000] {
            let mut h = new_hist();
            for _ in 0..n {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                // Mostly small, with a long tail: what latencies look like.
                let v = (seed % 1000) << (seed >> 60);
                h.record(v).unwrap();
            }
            let s = MsStats::from_hist(&h);
            assert_eq!(s.mean, round3(h.mean() / 1000.0), "{n}");
            assert_eq!(s.stdev, round3(h.stdev() / 1000.0), "{n}");
            let (mean, stdev) = mean_stdev(&h);
            assert_eq!(mean.to_bits(), h.mean().to_bits(), "{n}");
            assert_eq!(stdev.to_bits(), h.stdev().to_bits(), "{n}");
            for (q, got) in [
                (0.5, s.p50),
                (0.9, s.p90),
                (0.95, s.p95),
                (0.99, s.p99),
                (0.999, s.p999),
            ] {
                assert_eq!(got, us_to_ms(h.value_at_quantile(q)), "{n} {q}");
            }
        }
    }

    #[test]
    fn the_encoder_is_reusable_and_its_text_decodes_with_hdrhistogram() {
        use hdrhistogram::serialization::Deserializer;
        let mut enc = HistEncoder::new();
        for top in [10u64, 5_000, 3_000_000] {
            let mut h = new_hist();
            for v in 0..2_000 {
                h.record(v * top / 2_000).unwrap();
            }
            let text = enc.encode(&h);
            assert!(text.starts_with("HISTFAAA"));
            assert_eq!(decode_hist(&text).unwrap(), h);
            let bytes = B64.decode(&text).unwrap();
            let back: Hist = Deserializer::new().deserialize(&mut &bytes[..]).unwrap();
            assert_eq!(back, h);
        }
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
