//! What an imported plan does where JMeter runs a plan that onrush cannot take as is (issue 37,
//! section 6): functions and files in User Defined Variables, properties that name paths, a
//! Module Controller of a renamed plan, unnamed elements, Jayway JSON paths, and variables only
//! an unported script sets.

use std::path::Path;

use crate::mappings::{has, http, import, jmx, status_of};
use onrush_import::{import_jmx, Options, Status};

/// A Test Plan named `name` with these User Defined Variables, `plan` among its children and
/// one thread group holding `body`.
fn plan_with_vars(name: &str, vars: &[(&str, &str)], plan: &str, body: &str) -> String {
    let args: String = vars
        .iter()
        .map(|(n, v)| {
            format!(
                r#"<elementProp name="{n}" elementType="Argument"><stringProp name="Argument.name">{n}</stringProp><stringProp name="Argument.value">{v}</stringProp></elementProp>"#
            )
        })
        .collect();
    jmx(plan, body).replacen(
        r#"<TestPlan testclass="TestPlan" testname="Plan" enabled="true"/>"#,
        &format!(
            r#"<TestPlan testclass="TestPlan" testname="{name}" enabled="true"><elementProp name="TestPlan.user_defined_variables" elementType="Arguments"><collectionProp name="Arguments.arguments">{args}</collectionProp></elementProp></TestPlan>"#
        ),
        1,
    )
}

/// Loads the plan of `yaml` from `dir` with `-D` overrides.
fn load(yaml: &str, dir: &Path, overrides: &[(&str, &str)]) -> Result<onrush_plan::Plan, String> {
    let overrides: Vec<(String, String)> = overrides
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    crate::load_plan(yaml, dir, &overrides).map_err(|e| e.to_string())
}

fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("onrush-import-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_file_read_in_a_user_defined_variable_is_read_at_load_from_the_property_s_folder() {
    let text = plan_with_vars(
        "Plan",
        &[("payload", "${__FileToString(${__P(dir)}/body.json,UTF-8,)}")],
        "",
        &http("send", "POST", "/echo?p=${payload}", ""),
    );
    let out = import_jmx(&text, &Options::default()).unwrap();
    has(&out, "payload: \"${file(\\\"${dir}/body.json\\\")}\"");
    // `dir` names a folder and has no default (JMeter would use `1`): the plan asks for it.
    has(&out, "dir: \"${unset(");
    let dir = temp("file-to-string");
    let e = load(&out.yaml, &dir, &[]).unwrap_err();
    assert!(e.contains("pass -D dir=VALUE"), "{e}");
    std::fs::write(dir.join("body.json"), "{\"a\":1}").unwrap();
    let plan = load(&out.yaml, &dir, &[("dir", dir.to_str().unwrap())]).unwrap();
    assert_eq!(plan.vars["payload"], "{\"a\":1}");
    assert!(plan.unset_vars.is_empty());
}

#[test]
fn functions_kept_as_text_stay_text_when_they_nest_expressions() {
    let text = plan_with_vars(
        "Plan",
        &[("host_name", "${__machineName(${__P(x)})}")],
        "",
        &http("home", "GET", "/", ""),
    );
    let out = import(&text);
    has(&out, "host_name: \"$${__machineName($${__P(x)})}\"");
}

#[test]
fn a_directory_from_a_property_without_default_asks_for_d() {
    let sampler = r#"<SystemSampler testclass="SystemSampler" testname="build" enabled="true">
  <stringProp name="SystemSampler.command">ls</stringProp>
  <stringProp name="SystemSampler.directory">${__P(folder)}</stringProp>
</SystemSampler><hashTree/>"#;
    let out = import_jmx(&jmx("", sampler), &Options::default()).unwrap();
    let dir = temp("cwd-property");
    let e = load(&out.yaml, &dir, &[]).unwrap_err();
    assert!(e.contains("pass -D folder=VALUE"), "{e}");
    assert!(!e.contains("is not a directory"), "{e}");
    load(&out.yaml, &dir, &[("folder", dir.to_str().unwrap())]).unwrap();

    // With a default, the property is an ordinary variable.
    let with_default = sampler.replace("${__P(folder)}", "${__P(folder,.)}");
    let out = import(&jmx("", &with_default));
    has(&out, "folder: \".\"");
}

#[test]
fn a_module_controller_of_a_renamed_plan_is_found_by_the_rest_of_its_path() {
    let fragment = format!(
        r#"<TestFragmentController testclass="TestFragmentController" testname="Login flow" enabled="false"/>
<hashTree>{}<hashTree/></hashTree>"#,
        http("login", "POST", "/login", "")
    );
    let module = r#"<ModuleController testclass="ModuleController" testname="do login" enabled="true">
  <collectionProp name="ModuleController.node_path">
    <stringProp name="1">Test Plan</stringProp><stringProp name="2">Checkout (copy)</stringProp><stringProp name="3">Login flow</stringProp>
  </collectionProp>
</ModuleController><hashTree/>"#;
    let out = import(&jmx(&fragment, module));
    has(&out, "post: \"/login\"");
    let (status, note) = status_of(&out, "Users / do login");
    assert_eq!(status, Status::Approximated);
    assert!(
        note.contains("the test plan `Checkout (copy)`, this one is `Plan`"),
        "{note}"
    );

    // Only the test plan's name may differ: another wrong name is still not found.
    let wrong = module.replace("Login flow", "Logout flow");
    let out = import(&jmx(&fragment, &wrong));
    assert_eq!(status_of(&out, "Users / do login").0, Status::NotConverted);
}

#[test]
fn functions_in_user_defined_variables_are_computed_once_at_load() {
    let text = plan_with_vars(
        "Plan",
        &[
            ("run_id", "${__UUID()}"),
            ("started", "${__time()}"),
            ("pick", "${__Random(1,9)}"),
            ("me", "${__threadNum}"),
        ],
        "",
        &http(
            "list",
            "GET",
            "/items/${run_id}?t=${started}&amp;p=${pick}&amp;vu=${me}",
            "",
        ),
    );
    let out = import(&text);
    has(&out, "run_id: \"${uuid()}\"");
    has(&out, "started: \"${now_ms()}\"");
    has(&out, "pick: \"${random_int(1, 9)}\"");
    // Per thread: written where it is used.
    has(&out, "&vu=${vu}\"");
    assert_eq!(status_of(&out, "Plan (me)").0, Status::Approximated);
    let plan = load(&out.yaml, &temp("udv-functions"), &[]).unwrap();
    assert_eq!(plan.vars["run_id"].len(), 36);
}

#[test]
fn unnamed_elements_get_names_and_json_paths_become_rfc_9535() {
    let extractor = r#"<JSONPostProcessor testclass="JSONPostProcessor" testname="ids" enabled="true">
  <stringProp name="JSONPostProcessor.referenceNames">a;b;c</stringProp>
  <stringProp name="JSONPostProcessor.jsonPathExprs">.id;id;$..x</stringProp>
</JSONPostProcessor><hashTree/>"#;
    let body = format!(
        r#"{}<hashTree/>
<TransactionController testclass="TransactionController" testname="" enabled="true"/>
<hashTree>{}<hashTree>{extractor}</hashTree></hashTree>"#,
        http("", "GET", "/items/${id}?all=1", ""),
        http("login", "POST", "/login", "")
    );
    let out = import(&jmx("", &body));
    has(&out, "name: \"GET /items/{id}\"");
    has(&out, "name: \"Users / TransactionController\"");
    has(&out, "jsonpath: \"$.id\"");
    has(&out, "jsonpath: \"$..x\"");
    assert!(!out.yaml.contains("jsonpath: \".id\""), "{}", out.yaml);
}

#[test]
fn a_variable_only_an_unported_script_sets_is_marked_for_the_run() {
    let script = r#"<JSR223PreProcessor testclass="JSR223PreProcessor" testname="sign" enabled="true">
  <stringProp name="scriptLanguage">groovy</stringProp>
  <stringProp name="script">vars.put("token", java.util.UUID.randomUUID().toString())</stringProp>
</JSR223PreProcessor><hashTree/>"#;
    let body = format!(
        "{script}{}<hashTree/>",
        http("item", "GET", "/items/${token}", "")
    );
    let out = import(&jmx("", &body));
    has(&out, "JSR223PreProcessor `sign`");
    let plan = load(&out.yaml, &temp("unported-script"), &[]).unwrap();
    assert_eq!(plan.unset_vars.len(), 1);
    assert_eq!(plan.unset_vars[0].name, "token");
    assert!(plan.unset_vars[0]
        .reason
        .contains("JSR223PreProcessor `sign`"));
    let given = load(&out.yaml, &temp("unported-script-d"), &[("token", "t")]).unwrap();
    assert!(given.unset_vars.is_empty());
}
