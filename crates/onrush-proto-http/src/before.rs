//! `before: FUNCTION` on an HTTP step: the rendered request handed to the plan's script, which
//! may change its method, path and query, headers and body, then sent as changed.
//!
//! Only steps with a hook come here (such a step is never sent pre-encoded, see
//! `HttpStep::prepare`): a plan without scripts pays nothing.

use onrush_http1 as http1;
use onrush_plan::RenderContext;
use onrush_protocol::FailureClass;

use crate::render::RequestParts;

/// Runs hook `func` on the rendered `parts` of a request whose method is `method`.
pub(crate) fn run(
    func: u32,
    scenario: u32,
    ctx: &RenderContext,
    method: &str,
    parts: &mut RequestParts,
) -> Result<(), FailureClass> {
    let mut req = onrush_script::Request {
        method: method.to_string(),
        url: String::from_utf8_lossy(&parts.path).into_owned(),
        headers: header_lines(&parts.headers),
        body: std::mem::take(&mut parts.body),
    };
    let who = onrush_script::Caller {
        scenario,
        vu: ctx.vu,
        iteration: ctx.iteration,
    };
    let vars = ctx.vars.ok_or(FailureClass::ScriptError)?;
    match onrush_script::worker::with(|e| e.before(func, who, vars, &mut req)) {
        Some(Ok(())) => {}
        Some(Err(f)) => {
            onrush_script::worker::print(&f);
            let class = match f.kind {
                onrush_script::FailureKind::Error => FailureClass::ScriptError,
                onrush_script::FailureKind::Timeout => FailureClass::ScriptTimeout,
                onrush_script::FailureKind::Failed => FailureClass::ScriptFailed,
            };
            onrush_protocol::failure_examples::note(class, || f.message);
            return Err(class);
        }
        None => return Err(FailureClass::ScriptError),
    }
    parts.method = (req.method != method).then_some(req.method);
    parts.path.clear();
    parts.path.extend_from_slice(req.url.as_bytes());
    parts.headers.clear();
    for (name, value) in &req.headers {
        if let Err(e) = http1::push_header(&mut parts.headers, name.as_bytes(), value.as_bytes()) {
            onrush_protocol::failure_examples::note(FailureClass::ScriptError, || {
                format!("the before hook set header {name:?}: {e}")
            });
            return Err(FailureClass::ScriptError);
        }
    }
    parts.body = req.body;
    Ok(())
}

/// `Name: value\r\n` lines as (lower-case name, value) pairs.
fn header_lines(block: &[u8]) -> Vec<(String, String)> {
    block
        .split(|b| *b == b'\n')
        .filter_map(|line| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let colon = line.iter().position(|b| *b == b':')?;
            let name = String::from_utf8_lossy(&line[..colon]).to_ascii_lowercase();
            let value = String::from_utf8_lossy(line[colon + 1..].trim_ascii()).into_owned();
            Some((name, value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn header_block_read() {
        assert_eq!(
            super::header_lines(b"Content-Type: text/plain\r\nX-A:  1 \r\n"),
            [
                ("content-type".to_string(), "text/plain".to_string()),
                ("x-a".to_string(), "1".to_string())
            ]
        );
    }
}
