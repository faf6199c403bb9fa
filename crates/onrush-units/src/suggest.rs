//! The words a plan's messages use to say what was expected: "did you mean `x`?" and
//! "`a`, `b` or `c`".

/// "did you mean `x`?" for a close misspelling among `candidates`.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let lower = word.to_ascii_lowercase();
    let mut best: Option<((usize, usize), &str)> = None;
    for c in candidates {
        let d = strsim::damerau_levenshtein(&lower, c);
        let limit = match c.len() {
            0..=3 => 1,
            4..=6 => 2,
            _ => 3,
        };
        let close = d <= limit
            || strsim::jaro_winkler(&lower, c) >= 0.9
            || (lower.len() >= 3 && c.starts_with(&lower));
        // Fewest edits first, then the candidate closest in length.
        let rank = (d, c.len().abs_diff(lower.len()));
        if close && !matches!(best, Some((r, _)) if r <= rank) {
            best = Some((rank, c));
        }
    }
    best.map(|(_, c)| c)
}

/// "`a`, `b` or `c`"
pub fn one_of(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("`{s}`")).collect();
    match quoted.len() {
        0 => String::new(),
        1 => quoted[0].clone(),
        n => format!("{} or {}", quoted[..n - 1].join(", "), quoted[n - 1]),
    }
}
