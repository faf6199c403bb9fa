//! JUnit XML output, validated with `xmllint --schema tests/junit.xsd` (Jenkins' junit-4.xsd).
//!
//! xmllint comes from libxml2 (Debian/Ubuntu: `libxml2-utils`; `tests/install-xmllint.sh`
//! installs it). Under `CI=true` a missing xmllint fails the test; elsewhere the schema check is
//! skipped with a loud message (the structural checks still run).
use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{load, run};
use onrush_sla::*;

const XSD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/junit.xsd");

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// The xmllint to use, or `None` (outside CI only) when there is none.
fn xmllint() -> Option<PathBuf> {
    let found = Command::new("xmllint")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return Some(PathBuf::from("xmllint"));
    }
    if in_ci() {
        panic!(
            "xmllint is missing, so the JUnit XML cannot be validated against tests/junit.xsd; \
             CI must run crates/onrush-sla/tests/install-xmllint.sh (Debian/Ubuntu: apt-get install -y libxml2-utils)"
        );
    }
    // Straight to stderr, past the test harness's capture, so that it shows in passing runs.
    let _ = writeln!(
        std::io::stderr(),
        "\n{bar}\n!!! SKIPPED: JUnit XML schema validation: xmllint is not installed.\n\
         !!! Run crates/onrush-sla/tests/install-xmllint.sh (or apt-get install -y libxml2-utils).\n\
         !!! Under CI=true this is a failure.\n{bar}\n",
        bar = "!".repeat(88)
    );
    None
}

/// Runs `xmllint --noout --schema junit.xsd` on `xml`: Ok, or Err(xmllint's complaint).
fn validate(xmllint: &Path, xml: &str, name: &str) -> Result<(), String> {
    let file = std::env::temp_dir().join(format!(
        "onrush-junit-{name}-{}-{:?}.xml",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&file, xml).unwrap();
    let out = Command::new(xmllint)
        .args(["--noout", "--schema", XSD])
        .arg(&file)
        .output()
        .expect("xmllint runs");
    let _ = std::fs::remove_file(&file);
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Results with every kind of outcome and some hostile text.
fn results() -> Vec<ThresholdResult> {
    let r = run("junit");
    let plan = load(concat!(
        "  - \"p99 < 1s\"\n",
        "  - \"closed/home: p95 < 50ms\"\n",
        "  - \"empty: p99 < 1s\"\n",
        "  - \"home: p99 < 150ms\"\n",
        "  - \"failure_rate < 1%\"\n",
        "  - \"generator: healthy\"\n",
    ));
    let mut res = evaluate(&plan.thresholds, &r.summary, Some("overloaded"));
    res.push(ThresholdResult {
        threshold: "weird <&> \"quotes\" 'apostrophes' ünïcödé \u{1}\u{7f} ]]>".into(),
        scope: "step a.b/c\"d".into(),
        measured: None,
        measured_text: "n/a".into(),
        passed: false,
        message: "line one\nline two\r\n\ttabbed & <tagged>".into(),
        limit: "< 1 ms".into(),
    });
    res
}

#[test]
fn junit_xml_is_valid_against_the_jenkins_schema() {
    let res = results();
    let xml = junit_xml(&res, "shop \"checkout\" & co", 12.5);
    // Structure, checked without xmllint.
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites "));
    let failed = res.iter().filter(|r| !r.passed).count();
    assert_eq!(failed, 6);
    assert_eq!(xml.matches("<testcase ").count(), res.len());
    assert_eq!(xml.matches("<failure ").count(), failed);
    assert!(xml.contains(&format!(
        "<testsuite name=\"shop &quot;checkout&quot; &amp; co\" tests=\"{}\" failures=\"{failed}\" errors=\"0\" skipped=\"0\" time=\"12.500\">",
        res.len()
    )));
    assert!(xml.contains("<testcase name=\"p99 &lt; 1s\" classname=\"onrush.shop &quot;checkout&quot; &amp; co.total\" time=\"0\">"));
    assert!(xml.contains("<failure message=\"p95 "));
    assert!(xml.contains("type=\"threshold\""));
    assert!(
        xml.contains("message=\"line one&#10;line two&#13;&#10;&#9;tabbed &amp; &lt;tagged&gt;\"")
    );
    assert!(!xml.contains('\u{1}'));
    assert!(xml.contains("ünïcödé"));

    let Some(xmllint) = xmllint() else { return };
    if let Err(e) = validate(&xmllint, &xml, "all") {
        panic!("the JUnit XML does not validate:\n{e}\n--- xml:\n{xml}");
    }
    // All passed, and no thresholds at all.
    let passed: Vec<ThresholdResult> = res.iter().filter(|r| r.passed).cloned().collect();
    assert!(!passed.is_empty());
    validate(&xmllint, &junit_xml(&passed, "ok", 1.0), "passed").unwrap();
    validate(&xmllint, &junit_xml(&[], "none", 0.0), "empty").unwrap();
    validate(&xmllint, &junit_xml(&res, "", f64::NAN), "odd").unwrap();
}

#[test]
fn the_schema_check_rejects_invalid_junit() {
    // The check must be able to fail: xmllint and the schema really constrain the output.
    let Some(xmllint) = xmllint() else { return };
    let xml = junit_xml(&results(), "s", 1.0);
    // A test case without a name.
    let no_name = xml.replacen("<testcase name=\"p99 &lt; 1s\"", "<testcase", 1);
    assert!(validate(&xmllint, &no_name, "noname").is_err());
    // system-out before failure breaks the element order of testcase.
    let start = xml.find("<failure ").unwrap();
    let end = xml[start..].find("</failure>").unwrap() + start + "</failure>".len();
    let failure = &xml[start..end];
    let out_start = xml[end..].find("<system-out>").unwrap() + end;
    let out_end =
        xml[out_start..].find("</system-out>").unwrap() + out_start + "</system-out>".len();
    let system_out = &xml[out_start..out_end];
    let swapped = format!(
        "{}{system_out}\n      {failure}{}",
        &xml[..start],
        &xml[out_end..]
    );
    let swapped = swapped.replacen(&format!("{failure}\n      {system_out}"), "", 1);
    assert!(validate(&xmllint, &swapped, "order").is_err(), "{swapped}");
    // An attribute the schema does not know.
    let unknown = xml.replacen("<testsuite ", "<testsuite flavour=\"x\" ", 1);
    assert!(validate(&xmllint, &unknown, "attr").is_err());
    // Not well-formed.
    assert!(validate(&xmllint, &xml.replacen("&lt;", "<", 1), "broken").is_err());
}
