//! `onrush kube render`: Kubernetes manifests for a distributed run (see docs/distributed.md).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use onrush_distributed::kube::{
    self, AntiAffinity, KubeOptions, KubeTls, PlanFiles, Resources, Scheduling, Toleration,
};

use super::exit;
use super::tls_args::{ControllerTlsArgs, LaunchedAgentTlsArgs};

#[derive(Args)]
pub struct KubeArgs {
    #[command(subcommand)]
    command: KubeCommand,
}

// Parsed once per process: the size of the large variant costs nothing, and boxing it would make
// `onrush`'s own Command enum lint in its turn.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum KubeCommand {
    /// Write the objects of a distributed run (token Secret, plan ConfigMaps, controller Job and
    /// Service, agents as an Indexed Job) for `kubectl apply -f`.
    Render(RenderArgs),
    /// Put the plan's files back together from the ConfigMaps' parts (the init container of
    /// the controller's pod runs this; not for users).
    #[command(hide = true)]
    Unpack {
        /// The folder the plan's ConfigMaps are mounted in (with `index.json`).
        bundle: PathBuf,
        /// Where to write the files.
        out: PathBuf,
    },
}

#[derive(Args)]
struct RenderArgs {
    /// The plan file (YAML); it and every file it uses must be in its folder or below.
    plan: PathBuf,
    /// Override a plan variable: -D vus=100 (repeatable; checked here, applied on the cluster
    /// by the controller).
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = super::parse_define)]
    define: Vec<(String, String)>,
    /// Agent pods.
    #[arg(long, value_name = "N")]
    agents: usize,
    /// A container image with onrush as its entrypoint (the same version on every pod).
    #[arg(long, value_name = "IMAGE")]
    image: String,
    #[arg(long, value_name = "NS")]
    namespace: Option<String>,
    /// Worker threads per agent [default: one per core the pod sees].
    #[arg(long, value_name = "N")]
    agent_threads: Option<usize>,
    /// CPU request and limit of each agent pod [default: --agent-threads, or 1].
    #[arg(long, value_name = "QUANTITY")]
    agent_cpu: Option<String>,
    /// Memory request and limit of each agent pod [default: the preflight estimate for each
    /// agent's share of the VUs, with half as much again for room, at least 256Mi].
    #[arg(long, value_name = "QUANTITY")]
    agent_memory: Option<String>,
    /// A node label every pod must have: --node-selector pool=load (repeatable).
    #[arg(long, value_name = "KEY=VALUE", value_parser = super::parse_define)]
    node_selector: Vec<(String, String)>,
    /// A taint the pods tolerate, in `kubectl taint`'s syntax: key[=value][:effect]
    /// (repeatable; without a value any value is tolerated, without an effect any effect).
    #[arg(long, value_name = "KEY[=VALUE][:EFFECT]")]
    toleration: Vec<Toleration>,
    /// A Secret of type kubernetes.io/dockerconfigjson to pull the image with (repeatable).
    #[arg(long, value_name = "SECRET")]
    image_pull_secret: Vec<String>,
    /// How agents are spread over nodes: preferred (one per node where there are enough
    /// nodes, together where not), required (one per node, at most; the rest stay Pending),
    /// none.
    #[arg(long, value_name = "MODE", default_value = "preferred")]
    anti_affinity: AntiAffinity,
    /// The run id in every object's name and in the label onrush/run-id [default: 8 random
    /// hex digits, new at each render, so renders applied side by side never collide].
    #[arg(long, value_name = "ID")]
    run_id: Option<String>,
    /// A PersistentVolumeClaim for the controller's results directory [default: an emptyDir;
    /// the summary is in the controller's log].
    #[arg(long, value_name = "CLAIM")]
    results_pvc: Option<String>,
    /// Where to write the manifests [default: stdout].
    #[arg(long, short = 'o', value_name = "FILE")]
    out: Option<PathBuf>,
    /// The controller's certificate, key and client CA: put into the token's Secret and
    /// mounted by the controller's pod only.
    #[command(flatten)]
    tls: ControllerTlsArgs,
    /// The agents' CA, client certificate and key: put into the token's Secret and mounted by
    /// the agents' pods only.
    #[command(flatten)]
    agent_tls: LaunchedAgentTlsArgs,
}

/// The TLS files of the flags, checked as the controller and the agents will load them, and
/// read for the Secret.
fn kube_tls(args: &RenderArgs) -> Result<KubeTls, String> {
    let controller = args.tls.settings();
    if args.tls.is_set() {
        onrush_distributed::tls::server_config(&controller)?;
    }
    let agent = args.agent_tls.settings();
    if args.agent_tls.is_set() {
        onrush_distributed::tls::client_config(&agent)
            .map_err(|e| format!("--agent-tls-*: for the agents' {e}"))?;
    }
    let read = |flag: &str, p: &Option<PathBuf>| -> Result<Option<String>, String> {
        p.as_ref()
            .map(|p| {
                std::fs::read_to_string(p)
                    .map_err(|e| format!("{flag} {}: cannot read it: {e}", p.display()))
            })
            .transpose()
    };
    let pair = |c: Option<String>, k: Option<String>| c.zip(k);
    Ok(KubeTls {
        controller: pair(
            read("--tls-cert", &controller.cert)?,
            read("--tls-key", &controller.key)?,
        ),
        client_ca: read("--tls-client-ca", &controller.client_ca)?,
        agent_ca: read("--agent-tls-ca", &agent.ca)?,
        agent_server_name: agent.server_name,
        agent: pair(
            read("--agent-tls-cert", &agent.cert)?,
            read("--agent-tls-key", &agent.key)?,
        ),
    })
}

pub fn run(args: KubeArgs) -> i32 {
    let args = match args.command {
        KubeCommand::Render(args) => args,
        KubeCommand::Unpack { bundle, out } => {
            return match kube::unpack(&bundle, &out) {
                Ok(n) => {
                    eprintln!("unpacked {n} files into {}", out.display());
                    exit::OK
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    exit::RUNTIME
                }
            };
        }
    };
    match render(&args) {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("error: {e}");
            exit::USAGE
        }
    }
}

/// A plan's name as a DNS label: lower-case letters, digits and '-', at most
/// [`kube::NAME_MAX`] characters, never empty.
fn dns_name(plan_name: &str) -> String {
    let name: String = plan_name
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect::<String>()
        .chars()
        .take(kube::NAME_MAX)
        .collect::<String>()
        .trim_matches('-')
        .to_string();
    if name.is_empty() {
        "run".to_string()
    } else {
        name
    }
}

/// From a pod, loopback is the pod itself and the built-in server is one inside each agent:
/// the load would never reach the system the user means to test.
fn loopback_warning(plan: &onrush_plan::Plan) -> Option<String> {
    match &plan.target {
        onrush_plan::Target::Builtin => Some(
            "the plan's target is the built-in server: on Kubernetes each agent starts its own \
             inside its pod, so the load never leaves the pod; aim the plan at a Service \
             (target: http://NAME.NAMESPACE.svc.cluster.local:PORT) to load a system on the \
             cluster"
                .into(),
        ),
        onrush_plan::Target::Url(url) => {
            let host = url.host.trim_start_matches('[').trim_end_matches(']');
            let loopback = host.eq_ignore_ascii_case("localhost")
                || host.to_ascii_lowercase().ends_with(".localhost")
                || host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback() || ip.is_unspecified());
            loopback.then(|| {
                format!(
                    "the plan's target {url} is loopback: from a pod that is the pod itself, not \
                     this machine nor the cluster's services; aim the plan at a Service \
                     (target: http://NAME.NAMESPACE.svc.cluster.local:PORT) or an address the \
                     pods can reach"
                )
            })
        }
        onrush_plan::Target::None => None,
    }
}

fn render(args: &RenderArgs) -> Result<(), String> {
    let plan =
        crate::linked::load_plan(&args.plan, &[], &args.define).map_err(|e| e.to_string())?;
    if args.agents == 0 {
        return Err("--agents 0: a distributed run needs at least one agent".into());
    }
    if let Some(w) = loopback_warning(&plan) {
        eprintln!("warning: {w}");
    }
    let files = PlanFiles::read(&plan.source, &plan.files)?;
    let name = dns_name(&plan.name);
    let run_id = match &args.run_id {
        Some(id) => {
            let ok = !id.is_empty()
                && id.len() <= 12
                && id
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
            if !ok {
                return Err(format!(
                    "--run-id {id:?}: use 1 to 12 lower-case letters and digits (it is part of \
                     every object's name)"
                ));
            }
            id.clone()
        }
        None => kube::new_run_id(),
    };
    let tls = kube_tls(args)?;
    // Each agent's share of the plan, for the preflight's memory estimate.
    let mut needs = super::needs::plan_needs(&plan, args.agent_threads.unwrap_or(1));
    let agents = args.agents as u64;
    needs.vus = needs.vus.div_ceil(agents);
    needs.peak_connections = needs.peak_connections.div_ceil(agents);
    let estimate = onrush_doctor::memory_needed(&needs);
    let cpu = args
        .agent_cpu
        .clone()
        .unwrap_or_else(|| args.agent_threads.unwrap_or(1).to_string());
    let memory = args
        .agent_memory
        .clone()
        .unwrap_or_else(|| kube::agent_memory(estimate));
    let token = onrush_distributed::auth::new_token();
    let web_token = onrush_distributed::auth::new_token();
    let objects = kube::manifests(
        &KubeOptions {
            name: &name,
            run_id: &run_id,
            agents: args.agents,
            image: &args.image,
            namespace: args.namespace.as_deref(),
            agent_threads: args.agent_threads,
            agent_resources: Resources::guaranteed(&cpu, &memory),
            controller_resources: Resources::controller(),
            scheduling: Scheduling {
                node_selector: args.node_selector.clone(),
                tolerations: args.toleration.clone(),
                image_pull_secrets: args.image_pull_secret.clone(),
                anti_affinity: args.anti_affinity,
            },
            results_pvc: args.results_pvc.as_deref(),
            token: &token,
            web_token: &web_token,
            port: 7878,
            tls,
        },
        &files,
    );
    let yaml = kube::to_yaml(&objects);
    eprintln!(
        "run {run_id}: {} agent pods of cpu {cpu}, memory {memory} each{}",
        args.agents,
        if args.agent_memory.is_none() {
            format!(
                " (preflight estimate for {} VUs per agent: {} MiB; --agent-memory overrides)",
                needs.vus,
                estimate.div_ceil(1 << 20)
            )
        } else {
            String::new()
        }
    );
    let prefix = format!("onrush-{name}-{run_id}");
    match &args.out {
        Some(path) => {
            std::fs::write(path, &yaml)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            eprintln!(
                "wrote {} ({} objects; it holds the run's tokens: keep it private)\n  kubectl apply --server-side -f {}\n  kubectl logs -f job/{prefix}-controller\n  kubectl port-forward service/{prefix}-controller {web}:{web} {metrics}:{metrics}   # then http://127.0.0.1:{web}/#token={web_token} (the live page; /metrics on {metrics})\n  kubectl delete -f {} (when done)",
                path.display(),
                objects.len(),
                path.display(),
                path.display(),
                web = kube::WEB_PORT,
                metrics = kube::METRICS_PORT,
            );
        }
        None => print!("{yaml}"),
    }
    Ok(())
}
