//! Plan profiles: `profiles:` holds named overlays, `onrush run plan.yaml -P smoke,tls` applies
//! them in order on the plan's YAML tree before it is compiled (and before `-D`, which wins).
//!
//! How an overlay merges (decided for predictability):
//! - `vars`, `http` (and everything under it, e.g. `http.tls`): mappings merged key by key,
//!   deeply; a profile's value replaces a scalar or a list of the plan.
//! - `target`, `thresholds`: replaced whole.
//! - `load`: replaces every scenario's `load` whole (load models are combinations of keys, so a
//!   key-by-key merge could mix two models).
//! - `scenarios`: a list of `{ name, load, http, pacing, thresholds }`, each merged into the
//!   plan's scenario of that name (`load` replaced whole, `http` merged, the others replaced).
//!
//! The merged nodes keep their source positions, so an error in a value a profile set points
//! at the profile's line.

use crate::error::{did_you_mean, PlanError};
use crate::yaml::{collection, Kind, Node};

/// What a profile may set.
pub(crate) const PROFILE_KEYS: [&str; 6] =
    ["vars", "target", "http", "load", "thresholds", "scenarios"];
/// What a profile's scenario entry may set.
const SCENARIO_KEYS: [&str; 5] = ["name", "load", "http", "pacing", "thresholds"];

fn key_text(k: &Node) -> &str {
    k.as_scalar().map_or("", |s| s.text.as_str())
}

fn err(source: &str, text: &str, node: &Node, field: &str, msg: impl Into<String>) -> PlanError {
    PlanError::at(source, text, node.span.clone(), field, msg)
}

/// Applies the `selected` profiles to `root` (a mapping) and takes `profiles:` out of it.
/// Every profile is checked, selected or not.
pub(crate) fn apply(
    source: &str,
    text: &str,
    root: Node,
    selected: &[String],
) -> Result<Node, PlanError> {
    let span = root.span.clone();
    let Kind::Map(mut entries) = root.kind else {
        return Ok(root);
    };
    let found = entries.iter().position(|(k, _)| key_text(k) == "profiles");
    let profiles = found.map(|i| entries.remove(i));
    let defined: Vec<(String, Node)> = match &profiles {
        None => Vec::new(),
        Some((_, v)) if v.is_null() => Vec::new(),
        Some((_, v)) => {
            let Kind::Map(list) = &v.kind else {
                return Err(err(
                    source,
                    text,
                    v,
                    "profiles",
                    format!(
                        "expected a mapping of profile name → overlay, found {}",
                        v.describe()
                    ),
                )
                .with_hint("profiles:\n  smoke: { load: { vus: 1, iterations: 1 } }"));
            };
            let mut out = Vec::new();
            for (k, p) in list {
                let name = key_text(k).to_string();
                check_profile(source, text, &name, p)?;
                out.push((name, p.clone()));
            }
            out
        }
    };
    let mut root = collection(Kind::Map(entries), span);
    for name in selected {
        let Some((_, overlay)) = defined.iter().find(|(n, _)| n == name) else {
            let names: Vec<&str> = defined.iter().map(|(n, _)| n.as_str()).collect();
            let msg = if names.is_empty() {
                format!("unknown profile {name:?}: the plan defines no `profiles:`")
            } else {
                format!(
                    "unknown profile {name:?}; the plan defines: {}",
                    names.join(", ")
                )
            };
            let at = profiles.as_ref().map_or(0..0, |(k, _)| k.span.clone());
            let mut e = PlanError::at(source, text, at, "profiles", msg);
            if let Some(best) = did_you_mean(name, names.iter().copied()) {
                e = e.with_hint(format!("did you mean -P {best}?"));
            }
            return Err(e);
        };
        check_scenario_names(source, text, &root, name, overlay)?;
        root = overlay_plan(root, overlay);
    }
    Ok(root)
}

/// A profile's `scenarios:` entry must name a scenario of the plan (a typo would silently
/// change nothing).
fn check_scenario_names(
    source: &str,
    text: &str,
    root: &Node,
    profile: &str,
    overlay: &Node,
) -> Result<(), PlanError> {
    let names_of = |n: &Node| -> Vec<String> {
        match &n.kind {
            Kind::Seq(items) => items
                .iter()
                .filter_map(|s| match &s.kind {
                    Kind::Map(e) => e
                        .iter()
                        .find(|(k, _)| key_text(k) == "name")
                        .map(|(_, v)| key_text(v).to_string()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    };
    let (Kind::Map(plan), Kind::Map(over)) = (&root.kind, &overlay.kind) else {
        return Ok(());
    };
    let plan_names = plan
        .iter()
        .find(|(k, _)| key_text(k) == "scenarios")
        .map(|(_, v)| names_of(v))
        .unwrap_or_default();
    let Some((_, list)) = over.iter().find(|(k, _)| key_text(k) == "scenarios") else {
        return Ok(());
    };
    let Kind::Seq(items) = &list.kind else {
        return Ok(());
    };
    for item in items {
        let Kind::Map(e) = &item.kind else { continue };
        let Some((_, name)) = e.iter().find(|(k, _)| key_text(k) == "name") else {
            continue;
        };
        if !plan_names.iter().any(|n| n == key_text(name)) {
            let mut err = PlanError::at(source, text, name.span.clone(), &format!("profiles.{profile}.scenarios"), format!("profile {profile:?} changes scenario {:?}, which the plan does not have; its scenarios: {}", key_text(name), plan_names.join(", ")));
            if let Some(best) = did_you_mean(key_text(name), plan_names.iter().map(String::as_str))
            {
                err = err.with_hint(format!("did you mean {best}?"));
            }
            return Err(err);
        }
    }
    Ok(())
}

fn check_profile(source: &str, text: &str, name: &str, p: &Node) -> Result<(), PlanError> {
    let field = format!("profiles.{name}");
    if p.is_null() {
        return Ok(());
    }
    let Kind::Map(keys) = &p.kind else {
        return Err(err(
            source,
            text,
            p,
            &field,
            format!(
                "profile {name:?} is {}; expected a mapping of overlays",
                p.describe()
            ),
        ));
    };
    for (k, v) in keys {
        let key = key_text(k);
        if !PROFILE_KEYS.contains(&key) {
            return Err(err(source, text, k, &format!("{field}.{key}"), format!("profile {name:?}: `{key}` cannot be overlaid; a profile may set {}", PROFILE_KEYS.join(", ")))
                .with_hint("steps and feeders stay the plan's; use a variable in them and set it in the profile's `vars:`"));
        }
        if matches!(key, "vars" | "http" | "load") && !matches!(v.kind, Kind::Map(_)) {
            return Err(err(
                source,
                text,
                v,
                &format!("{field}.{key}"),
                format!(
                    "profile {name:?}: `{key}` must be a mapping, found {}",
                    v.describe()
                ),
            ));
        }
        if key == "scenarios" {
            let Kind::Seq(items) = &v.kind else {
                return Err(err(
                    source,
                    text,
                    v,
                    &format!("{field}.scenarios"),
                    "expected a list of { name, load, http, pacing, thresholds }",
                ));
            };
            for (i, item) in items.iter().enumerate() {
                let at = format!("{field}.scenarios[{i}]");
                let Kind::Map(skeys) = &item.kind else {
                    return Err(err(
                        source,
                        text,
                        item,
                        &at,
                        "expected { name: SCENARIO, ... }",
                    ));
                };
                if !skeys.iter().any(|(k, _)| key_text(k) == "name") {
                    return Err(err(
                        source,
                        text,
                        item,
                        &at,
                        "a profile's scenario needs `name:` (the plan's scenario it changes)",
                    ));
                }
                for (k, _) in skeys {
                    if !SCENARIO_KEYS.contains(&key_text(k)) {
                        return Err(err(source, text, k, &format!("{at}.{}", key_text(k)), format!("profile {name:?}: a scenario's `{}` cannot be overlaid; it may set {}", key_text(k), SCENARIO_KEYS.join(", "))));
                    }
                }
            }
        }
    }
    Ok(())
}

/// `over` merged into `base`, both mappings: keys merged recursively, anything else replaced.
fn deep_merge(base: Node, over: &Node) -> Node {
    match (base.kind, &over.kind) {
        (Kind::Map(mut entries), Kind::Map(overs)) => {
            for (k, v) in overs {
                match entries
                    .iter()
                    .position(|(bk, _)| key_text(bk) == key_text(k))
                {
                    Some(i) => {
                        let (bk, bv) = entries.remove(i);
                        entries.insert(i, (bk, deep_merge(bv, v)));
                    }
                    None => entries.push((k.clone(), v.clone())),
                }
            }
            collection(Kind::Map(entries), base.span)
        }
        _ => over.clone(),
    }
}

/// Sets `key` of a mapping node: merged or replaced.
fn set(map: Node, key: &Node, value: &Node, merge: bool) -> Node {
    let span = map.span.clone();
    let Kind::Map(mut entries) = map.kind else {
        return map;
    };
    match entries
        .iter()
        .position(|(k, _)| key_text(k) == key_text(key))
    {
        Some(i) => {
            let old = entries[i].1.clone();
            entries[i].1 = if merge {
                deep_merge(old, value)
            } else {
                value.clone()
            };
        }
        None => entries.push((key.clone(), value.clone())),
    }
    collection(Kind::Map(entries), span)
}

fn overlay_plan(mut root: Node, overlay: &Node) -> Node {
    let Kind::Map(keys) = &overlay.kind else {
        return root;
    };
    for (k, v) in keys {
        root = match key_text(k) {
            "vars" | "http" => set(root, k, v, true),
            "load" => map_scenarios(root, |s| set(s, k, v, false)),
            "scenarios" => {
                let Kind::Seq(items) = &v.kind else { continue };
                items.iter().fold(root, |root, item| {
                    let name = match &item.kind {
                        Kind::Map(e) => e
                            .iter()
                            .find(|(k, _)| key_text(k) == "name")
                            .map(|(_, v)| key_text(v).to_string()),
                        _ => None,
                    };
                    map_scenarios(root, |s| {
                        let matches = match &s.kind {
                            Kind::Map(e) => e.iter().any(|(k, v)| {
                                key_text(k) == "name" && Some(key_text(v).to_string()) == name
                            }),
                            _ => false,
                        };
                        if !matches {
                            return s;
                        }
                        let Kind::Map(overs) = &item.kind else {
                            return s;
                        };
                        overs
                            .iter()
                            .filter(|(k, _)| key_text(k) != "name")
                            .fold(s, |s, (k, v)| set(s, k, v, key_text(k) == "http"))
                    })
                })
            }
            _ => set(root, k, v, false),
        };
    }
    root
}

fn map_scenarios(root: Node, f: impl Fn(Node) -> Node) -> Node {
    let span = root.span.clone();
    let Kind::Map(entries) = root.kind else {
        return root;
    };
    let entries = entries
        .into_iter()
        .map(|(k, v)| {
            if key_text(&k) != "scenarios" {
                return (k, v);
            }
            let vspan = v.span.clone();
            match v.kind {
                Kind::Seq(items) => (
                    k,
                    collection(Kind::Seq(items.into_iter().map(&f).collect()), vspan),
                ),
                kind => (k, collection(kind, vspan)),
            }
        })
        .collect();
    collection(Kind::Map(entries), span)
}

/// The tree as block YAML (`onrush validate --print`): plain scalars as written, others quoted.
pub(crate) fn emit(node: &Node) -> String {
    let mut out = String::new();
    emit_into(node, 0, &mut out);
    out
}

fn scalar_text(node: &Node) -> Option<String> {
    match &node.kind {
        Kind::Scalar(s) if s.plain && !s.text.contains('\n') && !s.text.is_empty() => {
            Some(s.text.clone())
        }
        Kind::Scalar(s) => Some(serde_json::to_string(&s.text).unwrap_or_default()),
        Kind::Map(m) if m.is_empty() => Some("{}".into()),
        Kind::Seq(s) if s.is_empty() => Some("[]".into()),
        _ => None,
    }
}

fn emit_into(node: &Node, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match &node.kind {
        Kind::Map(entries) => {
            for (k, v) in entries {
                out.push_str(&pad);
                out.push_str(&scalar_text(k).unwrap_or_default());
                match scalar_text(v) {
                    Some(s) => {
                        out.push_str(": ");
                        out.push_str(&s);
                        out.push('\n');
                    }
                    None => {
                        out.push_str(":\n");
                        emit_into(v, indent + 2, out);
                    }
                }
            }
        }
        Kind::Seq(items) => {
            for item in items {
                out.push_str(&pad);
                match scalar_text(item) {
                    Some(s) => {
                        out.push_str("- ");
                        out.push_str(&s);
                        out.push('\n');
                    }
                    None => {
                        // The item's block, its first line on the dash's.
                        let mut inner = String::new();
                        emit_into(item, indent + 2, &mut inner);
                        out.push_str("- ");
                        out.push_str(inner.trim_start());
                    }
                }
            }
        }
        Kind::Scalar(_) => {
            out.push_str(&pad);
            out.push_str(&scalar_text(node).unwrap_or_default());
            out.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{load_str_with_grammars, Grammars, Plan, PlanError};

    fn load_str_with_profiles(
        name: &str,
        text: &str,
        dir: &std::path::Path,
        profiles: &[String],
        overrides: &[(String, String)],
    ) -> Result<Plan, PlanError> {
        let grammars = Grammars::only(GetGrammar);
        load_str_with_grammars(name, text, dir, profiles, overrides, &grammars)
    }

    const PLAN: &str = r#"
target: http://127.0.0.1:8080
vars: { vus: 2, path: /a }
http: { timeout: 5s, tls: { insecure: false } }
profiles:
  smoke:
    vars: { vus: 1 }
    load: { vus: "${vus}", iterations: 1 }
  slow:
    http: { tls: { insecure: true } }
    scenarios:
      - { name: second, load: { rate: 5/s, duration: 2s, max_vus: 3 }, pacing: 1s }
  elsewhere:
    target: http://127.0.0.1:9090
    vars: { path: /b }
    thresholds: ["p99 < 1s"]
scenarios:
  - name: first
    load: { vus: "${vus}", duration: 10s }
    steps: [{ get: "${path}" }]
  - name: second
    load: { vus: 1, iterations: 3 }
    steps: [{ get: / }]
"#;

    fn load(profiles: &[&str], defines: &[(&str, &str)]) -> Result<Plan, PlanError> {
        let p: Vec<String> = profiles.iter().map(|s| s.to_string()).collect();
        let d: Vec<(String, String)> = defines
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        load_str_with_profiles("plan.yaml", PLAN, std::path::Path::new("."), &p, &d)
    }

    #[test]
    fn profiles_overlay_in_order_and_d_wins() {
        let plain = load(&[], &[]).unwrap();
        assert_eq!(plain.scenarios[0].load.max_vus(), 2);
        assert!(plain.scenarios[0].load.duration().is_some());
        let smoke = load(&["smoke"], &[]).unwrap();
        // `load` replaced whole in every scenario: iterations, no duration left over.
        assert_eq!(smoke.scenarios[0].load.max_vus(), 1);
        assert_eq!(smoke.scenarios[0].load.duration(), None);
        assert_eq!(smoke.scenarios[1].load.max_vus(), 1);
        let d = load(&["smoke"], &[("vus", "4")]).unwrap();
        assert_eq!(
            d.scenarios[0].load.max_vus(),
            4,
            "-D applies after the profiles"
        );
        let both = load(&["smoke", "slow"], &[]).unwrap();
        assert_eq!(
            both.scenarios[1].load.max_vus(),
            3,
            "the later profile wins for `second`"
        );
        assert_eq!(both.scenarios[0].load.max_vus(), 1);
        assert!(both.http.tls.insecure, "http merged deeply");
        assert_eq!(
            both.http.timeout,
            std::time::Duration::from_secs(5),
            "other http keys stay"
        );
        let elsewhere = load(&["elsewhere"], &[]).unwrap();
        assert_eq!(elsewhere.all_thresholds().len(), 1);
        assert!(format!("{:?}", elsewhere.target).contains("9090"));
    }

    #[test]
    fn an_unknown_profile_lists_the_valid_ones_with_a_guess() {
        let e = load(&["smok"], &[]).unwrap_err().to_string();
        assert!(
            e.contains("unknown profile \"smok\"; the plan defines: smoke, slow, elsewhere"),
            "{e}"
        );
        assert!(e.contains("did you mean -P smoke?"), "{e}");
    }

    #[test]
    fn a_key_a_profile_cannot_set_is_an_error_at_its_line() {
        let text = PLAN.replace("  elsewhere:\n", "  elsewhere:\n    steps: []\n");
        let e = load_str_with_profiles("plan.yaml", &text, std::path::Path::new("."), &[], &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("plan.yaml:14:5"), "{e}");
        assert!(e.contains("profiles.elsewhere.steps"), "{e}");
        assert!(e.contains("cannot be overlaid"), "{e}");
        let text = PLAN.replace("pacing: 1s", "steps: []");
        let e = load_str_with_profiles("plan.yaml", &text, std::path::Path::new("."), &[], &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("profiles.slow.scenarios[0].steps"), "{e}");
    }

    #[test]
    fn a_profile_changing_a_scenario_the_plan_lacks_is_an_error() {
        let text = PLAN.replace("{ name: second, load", "{ name: secnd, load");
        let e = load_str_with_profiles(
            "plan.yaml",
            &text,
            std::path::Path::new("."),
            &["slow".into()],
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("plan.yaml:12:17")
                && e.contains("scenario \"secnd\", which the plan does not have"),
            "{e}"
        );
        assert!(e.contains("did you mean second?"), "{e}");
    }

    #[test]
    fn an_error_in_a_profile_value_points_at_the_profile() {
        let text = PLAN.replace("max_vus: 3", "max_vus: lots");
        let e = load_str_with_profiles(
            "plan.yaml",
            &text,
            std::path::Path::new("."),
            &["slow".into()],
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("plan.yaml:12:"), "{e}");
    }

    #[test]
    fn the_effective_plan_prints_and_loads_again() {
        let root = crate::yaml::parse(PLAN).unwrap().unwrap();
        let merged = super::apply(
            "plan.yaml",
            PLAN,
            root,
            &["smoke".into(), "elsewhere".into()],
        )
        .unwrap();
        let printed = super::emit(&merged);
        assert!(!printed.contains("profiles"), "{printed}");
        assert!(
            printed.contains("target: http://127.0.0.1:9090"),
            "{printed}"
        );
        let grammars = crate::Grammars::only(GetGrammar);
        let again = crate::load_str_with_grammars(
            "printed.yaml",
            &printed,
            std::path::Path::new("."),
            &[],
            &[],
            &grammars,
        )
        .unwrap_or_else(|e| panic!("{e}\n{printed}"));
        assert_eq!(again.scenarios[0].load.max_vus(), 1);
    }

    /// `get: PATH`, as the HTTP step is written (its grammar is onrush-proto-http's).
    struct GetGrammar;

    impl crate::StepGrammar for GetGrammar {
        fn key(&self) -> &'static str {
            "get"
        }
        fn keys(&self) -> &'static [&'static str] {
            &[]
        }
        fn example(&self) -> &'static str {
            "{ get: / }"
        }
        fn schema(&self) -> serde_json::Value {
            serde_json::Value::Null
        }
        fn compile(
            &self,
            step: &crate::grammar::Mapping<'_>,
        ) -> Result<crate::grammar::CompiledStep, crate::PlanError> {
            let path = step.required("get", "a path")?;
            Ok(crate::grammar::CompiledStep {
                name: format!("GET {}", path.written().unwrap_or_default()),
                spec: Box::new(path.template()?),
            })
        }
    }
}
