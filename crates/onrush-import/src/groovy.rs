//! JMeter script text (Groovy, BeanShell or JavaScript) → the body of a JavaScript function that
//! runs against the JMeter shim (`vars`, `props`, `log`, `prev`, `ctx`, `AssertionResult`, …,
//! see `convert/script.rs`). The rewriting is light on purpose: simple Groovy is nearly
//! JavaScript (`def` → `let`, typed declarations → `let`, GStrings → template literals, `3L` →
//! `3`, `?:` → `||`, `assert x` → a failure). What would need Java (imports, `new`, Java
//! classes, closures, casts, methods the shim does not have) is refused with a reason, never
//! guessed: the element then stays in the report with its code.
//!
//! String literals and comments are cut out before any rewriting (so that a `java.` or a
//! `new ` inside a string changes nothing) and put back at the end.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use regex::Regex;

/// What a script became.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rewritten {
    /// The JavaScript statements.
    pub js: String,
    /// The variable names it sets with a literal name (`vars.put("token", …)`).
    pub puts: BTreeSet<String>,
    /// It reads or changes the request (`sampler.…`): a `before:` hook.
    pub uses_sampler: bool,
    /// It reads the previous sample (`prev`, `SampleResult` in a post-processor).
    pub uses_prev: bool,
    /// It calls `onrush/crypto` (DigestUtils, HmacUtils).
    pub uses_crypto: bool,
    /// The variable names it reads with a literal name (`vars.get("x")`, `vars["x"]`).
    pub reads: BTreeSet<String>,
}

/// The language family of a script element, from `scriptLanguage` (empty is JMeter's default,
/// Groovy) and its class (BeanShell elements have no language property).
pub(crate) fn family(class: &str, language: &str) -> Result<Family, String> {
    if class.starts_with("BeanShell") {
        return Ok(Family::Groovy);
    }
    match language.trim().to_ascii_lowercase().as_str() {
        "" | "groovy" => Ok(Family::Groovy),
        "javascript" | "nashorn" | "ecmascript" | "rhino" | "js" => Ok(Family::JavaScript),
        other => Err(format!(
            "its language is {other}: only Groovy, BeanShell and JavaScript convert"
        )),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// Groovy and BeanShell (Java-like): rewritten.
    Groovy,
    /// Nashorn/Rhino JavaScript: kept as is, checked for Java.
    JavaScript,
}

/// The methods the shim gives each JMeter object; anything else is refused.
const SHIM: &[(&str, &[&str])] = &[
    (
        "vars",
        &[
            "get",
            "put",
            "getObject",
            "putObject",
            "remove",
            "getIteration",
        ],
    ),
    (
        "props",
        &[
            "get",
            "put",
            "getProperty",
            "setProperty",
            "containsKey",
            "remove",
        ],
    ),
    ("log", &["info", "warn", "error", "debug", "trace"]),
    (
        "prev",
        &[
            "getResponseDataAsString",
            "getResponseCode",
            "getResponseHeaders",
            "isSuccessful",
            "setSuccessful",
            "getURL",
            "getUrlAsString",
            "setResponseData",
            "setResponseCode",
            "setResponseMessage",
            "setResponseCodeOK",
            "setResponseOK",
        ],
    ),
    (
        "sampler",
        &["getUrl", "getMethod", "getPath", "addArgument"],
    ),
    (
        "ctx",
        &[
            "getThreadNum",
            "getVariables",
            "getPreviousResult",
            "getProperties",
        ],
    ),
    (
        "AssertionResult",
        &[
            "setFailure",
            "setFailureMessage",
            "isFailure",
            "getFailureMessage",
            "setError",
            "isError",
        ],
    ),
];

/// Capitalized names the rewritten code may still use (JavaScript's own, and the shim's).
const ALLOWED_CLASSES: &[&str] = &[
    "AssertionResult",
    "SampleResult",
    "Math",
    "JSON",
    "Number",
    "String",
    "Date",
    "NaN",
    "Infinity",
];

fn re(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("a valid expression"))
}

/// A string literal or comment cut out of the code.
enum Lit {
    /// `'…'` or `"…"` without interpolation: kept as written.
    Plain(String),
    /// A GString with `${…}`/`$name`, or a triple-quoted string: its inner text.
    Template(String),
    Comment(String),
}

/// Cuts literals and comments out of `code`, leaving `\u{1}N\u{2}` in their place.
fn cut(code: &str) -> Result<(String, Vec<Lit>), String> {
    let mut out = String::new();
    let mut lits = Vec::new();
    let b = code.as_bytes();
    let mut i = 0;
    let mark = |out: &mut String, lits: &mut Vec<Lit>, lit: Lit| {
        out.push_str(&format!("\u{1}{}\u{2}", lits.len()));
        lits.push(lit);
    };
    while i < b.len() {
        let rest = &code[i..];
        if rest.starts_with("//") {
            let end = rest.find('\n').unwrap_or(rest.len());
            mark(&mut out, &mut lits, Lit::Comment(rest[..end].to_string()));
            i += end;
        } else if let Some(after) = rest.strip_prefix("/*") {
            let end = after
                .find("*/")
                .map(|e| e + 4)
                .ok_or("a comment that never ends (`/*` without `*/`)")?;
            mark(&mut out, &mut lits, Lit::Comment(rest[..end].to_string()));
            i += end;
        } else if rest.starts_with("\"\"\"") || rest.starts_with("'''") {
            let q = &rest[..3];
            let end = rest[3..]
                .find(q)
                .ok_or("a triple-quoted string that never ends")?;
            mark(
                &mut out,
                &mut lits,
                Lit::Template(rest[3..3 + end].to_string()),
            );
            i += end + 6;
        } else if rest.starts_with('"') || rest.starts_with('\'') {
            let q = b[i];
            let mut j = i + 1;
            while j < b.len() && b[j] != q {
                if b[j] == b'\\' {
                    j += 1;
                }
                if b[j.min(b.len() - 1)] == b'\n' {
                    return Err("a string that runs past the end of its line".into());
                }
                j += 1;
            }
            if j >= b.len() {
                return Err("a string that never ends".into());
            }
            let inner = &code[i + 1..j];
            let interpolates = q == b'"' && (inner.contains("${") || has_dollar_name(inner));
            let lit = if interpolates {
                Lit::Template(inner.to_string())
            } else {
                Lit::Plain(code[i..=j].to_string())
            };
            mark(&mut out, &mut lits, lit);
            i = j + 1;
        } else {
            let c = rest.chars().next().expect("not at the end");
            out.push(c);
            i += c.len_utf8();
        }
    }
    Ok((out, lits))
}

/// A Groovy `"… $name …"` (interpolation without braces).
fn has_dollar_name(s: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    re(&RE, r"(^|[^\\])\$[A-Za-z_]").is_match(s)
}

/// Puts the literals back: plain ones as written, GStrings as template literals.
fn paste(code: &str, lits: &[Lit]) -> String {
    static RE: OnceLock<Regex> = OnceLock::new();
    static NAME: OnceLock<Regex> = OnceLock::new();
    let name = re(
        &NAME,
        r"(^|[^\\])\$([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)",
    );
    re(&RE, "\u{1}([0-9]+)\u{2}")
        .replace_all(code, |c: &regex::Captures| {
            let n: usize = c[1].parse().expect("digits");
            match &lits[n] {
                Lit::Plain(s) | Lit::Comment(s) => s.clone(),
                Lit::Template(inner) => {
                    let t = inner.replace('`', "\\`");
                    let t = name.replace_all(&t, "$1$${$2}");
                    format!("`{t}`")
                }
            }
        })
        .into_owned()
}

/// The text of a plain string literal at placeholder `n`, without its quotes.
fn literal(lits: &[Lit], n: &str) -> Option<String> {
    match &lits[n.parse::<usize>().ok()?] {
        Lit::Plain(s) if s.len() >= 2 => Some(s[1..s.len() - 1].to_string()),
        _ => None,
    }
}

/// Rewrites a script's text; `Err` says why it does not convert.
pub(crate) fn rewrite(code: &str, family: Family) -> Result<Rewritten, String> {
    let (mut c, mut lits) = cut(code)?;
    let mut out = Rewritten::default();
    // Imports: only commons-codec's digests (the shim has them); anything else needs Java.
    static IMPORT: OnceLock<Regex> = OnceLock::new();
    let import = re(&IMPORT, r"(?m)^\s*import\s+(static\s+)?([\w.*]+)\s*;?\s*$");
    for m in import.captures_iter(&c) {
        let what = &m[2];
        if !matches!(
            what,
            "org.apache.commons.codec.digest.DigestUtils"
                | "org.apache.commons.codec.digest.HmacUtils"
        ) {
            return Err(format!(
                "it imports `{what}` (Java classes onrush cannot run)"
            ));
        }
    }
    c = import.replace_all(&c, "").into_owned();
    if family == Family::JavaScript {
        for (pat, what) in [
            ("Java.type", "Java.type"),
            ("Packages.", "Packages."),
            ("importPackage", "importPackage"),
            ("importClass", "importClass"),
            ("java.", "java."),
            ("javax.", "javax."),
        ] {
            if c.contains(pat) {
                return Err(format!("it uses Java from JavaScript (`{what}`)"));
            }
        }
    } else {
        c = groovy_to_js(&c, &mut lits)?;
    }
    check_objects(&c, family)?;
    // Literal names `vars.put("x", …)` / `vars["x"] = …`: runtime variables of the plan.
    static PUT: OnceLock<Regex> = OnceLock::new();
    let put = re(
        &PUT,
        "\\bvars\\s*(?:\\.\\s*put(?:Object)?\\s*\\(\\s*\u{1}([0-9]+)\u{2}|\\[\\s*\u{1}([0-9]+)\u{2}\\s*\\]\\s*=[^=])",
    );
    for m in put.captures_iter(&c) {
        let n = m.get(1).or(m.get(2)).map_or("", |g| g.as_str());
        if let Some(name) = literal(&lits, n) {
            out.puts.insert(name);
        }
    }
    static SAMPLER: OnceLock<Regex> = OnceLock::new();
    out.uses_sampler = re(&SAMPLER, r"\bsampler\b").is_match(&c);
    static PREV: OnceLock<Regex> = OnceLock::new();
    out.uses_prev = re(&PREV, r"\b(prev|SampleResult|getPreviousResult)\b").is_match(&c);
    out.uses_crypto = c.contains("crypto.");
    static GET: OnceLock<Regex> = OnceLock::new();
    let get = re(
        &GET,
        "\\bvars\\s*(?:\\.\\s*get(?:Object)?\\s*\\(\\s*|\\[\\s*)\u{1}([0-9]+)\u{2}",
    );
    for m in get.captures_iter(&c) {
        if let Some(name) = literal(&lits, &m[1]) {
            out.reads.insert(name);
        }
    }
    out.js = paste(&c, &lits);
    Ok(out)
}

/// The Groovy (and BeanShell) rewriting; `c` has its literals cut out.
fn groovy_to_js(c: &str, lits: &mut Vec<Lit>) -> Result<String, String> {
    let refuse: &[(&str, &str)] = &[
        (r"\bnew\s+[A-Za-z_]", "it creates Java objects (`new …`)"),
        (
            r"\b(?:java|javax|groovy|org|com|sun|Packages)\.[a-z]",
            "it names Java packages (`java.…`)",
        ),
        (r"->", "it uses a Groovy closure or Java lambda (`->`)"),
        (
            r"\.\s*[A-Za-z_]\w*\s*(?:\([^()]*\))?\s*\{",
            "it passes a Groovy closure to a method (`.each { … }`)",
        ),
        (
            r"\bfor\s*\([^;)]*:",
            "it uses a Java for-each loop (`for (X x : list)`)",
        ),
        (
            r"\(\s*[A-Z][A-Za-z0-9_]*(?:\[\])?\s*\)\s*[A-Za-z_(\u{1}]",
            "it casts to a Java type (`(Type) x`)",
        ),
        (r"=~|==~", "it uses Groovy's regex operators (`=~`)"),
        (
            r"\[\s*:\s*\]|\[\s*\w+\s*:",
            "it uses a Groovy map literal (`[a: 1]`)",
        ),
        (
            r"\bbsh\.",
            "it uses BeanShell's `bsh.args` (the element's parameters)",
        ),
        (
            r"\b(?:args|Parameters)\b",
            "it uses the element's parameters (`args`, `Parameters`)",
        ),
        (r"\bLabel\s*=", "it renames the sample (`Label =`)"),
        (
            r"\bsynchronized\b|\bthrows\b|\binstanceof\b",
            "it uses Java-only syntax",
        ),
    ];
    for (pat, why) in refuse {
        if Regex::new(pat).expect("a valid expression").is_match(c) {
            return Err((*why).to_string());
        }
    }
    let mut c = c.to_string();
    // Statement-level rewrites, one line at a time.
    static ASSERT: OnceLock<Regex> = OnceLock::new();
    static BSH: OnceLock<Regex> = OnceLock::new();
    static PRINTLN: OnceLock<Regex> = OnceLock::new();
    let assert = re(&ASSERT, r"^(\s*)assert\s+(.+?)\s*;?\s*$");
    let bsh = re(
        &BSH,
        r"^(\s*)(IsSuccess|ResponseCode|ResponseMessage|Failure|FailureMessage)\s*=\s*(.+?)\s*;?\s*$",
    );
    let println = re(&PRINTLN, r"^(\s*)println\s*\(?\s*(.*?)\s*\)?\s*;?\s*$");
    let mut lines = Vec::new();
    for line in c.lines() {
        if let Some(m) = assert.captures(line) {
            // The message is a literal of its own, so that nothing below reads its words.
            let shown = paste(&m[2], lits);
            let message = format!("{:?}", format!("Assertion failed: assert {shown}"));
            lines.push(format!(
                "{}if (!({})) {{ AssertionResult.setFailureMessage(\u{1}{}\u{2}); AssertionResult.setFailure(true); return; }}",
                &m[1],
                &m[2],
                lits.len()
            ));
            lits.push(Lit::Plain(message));
        } else if let Some(m) = bsh.captures(line) {
            let call = match &m[2] {
                "IsSuccess" => "SampleResult.setSuccessful",
                "ResponseCode" => "SampleResult.setResponseCode",
                "ResponseMessage" => "SampleResult.setResponseMessage",
                "Failure" => "AssertionResult.setFailure",
                _ => "AssertionResult.setFailureMessage",
            };
            lines.push(format!("{}{call}({});", &m[1], &m[3]));
        } else if let Some(m) = println.captures(line) {
            lines.push(format!("{}log.info({});", &m[1], &m[2]));
        } else {
            lines.push(line.to_string());
        }
    }
    c = lines.join("\n");
    let mut declared: BTreeSet<String> = BTreeSet::new();
    // `def f(a) {` → a function; then typed and `def` declarations → `let`.
    static FUNC: OnceLock<Regex> = OnceLock::new();
    c = re(&FUNC, r"\bdef\s+([A-Za-z_]\w*)\s*\(([^()]*)\)")
        .replace_all(&c, |m: &regex::Captures| {
            // Typed parameters (`String a, int b`) keep their names only.
            let params: Vec<&str> = m[2]
                .split(',')
                .filter_map(|p| p.split_whitespace().last())
                .collect();
            format!("function {}({})", &m[1], params.join(", "))
        })
        .into_owned();
    static DECL: OnceLock<Regex> = OnceLock::new();
    let decl = re(
        &DECL,
        r"(?m)(^|[;{(]|\s)(?:final\s+)?(?:def|var|String|int|long|short|byte|double|float|boolean|char|Integer|Long|Short|Double|Float|Boolean|Object|BigDecimal|BigInteger)(?:\s*<[^>=;]*>)?(?:\[\])?\s+([A-Za-z_]\w*)\s*(=|;|\)|,|$)",
    );
    for m in decl.captures_iter(&c) {
        declared.insert(m[2].to_string());
    }
    c = decl.replace_all(&c, "${1}let $2 $3").into_owned();
    static CATCH: OnceLock<Regex> = OnceLock::new();
    c = re(&CATCH, r"catch\s*\(\s*[\w.|\s]+?\s+([A-Za-z_]\w*)\s*\)")
        .replace_all(&c, "catch ($1)")
        .into_owned();
    static AS: OnceLock<Regex> = OnceLock::new();
    c = re(&AS, r"\s+as\s+String\b")
        .replace_all(&c, "")
        .into_owned();
    static AS_OTHER: OnceLock<Regex> = OnceLock::new();
    if let Some(m) = re(&AS_OTHER, r"\bas\s+([A-Za-z_]\w*)").captures(&c) {
        return Err(format!("it coerces with Groovy's `as {}`", &m[1]));
    }
    static NUM: OnceLock<Regex> = OnceLock::new();
    c = re(&NUM, r"\b([0-9]+(?:\.[0-9]+)?)[lLdDfF]\b")
        .replace_all(&c, "$1")
        .into_owned();
    let calls: &[(&str, &str)] = &[
        ("?:", "||"),
        ("System.currentTimeMillis()", "Date.now()"),
        ("Integer.parseInt(", "jmInt("),
        ("Integer.valueOf(", "jmInt("),
        ("Long.parseLong(", "jmInt("),
        ("Long.valueOf(", "jmInt("),
        ("Double.parseDouble(", "Number("),
        ("Double.valueOf(", "Number("),
        ("Boolean.parseBoolean(", "jmBool("),
        ("String.valueOf(", "String("),
        ("DigestUtils.md5Hex(", "crypto.md5("),
        ("DigestUtils.sha1Hex(", "crypto.sha1("),
        ("DigestUtils.sha256Hex(", "crypto.sha256("),
        ("DigestUtils.sha512Hex(", "crypto.sha512("),
        ("HmacUtils.hmacSha1Hex(", "crypto.hmac('sha1', "),
        ("HmacUtils.hmacSha256Hex(", "crypto.hmac('sha256', "),
        ("HmacUtils.hmacSha512Hex(", "crypto.hmac('sha512', "),
        (".length()", ".length"),
        // Java's replaceAll takes a regular expression, replace a literal (all of them).
        (".replaceAll(", ".jmReplaceAll("),
        (".replace(", ".replaceAll("),
    ];
    for (from, to) in calls {
        c = c.replace(from, to);
    }
    // Capitalized names left are Java classes (or constants the script declared).
    static CLASS: OnceLock<Regex> = OnceLock::new();
    for m in re(&CLASS, r"\b([A-Z][A-Za-z0-9_]*)\b").captures_iter(&c) {
        let name = &m[1];
        if !ALLOWED_CLASSES.contains(&name) && !declared.contains(name) {
            return Err(format!("it uses the Java class `{name}`"));
        }
    }
    Ok(c)
}

/// Refuses calls on the JMeter objects that the shim does not have.
fn check_objects(c: &str, family: Family) -> Result<(), String> {
    static CALL: OnceLock<Regex> = OnceLock::new();
    let call = re(
        &CALL,
        r"\b(vars|props|log|prev|SampleResult|sampler|ctx|AssertionResult)\s*\.\s*([A-Za-z_]\w*)",
    );
    for m in call.captures_iter(c) {
        let (obj, method) = (&m[1], &m[2]);
        let key = if obj == "SampleResult" { "prev" } else { obj };
        let allowed = SHIM
            .iter()
            .find(|(o, _)| *o == key)
            .is_some_and(|(_, ms)| ms.contains(&method));
        if !allowed {
            return Err(format!(
                "it calls `{obj}.{method}`, which the JMeter shim does not have"
            ));
        }
    }
    if family == Family::JavaScript && c.contains("OUT.") {
        return Err("it prints to JMeter's console (`OUT`)".into());
    }
    Ok(())
}
