//! The one decoder of the histograms in `intervals.jsonl`: HdrHistogram V2 (and V2-deflate)
//! base64 text.
//!
//! Why not `hdrhistogram`'s own deserializer: an interval histogram keeps the range its
//! worker's histogram had grown to (often ~110 KB of counters), and the zlib reader allocates
//! its own buffers, which made a 1-hour, 20-step file take ~3 s to read. [`HistDecoder`] reuses
//! its buffers and yields only the non-zero `(index, count)` pairs in the standard layout of
//! onrush (3 significant digits, 1 µs unit); [`HistDecoder::decode_hist`] turns them into a
//! [`Hist`] for those who add and re-encode histograms (merge, thresholds). Quantiles follow
//! HdrHistogram's `value_at_quantile` exactly (tests compare both).

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use miniz_oxide::inflate::core::inflate_flags::{
    TINFL_FLAG_PARSE_ZLIB_HEADER, TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF,
};
use miniz_oxide::inflate::core::{decompress, DecompressorOxide};
use miniz_oxide::inflate::TINFLStatus;

use crate::hist::{new_hist, Hist, SIGNIFICANT_DIGITS};

const V2_COOKIE: u32 = 0x1c84_9313;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
const HEADER: usize = 40;
/// Decompressed size limit (a 1-hour, 3-digit histogram needs ~110 KB).
const MAX_RAW: usize = 64 << 20;

/// Bucket layout of a histogram: the parts of HdrHistogram's arithmetic that map an index to a
/// value and back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    unit_magnitude: u32,
    half_mag: u32,
}

/// onrush's histograms: 3 significant digits, lowest discernible value 1 (µs).
const STD: Layout = Layout {
    unit_magnitude: 0,
    half_mag: 10,
};

impl Layout {
    fn new(digits: u32, low: u64) -> Result<Layout, String> {
        if digits > 5 || low == 0 {
            return Err(format!(
                "unsupported histogram layout ({digits} digits, lowest {low})"
            ));
        }
        let largest = 2 * 10u64.pow(digits);
        let count_mag = 64 - (largest - 1).leading_zeros(); // ceil(log2(largest))
        let layout = Layout {
            unit_magnitude: 63 - low.leading_zeros(),
            half_mag: count_mag.max(1) - 1,
        };
        // HdrHistogram's own limit: the arithmetic below needs the first bucket to fit in 63
        // bits (a huge lowest value with many digits would underflow `bucket_for`).
        if layout.unit_magnitude + layout.half_mag + 1 > 63 {
            return Err(format!(
                "unsupported histogram layout ({digits} digits, lowest {low})"
            ));
        }
        Ok(layout)
    }

    fn bucket_for(&self, value: u64) -> u32 {
        let mask = ((1u64 << (self.half_mag + 1)) - 1) << self.unit_magnitude;
        (64 - self.unit_magnitude - self.half_mag - 1) - (value | mask).leading_zeros()
    }

    fn index_for(&self, value: u64) -> usize {
        let bucket = self.bucket_for(value);
        let sub = (value >> (bucket + self.unit_magnitude)) as i64;
        (((i64::from(bucket) + 1) << self.half_mag) + sub - (1i64 << self.half_mag)) as usize
    }

    /// Lowest value of the bucket at `index`.
    fn value_for(&self, index: usize) -> u64 {
        let half = 1usize << self.half_mag;
        let mut bucket = (index >> self.half_mag) as i64 - 1;
        let mut sub = ((index & (half - 1)) + half) as u64;
        if bucket < 0 {
            sub -= half as u64;
            bucket = 0;
        }
        sub << (bucket as u32 + self.unit_magnitude)
    }

    /// Highest value of the bucket at `index` (HdrHistogram's "highest equivalent value").
    fn highest_for(&self, index: usize) -> u64 {
        let v = self.value_for(index);
        let bucket = self.bucket_for(v);
        let sub = v >> (bucket + self.unit_magnitude);
        let shift = if sub >= 1 << (self.half_mag + 1) {
            1
        } else {
            0
        };
        v + (1u64 << (self.unit_magnitude + bucket + shift)) - 1
    }
}

/// Lowest value (µs) of the bucket at `index` of the standard layout.
pub fn bucket_low_us(index: usize) -> u64 {
    STD.value_for(index)
}

/// Highest value (µs) of the bucket at `index` of the standard layout (HdrHistogram's
/// "highest equivalent value", what percentiles report).
pub fn bucket_high_us(index: usize) -> u64 {
    STD.highest_for(index)
}

/// A histogram as its non-zero buckets: `(index, count)` pairs of the standard layout, by
/// increasing index.
pub type Sparse = Vec<(u32, u64)>;

/// Reusable decoder of base64 HdrHistogram V2 / V2-deflate text: keep one per thread and call
/// it for every histogram of a file.
pub struct HistDecoder {
    inflate: Box<DecompressorOxide>,
    bytes: Vec<u8>,
    raw: Vec<u8>,
    sparse: Sparse,
    /// `highest_trackable_value` of the last histogram decoded (its header).
    highest: u64,
}

impl Default for HistDecoder {
    fn default() -> Self {
        HistDecoder::new()
    }
}

impl HistDecoder {
    pub fn new() -> HistDecoder {
        HistDecoder {
            inflate: Box::default(),
            bytes: Vec::new(),
            raw: Vec::new(),
            sparse: Vec::new(),
            highest: 0,
        }
    }

    /// Decodes `text` into a full histogram (auto-resizing, as wide as the one encoded), equal
    /// to what `hdrhistogram`'s deserializer returns for onrush's histograms.
    pub fn decode_hist(&mut self, text: &str) -> Result<Hist, String> {
        let mut sparse = std::mem::take(&mut self.sparse);
        let res = self.decode(text, &mut sparse).map(|()| {
            // As wide as the writer's histogram, so that `==` with it holds.
            let mut h = hdrhistogram::Histogram::new_with_bounds(
                1,
                self.highest.max(2),
                SIGNIFICANT_DIGITS,
            )
            .unwrap_or_else(|_| new_hist());
            h.auto(true);
            for &(i, c) in &sparse {
                h.record_n(STD.value_for(i as usize), c)
                    .expect("an auto-resizing histogram accepts every value");
            }
            h
        });
        self.sparse = sparse;
        res
    }

    /// Decodes `text` into `out` (cleared first): the non-zero `(index, count)` pairs in the
    /// standard layout, by increasing index. Errors: `invalid base64: ...` or `invalid
    /// HdrHistogram V2 encoding: ...`.
    pub fn decode(&mut self, text: &str, out: &mut Sparse) -> Result<(), String> {
        out.clear();
        self.bytes.clear();
        B64.decode_vec(text.trim(), &mut self.bytes)
            .map_err(|e| format!("invalid base64: {e}"))?;
        let bad = |what: &str| format!("invalid HdrHistogram V2 encoding: {what}");
        let be32 = |b: &[u8], at: usize| -> Option<u32> {
            Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
        };
        let v2: &[u8] = match be32(&self.bytes, 0) {
            Some(V2_COOKIE) => &self.bytes,
            Some(V2_COMPRESSED_COOKIE) => {
                let len = be32(&self.bytes, 4).ok_or_else(|| bad("truncated"))? as usize;
                let input = self.bytes.get(8..8 + len).ok_or_else(|| bad("truncated"))?;
                let raw = &mut self.raw;
                raw.resize(raw.capacity(), 0); // reuse all of it; stale bytes are overwritten
                inflate(&mut self.inflate, input, raw).map_err(|e| bad(&e))?;
                if be32(&self.raw, 0) != Some(V2_COOKIE) {
                    return Err(bad("InvalidCookie"));
                }
                &self.raw
            }
            _ => return Err(bad("InvalidCookie")),
        };
        if v2.len() < HEADER {
            return Err(bad("truncated header"));
        }
        let be64 = |at: usize| u64::from_be_bytes(v2[at..at + 8].try_into().expect("8 bytes"));
        let payload_len = be32(v2, 4).expect("in header") as usize;
        if be32(v2, 8) != Some(0) || f64::from_bits(be64(32)) != 1.0 {
            return Err(bad("UnsupportedFeature"));
        }
        let layout =
            Layout::new(be32(v2, 12).expect("in header"), be64(16)).map_err(|e| bad(&e))?;
        self.highest = if layout == STD { be64(24) } else { 0 };
        let payload = v2
            .get(HEADER..HEADER + payload_len)
            .ok_or_else(|| bad("truncated payload"))?;
        // The index of the largest value a histogram can hold (i64::MAX): beyond it, a count
        // has no value (`value_for` would shift past 64 bits) and would make callers allocate
        // a counter per index up to it (`Dense`: 16 GiB for an index of 2^31). Found by
        // fuzzing (crates/onrush-fuzz).
        let max_index = layout.index_for(i64::MAX as u64) as u64;
        let mut index: u64 = 0;
        let mut at = 0;
        while at < payload.len() {
            let (zz, used) = varint(&payload[at..]).ok_or_else(|| bad("truncated varint"))?;
            at += used;
            let n = ((zz >> 1) as i64) ^ -((zz & 1) as i64);
            if n < 0 {
                index = index.saturating_add(n.unsigned_abs());
                continue;
            }
            if n > 0 {
                if index > max_index {
                    return Err(bad("index out of range"));
                }
                let i = if layout == STD {
                    index as usize
                } else {
                    STD.index_for(layout.value_for(index as usize))
                };
                match out.last_mut() {
                    Some((last, c)) if *last as usize == i => *c = c.saturating_add(n as u64),
                    _ => out.push((i as u32, n as u64)),
                }
            }
            index += 1;
        }
        Ok(())
    }
}

/// Inflates a zlib stream into `raw` (its length set to the output's), reusing the state and
/// the buffer.
fn inflate(
    state: &mut DecompressorOxide,
    mut input: &[u8],
    raw: &mut Vec<u8>,
) -> Result<(), String> {
    let flags = TINFL_FLAG_PARSE_ZLIB_HEADER | TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
    state.init();
    if raw.len() < 4096 {
        raw.resize(4096, 0);
    }
    let mut pos = 0;
    loop {
        let (status, used, written) = decompress(state, input, raw, pos, flags);
        pos += written;
        input = &input[used..];
        match status {
            TINFLStatus::Done => {
                raw.truncate(pos);
                return Ok(());
            }
            TINFLStatus::HasMoreOutput if raw.len() < MAX_RAW => raw.resize(raw.len() * 2, 0),
            TINFLStatus::HasMoreOutput => return Err("deflate: oversized stream".into()),
            s => return Err(format!("deflate: {s:?}")),
        }
    }
}

/// HdrHistogram's LEB128 variant: at most 9 bytes, the 9th carrying 8 bits.
fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut v: u64 = 0;
    for i in 0..9 {
        let byte = *b.get(i)?;
        if i == 8 {
            return Some((v | (u64::from(byte) << 56), 9));
        }
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// Values (µs) at sorted quantiles over `(index, count)` pairs by increasing index holding
/// `total` values, as HdrHistogram's `value_at_quantile`: the highest equivalent value of the
/// bucket where the count reaches `max(1, ceil(q * total))` (the lowest for q = 0).
pub fn quantiles(entries: impl Iterator<Item = (usize, u64)>, total: u64, qs: &[f64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(qs.len());
    if total == 0 {
        out.resize(qs.len(), 0);
        return out;
    }
    let mut entries = entries.peekable();
    let (mut cum, mut at) = (0u64, 0usize);
    for &q in qs {
        let target = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        while cum < target {
            match entries.next() {
                Some((i, c)) => {
                    cum += c;
                    at = i;
                }
                None => break,
            }
        }
        out.push(if q == 0.0 {
            STD.value_for(at)
        } else {
            STD.highest_for(at)
        });
    }
    out
}

/// Counts by index in the standard layout: an accumulator of many histograms, cheaper to add
/// into than a [`Hist`].
#[derive(Clone, Debug, Default)]
pub struct Dense {
    counts: Vec<u64>,
    total: u64,
}

impl Dense {
    pub fn add_sparse(&mut self, s: &[(u32, u64)]) {
        if let Some(&(last, _)) = s.last() {
            if self.counts.len() <= last as usize {
                self.counts.resize(last as usize + 1, 0);
            }
        }
        for &(i, c) in s {
            self.counts[i as usize] += c;
            self.total += c;
        }
    }

    pub fn add(&mut self, o: &Dense) {
        if self.counts.len() < o.counts.len() {
            self.counts.resize(o.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.total += o.total;
    }

    pub fn clear(&mut self) {
        self.counts.iter_mut().for_each(|c| *c = 0);
        self.total = 0;
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    /// Values (µs) at sorted quantiles (all 0 when empty).
    pub fn quantiles(&self, qs: &[f64]) -> Vec<u64> {
        let nz = self
            .counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| (i, c));
        quantiles(nz, self.total, qs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::Deserializer;

    /// An uncompressed V2 histogram: `digits`, lowest value 1, the zigzag varints `payload`.
    fn v2(digits: u32, payload: &[u8]) -> String {
        let mut b = Vec::new();
        b.extend_from_slice(&V2_COOKIE.to_be_bytes());
        b.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        b.extend_from_slice(&0u32.to_be_bytes());
        b.extend_from_slice(&digits.to_be_bytes());
        b.extend_from_slice(&1u64.to_be_bytes());
        b.extend_from_slice(&1000u64.to_be_bytes());
        b.extend_from_slice(&1.0f64.to_bits().to_be_bytes());
        b.extend_from_slice(payload);
        B64.encode(b)
    }

    #[test]
    fn an_index_beyond_the_largest_value_is_an_error_not_a_huge_bucket() {
        let mut d = HistDecoder::new();
        let mut out = Vec::new();
        // Skip 2^20 counters (zigzag of -2^20: 2^21 - 1), then a count of 1: in a 1-digit
        // layout that index's value needs a shift of 65,535 bits.
        let far = v2(1, &[0xff, 0xff, 0x7f, 0x02]);
        let e = d.decode(&far, &mut out).unwrap_err();
        assert!(e.contains("index out of range"), "{e}");
        // In the standard layout too (an index of 2^30 would be a 8 GiB `Dense`).
        let far = v2(3, &[0xff, 0xff, 0xff, 0xff, 0x07, 0x02]);
        let e = d.decode(&far, &mut out).unwrap_err();
        assert!(e.contains("index out of range"), "{e}");
        // Two skips of 2^62 each, then a count: no overflow of the index either.
        let skip = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f];
        let far = v2(3, &[&skip[..], &skip[..], &skip[..], &[0x02]].concat());
        assert!(d.decode(&far, &mut out).is_err());
        // The last index that has a value decodes.
        let mut near = vec![];
        let max = STD.index_for(i64::MAX as u64) as u64;
        let mut zz = (max << 1) - 1; // zigzag of -max
        while zz >= 0x80 {
            near.push(zz as u8 | 0x80);
            zz >>= 7;
        }
        near.extend_from_slice(&[zz as u8, 0x02]);
        d.decode(&v2(3, &near), &mut out).unwrap();
        assert_eq!(out, [(max as u32, 1)]);
        d.decode_hist(&v2(3, &near)).unwrap();
    }

    #[test]
    fn a_layout_hdrhistogram_cannot_represent_is_refused() {
        let mut b = B64.decode(v2(5, &[0x02])).unwrap();
        b[16..24].copy_from_slice(&(1u64 << 62).to_be_bytes());
        let e = HistDecoder::new()
            .decode(&B64.encode(b), &mut Vec::new())
            .unwrap_err();
        assert!(e.contains("unsupported histogram layout"), "{e}");
    }

    /// `hdrhistogram`'s own decoding, to compare with.
    fn decode_hist(text: &str) -> Hist {
        let bytes = B64.decode(text).unwrap();
        Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .unwrap()
    }

    fn encode(h: &Hist, deflate: bool) -> String {
        use hdrhistogram::serialization::{Serializer, V2DeflateSerializer, V2Serializer};
        let mut buf = Vec::new();
        if deflate {
            V2DeflateSerializer::new().serialize(h, &mut buf).unwrap();
        } else {
            V2Serializer::new().serialize(h, &mut buf).unwrap();
        }
        B64.encode(buf)
    }

    fn sample(seed: u64, n: usize, scale: f64) -> Hist {
        let mut h = new_hist();
        let mut x = seed;
        for _ in 0..n {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            h.record((scale * (1.0 + 50.0 * u.powi(8))) as u64).unwrap();
        }
        h
    }

    const QS: [f64; 9] = [0.0, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999, 0.999_99, 1.0];

    #[test]
    fn agrees_with_hdrhistogram() {
        let mut d = HistDecoder::new();
        let mut sparse = Vec::new();
        for (seed, n, scale) in [
            (1, 1, 2150.0),
            (2, 10, 3.0),
            (3, 1000, 900.0),
            (4, 20_000, 1e5),
            (5, 300, 5e8),
        ] {
            let h = sample(seed, n, scale);
            for deflate in [true, false] {
                let text = encode(&h, deflate);
                d.decode(&text, &mut sparse).unwrap();
                let back = decode_hist(&text);
                assert_eq!(d.decode_hist(&text).unwrap(), back, "seed {seed}");
                let mine = quantiles(
                    sparse.iter().map(|&(i, c)| (i as usize, c)),
                    back.len(),
                    &QS,
                );
                let theirs: Vec<u64> = QS.iter().map(|&q| back.value_at_quantile(q)).collect();
                assert_eq!(mine, theirs, "seed {seed}");
                assert_eq!(*mine.last().unwrap(), back.max());
                assert_eq!(mine[0], back.min());
                let mut dense = Dense::default();
                dense.add_sparse(&sparse);
                dense.add_sparse(&sparse);
                let mut twice = back.clone();
                twice.add(&back).unwrap();
                let theirs: Vec<u64> = QS.iter().map(|&q| twice.value_at_quantile(q)).collect();
                assert_eq!(dense.quantiles(&QS), theirs);
            }
        }
        assert_eq!(quantiles(std::iter::empty(), 0, &[0.5]), vec![0]);
    }

    #[test]
    fn other_layouts_map_onto_the_standard_one() {
        let mut h: Hist = hdrhistogram::Histogram::new_with_bounds(1000, 10_000_000, 2).unwrap();
        for v in [1500u64, 2_000_000, 2_000_100] {
            h.record(v).unwrap();
        }
        let mut sparse = Vec::new();
        HistDecoder::new()
            .decode(&encode(&h, true), &mut sparse)
            .unwrap();
        assert_eq!(sparse.iter().map(|e| e.1).sum::<u64>(), 3);
        assert_eq!(
            STD.value_for(sparse[0].0 as usize),
            STD.value_for(STD.index_for(1024))
        );
        assert_eq!(sparse.len(), 2, "two 2-digit buckets");
    }

    #[test]
    fn bad_input_is_an_error() {
        let mut d = HistDecoder::new();
        let mut s = Vec::new();
        assert!(d
            .decode("not base64!", &mut s)
            .unwrap_err()
            .starts_with("invalid base64"));
        assert!(d
            .decode("AAAA", &mut s)
            .unwrap_err()
            .contains("InvalidCookie"));
        let good = encode(&sample(9, 100, 1000.0), true);
        let cut = &good[..good.len() / 2];
        let cut = &cut[..cut.len() / 4 * 4];
        assert!(d
            .decode(cut, &mut s)
            .unwrap_err()
            .starts_with("invalid HdrHistogram V2 encoding"));
        d.decode(&good, &mut s).unwrap(); // still usable after errors
        assert_eq!(s.iter().map(|e| e.1).sum::<u64>(), 100);
    }
}
