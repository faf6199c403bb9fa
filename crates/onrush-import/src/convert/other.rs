//! Elements that stay behind: samplers of protocols onrush does not speak, scripts (kept as
//! comments for a person to port), the OS Process Sampler (→ an `exec` step), and elements
//! nobody knows.

use super::scope::{comment_item, is_script, script_text};
use super::{Conv, Item, Scope};
use crate::jmx::{El, Props};
use crate::report::Status;
use crate::yaml::Y;

impl Conv<'_> {
    pub fn other_sampler(&mut self, el: &El, scope: &Scope) -> Vec<Item> {
        let path = scope.path.clone();
        let c = el.class.as_str();
        if c == "DebugSampler" {
            self.entry(el, &path, Status::Approximated, "a debugging aid (it shows variables): dropped, so JMeter counts one sample more per run");
            return Vec::new();
        }
        if super::script::role(c) == Some("sample") {
            if let Some(items) = self.script_sampler(el, scope) {
                return items;
            }
        }
        if is_script(el) {
            self.remember_script(el);
            let (lang, text) = script_text(el);
            self.entry(el, &path, Status::NotConverted, format!("a {lang} sampler: onrush runs no scripts; its text is kept as a comment in the plan to port by hand"));
            let mut comments = vec![format!(
                "NOT CONVERTED: {c} `{}` ({lang}) at {}; port it by hand:",
                el.name,
                el.pos()
            )];
            comments.extend(text);
            return vec![comment_item(comments)];
        }
        if c == "SystemSampler" {
            return self.os_process(el, scope);
        }
        let protocol = match c {
            "JDBCSampler" => "JDBC",
            "JMSSampler" | "PublisherSampler" | "SubscriberSampler" => "JMS",
            "LDAPSampler" | "LDAPExtSampler" => "LDAP",
            "FTPSampler" => "FTP",
            "SmtpSampler" | "MailReaderSampler" => "mail",
            "AjpSampler" => "AJP",
            "SoapSampler" | "WebServiceSampler" => "SOAP over JMeter's old client (rewrite as an HTTP POST with the envelope as `body`)",
            "AccessLogSampler" => "access-log replay",
            _ => "",
        };
        let note = if protocol.is_empty() {
            "a sampler onrush does not know (a plugin?): left out".to_string()
        } else {
            format!("onrush does not speak {protocol}: left out")
        };
        self.entry(el, &path, Status::NotConverted, note);
        vec![comment_item(vec![format!(
            "NOT CONVERTED: {c} `{}` at {}",
            el.name,
            el.pos()
        )])]
    }

    /// An element of a kind nobody knows: reported with everything under it.
    pub fn unknown(&mut self, el: &El, scope: &Scope) -> Vec<Item> {
        let path = scope.path.clone();
        self.entry_tree(
            el,
            &path,
            Status::NotConverted,
            "an element onrush does not know (a plugin?): left out with what it holds",
        );
        vec![comment_item(vec![format!(
            "NOT CONVERTED: {} `{}` at {}",
            el.class,
            el.name,
            el.pos()
        )])]
    }

    /// The OS Process Sampler → an `exec` step: the command and its arguments as argv (never
    /// through a shell, as JMeter runs them), its environment, directory, timeout and
    /// expected return code.
    fn os_process(&mut self, el: &El, scope: &Scope) -> Vec<Item> {
        let path = scope.path.clone();
        let command = el.s("SystemSampler.command").trim().to_string();
        if command.is_empty() {
            self.entry(
                el,
                &path,
                Status::NotConverted,
                "an OS Process Sampler without a command: left out",
            );
            return vec![comment_item(vec![format!(
                "NOT CONVERTED: OS Process Sampler `{}` at {}: it has no command",
                el.name,
                el.pos()
            )])];
        }
        let mut notes: Vec<String> = Vec::new();
        let arguments = |name: &str| -> Vec<(String, String)> {
            el.prop(name)
                .and_then(|a| a.prop("Arguments.arguments"))
                .map(|a| {
                    a.children
                        .iter()
                        .map(|x| {
                            (
                                x.s("Argument.name").to_string(),
                                x.s("Argument.value").to_string(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut argv = vec![Y::s(self.text(el, &path, &command).text)];
        for (_, value) in arguments("SystemSampler.arguments") {
            argv.push(Y::s(self.text(el, &path, &value).text));
        }
        let mut step = Y::map();
        step.set("name", Y::s(el.name.clone()));
        step.set(
            "exec",
            Y::Seq(argv.into_iter().map(|a| (a, vec![])).collect()),
        );
        let env = arguments("SystemSampler.environment");
        if !env.is_empty() {
            let mut m = Y::map();
            for (name, value) in env.iter().filter(|(n, _)| !n.trim().is_empty()) {
                m.set(name.trim(), Y::s(self.text(el, &path, value).text));
            }
            step.set("env", m);
        }
        let dir = el.s("SystemSampler.directory").trim().to_string();
        if !dir.is_empty() {
            match self.path_text(el, &path, &dir) {
                Ok(d) => step.set("cwd", Y::s(d)),
                Err(e) => notes.push(format!(
                    "the directory {e}: onrush's working directory is used"
                )),
            }
        }
        let timeout = el.s("SystemSampler.timeout").trim().to_string();
        if let Ok(ms) = timeout.parse::<u64>() {
            if ms > 0 {
                step.set("timeout", Y::s(format!("{ms}ms")));
            }
        }
        if el.b("SystemSampler.checkReturnCode", false) {
            let code = el.s("SystemSampler.expectedReturnCode").trim().to_string();
            match code.parse::<i32>() {
                Ok(c) => step.set("expect_exit", Y::Raw(c.to_string())),
                Err(_) => notes.push(format!(
                    "the expected return code `{code}` is not a number: 0 is expected"
                )),
            }
        } else {
            notes.push("JMeter does not check the return code unless asked; onrush expects 0 (set `expect_exit`)".into());
        }
        for (prop, what) in [
            ("SystemSampler.stdin", "standard input file"),
            ("SystemSampler.stdout", "standard output file"),
            ("SystemSampler.stderr", "standard error file"),
        ] {
            let f = el.s(prop).trim();
            if !f.is_empty() {
                notes.push(format!("the {what} `{f}` is not used: onrush captures stdout as the body and stderr as the `stderr` header"));
            }
        }
        let (status, how) = if notes.is_empty() {
            (Status::Converted, "→ an exec step".to_string())
        } else {
            (
                Status::Approximated,
                format!("→ an exec step; {}", notes.join("; ")),
            )
        };
        self.entry(el, &path, status, how);
        self.request(el, step, scope)
    }
}
