//! Splits a pasted command line into words as bash would: single quotes, double quotes (with
//! `\"`, `\\`, `\$`, `` \` `` escapes), `$'...'` ANSI-C quotes (Chrome's "Copy as cURL (bash)"),
//! backslash escapes and backslash-newline continuations. No expansion: `$VAR` stays as text.

/// The words of `line`, or where a quote is left open.
pub fn split(line: &str) -> Result<Vec<String>, String> {
    let chars: Vec<char> = line.chars().collect();
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\n' | '\r' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                i += 1;
            }
            '\\' => {
                match chars.get(i + 1) {
                    Some('\n') => {}
                    Some('\r') if chars.get(i + 2) == Some(&'\n') => i += 1,
                    Some(&n) => {
                        word.push(n);
                        in_word = true;
                    }
                    None => {}
                }
                i += 2;
            }
            '\'' => {
                let end =
                    find(&chars, i + 1, '\'').ok_or_else(|| open_quote(line, &chars, i, "'"))?;
                word.extend(&chars[i + 1..end]);
                in_word = true;
                i = end + 1;
            }
            '$' if chars.get(i + 1) == Some(&'\'') => {
                i = ansi_c(&chars, i + 2, &mut word)
                    .ok_or_else(|| open_quote(line, &chars, i, "$'"))?;
                in_word = true;
            }
            '"' => {
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err(open_quote(line, &chars, i, "\"")),
                        Some('"') => break,
                        Some('\\') if matches!(chars.get(i + 1), Some('"' | '\\' | '$' | '`')) => {
                            word.push(chars[i + 1]);
                            i += 2;
                        }
                        Some('\\') if chars.get(i + 1) == Some(&'\n') => i += 2,
                        Some(&c) => {
                            word.push(c);
                            i += 1;
                        }
                    }
                }
                in_word = true;
                i += 1;
            }
            _ => {
                word.push(c);
                in_word = true;
                i += 1;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

fn find(chars: &[char], from: usize, c: char) -> Option<usize> {
    (from..chars.len()).find(|&i| chars[i] == c)
}

fn open_quote(line: &str, chars: &[char], at: usize, quote: &str) -> String {
    let before: String = chars[..at.min(chars.len())].iter().collect();
    let line_no = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    let _ = line;
    format!("the quote {quote} opened at line {line_no}, column {col} is never closed")
}

/// Reads a `$'...'` body from `i`; returns the index after its closing quote.
fn ansi_c(chars: &[char], mut i: usize, out: &mut String) -> Option<usize> {
    loop {
        match *chars.get(i)? {
            '\'' => return Some(i + 1),
            '\\' => {
                let n = *chars.get(i + 1)?;
                i += 2;
                match n {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    'e' | 'E' => out.push('\u{1b}'),
                    'a' => out.push('\u{7}'),
                    'b' => out.push('\u{8}'),
                    'f' => out.push('\u{c}'),
                    'v' => out.push('\u{b}'),
                    'x' | 'u' | 'U' => {
                        let max = match n {
                            'x' => 2,
                            'u' => 4,
                            _ => 8,
                        };
                        let digits: String = chars[i..]
                            .iter()
                            .take(max)
                            .take_while(|c| c.is_ascii_hexdigit())
                            .collect();
                        i += digits.len();
                        let code = u32::from_str_radix(&digits, 16).ok()?;
                        out.push(char::from_u32(code)?);
                    }
                    '0'..='7' => {
                        let digits: String = std::iter::once(n)
                            .chain(
                                chars[i..]
                                    .iter()
                                    .copied()
                                    .take(2)
                                    .take_while(|c| ('0'..='7').contains(c)),
                            )
                            .collect();
                        i += digits.len() - 1;
                        out.push(char::from_u32(u32::from_str_radix(&digits, 8).ok()?)?);
                    }
                    other => out.push(other),
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn quotes_escapes_and_continuations_split_as_bash_does() {
        let words = split("curl 'http://h/a b' \\\n  -H \"X-A: \\\"q\\\" \\$x\" \\\n  --data-raw $'{\"k\":\"v\\u00e9\\n\"}' it\\ s").unwrap();
        assert_eq!(
            words,
            [
                "curl",
                "http://h/a b",
                "-H",
                "X-A: \"q\" $x",
                "--data-raw",
                "{\"k\":\"vé\n\"}",
                "it s"
            ]
        );
        assert_eq!(split("a''b \"\" c").unwrap(), ["ab", "", "c"]);
    }

    #[test]
    fn an_open_quote_names_its_position() {
        let e = split("curl -H 'X: y\n -d x").unwrap_err();
        assert!(e.contains("line 1, column 9"), "{e}");
    }
}
