//! A pasted curl command → one onrush request step (`onrush import curl`), as a new plan or
//! appended to an existing one ([`append`]).
//!
//! The options people paste are understood (`-X`, `-H`, `-d`/`--data-*`, `-F`, `-u`, `-A`,
//! `-e`, `-b`, `-G`, `--compressed`, `-k`, `--cert`/`--key`/`--cacert`, `-L`, `--http2`,
//! `-m`); output options (`-s`, `-o`, `-w`, `-v`…) are ignored; any other option is a warning
//! naming it, never an error.

mod append;
mod shell;

pub use append::append;

use crate::yaml::{self, Y};

/// What `onrush import curl` produces.
#[derive(Debug, Clone)]
pub struct CurlImport {
    /// `scheme://host[:port]` of the URL.
    pub origin: String,
    /// The request step with a path relative to `origin`.
    pub step: Y,
    /// The same step with the absolute URL (for appending to a plan with another target).
    pub step_absolute: Y,
    /// Plan-level `http:` settings the command asks for (`-k`, `-L`, `--compressed`, `--http2`).
    pub http: Y,
    pub warnings: Vec<String>,
}

impl CurlImport {
    /// A whole plan holding the step.
    pub fn plan_yaml(&self, source: &str) -> String {
        let mut plan = Y::map();
        plan.set_c(
            "target",
            Y::s(self.origin.replace("${", "$${")),
            vec![format!("Imported by `onrush import curl` from: {source}")],
        );
        if !self.http.is_empty() {
            plan.set("http", self.http.clone());
        }
        let mut scenario = Y::map();
        scenario.set("name", Y::s("curl"));
        let mut load = Y::map();
        load.set("vus", Y::Raw("1".into()));
        load.set("iterations", Y::Raw("1".into()));
        scenario.set("load", load);
        scenario.set("steps", Y::Seq(vec![(self.step.clone(), Vec::new())]));
        plan.set("scenarios", Y::Seq(vec![(scenario, Vec::new())]));
        yaml::write(&plan)
    }
}

/// Options that only shape curl's own output or behaviour locally: ignored. (Those marked
/// with a value take the next word.)
const IGNORED_FLAGS: [&str; 14] = [
    "-s",
    "--silent",
    "-S",
    "--show-error",
    "-v",
    "--verbose",
    "-i",
    "--include",
    "-f",
    "--fail",
    "--fail-with-body",
    "-#",
    "--progress-bar",
    "--no-progress-meter",
];
const IGNORED_WITH_VALUE: [&str; 6] = [
    "-o",
    "--output",
    "-w",
    "--write-out",
    "--connect-timeout",
    "--retry",
];

/// Parses a curl command: one string (shell quoting understood) or words already split.
pub fn import_curl(words: &[String]) -> Result<CurlImport, String> {
    let words: Vec<String> = if words.len() == 1 {
        shell::split(&words[0])?
    } else {
        words.to_vec()
    };
    let mut args = words.into_iter().peekable();
    if args
        .peek()
        .is_some_and(|w| w == "curl" || w.ends_with("/curl"))
    {
        args.next();
    }
    let mut method: Option<String> = None;
    let mut url: Option<String> = None;
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut data: Vec<String> = Vec::new();
    let mut data_file: Option<String> = None;
    let mut form: Vec<(String, String)> = Vec::new();
    let mut user: Option<String> = None;
    let mut get = false;
    let mut timeout: Option<String> = None;
    let mut http = Y::map();
    let mut tls = Y::map();
    let mut warnings = Vec::new();

    // Split `-XPOST` and `-sSL` into the words curl sees.
    let mut queue: Vec<String> = Vec::new();
    for w in args {
        if w.starts_with('-') && !w.starts_with("--") && w.len() > 2 {
            let flag = &w[..2];
            if takes_value(flag) {
                queue.push(flag.to_string());
                queue.push(w[2..].to_string());
            } else {
                for c in w[1..].chars() {
                    queue.push(format!("-{c}"));
                }
            }
        } else {
            queue.push(w);
        }
    }
    let mut it = queue.into_iter();
    while let Some(w) = it.next() {
        let (name, inline) = match w.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ => (w.clone(), None),
        };
        let mut value = |what: &str| -> Result<String, String> {
            inline
                .clone()
                .or_else(|| it.next())
                .ok_or_else(|| format!("{name} needs a value ({what})"))
        };
        match name.as_str() {
            "-X" | "--request" => method = Some(value("the method")?),
            "-H" | "--header" => {
                let h = value("'Name: value'")?;
                match h.split_once(':') {
                    Some((n, v)) => headers.push((n.trim().to_string(), v.trim().to_string())),
                    None => match h.strip_suffix(';') {
                        Some(n) => headers.push((n.trim().to_string(), String::new())),
                        None => warnings.push(format!("-H {h:?} is not 'Name: value'; left out")),
                    },
                }
            }
            "-A" | "--user-agent" => headers.push(("User-Agent".into(), value("the agent")?)),
            "-e" | "--referer" => headers.push(("Referer".into(), value("the URL")?)),
            "-b" | "--cookie" => {
                let c = value("'name=value; ...'")?;
                if c.contains('=') {
                    headers.push(("Cookie".into(), c));
                } else {
                    warnings.push(format!("-b {c}: a cookie file is not read; the plan's cookie jar keeps the cookies the server sets"));
                }
            }
            "-d" | "--data" | "--data-ascii" | "--data-binary" | "--data-raw"
            | "--data-urlencode" | "--json" => {
                let d = value("the body")?;
                if name == "--json" {
                    headers.push(("Content-Type".into(), "application/json".into()));
                    headers.push(("Accept".into(), "application/json".into()));
                }
                if let (Some(path), false) = (
                    d.strip_prefix('@'),
                    name == "--data-raw" || name == "--data-urlencode",
                ) {
                    data_file = Some(path.to_string());
                } else if name == "--data-urlencode" {
                    data.push(match d.split_once('=') {
                        Some((k, v)) => format!("{k}={}", urlencode(v)),
                        None => urlencode(d.trim_start_matches('=')),
                    });
                } else if name == "-d" || name == "--data" || name == "--data-ascii" {
                    // curl drops newlines of -d (not of --data-binary / --data-raw).
                    data.push(d.replace(['\r', '\n'], ""));
                } else {
                    data.push(d);
                }
            }
            "-F" | "--form" | "--form-string" => {
                let f = value("name=value")?;
                match f.split_once('=') {
                    Some((k, v)) => form.push((k.to_string(), v.to_string())),
                    None => warnings.push(format!("-F {f:?} is not name=value; left out")),
                }
            }
            "-u" | "--user" => user = Some(value("user:password")?),
            "-G" | "--get" => get = true,
            "-I" | "--head" => method = Some("HEAD".into()),
            "-L" | "--location" => http.set("redirects", Y::Raw("20".into())),
            "--compressed" => http.set("decompress", Y::Raw("true".into())),
            "-k" | "--insecure" => tls.set("insecure", Y::Raw("true".into())),
            "--cacert" => tls.set("ca_file", Y::s(value("a PEM file")?)),
            "-E" | "--cert" => tls.set("client_cert", Y::s(value("a PEM file")?)),
            "--key" => tls.set("client_key", Y::s(value("a PEM file")?)),
            "--http2" => http.set("version", Y::s("auto")),
            "--http2-prior-knowledge" => http.set("version", Y::s("h2")),
            "--http1.1" => http.set("version", Y::s("h1")),
            "-m" | "--max-time" => timeout = Some(format!("{}s", value("seconds")?)),
            "--url" => url = Some(value("the URL")?),
            n if IGNORED_FLAGS.contains(&n) => {}
            n if IGNORED_WITH_VALUE.contains(&n) => {
                value("a value")?;
            }
            n if n.starts_with('-') && n.len() > 1 => {
                warnings.push(format!("{n}: not understood, left out"))
            }
            _ => match &url {
                None => url = Some(w),
                Some(_) => warnings.push(format!(
                    "{w:?}: a second URL, left out (one step per command)"
                )),
            },
        }
    }
    let url = url.ok_or("no URL in the command; expected e.g. curl https://host/path")?;
    let url = if url.contains("://") {
        url
    } else {
        format!("http://{url}")
    };
    let (origin, mut path) =
        split_url(&url).ok_or_else(|| format!("{url:?} is not an http(s) URL"))?;
    if !tls.is_empty() {
        http.set("tls", tls);
    }

    let mut body = None;
    if get && !data.is_empty() {
        path.push(if path.contains('?') { '&' } else { '?' });
        path.push_str(&data.join("&"));
    } else if !data.is_empty() {
        body = Some(data.join("&"));
    }
    let has_body = body.is_some() || data_file.is_some() || !form.is_empty();
    let method = method.unwrap_or_else(|| {
        if has_body && !get {
            "POST".into()
        } else {
            "GET".into()
        }
    });
    let has = |n: &str| headers.iter().any(|h| h.0.eq_ignore_ascii_case(n));
    if body.is_some() && !has("content-type") {
        headers.push((
            "Content-Type".into(),
            "application/x-www-form-urlencoded".into(),
        ));
    }

    let build = |target: &str| -> Y {
        let mut s = Y::map();
        let key = method.to_ascii_lowercase();
        let full = format!("{target}{}", esc(&path));
        if matches!(
            key.as_str(),
            "get" | "post" | "put" | "patch" | "delete" | "head" | "options"
        ) && method == method.to_ascii_uppercase()
        {
            s.set(&key, Y::s(full));
        } else {
            s.set("method", Y::s(method.clone()));
            s.set("path", Y::s(full));
        }
        if !headers.is_empty() {
            let mut h = Y::map();
            for (n, v) in &headers {
                h.set(n, Y::s(esc(v)));
            }
            s.set("headers", h);
        }
        if let Some(b) = &body {
            s.set("body", Y::s(esc(b)));
        } else if let Some(f) = &data_file {
            s.set("body_file", Y::s(esc(f)));
        } else if !form.is_empty() {
            let mut m = Y::map();
            for (k, v) in &form {
                match v.strip_prefix('@') {
                    Some(file) => {
                        let mut parts = file.split(';');
                        let mut f = Y::map();
                        f.set("file", Y::s(esc(parts.next().unwrap_or(""))));
                        for p in parts {
                            if let Some(t) = p.strip_prefix("type=") {
                                f.set("content_type", Y::s(t));
                            } else if let Some(n) = p.strip_prefix("filename=") {
                                f.set("filename", Y::s(esc(n)));
                            }
                        }
                        m.set(k, f);
                    }
                    None => m.set(k, Y::s(esc(v))),
                }
            }
            s.set("multipart", m);
        }
        if let Some(u) = &user {
            let (name, pass) = u.split_once(':').unwrap_or((u, ""));
            let mut basic = Y::map();
            basic.set("user", Y::s(esc(name)));
            basic.set("password", Y::s(esc(pass)));
            let mut auth = Y::map();
            auth.set("basic", basic);
            s.set("auth", auth);
        }
        if let Some(t) = &timeout {
            s.set("timeout", Y::s(t.clone()));
        }
        s
    };
    Ok(CurlImport {
        step: build(""),
        step_absolute: build(&esc(&origin)),
        origin,
        http,
        warnings,
    })
}

fn takes_value(flag: &str) -> bool {
    matches!(
        flag,
        "-X" | "-H" | "-d" | "-F" | "-u" | "-A" | "-e" | "-b" | "-m" | "-o" | "-w" | "-E"
    )
}

/// `${` in pasted text is literal, not an onrush template.
fn esc(s: &str) -> String {
    s.replace("${", "$${")
}

fn urlencode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// `http://host:port/path?q` → (`http://host:port`, `/path?q`); the fragment dropped.
fn split_url(url: &str) -> Option<(String, String)> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let host = &rest[..end];
    if host.is_empty() {
        return None;
    }
    let mut path = rest[end..].split('#').next().unwrap_or("").to_string();
    if !path.starts_with('/') {
        path.insert(0, '/');
    }
    Some((format!("{scheme}://{host}"), path))
}

#[cfg(test)]
mod tests;
