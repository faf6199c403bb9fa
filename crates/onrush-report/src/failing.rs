//! "Failing requests": under each failure class, the first requests that failed with it and
//! what they got back (summary.json's `failing_exchanges`), so a class's count comes with a
//! response to read.

use std::fmt::Write as _;

use crate::fmt::{esc, utc};
use crate::input::Run;

pub(crate) fn section(out: &mut String, run: &Run) {
    let Some(examples) = run
        .summary
        .extra
        .failing_exchanges
        .as_ref()
        .filter(|e| !e.is_empty())
    else {
        return;
    };
    out.push_str(
        r#"<section id="failing" class="block"><h2>Failing requests</h2><p class="note">The first requests of each step that failed with each class (up to 3 of each), as the response came back: headers the protocol kept (credentials masked), the start of the body (2 KiB at most).</p>"#,
    );
    let mut classes: Vec<&str> = examples.iter().map(|e| e.class.as_str()).collect();
    classes.dedup();
    classes.sort_unstable();
    classes.dedup();
    for class in classes {
        let _ = write!(out, "<h3>{}</h3>", esc(class));
        for e in examples.iter().filter(|e| e.class == class) {
            let status = if e.status == 0 {
                "no response".to_string()
            } else {
                format!("status {}", e.status)
            };
            let _ = write!(
                out,
                r#"<details class="exchange"><summary><b>{} / {}</b> · {} · {}</summary><pre>"#,
                esc(&e.scenario),
                esc(&e.step),
                esc(&status),
                esc(&e.short()),
            );
            let _ = writeln!(
                out,
                "at {} · VU {} iteration {} · {:.3} ms",
                esc(&utc(e.time_unix_ms)),
                e.vu,
                e.iteration,
                e.latency_ms
            );
            if let Some(url) = &e.url {
                let _ = writeln!(out, "{}", esc(url));
            }
            if let Some(reason) = &e.reason {
                let _ = writeln!(out, "{}", esc(reason));
            }
            out.push('\n');
            for (name, value) in &e.headers {
                let _ = writeln!(out, "{}: {}", esc(name), esc(value));
            }
            match (&e.body, &e.body_note) {
                (Some(body), note) => {
                    let _ = write!(out, "\n{}", esc(body));
                    if let Some(note) = note {
                        let _ = write!(
                            out,
                            "\n[{} of {} bytes: {}]",
                            body.len(),
                            e.body_size,
                            esc(note)
                        );
                    }
                }
                (None, Some(note)) => {
                    let _ = write!(out, "\n[{}, {} bytes]", esc(note), e.body_size);
                }
                (None, None) => {}
            }
            out.push_str("</pre></details>");
        }
    }
    out.push_str("</section>\n");
}
