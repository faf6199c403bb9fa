//! One small hand-written JMX per mapping: what the plan says, what the report says, and that
//! the plan loads (`onrush_plan::load_str`).

use onrush_import::{import_jmx, Import, Options, Status};

/// A Test Plan with `plan` (its own children) and one thread group holding `body`.
pub(crate) fn jmx(plan: &str, body: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<jmeterTestPlan version="1.2" properties="5.0">
  <hashTree>
    <TestPlan testclass="TestPlan" testname="Plan" enabled="true"/>
    <hashTree>
      <CookieManager testclass="CookieManager" testname="Cookies"/>
      <hashTree/>
      {plan}
      <ThreadGroup testclass="ThreadGroup" testname="Users" enabled="true">
        <stringProp name="ThreadGroup.num_threads">2</stringProp>
        <elementProp name="ThreadGroup.main_controller" elementType="LoopController">
          <stringProp name="LoopController.loops">1</stringProp>
        </elementProp>
      </ThreadGroup>
      <hashTree>
        {body}
      </hashTree>
    </hashTree>
  </hashTree>
</jmeterTestPlan>"#
    )
}

pub(crate) fn http(name: &str, method: &str, path: &str, extra: &str) -> String {
    format!(
        r#"<HTTPSamplerProxy testclass="HTTPSamplerProxy" testname="{name}" enabled="true">
  <stringProp name="HTTPSampler.domain">api.test</stringProp>
  <stringProp name="HTTPSampler.method">{method}</stringProp>
  <stringProp name="HTTPSampler.path">{path}</stringProp>
  {extra}
</HTTPSamplerProxy>"#
    )
}

fn args(pairs: &[(&str, &str)]) -> String {
    let items: String = pairs
        .iter()
        .map(|(n, v)| {
            format!(
                r#"<elementProp name="{n}" elementType="HTTPArgument"><stringProp name="Argument.name">{n}</stringProp><stringProp name="Argument.value">{v}</stringProp></elementProp>"#
            )
        })
        .collect();
    format!(
        r#"<elementProp name="HTTPsampler.Arguments" elementType="Arguments"><collectionProp name="Arguments.arguments">{items}</collectionProp></elementProp>"#
    )
}

/// Imports `text`, checks that the plan loads (data files created with their columns), and
/// returns the import.
pub(crate) fn import(text: &str) -> Import {
    import_with(text, &[])
}

pub(crate) fn import_with(text: &str, overrides: &[(String, String)]) -> Import {
    let out = import_jmx(text, &Options::default()).expect("the JMX imports");
    let dir = std::env::temp_dir().join(format!(
        "onrush-import-test-{}-{:?}-{:x}",
        std::process::id(),
        std::thread::current().id(),
        text.len() as u64 * 31 + out.yaml.len() as u64
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for d in &out.data_files {
        let content = if d.columns.is_empty() {
            "x\n".to_string()
        } else {
            format!(
                "{}\n{}\n",
                d.columns.join(","),
                vec!["v"; d.columns.len()].join(",")
            )
        };
        std::fs::write(dir.join(&d.default_path), content).unwrap();
    }
    if let Some(m) = &out.script {
        std::fs::write(dir.join(&m.file), &m.source).unwrap();
    }
    if let Err(e) = crate::load_plan(&out.yaml, &dir, overrides) {
        panic!("the plan does not load: {e}\n{}", out.yaml);
    }
    let _ = std::fs::remove_dir_all(&dir);
    out
}

pub(crate) fn status_of(out: &Import, name: &str) -> (Status, String) {
    let e = out
        .report
        .entries
        .iter()
        .find(|e| e.path.ends_with(name))
        .unwrap_or_else(|| panic!("no entry {name} in {:#?}", out.report.entries));
    (e.status, e.note.clone())
}

pub(crate) fn has(out: &Import, text: &str) {
    assert!(
        out.yaml.contains(text),
        "expected {text:?} in:\n{}",
        out.yaml
    );
}

#[test]
fn test_plan_variables_and_properties_become_vars_overridable_with_d() {
    let text = format!(
        r#"<?xml version="1.0"?>
<jmeterTestPlan><hashTree>
  <TestPlan testclass="TestPlan" testname="Plan">
    <elementProp name="TestPlan.user_defined_variables" elementType="Arguments">
      <collectionProp name="Arguments.arguments">
        <elementProp name="threads" elementType="Argument"><stringProp name="Argument.name">threads</stringProp><stringProp name="Argument.value">${{__P(threads,4)}}</stringProp></elementProp>
        <elementProp name="base.path" elementType="Argument"><stringProp name="Argument.name">base.path</stringProp><stringProp name="Argument.value">/api</stringProp></elementProp>
      </collectionProp>
    </elementProp>
  </TestPlan>
  <hashTree>
    <ThreadGroup testclass="ThreadGroup" testname="Users">
      <stringProp name="ThreadGroup.num_threads">${{threads}}</stringProp>
      <stringProp name="ThreadGroup.ramp_time">${{__P(ramp,10)}}</stringProp>
    </ThreadGroup>
    <hashTree>{}</hashTree>
  </hashTree>
</hashTree></jmeterTestPlan>"#,
        http(
            "list",
            "GET",
            "${base.path}/items?id=${__Random(1,9)}&amp;u=${__UUID()}",
            ""
        )
    );
    let out = import(&text);
    has(&out, "threads: \"4\"");
    has(&out, "ramp: \"10\"");
    has(&out, "base_path: \"/api\"");
    has(&out, "vus: \"${threads}\"");
    has(&out, "ramp_up: \"${ramp}s\"");
    // JMeter puts a `/` before a path that does not start with one, as here.
    has(
        &out,
        "get: \"/${base_path}/items?id=${random_int(1, 9)}&u=${uuid()}\"",
    );
    // -D overrides the property.
    import_with(&text, &[("threads".into(), "7".into())]);
}

#[test]
fn thread_group_load_scheduler_and_setup_groups() {
    let text = r#"<jmeterTestPlan><hashTree>
  <TestPlan testclass="TestPlan" testname="Plan"/>
  <hashTree>
    <SetupThreadGroup testclass="SetupThreadGroup" testname="start server"/>
    <hashTree>
      <HTTPSamplerProxy testclass="HTTPSamplerProxy" testname="start"/><hashTree/>
    </hashTree>
    <ThreadGroup testclass="ThreadGroup" testname="soak">
      <stringProp name="ThreadGroup.num_threads">50</stringProp>
      <stringProp name="ThreadGroup.ramp_time">30</stringProp>
      <boolProp name="ThreadGroup.scheduler">true</boolProp>
      <stringProp name="ThreadGroup.duration">600</stringProp>
      <stringProp name="ThreadGroup.delay">5</stringProp>
      <elementProp name="ThreadGroup.main_controller" elementType="LoopController">
        <boolProp name="LoopController.continue_forever">false</boolProp>
        <stringProp name="LoopController.loops">-1</stringProp>
      </elementProp>
    </ThreadGroup>
    <hashTree>
      <HTTPSamplerProxy testclass="HTTPSamplerProxy" testname="home"><stringProp name="HTTPSampler.domain">h.test</stringProp></HTTPSamplerProxy><hashTree/>
    </hashTree>
  </hashTree>
</hashTree></jmeterTestPlan>"#;
    let out = import(text);
    has(
        &out,
        "vus: 50\n      duration: \"600s\"\n      ramp_up: \"30s\"",
    );
    // The setUp Thread Group is the plan's `setup:`, run once before the load.
    let (s, note) = status_of(&out, "start server");
    assert_eq!(s, Status::Converted, "{note}");
    assert!(note.contains("`setup:`"), "{note}");
    assert_ne!(
        status_of(&out, "start server / start").0,
        Status::NotConverted
    );
    has(&out, "setup:\n  steps:\n");
    has(
        &out,
        "    - name: \"start\"\n      get: \"http://localhost/\"\nscenarios:",
    );
    let (s, note) = status_of(&out, "/ soak");
    assert_eq!(s, Status::Approximated);
    assert!(note.contains("startup delay"), "{note}");
}

#[test]
fn a_disabled_test_fragment_reached_through_a_module_controller_is_converted() {
    let fragment = format!(
        r#"<TestFragmentController testclass="TestFragmentController" testname="Login flow" enabled="false"/>
<hashTree>{}<hashTree/></hashTree>"#,
        http("login", "POST", "/login", &args(&[("user", "u1")]))
    );
    let body = format!(
        r#"<ModuleController testclass="ModuleController" testname="do login" enabled="true">
  <collectionProp name="ModuleController.node_path">
    <stringProp name="1">Test Plan</stringProp><stringProp name="2">Plan</stringProp><stringProp name="3">Login flow</stringProp>
  </collectionProp>
</ModuleController><hashTree/>
<ModuleController testclass="ModuleController" testname="lost" enabled="true">
  <collectionProp name="ModuleController.node_path"><stringProp name="1">Plan</stringProp><stringProp name="2">Nowhere</stringProp></collectionProp>
</ModuleController><hashTree/>
{}<hashTree/>"#,
        http("off", "GET", "/off", "").replace("enabled=\"true\"", "enabled=\"false\"")
    );
    let out = import(&jmx(&fragment, &body));
    has(&out, "post: \"/login\"");
    has(&out, "form:\n          user: \"u1\"");
    assert!(!out.yaml.contains("/off"), "{}", out.yaml);
    let (s, note) = status_of(&out, "Users / do login");
    assert_eq!(s, Status::Converted);
    assert!(note.contains("Login flow"), "{note}");
    assert_eq!(
        status_of(&out, "do login / Login flow / login").0,
        Status::Converted
    );
    assert_eq!(status_of(&out, "Users / lost").0, Status::NotConverted);
    let (s, note) = status_of(&out, "Users / off");
    assert_eq!(s, Status::Converted);
    assert!(note.contains("disabled"), "{note}");
}

#[test]
fn unknown_plugin_elements_are_reported_not_fatal() {
    let body = format!(
        r#"<kg.apc.jmeter.samplers.DummySampler guiclass="x" testclass="kg.apc.jmeter.samplers.DummySampler" testname="dummy"/><hashTree/>
<com.example.Fancy testclass="com.example.Fancy" testname="fancy thing"/>
<hashTree>{}<hashTree/></hashTree>
<kg.apc.jmeter.control.ParameterizedController testclass="kg.apc.jmeter.control.ParameterizedController" testname="params"/>
<hashTree>{}<hashTree/></hashTree>"#,
        http("inside", "GET", "/a", ""),
        http("in controller", "GET", "/b", "")
    );
    let text = jmx(
        r#"<kg.apc.jmeter.threads.UltimateThreadGroup testclass="kg.apc.jmeter.threads.UltimateThreadGroup" testname="ctg"/><hashTree/>"#,
        &body,
    );
    let out = import(&text);
    assert_eq!(status_of(&out, "Users / dummy").0, Status::NotConverted);
    assert_eq!(
        status_of(&out, "Users / fancy thing").0,
        Status::NotConverted
    );
    assert_eq!(
        status_of(&out, "fancy thing / inside").0,
        Status::NotConverted
    );
    assert_eq!(status_of(&out, "Users / params").0, Status::Approximated);
    has(&out, "get: \"/b\"");
    assert_eq!(status_of(&out, "Plan / ctg").0, Status::NotConverted);
    has(
        &out,
        "# NOT CONVERTED: kg.apc.jmeter.samplers.DummySampler `dummy`",
    );
}

#[test]
fn http_bodies_query_form_raw_multipart() {
    let raw = r#"<boolProp name="HTTPSampler.postBodyRaw">true</boolProp>
<elementProp name="HTTPsampler.Arguments" elementType="Arguments"><collectionProp name="Arguments.arguments">
<elementProp name="" elementType="HTTPArgument"><stringProp name="Argument.value">{"id": ${__threadNum}}</stringProp></elementProp>
</collectionProp></elementProp>"#;
    let files = format!(
        r#"{}<boolProp name="HTTPSampler.DO_MULTIPART_POST">true</boolProp>
<elementProp name="HTTPsampler.Files" elementType="HTTPFileArgs"><collectionProp name="HTTPFileArgs.files">
<elementProp name="up.bin" elementType="HTTPFileArg"><stringProp name="File.path">up.bin</stringProp><stringProp name="File.paramname">file</stringProp><stringProp name="File.mimetype">application/octet-stream</stringProp></elementProp>
</collectionProp></elementProp>"#,
        args(&[("title", "report")])
    );
    let body = [
        http(
            "search",
            "GET",
            "/search",
            &args(&[("q", "red shoes"), ("page", "2")]),
        ),
        http(
            "login",
            "POST",
            "/login",
            &args(&[("user", "${user}"), ("pw", "x")]),
        ),
        http("json", "PUT", "/items/1", raw),
        http("upload", "POST", "/upload", &files),
        http("purge", "PURGE", "/cache", ""),
        "<hashTree/>".into(),
    ]
    .join("<hashTree/>");
    let out = import(&jmx("", &body));
    has(
        &out,
        "get: \"/search\"\n        query:\n          q: \"red shoes\"\n          page: \"2\"",
    );
    has(
        &out,
        "post: \"/login\"\n        form:\n          user: \"${user}\"",
    );
    has(
        &out,
        "put: \"/items/1\"\n        body: \"{\\\"id\\\": ${vu}}\"",
    );
    has(&out, "multipart:\n          title: \"report\"\n          file:\n            file: \"up.bin\"\n            content_type: \"application/octet-stream\"");
    has(&out, "method: \"PURGE\"\n        path: \"/cache\"");
    has(&out, "target: \"http://api.test\"");
    assert_eq!(out.data_files.len(), 1);
    // `${user}` is set by nothing: the plan marks it, for the run to warn (-D gives it).
    has(
        &out,
        "user: \"${unset(\\\"set by nothing that converted (a script? a plugin?)\\\")}\"",
    );
}

#[test]
fn defaults_headers_auth_and_cookies() {
    let plan = r#"<ConfigTestElement testclass="ConfigTestElement" testname="Defaults">
  <stringProp name="HTTPSampler.domain">shop.test</stringProp>
  <stringProp name="HTTPSampler.port">8443</stringProp>
  <stringProp name="HTTPSampler.protocol">https</stringProp>
  <stringProp name="HTTPSampler.response_timeout">2500</stringProp>
</ConfigTestElement><hashTree/>
<HeaderManager testclass="HeaderManager" testname="Headers">
  <collectionProp name="HeaderManager.headers">
    <elementProp name="" elementType="Header"><stringProp name="Header.name">X-Api</stringProp><stringProp name="Header.value">k-${__P(key,abc)}</stringProp></elementProp>
    <elementProp name="" elementType="Header"><stringProp name="Header.name">Accept-Encoding</stringProp><stringProp name="Header.value">gzip</stringProp></elementProp>
  </collectionProp>
</HeaderManager><hashTree/>
<AuthManager testclass="AuthManager" testname="Auth">
  <collectionProp name="AuthManager.auth_list">
    <elementProp name="" elementType="Authorization"><stringProp name="Authorization.url">https://shop.test:8443/admin</stringProp><stringProp name="Authorization.username">admin</stringProp><stringProp name="Authorization.password">secret</stringProp></elementProp>
  </collectionProp>
</AuthManager><hashTree/>"#;
    let sampler = r#"<HTTPSamplerProxy testclass="HTTPSamplerProxy" testname="admin"><stringProp name="HTTPSampler.path">/admin/x</stringProp></HTTPSamplerProxy><hashTree/>
<HTTPSamplerProxy testclass="HTTPSamplerProxy" testname="public"><stringProp name="HTTPSampler.path">/p</stringProp></HTTPSamplerProxy><hashTree/>"#;
    let out = import(&jmx(plan, sampler));
    has(&out, "target: \"https://shop.test:8443\"");
    has(&out, "X-Api: \"k-${key}\"");
    has(&out, "decompress: true");
    has(
        &out,
        "auth:\n          basic:\n            user: \"admin\"\n            password: \"secret\"",
    );
    has(&out, "timeout: \"2500ms\"");
    assert_eq!(out.yaml.matches("auth:").count(), 1, "{}", out.yaml);
    assert!(!out.yaml.contains("cookies: \"off\""));

    // Without a Cookie Manager JMeter keeps no cookies.
    let text = jmx("", &http("a", "GET", "/", "")).replace(
        "<CookieManager testclass=\"CookieManager\" testname=\"Cookies\"/>",
        "",
    );
    has(&import(&text), "cookies: \"off\"");
    let text = jmx("", &http("a", "GET", "/", "")).replace(
        "<CookieManager testclass=\"CookieManager\" testname=\"Cookies\"/>",
        "<CookieManager testclass=\"CookieManager\" testname=\"Cookies\"><boolProp name=\"CookieManager.clearEachIteration\">true</boolProp></CookieManager>",
    );
    has(&import(&text), "cookies: \"per_iteration\"");
}

#[test]
fn csv_data_sets_become_feeders_and_counters_functions() {
    let plan = r#"<CSVDataSet testclass="CSVDataSet" testname="users">
  <stringProp name="filename">users.csv</stringProp>
  <stringProp name="variableNames">user,pass</stringProp>
  <boolProp name="ignoreFirstLine">true</boolProp>
  <boolProp name="recycle">false</boolProp>
  <boolProp name="stopThread">true</boolProp>
  <stringProp name="shareMode">shareMode.all</stringProp>
</CSVDataSet><hashTree/>
<CSVDataSet testclass="CSVDataSet" testname="terms">
  <stringProp name="filename">terms.tsv</stringProp>
  <stringProp name="variableNames">term</stringProp>
  <stringProp name="delimiter">\t</stringProp>
  <boolProp name="recycle">true</boolProp>
</CSVDataSet><hashTree/>
<CounterConfig testclass="CounterConfig" testname="n">
  <stringProp name="CounterConfig.start">0</stringProp><stringProp name="CounterConfig.incr">1</stringProp>
  <stringProp name="CounterConfig.name">n</stringProp><boolProp name="CounterConfig.per_user">true</boolProp>
</CounterConfig><hashTree/>
<CounterConfig testclass="CounterConfig" testname="order">
  <stringProp name="CounterConfig.start">1</stringProp><stringProp name="CounterConfig.incr">1</stringProp>
  <stringProp name="CounterConfig.name">order</stringProp><boolProp name="CounterConfig.per_user">false</boolProp>
</CounterConfig><hashTree/>"#;
    let body = http(
        "buy",
        "POST",
        "/buy/${n}/${order}",
        &args(&[("u", "${user}"), ("t", "${term}")]),
    );
    let out = import(&jmx(plan, &(body + "<hashTree/>")));
    has(
        &out,
        "- file: \"users.csv\"\n        mode: \"unique\"\n        on_exhausted: \"stop\"",
    );
    has(
        &out,
        "- file: \"terms.tsv\"\n        delimiter: \"\\t\"\n        mode: \"circular\"",
    );
    has(
        &out,
        "post: \"/buy/${iteration}/${global_counter(\\\"order\\\")}\"",
    );
    assert_eq!(status_of(&out, "Plan / users").0, Status::Converted);
    let (s, note) = status_of(&out, "Plan / terms");
    assert_eq!(s, Status::Approximated);
    assert!(note.contains("first line"), "{note}");
    assert_eq!(out.data_files[0].columns, vec!["user", "pass"]);
}

#[test]
fn extractors_and_assertions() {
    let children = r#"<hashTree>
<RegexExtractor testclass="RegexExtractor" testname="re">
  <stringProp name="RegexExtractor.useHeaders">false</stringProp><stringProp name="RegexExtractor.refname">token</stringProp>
  <stringProp name="RegexExtractor.regex">token="(.+?)"</stringProp><stringProp name="RegexExtractor.template">$1$</stringProp>
  <stringProp name="RegexExtractor.default">NONE</stringProp><stringProp name="RegexExtractor.match_number">1</stringProp>
</RegexExtractor><hashTree/>
<BoundaryExtractor testclass="BoundaryExtractor" testname="bd">
  <stringProp name="BoundaryExtractor.refname">sid</stringProp><stringProp name="BoundaryExtractor.lboundary">sid=</stringProp>
  <stringProp name="BoundaryExtractor.rboundary">;</stringProp><stringProp name="BoundaryExtractor.match_number">-1</stringProp>
</BoundaryExtractor><hashTree/>
<JSONPostProcessor testclass="JSONPostProcessor" testname="js">
  <stringProp name="JSONPostProcessor.referenceNames">id;name</stringProp><stringProp name="JSONPostProcessor.jsonPathExprs">$.id;$.name</stringProp>
  <stringProp name="JSONPostProcessor.match_numbers">1;0</stringProp><stringProp name="JSONPostProcessor.defaultValues">0;x</stringProp>
</JSONPostProcessor><hashTree/>
<HtmlExtractor testclass="HtmlExtractor" testname="css">
  <stringProp name="HtmlExtractor.refname">csrf</stringProp><stringProp name="HtmlExtractor.expr">input[name=csrf]</stringProp>
  <stringProp name="HtmlExtractor.attribute">value</stringProp>
</HtmlExtractor><hashTree/>
<XPathExtractor testclass="XPathExtractor" testname="xp">
  <stringProp name="XPathExtractor.refname">title</stringProp><stringProp name="XPathExtractor.xpathQuery">//title</stringProp>
</XPathExtractor><hashTree/>
<ResponseAssertion testclass="ResponseAssertion" testname="body">
  <collectionProp name="Asserion.test_strings"><stringProp name="1">Welcome</stringProp></collectionProp>
  <stringProp name="Assertion.test_field">Assertion.response_data</stringProp><intProp name="Assertion.test_type">16</intProp>
</ResponseAssertion><hashTree/>
<ResponseAssertion testclass="ResponseAssertion" testname="not">
  <collectionProp name="Asserion.test_strings"><stringProp name="1">Error</stringProp></collectionProp>
  <stringProp name="Assertion.test_field">Assertion.response_data</stringProp><intProp name="Assertion.test_type">20</intProp>
</ResponseAssertion><hashTree/>
<DurationAssertion testclass="DurationAssertion" testname="fast"><stringProp name="DurationAssertion.duration">500</stringProp></DurationAssertion><hashTree/>
<SizeAssertion testclass="SizeAssertion" testname="size"><stringProp name="SizeAssertion.size">100</stringProp><intProp name="SizeAssertion.operator">3</intProp></SizeAssertion><hashTree/>
<JSONPathAssertion testclass="JSONPathAssertion" testname="ok">
  <stringProp name="JSON_PATH">$.ok</stringProp><stringProp name="EXPECTED_VALUE">true</stringProp>
  <boolProp name="JSONVALIDATION">true</boolProp><boolProp name="ISREGEX">false</boolProp>
</JSONPathAssertion><hashTree/>
</hashTree>"#;
    let body = http("page", "GET", "/p", "") + children;
    let out = import(&jmx("", &body));
    has(&out, "token:\n            regex: \"token=\\\"(.+?)\\\"\"\n            group: 1\n            default: \"NONE\"");
    has(&out, "sid:\n            boundary:\n              - \"sid=\"\n              - \";\"\n            occurrence: \"all\"\n            default: \"\"");
    has(
        &out,
        "id:\n            jsonpath: \"$.id\"\n            default: \"0\"",
    );
    has(
        &out,
        "name:\n            jsonpath: \"$.name\"\n            occurrence: \"random\"",
    );
    has(
        &out,
        "csrf:\n            css: \"input[name=csrf]\"\n            attribute: \"value\"",
    );
    has(&out, "title:\n            xpath: \"//title\"");
    has(&out, "- body_contains: \"Welcome\"");
    has(&out, "- duration_below: \"501ms\"");
    has(&out, "- body_size:\n              min: 101");
    has(&out, "- jsonpath: \"$.ok\"\n            equals: \"true\"");
    assert_eq!(status_of(&out, "page / not").0, Status::NotConverted);
}

#[test]
fn timers_become_think_steps_and_constant_throughput_pacing() {
    let body = format!(
        r#"<ConstantTimer testclass="ConstantTimer" testname="c"><stringProp name="ConstantTimer.delay">300</stringProp></ConstantTimer><hashTree/>
<UniformRandomTimer testclass="UniformRandomTimer" testname="u"><stringProp name="ConstantTimer.delay">100</stringProp><stringProp name="RandomTimer.range">50</stringProp></UniformRandomTimer><hashTree/>
<GaussianRandomTimer testclass="GaussianRandomTimer" testname="g"><stringProp name="ConstantTimer.delay">1000</stringProp><stringProp name="RandomTimer.range">200</stringProp></GaussianRandomTimer><hashTree/>
<ConstantThroughputTimer testclass="ConstantThroughputTimer" testname="ctt"><intProp name="calcMode">0</intProp><doubleProp><name>throughput</name><value>30.0</value><savedValue>0.0</savedValue></doubleProp></ConstantThroughputTimer><hashTree/>
{}<hashTree/>{}<hashTree/>"#,
        http("a", "GET", "/a", ""),
        http("b", "GET", "/b", "")
    );
    let out = import(&jmx("", &body));
    has(&out, "- think: \"300ms\"\n      - think: \"100ms..150ms\"\n      - think: \"800ms..1200ms\"\n      # JMeter: HTTPSamplerProxy `a`");
    assert_eq!(out.yaml.matches("think: \"300ms\"").count(), 2);
    // 30 samples/min per thread with 2 requests per iteration: one iteration every 4 s.
    has(&out, "pacing: \"4000ms\"");
    assert_eq!(status_of(&out, "Users / g").0, Status::Approximated);
}

#[test]
fn controllers_become_flow_steps() {
    let s = |n: &str| http(n, "GET", &format!("/{n}"), "") + "<hashTree/>";
    let c = |class: &str, name: &str, props: &str, inner: &str| {
        format!(
            r#"<{class} testclass="{class}" testname="{name}">{props}</{class}><hashTree>{inner}</hashTree>"#
        )
    };
    let extract = r#"<hashTree><RegexExtractor testclass="RegexExtractor" testname="re">
  <stringProp name="RegexExtractor.refname">role</stringProp><stringProp name="RegexExtractor.regex">role=(\w+)</stringProp>
  <stringProp name="RegexExtractor.template">$1$</stringProp><stringProp name="RegexExtractor.match_number">-1</stringProp>
</RegexExtractor><hashTree/></hashTree>"#;
    let body = [
        http("me", "GET", "/me", "") + extract,
        c("IfController", "admin?", r#"<stringProp name="IfController.condition">${__jexl3("${role}" == "admin")}</stringProp>"#, &s("admin")),
        c("WhileController", "more", r#"<stringProp name="WhileController.condition">${role}</stringProp>"#, &s("next")),
        c("ForeachController", "each", r#"<stringProp name="ForeachController.inputVal">role</stringProp><stringProp name="ForeachController.returnVal">r</stringProp>"#, &s("each")),
        c("OnceOnlyController", "once", "", &s("login")),
        c("TransactionController", "tx", "", &(s("t1") + &s("t2"))),
        c("RandomController", "rnd", "", &(s("r1") + &s("r2"))),
        c("ThroughputController", "tp", r#"<intProp name="ThroughputController.style">1</intProp><FloatProperty><name>ThroughputController.percentThroughput</name><value>25.0</value></FloatProperty>"#, &s("sometimes")),
        c("SwitchController", "sw", r#"<stringProp name="SwitchController.value">1</stringProp>"#, &(s("sw0") + &s("sw1"))),
        c("RunTime", "rt", r#"<stringProp name="RunTime.seconds">5</stringProp>"#, &s("timed")),
        c("GenericController", "simple", "", &s("plain")),
        r#"<TestAction testclass="TestAction" testname="pause"><intProp name="ActionProcessor.action">1</intProp><stringProp name="ActionProcessor.duration">250</stringProp></TestAction><hashTree/>"#.to_string(),
        r#"<TestAction testclass="TestAction" testname="stop"><intProp name="ActionProcessor.action">0</intProp></TestAction><hashTree/>"#.to_string(),
    ]
    .concat();
    let out = import(&jmx("", &body));
    has(
        &out,
        "- if:\n          var: \"role\"\n          equals: \"admin\"\n        then:",
    );
    has(&out, "- loop:\n          while:\n            var: \"role\"\n            not_equals: \"false\"\n          max: 1000");
    has(
        &out,
        "- loop:\n          foreach: \"role\"\n          as: \"r\"",
    );
    has(
        &out,
        "- once:\n          # JMeter: HTTPSamplerProxy `login`",
    );
    has(&out, "- group:\n          name: \"tx\"");
    has(&out, "- random:\n          - weight: 1\n            steps:");
    has(&out, "- weight: 2500");
    assert!(
        !out.yaml.contains("/sw0") && out.yaml.contains("/sw1"),
        "{}",
        out.yaml
    );
    has(&out, "get: \"/timed\"");
    has(&out, "get: \"/plain\"");
    has(&out, "- think: \"250ms\"");
    assert_eq!(status_of(&out, "Users / stop").0, Status::NotConverted);
    assert_eq!(status_of(&out, "Users / rt").0, Status::Approximated);
}

#[test]
fn tcp_scripts_os_process_and_listeners() {
    let body = r#"<TCPSampler testclass="TCPSampler" testname="ping">
  <stringProp name="TCPSampler.server">10.0.0.5</stringProp><stringProp name="TCPSampler.port">7000</stringProp>
  <stringProp name="TCPSampler.request">PING ${__threadNum}</stringProp><stringProp name="TCPSampler.EolByte">10</stringProp>
  <stringProp name="TCPSampler.timeout">2000</stringProp>
</TCPSampler><hashTree/>
<JSR223PostProcessor testclass="JSR223PostProcessor" testname="groovy post">
  <stringProp name="scriptLanguage">groovy</stringProp><stringProp name="script">import java.util.UUID
vars.put("x", "1")
log.info("hi")</stringProp>
</JSR223PostProcessor><hashTree/>
<BeanShellSampler testclass="BeanShellSampler" testname="bsh"><stringProp name="BeanShellSampler.filename">prep.bsh</stringProp></BeanShellSampler><hashTree/>
<SystemSampler testclass="SystemSampler" testname="tar">
  <stringProp name="SystemSampler.command">tar</stringProp>
  <boolProp name="SystemSampler.checkReturnCode">true</boolProp>
  <stringProp name="SystemSampler.expectedReturnCode">2</stringProp>
  <stringProp name="SystemSampler.timeout">5000</stringProp>
  <elementProp name="SystemSampler.arguments" elementType="Arguments"><collectionProp name="Arguments.arguments">
    <elementProp name="" elementType="Argument"><stringProp name="Argument.value">czf</stringProp></elementProp>
    <elementProp name="" elementType="Argument"><stringProp name="Argument.value">out-${__threadNum}.tgz</stringProp></elementProp>
  </collectionProp></elementProp>
  <elementProp name="SystemSampler.environment" elementType="Arguments"><collectionProp name="Arguments.arguments">
    <elementProp name="GZIP" elementType="Argument"><stringProp name="Argument.name">GZIP</stringProp><stringProp name="Argument.value">-9</stringProp></elementProp>
  </collectionProp></elementProp>
</SystemSampler><hashTree/>
<ResultCollector testclass="ResultCollector" testname="View Results Tree"/><hashTree/>
<BackendListener testclass="BackendListener" testname="influx"/><hashTree/>"#;
    let out = import(&jmx("", body));
    has(&out, "tcp: \"10.0.0.5:7000\"\n        send: \"PING ${vu}\"\n        until: \"\\n\"\n        timeout: \"2000ms\"");
    has(
        &out,
        "# NOT CONVERTED: JSR223PostProcessor `groovy post` (groovy)",
    );
    has(
        &out,
        "#   | vars.put(\"x\", \"1\")\n      #   | log.info(\"hi\")",
    );
    has(&out, "#   script file: prep.bsh");
    // The OS Process Sampler is an exec step: argv as JMeter runs it, never through a shell.
    has(&out, "name: \"tar\"\n        exec:\n          - \"tar\"\n          - \"czf\"\n          - \"out-${vu}.tgz\"");
    has(&out, "GZIP: \"-9\"");
    has(&out, "timeout: \"5000ms\"");
    has(&out, "expect_exit: 2");
    assert_eq!(status_of(&out, "Users / tar").0, Status::Converted);
    assert_eq!(
        status_of(&out, "Users / View Results Tree").0,
        Status::Converted
    );
    let (s, note) = status_of(&out, "Users / influx");
    assert_eq!(s, Status::Approximated);
    assert!(note.contains("--influx"), "{note}");
}

#[test]
fn include_controllers_read_the_file_beside_the_jmx() {
    let dir = std::env::temp_dir().join(format!(
        "onrush-import-include-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let included = format!(
        r#"<jmeterTestPlan><hashTree><TestPlan testclass="TestPlan" testname="lib"/><hashTree>
<TestFragmentController testclass="TestFragmentController" testname="frag" enabled="false"/><hashTree>{}<hashTree/></hashTree>
</hashTree></hashTree></jmeterTestPlan>"#,
        http("included", "GET", "/inc", "")
    );
    std::fs::write(dir.join("lib.jmx"), included).unwrap();
    let body = r#"<IncludeController testclass="IncludeController" testname="inc"><stringProp name="IncludeController.includepath">lib.jmx</stringProp></IncludeController><hashTree/>
<IncludeController testclass="IncludeController" testname="missing"><stringProp name="IncludeController.includepath">nope.jmx</stringProp></IncludeController><hashTree/>"#;
    let options = Options {
        base_dir: dir.clone(),
        ..Options::default()
    };
    let out = import_jmx(&jmx("", body), &options).unwrap();
    assert!(out.yaml.contains("get: \"/inc\""), "{}", out.yaml);
    let e = out
        .report
        .entries
        .iter()
        .find(|e| e.path.ends_with("included"))
        .unwrap();
    assert!(e.at.starts_with("lib.jmx:"), "{e:?}");
    assert_eq!(status_of(&out, "Users / missing").0, Status::NotConverted);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_broken_file_names_line_and_column() {
    let err = import_jmx(
        "<jmeterTestPlan>\n  <hashTree>\n    <TestPlan testname=\"a\"\n  </hashTree>",
        &Options::default(),
    )
    .unwrap_err();
    assert_eq!(err.line, 4, "{err}");
    assert!(err.col > 0);
    assert!(err.to_string().starts_with("4:"), "{err}");
    let err = import_jmx("<plan/>", &Options::default()).unwrap_err();
    assert!(err.message.contains("jmeterTestPlan"), "{err}");
}

#[test]
fn the_report_as_json() {
    let out = import(&jmx("", &(http("a", "GET", "/a", "") + "<hashTree/>")));
    let v: serde_json::Value = serde_json::from_str(&out.report.to_json()).unwrap();
    assert_eq!(v["summary"]["not_converted"], 0);
    let a = v["elements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "Plan / Users / a")
        .unwrap();
    assert_eq!(a["status"], "converted");
    assert_eq!(a["testclass"], "HTTPSamplerProxy");
    assert!(a["at"].as_str().unwrap().contains(':'));
    assert!(out.report.to_text().contains("0 not converted"));
}

#[test]
fn tcp_sampler_config_applies_to_the_tcp_samplers_in_scope() {
    let plan = r#"<ConfigTestElement guiclass="TCPConfigGui" testclass="ConfigTestElement" testname="TCP Sampler Config">
  <stringProp name="TCPSampler.server">127.0.0.1</stringProp><stringProp name="TCPSampler.port">${__P(port,2222)}</stringProp>
  <stringProp name="TCPSampler.EolByte">10</stringProp><boolProp name="TCPSampler.closeConnection">true</boolProp>
</ConfigTestElement><hashTree/>"#;
    let body = r#"<TCPSampler testclass="TCPSampler" testname="hello"><stringProp name="TCPSampler.request">hello</stringProp></TCPSampler><hashTree/>
<TCPSampler testclass="TCPSampler" testname="bin"><stringProp name="TCPSampler.classname">LengthPrefixedBinaryTCPClientImpl</stringProp><stringProp name="TCPSampler.request">0102</stringProp></TCPSampler><hashTree/>"#;
    let out = import(&jmx(plan, body));
    has(
        &out,
        "tcp: \"127.0.0.1:${port}\"\n        send: \"hello\"\n        until: \"\\n\"",
    );
    has(&out, "send_hex: \"00020102\"\n        length_prefix: 2");
    let (s, note) = status_of(&out, "Users / hello");
    assert_eq!(s, Status::Approximated);
    assert!(note.contains("closes the connection"), "{note}");
}

#[test]
fn concurrency_and_arrivals_thread_groups_become_stages() {
    let text = format!(
        r#"<jmeterTestPlan><hashTree><TestPlan testclass="TestPlan" testname="Plan"/><hashTree>
<com.blazemeter.jmeter.threads.concurrency.ConcurrencyThreadGroup testclass="com.blazemeter.jmeter.threads.concurrency.ConcurrencyThreadGroup" testname="ctg">
  <stringProp name="TargetLevel">${{__P(users,20)}}</stringProp><stringProp name="RampUp">2</stringProp>
  <stringProp name="Steps">4</stringProp><stringProp name="Hold">5</stringProp><stringProp name="Unit">M</stringProp>
</com.blazemeter.jmeter.threads.concurrency.ConcurrencyThreadGroup>
<hashTree>{}<hashTree/></hashTree>
<com.blazemeter.jmeter.threads.arrivals.ArrivalsThreadGroup testclass="com.blazemeter.jmeter.threads.arrivals.ArrivalsThreadGroup" testname="atg">
  <stringProp name="TargetLevel">50</stringProp><stringProp name="RampUp">30</stringProp><stringProp name="Hold">60</stringProp>
  <stringProp name="Unit">S</stringProp><stringProp name="ConcurrencyLimit">200</stringProp>
</com.blazemeter.jmeter.threads.arrivals.ArrivalsThreadGroup>
<hashTree>{}<hashTree/></hashTree>
</hashTree></hashTree></jmeterTestPlan>"#,
        http("a", "GET", "/a", ""),
        http("b", "GET", "/b", "")
    );
    let out = import(&text);
    has(&out, "stages:
        - vus: \"${users}\"\n          over: \"2m\"\n        - vus: \"${users}\"\n          over: \"5m\"");
    has(&out, "stages:
        - rate: \"50/s\"\n          over: \"30s\"\n        - rate: \"50/s\"\n          over: \"60s\"\n      max_vus: 200");
    assert_eq!(status_of(&out, "Plan / ctg").0, Status::Approximated);
    assert_eq!(status_of(&out, "Plan / atg").0, Status::Converted);
}

#[test]
fn a_server_named_by_a_variable_nothing_sets_still_loads() {
    let s = r#"<HTTPSamplerProxy testclass="HTTPSamplerProxy" testname="a"><stringProp name="HTTPSampler.domain">${server}</stringProp><stringProp name="HTTPSampler.path">/abcdeü x</stringProp></HTTPSamplerProxy><hashTree/>"#;
    let out = import(&jmx("", s));
    has(&out, "server: \"localhost\"");
    // (a byte slice at 7 would cut `ü` in two)
    has(&out, "get: \"/abcde%C3%BC%20x\"");
}

#[test]
fn an_ultimate_thread_group_becomes_stages_through_every_corner() {
    let row = |cells: [&str; 5]| {
        let props: String = cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!(r#"<stringProp name="{}">{c}</stringProp>"#, 48 + i))
            .collect();
        format!(r#"<collectionProp name="row">{props}</collectionProp>"#)
    };
    let text = format!(
        r#"<jmeterTestPlan><hashTree><TestPlan testclass="TestPlan" testname="Plan"/><hashTree>
<kg.apc.jmeter.threads.UltimateThreadGroup testclass="kg.apc.jmeter.threads.UltimateThreadGroup" testname="utg">
  <collectionProp name="ultimatethreadgroupdata">{}{}</collectionProp>
  <stringProp name="ThreadGroup.on_sample_error">stopthread</stringProp>
</kg.apc.jmeter.threads.UltimateThreadGroup>
<hashTree>{}<hashTree/></hashTree>
</hashTree></hashTree></jmeterTestPlan>"#,
        row(["10", "0", "10", "20", "10"]),
        row(["6", "15", "5", "5", "0"]),
        http("a", "GET", "/a", "")
    );
    let out = import(&text);
    has(
        &out,
        "stages:
        - vus: 10\n          over: \"10s\"\n        - vus: 10\n          over: \"5s\"\n        - vus: 16\n          over: \"5s\"\n        - vus: 16\n          over: \"5s\"\n        - vus: 10\n          over: \"1ms\"\n        - vus: 10\n          over: \"4999ms\"\n        - vus: 0\n          over: \"10s\"",
    );
    has(&out, "on_failure: \"stop_vu\"");
    assert_eq!(status_of(&out, "Plan / utg").0, Status::Converted);

    // A row that is not five numbers is left out, said so.
    let broken = text.replace(
        &row(["6", "15", "5", "5", "0"]),
        &row(["6", "${x}", "5", "5", "0"]),
    );
    let out = import(&broken);
    let (status, note) = status_of(&out, "Plan / utg");
    assert_eq!(status, Status::Approximated);
    assert!(note.contains("row 2"), "{note}");
}
