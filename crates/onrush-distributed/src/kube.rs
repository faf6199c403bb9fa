//! `onrush kube render`: the Kubernetes objects of a distributed run, so that `kubectl apply -f`
//! runs it on a cluster with engines people already have (no operator, no cluster manager of
//! onrush's own):
//!
//! - a Secret with the run's token;
//! - a ConfigMap with the plan and every file it refers to, mounted at the plan's relative
//!   paths under `/plan`;
//! - the controller: a Job (one pod, `onrush run --agents N`) and a Service in front of it;
//! - the agents: an Indexed Job of N pods (`onrush agent --connect <service>:7878`), named
//!   `agent-<index>`.
//!
//! The objects are built as JSON values (checked field by field in the tests) and written as
//! YAML with every string double-quoted, which YAML reads as JSON strings.

use std::path::{Component, Path};

use serde_json::{json, Value};

/// What the manifests are made of.
pub struct KubeOptions<'a> {
    /// Lower-case DNS label for the objects' names (e.g. the plan's name).
    pub name: &'a str,
    pub agents: usize,
    pub image: &'a str,
    pub namespace: Option<&'a str>,
    /// Threads per agent (`-t`); `None`: one per core of the pod.
    pub agent_threads: Option<usize>,
    /// CPU request and limit of each agent pod (e.g. "1", "2000m").
    pub agent_cpu: &'a str,
    pub agent_memory: &'a str,
    /// A PersistentVolumeClaim for the controller's results; `None`: an emptyDir (read the
    /// summary from the controller's log).
    pub results_pvc: Option<&'a str>,
    pub token: &'a str,
    pub port: u16,
}

/// The plan's files as the ConfigMap holds them: (key, path relative to /plan, text).
pub struct PlanFiles {
    pub entries: Vec<(String, String, Vec<u8>)>,
}

impl PlanFiles {
    /// The plan and `files`, which must all be inside the plan's folder (a pod sees only what
    /// the ConfigMap holds).
    pub fn read(plan: &Path, files: &[std::path::PathBuf]) -> Result<PlanFiles, String> {
        let plan_abs = std::path::absolute(plan).map_err(|e| format!("{}: {e}", plan.display()))?;
        let base = plan_abs.parent().unwrap_or(Path::new("/")).to_path_buf();
        let mut entries = Vec::new();
        for (k, path) in std::iter::once(&plan_abs).chain(files.iter()).enumerate() {
            let abs = std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let abs = normalise(&abs);
            let rel = abs.strip_prefix(&base).map_err(|_| {
                format!(
                    "{}: outside the plan's folder ({}); for Kubernetes, put every file the plan \
                     uses in its folder or below",
                    path.display(),
                    base.display()
                )
            })?;
            let bytes =
                std::fs::read(&abs).map_err(|e| format!("cannot read {}: {e}", abs.display()))?;
            let rel = if k == 0 {
                "plan.yaml".to_string()
            } else {
                rel.to_string_lossy().into_owned()
            };
            entries.push((format!("f{k}"), rel, bytes));
        }
        let size: usize = entries.iter().map(|(_, _, b)| b.len()).sum();
        if size > 900 * 1024 {
            return Err(format!(
                "the plan and its files are {size} bytes; a ConfigMap holds at most 1 MiB: put \
                 the large files in the image or a volume"
            ));
        }
        Ok(PlanFiles { entries })
    }
}

/// `a/./b/../c` → `a/c` (no file system access).
fn normalise(p: &Path) -> std::path::PathBuf {
    let mut out = std::path::PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// The objects, in the order `kubectl apply` should create them.
pub fn manifests(o: &KubeOptions, files: &PlanFiles) -> Vec<Value> {
    let name = o.name;
    let meta = |kind: &str| {
        let mut m = json!({ "name": format!("onrush-{name}-{kind}"),
                            "labels": { "app.kubernetes.io/name": "onrush",
                                        "app.kubernetes.io/instance": name,
                                        "app.kubernetes.io/component": kind } });
        if let Some(ns) = o.namespace {
            m["namespace"] = json!(ns);
        }
        m
    };
    let (text, binary): (Vec<_>, Vec<_>) = files
        .entries
        .iter()
        .partition(|(_, _, b)| std::str::from_utf8(b).is_ok());
    let mut config = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("plan"),
        "data": text.iter().map(|(k, _, b)| (k.clone(), json!(String::from_utf8_lossy(b)))).collect::<serde_json::Map<_, _>>() });
    if !binary.is_empty() {
        use base64::Engine;
        config["binaryData"] = binary
            .iter()
            .map(|(k, _, b)| {
                (
                    k.clone(),
                    json!(base64::engine::general_purpose::STANDARD.encode(b)),
                )
            })
            .collect::<serde_json::Map<_, _>>()
            .into();
    }
    let plan_volume = json!({ "name": "plan", "configMap": { "name": format!("onrush-{name}-plan"),
        "items": files.entries.iter().map(|(k, rel, _)| json!({ "key": k, "path": rel })).collect::<Vec<_>>() } });
    let token_volume =
        json!({ "name": "token", "secret": { "secretName": format!("onrush-{name}-token") } });
    let service_name = format!("onrush-{name}-controller");
    let results_volume = match o.results_pvc {
        Some(pvc) => json!({ "name": "results", "persistentVolumeClaim": { "claimName": pvc } }),
        None => json!({ "name": "results", "emptyDir": {} }),
    };
    let controller_labels = json!({ "app.kubernetes.io/name": "onrush",
        "app.kubernetes.io/instance": name, "app.kubernetes.io/component": "controller" });
    let secret = json!({ "apiVersion": "v1", "kind": "Secret", "metadata": meta("token"),
        "type": "Opaque", "stringData": { "token": o.token } });
    let service = json!({ "apiVersion": "v1", "kind": "Service", "metadata": meta("controller"),
        "spec": { "selector": controller_labels, "ports": [{ "name": "control", "port": o.port, "targetPort": o.port }] } });
    let controller = json!({ "apiVersion": "batch/v1", "kind": "Job", "metadata": meta("controller"),
        "spec": { "backoffLimit": 0, "template": {
            "metadata": { "labels": controller_labels },
            "spec": { "restartPolicy": "Never",
                "containers": [{ "name": "controller", "image": o.image,
                    "args": ["run", "/plan/plan.yaml", "--agents", o.agents.to_string(),
                             "--listen", format!("0.0.0.0:{}", o.port), "--token-file", "/token/token",
                             "--out", "/results/run", "--agents-wait", "600"],
                    "ports": [{ "containerPort": o.port, "name": "control" }],
                    "volumeMounts": [{ "name": "plan", "mountPath": "/plan", "readOnly": true },
                                     { "name": "token", "mountPath": "/token", "readOnly": true },
                                     { "name": "results", "mountPath": "/results" }] }],
                "volumes": [plan_volume, token_volume, results_volume] } } } });
    let mut agent_args = vec![
        json!("agent"),
        json!("--connect"),
        json!(format!("{service_name}:{}", o.port)),
        json!("--token-file"),
        json!("/token/token"),
        json!("--name"),
        json!("agent-$(AGENT_INDEX)"),
        json!("--wait"),
        json!("600"),
        json!("--work-dir"),
        json!("/work"),
    ];
    if let Some(t) = o.agent_threads {
        agent_args.extend([json!("-t"), json!(t.to_string())]);
    }
    let agents = json!({ "apiVersion": "batch/v1", "kind": "Job", "metadata": meta("agents"),
        "spec": { "completionMode": "Indexed", "completions": o.agents, "parallelism": o.agents,
            "backoffLimit": 0, "template": {
            "metadata": { "labels": { "app.kubernetes.io/name": "onrush",
                "app.kubernetes.io/instance": name, "app.kubernetes.io/component": "agent" } },
            "spec": { "restartPolicy": "Never",
                "containers": [{ "name": "agent", "image": o.image, "args": agent_args,
                    "env": [{ "name": "AGENT_INDEX", "valueFrom": { "fieldRef": {
                        "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']" } } }],
                    "resources": { "requests": { "cpu": o.agent_cpu, "memory": o.agent_memory },
                                   "limits": { "cpu": o.agent_cpu, "memory": o.agent_memory } },
                    "volumeMounts": [{ "name": "token", "mountPath": "/token", "readOnly": true },
                                     { "name": "work", "mountPath": "/work" }] }],
                "volumes": [{ "name": "token", "secret": { "secretName": format!("onrush-{name}-token") } },
                            { "name": "work", "emptyDir": {} }] } } } });
    vec![secret, config, service, controller, agents]
}

/// The objects as one YAML stream (`---` between documents).
pub fn to_yaml(objects: &[Value]) -> String {
    let mut out = String::from(
        "# Generated by `onrush kube render`: kubectl apply -f this file; see docs/distributed.md.\n",
    );
    for o in objects {
        out.push_str("---\n");
        emit(&mut out, o, 0, false);
    }
    out
}

fn emit(out: &mut String, v: &Value, indent: usize, in_list: bool) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(map) if !map.is_empty() => {
            for (i, (k, val)) in map.iter().enumerate() {
                if !(in_list && i == 0) {
                    out.push_str(&pad);
                }
                out.push_str(&scalar(&Value::String(k.clone())));
                out.push(':');
                block_or_inline(out, val, indent);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for item in items {
                out.push_str(&pad);
                out.push_str("- ");
                match item {
                    Value::Object(m) if !m.is_empty() => emit(out, item, indent + 2, true),
                    Value::Array(a) if !a.is_empty() => {
                        out.push('\n');
                        emit(out, item, indent + 2, false)
                    }
                    _ => {
                        out.push_str(&scalar(item));
                        out.push('\n');
                    }
                }
            }
        }
        _ => {
            out.push_str(&pad);
            out.push_str(&scalar(v));
            out.push('\n');
        }
    }
}

fn block_or_inline(out: &mut String, val: &Value, indent: usize) {
    match val {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            emit(out, val, indent + 2, false);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            emit(out, val, indent + 2, false);
        }
        _ => {
            out.push(' ');
            out.push_str(&scalar(val));
            out.push('\n');
        }
    }
}

/// A scalar as YAML: strings double-quoted with JSON's escapes (valid YAML), the rest as JSON.
fn scalar(v: &Value) -> String {
    match v {
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
        v => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> KubeOptions<'static> {
        KubeOptions {
            name: "checkout",
            agents: 3,
            image: "registry.example/onrush:0.1.0",
            namespace: Some("load"),
            agent_threads: Some(2),
            agent_cpu: "2",
            agent_memory: "1Gi",
            results_pvc: None,
            token: "0123456789abcdef0123456789abcdef",
            port: 7878,
        }
    }

    #[test]
    fn the_objects_hold_what_a_distributed_run_needs() {
        let files = PlanFiles {
            entries: vec![
                (
                    "f0".into(),
                    "plan.yaml".into(),
                    b"target: http://x\n".to_vec(),
                ),
                ("f1".into(), "data/users.csv".into(), b"user\na\n".to_vec()),
                ("f2".into(), "body.bin".into(), vec![0xff, 0, 1]),
            ],
        };
        let objs = manifests(&options(), &files);
        let kinds: Vec<&str> = objs.iter().map(|o| o["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["Secret", "ConfigMap", "Service", "Job", "Job"]);
        for o in &objs {
            assert_eq!(o["metadata"]["namespace"], "load");
            assert!(o["metadata"]["name"]
                .as_str()
                .unwrap()
                .starts_with("onrush-checkout-"));
        }
        assert_eq!(objs[0]["stringData"]["token"], options().token);
        assert_eq!(objs[1]["data"]["f1"], "user\na\n");
        assert_eq!(objs[1]["binaryData"]["f2"], "/wAB");
        // The Service selects the controller's pod, on the port the agents dial.
        assert_eq!(
            objs[2]["spec"]["selector"],
            objs[3]["spec"]["template"]["metadata"]["labels"]
        );
        let agents = &objs[4]["spec"];
        assert_eq!(agents["completionMode"], "Indexed");
        assert_eq!(agents["completions"], 3);
        let args = &agents["template"]["spec"]["containers"][0]["args"];
        assert_eq!(args[2], "onrush-checkout-controller:7878");
        let controller_args = &objs[3]["spec"]["template"]["spec"]["containers"][0]["args"];
        assert_eq!(controller_args[3], "3");
        // The plan's files are mounted at their relative paths.
        let items = &objs[3]["spec"]["template"]["spec"]["volumes"][0]["configMap"]["items"];
        assert_eq!(items[1]["path"], "data/users.csv");
    }

    #[test]
    fn the_yaml_is_the_objects() {
        let files = PlanFiles {
            entries: vec![("f0".into(), "plan.yaml".into(), b"a: \"q\"\n".to_vec())],
        };
        let yaml = to_yaml(&manifests(&options(), &files));
        assert_eq!(yaml.lines().filter(|l| *l == "---").count(), 5, "{yaml}");
        assert!(yaml.contains("\"kind\": \"Job\""));
        assert!(yaml.contains("\"f0\": \"a: \\\"q\\\"\\n\""), "{yaml}");
        assert!(yaml.contains("\"volumes\":\n"), "{yaml}");
    }
}
