//! `onrush import jmx`: a JMeter plan aimed at the built-in server is imported, run, and the
//! server receives exactly the requests JMeter would send.

use crate::common;
use common::*;

/// 3 threads × 2 loops × (home + a Loop Controller of 3 × item + a Transaction Controller
/// holding a POST and a Module Controller that runs a disabled Test Fragment's request), with
/// a disabled sampler that must not be sent: 3 × 2 × (1 + 3 + 1 + 1) = 36 requests.
const JMX: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<jmeterTestPlan version="1.2" properties="5.0" jmeter="5.6.3">
  <hashTree>
    <TestPlan guiclass="TestPlanGui" testclass="TestPlan" testname="Round trip" enabled="true">
      <elementProp name="TestPlan.user_defined_variables" elementType="Arguments">
        <collectionProp name="Arguments.arguments">
          <elementProp name="host" elementType="Argument">
            <stringProp name="Argument.name">host</stringProp>
            <stringProp name="Argument.value">127.0.0.1</stringProp>
          </elementProp>
        </collectionProp>
      </elementProp>
    </TestPlan>
    <hashTree>
      <ConfigTestElement guiclass="HttpDefaultsGui" testclass="ConfigTestElement" testname="HTTP Request Defaults" enabled="true">
        <stringProp name="HTTPSampler.domain">${host}</stringProp>
        <stringProp name="HTTPSampler.port">${__P(port,8080)}</stringProp>
        <stringProp name="HTTPSampler.protocol">http</stringProp>
      </ConfigTestElement>
      <hashTree/>
      <CookieManager guiclass="CookiePanel" testclass="CookieManager" testname="Cookies" enabled="true"/>
      <hashTree/>
      <ThreadGroup guiclass="ThreadGroupGui" testclass="ThreadGroup" testname="Users" enabled="true">
        <stringProp name="ThreadGroup.num_threads">${__P(threads,3)}</stringProp>
        <stringProp name="ThreadGroup.ramp_time">0</stringProp>
        <elementProp name="ThreadGroup.main_controller" elementType="LoopController" guiclass="LoopControlPanel" testclass="LoopController" testname="Loop Controller" enabled="true">
          <boolProp name="LoopController.continue_forever">false</boolProp>
          <stringProp name="LoopController.loops">2</stringProp>
        </elementProp>
      </ThreadGroup>
      <hashTree>
        <HTTPSamplerProxy guiclass="HttpTestSampleGui" testclass="HTTPSamplerProxy" testname="home" enabled="true">
          <stringProp name="HTTPSampler.path">/</stringProp>
          <stringProp name="HTTPSampler.method">GET</stringProp>
        </HTTPSamplerProxy>
        <hashTree>
          <ResponseAssertion guiclass="AssertionGui" testclass="ResponseAssertion" testname="is 200" enabled="true">
            <collectionProp name="Asserion.test_strings">
              <stringProp name="49586">200</stringProp>
            </collectionProp>
            <stringProp name="Assertion.test_field">Assertion.response_code</stringProp>
            <intProp name="Assertion.test_type">8</intProp>
          </ResponseAssertion>
          <hashTree/>
        </hashTree>
        <LoopController guiclass="LoopControlPanel" testclass="LoopController" testname="three items" enabled="true">
          <stringProp name="LoopController.loops">3</stringProp>
        </LoopController>
        <hashTree>
          <HTTPSamplerProxy guiclass="HttpTestSampleGui" testclass="HTTPSamplerProxy" testname="item" enabled="true">
            <stringProp name="HTTPSampler.path">/bytes/16</stringProp>
            <stringProp name="HTTPSampler.method">GET</stringProp>
          </HTTPSamplerProxy>
          <hashTree/>
          <HTTPSamplerProxy guiclass="HttpTestSampleGui" testclass="HTTPSamplerProxy" testname="disabled" enabled="false">
            <stringProp name="HTTPSampler.path">/never</stringProp>
            <stringProp name="HTTPSampler.method">GET</stringProp>
          </HTTPSamplerProxy>
          <hashTree/>
        </hashTree>
        <TransactionController guiclass="TransactionControllerGui" testclass="TransactionController" testname="checkout" enabled="true"/>
        <hashTree>
          <HTTPSamplerProxy guiclass="HttpTestSampleGui" testclass="HTTPSamplerProxy" testname="echo" enabled="true">
            <boolProp name="HTTPSampler.postBodyRaw">true</boolProp>
            <elementProp name="HTTPsampler.Arguments" elementType="Arguments">
              <collectionProp name="Arguments.arguments">
                <elementProp name="" elementType="HTTPArgument">
                  <stringProp name="Argument.value">thread ${__threadNum}</stringProp>
                </elementProp>
              </collectionProp>
            </elementProp>
            <stringProp name="HTTPSampler.path">/echo</stringProp>
            <stringProp name="HTTPSampler.method">POST</stringProp>
          </HTTPSamplerProxy>
          <hashTree/>
          <ModuleController guiclass="ModuleControllerGui" testclass="ModuleController" testname="shared" enabled="true">
            <collectionProp name="ModuleController.node_path">
              <stringProp name="1">Test Plan</stringProp>
              <stringProp name="2">Round trip</stringProp>
              <stringProp name="3">Fragment</stringProp>
            </collectionProp>
          </ModuleController>
          <hashTree/>
        </hashTree>
      </hashTree>
      <TestFragmentController guiclass="TestFragmentControllerGui" testclass="TestFragmentController" testname="Fragment" enabled="false"/>
      <hashTree>
        <HTTPSamplerProxy guiclass="HttpTestSampleGui" testclass="HTTPSamplerProxy" testname="from fragment" enabled="true">
          <stringProp name="HTTPSampler.path">/bytes/1</stringProp>
          <stringProp name="HTTPSampler.method">GET</stringProp>
        </HTTPSamplerProxy>
        <hashTree/>
      </hashTree>
      <ResultCollector guiclass="SummaryReport" testclass="ResultCollector" testname="Summary Report" enabled="true"/>
      <hashTree/>
    </hashTree>
  </hashTree>
</jmeterTestPlan>
"#;

#[test]
fn an_imported_jmx_sends_what_jmeter_would() {
    let server = Server::start();
    let dir = temp_dir("import-jmx");
    let jmx = dir.join("plan.jmx");
    std::fs::write(&jmx, JMX).unwrap();
    let plan = dir.join("plan.yaml");
    let report = dir.join("report.json");
    let output = onrush()
        .args(["import", "jmx"])
        .arg(&jmx)
        .arg("-o")
        .arg(&plan)
        .arg("--report")
        .arg(&report)
        .arg("--strict")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(report["summary"]["not_converted"], 0, "{report:#}");

    let port = format!("port={}", server.port());
    let summary = run_expect(
        0,
        &["run", plan.to_str().unwrap(), "-D", &port],
        &dir.join("out"),
    );
    let stats = server.stats();
    assert_eq!(stats.requests, 3 * 2 * (1 + 3 + 1 + 1), "{summary:#}");
    assert_eq!(
        u64_at(step(&summary, "Users", "item"), "/requests"),
        3 * 2 * 3
    );
    assert_eq!(
        u64_at(step(&summary, "Users", "from fragment"), "/requests"),
        6
    );
}

/// A JMX around the built-in server: a Test Plan named `name` with these User Defined
/// Variables, `plan` among its children, and one thread group (1 thread, 2 loops) of `body`.
fn fidelity_jmx(name: &str, vars: &[(&str, &str)], plan: &str, body: &str) -> String {
    let vars: String = vars
        .iter()
        .map(|(n, v)| format!(r#"<elementProp name="{n}" elementType="Argument"><stringProp name="Argument.name">{n}</stringProp><stringProp name="Argument.value">{v}</stringProp></elementProp>"#))
        .collect();
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<jmeterTestPlan version="1.2" properties="5.0" jmeter="5.6.3"><hashTree>
  <TestPlan testclass="TestPlan" testname="{name}" enabled="true">
    <elementProp name="TestPlan.user_defined_variables" elementType="Arguments"><collectionProp name="Arguments.arguments">{vars}</collectionProp></elementProp>
  </TestPlan>
  <hashTree>
    <ConfigTestElement guiclass="HttpDefaultsGui" testclass="ConfigTestElement" testname="defaults" enabled="true">
      <stringProp name="HTTPSampler.domain">127.0.0.1</stringProp>
      <stringProp name="HTTPSampler.port">${{__P(port,8080)}}</stringProp>
    </ConfigTestElement><hashTree/>
    {plan}
    <ThreadGroup testclass="ThreadGroup" testname="Users" enabled="true">
      <stringProp name="ThreadGroup.num_threads">1</stringProp>
      <elementProp name="ThreadGroup.main_controller" elementType="LoopController"><stringProp name="LoopController.loops">2</stringProp></elementProp>
    </ThreadGroup>
    <hashTree>{body}</hashTree>
  </hashTree>
</hashTree></jmeterTestPlan>
"#
    )
}

fn get(name: &str, path: &str, children: &str) -> String {
    format!(
        r#"<HTTPSamplerProxy testclass="HTTPSamplerProxy" testname="{name}" enabled="true"><stringProp name="HTTPSampler.path">{path}</stringProp><stringProp name="HTTPSampler.method">GET</stringProp></HTTPSamplerProxy><hashTree>{children}</hashTree>"#
    )
}

/// `onrush import jmx` of `jmx` into `dir/NAME.yaml`; the plan's path.
fn import_into(dir: &std::path::Path, name: &str, jmx: &str) -> std::path::PathBuf {
    let source = dir.join(format!("{name}.jmx"));
    std::fs::write(&source, jmx).unwrap();
    let plan = dir.join(format!("{name}.yaml"));
    let output = onrush()
        .args(["import", "jmx"])
        .arg(&source)
        .arg("-o")
        .arg(&plan)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    plan
}

/// `onrush validate PLAN ARGS...`: its exit code and output.
fn validate(plan: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let output = onrush()
        .arg("validate")
        .arg(plan)
        .args(args)
        .output()
        .unwrap();
    (output.status.code(), text(&output))
}

/// Issue 37, section 6: what JMeter runs, the imported plan validates (or says which `-D` it
/// needs, where JMeter needs a `-J` too).
#[test]
fn imported_jmx_plans_validate_where_jmeter_runs_them() {
    let dir = temp_dir("import-jmx-fidelity");

    // 1. A file read by a User Defined Variable, in a folder given as a property.
    let plan = import_into(
        &dir,
        "file",
        &fidelity_jmx(
            "Files",
            &[("payload", "${__FileToString(${__P(dir)}/id.txt,UTF-8,)}")],
            "",
            &get("item", "/bytes/${payload}", ""),
        ),
    );
    let (code, out) = validate(&plan, &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("pass -D dir=VALUE"), "{out}");
    std::fs::write(dir.join("id.txt"), "16").unwrap();
    let (code, out) = validate(&plan, &["-D", &format!("dir={}", dir.display())]);
    assert_eq!(code, Some(0), "{out}");

    // 2. A working directory from a property without a default.
    let sampler = r#"<SystemSampler testclass="SystemSampler" testname="build" enabled="true"><stringProp name="SystemSampler.command">true</stringProp><stringProp name="SystemSampler.directory">${__P(folder)}</stringProp></SystemSampler><hashTree/>"#;
    let plan = import_into(&dir, "cwd", &fidelity_jmx("Build", &[], "", sampler));
    let (code, out) = validate(&plan, &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("pass -D folder=VALUE"), "{out}");
    assert!(!out.contains("is not a directory"), "{out}");
    let (code, out) = validate(&plan, &["-D", &format!("folder={}", dir.display())]);
    assert_eq!(code, Some(0), "{out}");

    // 3. A Module Controller saved before the plan was copied and renamed.
    let fragment = format!(
        r#"<TestFragmentController testclass="TestFragmentController" testname="Shared" enabled="false"/><hashTree>{}</hashTree>"#,
        get("from fragment", "/bytes/1", "")
    );
    let module = r#"<ModuleController testclass="ModuleController" testname="shared" enabled="true"><collectionProp name="ModuleController.node_path"><stringProp name="1">Test Plan</stringProp><stringProp name="2">Old name</stringProp><stringProp name="3">Shared</stringProp></collectionProp></ModuleController><hashTree/>"#;
    let plan = import_into(
        &dir,
        "module",
        &fidelity_jmx("New name", &[], &fragment, module),
    );
    let yaml = std::fs::read_to_string(&plan).unwrap();
    assert!(yaml.contains("get: \"/bytes/1\""), "{yaml}");
    let (code, out) = validate(&plan, &[]);
    assert_eq!(code, Some(0), "{out}");

    // 4. Functions in User Defined Variables, unnamed elements, Jayway JSON paths.
    let extractor = r#"<JSONPostProcessor testclass="JSONPostProcessor" testname="ids" enabled="true"><stringProp name="JSONPostProcessor.referenceNames">a;b;c</stringProp><stringProp name="JSONPostProcessor.jsonPathExprs">.id;id;$..x</stringProp></JSONPostProcessor><hashTree/>"#;
    let body = format!(
        r#"{}<TransactionController testclass="TransactionController" testname="" enabled="true"/><hashTree>{}</hashTree>"#,
        get("", "/bytes/${pick}?id=${run_id}&amp;t=${started}", ""),
        get("json", "/", extractor)
    );
    let vars = [
        ("run_id", "${__UUID()}"),
        ("started", "${__time()}"),
        ("pick", "${__Random(1,9)}"),
    ];
    let plan = import_into(
        &dir,
        "functions",
        &fidelity_jmx("Functions", &vars, "", &body),
    );
    let (code, out) = validate(&plan, &[]);
    assert_eq!(code, Some(0), "{out}");
}

/// Issue 37, section 6, item 5: a variable that only an unported script sets used to make
/// every request a 404 in a run that exited 0; the run now says so before it starts, and
/// `--strict` does not start.
#[test]
fn a_variable_only_an_unported_script_sets_warns_and_strict_refuses() {
    let server = Server::start();
    let dir = temp_dir("import-jmx-unported");
    let script = r#"<JSR223PreProcessor testclass="JSR223PreProcessor" testname="sign" enabled="true"><stringProp name="scriptLanguage">groovy</stringProp><stringProp name="script">vars.put("size", java.lang.String.valueOf(16))</stringProp></JSR223PreProcessor><hashTree/>"#;
    let plan = import_into(
        &dir,
        "unported",
        &fidelity_jmx(
            "Scripted",
            &[],
            "",
            &(script.to_string() + &get("item", "/bytes/${size}", "")),
        ),
    );
    let (code, out) = validate(&plan, &[]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("`${size}` has no value (set by JSR223PreProcessor `sign`"),
        "{out}"
    );

    let port = format!("port={}", server.port());
    let plan = plan.to_str().unwrap();
    let output = onrush()
        .args(["run", plan, "--strict", "--quiet", "-D", &port, "--out"])
        .arg(dir.join("strict"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("error: `${size}` has no value"));
    assert_eq!(server.stats().requests, 0);

    let output = onrush()
        .args(["run", plan, "--quiet", "-D", &port, "--out"])
        .arg(dir.join("warned"))
        .output()
        .unwrap();
    assert!(
        text(&output).contains("warning: `${size}` has no value"),
        "{}",
        text(&output)
    );
    assert_eq!(server.stats().requests, 2);

    // Given with -D, the run is JMeter's.
    run_expect(
        0,
        &["run", plan, "--strict", "-D", &port, "-D", "size=16"],
        &dir.join("given"),
    );
    assert_eq!(server.stats().requests, 4);
}

/// A JMX that signs its requests in a JSR223 pre-processor (HMAC of a body it builds), reads
/// the reply in a JSR223 post-processor (`prev.getResponseDataAsString()`, `vars.put`) and
/// checks it in a JSR223 assertion, for tests/servers/signed_api_server.py.
fn signed_jmx(port: u16, assertion: &str) -> String {
    let sampler = |name: &str, method: &str, path: &str, body: &str| {
        format!(
            r#"<HTTPSamplerProxy testclass="HTTPSamplerProxy" testname="{name}" enabled="true">
  <stringProp name="HTTPSampler.domain">127.0.0.1</stringProp>
  <stringProp name="HTTPSampler.port">{port}</stringProp>
  <stringProp name="HTTPSampler.method">{method}</stringProp>
  <stringProp name="HTTPSampler.path">{path}</stringProp>
  {body}
</HTTPSamplerProxy>"#
        )
    };
    let raw_body = r#"<boolProp name="HTTPSampler.postBodyRaw">true</boolProp><elementProp name="HTTPsampler.Arguments" elementType="Arguments"><collectionProp name="Arguments.arguments"><elementProp name="" elementType="HTTPArgument"><stringProp name="Argument.value">${body}</stringProp></elementProp></collectionProp></elementProp>"#;
    let script = |class: &str, name: &str, code: &str| {
        format!(
            r#"<{class} testclass="{class}" testname="{name}" enabled="true"><stringProp name="scriptLanguage">groovy</stringProp><stringProp name="script">{code}</stringProp></{class}><hashTree/>"#
        )
    };
    let sign = script(
        "JSR223PreProcessor",
        "sign",
        "import org.apache.commons.codec.digest.HmacUtils\n\ndef n = ctx.getThreadNum()\nString body = \"{\\\"user\\\": ${n}, \\\"at\\\": \" + vars.getIteration() + \"}\"\nvars.put(\"body\", body)\nvars.put(\"signature\", HmacUtils.hmacSha256Hex(\"k3y\", body))",
    );
    let nonce = script(
        "JSR223PostProcessor",
        "nonce",
        "if (prev.getResponseCode() == \"200\") {\n  String data = prev.getResponseDataAsString()\n  int at = data.indexOf('\"nonce\": ') + 9\n  def nonce = data.substring(at, data.indexOf('}', at)).trim()\n  vars.put(\"total\", (nonce.toInteger() * 2 + 1) as String)\n}",
    );
    let ok = script("JSR223Assertion", "check", assertion);
    let header = r#"<HeaderManager testclass="HeaderManager" testname="signature header" enabled="true"><collectionProp name="HeaderManager.headers"><elementProp name="" elementType="Header"><stringProp name="Header.name">X-Signature</stringProp><stringProp name="Header.value">${signature}</stringProp></elementProp></collectionProp></HeaderManager><hashTree/>"#;
    let body = format!(
        "{}<hashTree>{header}{sign}{nonce}{ok}</hashTree>{}<hashTree/>",
        sampler("order", "POST", "/orders", raw_body),
        sampler("next", "GET", "/next?value=${total}", "")
    );
    let plan = r#"<ThreadGroup testclass="ThreadGroup" testname="Users" enabled="true"><stringProp name="ThreadGroup.num_threads">3</stringProp><elementProp name="ThreadGroup.main_controller" elementType="LoopController"><stringProp name="LoopController.loops">20</stringProp></elementProp></ThreadGroup>"#;
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><jmeterTestPlan version="1.2"><hashTree><TestPlan testclass="TestPlan" testname="Signed" enabled="true"/><hashTree>{plan}<hashTree>{body}</hashTree></hashTree></hashTree></jmeterTestPlan>"#
    )
}

/// Issue 35, JMeter migration: JSR223 elements become the plan's JavaScript, and the imported
/// plan signs, reads and checks as JMeter would, counted by a server onrush did not write.
#[test]
fn imported_jsr223_scripts_sign_read_and_check_on_the_server() {
    let dir = temp_dir("import-jmx-jsr223");
    let status_200 = "if (prev.getResponseCode() != \"200\") {\n  AssertionResult.setFailure(true)\n  AssertionResult.setFailureMessage(\"expected 200, got \" + prev.getResponseCode())\n}";
    // The server hands out nonces 1, 2, 3, ...: exactly half of the 60 replies hold an odd one.
    let even = "String data = prev.getResponseDataAsString()\nint at = data.indexOf('\"nonce\": ') + 9\nif (data.substring(at, data.indexOf('}', at)).trim().toInteger() % 2 != 0) {\n  AssertionResult.setFailure(true)\n  AssertionResult.setFailureMessage(\"odd nonce in \" + data)\n}";
    for (name, assertion, failing) in [("signed", status_200, 0), ("even", even, 30)] {
        let mut command = super::common::py_server::PyServer::command("signed_api_server.py");
        command.arg("k3y");
        let server = super::common::py_server::PyServer::spawn(command, "signed API server");
        let plan = import_into(&dir, name, &signed_jmx(server.port, assertion));
        let js = std::fs::read_to_string(dir.join(format!("{name}.jmeter.js"))).unwrap();
        assert!(js.contains("crypto.hmac('sha256', "), "{js}");
        let (code, out) = validate(&plan, &[]);
        assert_eq!(code, Some(0), "{out}");
        let out_dir = dir.join(format!("{name}-out"));
        let output = onrush()
            .args(["run", plan.to_str().unwrap(), "--quiet", "--out"])
            .arg(&out_dir)
            .output()
            .unwrap();
        let counts = server.finish();
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
        // Every signature the pre-processor computed is right, and so is every value the
        // post-processor computed from a reply.
        assert_eq!(counts["good"], 60, "{counts}");
        assert_eq!(counts["bad"], 0, "{counts}");
        assert_eq!(counts["right"], 60, "{counts}");
        assert_eq!(counts["wrong"], 0, "{counts}");
        let s = summary(&out_dir);
        assert_eq!(u64_at(&s, "/totals/requests"), 120, "{s:#}");
        // The assertion fails exactly the replies it should, and says why.
        assert_eq!(u64_at(&s, "/totals/failures"), failing, "{s:#}");
        let order = step(&s, "Users", "order");
        assert_eq!(
            order["failures_by_class"]["script_failed"]
                .as_u64()
                .unwrap_or(0),
            failing,
            "{order:#}"
        );
        if failing > 0 {
            assert!(
                text(&output).contains("odd nonce in {"),
                "{}",
                text(&output)
            );
        }
    }
}

/// A Groovy script the rewriting lets through but whose JavaScript does not parse (a Groovy
/// range in a `case`) is reported by `onrush import jmx` with the parser's reason, and the plan
/// it writes still validates.
#[test]
fn a_script_whose_javascript_does_not_parse_stays_in_the_report() {
    let dir = temp_dir("import-jmx-jsr223-parse");
    let script = r#"<JSR223PreProcessor testclass="JSR223PreProcessor" testname="bucket" enabled="true"><stringProp name="scriptLanguage">groovy</stringProp><stringProp name="script">def n = 3
switch (n) { case 1..5: vars.put("bucket", "low"); break }</stringProp></JSR223PreProcessor><hashTree/>"#;
    let jmx = fidelity_jmx(
        "Ranges",
        &[],
        "",
        &(script.to_string() + &get("item", "/bytes/1", "")),
    );
    let source = dir.join("ranges.jmx");
    std::fs::write(&source, jmx).unwrap();
    let plan = dir.join("ranges.yaml");
    let output = onrush()
        .args(["import", "jmx"])
        .arg(&source)
        .arg("-o")
        .arg(&plan)
        .output()
        .unwrap();
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(0), "{printed}");
    assert!(
        printed.contains("the JavaScript it rewrites to does not parse (SyntaxError"),
        "{printed}"
    );
    assert!(!dir.join("ranges.jmeter.js").exists(), "{printed}");
    let (code, out) = validate(&plan, &[]);
    assert_eq!(code, Some(0), "{out}");
}
