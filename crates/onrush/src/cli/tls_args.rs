//! The TLS flags of the control connection: the controller's (`onrush run --agents N`), the
//! agent's (`onrush agent`), and the agents' as a launcher hands them on (`--launch ssh`,
//! `onrush kube render`). Flags only; the configurations are onrush-distributed's.

use std::path::PathBuf;

use clap::Args;
use onrush_distributed::tls::{AgentTls, ControllerTls};

/// The controller's own certificate and its demand for agents' certificates.
#[derive(Args, Clone, Debug, Default)]
pub struct ControllerTlsArgs {
    /// The controller's PEM certificate chain (leaf first) for the agents' connections
    /// [default: one generated at start]; agents with --tls-ca check it.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Mutual TLS: every agent must present a certificate signed by this PEM CA (its
    /// --tls-cert/--tls-key); others are refused at the handshake. The token stays required.
    #[arg(long, value_name = "FILE")]
    pub tls_client_ca: Option<PathBuf>,
}

impl ControllerTlsArgs {
    pub fn is_set(&self) -> bool {
        self.tls_cert.is_some() || self.tls_key.is_some() || self.tls_client_ca.is_some()
    }

    pub fn settings(&self) -> ControllerTls {
        ControllerTls {
            cert: self.tls_cert.clone(),
            key: self.tls_key.clone(),
            client_ca: self.tls_client_ca.clone(),
        }
    }
}

/// What `onrush agent` checks the controller against, and its own certificate.
#[derive(Args, Clone, Debug, Default)]
pub struct AgentTlsArgs {
    /// Verify the controller's certificate against this PEM CA and the name dialed (HOST of
    /// --connect, or --tls-server-name) [default: any certificate; the token authenticates].
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// The name the controller's certificate must be valid for [default: HOST of --connect].
    #[arg(long, value_name = "NAME")]
    pub tls_server_name: Option<String>,
    /// This agent's PEM client certificate, for a controller run with --tls-client-ca.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

impl AgentTlsArgs {
    pub fn settings(&self) -> AgentTls {
        AgentTls {
            ca: self.tls_ca.clone(),
            server_name: self.tls_server_name.clone(),
            cert: self.tls_cert.clone(),
            key: self.tls_key.clone(),
        }
    }
}

/// The agents' TLS flags as a launcher passes them on (`--launch ssh`, `kube render`): the
/// files are copied to each agent, and the flags added to its `onrush agent` command.
#[derive(Args, Clone, Debug, Default)]
pub struct LaunchedAgentTlsArgs {
    /// For the launched agents: their --tls-ca (the CA that signed the controller's
    /// --tls-cert), copied to each of them.
    #[arg(long, value_name = "FILE")]
    pub agent_tls_ca: Option<PathBuf>,
    /// For the launched agents: their --tls-server-name.
    #[arg(long, value_name = "NAME")]
    pub agent_tls_server_name: Option<String>,
    /// For the launched agents: their client certificate (--tls-cert), copied to each.
    #[arg(long, value_name = "FILE", requires = "agent_tls_key")]
    pub agent_tls_cert: Option<PathBuf>,
    /// For the launched agents: the private key of --agent-tls-cert (--tls-key), copied to
    /// each with mode 0600.
    #[arg(long, value_name = "FILE", requires = "agent_tls_cert")]
    pub agent_tls_key: Option<PathBuf>,
}

impl LaunchedAgentTlsArgs {
    pub fn is_set(&self) -> bool {
        self.agent_tls_ca.is_some()
            || self.agent_tls_server_name.is_some()
            || self.agent_tls_cert.is_some()
            || self.agent_tls_key.is_some()
    }

    pub fn settings(&self) -> AgentTls {
        AgentTls {
            ca: self.agent_tls_ca.clone(),
            server_name: self.agent_tls_server_name.clone(),
            cert: self.agent_tls_cert.clone(),
            key: self.agent_tls_key.clone(),
        }
    }
}
