//! JSR223 and BeanShell elements: what converts into the JavaScript module beside the plan
//! (and where the plan calls it), and what stays in the report with its reason. Every plan
//! here is loaded with its module (`mappings::import`), so the JavaScript is parsed by the
//! engine plans run on; tests/import.rs in the onrush crate runs one against a server.

use onrush_import::Status;

use crate::mappings::{has, http, import, jmx, status_of};

fn script(class: &str, name: &str, lang: &str, code: &str) -> String {
    let code = code
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    format!(
        r#"<{class} testclass="{class}" testname="{name}" enabled="true">
  <stringProp name="scriptLanguage">{lang}</stringProp>
  <stringProp name="script">{code}</stringProp>
</{class}><hashTree/>"#
    )
}

fn module(out: &onrush_import::Import) -> String {
    out.script
        .as_ref()
        .unwrap_or_else(|| panic!("no script module:\n{}", out.yaml))
        .source
        .clone()
}

#[test]
fn pre_and_post_processors_assertions_and_samplers_become_javascript() {
    let children = [
        script(
            "JSR223PreProcessor",
            "sign",
            "groovy",
            "def n = ctx.getThreadNum()\nString body = \"{\\\"user\\\": ${n}}\"\nvars.put(\"body\", body)\nvars.put(\"sig\", DigestUtils.sha256Hex(body))",
        ),
        r#"<ConstantTimer testclass="ConstantTimer" testname="wait"><stringProp name="ConstantTimer.delay">100</stringProp></ConstantTimer><hashTree/>"#.to_string(),
        script(
            "JSR223PostProcessor",
            "token",
            "",
            "def twice(String s) { return s + s }\nint total = prev.getResponseDataAsString().length() as String\nvars.put(\"total\", twice(total))",
        ),
        script(
            "BeanShellAssertion",
            "ok",
            "",
            "if (!prev.getResponseCode().equals(\"200\")) {\n  Failure = true;\n  FailureMessage = \"got \" + prev.getResponseCode();\n}",
        ),
    ]
    .concat();
    let body = format!(
        "{}<hashTree>{children}</hashTree>{}<hashTree/>{}",
        http("order", "POST", "/orders", ""),
        http("next", "GET", "/next?total=${total}&amp;sig=${sig}", ""),
        script(
            "JSR223Sampler",
            "check",
            "groovy",
            "if (vars.get(\"total\").toInteger() < 1L) { SampleResult.setSuccessful(false) }",
        ),
    );
    let out = import(&jmx("", &body));
    // The module is named in the plan; the pre-processor runs before the timer, as in JMeter.
    has(&out, "scripts:\n  - \"jmeter_scripts.js\"");
    has(
        &out,
        "- script: \"pre_sign\"\n        name: \"sign\"\n      - think: \"100ms\"",
    );
    has(&out, "after: \"after_post_token_assert_ok\"");
    has(&out, "- script: \"sample_check\"\n        name: \"check\"");
    // The variables scripts set are runtime variables: nothing marks them unset.
    assert!(!out.yaml.contains("unset("), "{}", out.yaml);
    let m = module(&out);
    for text in [
        "export function pre_sign(octx, res, req) {",
        "let n = ctx.getThreadNum()",
        "let body = `{\\\"user\\\": ${n}}`",
        "vars.put(\"sig\", crypto.sha256(body))",
        "let total = prev.getResponseDataAsString().length\n",
        "AssertionResult.setFailure(true);",
        "AssertionResult.setFailureMessage(\"got \" + prev.getResponseCode());",
        "if (vars.get(\"total\").toInteger() < 1) {",
        "function twice(s) { return s + s }",
        "export function after_post_token_assert_ok(res, octx) {",
        "for (const f of [post_token, assert_ok])",
        "  vars.body = vars.body;\n  vars.sig = vars.sig;\n  vars.total = vars.total;",
    ] {
        assert!(m.contains(text), "expected {text:?} in:\n{m}");
    }
    for name in ["sign", "token", "ok", "check"] {
        let (status, note) = status_of(&out, &format!("/ {name}"));
        assert_eq!(status, Status::Converted, "{name}: {note}");
        assert!(note.contains("jmeter_scripts.js"), "{note}");
    }
}

#[test]
fn a_pre_processor_that_changes_the_request_is_a_before_hook_and_javascript_stays() {
    let children = [
        script(
            "JSR223PreProcessor",
            "add page",
            "javascript",
            "var n = vars.get('page') || '1';\nsampler.addArgument('page', n);",
        ),
        script(
            "JSR223PreProcessor",
            "tag",
            "nashorn",
            "if (sampler.getMethod() === 'GET') { log.info('GET ' + sampler.getUrl()); }",
        ),
    ]
    .concat();
    let body = format!(
        "{}<hashTree>{children}</hashTree>",
        http("list", "GET", "/items", "")
    );
    let out = import(&jmx("", &body));
    has(&out, "before: \"before_pre_add_page_pre_tag\"");
    assert!(!out.yaml.contains("script: "), "{}", out.yaml);
    let m = module(&out);
    assert!(
        m.contains("    var n = vars.get('page') || '1';\n    sampler.addArgument('page', n);"),
        "{m}"
    );
    assert!(
        m.contains("for (const f of [pre_add_page, pre_tag])"),
        "{m}"
    );
    assert!(m.contains("f(octx, undefined, req);"), "{m}");
    let (_, note) = status_of(&out, "/ add page");
    assert!(note.contains("`before:` hook"), "{note}");
}

#[test]
fn scripts_that_need_java_stay_in_the_report_with_their_reason() {
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "JSR223PostProcessor",
            "groovy",
            "import java.util.Map\nvars.put(\"a\", \"1\")",
            "it imports `java.util.Map`",
        ),
        (
            "JSR223PostProcessor",
            "groovy",
            "def d = new Date()",
            "it creates Java objects",
        ),
        (
            "JSR223Assertion",
            "groovy",
            "[1, 2].each { vars.put(\"x\" + it, it) }",
            "closure",
        ),
        (
            "JSR223PreProcessor",
            "groovy",
            "vars.put(\"t\", UUID.randomUUID().toString())",
            "the Java class `UUID`",
        ),
        (
            "JSR223Assertion",
            "groovy",
            "assert prev.getSubResults().length == 0",
            "`prev.getSubResults`",
        ),
        (
            "JSR223PostProcessor",
            "jexl3",
            "vars.put('a', 1)",
            "its language is jexl3",
        ),
        (
            "JSR223PreProcessor",
            "groovy",
            "log.info(prev.getResponseCode())",
            "reads the previous sample (`prev`) in a pre-processor",
        ),
        (
            "JSR223Timer",
            "groovy",
            "return 100",
            "script timers are not converted",
        ),
    ];
    for (i, (class, lang, code, why)) in cases.iter().enumerate() {
        let name = format!("s{i}");
        let body = format!(
            "{}<hashTree>{}</hashTree>",
            http("r", "GET", "/", ""),
            script(class, &name, lang, code)
        );
        let out = import(&jmx("", &body));
        let (status, note) = status_of(&out, &format!("/ {name}"));
        assert_eq!(status, Status::NotConverted, "{code}: {note}");
        assert!(note.contains(why), "{code}: expected {why:?} in {note:?}");
        // The code stays in the plan as a comment, to port by hand.
        let first = code.lines().next().unwrap();
        has(&out, &format!("#   | {first}"));
        assert!(out.script.is_none(), "{code}: {:?}", out.script);
    }
    // An empty script does nothing in JMeter: left out, nothing lost.
    let body = format!(
        "{}<hashTree>{}</hashTree>",
        http("r", "GET", "/", ""),
        script("JSR223PostProcessor", "blank", "groovy", "  ")
    );
    let out = import(&jmx("", &body));
    let (status, note) = status_of(&out, "/ blank");
    assert_eq!(status, Status::Converted, "{note}");
    assert!(note.contains("empty"), "{note}");
}

/// onrush runs `after:` before `extract:`: a post-processor reading what an extractor of the
/// same request sets would see the old value, and the report says so.
#[test]
fn a_script_reading_an_extractor_of_its_own_request_is_reported() {
    let children = format!(
        r#"<RegexExtractor testclass="RegexExtractor" testname="re">
  <stringProp name="RegexExtractor.useHeaders">false</stringProp><stringProp name="RegexExtractor.refname">token</stringProp>
  <stringProp name="RegexExtractor.regex">token="(.+?)"</stringProp><stringProp name="RegexExtractor.template">$1$</stringProp>
  <stringProp name="RegexExtractor.match_number">1</stringProp>
</RegexExtractor><hashTree/>{}"#,
        script(
            "JSR223PostProcessor",
            "upper",
            "groovy",
            "vars.put(\"upper\", vars.get(\"token\").toUpperCase())",
        )
    );
    let body = format!(
        "{}<hashTree>{children}</hashTree>",
        http("login", "GET", "/login", "")
    );
    let out = import(&jmx("", &body));
    has(&out, "after: \"after_post_upper\"");
    let (status, note) = status_of(&out, "upper (reads `token`)");
    assert_eq!(status, Status::Approximated, "{note}");
    assert!(note.contains("before `extract:`"), "{note}");
}
