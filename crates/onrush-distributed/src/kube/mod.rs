//! `onrush kube render`: the Kubernetes objects of a distributed run, so that `kubectl apply`
//! runs it on a cluster with engines people already have (no operator, no cluster manager of
//! onrush's own):
//!
//! - a Secret with the run's token (and the control connection's certificates, if any);
//! - the plan and every file it refers to, in as many ConfigMaps as they need ([`files`]),
//!   put back together under `/plan` by an init container of the controller's pod;
//! - the controller: a Job (one pod, `onrush run --agents N`) and a Service in front of it;
//! - the agents: an Indexed Job of N pods (`onrush agent --connect <service>:7878`), named
//!   `agent-<index>`, spread over nodes by pod anti-affinity.
//!
//! Every object's name holds the run id (`onrush-<plan>-<run id>-<kind>`) and carries it as the
//! label `onrush/run-id`, so a second render applied beside the first collides with nothing,
//! and the Service selects only its own run's controller.
//!
//! The objects are built as JSON values (checked field by field in the tests, and decoded
//! strictly into the Kubernetes API's own Go types by `tests/kube-validate`) and written as
//! YAML with every string double-quoted, which YAML reads as JSON strings.

pub mod files;
mod tls;
mod yaml;

use std::str::FromStr;

use serde_json::{json, Map, Value};

pub use files::{unpack, PlanFiles};
pub use tls::KubeTls;
pub use yaml::to_yaml;

/// The user (and group) the pods run as: no root in the container, whatever image is given.
/// The number distroless images call `nonroot`; `scripts/build-image.sh` makes it the image's
/// own user too.
pub const RUN_AS: u64 = 65532;

/// What the manifests are made of.
pub struct KubeOptions<'a> {
    /// Lower-case DNS label for the objects' names (e.g. the plan's name), at most
    /// [`NAME_MAX`] characters.
    pub name: &'a str,
    /// This render's id: lower-case letters and digits, in every name and as a label.
    pub run_id: &'a str,
    pub agents: usize,
    pub image: &'a str,
    pub namespace: Option<&'a str>,
    /// Threads per agent (`-t`); `None`: one per core the pod may use.
    pub agent_threads: Option<usize>,
    /// Each agent pod's container.
    pub agent_resources: Resources,
    /// The controller pod's container.
    pub controller_resources: Resources,
    pub scheduling: Scheduling,
    /// A PersistentVolumeClaim for the controller's results; `None`: an emptyDir (read the
    /// summary from the controller's log).
    pub results_pvc: Option<&'a str>,
    pub token: &'a str,
    /// The token that lets a caller steer the run from the controller's live page (served on
    /// [`WEB_PORT`] behind the Service); it goes into the token's Secret.
    pub web_token: &'a str,
    pub port: u16,
    /// Certificates for the control connection; they go into the token's Secret.
    pub tls: KubeTls,
}

/// The longest plan name kept in object names: with `onrush-`, the run id and `-controller`
/// or `-agents-<index>` (a pod's host name) the names stay within a DNS label's 63.
pub const NAME_MAX: usize = 30;

/// The controller's live page (`--web`), behind the Service as port `web`.
pub const WEB_PORT: u16 = 5665;
/// The controller's Prometheus `/metrics` (`--metrics-addr`), behind the Service as `metrics`.
pub const METRICS_PORT: u16 = 9464;

/// A container's resources, as Kubernetes quantities ("500m", "2", "384Mi").
#[derive(Clone, Debug, PartialEq)]
pub struct Resources {
    pub cpu_request: String,
    /// `None`: no CPU limit (the container may use idle cores; never throttled).
    pub cpu_limit: Option<String>,
    pub memory_request: String,
    pub memory_limit: String,
}

impl Resources {
    /// Requests equal to limits: the pod's QoS class is Guaranteed, so the kubelet does not
    /// evict it first under memory pressure, and with whole CPUs and the static CPU manager it
    /// gets cores of its own. A load generator that shares or loses its cores measures its own
    /// stalls.
    pub fn guaranteed(cpu: &str, memory: &str) -> Resources {
        Resources {
            cpu_request: cpu.into(),
            cpu_limit: Some(cpu.into()),
            memory_request: memory.into(),
            memory_limit: memory.into(),
        }
    }

    /// The controller's: it merges the agents' per-second histograms and writes the results,
    /// a fraction of a core; no CPU limit, so a merge at the end is never throttled.
    pub fn controller() -> Resources {
        Resources {
            cpu_request: "250m".into(),
            cpu_limit: None,
            memory_request: "256Mi".into(),
            memory_limit: "1Gi".into(),
        }
    }

    fn to_json(&self) -> Value {
        let mut limits = json!({ "memory": self.memory_limit });
        if let Some(cpu) = &self.cpu_limit {
            limits["cpu"] = json!(cpu);
        }
        json!({ "requests": { "cpu": self.cpu_request, "memory": self.memory_request },
                "limits": limits })
    }
}

/// An agent pod's memory from the preflight estimate of what its share of the plan holds
/// (`onrush_doctor::memory_needed`): half as much again for what the estimate leaves out
/// (bodies kept for checks, allocator slack), rounded up to 64 MiB, at least 256 MiB.
pub fn agent_memory(estimate: u64) -> String {
    let with_room = estimate.saturating_add(estimate / 2);
    let mib = with_room.div_ceil(64 << 20) * 64;
    format!("{}Mi", mib.max(256))
}

/// Where the pods may go.
#[derive(Clone, Debug, Default)]
pub struct Scheduling {
    /// `nodeSelector` of every pod (`--node-selector k=v`).
    pub node_selector: Vec<(String, String)>,
    /// `tolerations` of every pod (`--toleration`).
    pub tolerations: Vec<Toleration>,
    /// `imagePullSecrets` of every pod (`--image-pull-secret`).
    pub image_pull_secrets: Vec<String>,
    /// How the agents are spread over nodes.
    pub anti_affinity: AntiAffinity,
}

/// Pod anti-affinity between the agents of one run, per node (`kubernetes.io/hostname`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AntiAffinity {
    /// The scheduler prefers nodes without another agent, and still places agents together
    /// when there are fewer nodes than agents (a small cluster, a single node).
    #[default]
    Preferred,
    /// One agent per node at most: with fewer nodes, the rest stay Pending (and
    /// `kubectl describe` says so).
    Required,
    /// No anti-affinity.
    None,
}

impl FromStr for AntiAffinity {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "preferred" => Ok(AntiAffinity::Preferred),
            "required" => Ok(AntiAffinity::Required),
            "none" => Ok(AntiAffinity::None),
            _ => Err(format!(
                "{s:?}: expected preferred (spread agents over nodes when possible), required \
                 (one agent per node) or none"
            )),
        }
    }
}

/// A toleration in `kubectl taint`'s syntax: `key[=value][:effect]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toleration {
    pub key: String,
    /// `None`: the taint is tolerated whatever its value (operator `Exists`).
    pub value: Option<String>,
    /// `None`: every effect.
    pub effect: Option<String>,
}

const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

impl FromStr for Toleration {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (kv, effect) = match s.rsplit_once(':') {
            Some((kv, e)) => (kv, Some(e)),
            None => (s, None),
        };
        if let Some(e) = effect {
            if !EFFECTS.contains(&e) {
                return Err(format!(
                    "{s:?}: the effect {e:?} is not one of {} (syntax: key[=value][:effect], \
                     e.g. dedicated=load:NoSchedule)",
                    EFFECTS.join(", ")
                ));
            }
        }
        let (key, value) = match kv.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (kv, None),
        };
        if key.is_empty() {
            return Err(format!(
                "{s:?}: no key (syntax: key[=value][:effect], e.g. dedicated=load:NoSchedule)"
            ));
        }
        Ok(Toleration {
            key: key.into(),
            value,
            effect: effect.map(str::to_string),
        })
    }
}

impl Toleration {
    fn to_json(&self) -> Value {
        let mut t = json!({ "key": self.key });
        match &self.value {
            Some(v) => {
                t["operator"] = json!("Equal");
                t["value"] = json!(v);
            }
            None => t["operator"] = json!("Exists"),
        }
        if let Some(e) = &self.effect {
            t["effect"] = json!(e);
        }
        t
    }
}

/// A new run id: 8 lower-case hex digits (4 random bytes: two renders of one plan collide once
/// in 4 billion).
pub fn new_run_id() -> String {
    crate::auth::random_hex(4)
}

/// The objects, in the order `kubectl apply` should create them: the Secret, the plan's
/// ConfigMaps, the Service, the controller's Job, the agents' Job.
pub fn manifests(o: &KubeOptions, files: &PlanFiles) -> Vec<Value> {
    let prefix = format!("onrush-{}-{}", o.name, o.run_id);
    let object = |suffix: &str| format!("{prefix}-{suffix}");
    let labels = |component: &str| {
        json!({ "app.kubernetes.io/name": "onrush",
                "app.kubernetes.io/instance": format!("{}-{}", o.name, o.run_id),
                "app.kubernetes.io/component": component,
                "app.kubernetes.io/version": crate::VERSION,
                "app.kubernetes.io/managed-by": "onrush",
                "onrush/run-id": o.run_id })
    };
    // What selects one run's pods of one kind: never the version (a Service must keep
    // selecting across a change of label it does not care about).
    let selector = |component: &str| {
        json!({ "app.kubernetes.io/instance": format!("{}-{}", o.name, o.run_id),
                "app.kubernetes.io/component": component,
                "onrush/run-id": o.run_id })
    };
    let meta = |suffix: &str, component: &str| {
        let mut m = json!({ "name": object(suffix), "labels": labels(component) });
        if let Some(ns) = o.namespace {
            m["namespace"] = json!(ns);
        }
        m
    };

    let mut secret = json!({ "apiVersion": "v1", "kind": "Secret", "metadata": meta("token", "token"),
        "type": "Opaque", "stringData": { "token": o.token, "web-token": o.web_token } });
    for (key, text, _, _) in o.tls.entries() {
        secret["stringData"][key] = json!(text);
    }

    let parts = files::pack(files);
    let mut config_maps = Vec::new();
    for (k, part) in parts.iter().enumerate() {
        let mut cm = json!({ "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": meta(&format!("plan-{k}"), "plan"),
            "data": part.text.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<Map<_, _>>() });
        if !part.binary.is_empty() {
            use base64::Engine;
            let b64 = base64::engine::general_purpose::STANDARD;
            cm["binaryData"] = part
                .binary
                .iter()
                .map(|(k, v)| (k.clone(), json!(b64.encode(v))))
                .collect::<Map<_, _>>()
                .into();
        }
        config_maps.push(cm);
    }
    // Every part is a key of its own across the ConfigMaps: one projected volume shows them
    // all as files of one folder, which the init container reads.
    let bundle_volume = json!({ "name": "bundle", "projected": { "sources":
        (0..parts.len()).map(|k| json!({ "configMap": { "name": object(&format!("plan-{k}")) } }))
            .collect::<Vec<_>>() } });

    let (controller_items, controller_tls) = o.tls.side(true);
    let (agent_items, agent_tls) = o.tls.side(false);
    let token_volume = |items: Vec<Value>| json!({ "name": "token", "secret": { "secretName": object("token"), "items": items } });
    let results_volume = match o.results_pvc {
        Some(pvc) => json!({ "name": "results", "persistentVolumeClaim": { "claimName": pvc } }),
        None => json!({ "name": "results", "emptyDir": {} }),
    };
    let service_name = object("controller");

    let mut controller_args = vec![
        json!("run"),
        json!("/plan/plan.yaml"),
        json!("--agents"),
        json!(o.agents.to_string()),
        json!("--listen"),
        json!(format!("0.0.0.0:{}", o.port)),
        json!("--token-file"),
        json!("/token/token"),
        json!("--out"),
        json!("/results/run"),
        json!("--agents-wait"),
        json!("600"),
        // The live page and /metrics, reachable through the Service (kubectl port-forward);
        // the page steers only with the web token (ONRUSH_WEB_TOKEN, from the Secret), and
        // serves the final report for a while after the run.
        json!("--web"),
        json!(format!("0.0.0.0:{WEB_PORT}")),
        json!("--web-linger"),
        json!("2m"),
        json!("--metrics-addr"),
        json!(format!("0.0.0.0:{METRICS_PORT}")),
    ];
    controller_args.extend(controller_tls);
    let service = json!({ "apiVersion": "v1", "kind": "Service", "metadata": meta("controller", "controller"),
        "spec": { "selector": selector("controller"),
                  "ports": [{ "name": "control", "port": o.port, "targetPort": o.port, "protocol": "TCP" },
                            { "name": "web", "port": WEB_PORT, "targetPort": WEB_PORT, "protocol": "TCP" },
                            { "name": "metrics", "port": METRICS_PORT, "targetPort": METRICS_PORT, "protocol": "TCP" }] } });
    let mut controller_container = container(
        "controller",
        o.image,
        controller_args,
        &o.controller_resources,
        vec![
            json!({ "name": "plan", "mountPath": "/plan", "readOnly": true }),
            json!({ "name": "token", "mountPath": "/token", "readOnly": true }),
            json!({ "name": "results", "mountPath": "/results" }),
            json!({ "name": "tmp", "mountPath": "/tmp" }),
        ],
    );
    controller_container["ports"] = json!([
        { "containerPort": o.port, "name": "control", "protocol": "TCP" },
        { "containerPort": WEB_PORT, "name": "web", "protocol": "TCP" },
        { "containerPort": METRICS_PORT, "name": "metrics", "protocol": "TCP" }]);
    controller_container["env"] = json!([{ "name": "ONRUSH_WEB_TOKEN",
        "valueFrom": { "secretKeyRef": { "name": object("token"), "key": "web-token" } } }]);
    let mut controller_pod = json!({
        "initContainers": [container("unpack", o.image,
            vec![json!("kube"), json!("unpack"), json!("/bundle"), json!("/plan")],
            &Resources { cpu_request: "50m".into(), cpu_limit: None,
                         memory_request: "64Mi".into(), memory_limit: "256Mi".into() },
            vec![json!({ "name": "bundle", "mountPath": "/bundle", "readOnly": true }),
                 json!({ "name": "plan", "mountPath": "/plan" })])],
        "containers": [controller_container],
        "volumes": [bundle_volume, json!({ "name": "plan", "emptyDir": {} }),
                    token_volume(controller_items), results_volume,
                    json!({ "name": "tmp", "emptyDir": {} })] });
    pod_defaults(&mut controller_pod, &o.scheduling);
    let controller = json!({ "apiVersion": "batch/v1", "kind": "Job", "metadata": meta("controller", "controller"),
        "spec": { "backoffLimit": 0, "template": {
            "metadata": { "labels": labels("controller") }, "spec": controller_pod } } });

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
    agent_args.extend(agent_tls);
    let mut agent = container(
        "agent",
        o.image,
        agent_args,
        &o.agent_resources,
        vec![
            json!({ "name": "token", "mountPath": "/token", "readOnly": true }),
            json!({ "name": "work", "mountPath": "/work" }),
            json!({ "name": "tmp", "mountPath": "/tmp" }),
        ],
    );
    agent["env"] = json!([{ "name": "AGENT_INDEX", "valueFrom": { "fieldRef": {
        "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']" } } }]);
    let mut agent_pod = json!({ "containers": [agent],
        "volumes": [token_volume(agent_items), json!({ "name": "work", "emptyDir": {} }),
                    json!({ "name": "tmp", "emptyDir": {} })] });
    pod_defaults(&mut agent_pod, &o.scheduling);
    let term = json!({ "labelSelector": { "matchLabels": selector("agent") },
                       "topologyKey": "kubernetes.io/hostname" });
    match o.scheduling.anti_affinity {
        AntiAffinity::Preferred => {
            agent_pod["affinity"] = json!({ "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    { "weight": 100, "podAffinityTerm": term }] } })
        }
        AntiAffinity::Required => {
            agent_pod["affinity"] = json!({ "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [term] } })
        }
        AntiAffinity::None => {}
    }
    let agents = json!({ "apiVersion": "batch/v1", "kind": "Job", "metadata": meta("agents", "agent"),
        "spec": { "completionMode": "Indexed", "completions": o.agents, "parallelism": o.agents,
            "backoffLimit": 0, "template": {
            "metadata": { "labels": labels("agent") }, "spec": agent_pod } } });

    let mut out = vec![secret];
    out.extend(config_maps);
    out.extend([service, controller, agents]);
    out
}

/// A container running `onrush ARGS` as [`RUN_AS`], unprivileged, on a read-only root file
/// system (it writes only to its volumes).
fn container(
    name: &str,
    image: &str,
    args: Vec<Value>,
    resources: &Resources,
    mounts: Vec<Value>,
) -> Value {
    json!({ "name": name, "image": image, "args": args, "resources": resources.to_json(),
            "volumeMounts": mounts,
            "securityContext": { "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                                 "runAsNonRoot": true, "runAsUser": RUN_AS, "runAsGroup": RUN_AS,
                                 "capabilities": { "drop": ["ALL"] } } })
}

/// What every pod of a run has: never restarted by the kubelet (a Job's pod that fails is a
/// failed run, not one to start over), no API token (onrush does not call the API from
/// inside), no Service environment variables, and the user's scheduling.
fn pod_defaults(pod: &mut Value, s: &Scheduling) {
    pod["restartPolicy"] = json!("Never");
    pod["automountServiceAccountToken"] = json!(false);
    pod["enableServiceLinks"] = json!(false);
    pod["securityContext"] = json!({ "runAsNonRoot": true, "runAsUser": RUN_AS,
        "runAsGroup": RUN_AS, "fsGroup": RUN_AS, "seccompProfile": { "type": "RuntimeDefault" } });
    if !s.node_selector.is_empty() {
        pod["nodeSelector"] = s
            .node_selector
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect::<Map<_, _>>()
            .into();
    }
    if !s.tolerations.is_empty() {
        pod["tolerations"] = s.tolerations.iter().map(Toleration::to_json).collect();
    }
    if !s.image_pull_secrets.is_empty() {
        pod["imagePullSecrets"] = s
            .image_pull_secrets
            .iter()
            .map(|n| json!({ "name": n }))
            .collect();
    }
}

#[cfg(test)]
mod tests;
