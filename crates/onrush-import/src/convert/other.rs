//! Elements that stay behind: samplers of protocols onrush does not speak, scripts (kept as
//! comments for a person to port), the OS Process Sampler, and elements nobody knows.

use super::scope::{comment_item, is_script, script_text};
use super::{Conv, Item, Scope};
use crate::jmx::{El, Props};
use crate::report::Status;

impl Conv<'_> {
    pub fn other_sampler(&mut self, el: &El, scope: &Scope) -> Vec<Item> {
        let path = scope.path.clone();
        let c = el.class.as_str();
        if c == "DebugSampler" {
            self.entry(el, &path, Status::Approximated, "a debugging aid (it shows variables): dropped, so JMeter counts one sample more per run");
            return Vec::new();
        }
        if is_script(el) {
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
            let command = el.s("SystemSampler.command");
            let args: Vec<String> = el
                .prop("SystemSampler.arguments")
                .and_then(|a| a.prop("Arguments.arguments"))
                .map(|a| {
                    a.children
                        .iter()
                        .map(|x| x.s("Argument.value").to_string())
                        .collect()
                })
                .unwrap_or_default();
            let line = std::iter::once(command.to_string())
                .chain(args)
                .collect::<Vec<_>>()
                .join(" ");
            self.entry(el, &path, Status::NotConverted, "an OS Process Sampler: onrush has no `exec` step yet (issue 14, a later slice); run the command before or beside the test");
            return vec![comment_item(vec![format!(
                "NOT CONVERTED: OS Process Sampler `{}` at {}: {line}",
                el.name,
                el.pos()
            )])];
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
}
