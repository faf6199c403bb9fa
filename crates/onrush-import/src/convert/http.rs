//! HTTP Request samplers → request steps (URL, query, form, raw body, multipart, headers, auth),
//! TCP Sampler and HTTP Raw Request → `tcp:` steps. What the scope adds to every request
//! (think times, extractors, checks, `on_failure`, timeout) is applied in [`Conv::request`].

use super::{Conv, Item, Scope, URL_MARK};
use crate::jmx::{El, Prop, Props};
use crate::report::Status;
use crate::yaml::Y;
use crate::DataFile;

const METHOD_KEYS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

impl Conv<'_> {
    pub fn http(&mut self, el: &El, scope: &Scope) -> Vec<Item> {
        let parent = scope.path.clone();
        let d = &scope.defaults;
        let pick = |own: &str, default: &str| {
            if own.trim().is_empty() {
                default.trim().to_string()
            } else {
                own.trim().to_string()
            }
        };
        let mut notes: Vec<String> = Vec::new();
        let mut protocol = pick(el.s("HTTPSampler.protocol"), &d.protocol).to_ascii_lowercase();
        let mut domain = pick(el.s("HTTPSampler.domain"), &d.domain);
        let mut port = pick(el.s("HTTPSampler.port"), &d.port);
        let mut path = el.s("HTTPSampler.path").trim().to_string();
        // A full URL in the path field.
        for scheme in ["http://", "https://"] {
            if path.len() > scheme.len()
                && path
                    .get(..scheme.len())
                    .is_some_and(|s| s.eq_ignore_ascii_case(scheme))
            {
                let rest = &path[scheme.len()..];
                let (authority, p) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
                protocol = scheme.trim_end_matches("://").to_string();
                match authority.rsplit_once(':') {
                    Some((h, p2)) if !h.ends_with(']') || authority.ends_with(']') => {
                        domain = h.to_string();
                        port = p2.to_string();
                    }
                    _ => {
                        domain = authority.to_string();
                        port.clear();
                    }
                }
                path = if p.is_empty() {
                    "/".into()
                } else {
                    p.to_string()
                };
            }
        }
        if path.is_empty() {
            path = if d.path.is_empty() {
                "/".into()
            } else {
                d.path.clone()
            };
        }
        if !path.starts_with('/') {
            path.insert(0, '/');
        }
        if protocol.is_empty() {
            protocol = "http".into();
        }
        if protocol != "http" && protocol != "https" {
            self.entry(
                el,
                &parent,
                Status::NotConverted,
                format!("protocol `{protocol}` is not HTTP(S)"),
            );
            return Vec::new();
        }
        if domain.is_empty() {
            domain = "localhost".into();
            notes
                .push("no server name (here or in HTTP Request Defaults): `localhost` used".into());
        }
        let default_port = if protocol == "https" { "443" } else { "80" };
        let host = match self.static_text(el, &parent, &domain) {
            Ok(h) => h,
            Err(e) => {
                self.entry(el, &parent, Status::NotConverted, format!("the server name {e}: onrush resolves hosts when the plan loads; use a plan variable"));
                return Vec::new();
            }
        };
        let port = match self.static_text(el, &parent, &port) {
            Ok(p) if p.is_empty() || p == default_port => String::new(),
            Ok(p) if !p.contains("${") && !p.parse::<u16>().is_ok_and(|n| n > 0) => {
                notes.push(format!(
                    "port `{p}` is not a port number: the default port is used"
                ));
                String::new()
            }
            Ok(p) => format!(":{p}"),
            Err(e) => {
                self.entry(el, &parent, Status::NotConverted, format!("the port {e}"));
                return Vec::new();
            }
        };
        let origin = format!("{protocol}://{host}{port}");
        let method = el.s("HTTPSampler.method").trim().to_ascii_uppercase();
        let method = if method.is_empty() {
            "GET".to_string()
        } else if method.contains("${") {
            notes.push(format!("the method `{method}` is a variable: GET is used"));
            "GET".to_string()
        } else {
            method
        };
        let path_t = encode(&self.text(el, &parent, &path).text, false);
        let mut step = Y::map();
        step.set("name", Y::s(el.name.replace("${", "$${")));
        let url = format!("{URL_MARK}{origin}{path_t}");
        if METHOD_KEYS.contains(&method.as_str()) {
            step.set(&method.to_ascii_lowercase(), Y::s(url));
        } else {
            step.set("method", Y::s(method.clone()));
            step.set("path", Y::s(url));
        }
        self.origins.push(origin.clone());
        // Parameters: the sampler's, then the defaults' (JMeter adds those too).
        let mut args: Vec<Prop> = el
            .prop("HTTPsampler.Arguments")
            .and_then(|a| a.prop("Arguments.arguments"))
            .map(|a| a.children.clone())
            .unwrap_or_default();
        args.extend(d.args.iter().cloned());
        let files: Vec<Prop> = el
            .prop("HTTPsampler.Files")
            .and_then(|f| f.prop("HTTPFileArgs.files"))
            .map(|f| f.children.clone())
            .unwrap_or_default();
        let files: Vec<Prop> = files
            .into_iter()
            .filter(|f| !f.s("File.path").trim().is_empty())
            .collect();
        let raw_body = el.b("HTTPSampler.postBodyRaw", false);
        let multipart = el.b("HTTPSampler.DO_MULTIPART_POST", false)
            || el.b("HTTPSampler.BROWSER_COMPATIBLE_MULTIPART", false);
        let has_body = !matches!(
            method.as_str(),
            "GET" | "HEAD" | "DELETE" | "OPTIONS" | "TRACE"
        ) || raw_body;
        let mut pairs = Vec::new();
        for a in &args {
            let name = a.s("Argument.name").to_string();
            if name.is_empty() && !raw_body {
                continue;
            }
            let value = self.text(el, &parent, a.s("Argument.value")).text;
            pairs.push((self.text(el, &parent, &name).text, value));
        }
        let mut headers = scope.headers.clone();
        if raw_body {
            let body: String = pairs.iter().map(|p| p.1.as_str()).collect();
            step.set("body", Y::s(body));
        } else if has_body && (multipart || !files.is_empty() && !pairs.is_empty()) {
            let mut m = Y::map();
            for (n, v) in &pairs {
                m.set(n, Y::s(v.clone()));
            }
            for f in &files {
                let file = self.file(el, &parent, f.s("File.path"));
                let mut fy = Y::map();
                fy.set("file", Y::s(file));
                let mime = f.s("File.mimetype").trim();
                if !mime.is_empty() {
                    fy.set("content_type", Y::s(mime));
                }
                m.set(f.s("File.paramname").trim(), fy);
            }
            step.set("multipart", m);
            headers.retain(|(n, _)| !n.eq_ignore_ascii_case("content-type"));
        } else if has_body && files.len() == 1 && pairs.is_empty() {
            let file = self.file(el, &parent, files[0].s("File.path"));
            step.set("body_file", Y::s(file));
            let mime = files[0].s("File.mimetype").trim();
            if !mime.is_empty()
                && !headers
                    .iter()
                    .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            {
                headers.push(("Content-Type".into(), mime.into()));
            }
        } else if has_body && !pairs.is_empty() {
            if unique_names(&pairs) {
                let mut m = Y::map();
                for (n, v) in &pairs {
                    m.set(n, Y::s(v.clone()));
                }
                step.set("form", m);
            } else {
                let body: Vec<String> = pairs.iter().map(|(n, v)| format!("{n}={v}")).collect();
                step.set("body", Y::s(body.join("&")));
                headers.push((
                    "Content-Type".into(),
                    "application/x-www-form-urlencoded".into(),
                ));
                notes.push(
                    "a parameter name repeats: the form body is written as text, not encoded"
                        .into(),
                );
            }
        } else if !pairs.is_empty() {
            if unique_names(&pairs) && !path_t.contains('?') {
                let mut m = Y::map();
                for (n, v) in &pairs {
                    m.set(n, Y::s(v.clone()));
                }
                step.set("query", m);
            } else {
                let q: Vec<String> = pairs
                    .iter()
                    .map(|(n, v)| format!("{}={}", encode(n, true), encode(v, true)))
                    .collect();
                let sep = if path_t.contains('?') { '&' } else { '?' };
                let key = if METHOD_KEYS.contains(&method.as_str()) {
                    method.to_ascii_lowercase()
                } else {
                    "path".into()
                };
                step.set(
                    &key,
                    Y::s(format!(
                        "{URL_MARK}{}{path_t}{sep}{}",
                        self.origins.last().cloned().unwrap_or_default(),
                        q.join("&")
                    )),
                );
            }
        }
        if !files.is_empty() && !has_body {
            notes.push(format!("files are not sent with {method}"));
        }
        if el.b("HTTPSampler.follow_redirects", false) || el.b("HTTPSampler.auto_redirects", false)
        {
            self.follow_redirects = true;
        }
        if !el.b("HTTPSampler.use_keepalive", true) {
            notes.push("keep-alive off for this request: onrush keeps the VU's connection (set `http.connections: per_request` for the whole scenario to close after each request)".into());
        }
        if el.b("HTTPSampler.image_parser", false) {
            notes.push(
                "embedded resources are not downloaded: add steps for the ones that matter".into(),
            );
        }
        if !headers.is_empty() {
            step.set(
                "headers",
                Y::Map(
                    headers
                        .into_iter()
                        .map(|(n, v)| (n, Y::s(v), vec![]))
                        .collect(),
                ),
            );
        }
        let url_text = format!("{origin}{path_t}");
        let auth = scope
            .auth
            .iter()
            .find(|a| a.0.is_empty() || url_text.starts_with(&a.0) && a.3.starts_with("BASIC"));
        if let Some((_, user, pass, mech)) = auth {
            if mech.starts_with("BASIC") {
                let mut basic = Y::map();
                basic.set("user", Y::s(user.clone()));
                basic.set("password", Y::s(pass.clone()));
                let mut a = Y::map();
                a.set("basic", basic);
                step.set("auth", a);
            }
        }
        let timeout = pick(el.s("HTTPSampler.response_timeout"), &d.response_timeout);
        let timeout = match timeout.parse::<u64>() {
            Ok(ms) if ms > 0 => Some(format!("{ms}ms")),
            _ => scope.timeout.clone(),
        };
        if let Some(t) = timeout {
            step.set("timeout", Y::s(t));
        }
        let how = if notes.is_empty() {
            "→ a request step".to_string()
        } else {
            notes.join("; ")
        };
        self.entry(
            el,
            &parent,
            if notes.is_empty() {
                Status::Converted
            } else {
                Status::Approximated
            },
            how,
        );
        self.request(el, step, scope)
    }

    /// Adds what the scope applies to a request step; returns the think steps and the request.
    pub fn request(&mut self, el: &El, mut step: Y, scope: &Scope) -> Vec<Item> {
        self.scen.requests += 1;
        if !scope.extract.is_empty() {
            let mut x = Y::map();
            for (n, v) in &scope.extract {
                x.set(n, v.clone());
            }
            step.set("extract", x);
        }
        if !scope.checks.is_empty() {
            step.set(
                "check",
                Y::Seq(scope.checks.iter().map(|c| (c.clone(), vec![])).collect()),
            );
        }
        if let Some(f) = scope.on_failure {
            step.set("on_failure", Y::s(f));
        }
        // JMeter runs a sampler's pre-processors, then its timers, then the sample.
        let http = el.class.starts_with("HTTPSampler");
        let mut out = self.script_hooks(&mut step, scope, http);
        out.extend(scope.timers.iter().map(|t| (t.clone(), vec![])));
        out.push((
            step,
            vec![format!(
                "JMeter: {} `{}` at {}",
                el.class,
                el.name,
                el.pos()
            )],
        ));
        out
    }

    /// A file path of the JMX (relative to it) as the plan names it; remembered.
    fn file(&mut self, el: &El, parent: &str, raw: &str) -> String {
        let path = self
            .path_text(el, parent, raw.trim())
            .unwrap_or_else(|_| raw.trim().to_string());
        let path = self.data_path(&path);
        if !self.data_files.iter().any(|d| d.path == path) {
            self.data_files.push(DataFile {
                path: path.clone(),
                default_path: path.clone(),
                columns: Vec::new(),
            });
        }
        path
    }

    pub fn tcp(&mut self, el: &El, scope: &Scope) -> Vec<Item> {
        let parent = scope.path.clone();
        // The sampler's own value, else the TCP Sampler Config's in scope.
        let get = |name: &str| -> String {
            let own = el.s(name).trim();
            if !own.is_empty() {
                return own.to_string();
            }
            scope
                .tcp
                .iter()
                .rev()
                .find(|p| p.name == name)
                .map(|p| p.value.trim().to_string())
                .unwrap_or_default()
        };
        let flag = |name: &str, default: bool| match get(name).as_str() {
            "true" => true,
            "false" => false,
            _ => default,
        };
        let server = get("TCPSampler.server");
        let port = get("TCPSampler.port");
        let (host, port) = match (
            self.static_text(el, &parent, &server),
            self.static_text(el, &parent, &port),
        ) {
            (Ok(h), Ok(p))
                if !h.is_empty()
                    && (p.parse::<u16>().is_ok_and(|n| n > 0)
                        || p.starts_with("${") && !p.contains("$${")) =>
            {
                (h, p)
            }
            _ => {
                self.entry(
                    el,
                    &parent,
                    Status::NotConverted,
                    "the server and port must be set and known when the plan loads",
                );
                return Vec::new();
            }
        };
        let class = get("TCPSampler.classname");
        let request = el.s("TCPSampler.request");
        let mut step = Y::map();
        step.set("name", Y::s(el.name.replace("${", "$${")));
        step.set("tcp", Y::s(format!("{host}:{port}")));
        let mut notes = Vec::new();
        if class.contains("LengthPrefixed") {
            let hex: String = request.chars().filter(|c| !c.is_whitespace()).collect();
            if !hex.len().is_multiple_of(2) || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                self.entry(
                    el,
                    &parent,
                    Status::NotConverted,
                    "the request is not hex text: write `send_hex:` by hand",
                );
                return Vec::new();
            }
            step.set("send_hex", Y::s(format!("{:04X}{hex}", hex.len() / 2)));
            step.set("length_prefix", Y::Raw("2".into()));
        } else if class.contains("Binary") {
            let hex: String = request.chars().filter(|c| !c.is_whitespace()).collect();
            step.set("send_hex", Y::s(hex));
            step.set("until_close", Y::Raw("true".into()));
            notes.push("JMeter's binary client reads until the end-of-message byte or the close: `until_close`".to_string());
        } else {
            let text = self.text(el, &parent, request).text;
            step.set("send", Y::s(text));
            match get("TCPSampler.EolByte").parse::<i32>() {
                Ok(b) if (0..=127).contains(&b) => {
                    step.set("until", Y::s((b as u8 as char).to_string()))
                }
                _ => {
                    step.set("until_close", Y::Raw("true".into()));
                    notes.push(
                        "no end-of-line byte: the reply is read until the server closes"
                            .to_string(),
                    );
                }
            }
        }
        if let Ok(ms) = get("TCPSampler.timeout").parse::<u64>() {
            if ms > 0 {
                step.set("timeout", Y::s(format!("{ms}ms")));
            }
        }
        if !flag("TCPSampler.reUseConnection", true) || flag("TCPSampler.closeConnection", false) {
            notes.push("JMeter closes the connection after each sample; onrush keeps it per VU (set `http.connections: per_request` for the scenario)".into());
        }
        let status = if notes.is_empty() {
            Status::Converted
        } else {
            Status::Approximated
        };
        self.entry(
            el,
            &parent,
            status,
            format!(
                "→ a `tcp:` step{}",
                notes.iter().map(|n| format!("; {n}")).collect::<String>()
            ),
        );
        self.request(el, step, scope)
    }

    /// The plugins' HTTP Raw Request: bytes sent as they are → a `tcp:` step.
    pub fn raw_http(&mut self, el: &El, scope: &Scope) -> Vec<Item> {
        let parent = scope.path.clone();
        let (host, port) = (
            el.s("hostname").trim().to_string(),
            el.s("port").trim().to_string(),
        );
        let port = if port.is_empty() {
            "80".to_string()
        } else {
            port
        };
        let Ok(host) = self.static_text(el, &parent, &host) else {
            self.entry(
                el,
                &parent,
                Status::NotConverted,
                "the host must be known when the plan loads",
            );
            return Vec::new();
        };
        let mut step = Y::map();
        step.set("name", Y::s(el.name.replace("${", "$${")));
        step.set("tcp", Y::s(format!("{host}:{port}")));
        let data = self
            .text(
                el,
                &parent,
                &el.s("data").replace("\r\n", "\n").replace('\n', "\r\n"),
            )
            .text;
        step.set("send", Y::s(data));
        step.set("idle", Y::s("200ms"));
        self.entry(el, &parent, Status::Approximated, "→ a `tcp:` step sending the request as written; the reply ends after 200 ms of silence (`idle`)");
        self.request(el, step, scope)
    }
}

fn unique_names(pairs: &[(String, String)]) -> bool {
    pairs
        .iter()
        .enumerate()
        .all(|(i, (n, _))| !n.is_empty() && !pairs[..i].iter().any(|(m, _)| m == n))
}

/// Percent-encodes what a URL cannot hold as is (spaces, non-ASCII, and in a query value
/// `&`, `=`, `+`, `#`), leaving `${...}` templates alone.
fn encode(text: &str, query_value: bool) -> String {
    let mut out = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        if rest.starts_with("${") {
            let end = rest.find('}').map(|e| e + 1).unwrap_or(rest.len());
            out.push_str(&rest[..end]);
            rest = &rest[end..];
            continue;
        }
        let c = rest.chars().next().expect("not empty");
        let keep =
            c.is_ascii_graphic() && !(query_value && matches!(c, '&' | '=' | '+' | '#' | '%'));
        if keep {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}
