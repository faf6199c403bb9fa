//! `onrush kube render`: Kubernetes manifests for a distributed run (see docs/distributed.md).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use onrush_distributed::kube::{self, KubeOptions, KubeTls, PlanFiles};

use super::exit;
use super::tls_args::{ControllerTlsArgs, LaunchedAgentTlsArgs};

#[derive(Args)]
pub struct KubeArgs {
    #[command(subcommand)]
    command: KubeCommand,
}

#[derive(Subcommand)]
enum KubeCommand {
    /// Write the objects of a distributed run (token Secret, plan ConfigMap, controller Job and
    /// Service, agents as an Indexed Job) for `kubectl apply -f`.
    Render(RenderArgs),
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
    /// CPU request and limit of each agent pod.
    #[arg(long, default_value = "1")]
    agent_cpu: String,
    /// Memory request and limit of each agent pod.
    #[arg(long, default_value = "512Mi")]
    agent_memory: String,
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
    let KubeCommand::Render(args) = args.command;
    let plan = match crate::linked::load_plan(&args.plan, &[], &args.define) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::USAGE;
        }
    };
    if args.agents == 0 {
        eprintln!("error: --agents 0: a distributed run needs at least one agent");
        return exit::USAGE;
    }
    let files = match PlanFiles::read(&plan.source, &plan.files) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::USAGE;
        }
    };
    // Kubernetes names: lower-case letters, digits and '-'.
    let name: String = plan
        .name
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect::<String>()
        .trim_matches('-')
        .chars()
        .take(40)
        .collect();
    let name = if name.is_empty() {
        "run".to_string()
    } else {
        name
    };
    let tls = match kube_tls(&args) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::USAGE;
        }
    };
    let token = onrush_distributed::auth::new_token();
    let objects = kube::manifests(
        &KubeOptions {
            name: &name,
            agents: args.agents,
            image: &args.image,
            namespace: args.namespace.as_deref(),
            agent_threads: args.agent_threads,
            agent_cpu: &args.agent_cpu,
            agent_memory: &args.agent_memory,
            results_pvc: args.results_pvc.as_deref(),
            token: &token,
            port: 7878,
            tls,
        },
        &files,
    );
    let yaml = kube::to_yaml(&objects);
    match &args.out {
        Some(path) => {
            if let Err(e) = std::fs::write(path, &yaml) {
                eprintln!("error: cannot write {}: {e}", path.display());
                return exit::RUNTIME;
            }
            eprintln!(
                "wrote {} ({} objects; it holds the run's token: keep it private)\n  kubectl apply -f {}\n  kubectl logs -f job/onrush-{name}-controller",
                path.display(),
                objects.len(),
                path.display()
            );
        }
        None => print!("{yaml}"),
    }
    exit::OK
}
